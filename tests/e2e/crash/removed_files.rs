//! Files a workload removes before its end are still known to the crash lab: the
//! recording's blocks are labelled again at the last phase starts (the journal
//! replayed), so their data is torn, and their flushes and promises get states.

use crate::common;

use std::path::Path;

use common::*;
use jbench::crash::block_map::BlockUse;
use jbench::crash::options::Strategy;

fn spec(work: &Path) -> String {
    format!(
        r#"name = "removed-files"
seed = 3
suspect_below = "60s"
work_dir = "{work}"

[filesystem]
type = "ext4"
size = "64M"
device_model = "hdd-7200"

[journal]
size = "4M"
mode = "ordered"
placement = "internal"

[[config]]
label = "internal"

[[workload]]
kind = "fsync"
name = "fsync-8k"
files = 12
size = 8192

[crash]
states = 40
recovery_timing = 0
"#,
        work = work.display(),
    )
}

#[test]
fn a_removed_files_blocks_are_its_data_and_get_torn_flushed_and_cut_states() {
    require!(root, fuse);
    let tmp = scratch("crash-removed-files-");
    let path = write_spec(tmp.path(), "removed", &spec(tmp.path()));
    let results = tmp.path().join("results");
    let records = crash_ok(&path, &results);
    // Every file was removed in the `remove` phase, yet the map knows their data.
    let map = block_map_of(&results);
    let data_files: Vec<&String> = map
        .runs
        .iter()
        .filter_map(|r| match r.what {
            BlockUse::Data {
                file,
                offset: Some(_),
            } => map.files.get(file as usize),
            _ => None,
        })
        .collect();
    assert!(data_files.len() >= 12, "{:?}\n{:?}", map.files, map.notes);
    let cov = records
        .iter()
        .find_map(|r| r.coverage.clone())
        .expect("a coverage record");
    // Each 8 KiB file is one two-block write: one tear each.
    assert!(cov.planned(Strategy::TornData) >= 12, "{cov:?}");
    assert!(cov.synced_flushes[1] >= 12, "{cov:?}");
    assert!(cov.synced_flushes[0] > 0, "{cov:?}");
    assert!(cov.planned(Strategy::LastWrites) > 0, "{cov:?}");
    assert!(
        records
            .iter()
            .any(|r| r.strategy == Strategy::FlushSubset.as_str()),
        "no flush-subset state was checked"
    );
    assert_no_leaks(tmp.path());
}
