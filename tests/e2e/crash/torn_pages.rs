//! The torn application page: a page store with 8 KiB pages on a disk whose unit of
//! persistence is a 4 KiB block, without torn-page protection, must be caught by the
//! default budget in every seed; the same store with a doublewrite file never fails.

use crate::common;

use std::path::Path;

use common::*;
use jbench::crash::block_map::BlockUse;
use jbench::results::crash::{CrashRecord, Verdict};

fn spec(work: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torn_pages.py");
    format!(
        r#"name = "torn-pages"
seed = 1
suspect_below = "60s"
work_dir = "{work}"

[filesystem]
type = "ext4"
size = "128M"
device_model = "hdd-7200"

[journal]
size = "8M"
mode = "ordered"
placement = "internal"

[[config]]
label = "no-protection"
env = {{ PROTECT = "0" }}

[[config]]
label = "doublewrite"
env = {{ PROTECT = "1" }}

[[workload]]
kind = "command"
name = "pages"
run = ["/usr/bin/python3", "{script}", "run"]
check = ["/usr/bin/python3", "{script}", "check"]
check_timeout = "20s"

[crash]
recovery_timing = 0
"#,
        work = work.display(),
        script = script.display(),
    )
}

fn torn_data(records: &[&CrashRecord]) -> usize {
    records.iter().filter(|r| r.strategy == "torn-data").count()
}

#[test]
fn a_torn_page_is_found_in_every_seed_and_a_doublewrite_file_prevents_it() {
    require!(root, fuse);
    let tmp = scratch("crash-torn-pages-");
    let path = write_spec(tmp.path(), "pages", &spec(tmp.path()));
    for seed in 1..=5u64 {
        let results = tmp.path().join(format!("results-{seed}"));
        let out = jbench()
            .arg("crash")
            .arg(&path)
            .arg("--results")
            .arg(&results)
            .arg("--seed")
            .arg(seed.to_string())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let records =
            jbench::results::crash::load_crash_records(&results.join("crash.jsonl")).unwrap();
        let groups = by_config(&records);
        let bare = &groups["no-protection"];
        let torn: Vec<_> = bare
            .iter()
            .filter(|r| r.verdict == Verdict::CheckFailed && r.strategy == "torn-data")
            .collect();
        assert!(
            !torn.is_empty(),
            "seed {seed}: no torn page found in {} states ({} torn-data):\n{stderr}",
            bare.len(),
            torn_data(bare)
        );
        let t = torn[0]
            .torn
            .as_ref()
            .expect("a torn-data state names its write");
        assert!(
            t.kept_bytes % 4096 == 0 && t.kept_bytes < t.len,
            "torn at the block: {t:?}"
        );
        assert!(
            torn[0].evidence.iter().any(|e| e.contains("is torn")),
            "{:?}",
            torn[0].evidence
        );
        // Every tear of the page store's data fits the default budget: all checked,
        // and the coverage line names the file.
        let cov = torn[0].coverage.as_ref().expect("coverage");
        let line = cov.describe(bare.len() as u64);
        assert!(
            line.contains("all ")
                && line.contains("tears of file data")
                && line.contains("pages.db"),
            "{line}"
        );
        let safe = &groups["doublewrite"];
        assert!(torn_data(safe) > 0, "no torn-data state with protection");
        let bad: Vec<_> = safe.iter().filter(|r| r.verdict != Verdict::Ok).collect();
        assert!(
            bad.is_empty(),
            "seed {seed}: the doublewrite store failed: {:?} {:?}",
            bad[0].verdict,
            bad[0].evidence
        );
        // Exit 5: an ordinary configuration lost consistency.
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        if seed == 1 {
            // The labels were kept beside the log: pages.db's blocks are its data.
            let map = block_map_of(&results);
            let db = map
                .files
                .iter()
                .position(|f| f == "pages.db")
                .expect("pages.db labelled") as u32;
            assert!(map.runs.iter().any(|r| matches!(
                r.what,
                BlockUse::Data { file, offset: Some(_) } if file == db
            )));
            assert!(map.runs.iter().any(|r| r.what == BlockUse::Journal));
        }
    }
    assert_no_leaks(tmp.path());
}
