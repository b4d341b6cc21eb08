//! fio's `--output-format=json+` turned into phases.

use anyhow::{anyhow, bail, Context};
use hdrhistogram::Histogram;
use serde_json::Value;

use super::jobfile::{Dir, Entry};
use crate::workload::{FioLatency, Latency, PhaseResult};

/// Latencies are nanoseconds; one over an hour is saturated to it.
const HIST_MAX_NS: u64 = 3_600 * 1_000_000_000;
/// Three significant digits, as the other engines keep.
const HIST_SIGFIG: u8 = 3;

/// Latency from one of fio's latency objects (`clat_ns`, `lat_ns`, `sync.lat_ns`)
/// by its bins (value in ns -> count), which fio already merged over the jobs of a
/// `group_reporting` entry; `what` names it in errors. The percentiles come from the
/// whole distribution, never from fio's own percentiles. `None` when the output has
/// no bins (plain `json`, or `lat_ns` without `lat_percentiles`).
pub fn latency(clat: &Value, what: &str) -> anyhow::Result<Option<Latency>> {
    let Some(bins) = clat.get("bins").and_then(Value::as_object) else {
        return Ok(None);
    };
    let mut hist = Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG)
        .map_err(|e| anyhow!("latency histogram: {e}"))?;
    let mut max_ns = 0u64;
    for (ns, count) in bins {
        let ns: u64 = ns
            .parse()
            .with_context(|| format!("{what} bin `{ns}` is not a number of ns"))?;
        let count = count
            .as_u64()
            .ok_or_else(|| anyhow!("{what} bin {ns}: count {count} is not a whole number"))?;
        if count > 0 {
            hist.saturating_record_n(ns.clamp(1, HIST_MAX_NS), count);
            max_ns = max_ns.max(ns);
        }
    }
    if hist.is_empty() {
        return Ok(None);
    }
    // fio's exact maximum; a bin's value may lie a little either side of it.
    let max_ns = clat
        .get("max")
        .and_then(Value::as_u64)
        .filter(|m| *m > 0)
        .unwrap_or(max_ns);
    let us = |ns: u64| ns as f64 / 1000.0;
    let at = |q: f64| us(hist.value_at_quantile(q).min(max_ns));
    Ok(Some(Latency {
        count: hist.len(),
        p50_us: at(0.50),
        p95_us: at(0.95),
        p99_us: at(0.99),
        p999_us: Some(at(0.999)),
        max_us: us(max_ns),
    }))
}

/// One phase per entry and direction that did any I/O, in the order of `entries`
/// (the job file's), from the text fio wrote with `--output`.
pub fn phases(text: &str, entries: &[Entry]) -> anyhow::Result<Vec<PhaseResult>> {
    // fio may print warnings before the document in the output file.
    let start = text
        .find('{')
        .ok_or_else(|| anyhow!("fio's output holds no JSON document"))?;
    let doc: Value = serde_json::from_str(&text[start..]).context("fio's output is not JSON")?;
    let jobs: Vec<&Value> = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("fio's output has no `jobs` list"))?
        .iter()
        // fio appends an aggregate without a jobname in some modes.
        .filter(|j| j.get("jobname").is_some())
        .collect();
    if jobs.len() != entries.len() {
        let got: Vec<&str> = jobs.iter().filter_map(|j| j["jobname"].as_str()).collect();
        let want: Vec<&str> = entries.iter().map(|e| e.jobname.as_str()).collect();
        bail!(
            "fio reported {} job entries ({}) where the job file makes {} ({}): reporting \
             groups differ from what jbench expects",
            got.len(),
            got.join(", "),
            want.len(),
            want.join(", ")
        );
    }
    let mut out = Vec::new();
    for (j, e) in jobs.iter().zip(entries) {
        let name = j["jobname"].as_str().unwrap_or("");
        if name != e.jobname {
            bail!(
                "fio reported job `{name}` where the job file has `{}`",
                e.jobname
            );
        }
        if let Some(err) = j.get("error").and_then(Value::as_i64).filter(|e| *e != 0) {
            bail!("fio job `{name}` failed with error {err}");
        }
        for d in Dir::ALL {
            let Some(s) = j.get(d.key()) else { continue };
            let ops = s.get("total_ios").and_then(Value::as_u64).unwrap_or(0);
            if ops == 0 {
                continue;
            }
            let bytes = s.get("io_bytes").and_then(Value::as_u64).unwrap_or(0);
            let ms = s.get("runtime").and_then(Value::as_u64).unwrap_or(0);
            let of = |v: Option<&Value>, what: &str| match v {
                Some(v) => {
                    latency(v, what).with_context(|| format!("fio job `{name}` {}", d.key()))
                }
                None => Ok(None),
            };
            let fio_latency = FioLatency {
                clat: of(s.get("clat_ns"), "clat_ns")?,
                lat: of(s.get("lat_ns"), "lat_ns")?,
                // fio counts the sync calls per job; only writes make them.
                sync: match d.key() {
                    "write" => of(j.get("sync").and_then(|s| s.get("lat_ns")), "sync.lat_ns")?,
                    _ => None,
                },
            };
            out.push(PhaseResult {
                name: e.phase_name(d),
                seconds: ms as f64 / 1000.0,
                ops,
                bytes,
                op_unit: format!("{} IOs", d.key()),
                durable_seconds: None,
                latency: fio_latency.clat.clone(),
                fio_latency: Some(fio_latency),
                counters: Default::default(),
            });
        }
    }
    Ok(out)
}
