//! The `[crash]` table: defaults, refusals naming key and line, and the resolved spec.

use super::*;
use crate::experiment::crash_options::Strategy;
use crate::experiment::crash_options::{DEFAULT_MOUNT_TIMEOUT, MAX_STATES};

fn with_crash(table: &str) -> String {
    format!("{BASE}\n[crash]\n{table}\n")
}

#[test]
fn without_a_crash_table_the_defaults_apply_with_the_experiments_seed() {
    let s = parse(BASE, "x.toml").unwrap();
    assert_eq!(
        s.crash,
        CrashOptions {
            seed: Some(1),
            ..CrashOptions::default()
        }
    );
    assert_eq!(s.crash.states, 200);
    assert_eq!(
        s.crash.strategies,
        [
            Strategy::TornData,
            Strategy::FlushSubset,
            Strategy::LastWrites,
            Strategy::Prefix,
            Strategy::Subset
        ]
    );
    assert_eq!(s.crash.recovery_timing, 10);
    assert_eq!(s.crash.lose_journal, None);
    assert_eq!(s.crash.mount_timeout, DEFAULT_MOUNT_TIMEOUT);
    let s = parse(
        &base_with("repetitions = 2", "repetitions = 2\nseed = 77"),
        "x",
    )
    .unwrap();
    assert_eq!(s.crash.seed, Some(77));
    // An empty table is the same as none.
    let s = parse(&with_crash(""), "x").unwrap();
    assert_eq!(s.crash.seed, Some(1));
    assert_eq!(s.crash.states, 200);
    assert!(
        s.crash.requested,
        "an empty [crash] still asks for the crash lab"
    );
    assert!(!parse(BASE, "x").unwrap().crash.requested);
}

#[test]
fn every_key_is_read() {
    let text = with_crash(
        "states = 50\nstrategies = [\"torn\", \"prefix\"]\nseed = 9\nrecovery_timing = 50\nlose_journal = false\nmount_timeout = \"2m\"",
    );
    let s = parse(&text, "x").unwrap();
    assert_eq!(
        s.crash,
        CrashOptions {
            requested: true,
            states: 50,
            strategies: vec![Strategy::Torn, Strategy::Prefix],
            seed: Some(9),
            recovery_timing: 50,
            lose_journal: Some(false),
            mount_timeout: Duration::from_secs(120),
        }
    );
    assert_eq!(s.seed, 1, "the experiment's own seed is untouched");
    let s = parse(&with_crash("lose_journal = true"), "x").unwrap();
    assert_eq!(s.crash.lose_journal, Some(true));
    let s = parse(&with_crash("lose_journal = \"auto\""), "x").unwrap();
    assert_eq!(s.crash.lose_journal, None);
    let s = parse(
        &with_crash(&format!("states = {MAX_STATES}\nrecovery_timing = 0")),
        "x",
    )
    .unwrap();
    assert_eq!((s.crash.states, s.crash.recovery_timing), (MAX_STATES, 0));
    for (value, expected) in [("\"1s\"", 1), ("\"1h\"", 3600), ("\"90s\"", 90)] {
        let s = parse(&with_crash(&format!("mount_timeout = {value}")), "x").unwrap();
        assert_eq!(s.crash.mount_timeout, Duration::from_secs(expected));
    }
}

#[test]
fn the_recovery_timing_default_shrinks_to_fewer_states_but_an_explicit_one_does_not() {
    let s = parse(&with_crash("states = 4"), "x").unwrap();
    assert_eq!((s.crash.states, s.crash.recovery_timing), (4, 4));
    let s = parse(&with_crash("states = 10"), "x").unwrap();
    assert_eq!(s.crash.recovery_timing, 10);
    let text = with_crash("states = 4\nrecovery_timing = 10");
    let e = err_of(&text);
    assert_eq!(e.key, "crash.recovery_timing", "{e}");
    assert_eq!(e.line, Some(line_of(&text, "recovery_timing =")), "{e}");
    assert!(e.message.contains("0 to crash.states, 4"), "{e}");
}

#[test]
fn each_key_is_refused_with_its_name_and_line() {
    for (table, key, msg) in [
        (
            "states = 0",
            "crash.states",
            "out of range: allowed 1 to 1000000",
        ),
        ("states = 1000001", "crash.states", "out of range"),
        ("states = -3", "crash.states", "out of range"),
        (
            "states = \"many\"",
            "crash.states",
            "expected a whole number",
        ),
        ("states = 2.5", "crash.states", "found a float"),
        (
            "recovery_timing = -1",
            "crash.recovery_timing",
            "out of range",
        ),
        (
            "recovery_timing = 201",
            "crash.recovery_timing",
            "0 to crash.states, 200",
        ),
        (
            "recovery_timing = true",
            "crash.recovery_timing",
            "found a boolean",
        ),
        ("strategies = []", "crash.strategies", "empty"),
        (
            "strategies = \"prefix\"",
            "crash.strategies",
            "expected a list",
        ),
        (
            "strategies = [\"prefix\", \"zigzag\"]",
            "crash.strategies",
            "unknown crash strategy `zigzag`",
        ),
        (
            "strategies = [\"subset\", \"torn\", \"subset\"]",
            "crash.strategies",
            "`subset` is listed twice",
        ),
        (
            "strategies = [\"prefix\", 3]",
            "crash.strategies",
            "found an integer",
        ),
        ("seed = -1", "crash.seed", "out of range"),
        ("seed = \"one\"", "crash.seed", "found a string"),
        (
            "lose_journal = \"yes\"",
            "crash.lose_journal",
            "expected true, false or \"auto\"",
        ),
        ("lose_journal = 1", "crash.lose_journal", "found an integer"),
        (
            "mount_timeout = \"soon\"",
            "crash.mount_timeout",
            "not a duration",
        ),
        (
            "mount_timeout = \"500ms\"",
            "crash.mount_timeout",
            "allowed 1s to 3600s",
        ),
        (
            "mount_timeout = \"2h\"",
            "crash.mount_timeout",
            "allowed 1s to 3600s",
        ),
        (
            "mount_timeout = 120",
            "crash.mount_timeout",
            "expected a duration such as \"120s\" (1s to 3600s); found an integer",
        ),
    ] {
        let text = with_crash(table);
        let e = err_of(&text);
        assert_eq!(e.key, key, "{table}: {e}");
        assert!(e.message.contains(msg), "{table}: {e}");
        assert_eq!(e.line, Some(line_of(&text, table)), "{table}: {e}");
    }
}

