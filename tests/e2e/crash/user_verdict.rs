//! The user-space verdict against the kernel's, state by state: every state of a
//! recorded fsync trial judged both ways (the journal replayed in memory and the
//! promises read with ext4-view; then mount, promises, unmount, fsck), on the
//! placements and modes whose journals differ (internal and external, ext3's block-
//! mapped journal inode, data=journal) and on a disk that lies about flushes, where
//! promises break.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use jbench::crash::lab::{self, load_log};
use jbench::crash::oracle;
use jbench::crash::promises::PromiseBook;
use jbench::crash::states::{plan_states, Marks};
use jbench::crash::user_verdict::{self, Fast};
use jbench::crash::{CrashOptions, Strategy};
use jbench::results::crash::Verdict;
use jbench::results::store;

const STATES: u32 = 60;

fn spec(work: &Path, fs_type: &str, config: &str) -> String {
    format!(
        r#"name = "user-verdict"
seed = 7
suspect_below = "60s"
work_dir = "{}"

[models.liar]
model = "hdd-7200"
honor_flush = false

[filesystem]
type = "{fs_type}"
size = "128M"
device_model = "hdd-7200"

[journal]
size = "8M"
mode = "ordered"

[[config]]
label = "c"
{config}

[[workload]]
kind = "fsync"
name = "fsync"
files = 30
size = "12K"
fsync_dir = true

[crash]
states = 1
recovery_timing = 0
"#,
        work.display()
    )
}

/// Records one trial, then judges `STATES` of its states both ways; returns how many
/// the user-space path called ok, broken, and left to the kernel.
fn both_ways(name: &str, fs_type: &str, config: &str) -> (usize, usize, usize) {
    let tmp = scratch(&format!("user-verdict-{name}-"));
    let path = write_spec(tmp.path(), "s.toml", &spec(tmp.path(), fs_type, config));
    let results = tmp.path().join("results");
    let (code, stderr, _) = crash_run(&path, &results);
    assert!(matches!(code, Some(0 | 5)), "{stderr}");
    let spec = jbench::experiment::spec::load(&path).unwrap();
    let log_path = results.join("write-logs/trial-0.wlog");
    let log = load_log(&log_path).unwrap();
    let marks = Marks::of(&log.recs).unwrap();
    let trial = &store::load_records(&results).unwrap()[0];
    let mount = trial.layout["mount_point"].as_str().unwrap();
    let wl = &trial.workload;
    let book = PromiseBook::new(&wl.kind, &wl.params, mount, &Default::default());
    let opts = CrashOptions {
        states: STATES,
        strategies: vec![Strategy::Prefix, Strategy::Subset, Strategy::Torn],
        ..CrashOptions::default()
    };
    let plans = plan_states(&log.recs, &lab::disk_traits(&log.header), &opts, 3).unwrap();
    let mut rig = rig_for(&spec, &log, &log_path, Duration::from_secs(60));
    let (mut ok, mut broken, mut fell) = (0, 0, 0);
    for (i, plan) in plans.iter().enumerate() {
        let promises = book.at(&marks, plan.cut);
        let (state, fs, journal) = rig.user_state(&log.recs, plan).unwrap();
        let fast = user_verdict::judge(Arc::new(state), fs, journal, &promises);
        rig.load(&log.recs, plan).unwrap();
        let kernel = oracle::judge(&rig, &promises, None).unwrap();
        rig.clear().unwrap();
        let kernel_ok = matches!(kernel.verdict, Verdict::Ok | Verdict::FsckDirty);
        match &fast {
            Fast::Ok { .. } => {
                ok += 1;
                assert!(
                    kernel_ok,
                    "{name} state {i}: user space ok, kernel {}: {:?}",
                    kernel.verdict, kernel.evidence
                );
            }
            Fast::Broken { evidence } => {
                broken += 1;
                assert!(
                    !kernel_ok,
                    "{name} state {i}: user space {evidence:?}, kernel {}",
                    kernel.verdict
                );
            }
            Fast::Fallback(why) => {
                fell += 1;
                eprintln!(
                    "{name} state {i}: fell back: {why} (kernel {})",
                    kernel.verdict
                );
            }
        }
    }
    drop(rig);
    assert_no_leaks(tmp.path());
    eprintln!("{name}: of {} states, user space called {ok} ok and {broken} broken, left {fell} to the kernel", plans.len());
    (ok, broken, fell)
}

#[test]
fn the_user_space_verdict_agrees_with_the_kernel_on_every_state() {
    require!(root, fuse);
    let cases = [
        ("ext4-internal", "ext4", "journal.placement = \"internal\""),
        (
            "ext4-second-disk",
            "ext4",
            "journal.placement = \"second-disk\"",
        ),
        (
            "ext4-data-journal",
            "ext4",
            "journal.placement = \"internal\"\njournal.mode = \"journal\"",
        ),
        ("ext3-internal", "ext3", "journal.placement = \"internal\""),
    ];
    for (name, fs, config) in cases {
        let (ok, broken, fell) = both_ways(name, fs, config);
        // An honest disk keeps its promises: the path judges nearly all of it.
        assert!(
            ok as u32 >= STATES * 3 / 4,
            "{name}: {ok} ok, {broken} broken, {fell} fell back"
        );
    }
    // A disk that lies about flushes breaks promises: the path sees it too.
    let (ok, broken, fell) = both_ways(
        "liar",
        "ext4",
        "journal.placement = \"internal\"\nfilesystem.device_model = \"liar\"",
    );
    assert!(broken > 0, "{ok} ok, {broken} broken, {fell} fell back");
}
