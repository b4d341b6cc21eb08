//! Someone who can write to the parent of a session directory can rename it away and put
//! a directory of symbolic links in its place. What jbench formats must still be what
//! it created, and nothing it writes may land on a file it did not create.

use crate::common;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use common::*;
use jbench::emu::daemon::DiskSpec;
use jbench::emu::EmulationOptions;
use jbench::file_id::FileId;
use jbench::rig::emulated::DeviceDaemon;
use jbench::rig::image::ImageFile;
use jbench::rig::loopdev::LoopDevice;
use jbench::rig::session::SessionDir;
use jbench::rig::{self, Workspace};

/// The after-images hook is process-wide: tests that set it run one at a time.
static HOOK: Mutex<()> = Mutex::new(());

/// A file standing in for a disk someone wants formatted: known bytes, 64 MiB.
fn victim(dir: &Path) -> (PathBuf, Vec<u8>) {
    let path = dir.join("victim.img");
    let bytes: Vec<u8> = (0..64u32 << 20).map(|i| (i % 251) as u8).collect();
    fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

fn assert_untouched(victim: &Path, bytes: &[u8]) {
    assert!(
        fs::read(victim).unwrap() == bytes,
        "{} was written to",
        victim.display()
    );
    let loops = loopdevs_backed_by(victim);
    assert!(loops.is_empty(), "attached to the victim: {loops:?}");
}

fn loopdevs_backed_by(file: &Path) -> Vec<String> {
    jbench::rig::loopdev::attached()
        .into_iter()
        .filter(|(_, b)| b == file)
        .map(|(d, _)| d.display().to_string())
        .collect()
}

/// Renames the session directory holding `image` away and puts a directory in its
/// place whose entry of the same name is a symbolic link to `victim`.
fn swap_session_dir(image: &Path, victim: &Path) {
    let session = image.parent().unwrap();
    let moved = session.with_extension("moved");
    fs::rename(session, &moved).unwrap();
    fs::create_dir(session).unwrap();
    symlink(victim, image).unwrap();
}

/// Provisions a `second-disk` rig whose journal image is in `second_disk_dir` (the
/// work directory when `None`), swapping the directory of image `which` (0: the file
/// system's, 1: the journal's) after the images are made; checks that the swap is
/// caught and nothing is formatted or left behind.
fn swap_before_attachment(test: &str, second_disk_dir: Option<&str>, which: usize) {
    if !need_root(test) {
        return;
    }
    let _serial = HOOK.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = scratch("swap-");
    let (victim_path, bytes) = victim(tmp.path());
    let mut text = tiny_spec(&tmp.path().join("work"), "\"second-disk\"", 1, "");
    if let Some(d) = second_disk_dir {
        let dir = tmp.path().join(d);
        fs::create_dir(&dir).unwrap();
        text = text.replace(
            "mode = \"ordered\"",
            &format!(
                "mode = \"ordered\"\nsecond_disk_dir = \"{}\"",
                dir.display()
            ),
        );
    }
    let spec = jbench::experiment::spec::parse(&text, "test.toml").unwrap();
    let v = victim_path.clone();
    rig::set_after_images_hook(Some(Box::new(move |images: &[PathBuf]| {
        swap_session_dir(&images[which], &v);
    })));
    let result = {
        let mut ws = Workspace::new(&tmp.path().join("work")).unwrap();
        rig::provision(&spec.configs[0], &mut ws, &[]).map(|_| ())
    };
    rig::set_after_images_hook(None);
    let err = format!("{:#}", result.expect_err("the swap goes unnoticed"));
    assert!(err.contains("was replaced while jbench worked"), "{err}");
    assert!(err.contains("refusing"), "{err}");
    assert_untouched(&victim_path, &bytes);
    assert_no_leaks(tmp.path());
}

#[test]
fn a_session_directory_swapped_before_attachment_is_detected_and_nothing_is_formatted() {
    let _alone = crate::alone();
    swap_before_attachment(
        "a_session_directory_swapped_before_attachment_is_detected_and_nothing_is_formatted",
        None,
        0,
    );
}

#[test]
fn a_second_disk_session_directory_swapped_before_attachment_is_detected() {
    let _alone = crate::alone();
    swap_before_attachment(
        "a_second_disk_session_directory_swapped_before_attachment_is_detected",
        Some("second"),
        1,
    );
}

#[test]
fn a_loop_device_backed_by_another_file_than_expected_is_detached_and_refused() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("swap-loop-");
    let (victim_path, bytes) = victim(tmp.path());
    let session = SessionDir::create(tmp.path()).unwrap();
    let image = ImageFile::create(&session, "disk.img", 64 << 20).unwrap();
    // As if losetup had opened the victim where jbench's image was meant.
    let victim_file = fs::File::open(&victim_path).unwrap();
    let err = LoopDevice::attach_expecting(
        &victim_file,
        FileId::of(image.file()).unwrap(),
        image.path(),
        0,
        None,
        false,
    )
    .map(|_| ())
    .expect_err("a loop device over the victim is accepted");
    let err = format!("{err:#}");
    assert!(err.contains("not by the image jbench created"), "{err}");
    assert!(err.contains(&victim_path.display().to_string()), "{err}");
    assert!(err.contains("refusing to format it"), "{err}");
    assert_untouched(&victim_path, &bytes);
    drop(image);
    drop(session);
    assert_no_leaks(tmp.path());
}

