//! Each journal placement provisions what it claims. The checks here read the devices
//! with blkid and dumpe2fs directly, independently of jbench's own verifier.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;
use jbench::experiment::config::Placement;
use jbench::rig::{self, Workspace};

fn blkid(dev: &Path) -> BTreeMap<String, String> {
    let out = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(dev)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn dumpe2fs(dev: &Path) -> BTreeMap<String, String> {
    let out = Command::new("dumpe2fs")
        .arg("-h")
        .arg(dev)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn spec_for(work: &Path, placement: &str, size: &str) -> jbench::experiment::spec::Spec {
    let text = tiny_spec(work, &format!("\"{placement}\""), 1, "")
        .replace("size = \"8M\"", &format!("size = \"{size}\""));
    jbench::experiment::spec::parse(&text, "test.toml").unwrap()
}

fn check_placement(placement: &str, journal: &str) {
    let tmp = scratch("provision-");
    let spec = spec_for(tmp.path(), placement, journal);
    let config = &spec.configs[0];
    let journal_bytes = jbench::units::parse_size(journal).unwrap();
    {
        let mut ws = Workspace::new(tmp.path()).unwrap();
        let rig = rig::provision(config, &mut ws, &[]).unwrap();

        let fs = blkid(&rig.fs_device);
        assert_eq!(fs.get("TYPE").map(String::as_str), Some("ext4"), "{fs:?}");
        let sb = dumpe2fs(&rig.fs_device);
        assert_eq!(sb["Block size"], "4096");
        assert!(sb["Filesystem features"].contains("has_journal"));

        match config.placement {
            Placement::Internal => {
                assert!(rig.journal_device.is_none());
                assert!(
                    !sb.contains_key("Journal UUID"),
                    "internal journal has no UUID: {sb:?}"
                );
                assert_eq!(sb["Journal inode"], "8");
                let blocks: u64 = sb["Total journal blocks"].parse().unwrap();
                assert_eq!(blocks * 4096, journal_bytes);
            }
            _ => {
                let jdev = rig.journal_device.clone().expect("external journal device");
                let j = blkid(&jdev);
                assert_eq!(j.get("TYPE").map(String::as_str), Some("jbd"), "{j:?}");
                assert_eq!(
                    sb["Journal UUID"], j["UUID"],
                    "file system points at this journal"
                );
                let jsb = dumpe2fs(&jdev);
                let blocks: u64 = jsb["Total journal blocks"].parse().unwrap();
                assert_eq!(blocks * 4096, journal_bytes);
                let expect_prefix = match config.placement {
                    Placement::Zram => "/dev/zram",
                    _ => "/dev/loop",
                };
                assert!(
                    jdev.starts_with("/dev") && jdev.to_string_lossy().starts_with(expect_prefix)
                );
                check_backing(config.placement, &rig, tmp.path());
            }
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let line = mounts
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(&*rig.mount_point.to_string_lossy()))
            .expect("mounted");
        assert!(line.contains("data=ordered"), "{line}");
        assert!(
            line.starts_with(&*rig.fs_device.to_string_lossy()),
            "{line}"
        );
        rig.teardown().unwrap();
    }
    assert_no_leaks(tmp.path());
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
        "session directory removed"
    );
}

/// Where the journal's bytes live: the same image after the file system, a second
/// image, or tmpfs.
fn check_backing(placement: Placement, rig: &rig::Rig, work: &Path) {
    let jdev = rig.journal_device.as_ref().unwrap();
    let name = jdev.file_name().unwrap().to_string_lossy().into_owned();
    let sys = |f: &str| {
        std::fs::read_to_string(format!("/sys/block/{name}/loop/{f}")).map(|s| s.trim().to_string())
    };
    let fs_name = rig
        .fs_device
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let fs_backing =
        std::fs::read_to_string(format!("/sys/block/{fs_name}/loop/backing_file")).unwrap();
    match placement {
        Placement::SameDisk => {
            assert_eq!(
                sys("backing_file").unwrap(),
                fs_backing.trim(),
                "same image"
            );
            assert_eq!(
                sys("offset").unwrap(),
                (128u64 << 20).to_string(),
                "journal after the file system"
            );
        }
        Placement::SecondDisk => {
            let b = sys("backing_file").unwrap();
            assert_ne!(b, fs_backing.trim());
            assert!(b.starts_with(&*work.to_string_lossy()));
        }
        Placement::Ramdisk => {
            let b = sys("backing_file").unwrap();
            assert!(b.starts_with("/dev/shm/"), "{b}");
        }
        Placement::Zram => {
            assert!(Path::new(&format!("/sys/block/{name}/disksize")).exists());
        }
        _ => {}
    }
}

#[test]
fn internal_journal() {
    if need_root("internal_journal") {
        check_placement("internal", "8M");
    }
}

#[test]
fn same_disk_journal() {
    if need_root("same_disk_journal") {
        check_placement("same-disk", "8M");
    }
}

#[test]
fn second_disk_journal() {
    if need_root("second_disk_journal") {
        check_placement("second-disk", "16M");
    }
}

#[test]
fn ramdisk_journal() {
    if need_root("ramdisk_journal") {
        check_placement("ramdisk", "8M");
    }
}

#[test]
fn zram_journal_is_added_and_removed() {
    require!(root, zram);
    let _serial = zram_lock();
    let before: Vec<String> = zram_devices();
    check_placement("zram", "8M");
    assert_eq!(
        zram_devices(),
        before,
        "the zram device jbench added is gone, others untouched"
    );
}

#[test]
fn a_panic_after_provisioning_releases_everything() {
    require!(root);
    let tmp = scratch("panic-");
    let spec = spec_for(tmp.path(), "same-disk", "8M");
    let config = spec.configs[0].clone();
    let work = tmp.path().to_path_buf();
    let result = std::panic::catch_unwind(move || {
        let mut ws = Workspace::new(&work).unwrap();
        let rig = rig::provision(&config, &mut ws, &[]).unwrap();
        assert!(!loops_under(&work).is_empty());
        let _keep = (rig, ws);
        panic!("boom in the middle of a trial");
    });
    assert!(result.is_err());
    assert_no_leaks(tmp.path());
}

#[test]
fn a_failed_mkfs_releases_what_was_attached() {
    require!(root);
    let tmp = scratch("mkfsfail-");
    let text = tiny_spec(
        tmp.path(),
        "\"second-disk\"",
        1,
        "mkfs_options = [\"-O\", \"no_such_feature\"]",
    );
    let spec = jbench::experiment::spec::parse(&text, "t.toml").unwrap();
    {
        let mut ws = Workspace::new(tmp.path()).unwrap();
        let err = rig::provision(&spec.configs[0], &mut ws, &[])
            .err()
            .expect("mkfs must fail");
        assert!(format!("{err:#}").contains("no_such_feature"), "{err:#}");
        assert_no_leaks(tmp.path());
    }
    assert_no_leaks(tmp.path());
}

/// A tiny experiment of one configuration, from `[filesystem]`/`[journal]` lines.
fn one_config(work: &Path, fs: &str, journal: &str) -> jbench::experiment::config::Config {
    let text = format!(
        "work_dir = \"{}\"\n[filesystem]\nsize = \"512M\"\n{fs}\n[journal]\n{journal}\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n",
        work.display()
    );
    jbench::experiment::spec::parse(&text, "t.toml")
        .unwrap()
        .configs
        .remove(0)
}

/// Provisions, checks what was built independently, runs nothing, tears down.
fn check_type(fs: &str, journal: &str, check: impl Fn(&rig::Rig, &str)) {
    let tmp = scratch("types-");
    let config = one_config(tmp.path(), fs, journal);
    {
        let mut ws = Workspace::new(tmp.path()).unwrap();
        let rig = rig::provision(&config, &mut ws, &[]).unwrap();
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let line = mounts
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(&*rig.mount_point.to_string_lossy()))
            .expect("mounted")
            .to_string();
        assert_eq!(rig.verified.mode, config.mode_label(), "{line}");
        check(&rig, &line);
        rig.teardown().unwrap();
    }
    assert_no_leaks(tmp.path());
}

