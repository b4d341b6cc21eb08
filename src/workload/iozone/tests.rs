//! Tests of the iozone engine: sizes and flags, spec tables, single-stream and throughput runs, stonewalling, O_SYNC, full disks and interruptions.

use super::*;
use crate::workload::testutil::{snapshot, stop_at, SmallFs};
use nix::errno::Errno;
use std::os::unix::fs::MetadataExt;

fn io(record: u64, size: u64, threads: u32) -> Iozone {
    Iozone {
        record,
        size,
        threads,
        ..Iozone::default()
    }
}

fn scratch() -> tempfile::TempDir {
    std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    tempfile::Builder::new()
        .prefix("iozone-")
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap()
}

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

#[test]
fn records_are_whole_and_the_tail_is_warned_about() {
    let exact = io(4 << 20, 75 << 20, 1);
    assert_eq!(exact.records(), 18);
    assert_eq!(exact.file_bytes(), 72 << 20);
    assert_eq!(exact.remainder(), 3 << 20);
    let w = exact.size_warning().unwrap();
    assert!(w.contains("18 whole records"), "{w}");
    assert!(w.contains("3145728 bytes"), "{w}");
    let even = io(4 << 20, 256 << 20, 1);
    assert_eq!(even.records(), 64);
    assert!(even.size_warning().is_none());
    assert_eq!(io(3, 10, 1).records(), 3);
}

#[test]
fn iozone_sizes_parse_in_kib_by_default() {
    assert_eq!(parse_iozone_size("512").unwrap(), 512 << 10);
    assert_eq!(parse_iozone_size("4k").unwrap(), 4 << 10);
    assert_eq!(parse_iozone_size("4m").unwrap(), 4 << 20);
    assert_eq!(parse_iozone_size("75M").unwrap(), 75 << 20);
    assert_eq!(parse_iozone_size("1g").unwrap(), 1 << 30);
    assert!(parse_iozone_size("4q")
        .unwrap_err()
        .contains("unknown unit"));
    assert!(parse_iozone_size("m").is_err());
    assert!(parse_iozone_size("").is_err());
    assert_eq!(iozone_size(75 << 20), "75m");
    assert_eq!(iozone_size(1 << 30), "1g");
    assert_eq!(iozone_size(1536), "1k(+512B)");
}

#[test]
fn command_line_flags_parse_like_iozone() {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        a: CliArgs,
    }
    let w = Wrap::try_parse_from([
        "x", "--dir", "/tmp", "-r", "4m", "-s", "75m", "-i", "0", "-i1", "-o", "-e", "-t", "6",
    ])
    .unwrap();
    let got = w.a.to_iozone();
    assert_eq!(
        got,
        Iozone {
            record: 4 << 20,
            size: 75 << 20,
            write: true,
            read: true,
            osync: true,
            flush: true,
            threads: 6,
            stonewall: true,
        }
    );
    assert_eq!(
        got.command_line(),
        "iozone -r 4m -s 75m -i 0 -i 1 -o -e -t 6"
    );
    let d = Wrap::try_parse_from(["x", "--dir", "/tmp", "-i", "0", "-x", "--json"]).unwrap();
    assert_eq!(
        d.a.to_iozone(),
        Iozone {
            read: false,
            stonewall: false,
            ..Iozone::default()
        }
    );
    assert!(d.a.json);
    assert!(Wrap::try_parse_from(["x", "--dir", "/tmp", "-i", "2"]).is_err());
    assert!(Wrap::try_parse_from(["x", "--dir", "/tmp", "-s", "75x"]).is_err());
}

#[test]
fn spec_table_parses_validates_and_round_trips_params() {
    let t = table(
        r#"kind = "iozone"
            name = "x"
            record = "4M"
            size = 78643200
            tests = ["write", "read"]
            osync = true
            flush = true
            threads = 6"#,
    );
    let parsed = Iozone::from_table(&t).unwrap();
    assert_eq!(parsed.record, 4 << 20);
    assert_eq!(parsed.size, 75 << 20);
    assert!(parsed.osync && parsed.flush && parsed.stonewall);
    assert_eq!(parsed.threads, 6);
    for case in [
        parsed,
        io(1000, 123_457, 3),
        Iozone {
            read: false,
            ..Iozone::default()
        },
    ] {
        let p = case.params();
        let back: toml::Table = toml::from_str(&toml::to_string(&p).unwrap()).unwrap();
        assert_eq!(Iozone::from_table(&back).unwrap(), case, "{p}");
    }
    assert_eq!(parsed.params()["record"], "4M");
    assert_eq!(parsed.params()["size"], "75M");
    let w = Iozone::default();
    assert_eq!(w.phase_names(), ["write", "rewrite", "read", "reread"]);
    assert_eq!(parsed.peak_data_bytes(), 6 * (75 << 20));
    assert_eq!(parsed.peak_inodes(), 6);
    assert_eq!(parsed.default_name(), "iozone-r4M-s75M-o-e-t6");
}

