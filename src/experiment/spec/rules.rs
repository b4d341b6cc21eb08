//! Combinations the kernel, mke2fs or mkfs.xfs would refuse, and the capacity a
//! workload needs, checked at spec time.

use super::*;

/// Combinations the kernel or mke2fs would refuse, caught before provisioning.
pub(super) fn check_combination(ctx: &Ctx, c: &Config, s: &Spans) -> Result<(), SpecError> {
    check_type_rules(ctx, c, s)?;
    check_models(ctx, c, s)?;
    let in_mount = |name: &str| {
        c.mount_options.iter().any(|o| {
            o.split(',')
                .any(|part| part == name || part.starts_with(&format!("{name}=")))
        })
    };
    if in_mount("data") {
        return Err(ctx.err(
            s.of("filesystem.mount_options"),
            "filesystem.mount_options",
            "set the data mode with journal.mode, not a data= mount option",
        ));
    }
    if in_mount("journal_path") || in_mount("journal_dev") {
        return Err(ctx.err(
            s.of("filesystem.mount_options"),
            "filesystem.mount_options",
            "jbench sets journal_path itself; name the journal with journal.placement/journal.device",
        ));
    }
    if in_mount("noload") || in_mount("norecovery") {
        return Err(ctx.err(
            s.of("filesystem.mount_options"),
            "filesystem.mount_options",
            "noload/norecovery cannot be combined with a data= mode (the kernel refuses to mount)",
        ));
    }
    if c.mode == DataMode::Journal && (in_mount("delalloc") || in_mount("dax")) {
        return Err(ctx.err(
            s.of("filesystem.mount_options").or(s.of("journal.mode")),
            "filesystem.mount_options",
            "journal.mode = \"journal\" cannot be combined with delalloc or dax (the kernel refuses to mount)",
        ));
    }
    // Today's kernel mounts ext3 through the ext4 driver, which leaves delayed
    // allocation off for it (as 2.4-era ext3 had none) and refuses the ext4-only
    // options that would change that: "Mount option(s) incompatible with ext3".
    if c.fs_type == FsType::Ext3 && (in_mount("delalloc") || in_mount("nodelalloc")) {
        return Err(ctx.err(
            s.of("filesystem.mount_options"),
            "filesystem.mount_options",
            "delalloc/nodelalloc are ext4-only: the kernel refuses them on ext3, which it already mounts without delayed allocation; remove the option, or use filesystem.type = \"ext4\"",
        ));
    }
    if c.mode == DataMode::Ordered && in_mount("journal_async_commit") {
        return Err(ctx.err(
            s.of("filesystem.mount_options").or(s.of("journal.mode")),
            "filesystem.mount_options",
            "journal_async_commit cannot be combined with journal.mode = \"ordered\" (the kernel refuses to mount)",
        ));
    }
    let owned = c
        .mkfs_options
        .iter()
        .find(|o| o.starts_with("-J") || o.starts_with("-b") || o.contains("journal_dev"));
    if let Some(flag) = owned {
        return Err(ctx.err(
            s.of("filesystem.mkfs_options"),
            "filesystem.mkfs_options",
            format!("jbench sets `{flag}` itself (journal and block size come from [journal]); remove it"),
        ));
    }
    match c.placement {
        Placement::Device if c.journal_device.is_none() => {
            return Err(ctx.err(
                s.of("journal.placement"),
                "journal.placement",
                "placement \"device\" needs journal.device = \"/dev/...\"",
            ))
        }
        Placement::Device => {}
        _ if c.journal_device.is_some() => {
            return Err(ctx.err(
                s.of("journal.device"),
                "journal.device",
                format!(
                    "a journal device only goes with placement \"device\", not \"{}\"",
                    c.placement
                ),
            ))
        }
        _ => {}
    }
    if c.placement == Placement::SameDisk && c.fs_device.is_some() {
        return Err(ctx.err(
            s.of("filesystem.device"),
            "filesystem.device",
            "same-disk carves the journal out of an image; with a real file-system device, name a partition of the same disk as journal.device (placement \"device\")",
        ));
    }
    if c.fs_device.is_some() && c.fs_device == c.journal_device {
        return Err(ctx.err(
            s.of("journal.device"),
            "journal.device",
            "the journal device is the file-system device; use placement \"internal\" for that",
        ));
    }
    // mke2fs refuses a journal of more than half the blocks left once its inode tables
    // are laid out ("Total journal size too big for filesystem"); at the default
    // 16 KiB per 256-byte inode those take 1/64 of the file system. Measured with
    // e2fsprogs 1.47: 512M takes at most 255M, 1G 510M, 4G less than 2045M.
    let room = journal_room(c.fs_size);
    if c.placement == Placement::Internal && c.journal_size * 2 > room {
        return Err(ctx.err(
            s.of("journal.size").or(s.of("filesystem.size")),
            "journal.size",
            format!(
                "an internal journal of {} is more than mke2fs allows in a {} file system (half of what its inode tables leave: at most {}); make the file system larger or the journal smaller",
                format_size(c.journal_size),
                format_size(c.fs_size),
                format_size(room / 2 / (1 << 20) * (1 << 20))
            ),
        ));
    }
    Ok(())
}

