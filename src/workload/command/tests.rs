use super::*;

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

fn refused(text: &str) -> ParamError {
    spec_from_table(&table(text)).unwrap_err()
}

fn sh(script: &str) -> CommandSpec {
    let mut s = CommandSpec::new(vec!["sh".into(), "-c".into(), script.into()]);
    s.timeout = Duration::from_secs(20);
    s
}

fn out_ctl() -> (tempfile::TempDir, tempfile::TempDir, RunControl) {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let ctl = RunControl::new().with_output_dir(Some(out.path().join("trial-1")));
    (dir, out, ctl)
}

#[test]
fn spec_refusals_name_the_key() {
    assert_eq!(refused("run = []").key, "run");
    assert_eq!(refused("shell = false").key, "run");
    assert_eq!(refused("run = [\"true\"]\nbogus = 1").key, "bogus");
    let e = refused(
        "run = [\"true\"]\n[[phase]]\nname = \"load\"\npattern = \"(?P<s>[0-9\"\nseconds = \"s\"",
    );
    assert!(
        e.message.contains("phase `load`") && e.message.contains("bad pattern"),
        "{e:?}"
    );
    let e = refused(
        "run = [\"true\"]\n[[phase]]\nname = \"x\"\npattern = \"(?P<s>[0-9]+)\"\nseconds = \"t\"",
    );
    assert!(e.message.contains("names no group"), "{e:?}");
    assert_eq!(
        refused("run = [\"true\"]\nuser = \"no-such-user-jbench\"").key,
        "user"
    );
    assert_eq!(
        refused("run = [\"true\"]\njson = \"out.json\"").key,
        "phases"
    );
    assert_eq!(
        refused("run = [\"true\"]\njson = \"../out.json\"\nphases = [\"a\"]").key,
        "json"
    );
    assert_eq!(refused("run = \"echo hi\"").key, "run");
    assert_eq!(
        refused("run = [\"true\"]\ntimeout = \"soon\"").key,
        "timeout"
    );
    assert_eq!(
        refused("run = [\"true\"]\njson = \"-\"\nphases = [\"a\"]\ndurable = true").key,
        "durable"
    );
}

#[test]
fn spec_reads_back_its_params() {
    let s = spec_from_table(&table(
        "run = \"echo took 1 s\"\nshell = true\ntimeout = \"10m\"\ndata_bytes = \"1M\"\ninodes = 5\nenv = { A = \"b\" }\n[[phase]]\nname = \"p\"\npattern = \"took (?P<s>[0-9.]+) s\"\nseconds = \"s\"",
    ))
    .unwrap();
    assert_eq!(s.phase_names(), vec!["p"]);
    assert_eq!((s.peak_data_bytes(), s.peak_inodes()), (1 << 20, 5));
    assert_eq!(s.default_name(), "command-sh");
    let back: toml::Table = toml::Value::try_from(s.params())
        .unwrap()
        .as_table()
        .unwrap()
        .clone();
    let again = spec_from_table(&back).unwrap();
    assert_eq!(again.params(), s.params());
    assert_eq!(again.timeout, Duration::from_secs(600));
}

#[test]
fn whole_command_is_one_phase_and_output_is_saved() {
    let (dir, out, ctl) = out_ctl();
    let p = sh("echo hello; echo oops >&2; pwd")
        .run(dir.path(), &ctl)
        .unwrap();
    assert_eq!((p.len(), p[0].name.as_str(), p[0].ops), (1, "command", 1));
    assert!(p[0].seconds > 0.0);
    let t = out.path().join("trial-1");
    let stdout = std::fs::read_to_string(t.join("stdout.txt")).unwrap();
    assert!(stdout.starts_with("hello\n") && stdout.contains(&dir.path().display().to_string()));
    assert_eq!(
        std::fs::read_to_string(t.join("stderr.txt")).unwrap(),
        "oops\n"
    );
    let exit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("exit.json")).unwrap()).unwrap();
    assert_eq!(exit["status"], 0);
}

#[test]
fn pattern_phase_takes_the_last_match() {
    let mut s = sh("echo 'took 9 s for 1 ops'; echo 'took 1.5 s for 42 ops'");
    s.phases = PhaseSource::Patterns(vec![PatternPhase {
        name: "work".into(),
        pattern: Regex::new(r"took (?P<s>[0-9.]+) s for (?P<n>[0-9]+) ops").unwrap(),
        seconds: "s".into(),
        ops: Some("n".into()),
        bytes: None,
        unit: Some("items".into()),
    }]);
    let (dir, _out, ctl) = out_ctl();
    let p = s.run(dir.path(), &ctl).unwrap();
    assert_eq!(
        (p[0].seconds, p[0].ops, p[0].op_unit.as_str()),
        (1.5, 42, "items")
    );
    let mut s2 = s.clone();
    s2.run = vec!["true".into()];
    let e = s2.run(dir.path(), &ctl).unwrap_err();
    assert!(format!("{e:#}").contains("phase `work`"), "{e:#}");
}