#[test]
fn spec_table_errors_name_the_key() {
    let err = |text: &str| Iozone::from_table(&table(text)).unwrap_err().key;
    assert_eq!(err("blocks = 3"), "blocks");
    assert_eq!(err("record = \"4Q\""), "record");
    assert_eq!(err("record = 0"), "record");
    assert_eq!(err("size = 100\nrecord = 4096"), "size");
    assert_eq!(err("threads = 0"), "threads");
    assert_eq!(err("tests = [\"read\"]"), "tests");
    assert_eq!(err("tests = [\"write\", \"write\"]"), "tests");
    assert_eq!(err("tests = [2]"), "tests");
    assert_eq!(err("osync = 1"), "osync");
    assert!(from_table(&table("kind = \"iozone\"\ndurable = true")).is_ok());
}

#[test]
fn single_stream_run_moves_whole_records_and_cleans_up() {
    let dir = scratch();
    // 10 KiB in 4 KiB records: two records, 2 KiB never touched.
    let io = io(4096, 10 * 1024, 1);
    let results = io.run_in(dir.path(), &RunControl::new(), true).unwrap();
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["write", "rewrite", "read", "reread"]);
    for r in &results {
        assert_eq!((r.ops, r.bytes), (2, 8192), "{}", r.name);
        assert_eq!(r.counters["kib_moved"], 8);
        assert_eq!(r.counters["size_remainder_bytes"], 2048);
        assert!(r.seconds > 0.0);
        assert!(r.counters["children_kib_per_s"] > 0);
    }
    let meta = std::fs::metadata(dir.path().join(SINGLE_FILE)).unwrap();
    assert_eq!(meta.size(), 8192);
    let data = std::fs::read(dir.path().join(SINGLE_FILE)).unwrap();
    assert!(data.iter().all(|&b| b == PATTERN));
    // A file the run did not make is refused and left as it was.
    let err = io.run(dir.path(), &RunControl::new()).unwrap_err();
    assert!(format!("{err:#}").contains("already exists"), "{err:#}");
    assert_eq!(std::fs::read(dir.path().join(SINGLE_FILE)).unwrap(), data);
    // The Workload entry point removes its file.
    std::fs::remove_file(dir.path().join(SINGLE_FILE)).unwrap();
    io.run(dir.path(), &RunControl::new()).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn throughput_mode_with_three_workers() {
    let dir = scratch();
    let io = Iozone {
        stonewall: false,
        ..io(8192, 64 * 1024, 3)
    };
    let results = io.run_in(dir.path(), &RunControl::new(), true).unwrap();
    for r in &results {
        assert_eq!((r.ops, r.bytes), (24, 3 * 65536), "{}", r.name);
        assert_eq!(r.counters["kib_counted"], 192);
        assert_eq!(r.counters["threads"], 3);
        let (c, p) = (
            r.counters["children_kib_per_s"],
            r.counters["parent_kib_per_s"],
        );
        assert!(c > 0 && p > 0, "{r:?}");
    }
    for i in 0..3 {
        let m = std::fs::metadata(dir.path().join(format!("iozone.DUMMY.{i}"))).unwrap();
        assert_eq!(m.size(), 65536);
    }
    // The throughput writer does not truncate, so it refuses leftover files.
    let err = io
        .run_in(dir.path(), &RunControl::new(), false)
        .unwrap_err();
    assert!(format!("{err:#}").contains("already exists"), "{err:#}");
}

/// The parent's clock covers every worker's, even when the parent is descheduled right
/// after the start signal: "parent sees" can never exceed "children see" (each child's
/// rate is its KiB over its own, shorter, time). With the clock read after the signal,
/// the workers finish during the lag and the parent's rate comes out many times theirs.
#[test]
fn a_slow_parent_cannot_see_more_than_the_children() {
    let dir = scratch();
    let io = Iozone {
        stonewall: false,
        ..io(4096, 1 << 20, 2)
    };
    let ctl = RunControl::new().with_coordinator_lag(std::time::Duration::from_millis(300));
    let results = io.run_in(dir.path(), &ctl, false).unwrap();
    for r in &results {
        let (c, p) = (
            r.counters["children_kib_per_s"],
            r.counters["parent_kib_per_s"],
        );
        // Both are rounded to whole KiB/s.
        assert!(
            p <= c + 1,
            "{}: parent sees {p} KiB/s, children {c}",
            r.name
        );
    }
}