#[test]
fn ext3_in_each_data_mode() {
    require!(root);
    for mode in ["ordered", "journal", "writeback"] {
        check_type(
            "type = \"ext3\"",
            &format!("mode = \"{mode}\"\nplacement = \"second-disk\""),
            |rig, line| {
                assert!(
                    line.contains(" ext3 ") && line.contains(&format!("data={mode}")),
                    "{line}"
                );
                assert_eq!(
                    blkid(&rig.fs_device).get("TYPE").map(String::as_str),
                    Some("ext3")
                );
                let sb = dumpe2fs(&rig.fs_device);
                assert_eq!(
                    sb["Journal UUID"],
                    blkid(rig.journal_device.as_ref().unwrap())["UUID"]
                );
            },
        );
    }
}

#[test]
fn ext4_without_a_journal() {
    require!(root);
    check_type("", "placement = \"none\"", |rig, line| {
        let sb = dumpe2fs(&rig.fs_device);
        assert!(!sb["Filesystem features"].contains("has_journal"), "{sb:?}");
        assert!(!line.contains("data="), "{line}");
        assert_eq!(rig.verified.journal_device, "none");
        assert_eq!(rig.verified.journal_bytes, 0);
    });
}

#[test]
fn ext4_fast_commit_and_commit_interval() {
    require!(root);
    check_type("", "fast_commit = true\ncommit = \"17s\"", |rig, line| {
        let sb = dumpe2fs(&rig.fs_device);
        assert!(sb["Filesystem features"].contains("fast_commit"), "{sb:?}");
        assert!(line.contains("commit=17"), "{line}");
    });
}