#[test]
fn json_phase_document() {
    let mut s = sh(
        r#"printf '{"phases":[{"name":"load","seconds":2,"ops":10,"bytes":4096},{"name":"run","seconds":0.5,"unit":"tx"}]}' > res.json"#,
    );
    s.phases = PhaseSource::Json {
        path: "res.json".into(),
        names: vec!["load".into(), "run".into()],
    };
    let (dir, _out, ctl) = out_ctl();
    let p = s.run(dir.path(), &ctl).unwrap();
    assert_eq!((p[0].seconds, p[0].ops, p[0].bytes), (2.0, 10, 4096));
    assert_eq!(
        (p[1].name.as_str(), p[1].seconds, p[1].op_unit.as_str()),
        ("run", 0.5, "tx")
    );
}

#[test]
fn nonzero_exit_fails_with_stderr_tail() {
    let (dir, _out, ctl) = out_ctl();
    let e = sh("echo first >&2; echo 'disk on fire' >&2; exit 3")
        .run(dir.path(), &ctl)
        .unwrap_err();
    let m = format!("{e:#}");
    assert!(
        m.contains("exit status 3") && m.contains("disk on fire"),
        "{m}"
    );
}

#[test]
fn timeout_kills_quickly() {
    let (dir, _out, ctl) = out_ctl();
    let mut s = CommandSpec::new(vec!["sleep".into(), "30".into()]);
    s.timeout = Duration::from_secs(1);
    let t = std::time::Instant::now();
    let e = s.run(dir.path(), &ctl).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(format!("{e:#}").contains("timed out after"), "{e:#}");
}

#[test]
fn leftover_processes_are_reported_and_killed() {
    let (dir, out, ctl) = out_ctl();
    let p = sh("sleep 300 & echo $! > bg.pid; echo started")
        .run(dir.path(), &ctl)
        .unwrap();
    assert_eq!(p[0].counters.get("leftover_processes"), Some(&1));
    let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "sleep {pid} still alive: {stat}"
    );
    let _ = out;
}

#[test]
fn setup_and_teardown_run_even_when_the_command_fails() {
    let (dir, _out, ctl) = out_ctl();
    let mut s = sh("test -f made; exit 1");
    s.setup = Some(vec!["touch".into(), "made".into()]);
    s.teardown = Some(vec!["touch".into(), "torn".into()]);
    assert!(s.run(dir.path(), &ctl).is_err());
    assert!(dir.path().join("torn").exists());
}

#[test]
fn without_an_output_dir_nothing_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = sh("echo x").run(dir.path(), &RunControl::new()).unwrap();
    assert_eq!(p.len(), 1);
}

#[test]
fn runs_as_nobody() {
    let root = crate::test_require::is_root();
    if !crate::test_require::require("runs_as_nobody", root, "needs root") {
        return;
    }
    let (dir, out, ctl) = out_ctl();
    let mut s = CommandSpec::new(vec!["id".into(), "-u".into()]);
    s.user = Some(resolve_user("nobody").unwrap());
    s.run(dir.path(), &ctl).unwrap();
    let got = std::fs::read_to_string(out.path().join("trial-1/stdout.txt")).unwrap();
    assert_eq!(got.trim(), s.user.unwrap().uid.to_string());
}

#[test]
fn a_check_is_read_refused_and_recorded_so_the_crash_lab_gets_it_back() {
    let s = spec_from_table(&table(
        "run = \"true\"\nshell = true\ncheck = \"test -s target\"\ncheck_timeout = \"5s\"",
    ))
    .unwrap();
    assert_eq!(
        s.check.as_deref(),
        Some(&["/bin/sh".to_string(), "-c".into(), "test -s target".into()][..])
    );
    let back = check_of(&s.params()).unwrap();
    assert_eq!(back.argv, s.check.clone().unwrap());
    assert_eq!(back.timeout, Duration::from_secs(5));
    assert_eq!(refused("run = [\"true\"]\ncheck = \"x\"").key, "check");
    assert_eq!(
        refused("run = [\"true\"]\ncheck_timeout = \"5s\"").key,
        "check_timeout"
    );
    assert!(check_of(&CommandSpec::new(vec!["true".into()]).params()).is_none());
}

