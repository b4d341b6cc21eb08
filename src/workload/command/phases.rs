//! Phases read from a command's output: named regular expressions over stdout, or a
//! JSON document `{"phases": [{"name", "seconds", "ops"?, "bytes"?, "unit"?}]}`.

use anyhow::{anyhow, bail};
use serde::Deserialize;

use super::PatternPhase;
use crate::workload::PhaseResult;

/// A count printed as `42` or `42.0` (some tools print every figure with decimals).
fn count(text: &str, what: &str, phase: &str) -> anyhow::Result<u64> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("phase `{phase}`: {what} `{text}` is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        bail!("phase `{phase}`: {what} `{text}` must be a number >= 0");
    }
    Ok(v.round() as u64)
}

fn seconds(v: f64, phase: &str) -> anyhow::Result<f64> {
    if !v.is_finite() || v <= 0.0 {
        bail!("phase `{phase}`: seconds = {v} (must be a positive number)");
    }
    Ok(v)
}

/// One phase per pattern, from its last match in `stdout`.
pub fn from_patterns(ps: &[PatternPhase], stdout: &str) -> anyhow::Result<Vec<PhaseResult>> {
    ps.iter()
        .map(|p| {
            let caps = p.pattern.captures_iter(stdout).last().ok_or_else(|| {
                anyhow!(
                    "phase `{}`: pattern `{}` matched nothing in the command's stdout",
                    p.name,
                    p.pattern.as_str()
                )
            })?;
            let group = |g: &Option<String>, what: &str| -> anyhow::Result<u64> {
                match g.as_deref().and_then(|g| caps.name(g)) {
                    Some(m) => count(m.as_str(), what, &p.name),
                    None => Ok(0),
                }
            };
            let secs_text = caps.name(&p.seconds).map(|m| m.as_str()).unwrap_or("");
            let secs: f64 = secs_text.trim().parse().map_err(|_| {
                anyhow!("phase `{}`: seconds `{secs_text}` is not a number", p.name)
            })?;
            Ok(PhaseResult {
                name: p.name.clone(),
                seconds: seconds(secs, &p.name)?,
                ops: group(&p.ops, "ops")?,
                bytes: group(&p.bytes, "bytes")?,
                op_unit: p.unit.clone().unwrap_or_else(|| "ops".into()),
                ..Default::default()
            })
        })
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    phases: Vec<DocPhase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocPhase {
    name: String,
    seconds: f64,
    #[serde(default)]
    ops: Option<f64>,
    #[serde(default)]
    bytes: Option<f64>,
    #[serde(default)]
    unit: Option<String>,
    /// Per-operation latency the application measured (a commit's, a write's).
    #[serde(default)]
    latency: Option<crate::workload::Latency>,
}

/// The declared phases, in declared order, from the command's JSON document.
pub fn from_json(names: &[String], text: &str, from: &str) -> anyhow::Result<Vec<PhaseResult>> {
    // A document alone, or the last line of an output that says other things first.
    let last_line = || {
        text.lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .and_then(|l| serde_json::from_str::<Doc>(l).ok())
    };
    let doc: Doc = serde_json::from_str(text)
        .or_else(|e| last_line().ok_or(e))
        .map_err(|e| {
            anyhow!(
            "{from} is not a phase document {{\"phases\": [{{\"name\", \"seconds\", ...}}]}}: {e}"
        )
        })?;
    for p in &doc.phases {
        if !names.contains(&p.name) {
            bail!(
                "{from} reports phase `{}`, not declared in `phases` ({})",
                p.name,
                names.join(", ")
            );
        }
    }
    names
        .iter()
        .map(|n| {
            let p = doc
                .phases
                .iter()
                .rev()
                .find(|p| &p.name == n)
                .ok_or_else(|| anyhow!("phase `{n}`: missing from {from}"))?;
            let num = |v: Option<f64>, what| match v {
                Some(v) => count(&v.to_string(), what, n),
                None => Ok(0),
            };
            Ok(PhaseResult {
                name: n.clone(),
                seconds: seconds(p.seconds, n)?,
                ops: num(p.ops, "ops")?,
                bytes: num(p.bytes, "bytes")?,
                op_unit: p.unit.clone().unwrap_or_else(|| "ops".into()),
                latency: p.latency.clone(),
                ..Default::default()
            })
        })
        .collect()
}