#[test]
fn stonewalling_counts_only_until_the_first_worker_ends() {
    let dir = scratch();
    let io = io(4096, 256 * 1024, 4);
    let results = io.run_in(dir.path(), &RunControl::new(), false).unwrap();
    let write = &results[0];
    // Initial writers always finish their files.
    assert_eq!(write.bytes, 4 * 256 * 1024);
    for r in &results {
        assert!(r.counters["kib_counted"] <= r.bytes / 1024, "{r:?}");
        assert!(
            r.counters["kib_counted"] >= 256,
            "the first worker counts all: {r:?}"
        );
    }
}

/// The access-mode and status flags of the open descriptors on `name`.
fn open_flags_of(name: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if !target.to_string_lossy().ends_with(name) {
            continue;
        }
        let fd = e.file_name().to_string_lossy().into_owned();
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
        if let Some(l) = info.lines().find(|l| l.starts_with("flags:")) {
            out.push(i32::from_str_radix(l[6..].trim(), 8).unwrap());
        }
    }
    out
}

#[test]
fn osync_flag_is_on_every_open() {
    let dir = scratch();
    let path = dir.path().join("probe");
    let cpath = c_path(&path).unwrap();
    for phase in Phase::ALL {
        for single in [true, false] {
            let job = Job {
                phase,
                record: 4096,
                records: 1,
                osync: true,
                flush: false,
                single,
                stonewall: false,
            };
            let fd = open_for(&job, &cpath, &path).unwrap();
            let flags = open_flags_of("/probe");
            assert_eq!(flags.len(), 1);
            assert_eq!(flags[0] & libc::O_SYNC, libc::O_SYNC, "{phase:?} {single}");
            drop(fd);
            let plain = Job {
                osync: false,
                ..job
            };
            let fd = open_for(&plain, &cpath, &path).unwrap();
            assert_eq!(open_flags_of("/probe")[0] & libc::O_SYNC, 0);
            drop(fd);
        }
    }
}

#[test]
fn full_disk_removes_the_files() {
    let Some(fs) = SmallFs::new("iozone full_disk_removes_the_files", "1m") else {
        return;
    };
    std::fs::write(fs.path().join("keep"), b"mine").unwrap();
    let before = snapshot(fs.path());
    for threads in [1, 3] {
        let err = io(64 << 10, 1 << 20, threads)
            .run(fs.path(), &RunControl::new())
            .unwrap_err();
        let os = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(os.errno, Errno::ENOSPC, "{err:#}");
        assert!(format!("{err:#}").contains("was removed"), "{err:#}");
        assert_eq!(snapshot(fs.path()), before, "-t {threads}");
    }
    // With -w the files stay, and the error says where.
    let err = io(64 << 10, 1 << 20, 1)
        .run_in(fs.path(), &RunControl::new(), true)
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("kept as -w asks"), "{text}");
    assert!(
        text.contains(&fs.path().join(SINGLE_FILE).display().to_string()),
        "{text}"
    );
}

#[test]
fn interrupt_removes_the_files() {
    for phase in ["rewrite", "read", "reread"] {
        for threads in [1, 2] {
            let dir = scratch();
            std::fs::write(dir.path().join("iozone.tmp.not"), b"mine").unwrap();
            let before = snapshot(dir.path());
            let err = io(4096, 64 << 10, threads)
                .run(dir.path(), &stop_at(phase))
                .unwrap_err();
            assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
            assert_eq!(snapshot(dir.path()), before, "{phase} -t {threads}");
        }
    }
}

#[test]
fn command_line_refuses_a_missing_dir() {
    let dir = scratch();
    let missing = dir.path().join("nope");
    let args = CliArgs {
        dir: missing.clone(),
        record: 4096,
        size: 8192,
        tests: vec![],
        osync: false,
        flush: false,
        threads: None,
        no_stonewall: false,
        keep: false,
        json: false,
    };
    let err = run_cli(&args, &RunControl::new()).unwrap_err();
    assert!(
        err.to_string()
            .contains("is not a directory; create it first"),
        "{err:#}"
    );
    assert!(!missing.exists());
}

#[test]
fn stop_request_interrupts() {
    let dir = scratch();
    let ctl = RunControl::new();
    ctl.request_stop();
    let err = io(4096, 8192, 2).run(dir.path(), &ctl).unwrap_err();
    assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
}