#[test]
fn a_loop_device_shows_the_image_path_it_was_attached_through_a_descriptor() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("swap-path-");
    let session = SessionDir::create(tmp.path()).unwrap();
    let image = ImageFile::create(&session, "disk.img", 16 << 20).unwrap();
    let lo = LoopDevice::attach(image.file(), image.path(), 0, None).unwrap();
    // `jbench cleanup` and `losetup -a` find jbench's loop devices by this path.
    assert_eq!(
        jbench::rig::loopdev::backing_file(lo.path()).as_deref(),
        Some(image.path())
    );
    let listed = loops_under(session.path());
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].contains("disk.img"), "{listed:?}");
    drop(lo);
    drop(image);
    drop(session);
    assert_no_leaks(tmp.path());
}

#[test]
fn a_session_directory_is_0711_and_an_existing_image_name_is_refused() {
    let _alone = crate::alone();
    let tmp = tempfile::tempdir().unwrap();
    let (victim_path, bytes) = (tmp.path().join("victim"), b"keep".to_vec());
    fs::write(&victim_path, &bytes).unwrap();
    let session = SessionDir::create(tmp.path()).unwrap();
    let mode = fs::metadata(session.path()).unwrap().permissions().mode() & 0o7777;
    // Others may pass through to a mount point below (a server run as its own user),
    // never list or write.
    assert_eq!(mode, 0o711, "{}", session.path().display());

    symlink(&victim_path, session.join("disk.img")).unwrap();
    let err = ImageFile::create(&session, "disk.img", 1 << 20)
        .map(|_| ())
        .expect_err("an image over a symbolic link");
    assert!(format!("{err:#}").contains("must not exist yet"), "{err:#}");
    // A dangling link is refused as well: O_EXCL does not create its target.
    symlink(tmp.path().join("nowhere"), session.join("j.img")).unwrap();
    assert!(ImageFile::create(&session, "j.img", 1 << 20).is_err());
    assert!(!tmp.path().join("nowhere").exists());

    // The zram ledger is appended to, never through a link.
    symlink(&victim_path, session.join("zram-devices")).unwrap();
    assert!(session.note_zram(7).is_err());
    assert_eq!(fs::read(&victim_path).unwrap(), bytes);
}

#[test]
fn the_device_daemon_writes_no_file_through_a_link_and_serves_only_the_created_image() {
    let _alone = crate::alone();
    require!(root, fuse);
    let tmp = scratch("swap-daemon-");
    let (victim_path, bytes) = victim(tmp.path());
    let session = SessionDir::create(tmp.path()).unwrap();
    let image = ImageFile::create(&session, "disk.img", 16 << 20).unwrap();
    for name in [
        "device-daemon.json",
        "device-daemon.log",
        "device-daemon.pid",
    ] {
        symlink(&victim_path, session.join(name)).unwrap();
    }
    let spec = |id: FileId| DiskSpec {
        name: "fs".into(),
        image: image.path().to_path_buf(),
        model: "ram".into(),
        params: Default::default(),
        image_id: Some(id),
    };
    let opts = EmulationOptions::default();

    // An image that is not the one created: refused by the daemon.
    let other = FileId::of(&fs::File::open(&victim_path).unwrap()).unwrap();
    let err = DeviceDaemon::start(&session, &[spec(other)], &opts, vec![], None)
        .map(|_| ())
        .expect_err("the daemon serves a file it was not given");
    let err = format!("{err:#}");
    assert!(err.contains("not the image jbench created"), "{err}");
    assert_untouched(&victim_path, &bytes);

    // The right one is served, and its loop device is checked against the FUSE file.
    let id = FileId::of(image.file()).unwrap();
    let daemon = DeviceDaemon::start(&session, &[spec(id)], &opts, vec![], None).unwrap();
    let lo = daemon.attach_disk("fs", 0, None).unwrap();
    assert_eq!(
        jbench::rig::loopdev::backing_file(lo.path()).as_deref(),
        Some(daemon.disk_file("fs").as_path())
    );
    drop(lo);
    drop(daemon);
    assert_untouched(&victim_path, &bytes);
    drop(image);
    drop(session);
    assert_no_leaks(tmp.path());
}
