//! `monitor/trial-N.jsonl`: one line per sampling interval of a trial. The monitor
//! writes these types and the HTML report reads the same types back, so the file's
//! format is defined once. Reading is lenient (a field missing from an older or
//! hand-made file takes its default; a line that is not a sample is counted and
//! skipped), writing always emits every field.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// One line of the series file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Seconds since the workload started.
    pub t: f64,
    /// The phase running at the sample, or empty between phases.
    #[serde(default)]
    pub phase: String,
    /// By role: `fs`, `journal`.
    #[serde(default)]
    pub devices: BTreeMap<String, DeviceRate>,
    #[serde(default)]
    pub cpu: Option<CpuPct>,
    #[serde(default)]
    pub dirty_kib: Option<u64>,
    #[serde(default)]
    pub writeback_kib: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceRate {
    #[serde(default)]
    pub write_kib_s: f64,
    #[serde(default)]
    pub read_kib_s: f64,
    #[serde(default)]
    pub in_flight: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    #[serde(default)]
    pub user: f64,
    #[serde(default)]
    pub system: f64,
    #[serde(default)]
    pub iowait: f64,
}

/// Writes the series, one JSON object a line, creating the folder.
pub fn write_series(path: &Path, series: &[SeriesPoint]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    for p in series {
        serde_json::to_writer(&mut w, p)?;
        w.write_all(b"\n")?;
    }
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Parses the samples in time order, skipping lines that are not samples; returns
/// how many were skipped.
pub fn parse_series(text: &str) -> (Vec<SeriesPoint>, usize) {
    let mut bad = 0;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<SeriesPoint>(line) {
            Ok(s) if s.t.is_finite() => out.push(s),
            _ => bad += 1,
        }
    }
    out.sort_by(|a, b| a.t.total_cmp(&b.t));
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("monitor/trial-0.jsonl");
        let p = SeriesPoint {
            t: 0.5,
            phase: "create".into(),
            devices: [(
                "fs".to_string(),
                DeviceRate {
                    write_kib_s: 12.5,
                    read_kib_s: 1.0,
                    in_flight: 2,
                },
            )]
            .into(),
            cpu: Some(CpuPct {
                user: 1.0,
                system: 2.0,
                iowait: 3.0,
            }),
            dirty_kib: Some(40),
            writeback_kib: Some(0),
        };
        write_series(&path, std::slice::from_ref(&p)).unwrap();
        let (back, bad) = parse_series(&std::fs::read_to_string(&path).unwrap());
        assert_eq!((back, bad), (vec![p], 0));
    }

    #[test]
    fn a_sparse_line_takes_defaults_and_junk_is_counted() {
        let (s, bad) = parse_series("{\"t\": 2}\nnot json\n{\"t\": 1, \"phase\": \"a\"}\n");
        assert_eq!(bad, 1);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].t, s[0].phase.as_str(), s[0].cpu.is_none()),
            (1.0, "a", true)
        );
    }
}
