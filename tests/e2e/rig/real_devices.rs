//! Real devices are sacred: loop devices stand in for disks here, and after every
//! refusal their content must be byte-for-byte what it was.

use crate::common;

use std::process::Command;

use common::*;

fn spec_on_device(
    work: &std::path::Path,
    fs_dev: &str,
    journal: Option<&str>,
) -> std::path::PathBuf {
    let journal_keys = match journal {
        Some(j) => format!("placement = \"device\"\ndevice = \"{j}\""),
        None => "placement = \"internal\"".to_string(),
    };
    let body = format!(
        r#"name = "real"
repetitions = 1
work_dir = "{}"

[filesystem]
device = "{fs_dev}"

[journal]
{journal_keys}
size = "8M"

[[workload]]
kind = "fdtree"
dirs = 2
files = 2
blocks = 1
levels = 2
"#,
        work.display()
    );
    write_spec(work, "real", &body)
}

fn mkfs(dev: &str) {
    let out = Command::new("mkfs.ext4")
        .args(["-q", "-F", dev])
        .output()
        .unwrap();
    assert!(out.status.success());
}

fn refused(args: &[&str], spec: &std::path::Path) -> String {
    let out = jbench().arg("run").arg(spec).args(args).output().unwrap();
    assert!(
        !out.status.success(),
        "must refuse: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `jbench run SPEC ARGS`, expects a refusal whose message holds every `needle`,
/// and checks that no disk's content changed.
fn assert_refused(spec: &std::path::Path, args: &[&str], disks: &[&FakeDisk], needles: &[&str]) {
    let before: Vec<String> = disks.iter().map(|d| sha256_of_device(&d.dev)).collect();
    let err = refused(args, spec);
    for n in needles {
        assert!(err.contains(n), "expected `{n}` in: {err}");
    }
    let after: Vec<String> = disks.iter().map(|d| sha256_of_device(&d.dev)).collect();
    assert_eq!(after, before, "content untouched");
}

#[test]
fn a_device_with_a_file_system_is_refused_without_the_flag() {
    require!(root);
    let tmp = scratch("real-sig-");
    let disk = FakeDisk::new(tmp.path(), "disk.img", 128);
    mkfs(&disk.dev);
    let spec = spec_on_device(tmp.path(), &disk.dev, None);
    // Names the device, says why, and says how.
    assert_refused(
        &spec,
        &[],
        &[&disk],
        &[&disk.dev, "ext4 signature", "--destroy-data-on"],
    );
    assert!(!tmp.path().join("results").exists());
}

#[test]
fn a_blank_device_is_refused_without_the_flag_too() {
    require!(root);
    let tmp = scratch("real-blank-");
    let disk = FakeDisk::new(tmp.path(), "disk.img", 128);
    std::fs::write(&disk.image, b"payload that must survive").unwrap();
    let spec = spec_on_device(tmp.path(), &disk.dev, None);
    assert_refused(&spec, &[], &[&disk], &["is a real device"]);
}

#[test]
fn the_flag_must_name_the_exact_device() {
    require!(root);
    let tmp = scratch("real-exact-");
    let disk = FakeDisk::new(tmp.path(), "disk.img", 128);
    let other = FakeDisk::new(tmp.path(), "other.img", 64);
    mkfs(&disk.dev);
    let spec = spec_on_device(tmp.path(), &disk.dev, None);
    let args = ["--destroy-data-on", other.dev.as_str()];
    assert_refused(
        &spec,
        &args,
        &[&disk, &other],
        &[&other.dev, "does not use"],
    );
}

#[test]
fn a_mounted_device_is_refused_even_with_the_flag() {
    require!(root);
    let tmp = scratch("real-mounted-");
    let disk = FakeDisk::new(tmp.path(), "disk.img", 128);
    mkfs(&disk.dev);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .arg(&disk.dev)
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::write(mnt.join("precious"), b"data").unwrap();
    let spec = spec_on_device(tmp.path(), &disk.dev, None);
    let err = refused(&["--destroy-data-on", &disk.dev], &spec);
    Command::new("umount").arg(&mnt).status().unwrap();
    assert!(
        err.contains("is mounted on") && err.contains(&disk.dev),
        "{err}"
    );
    // Still the same file system with the file on it.
    let ok = Command::new("mount")
        .arg(&disk.dev)
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(std::fs::read(mnt.join("precious")).unwrap(), b"data");
    Command::new("umount").arg(&mnt).status().unwrap();
}

#[test]
fn a_journal_device_is_checked_like_a_file_system_device() {
    require!(root);
    let tmp = scratch("real-journal-");
    let fsdisk = FakeDisk::new(tmp.path(), "fs.img", 256);
    let jdisk = FakeDisk::new(tmp.path(), "j.img", 64);
    mkfs(&jdisk.dev);
    let spec = spec_on_device(tmp.path(), &fsdisk.dev, Some(&jdisk.dev));
    // Only the file-system device is named: the journal device is refused, and the
    // file-system device is not touched either (checks run before anything is made).
    let args = ["--destroy-data-on", fsdisk.dev.as_str()];
    assert_refused(&spec, &args, &[&fsdisk, &jdisk], &[&jdisk.dev]);
}

#[test]
fn named_devices_are_formatted_and_measured() {
    require!(root);
    let tmp = scratch("real-ok-");
    let fsdisk = FakeDisk::new(tmp.path(), "fs.img", 256);
    let jdisk = FakeDisk::new(tmp.path(), "j.img", 64);
    mkfs(&fsdisk.dev); // an old signature: allowed because the device is named
    let spec = spec_on_device(tmp.path(), &fsdisk.dev, Some(&jdisk.dev));
    let results = tmp.path().join("results");
    run_ok(
        jbench()
            .arg("run")
            .arg(&spec)
            .args([
                "--destroy-data-on",
                &fsdisk.dev,
                "--destroy-data-on",
                &jdisk.dev,
                "-q",
                "--results",
            ])
            .arg(&results),
    );
    let rec: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(results.join("trials.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["verified"]["journal_device"], jdisk.dev.as_str());
    assert_eq!(
        rec["verified"]["journal_bytes"],
        8 << 20,
        "journal of the size asked for, not the whole device"
    );
    assert!(mounts_under(tmp.path()).is_empty());
    // The test's own loop devices are still attached: jbench released only what it made.
    assert_eq!(loops_under(tmp.path()).len(), 2);
}

#[test]
fn a_journal_bigger_than_its_device_is_refused_before_anything_is_made() {
    require!(root);
    let tmp = scratch("real-small-");
    let fsdisk = FakeDisk::new(tmp.path(), "fs.img", 256);
    let jdisk = FakeDisk::new(tmp.path(), "j.img", 16);
    let spec = spec_on_device(tmp.path(), &fsdisk.dev, Some(&jdisk.dev));
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("size = \"8M\"", "size = \"32M\"");
    std::fs::write(&spec, text).unwrap();
    let args = [
        "--destroy-data-on",
        &fsdisk.dev,
        "--destroy-data-on",
        &jdisk.dev,
    ];
    assert_refused(
        &spec,
        &args,
        &[&fsdisk, &jdisk],
        &["bigger than the journal device"],
    );
}