#[test]
fn errors_name_the_call_path_and_errno() {
    let dir = scratch();
    let missing = dir.path().join("missing");
    let err = io(4096, 8192, 2)
        .run(&missing, &RunControl::new())
        .unwrap_err();
    let fs = err.downcast_ref::<FsOpError>().expect("an FsOpError");
    assert_eq!(fs.errno, Errno::ENOENT);
    let text = format!("{err:#}");
    assert!(text.contains("missing/iozone.DUMMY."), "{text}");
    assert!(text.contains("No such file or directory"), "{text}");
    assert!(text.contains("iozone phase write"), "{text}");
}

#[test]
fn report_block_has_iozone_labels() {
    let dir = scratch();
    let single = io(4096, 16384, 1);
    let rs = single.run(dir.path(), &RunControl::new()).unwrap();
    let text = report(&single, &rs);
    assert!(
        text.contains("Command line used: iozone -r 4k -s 16k -i 0 -i 1"),
        "{text}"
    );
    assert!(
        text.contains("kB  reclen    write  rewrite     read   reread"),
        "{text}"
    );
    let multi = Iozone {
        osync: true,
        flush: true,
        ..io(4096, 16384, 2)
    };
    let rs = multi.run(dir.path(), &RunControl::new()).unwrap();
    let text = report(&multi, &rs);
    for l in [
        "Children see throughput for  2 initial writers",
        "Parent sees throughput for  2 re-readers",
        "SYNC Mode.",
        "Include fsync in write timing",
        "Min xfer",
    ] {
        assert!(text.contains(l), "{l}\n{text}");
    }
}

use crate::workload::test_support::recording_ctl;

#[test]
fn osync_writes_are_promised_when_they_return_with_stamped_blocks() {
    // 6 KiB records: the stamps move within the buffer from one record to the next.
    for (record, threads) in [(6 << 10, 1u32), (8 << 10, 2)] {
        let dir = scratch();
        // Without stonewalling every rewriter writes its whole file: a fixed count.
        let io = Iozone {
            osync: true,
            stonewall: false,
            ..io(record, 48 << 10, threads)
        };
        let (ctl, seen) = recording_ctl();
        io.run_in(dir.path(), &ctl, false).unwrap();
        let params = io.params();
        assert!((super::kind::KIND.promises)(&params).makes_promises());
        let seen = seen.lock().unwrap();
        // write and rewrite: every record of every file, once each.
        assert_eq!(
            seen.len() as u64,
            2 * u64::from(threads) * 48 * 1024 / record
        );
        for name in io.file_names() {
            let mut ranges: Vec<(u64, u64)> = seen
                .iter()
                .filter(|(p, ..)| p.ends_with(&format!("/{name}")))
                .map(|(_, o, l, _)| (*o, *l))
                .collect();
            ranges.sort();
            ranges.dedup();
            let want: Vec<(u64, u64)> = (0..io.records()).map(|i| (i * record, record)).collect();
            assert_eq!(ranges, want, "{name}");
        }
        for (path, off, len, held) in seen.iter() {
            let rel = Path::new(path)
                .strip_prefix(dir.path())
                .unwrap()
                .display()
                .to_string();
            let want = (super::kind::KIND.promises)(&params)
                .range_content(&rel, *off, *len)
                .unwrap();
            assert!(
                &want == held,
                "{rel} [{off}, +{len}) differs from range_content"
            );
        }
        // Without a write log the buffer is iozone's plain fill, as before.
        let plain = io.run_in(dir.path(), &RunControl::new(), true).unwrap();
        assert_eq!(plain.len(), 4);
        let data = std::fs::read(dir.path().join(&io.file_names()[0])).unwrap();
        assert!(data.iter().all(|b| *b == PATTERN));
    }
    // Without osync nothing is marked.
    let dir = scratch();
    let (ctl, seen) = recording_ctl();
    io(4096, 16 << 10, 1)
        .run_in(dir.path(), &ctl, false)
        .unwrap();
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn stamps_make_every_block_of_every_file_unique() {
    let a = stamped_content(0, 0, 8192);
    let b = stamped_content(1, 0, 8192);
    assert_ne!(a[..4096], a[4096..], "blocks of one file differ");
    assert_ne!(a, b, "files differ");
    assert_eq!(&a[..4], b"jbIZ");
    assert_eq!(&a[4096 + 8..4096 + 16], &4096u64.to_le_bytes());
    assert!(a[16..4096].iter().all(|x| *x == PATTERN));
    // A buffer stamped for a write at an odd offset holds the same bytes.
    let mut buf = vec![PATTERN; 5000];
    stamp(&mut buf, 3, 4000);
    assert_eq!(buf, stamped_content(3, 4000, 5000));
    assert_eq!(file_id(Path::new("x/iozone.DUMMY.12")), Some(12));
    assert_eq!(file_id(Path::new("iozone.tmp")), Some(0));
    assert_eq!(file_id(Path::new("other")), None);
}
