//! The experiment file: reading and checking it into a [`Spec`]. Every error names the
//! key and its line, and is raised before anything is provisioned. This file holds the
//! entry points (`load`, `parse`), the limits and the top-level keys; the rest is split
//! along the way a file is read:
//!
//! - `raw.rs`: the TOML shape, with type errors that name the key;
//! - `tables.rs`: `[emulation]`, `[crash]`, `[models]` and `[[workload]]`;
//! - `factors.rs`: the table of matrix factors, each declared once;
//! - `matrix.rs`: the configurations the factors expand to, and their labels;
//! - `rules.rs`: combinations the kernel or mkfs would refuse, and capacity;
//! - `resolved.rs`: the spec with every default explicit, stored with the results.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::emu::EmulationOptions;
use crate::experiment::config::{Config, DataMode, DeviceModelSpec, FsType, Placement};
use crate::experiment::crash_options::CrashOptions;
use crate::experiment::writeback_options::WritebackOptions;
use crate::units::{format_size, parse_duration, parse_size};
use crate::workload::Workload;

/// Smallest file system we make: below this ext4's own metadata dominates.
const MIN_FS_SIZE: u64 = 32 << 20;
/// jbd2 needs at least 1024 journal blocks (4 MiB at the 4 KiB block size we use).
const MIN_JOURNAL_SIZE: u64 = 4 << 20;
/// mke2fs's upper bound for a journal: 10,240,000 blocks of 4 KiB.
const MAX_JOURNAL_SIZE: u64 = 10_240_000 * 4096;
/// mke2fs's default bytes-per-inode ratio, which fixes how many inodes a fresh file
/// system has unless mkfs_options change it.
const BYTES_PER_INODE: u64 = 16384;
/// jbd2 needs 1024 journal blocks after the superblock: an external journal device
/// spends its first blocks on its own superblock, so it needs one block more (the
/// kernel says "Journal too short" otherwise).
const MIN_EXTERNAL_JOURNAL: u64 = 1025 * 4096;
/// Below this a memory cgroup cannot even hold the engine and its page-cache working set.
const MIN_MEMORY_LIMIT: u64 = 32 << 20;
/// Shortest `[emulation] watchdog`: less would abort a daemon that is only busy.
const MIN_WATCHDOG: Duration = Duration::from_secs(1);
/// XFS's own limits: a data section of at least 300 MB, a log of 64 MB to 2 GB.
const XFS_MIN_FS: u64 = 300 << 20;
const XFS_MIN_LOG: u64 = 64 << 20;
const XFS_MAX_LOG: u64 = 2 << 30;
/// Largest file system image: ext4 (4 KiB blocks) holds files up to 16 TiB, and the
/// images live in a directory that is usually ext4.
const MAX_FS_SIZE: u64 = 16 << 40;
/// Largest memory limit and RAM disk: far beyond any machine jbench runs on, small
/// enough that sums of them cannot overflow.
const MAX_MEMORY: u64 = 16 << 40;
/// The kernel refuses `commit=` above INT_MAX / HZ seconds (ext4's parser, which also
/// mounts ext3); with HZ up to 1000 that is 2,147,483 s, about 24.8 days.
const MAX_COMMIT_SECONDS: u64 = (i32::MAX as u64) / 1000;
/// Longest `suspect_below`: a phase is never expected to last longer than a day.
const MAX_SUSPECT_BELOW: Duration = Duration::from_secs(86_400);
/// `monitor_interval` from 10 ms (less disturbs the measurement) to an hour.
const MIN_MONITOR_INTERVAL: Duration = Duration::from_millis(10);
const MAX_MONITOR_INTERVAL: Duration = Duration::from_secs(3600);
/// Longest `[emulation] watchdog`: a day.
const MAX_WATCHDOG: Duration = Duration::from_secs(86_400);
/// Repetitions per configuration and workload (fixed, or an adaptive `max`): more
/// than a machine can run in a study, and the statistics gain nothing past it.
pub const MAX_REPETITIONS: u32 = 1000;
/// Configurations of one experiment (the matrix or the union of `[[config]]` tables).
pub const MAX_CONFIGS: usize = 1000;
/// Trials of one experiment: configurations x workloads x repetitions (the adaptive
/// `max`). At a minute a trial that is over two months of running.
pub const MAX_TRIALS: u64 = 100_000;
/// Largest experiment file read: real ones are a few KiB.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// An error in an experiment file, pointing at the key and line.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    pub file: String,
    pub line: Option<usize>,
    pub key: String,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: ", self.file, line)?,
            None => write!(f, "{}: ", self.file)?,
        }
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Rounds of every (configuration, workload), each round shuffled with the seed, so
    /// slow drift of the machine does not look like a difference between configurations.
    Interleaved,
    /// All repetitions of one configuration, then the next.
    Sequential,
}