/// Which disks `device_model` can emulate: images only, and a journal's own disk only
/// when it has one.
pub(super) fn check_models(ctx: &Ctx, c: &Config, s: &Spans) -> Result<(), SpecError> {
    if let (Some(m), Some(d)) = (&c.fs_model, &c.fs_device) {
        return Err(ctx.err(
            s.of("filesystem.device_model").or(s.of("filesystem.device")),
            "filesystem.device_model",
            format!(
                "`{}` cannot emulate the real device {}: a real device is timed by itself, and an emulated disk serves an image file; drop filesystem.device or filesystem.device_model",
                m.name,
                d.display()
            ),
        ));
    }
    check_second_fs(ctx, c, s)?;
    let Some(asked) = &s.journal_model_asked else {
        return Ok(());
    };
    let fail =
        |msg: String| Err(ctx.err(s.of("journal.device_model"), "journal.device_model", msg));
    match c.placement {
        Placement::Zram => fail(
            "a zram device is timed by itself; to emulate a RAM disk use placement = \"ramdisk\" with journal.device_model = \"ram\"".into(),
        ),
        Placement::Device => fail(
            "a real device (journal.device) is timed by itself; to emulate a journal disk use placement = \"second-disk\", or \"ramdisk\" with journal.device_model = \"ram\" for a RAM disk".into(),
        ),
        Placement::Internal | Placement::SameDisk if c.fs_model.as_ref() != Some(asked) => {
            fail(format!(
                "{} journal shares the file system's emulated disk ({}), so only filesystem.device_model applies; remove journal.device_model or set filesystem.device_model = \"{}\"",
                if c.placement == Placement::Internal {
                    "an internal"
                } else {
                    "a same-disk"
                },
                c.fs_model
                    .as_ref()
                    .map_or("none is set".to_string(), |m| format!("`{}`", m.name)),
                asked.name
            ))
        }
        Placement::None if c.fs_model.as_ref() != Some(asked) => fail(
            "without a journal (placement \"none\"), journal.device_model does not apply; use [[config]] tables to combine a no-journal baseline with emulated journal disks".into(),
        ),
        _ => Ok(()),
    }
}

/// What mke2fs leaves of a file system of `fs_size` bytes once its inode tables are
/// laid out (at the default 16 KiB per 256-byte inode, 1/64 of it); an internal
/// journal may take at most half of that.
fn journal_room(fs_size: u64) -> u64 {
    fs_size - fs_size / 64
}

