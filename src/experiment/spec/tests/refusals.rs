//! What is refused, naming key and line: unknown keys, bad values, placements, impossible combinations, [[config]] unions, workloads.

use super::*;

#[test]
fn placement_errors() {
    let e = err_of(&BASE.replace(r#""ramdisk"]"#, r#""floppy"]"#));
    assert_eq!(e.key, "journal.placement");
    assert!(
        e.message.contains("floppy") && e.message.contains("same-disk"),
        "{e}"
    );
    let e = err_of(&BASE.replace(
        r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
        r#"placement = "device""#,
    ));
    assert!(e.message.contains("needs journal.device"), "{e}");
    let e = err_of(&BASE.replace(
        r#"mode = "ordered""#,
        "mode = \"ordered\"\ndevice = \"/dev/sdc1\"",
    ));
    assert_eq!(e.key, "journal.device");
    assert!(
        e.message.contains("only goes with placement \"device\""),
        "{e}"
    );
    let e = err_of(&BASE.replace(
        r#"mode = "ordered""#,
        "mode = \"ordered\"\ndevice = \"sdc1\"",
    ));
    assert!(e.message.contains("not a device path"), "{e}");
    let e = err_of(&BASE.replace(
        r#"type = "ext4""#,
        "type = \"ext4\"\ndevice = \"/dev/sdb1\"",
    ));
    assert_eq!(e.key, "filesystem.device");
    assert!(e.message.contains("same-disk"), "{e}");
    let e = err_of(&BASE.replace(
        r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
        "placement = []",
    ));
    assert!(e.message.contains("empty"), "{e}");
}

#[test]
fn impossible_combinations_are_refused() {
    let internal = BASE.replace(
        r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
        r#"placement = "internal""#,
    );
    let e = err_of(&internal.replace(r#"size = "16M""#, r#"size = "5G""#));
    assert!(e.message.contains("more than mke2fs allows"), "{e}");
    // At the edge mke2fs draws (measured: 512M takes 255M, not 256M; 1/64 of the file
    // system is kept for its inode tables, so 252M is the largest accepted here).
    let edge = |fs: &str, j: &str| {
        internal
            .replace(r#"size = "16M""#, &format!(r#"size = "{j}""#))
            .replace(r#"size = "8G""#, &format!(r#"size = "{fs}""#))
            .replace("levels = 10", "levels = 2")
    };
    let e = err_of(&edge("512M", "256M"));
    assert!(e.message.contains("at most 252M"), "{e}");
    if let Err(e) = parse(&edge("512M", "252M"), "x.toml") {
        panic!("252M in 512M is refused: {e}");
    }
    let e = err_of(&BASE.replace(r#"size = "16M""#, r#"size = "64G""#));
    assert!(e.message.contains("larger than mke2fs allows"), "{e}");
    let with_mount = |opts: &str, mode: &str| {
        BASE.replace(
            r#"size = "8G""#,
            &format!("size = \"8G\"\nmount_options = {opts}"),
        )
        .replace(r#"mode = "ordered""#, &format!("mode = \"{mode}\""))
    };
    for (opts, mode, msg) in [
        (r#"["data=journal"]"#, "ordered", "journal.mode"),
        (
            r#"["journal_async_commit"]"#,
            "ordered",
            "journal_async_commit",
        ),
        (r#"["delalloc"]"#, "journal", "delalloc"),
        (r#"["dax"]"#, "journal", "dax"),
        (r#"["noload"]"#, "ordered", "noload"),
        (r#"["journal_path=/dev/x"]"#, "ordered", "journal_path"),
    ] {
        let text = with_mount(opts, mode);
        let e = err_of(&text);
        assert_eq!(e.key, "filesystem.mount_options", "{opts}");
        assert!(e.message.contains(msg), "{opts}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "mount_options")));
    }
    let e = err_of(&BASE.replace(
        r#"size = "8G""#,
        "size = \"8G\"\nmkfs_options = [\"-J\", \"size=64\"]",
    ));
    assert_eq!(e.key, "filesystem.mkfs_options");
    assert!(with_mount(r#"["journal_async_commit"]"#, "writeback")
        .parse::<toml::Table>()
        .is_ok());
    assert!(parse(&with_mount(r#"["journal_async_commit"]"#, "writeback"), "x").is_ok());
}

#[test]
fn ext4_only_allocation_options_are_refused_on_ext3_and_allowed_on_ext4() {
    let with = |fs: &str, opt: &str| {
        BASE.replace(r#"type = "ext4""#, &format!("type = \"{fs}\""))
            .replace(
                r#"size = "8G""#,
                &format!("size = \"8G\"\nmount_options = [\"{opt}\"]"),
            )
    };
    for opt in ["nodelalloc", "delalloc"] {
        let text = with("ext3", opt);
        let e = err_of(&text);
        assert_eq!(e.key, "filesystem.mount_options", "{opt}");
        assert!(e.message.contains("ext4-only"), "{opt}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "mount_options")));
        assert!(parse(&with("ext4", opt), "x").is_ok(), "{opt} on ext4");
    }
    // barrier=0 is how an era stack turns cache flushes off; ext3 takes it.
    assert!(parse(&with("ext3", "barrier=0"), "x").is_ok());
}

#[test]
fn config_tables_make_a_union_with_their_own_labels() {
    let text = BASE
        .replace(
            r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
            r#"placement = "internal""#,
        )
        .replace(r#"size = "16M""#, r#"size = "64M""#)
        + r#"
[[config]]
label = "no-journal"
journal.placement = "none"

[[config]]
journal.mode = ["ordered", "journal"]

[[config]]
label = "xfs"
filesystem.type = "xfs"
"#;
    let s = parse(&text, "x.toml").unwrap();
    let labels: Vec<&str> = s.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "no-journal",
            "internal,ordered,ext4",
            "internal,journal,ext4",
            "xfs"
        ]
    );
    assert_eq!(s.configs[0].mode_label(), "none");
    assert_eq!(s.configs[0].journal_bytes(), 0);
    assert_eq!(s.configs[2].mode, DataMode::Journal);
    assert_eq!(s.configs[3].fs_type, FsType::Xfs);
    assert_eq!(s.configs[3].mode_label(), "metadata");
    assert_eq!(
        s.configs[3].journal_size,
        64 << 20,
        "the base section fills what a table leaves out"
    );
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(
        again.configs, s.configs,
        "the resolved spec lists the same configurations"
    );
    let e = err_of(&(text.clone() + "\n[[config]]\nlabel = \"xfs\"\nfilesystem.type = \"xfs\"\n"));
    assert!(e.message.contains("both be labelled"), "{e}");
    let e = err_of(&(text + "\n[[config]]\nflavour = 1\n"));
    assert!(e.message.contains("flavour"), "{e}");
}

#[test]
fn type_and_journal_rules_are_checked_at_spec_time() {
    let one = |fs: &str, journal: &str| {
        format!(
                "[filesystem]\nsize = \"1G\"\n{fs}\n[journal]\n{journal}\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n"
            )
    };
    let cases = [
        (
            "type = \"xfs\"",
            "size = \"16M\"",
            "journal.size",
            "XFS log must be 64M to 2G",
        ),
        (
            "type = \"xfs\"",
            "size = \"64M\"\nmode = \"journal\"",
            "journal.mode",
            "no data= modes",
        ),
        (
            "type = \"xfs\"",
            "size = \"64M\"\nplacement = \"none\"",
            "journal.placement",
            "ext4 only",
        ),
        (
            "type = \"xfs\"",
            "size = \"64M\"\ncommit = \"10s\"",
            "journal.commit",
            "XFS has none",
        ),
        (
            "type = \"ext3\"",
            "placement = \"none\"",
            "journal.placement",
            "ext2",
        ),
        (
            "type = \"ext3\"",
            "fast_commit = true",
            "journal.fast_commit",
            "ext4 feature",
        ),
        (
            "",
            "fast_commit = true\nmode = \"journal\"",
            "journal.fast_commit",
            "turns fast_commit off",
        ),
        (
            "",
            "placement = \"none\"\nmode = \"writeback\"",
            "journal.placement",
            "do not apply",
        ),
        (
            "",
            "ramdisk_size = \"128M\"",
            "journal.ramdisk_size",
            "ramdisk",
        ),
        (
            "",
            "placement = \"ramdisk\"\nsize = \"64M\"\nramdisk_size = \"32M\"",
            "journal.ramdisk_size",
            "cannot hold",
        ),
        (
            "",
            "commit = \"1.5s\"",
            "journal.commit",
            "whole number of seconds",
        ),
        (
            "",
            "placement = \"ramdisk\"\nsize = \"4M\"",
            "journal.size",
            "too short for jbd2",
        ),
    ];
    for (fs, journal, key, msg) in cases {
        let e = err_of(&one(fs, journal));
        assert_eq!(e.key, key, "{fs} {journal}: {e}");
        assert!(e.message.contains(msg), "{fs} {journal}: {e}");
        assert!(e.line.is_some(), "{e}");
    }
    let e = err_of(
        &one("type = \"xfs\"\nsize = \"200M\"", "size = \"64M\"").replace("size = \"1G\"\n", ""),
    );
    assert!(e.message.contains("at least 300M"), "{e}");
    let e = err_of(&format!("memory_limit = \"1M\"\n{}", one("", "")));
    assert_eq!(e.key, "memory_limit");
    let ok = parse(
        &one(
            "type = \"xfs\"",
            "size = \"64M\"\nplacement = [\"internal\", \"zram\"]",
        ),
        "x",
    )
    .unwrap();
    assert_eq!(ok.configs.len(), 2);
    let ok = parse(
        &format!(
            "memory_limit = [\"512M\", \"2G\"]\n{}",
            one("", "fast_commit = [false, true]\ncommit = \"30s\"")
        ),
        "x",
    )
    .unwrap();
    let labels: Vec<&str> = ok.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "no-fast_commit,mem512M",
            "fast_commit,mem512M",
            "no-fast_commit,mem2G",
            "fast_commit,mem2G"
        ]
    );
    assert_eq!(ok.configs[0].commit_seconds, Some(30));
    assert_eq!(ok.configs[3].memory_limit, Some(2 << 30));
}

#[test]
fn a_file_system_too_small_for_the_workload_is_refused() {
    // Study 1's medium-deep tree holds 16,376,000 KiB of data.
    let text = BASE
        .replace("blocks = 1", "blocks = 1000")
        .replace("dirs = 3", "dirs = 2")
        .replace("files = 4", "files = 2");
    let e = err_of(&text);
    assert_eq!(e.key, "filesystem.size");
    assert!(
        e.message.contains("too small for workload `small-deep`"),
        "{e}"
    );
    assert_eq!(e.line, Some(line_of(&text, r#"size = "8G""#)));
    assert!(parse(&text.replace(r#"size = "8G""#, r#"size = "20G""#), "x").is_ok());
    // Inodes run out before space: 88,573 directories + 354,292 files in 1G.
    let e = err_of(&BASE.replace(r#"size = "8G""#, r#"size = "1G""#));
    assert!(e.message.contains("inodes"), "{e}");
}

#[test]
fn workloads_need_a_kind_a_unique_name_and_a_countable_tree() {
    let text = format!("{BASE}\n[[workload]]\nkind = \"fdtree\"\nname = \"small-deep\"\n");
    let e = err_of(&text);
    assert!(e.message.contains("two workloads are named"), "{e}");
    let e = err_of(&BASE.replace("kind = \"fdtree\"\n", ""));
    assert_eq!(e.key, "workload[0].kind");
    let e = err_of(&BASE.replace("levels = 10", "levels = 4000000"));
    assert!(e.message.contains("too large"), "{e}");
    let no_workload = BASE.split("[[workload]]").next().unwrap();
    let e = err_of(no_workload);
    assert!(e.message.contains("no [[workload]]"), "{e}");
    let unnamed = BASE.replace("name = \"small-deep\"\n", "");
    let s = parse(&unnamed, "x").unwrap();
    assert_eq!(s.workloads[0].name, "fdtree-d3-f4-s1-l10");
}

#[test]
fn a_stray_control_character_gets_a_message() {
    // The TOML reader gives an empty message for this one.
    let e = err_of("\r");
    assert!(e.message.contains("invalid TOML here"), "{e:?}");
    assert_eq!(e.line, Some(1));
}

#[test]
fn toml_syntax_errors_carry_the_line() {
    let text = BASE.replace("levels = 10", "levels = = 10");
    let e = err_of(&text);
    assert_eq!(e.line, Some(line_of(&text, "levels = = 10")));
    let e = err_of(&BASE.replace("levels = 10", "levels = \"ten\""));
    assert!(e.line.is_some(), "{e}");
}