#[test]
fn promise_lines_become_markers_only_for_files_inside_the_run_directory() {
    let dir = Path::new("/mnt/run");
    let hex = "AB".repeat(32);
    assert_eq!(
        durable_marker("durable db/wal\n", dir).unwrap().as_deref(),
        Some("durable /mnt/run/db/wal")
    );
    assert_eq!(
        durable_marker(&format!("db/x y sha256={hex}\n"), dir).unwrap(),
        Some(format!(
            "durable /mnt/run/db/x y sha256={}",
            hex.to_lowercase()
        ))
    );
    assert_eq!(durable_marker("\n", dir).unwrap(), None);
    // A record key is no path: it is kept as the command wrote it, trimmed.
    assert_eq!(
        durable_marker("durable-key order 42 \n", dir)
            .unwrap()
            .as_deref(),
        Some("durable-key order 42")
    );
    assert!(durable_marker("durable-key   ", dir).is_err());
    assert!(durable_marker(&format!("durable-key {}", "k".repeat(257)), dir).is_err());
    assert!(durable_marker("durable-key a\tb", dir).is_err());
    assert!(durable_marker("durable /etc/passwd", dir).is_err());
    assert!(durable_marker("durable ../x", dir).is_err());
    assert!(durable_marker("durable f sha256=12", dir).is_err());
    assert_eq!(
        durable_marker("durable target nonempty\n", dir)
            .unwrap()
            .as_deref(),
        Some("durable /mnt/run/target nonempty")
    );
    assert!(durable_marker(&format!("durable f sha256={hex} nonempty"), dir).is_err());
}

#[test]
fn a_recording_command_gets_a_promise_channel_and_its_lines_are_marked_in_order() {
    let (dir, _out, ctl) = out_ctl();
    let marks = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = marks.clone();
    let ctl = ctl.with_mark_hook(Some(crate::workload::MarkHook::new(move |l: &str| {
        seen.lock().unwrap().push(l.to_string())
    })));
    let spec = sh(
        "echo a > a && echo 'durable a' >> \"$JBENCH_DURABLE\" && echo b >> \"$JBENCH_DURABLE\"",
    );
    spec.run(dir.path(), &ctl).unwrap();
    let got: Vec<String> = marks
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("durable "))
        .cloned()
        .collect();
    let d = dir.path().display();
    assert_eq!(got, [format!("durable {d}/a"), format!("durable {d}/b")]);
    // Without a write log the channel is /dev/null: the same command runs unchanged.
    let (dir, _out, plain) = out_ctl();
    spec.run(dir.path(), &plain).unwrap();
}

#[test]
fn recover_and_stop_read_back_from_the_params_and_need_what_they_serve() {
    let s = spec_from_table(&table(
        "run = \"true\"\nshell = true\ncheck = \"true\"\nrecover = \"start-app\"\nrecover_timeout = \"9s\"\nstop = \"stop-app\"",
    ))
    .unwrap();
    let back = check_of(&s.params()).unwrap();
    let sh = |x: &str| vec!["/bin/sh".to_string(), "-c".into(), x.into()];
    assert_eq!(back.recover, Some(sh("start-app")));
    assert_eq!(back.stop, Some(sh("stop-app")));
    assert_eq!(back.recover_timeout, Duration::from_secs(9));
    // A recovery with no check judges nothing; a stop with no recover stops nothing.
    assert_eq!(
        refused("run = [\"true\"]\nrecover = [\"start-app\"]").key,
        "recover"
    );
    assert_eq!(
        refused("run = [\"true\"]\ncheck = [\"true\"]\nstop = [\"stop-app\"]").key,
        "stop"
    );
    assert_eq!(
        refused("run = [\"true\"]\ncheck = [\"true\"]\nrecover_timeout = \"5s\"").key,
        "recover_timeout"
    );
}

#[test]
fn a_long_script_is_named_by_its_first_line() {
    let sh = |x: &str| vec!["/bin/sh".to_string(), "-c".into(), x.into()];
    assert_eq!(
        brief(&sh("\nset -u\nexit 3\n")),
        "set -u ... (1 more lines)"
    );
    assert_eq!(brief(&["prog".into(), "arg".into()]), "prog arg");
    assert!(brief(&sh(&"x".repeat(200))).ends_with("..."));
    assert_eq!(brief(&sh("# what it is\nstart-app\n")), "start-app");
}

#[test]
fn a_phase_document_may_close_other_output_and_carry_latency() {
    let names = vec!["commit".to_string()];
    let text = "server started\n{\"phases\": [{\"name\": \"commit\", \"seconds\": 2.0, \"ops\": 300, \"unit\": \"commits\", \"latency\": {\"count\": 300, \"p50_us\": 9000.0, \"p95_us\": 12000.0, \"p99_us\": 15000.0, \"max_us\": 20000.0}}]}\n";
    let p = super::phases::from_json(&names, text, "stdout").unwrap();
    assert_eq!(p[0].ops, 300);
    assert_eq!(p[0].op_unit, "commits");
    assert_eq!(p[0].latency.as_ref().unwrap().p95_us, 12000.0);
    assert!(super::phases::from_json(&names, "no document here\n", "stdout").is_err());
}