impl Order {
    /// The spec's own word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

/// A named workload of the experiment.
#[derive(Clone)]
pub struct WorkloadSpec {
    pub name: String,
    pub engine: Arc<dyn Workload>,
    /// Also time each phase up to `syncfs` of the file system.
    pub durable: bool,
    /// The phase the report's summary ranks configurations on (`main_phase`);
    /// `None`: the engine's default (the analysis's `default_main_phase`).
    pub main_phase: Option<String>,
    /// `neighbour_rate`: a writer beside the workload at this many bytes per second
    /// ([`crate::workload::neighbour`]); `None` or 0: the workload has its disks alone.
    pub neighbour_rate: Option<u64>,
}

impl fmt::Debug for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.engine.kind(),
            self.name,
            self.engine.params()
        )
    }
}

/// `repetitions = { min, max, target_cv }`: trials are added to a (configuration,
/// workload) beyond `min` only while a phase's rate varies more than `target_cv` or a
/// comparison with the baseline is still undecided, never beyond `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adaptive {
    pub min: u32,
    pub max: u32,
    /// Coefficient of variation (sd / mean) of a phase's rate to reach, e.g. 0.03.
    pub target_cv: f64,
}

/// Default `noise_band`: ±2%; a comparison whose whole interval lies inside it is
/// equivalent, one whose whole interval lies outside it different.
pub const DEFAULT_NOISE_BAND: f64 = 0.02;

/// Default `tail_band`: ±10%; the band tail-latency (p99) comparisons are decided
/// against (`analysis::tail` says why it is wider).
pub const DEFAULT_TAIL_BAND: f64 = 0.10;

/// A validated experiment.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    /// The fixed number of repetitions, or the adaptive rule's `min`.
    pub repetitions: u32,
    /// Adaptive repetitions, when `repetitions` is a table.
    pub adaptive: Option<Adaptive>,
    /// The noise band (0.02 = ±2%): a comparison is different only when its whole
    /// interval lies outside it, equivalent only when its whole interval lies inside.
    pub noise_band: f64,
    /// The band tail-latency (p99) comparisons are decided against (0.10 = ±10%).
    pub tail_band: f64,
    pub order: Order,
    pub seed: u64,
    pub suspect_below: Duration,
    /// How often the monitor samples devices, CPU and memory during the workload
    /// (`monitor_interval`); `None` turns it off.
    pub monitor_interval: Option<Duration>,
    pub work_dir: PathBuf,
    /// Create `work_dir` with its missing parents (`--create-work-dir`); without it, a
    /// work_dir whose parent does not exist is refused, as a mistyped path would
    /// silently move the experiment to whatever disk holds the nearest parent.
    pub create_work_dir: bool,
    pub baseline: Option<String>,
    pub configs: Vec<Config>,
    pub workloads: Vec<WorkloadSpec>,
    /// The `[models]` table: each entry a built-in model with parameters overridden,
    /// by name (`jbench device calibrate --spec FILE NAME` calibrates one).
    pub models: BTreeMap<String, DeviceModelSpec>,
    /// How emulated disks (`device_model`) are served: the `[emulation]` table.
    pub emulation: EmulationOptions,
    /// The `[crash]` table: what the crash lab builds and checks; its presence
    /// (`requested`) makes `jbench run` run the lab too. `seed` is always set (the
    /// experiment's when the table gives none).
    pub crash: CrashOptions,
    /// The `[writeback]` table: how trials are put at the same point of the kernel's
    /// writeback clock.
    pub writeback: WritebackOptions,
    /// The spec with every default filled in, as TOML: stored with the results and
    /// compared on `--resume`.
    pub resolved: String,
}

