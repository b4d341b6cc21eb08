//! `kind = "command"`: from the command line, and in a real `jbench run` whose trial
//! keeps the command's stdout in outputs/trial-N.

use crate::common;

use common::*;

#[test]
fn cli_runs_a_command_and_keeps_its_output() {
    let tmp = scratch("command-cli-");
    let out_dir = tmp.path().join("out");
    let out = run_ok(
        jbench()
            .args(["workload", "command", "--json", "--dir"])
            .arg(tmp.path())
            .arg("--output")
            .arg(&out_dir)
            .args(["--", "sh", "-c", "echo hello; touch made"]),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["phases"][0]["name"], "command");
    assert!(tmp.path().join("made").exists(), "ran in --dir");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("stdout.txt")).unwrap(),
        "hello\n"
    );
    assert!(out_dir.join("exit.json").is_file());
}

#[test]
fn cli_fails_on_a_nonzero_exit() {
    let tmp = scratch("command-cli-");
    let out = jbench()
        .args(["workload", "command", "--dir"])
        .arg(tmp.path())
        .args(["--", "sh", "-c", "echo broken >&2; exit 4"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exit status 4") && err.contains("broken"),
        "{err}"
    );
}

#[test]
fn real_run_keeps_the_command_output_per_trial() {
    require!(root);
    let _serial = zram_lock();
    let tmp = scratch("command-run-");
    let body = tiny_spec(tmp.path(), r#"["internal"]"#, 1, "");
    let at = body.find("[[workload]]").unwrap();
    let body = format!(
        "{}[[workload]]\nkind = \"command\"\nname = \"echo\"\nrun = \"echo took 0.25 s; df -P . | tail -1\"\nshell = true\n\n[[workload.phase]]\nname = \"work\"\npattern = \"took (?P<s>[0-9.]+) s\"\nseconds = \"s\"\n",
        &body[..at]
    );
    let spec = write_spec(tmp.path(), "tiny", &body);
    let results = tmp.path().join("results");
    run_ok(
        jbench()
            .arg("run")
            .arg(&spec)
            .arg("--results")
            .arg(&results),
    );
    assert_no_leaks(tmp.path());
    let outputs = results.join("outputs");
    let trials: Vec<_> = std::fs::read_dir(&outputs).unwrap().flatten().collect();
    assert!(
        !trials.is_empty(),
        "no trial folders in {}",
        outputs.display()
    );
    for t in trials {
        let stdout = std::fs::read_to_string(t.path().join("stdout.txt")).unwrap();
        assert!(stdout.starts_with("took 0.25 s"), "{stdout}");
        assert!(t.path().join("exit.json").is_file());
    }
    let trials = std::fs::read_to_string(results.join("trials.jsonl")).unwrap();
    assert!(trials.contains("\"work\""), "{trials}");
}
