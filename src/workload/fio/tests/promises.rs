//! Tests of fio's promises: the plan (which files, which bytes), the injected job
//! text, strace's lines through the relay, and a real fio run under strace.

use super::promises::{within_work_dir, Pattern, Plan, Rule};
use super::relay::{coalesce, parse_call, quoted, Durable, Relay};
use super::*;

fn plan(text: &str) -> Plan {
    Plan::of_text(text).unwrap()
}

/// `bytes` as strace prints a buffer (octal escapes for everything unprintable).
fn strace_str(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for (i, b) in bytes.iter().enumerate() {
        let next_digit = bytes.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        match *b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0 if !next_digit => s.push_str("\\0"),
            0x20..=0x7e => s.push(*b as char),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s.push_str("\"...");
    s
}

const P: Pattern = Pattern {
    tag: *b"jbfio\0\0\0",
    bs: 4096,
};

fn pw(pid: u32, path: &str, off: u64, len: u64) -> String {
    let data = strace_str(&P.content(off, 16));
    format!("{pid}   pwrite64(3<{path}>, {data}, {len}, {off}) = {len}")
}

fn feed(relay: &mut Relay, lines: &[&str]) -> Vec<Durable> {
    let mut out = Vec::new();
    for l in lines {
        relay.line(l, &mut out);
    }
    out
}

fn d(path: &str, offset: u64, len: u64) -> Durable {
    Durable {
        path: path.into(),
        offset,
        len,
    }
}

#[test]
fn fio_pattern_is_the_tagged_offset_of_each_write_repeated() {
    let p = Pattern {
        tag: *b"jbfio\0\0\x02",
        bs: 8192,
    };
    let c = p.content(0, 8192 + 32);
    let unit0: Vec<u8> = [&p.tag[..], &0u64.to_le_bytes()].concat();
    let unit1: Vec<u8> = [&p.tag[..], &8192u64.to_le_bytes()].concat();
    assert_eq!(&c[..16], &unit0[..]);
    // The second 4 KiB of an 8 KiB write carries the write's start, not its own.
    assert_eq!(&c[4096..4112], &unit0[..]);
    assert_eq!(&c[8192..8208], &unit1[..]);
    // A range that starts inside a unit.
    assert_eq!(
        p.content(8200, 10),
        unit1[8..]
            .iter()
            .chain(&unit1[..2])
            .copied()
            .collect::<Vec<_>>()
    );
}

#[test]
fn fio_plan_promises_only_what_it_can_follow() {
    let p = plan(
        "[global]\nsize=64k\n[a]\nrw=randwrite\nfdatasync=1\n\
         [b]\nrw=write\nioengine=libaio\nfsync=1\n\
         [c]\nrw=write\nbs=4k,8k\nsync=dsync\nnumjobs=2\nnrfiles=2\n\
         [d]\nrw=write\nverify=md5\nend_fsync=1\n\
         [e]\nrw=write\nbsrange=4k-16k\nfsync_on_close=1\n\
         [f]\nrw=write\n\
         [g]\nrw=randread\nfsync=1\n\
         [h]\nrw=write\nfsync=1\nfilename=shared\n[i]\nrw=write\nfsync=1\nfilename=shared\n\
         [j]\nrw=write\nfsync=1\nfilename_format=x.$jobnum\n\
         [k]\nrw=write:8k\nfsync=1\n",
    );
    let tag = |i: u8| {
        let mut t = *b"jbfio\0\0\0";
        t[7] = i;
        t
    };
    assert_eq!(
        plan_rule(&p, "a.0.0"),
        Rule::Pattern(Pattern {
            tag: tag(0),
            bs: 4096
        })
    );
    assert_eq!(
        plan_rule(&p, "b.0.0"),
        Rule::Ignore,
        "libaio is not followed"
    );
    for f in ["c.0.0", "c.0.1", "c.1.0", "c.1.1"] {
        assert_eq!(
            plan_rule(&p, f),
            Rule::Pattern(Pattern {
                tag: tag(2),
                bs: 8192
            }),
            "{f}: the write size of bs=R,W"
        );
    }
    assert_eq!(
        plan_rule(&p, "d.0.0"),
        Rule::Exists,
        "its own verify keeps its bytes"
    );
    assert_eq!(plan_rule(&p, "e.0.0"), Rule::Exists, "sizes vary: no grid");
    assert_eq!(plan_rule(&p, "f.0.0"), Rule::Ignore, "never syncs");
    assert_eq!(plan_rule(&p, "g.0.0"), Rule::Ignore, "never writes");
    assert_eq!(
        plan_rule(&p, "shared"),
        Rule::Ignore,
        "two sections write it"
    );
    assert_eq!(
        plan_rule(&p, "x.0"),
        Rule::Ignore,
        "names unknown in advance"
    );
    assert_eq!(plan_rule(&p, "k.0.0"), Rule::Exists, "offsets skip");
    assert!(p.promises());
    // Files fio removes itself cannot carry a promise.
    let u = plan("[global]\nsize=64k\n[a]\nrw=write\nfsync=1\n[b]\nrw=read\nunlink=1\n");
    assert!(!u.promises());
    assert!(!plan("[a]\nsize=1M\nrw=write\nfsync=0\nsync=none\n").promises());
    assert!(plan("[a]\nsize=1M\nrw=write\nsync\n").promises());
}

fn w_params_rule(text: &str, f: &str) -> Rule {
    let w = Fio::new(text.into(), None).unwrap();
    let t = w.params()["job_text"].as_str().unwrap().to_string();
    assert_eq!(
        t, text,
        "params record the text as written, not as injected"
    );
    Plan::of_text(&t).unwrap().rule(f)
}

fn plan_rule(p: &Plan, f: &str) -> Rule {
    p.rule(f)
}

#[test]
fn fio_injection_goes_into_the_jobs_it_predicts_and_nowhere_else() {
    let text =
        "[global]\nsize=64k\n[a]\nrw=write\nfsync=4\n[b]\nrw=write\nverify=crc32c\nfsync=1\n";
    let file = jobfile::check(text).unwrap();
    let p = Plan::new(&file);
    let out = p.inject(text, &file);
    let again = jobfile::check(&out).unwrap();
    let a = &again.jobs[0];
    assert_eq!(a.get("verify").unwrap().value.as_deref(), Some("pattern"));
    assert_eq!(
        a.get("verify_pattern").unwrap().value.as_deref(),
        Some("0x6a6266696f000000%o")
    );
    assert_eq!(a.get("do_verify").unwrap().value.as_deref(), Some("0"));
    assert_eq!(
        again.jobs[1].get("verify").unwrap().value.as_deref(),
        Some("crc32c")
    );
    assert!(again.jobs[1].get("verify_pattern").is_none());
    // The crash lab plans from the recorded text, which is the text before
    // injection (`params`): its pattern is the one injected.
    assert_eq!(w_params_rule(text, "a.0.0"), p.rule("a.0.0"));
    assert_eq!(p.rule("b.0.0"), Rule::Exists);
}

#[test]
fn fio_strace_lines_parse_with_escaped_paths_and_buffers() {
    let c = parse_call(
        r#"pwrite64(7</tmp/a b\76c,d\"e/w.0.0>, "jb\0\260\0000\n"..., 4096, 45056) = 4096"#,
    )
    .unwrap();
    assert_eq!(c.name, "pwrite64");
    assert_eq!(c.args.len(), 4);
    assert_eq!(
        super::relay::fd_arg(c.args[0]).unwrap(),
        (7, "/tmp/a b>c,d\"e/w.0.0".to_string())
    );
    assert_eq!(quoted(c.args[1]).unwrap(), b"jb\0\xb0\x000\n");
    assert_eq!((c.args[3], c.ret), ("45056", Some(4096)));
    let c = parse_call(r#"openat(AT_FDCWD</r>, "/r/x", O_RDWR|O_CREAT|O_DSYNC, 0600) = 7</r/x>"#)
        .unwrap();
    assert_eq!(
        (c.args[2], c.ret, c.ret_rest),
        ("O_RDWR|O_CREAT|O_DSYNC", Some(7), "</r/x>")
    );
    let c = parse_call("fsync(3</r/x>) = -1 EIO (Input/output error)").unwrap();
    assert_eq!(c.ret, Some(-1));
    let c = parse_call(
        r#"pwritev2(7</r/p>, [{iov_base="ab"..., iov_len=4096}, {iov_base="cd"..., iov_len=4096}], 2, 0, RWF_DSYNC) = 8192"#,
    )
    .unwrap();
    assert_eq!(c.args.len(), 5);
    assert_eq!(c.args[4], "RWF_DSYNC");
    assert!(parse_call("+++ exited with 0 +++").is_none());
}

#[test]
fn fio_relay_promises_writes_that_completed_before_the_fsync_entered() {
    let f = "/r/w.0.0";
    let mut r = Relay::new("/r", |_| Rule::Pattern(P));
    let out = feed(
        &mut r,
        &[
            &pw(10, f, 0, 4096),
            &pw(10, f, 4096, 4096),
            // The fsync enters; a write by another process completes meanwhile.
            &format!("11   fdatasync(3<{f}> <unfinished ...>"),
            &pw(10, f, 8192, 4096),
            "11   <... fdatasync resumed>) = 0",
        ],
    );
    assert_eq!(
        out,
        [d(f, 0, 8192)],
        "coalesced, and the late write left out"
    );
    // A write split by another line completes only at its `resumed` part.
    let data = strace_str(&P.content(12288, 16));
    let out = feed(
        &mut r,
        &[
            &format!("10   pwrite64(3<{f}>, {data}, 4096, 12288 <unfinished ...>"),
            &format!("11   fsync(3<{f}>) = 0"),
            "10   <... pwrite64 resumed>) = 4096",
        ],
    );
    assert_eq!(
        out,
        [d(f, 8192, 4096)],
        "the write still in flight is not covered"
    );
    // A failed fsync promises nothing; the next one does.
    let out = feed(
        &mut r,
        &[&format!("11   fsync(3<{f}>) = -1 EIO (Input/output error)")],
    );
    assert!(out.is_empty());
    let out = feed(&mut r, &[&format!("11   fsync(3<{f}>) = 0")]);
    assert_eq!(out, [d(f, 12288, 4096)]);
    // Files outside fio's directory, and fsyncs of other files, promise nothing.
    let out = feed(
        &mut r,
        &[
            &pw(10, "/elsewhere/x", 0, 4096),
            "10   fsync(3</elsewhere/x>) = 0",
            &pw(10, f, 0, 4096),
            "10   fsync(4</r/other>) = 0",
        ],
    );
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn fio_relay_follows_o_dsync_and_the_file_offset_of_write() {
    let f = "/r/s.0.0";
    let mut r = Relay::new("/r", |_| Rule::Exists);
    let out = feed(
        &mut r,
        &[
            &format!(r#"20   openat(AT_FDCWD</r>, "{f}", O_RDWR|O_CREAT|O_DSYNC, 0600) = 5<{f}>"#),
            &format!(r#"20   write(5<{f}>, "x"..., 4096) = 4096"#),
            &format!(r#"20   read(5<{f}>, "y"..., 4096) = 4096"#),
            &format!(r#"20   write(5<{f}>, "x"..., 4096) = 100"#),
            &format!("20   lseek(5<{f}>, 40960, SEEK_SET) = 40960"),
            &format!(r#"20   writev(5<{f}>, [{{iov_base="x"..., iov_len=4096}}], 1) = 4096"#),
            &format!("20   close(5<{f}>) = 0"),
            // Reopened without O_DSYNC: back to waiting for an fsync.
            &format!(r#"20   openat(AT_FDCWD</r>, "{f}", O_RDWR, 0600) = 5<{f}>"#),
            &format!(r#"20   write(5<{f}>, "x"..., 4096) = 4096"#),
        ],
    );
    assert_eq!(out, [d(f, 0, 4096), d(f, 8192, 100), d(f, 40960, 4096)]);
    let out = feed(&mut r, &[&format!("20   fdatasync(5<{f}>) = 0")]);
    assert_eq!(out, [d(f, 0, 4096)]);
    // A descriptor whose opening strace did not show: its offset is unknown.
    let out = feed(
        &mut r,
        &[
            &format!(r#"21   write(9<{f}>, "x"..., 4096) = 4096"#),
            &format!("21   fsync(9<{f}>) = 0"),
        ],
    );
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn fio_relay_skips_bytes_it_did_not_predict() {
    let f = "/r/w.0.0";
    let mut r = Relay::new("/r", |_| Rule::Pattern(P));
    // fio's layout writes other bytes before the job starts: not promised.
    let layout = format!(r#"30   pwrite64(3<{f}>, "random bytes 123"..., 4096, 0) = 4096"#);
    let out = feed(&mut r, &[&layout, &format!("30   fsync(3<{f}>) = 0")]);
    assert!(out.is_empty());
    assert!(r.tainted.is_empty());
    let out = feed(
        &mut r,
        &[&pw(31, f, 4096, 4096), &format!("31   fsync(3<{f}>) = 0")],
    );
    assert_eq!(out, [d(f, 4096, 4096)]);
    // After pattern writes, one that does not match means the model is wrong here.
    let out = feed(
        &mut r,
        &[
            &pw(31, f, 8192, 4096),
            &layout,
            &format!("31   fsync(3<{f}>) = 0"),
        ],
    );
    assert!(out.is_empty(), "{out:?}");
    assert!(r.tainted.contains(f));
}

#[test]
fn fio_ranges_coalesce_when_they_touch_or_overlap() {
    assert_eq!(
        coalesce(vec![
            (8192, 4096),
            (0, 4096),
            (4096, 4096),
            (20000, 10),
            (20005, 10),
            (40000, 1)
        ]),
        [(0, 12288), (20000, 15), (40000, 1)]
    );
    assert!(coalesce(vec![]).is_empty());
}

#[test]
fn fio_paths_are_taken_inside_the_work_directory() {
    assert_eq!(within_work_dir("jbench-fio.42/w.0.0"), "w.0.0");
    assert_eq!(within_work_dir("/sub/jbench-fio.42/data/x"), "data/x");
    assert_eq!(within_work_dir("plain"), "plain");
}

use crate::workload::test_support::recording_ctl;

#[test]
fn fio_fdatasync_and_o_sync_writes_are_promised_after_they_return_with_predicted_bytes() {
    let test =
        "fio_fdatasync_and_o_sync_writes_are_promised_after_they_return_with_predicted_bytes";
    if !(crate::test_require::need_program(test, "fio", "fio")
        && crate::test_require::need_program(test, "strace", "strace"))
    {
        return;
    }
    std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    let base = tempfile::Builder::new()
        .prefix("fio-promises-")
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap();
    let (dir, out) = (base.path().join("dir"), base.path().join("out"));
    std::fs::create_dir_all(&dir).unwrap();
    // 16 sequential writes, an fdatasync after every 5th: the 16th is never synced.
    // And 8 KiB random writes on an O_SYNC file: each is durable when it returns.
    let text = "[global]\nioengine=psync\nsize=64k\n\
                [w]\nrw=write\nbs=4k\nfdatasync=5\n\
                [s]\nioengine=pvsync\nrw=randwrite\nbs=8k\nsync=1\n\
                [n]\nrw=write\nbs=4k\n\
                [one]\nrw=randwrite\nbs=4k\nsize=32k\nfdatasync=1\n";
    let w = Fio::new(text.into(), None).unwrap();
    let (ctl, seen) = recording_ctl();
    let ctl = ctl.with_output_dir(Some(out.clone()));
    let p = w.run(&dir, &ctl).unwrap();
    assert_eq!(p.len(), 4);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "fio's files removed"
    );
    assert!(!out.join("fio-promises.txt").exists());
    let params = w.params();
    let seen = seen.lock().unwrap();
    let of = |name: &str| -> Vec<(u64, u64)> {
        seen.iter()
            .filter(|(p, ..)| p.ends_with(&format!("/{name}")))
            .map(|(_, o, l, _)| (*o, *l))
            .collect()
    };
    assert_eq!(
        of("w.0.0"),
        [(0, 20480), (20480, 20480), (40960, 20480)],
        "one marker per fdatasync, each after the 5 writes before it; the 16th write unpromised"
    );
    let mut s = of("s.0.0");
    assert_eq!(s.len(), 8, "one per O_SYNC write: {s:?}");
    s.sort();
    assert_eq!(s, (0..8).map(|i| (i * 8192, 8192)).collect::<Vec<_>>());
    assert!(
        of("n.0.0").is_empty(),
        "a job that never syncs promises nothing"
    );
    // fio issues the sync that follows a write before its next write: the job's
    // last write is followed by none.
    let mut one = of("one.0.0");
    assert_eq!(
        one.len(),
        7,
        "fdatasync=1: one marker per write but the last: {one:?}"
    );
    one.sort();
    one.dedup();
    assert_eq!(one.len(), 7);
    assert!(
        one.iter()
            .all(|(o, l)| o % 4096 == 0 && *o < 32768 && *l == 4096),
        "{one:?}"
    );
    for (path, off, len, held) in seen.iter() {
        let rel = Path::new(path)
            .strip_prefix(&dir)
            .unwrap()
            .display()
            .to_string();
        let want = (crate::workload::fio::kind::KIND.promises)(&params)
            .range_content(&rel, *off, *len)
            .unwrap_or_else(|| panic!("{rel}: no content"));
        assert!(
            &want == held,
            "{rel} [{off}, +{len}): the file's bytes differ from range_content"
        );
    }
    assert!((crate::workload::fio::kind::KIND.promises)(&params).makes_promises());
    // The job that ran is the recorded one plus jbench's content options.
    let ran = std::fs::read_to_string(out.join("fio-job.fio")).unwrap();
    assert!(ran.contains("verify_pattern=0x6a6266696f000000%o"), "{ran}");
    // Without a write log nothing is injected and nothing traced.
    let ctl = RunControl::new().with_output_dir(Some(out.clone()));
    w.run(&dir, &ctl).unwrap();
    assert_eq!(
        std::fs::read_to_string(out.join("fio-job.fio")).unwrap(),
        text
    );
}

#[test]
fn fio_under_strace_stops_on_request() {
    let test = "fio_under_strace_stops_on_request";
    if !(crate::test_require::need_program(test, "fio", "fio")
        && crate::test_require::need_program(test, "strace", "strace"))
    {
        return;
    }
    let base = std::env::temp_dir().join(format!("jbench-fio-stop.{}", std::process::id()));
    let dir = base.join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let slow = Fio::new(
        "[global]\nsize=1M\n[s]\nrw=randwrite\nfsync=1\ntime_based\nruntime=60\n".into(),
        None,
    )
    .unwrap();
    let (ctl, seen) = recording_ctl();
    let stopper = ctl.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        stopper.request_stop();
    });
    let started = Instant::now();
    let e = slow.run(&dir, &ctl).unwrap_err();
    t.join().unwrap();
    assert!(e.downcast_ref::<Interrupted>().is_some(), "{e:#}");
    assert!(started.elapsed() < Duration::from_secs(25));
    assert!(
        !seen.lock().unwrap().is_empty(),
        "promises were relayed while fio ran"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // Neither strace nor any fio process is left.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&*base.to_string_lossy()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&base).unwrap();
}