mod factors;
mod matrix;
pub(crate) mod raw;
mod resolved;
mod rules;
mod tables;

use factors::{label_order, position, read_order, Column, Env, Factor, Layers, Sections, FACTORS};
use matrix::{build_configs, Spans};
use raw::*;
use resolved::resolve;
pub use rules::needed_bytes;
use rules::{check_capacity, check_combination};
use tables::{
    build_crash, build_emulation, build_models, build_workloads, build_writeback, model_of,
};

struct Ctx<'a> {
    file: String,
    text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, span: Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn err(&self, span: Option<Range<usize>>, key: &str, message: impl Into<String>) -> SpecError {
        SpecError {
            file: self.file.clone(),
            line: span.map(|s| self.line_of(s)),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn at<T>(&self, spanned: &Spanned<T>, key: &str, message: impl Into<String>) -> SpecError {
        self.err(Some(spanned.span()), key, message)
    }
}

/// Reads and validates an experiment file.
pub fn load(path: &Path) -> Result<Spec, SpecError> {
    let text = read_text(path).map_err(|message| SpecError {
        file: path.display().to_string(),
        line: None,
        key: String::new(),
        message,
    })?;
    parse(&text, &path.display().to_string())
}

/// The text of an experiment file, read up to [`MAX_SPEC_BYTES`] so that a device
/// (`/dev/zero`) or a huge file is refused at once instead of filling memory.
pub fn read_text(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read the experiment file: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read the experiment file: {e}"))?;
    if meta.is_dir() {
        return Err("is a directory, not an experiment file".into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the experiment file: {e}"))?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(format!(
            "is larger than {} (an experiment file is a few KiB of TOML); is this the right file?",
            format_size(MAX_SPEC_BYTES)
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "is not UTF-8 text (invalid byte at offset {}); an experiment file is TOML",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Parses experiment-file text; `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<Spec, SpecError> {
    let ctx = Ctx {
        file: file.to_string(),
        text,
    };
    let raw: RawSpec = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| ctx.line_of(s));
        SpecError {
            file: file.to_string(),
            line,
            key: e
                .span()
                .and_then(|s| key_at(text, s.start))
                .unwrap_or_default(),
            message: match e.message().trim() {
                "" => "invalid TOML here (a control character or a stray carriage return?)"
                    .to_string(),
                m => m.to_string(),
            },
        }
    })?;
    build(&ctx, raw)
}

/// The dotted key whose `key = value` line holds byte `offset`, with its table
/// (`journal.size`, `workload[1].levels`), so a TOML type error names the key.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("");
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-. \"'".contains(c))
    };
    if !bare(key) {
        return None;
    }
    let table = text[..start].lines().rev().find_map(|l| {
        let l = l.trim_start();
        if let Some(rest) = l.strip_prefix("[[") {
            let name = rest.split("]]").next()?.trim();
            let before = &text[..start];
            let header = format!("[[{name}]]");
            let index = before
                .lines()
                .filter(|x| x.trim_start().starts_with(&header))
                .count()
                .saturating_sub(1);
            Some(format!("{name}[{index}]."))
        } else {
            let rest = l.strip_prefix('[')?;
            Some(format!("{}.", rest.split(']').next()?.trim()))
        }
    });
    Some(format!("{}{key}", table.unwrap_or_default()))
}

fn build(ctx: &Ctx, raw: RawSpec) -> Result<Spec, SpecError> {
    let name = match &raw.name {
        Some(n) if n.get_ref().trim().is_empty() => {
            return Err(ctx.at(n, "name", "must not be empty"))
        }
        Some(n) if n.get_ref().contains('/') => {
            return Err(ctx.at(n, "name", "must not contain `/` (it names a directory)"))
        }
        Some(n) => n.get_ref().clone(),
        None => "experiment".to_string(),
    };
    let (repetitions, adaptive) = match &raw.repetitions {
        Some(r) => build_repetitions(ctx, r)?,
        None => (3, None),
    };
    let noise_band = match &raw.noise_band {
        None => DEFAULT_NOISE_BAND,
        Some(b) if !(*b.get_ref() >= 0.0 && *b.get_ref() < 1.0) => {
            return Err(ctx.at(
                b,
                "noise_band",
                "must be a fraction from 0 to below 1 (0.02 = 2%)",
            ))
        }
        Some(b) => *b.get_ref(),
    };
    let tail_band = match &raw.tail_band {
        None => DEFAULT_TAIL_BAND,
        Some(b) if !(*b.get_ref() >= 0.0 && *b.get_ref() < 1.0) => {
            return Err(ctx.at(
                b,
                "tail_band",
                "must be a fraction from 0 to below 1 (0.10 = 10%)",
            ))
        }
        Some(b) => *b.get_ref(),
    };
    let order = match &raw.order {
        None => Order::Interleaved,
        Some(o) => match o.get_ref().as_str() {
            "interleaved" => Order::Interleaved,
            "sequential" => Order::Sequential,
            other => {
                return Err(ctx.at(
                    o,
                    "order",
                    format!("unknown order `{other}` (use interleaved or sequential)"),
                ))
            }
        },
    };
    let seed = raw.seed.as_ref().map(|s| *s.get_ref()).unwrap_or(1);
    let suspect_below = match &raw.suspect_below {
        None => Duration::from_secs(60),
        Some(s) => crate::units::parse_duration_in(s.get_ref(), Duration::ZERO, MAX_SUSPECT_BELOW)
            .map_err(|m| ctx.at(s, "suspect_below", m))?,
    };
    let monitor_interval = match &raw.monitor_interval {
        None => Some(Duration::from_secs(1)),
        Some(s) if s.get_ref().trim() == "off" => None,
        Some(s) => {
            let d = parse_duration(s.get_ref())
                .map_err(|m| ctx.at(s, "monitor_interval", format!("{m}, or \"off\"")))?;
            if d.is_zero() {
                None
            } else if d < MIN_MONITOR_INTERVAL {
                return Err(ctx.at(
                    s,
                    "monitor_interval",
                    "below 10ms the sampler would disturb the measurement; use e.g. \"1s\" or \"off\" (allowed 10ms to 3600s)",
                ));
            } else {
                let d = crate::units::parse_duration_in(
                    s.get_ref(),
                    MIN_MONITOR_INTERVAL,
                    MAX_MONITOR_INTERVAL,
                )
                .map_err(|m| ctx.at(s, "monitor_interval", format!("{m}, or \"off\"")))?;
                Some(d)
            }
        }
    };
    let work_dir = match &raw.work_dir {
        None => PathBuf::from("/var/tmp/jbench"),
        Some(w) if !Path::new(w.get_ref()).is_absolute() => {
            return Err(ctx.at(w, "work_dir", "must be an absolute path"))
        }
        Some(w) => PathBuf::from(w.get_ref()),
    };

    let emulation = build_emulation(ctx, &raw.emulation)?;
    let crash = build_crash(ctx, &raw.crash, seed)?;
    let writeback = build_writeback(ctx, &raw.writeback)?;
    let models = build_models(ctx, &raw.models)?;
    let workloads = build_workloads(ctx, &raw.workload)?;
    let configs = build_configs(ctx, &raw, &models)?;
    check_capacity(ctx, &raw.filesystem, &configs, &workloads)?;
    let most_reps = adaptive.map_or(repetitions, |a| a.max);
    check_trial_count(ctx, &raw, configs.len(), workloads.len(), most_reps)?;

    let baseline = match &raw.baseline {
        None => None,
        Some(b) => {
            if !configs.iter().any(|c| &c.label == b.get_ref()) {
                let labels: Vec<&str> = configs.iter().map(|c| c.label.as_str()).collect();
                return Err(ctx.at(
                    b,
                    "baseline",
                    format!(
                        "no configuration is labelled `{}` (labels: {})",
                        b.get_ref(),
                        labels.join(", ")
                    ),
                ));
            }
            Some(b.get_ref().clone())
        }
    };

    let mut spec = Spec {
        name,
        repetitions,
        adaptive,
        noise_band,
        tail_band,
        order,
        seed,
        suspect_below,
        monitor_interval,
        work_dir,
        create_work_dir: false,
        baseline,
        configs,
        workloads,
        models,
        emulation,
        crash,
        writeback,
        resolved: String::new(),
    };
    spec.resolved = resolve(&spec);
    Ok(spec)
}

/// Refuses an experiment of more than [`MAX_TRIALS`] trials.
fn check_trial_count(
    ctx: &Ctx,
    raw: &RawSpec,
    configs: usize,
    workloads: usize,
    repetitions: u32,
) -> Result<(), SpecError> {
    let trials = (configs as u64)
        .saturating_mul(workloads as u64)
        .saturating_mul(u64::from(repetitions));
    if trials <= MAX_TRIALS {
        return Ok(());
    }
    Err(ctx.err(
        raw.repetitions.as_ref().map(|r| r.span()),
        "repetitions",
        format!(
            "{configs} configurations x {workloads} workloads x {repetitions} repetitions make {trials} trials; at most {MAX_TRIALS} are allowed: fewer repetitions, configurations or workloads"
        ),
    ))
}

/// `repetitions = 5` or `repetitions = { min = 3, max = 10, target_cv = 0.03 }`.
fn build_repetitions(
    ctx: &Ctx,
    r: &Spanned<toml::Value>,
) -> Result<(u32, Option<Adaptive>), SpecError> {
    let blame = |m: String| ctx.at(r, "repetitions", m);
    let count = |v: &toml::Value, what: &str| -> Result<u32, SpecError> {
        match v.as_integer() {
            Some(i) if (0..=i64::from(MAX_REPETITIONS)).contains(&i) => Ok(i as u32),
            Some(i) => Err(blame(format!(
                "{what}{i} is out of range: allowed 1 to {MAX_REPETITIONS} repetitions"
            ))),
            None if what.is_empty() => Err(blame(format!(
                "expected a whole number such as 5, or a table {{ min = 3, max = 10, target_cv = 0.03 }}; found {}",
                kind_of(v)
            ))),
            None => Err(blame(format!(
                "{what}must be a whole number; found {}",
                kind_of(v)
            ))),
        }
    };
    match r.get_ref() {
        toml::Value::Table(t) => {
            if let Some(k) = t
                .keys()
                .find(|k| !["min", "max", "target_cv"].contains(&k.as_str()))
            {
                return Err(blame(format!(
                    "unknown key `{k}` (an adaptive rule has min, max and target_cv)"
                )));
            }
            let get = |k: &str| {
                t.get(k).ok_or_else(|| {
                    blame(format!(
                        "missing `{k}`: write {{ min = 3, max = 10, target_cv = 0.03 }}"
                    ))
                })
            };
            let min = count(get("min")?, "min ")?;
            let max = count(get("max")?, "max ")?;
            let cv = match get("target_cv")? {
                toml::Value::Float(f) => *f,
                toml::Value::Integer(i) => *i as f64,
                other => {
                    return Err(blame(format!(
                        "target_cv must be a number; found {}",
                        kind_of(other)
                    )))
                }
            };
            if min < 2 {
                return Err(blame(format!(
                    "min must be at least 2 (a spread needs two trials), got {min}"
                )));
            }
            if max < min {
                return Err(blame(format!("max ({max}) must be at least min ({min})")));
            }
            if !(cv > 0.0 && cv < 1.0) {
                return Err(blame(format!(
                    "target_cv must be between 0 and 1 (0.03 = 3%), got {cv}"
                )));
            }
            Ok((
                min,
                Some(Adaptive {
                    min,
                    max,
                    target_cv: cv,
                }),
            ))
        }
        v => match count(v, "")? {
            0 => Err(blame("must be at least 1".to_string())),
            n => Ok((n, None)),
        },
    }
}

#[cfg(test)]
mod tests;