#[test]
fn an_unknown_key_is_refused_with_the_known_ones() {
    let text = with_crash("states = 20\nstate_count = 5");
    let e = err_of(&text);
    assert_eq!(e.key, "crash.state_count", "{e}");
    assert_eq!(e.line, Some(line_of(&text, "state_count")), "{e}");
    for known in [
        "states",
        "strategies",
        "seed",
        "recovery_timing",
        "lose_journal",
        "mount_timeout",
    ] {
        assert!(e.message.contains(known), "{known}: {e}");
    }
    // A crash key at the top level is not silently taken for the table's.
    let e = err_of(&BASE.replace("repetitions = 2", "repetitions = 2\nstates = 5"));
    assert!(e.message.contains("states"), "{e}");
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn the_resolved_spec_writes_every_crash_default_and_parses_back_equal() {
    for table in [
        Some(""),
        Some("states = 5"),
        Some("states = 3000\nstrategies = [\"torn\"]\nseed = 4\nrecovery_timing = 0\nlose_journal = true\nmount_timeout = \"1.5s\""),
        Some("lose_journal = false\nmount_timeout = \"3599.25s\""),
    ] {
        let text = match table {
            None => unreachable!(),
            Some(t) => with_crash(t),
        };
        let s = parse(&text, "x.toml").unwrap();
        assert!(s.resolved.contains("\n[crash]\n"), "{}", s.resolved);
        for key in [
            "states =",
            "strategies =",
            "seed =",
            "recovery_timing =",
            "lose_journal =",
            "mount_timeout =",
        ] {
            let crash = s.resolved.split("\n[crash]\n").nth(1).unwrap();
            assert!(crash.contains(key), "{key} in\n{}", s.resolved);
        }
        let again = parse(&s.resolved, "resolved.toml").unwrap();
        assert_eq!(again.crash, s.crash, "{}", s.resolved);
        assert_eq!(again.resolved, s.resolved);
        assert_eq!(again.configs, s.configs);
    }
    let s = parse(&with_crash(""), "x").unwrap();
    assert!(
        s.resolved.contains("lose_journal = \"auto\""),
        "{}",
        s.resolved
    );
    // Without a [crash] table the stored spec has none: its presence runs the lab.
    let s = parse(BASE, "x").unwrap();
    assert!(!s.resolved.contains("[crash]"), "{}", s.resolved);
    assert!(!parse(&s.resolved, "again").unwrap().crash.requested);
    let s = parse(
        &with_crash("").replace("repetitions = 2", "repetitions = 2\nseed = 12"),
        "x",
    )
    .unwrap();
    let crash = s.resolved.split("\n[crash]\n").nth(1).unwrap();
    assert!(
        crash.contains("seed = 12"),
        "the effective seed: {}",
        s.resolved
    );
}

#[test]
fn the_crash_table_does_not_change_what_run_measures() {
    let plain = parse(BASE, "x").unwrap();
    let crash = parse(&with_crash("states = 7\nstrategies = [\"torn\"]"), "x").unwrap();
    assert_eq!(plain.configs, crash.configs);
    assert_eq!(plain.repetitions, crash.repetitions);
    assert_eq!(
        plain.workloads.iter().map(|w| &w.name).collect::<Vec<_>>(),
        crash.workloads.iter().map(|w| &w.name).collect::<Vec<_>>()
    );
}

#[test]
fn the_docs_list_every_crash_key_and_their_example_parses() {
    let doc = include_str!("../../../../docs/experiment.md");
    let section = doc
        .split("## `[crash]`")
        .nth(1)
        .expect("docs/experiment.md has a [crash] section");
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let documented: Vec<&str> = section
        .lines()
        .filter_map(|l| Some(l.strip_prefix("| `")?.split_once("` |")?.0))
        .collect();
    let resolved = parse(&with_crash(""), "x").unwrap().resolved;
    let table: toml::Table = toml::from_str(&resolved).unwrap();
    let mut written: Vec<&str> = table["crash"]
        .as_table()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    written.sort();
    let mut sorted = documented.clone();
    sorted.sort();
    assert_eq!(
        sorted, written,
        "the docs' table and the stored [crash] table"
    );
    let example = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let s = parse(&format!("{BASE}\n{example}"), "experiment.md").unwrap();
    assert_eq!(s.crash.states, 500);
    assert_eq!(s.crash.strategies, Strategy::ALL);
    assert_eq!(s.crash.recovery_timing, 20);
    assert_eq!(s.crash.mount_timeout, Duration::from_secs(60));
}
