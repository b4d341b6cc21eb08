//! The monitor on a real trial: an fsync workload on a file system whose journal is on
//! a second disk, run through `RigExecutor`; the record must show the journal device
//! written and jbd2 committing during the fsync phase, and the side file must hold the
//! per-second series.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::*;
use jbench::events::{self, Event, Reporter};
use jbench::experiment::plan::Trial;
use jbench::run::executor::{Executor, RigExecutor};
use jbench::workload::RunControl;

fn fsync_spec(work: &Path, files: u32) -> jbench::experiment::spec::Spec {
    let text = tiny_spec(work, "\"second-disk\"", 1, "").replace(
        "[[workload]]\nkind = \"fdtree\"\nname = \"tiny\"\ndirs = 2\nfiles = 2\nblocks = 1\nlevels = 3\n",
        &format!("[[workload]]\nkind = \"fsync\"\nname = \"fs\"\nfiles = {files}\nsize = \"4K\"\n"),
    );
    assert!(text.contains("kind = \"fsync\""));
    jbench::experiment::spec::parse(&text, "test.toml").unwrap()
}

/// What the monitor said of trial 3, the trial this test runs.
#[derive(Default)]
struct MonitorComplaints(Mutex<Vec<Event>>);

impl Reporter for MonitorComplaints {
    fn report(&self, event: &Event) {
        if let Event::MonitorOff { trial: 3, .. } | Event::MonitorLost { trial: 3, .. } = event {
            self.0.lock().unwrap().push(event.clone());
        }
    }
}

#[test]
fn a_trial_records_devices_journal_and_series_for_every_phase() {
    require!(root);
    let tmp = scratch("monitor-");
    // Long enough (2-3 s here) that the 1 s sampler takes several points whatever the
    // host disk's speed; 1500 files took 0.9-1.1 s and flaked.
    let spec = fsync_spec(tmp.path(), 4000);
    assert_eq!(
        spec.monitor_interval,
        Some(std::time::Duration::from_secs(1))
    );
    let results = tmp.path().join("results");
    let outcome = {
        let mut exec = RigExecutor::new(&spec, vec![])
            .unwrap()
            .with_monitor_dir(results.join("monitor"));
        let trial = Trial {
            index: 3,
            config: 0,
            workload: 0,
            rep: 1,
            recording: false,
        };
        let said = Arc::new(MonitorComplaints::default());
        let before = events::set_reporter(Some(said.clone()));
        let r = exec.run_trial(&spec, &trial, &RunControl::new());
        events::set_reporter(before);
        let said = said.0.lock().unwrap();
        assert!(said.is_empty(), "the monitor complained: {said:?}");
        r.expect("the trial succeeds")
    };
    assert_no_leaks(tmp.path());

    let m = outcome.monitor.expect("a monitor summary");
    assert_eq!(m.interval_seconds, 1.0);
    let names: Vec<&str> = m.phases.iter().map(|p| p.phase.as_str()).collect();
    let want: Vec<&str> = outcome.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, want, "one summary per phase, in order");

    let create = &m.phases[0];
    assert_eq!(create.phase, "create_fsync");
    let roles: Vec<&str> = create.devices.iter().map(|d| d.role.as_str()).collect();
    assert_eq!(roles, ["fs", "journal"]);
    let journal = &create.devices[1];
    let layout_journal = outcome.layout["journal_device"].as_str().unwrap();
    assert!(
        layout_journal.ends_with(&journal.device),
        "{layout_journal} vs {}",
        journal.device
    );
    assert!(journal.write_kib > 0, "{create:#?}");
    assert!(journal.writes > 0 && journal.peak_write_kib_s > 0.0);
    let jbd2 = create.jbd2.as_ref().expect("jbd2 before and after");
    assert_eq!(
        jbd2.name, journal.device,
        "external journal: named after it"
    );
    assert!(jbd2.transactions > 0, "{jbd2:#?}");
    assert!(jbd2.after.transactions > jbd2.before.transactions);
    // The phase's monitored window holds its clock.
    assert!(create.seconds >= outcome.phases[0].seconds, "{create:#?}");

    let file = m.series_file.as_deref().expect("a series file");
    assert_eq!(file, "monitor/trial-3.jsonl");
    let text = std::fs::read_to_string(results.join(file)).unwrap();
    let points: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let workload_seconds: f64 = m.phases.iter().map(|p| p.seconds).sum();
    assert!(
        points.len() as f64 >= workload_seconds.floor(),
        "{} samples over {workload_seconds:.2} s",
        points.len()
    );
    assert!(
        workload_seconds >= 1.0,
        "the workload is too short to test: {workload_seconds}"
    );
    let mut last_t = 0.0;
    for p in &points {
        let t = p["t"].as_f64().unwrap();
        assert!(t > last_t, "t increases: {p}");
        last_t = t;
        assert!(p["phase"].is_string());
        for role in ["fs", "journal"] {
            let d = &p["devices"][role];
            assert!(d["write_kib_s"].is_f64(), "{p}");
            assert!(d["read_kib_s"].is_f64(), "{p}");
            assert!(d["in_flight"].is_u64(), "{p}");
        }
        for k in ["user", "system", "iowait"] {
            let v = p["cpu"][k].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&v), "{p}");
        }
        assert!(
            p["dirty_kib"].is_u64() && p["writeback_kib"].is_u64(),
            "{p}"
        );
    }
    assert!(
        points.iter().any(|p| p["phase"] == "create_fsync"
            && p["devices"]["journal"]["write_kib_s"].as_f64().unwrap() > 0.0),
        "the journal is seen written during create_fsync:\n{text}"
    );
}
