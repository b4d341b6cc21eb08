//! The skip-or-fail rule of tests/common/require.rs: a test whose needs are not met
//! skips, with a visible reason, outside CI, and fails under CI.

use crate::common;

use std::ffi::OsStr;
use std::process::Command;

use common::require::{ci_value_means_ci, require, verdict, Verdict};

const PROBE_ENV: &str = "JBENCH_REQUIRE_PROBE";

#[test]
fn the_ci_variable_counts_unless_empty_zero_or_false() {
    let _alone = crate::alone();
    for v in ["true", "TRUE", "1", "yes", "gitlab"] {
        assert!(ci_value_means_ci(Some(OsStr::new(v))), "{v}");
    }
    assert!(!ci_value_means_ci(None));
    for v in ["", " ", "0", "false", "False"] {
        assert!(!ci_value_means_ci(Some(OsStr::new(v))), "{v:?}");
    }
}

#[test]
fn an_unmet_need_fails_under_ci_and_skips_with_its_reason_elsewhere() {
    let _alone = crate::alone();
    assert_eq!(verdict(true, "t", true, "r"), Verdict::Run);
    assert_eq!(verdict(false, "t", true, "r"), Verdict::Run);
    assert_eq!(
        verdict(false, "some_test", false, "needs root"),
        Verdict::Skip("SKIPPED some_test: needs root".into())
    );
    match verdict(true, "some_test", false, "needs root") {
        Verdict::Fail(m) => assert!(
            m.starts_with("some_test cannot run here: needs root") && m.contains("CI is set"),
            "{m}"
        ),
        other => panic!("under CI an unmet need fails, got {other:?}"),
    }
}

/// Not a test of its own: the body the next test runs in a child process, with and
/// without CI. Without the probe variable it does nothing.
#[test]
#[ignore = "run by require_panics_under_ci_and_returns_false_without"]
fn probe() {
    let _alone = crate::alone();
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let ran = require("probe", false, "the probe's need is never met");
    assert!(!ran, "require returned true for an unmet need");
    println!("probe returned false");
}

fn run_probe(ci: Option<&str>) -> (bool, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "require::probe",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(PROBE_ENV, "1")
    .env_remove("CI");
    if let Some(v) = ci {
        cmd.env("CI", v);
    }
    let out = cmd.output().expect("the test binary starts");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("running 1 test"), "the probe ran: {text}");
    (out.status.success(), text)
}

#[test]
fn require_panics_under_ci_and_returns_false_without() {
    let _alone = crate::alone();
    let (ok, text) = run_probe(Some("true"));
    assert!(!ok, "with CI=true an unmet need fails the test: {text}");
    assert!(
        text.contains("probe cannot run here: the probe's need is never met"),
        "{text}"
    );
    assert!(!text.contains("SKIPPED"), "{text}");

    let (ok, text) = run_probe(None);
    assert!(ok, "without CI an unmet need skips: {text}");
    assert!(
        text.contains("SKIPPED probe: the probe's need is never met"),
        "{text}"
    );
    assert!(text.contains("probe returned false"), "{text}");
}

#[test]
fn require_names_the_test_from_the_path_of_a_function_inside_it() {
    let _alone = crate::alone();
    assert_eq!(
        common::test_name("e2e::run::tiny_runs::the_test::here"),
        "the_test"
    );
    // And the macro's own path, from inside a test of this binary.
    let name = common::test_name({
        fn here() {}
        std::any::type_name_of_val(&here)
    });
    assert_eq!(
        name,
        "require_names_the_test_from_the_path_of_a_function_inside_it"
    );
}
