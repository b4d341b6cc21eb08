//! A real application beside a neighbour: the built-in `sqlite` preset, speed only,
//! its workload run alone and beside jbench's writer (`neighbour_rate = ["0", "4M"]`),
//! each trial's record carrying the commit latency's tail and what the neighbour did,
//! and the report's tail comparison made from exactly those records.

use jbench::results::store;

use crate::common::*;

const COMMITS: u64 = 150;

fn loaded_sqlite(work: &std::path::Path) -> String {
    let preset =
        String::from_utf8(run_ok(jbench().args(["preset", "show", "sqlite"])).stdout).unwrap();
    let mut doc: toml::Table = preset.parse().unwrap();
    doc.insert("name".into(), "sqlite-neighbour".into());
    doc.insert("repetitions".into(), 2.into());
    doc.insert("work_dir".into(), work.display().to_string().into());
    doc.remove("crash");
    let keep: Vec<toml::Value> = doc["config"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| matches!(c["label"].as_str(), Some("wal-full" | "wal-normal")))
        .cloned()
        .collect();
    assert_eq!(keep.len(), 2, "the preset has wal-full and wal-normal");
    doc.insert("config".into(), keep.into());
    doc.insert("baseline".into(), "wal-full".into());
    let wl = doc["workload"].as_array_mut().unwrap()[0]
        .as_table_mut()
        .unwrap();
    wl.insert(
        "neighbour_rate".into(),
        toml::Value::Array(vec!["0".into(), "4M".into()]),
    );
    wl["env"]
        .as_table_mut()
        .unwrap()
        .insert("SQLITE_COMMITS".into(), COMMITS.to_string().into());
    toml::to_string(&doc).unwrap()
}

#[test]
fn a_neighbour_writes_beside_the_application_and_the_tail_is_compared_from_the_records() {
    require!(root, fuse, sqlite);
    let tmp = scratch("neighbour-");
    let spec = write_spec(
        tmp.path(),
        "sqlite.toml",
        &loaded_sqlite(&tmp.path().join("work")),
    );
    let dir = tmp.path().join("results");
    let out = run_ok(jbench().arg("run").arg(&spec).arg("--results").arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let trials = store::load_records(&dir).unwrap();
    assert_eq!(
        trials.len(),
        8,
        "2 configurations x 2 rates x 2 repetitions"
    );
    for t in &trials {
        assert!(t.is_ok(), "{t:?}");
        let lat = t.phases[0].latency.as_ref().expect("the commit latency");
        assert_eq!(lat.count, COMMITS);
        assert!(
            lat.p50_us <= lat.p99_us && lat.p99_us <= lat.max_us,
            "{lat:?}"
        );
        match t.workload.name.as_str() {
            "sqlite-commits@nb0" => {
                assert_eq!(t.workload.neighbour_rate, None);
                assert!(t.neighbour.is_none());
            }
            "sqlite-commits@nb4M" => {
                assert_eq!(t.workload.neighbour_rate, Some(4 << 20));
                let n = t.neighbour.as_ref().expect("what the neighbour did");
                assert_eq!(n.target_bytes_per_sec, 4 << 20);
                // It wrote and made durable at least a MiB while the commits ran, and
                // never ran ahead of its rate by more than one 256 KiB chunk.
                assert!(n.bytes >= 1 << 20 && n.fdatasyncs >= 1, "{n:?}");
                assert!(
                    n.achieved_bytes_per_sec() <= (4 << 20) as f64 + (256 << 10) as f64 / n.seconds
                );
            }
            other => panic!("unexpected workload {other}"),
        }
    }
    let json: serde_json::Value = serde_json::from_slice(
        &run_ok(jbench().arg("report").arg(&dir).args(["--format", "json"])).stdout,
    )
    .unwrap();
    for w in json["workloads"].as_array().unwrap() {
        let name = w["name"].as_str().unwrap();
        let tail = &w["tail"];
        assert_eq!(tail["phase"], "commit", "{name}: {tail:#}");
        assert_eq!(tail["baseline"], "wal-full");
        for c in tail["configs"].as_array().unwrap() {
            let label = c["config"].as_str().unwrap();
            let p99s: Vec<f64> = trials
                .iter()
                .filter(|t| t.workload.name == name && t.config.label == label)
                .map(|t| t.phases[0].latency.as_ref().unwrap().p99_us)
                .collect();
            assert_eq!(p99s.len(), 2);
            let mean = p99s.iter().sum::<f64>() / 2.0;
            assert!((c["p99"]["mean_us"].as_f64().unwrap() - mean).abs() < 1e-6 * mean);
            if label == "wal-normal" {
                let v = &c["p99_vs_baseline"];
                let word = v["decision"].as_str().unwrap();
                assert!(
                    ["different", "equivalent", "undecided"].contains(&word),
                    "{v}"
                );
                let (lo, r) = (v["ci_low"].as_f64().unwrap(), v["ratio"].as_f64().unwrap());
                assert!(
                    lo <= r && v["ci_high"].as_f64().is_none_or(|h| h >= r),
                    "{v}"
                );
                // The word and the interval follow one rule at the tail's ±10% band.
                let inside = lo > 1.0 / 1.1 && v["ci_high"].as_f64().is_some_and(|h| h < 1.1);
                let outside = lo > 1.1 || v["ci_high"].as_f64().is_some_and(|h| h < 1.0 / 1.1);
                let expect = if outside {
                    "different"
                } else if inside {
                    "equivalent"
                } else {
                    "undecided"
                };
                assert_eq!(word, expect, "{v}");
            }
        }
    }
    // The first screen of a speed-only run carries the tail lines.
    let report = String::from_utf8(run_ok(jbench().arg("report").arg(&dir)).stdout).unwrap();
    assert!(
        report.contains("wal-normal: commit p99 ") && report.contains(" vs wal-full "),
        "{report}"
    );
    assert!(stdout.contains("sqlite-commits@nb4M"), "{stdout}");
}