#[test]
fn xfs_with_internal_and_external_logs() {
    require!(root, xfs, zram);
    let xfs_log = |rig: &rig::Rig| -> String {
        let out = Command::new("xfs_info")
            .arg(&rig.mount_point)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("log"))
            .unwrap()
            .to_string()
    };
    check_type("type = \"xfs\"", "size = \"64M\"", |rig, line| {
        assert!(line.contains(" xfs "), "{line}");
        assert_eq!(
            blkid(&rig.fs_device).get("TYPE").map(String::as_str),
            Some("xfs")
        );
        let log = xfs_log(rig);
        assert!(
            log.contains("internal") && log.contains("blocks=16384"),
            "{log}"
        );
    });
    for placement in ["second-disk", "zram"] {
        let _serial = zram_lock();
        check_type(
            "type = \"xfs\"",
            &format!("size = \"64M\"\nplacement = \"{placement}\""),
            |rig, line| {
                let j = rig
                    .journal_device
                    .as_ref()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                assert!(line.contains(&format!("logdev={j}")), "{line}");
                let log = xfs_log(rig);
                assert!(log.contains(&j) && log.contains("blocks=16384"), "{log}");
            },
        );
    }
}

#[test]
fn a_ramdisk_journal_region_takes_the_whole_ramdisk_in_memory() {
    require!(root);
    check_type(
        "",
        "placement = \"ramdisk\"\nsize = \"8M\"\nramdisk_size = \"64M\"",
        |rig, _| {
            let jdev = rig.journal_device.as_ref().unwrap();
            let name = jdev.file_name().unwrap().to_string_lossy().into_owned();
            let backing =
                std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).unwrap();
            let backing = backing.trim();
            let meta = std::fs::metadata(backing).unwrap();
            use std::os::unix::fs::MetadataExt;
            assert_eq!(meta.len(), 64 << 20);
            assert_eq!(
                meta.blocks() * 512,
                64 << 20,
                "every page of the RAM disk is allocated"
            );
            let size = std::fs::read_to_string(format!("/sys/block/{name}/size")).unwrap();
            assert_eq!(
                size.trim().parse::<u64>().unwrap() * 512,
                8 << 20,
                "the journal is a region of it"
            );
        },
    );
}