/// A second file system is made like the first on an image of its own: it needs an
/// image-backed first one to sit beside (emulated or not, like it), and room for its
/// internal journal of the same size.
fn check_second_fs(ctx: &Ctx, c: &Config, s: &Spans) -> Result<(), SpecError> {
    let Some(size) = c.second_fs_size else {
        if c.second_fs_model.is_some() {
            return Err(ctx.err(
                s.of("filesystem.second_device_model"),
                "filesystem.second_device_model",
                "there is no second file system to emulate a disk for; set filesystem.second_size too, or remove filesystem.second_device_model",
            ));
        }
        return Ok(());
    };
    let key = "filesystem.second_size";
    if let Some(d) = &c.fs_device {
        return Err(ctx.err(
            s.of(key),
            key,
            format!(
                "a second file system is made on an image beside the first, which here is the real device {}; drop filesystem.device or filesystem.second_size",
                d.display()
            ),
        ));
    }
    if c.fs_model.is_some() != c.second_fs_model.is_some() {
        return Err(ctx.err(
            s.of("filesystem.second_device_model").or(s.of(key)),
            "filesystem.second_device_model",
            "the second file system's disk must be emulated exactly when the first one's is (the crash lab needs every disk in its write log); set both device models or neither",
        ));
    }
    if c.placement != Placement::None && c.journal_size * 2 > journal_room(size) {
        return Err(ctx.err(
            s.of(key),
            key,
            format!(
                "the second file system gets an internal journal of journal.size ({}), more than mke2fs allows in {}; make filesystem.second_size at least {}",
                format_size(c.journal_size),
                format_size(size),
                format_size((c.journal_size * 2 + c.journal_size / 16).div_ceil(1 << 20) * (1 << 20))
            ),
        ));
    }
    Ok(())
}

/// What each file system type and the no-journal baseline allow.
pub(super) fn check_type_rules(ctx: &Ctx, c: &Config, s: &Spans) -> Result<(), SpecError> {
    let fail =
        |span: &Option<Range<usize>>, key: &str, msg: String| Err(ctx.err(span.clone(), key, msg));
    let mode_set = s.of("journal.mode").is_some() && c.mode != DataMode::Ordered;
    if c.fast_commit && c.fs_type != FsType::Ext4 {
        return fail(
            &s.of("journal.fast_commit"),
            "journal.fast_commit",
            format!("fast_commit is an ext4 feature, not {}", c.fs_type),
        );
    }
    if c.fast_commit && c.mode == DataMode::Journal {
        return fail(&s.of("journal.fast_commit"), "journal.fast_commit", "data=journal turns fast_commit off silently; measure fast_commit with ordered or writeback".into());
    }
    if c.ramdisk_size.is_some() && c.placement != Placement::Ramdisk {
        return fail(
            &s.of("journal.ramdisk_size"),
            "journal.ramdisk_size",
            format!(
                "applies to placement \"ramdisk\" only, not \"{}\"",
                c.placement
            ),
        );
    }
    if let Some(total) = c.ramdisk_size {
        if total < c.journal_size {
            return fail(
                &s.of("journal.ramdisk_size"),
                "journal.ramdisk_size",
                format!(
                    "the {} RAM disk cannot hold a {} journal",
                    format_size(total),
                    format_size(c.journal_size)
                ),
            );
        }
    }
    if c.fs_type.is_ext() && c.placement.is_external() && c.journal_size < MIN_EXTERNAL_JOURNAL {
        return fail(&s.of("journal.size"), "journal.size", format!(
            "an external journal of {} is too short for jbd2, which needs 1024 journal blocks besides the journal device's superblock; use at least 4100K",
            format_size(c.journal_size)));
    }
    if c.placement == Placement::None {
        if c.fs_type != FsType::Ext4 {
            return fail(
                &s.of("journal.placement").or(s.of("filesystem.type")),
                "journal.placement",
                format!(
                    "placement \"none\" (no journal) is for ext4 only; {} always has one{}",
                    c.fs_type,
                    if c.fs_type == FsType::Ext3 {
                        " (ext3 without a journal is ext2)"
                    } else {
                        ""
                    }
                ),
            );
        }
        if mode_set || c.fast_commit || c.commit_seconds.is_some() {
            return fail(&s.of("journal.placement"), "journal.placement", "without a journal, journal.mode, fast_commit and commit do not apply; use [[config]] tables to combine a no-journal baseline with journaled modes".into());
        }
    }
    if c.fs_type != FsType::Xfs {
        return Ok(());
    }
    if mode_set {
        return fail(&s.of("journal.mode"), "journal.mode", "XFS has no data= modes (its log holds metadata only); use [[config]] tables to combine XFS with ext4 modes".into());
    }
    if c.commit_seconds.is_some() {
        return fail(
            &s.of("journal.commit"),
            "journal.commit",
            "commit= is an ext3/ext4 option; XFS has none".into(),
        );
    }
    if c.fs_size < XFS_MIN_FS && c.fs_device.is_none() {
        return fail(
            &s.of("filesystem.size"),
            "filesystem.size",
            format!(
                "XFS needs at least {} (mkfs.xfs refuses smaller)",
                format_size(XFS_MIN_FS)
            ),
        );
    }
    if !(XFS_MIN_LOG..=XFS_MAX_LOG).contains(&c.journal_size) {
        return fail(
            &s.of("journal.size"),
            "journal.size",
            format!(
                "an XFS log must be {} to {}, not {}",
                format_size(XFS_MIN_LOG),
                format_size(XFS_MAX_LOG),
                format_size(c.journal_size)
            ),
        );
    }
    if c.mkfs_options
        .iter()
        .any(|o| o.starts_with("-l") || o.starts_with("-b"))
    {
        return fail(
            &s.of("filesystem.mkfs_options"),
            "filesystem.mkfs_options",
            "jbench sets the XFS log (-l) and block size itself; remove them".into(),
        );
    }
    Ok(())
}

/// Refuses a file system too small for a workload's data or inodes, so a long run does
/// not end in ENOSPC hours in.
pub(super) fn check_capacity(
    ctx: &Ctx,
    fs: &RawFilesystem,
    configs: &[Config],
    workloads: &[WorkloadSpec],
) -> Result<(), SpecError> {
    let span = fs.size.as_ref().map(|s| s.span());
    for c in configs {
        if c.fs_device.is_some() {
            continue; // its size is the device's, checked when the device is examined
        }
        let custom_inodes = c
            .mkfs_options
            .iter()
            .any(|o| o.starts_with("-N") || o.starts_with("-i") || o.starts_with("-T"));
        for w in workloads {
            let need = needed_bytes(c, w.engine.as_ref());
            if need > c.fs_size {
                return Err(ctx.err(
                    span.clone(),
                    "filesystem.size",
                    format!(
                        "{} is too small for workload `{}`: it needs about {} ({} of file data, {} inodes{}); raise filesystem.size",
                        format_size(c.fs_size),
                        w.name,
                        format_size(round_up_mib(need)),
                        format_size(round_up_mib(w.engine.peak_data_bytes())),
                        w.engine.peak_inodes(),
                        if c.placement == Placement::Internal { ", plus the internal journal" } else { "" }
                    ),
                ));
            }
            let inodes = c.fs_size / BYTES_PER_INODE;
            if !custom_inodes && w.engine.peak_inodes().saturating_add(16) > inodes {
                return Err(ctx.err(
                    span.clone(),
                    "filesystem.size",
                    format!(
                        "{} gives about {} inodes but workload `{}` needs {}; raise filesystem.size or pass -N in mkfs_options",
                        format_size(c.fs_size),
                        inodes,
                        w.name,
                        w.engine.peak_inodes()
                    ),
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn round_up_mib(b: u64) -> u64 {
    b.div_ceil(1 << 20) << 20
}

/// Space a workload needs: its data, one 4 KiB block per inode (directories take one
/// each), ext4's own metadata (inode tables are 1/64 of the device at 256-byte inodes
/// every 16 KiB), the 5% reserved for root, and an internal journal. Saturates: a
/// workload too large to count needs more than any file system has.
pub fn needed_bytes(c: &Config, w: &dyn Workload) -> u64 {
    let payload = w
        .peak_data_bytes()
        .saturating_add(w.peak_inodes().saturating_mul(4096));
    let overhead = c.fs_size / 64 + c.fs_size / 20 + (16 << 20);
    let journal = if c.placement == Placement::Internal {
        c.journal_size
    } else {
        0
    };
    payload.saturating_add(overhead).saturating_add(journal)
}
