//! The experiment file: parsing, validation and expansion of list-valued keys into the
//! matrix of configurations. Every error names the key and its line, and is raised
//! before anything is provisioned.

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

/// A named workload of the experiment.
#[derive(Clone)]
pub struct WorkloadSpec {
    pub name: String,
    pub engine: Arc<dyn Workload>,
    /// Also time each phase up to `syncfs` of the file system.
    pub durable: bool,
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

/// Default `noise_band`: differences of means under 2% are no meaningful difference.
pub const DEFAULT_NOISE_BAND: f64 = 0.02;

/// A validated experiment.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    /// The fixed number of repetitions, or the adaptive rule's `min`.
    pub repetitions: u32,
    /// Adaptive repetitions, when `repetitions` is a table.
    pub adaptive: Option<Adaptive>,
    /// Relative difference of means (0.02 = 2%) under which two configurations show
    /// no meaningful difference, however small p is.
    pub noise_band: f64,
    pub order: Order,
    pub seed: u64,
    pub suspect_below: Duration,
    /// How often the monitor samples devices, CPU and memory during the workload
    /// (`monitor_interval`); `None` turns it off.
    pub monitor_interval: Option<Duration>,
    pub work_dir: PathBuf,
    pub baseline: Option<String>,
    pub configs: Vec<Config>,
    pub workloads: Vec<WorkloadSpec>,
    /// How emulated disks (`device_model`) are served: the `[emulation]` table.
    pub emulation: EmulationOptions,
    /// The spec with every default filled in, as TOML: stored with the results and
    /// compared on `--resume`.
    pub resolved: String,
}

pub(crate) mod raw;
mod resolved;
mod rules;

use raw::*;
use resolved::resolve;
pub use rules::needed_bytes;
use rules::{check_capacity, check_combination};

// ---------------------------------------------------------------------------

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
        order,
        seed,
        suspect_below,
        monitor_interval,
        work_dir,
        baseline,
        configs,
        workloads,
        emulation,
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

/// The `[emulation]` table; its absence means the defaults.
fn build_emulation(ctx: &Ctx, raw: &Key<RawEmulation>) -> Result<EmulationOptions, SpecError> {
    let mut out = EmulationOptions::default();
    let Some(raw) = raw else {
        return Ok(out);
    };
    let e = raw.get_ref();
    if let Some(w) = &e.write_log {
        out.write_log = *w.get_ref();
    }
    if let Some(p) = &e.pin_cpus {
        out.pin_cpus = *p.get_ref();
    }
    if let Some(w) = &e.watchdog {
        let d = parse_duration(w.get_ref()).map_err(|m| ctx.at(w, "emulation.watchdog", m))?;
        if d < MIN_WATCHDOG {
            return Err(ctx.at(
                w,
                "emulation.watchdog",
                format!(
                    "`{}` is too short; the watchdog must allow at least 1s (allowed 1s to 86400s)",
                    w.get_ref()
                ),
            ));
        }
        let d = crate::units::parse_duration_in(w.get_ref(), MIN_WATCHDOG, MAX_WATCHDOG)
            .map_err(|m| ctx.at(w, "emulation.watchdog", m))?;
        out.watchdog = d;
    }
    Ok(out)
}

/// The `[models]` table: each entry a built-in model (`model = "hdd-7200"`) with some
/// of its parameters overridden, checked by building the model once.
fn build_models(
    ctx: &Ctx,
    raw: &BTreeMap<String, Spanned<toml::Table>>,
) -> Result<BTreeMap<String, DeviceModelSpec>, SpecError> {
    let mut out = BTreeMap::new();
    for (name, t) in raw {
        let key = format!("models.{name}");
        let blame = |message: String| ctx.at(t, &key, message);
        if crate::emu::MODEL_NAMES.contains(&name.as_str()) {
            return Err(blame(format!(
                "`{name}` is a built-in model; give the [models] entry another name (e.g. `my-{name}`) and set model = \"{name}\""
            )));
        }
        if name.trim().is_empty() || name.contains(',') {
            return Err(blame(
                "a model name must be non-empty and contain no `,` (it appears in labels)".into(),
            ));
        }
        let mut params = t.get_ref().clone();
        let model = match params.remove("model") {
            Some(toml::Value::String(m)) => m,
            Some(_) => {
                let m =
                    "`model` must be a string naming a built-in model, e.g. model = \"hdd-7200\"";
                return Err(blame(m.into()));
            }
            None => {
                return Err(blame(format!(
                    "missing `model`: the built-in model this entry is made from ({})",
                    crate::emu::MODEL_NAMES.join(", ")
                )))
            }
        };
        crate::emu::model_by_name(&model, Some(&params)).map_err(blame)?;
        out.insert(
            name.clone(),
            DeviceModelSpec {
                name: name.clone(),
                model,
                params,
            },
        );
    }
    Ok(out)
}

/// What a `device_model` value names: a `[models]` entry or a built-in model.
fn model_of(
    models: &BTreeMap<String, DeviceModelSpec>,
    name: &str,
) -> Result<DeviceModelSpec, String> {
    if let Some(m) = models.get(name) {
        return Ok(m.clone());
    }
    if crate::emu::MODEL_NAMES.contains(&name) {
        crate::emu::model_by_name(name, None)?;
        return Ok(DeviceModelSpec::builtin(name));
    }
    let entries: Vec<&str> = models.keys().map(String::as_str).collect();
    Err(format!(
        "unknown device model `{name}`; built-in models: {}; [models] entries: {}",
        crate::emu::MODEL_NAMES.join(", "),
        if entries.is_empty() {
            "(none)".to_string()
        } else {
            entries.join(", ")
        }
    ))
}

fn build_workloads(
    ctx: &Ctx,
    raws: &[Spanned<toml::Table>],
) -> Result<Vec<WorkloadSpec>, SpecError> {
    if raws.is_empty() {
        return Err(ctx.err(
            None,
            "workload",
            "the experiment has no [[workload]]; add one, e.g.\n[[workload]]\nkind = \"fdtree\"\ndirs = 3\nfiles = 4\nblocks = 1\nlevels = 5",
        ));
    }
    let mut out: Vec<WorkloadSpec> = Vec::new();
    for (i, w) in raws.iter().enumerate() {
        let table = w.get_ref();
        let key = format!("workload[{i}]");
        // The table's own keys carry no spans; find each key's line inside the table.
        let blame = |k: &str, message: String| {
            ctx.err(
                Some(key_span(ctx.text, w.span(), k)),
                &format!("{key}.{k}"),
                message,
            )
        };
        let kind = match table.get("kind") {
            Some(toml::Value::String(k)) => k.as_str(),
            Some(_) => {
                return Err(blame(
                    "kind",
                    "must be a string, e.g. kind = \"fdtree\"".into(),
                ))
            }
            None => {
                return Err(blame(
                    "kind",
                    format!(
                        "missing (use kind = \"{}\")",
                        crate::workload::KINDS.join("\" or \"")
                    ),
                ))
            }
        };
        let engine =
            crate::workload::from_table(kind, table).map_err(|e| blame(&e.key, e.message))?;
        let name = match table.get("name") {
            Some(toml::Value::String(n)) if n.trim().is_empty() || n.contains('/') => {
                return Err(blame("name", "must be non-empty and contain no `/`".into()))
            }
            Some(toml::Value::String(n)) => n.clone(),
            Some(_) => return Err(blame("name", "must be a string".into())),
            None => engine.default_name(),
        };
        let durable = match table.get("durable") {
            None => false,
            Some(toml::Value::Boolean(b)) => *b,
            Some(_) => return Err(blame("durable", "must be true or false".into())),
        };
        if out.iter().any(|o| o.name == name) {
            return Err(blame(
                "name",
                format!("two workloads are named `{name}`; give each a unique name"),
            ));
        }
        out.push(WorkloadSpec {
            name,
            engine,
            durable,
        });
    }
    Ok(out)
}

/// The span of `key = ...` inside the table spanning `table`, else the table itself.
fn key_span(text: &str, table: Range<usize>, key: &str) -> Range<usize> {
    let end = table.end.min(text.len());
    let mut offset = table.start.min(end);
    for line in text[offset..end].split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                return offset..offset + line.len();
            }
        }
        offset += line.len();
    }
    table
}

/// A list-valued key, with the span to blame and the values.
struct Factor<T> {
    span: Option<Range<usize>>,
    values: Vec<T>,
}

fn factor<T: Clone, U>(
    ctx: &Ctx,
    key: &str,
    raw: &Key<OneOrMany<T>>,
    default: Vec<U>,
    mut convert: impl FnMut(&T) -> Result<U, String>,
) -> Result<Factor<U>, SpecError> {
    match raw {
        None => Ok(Factor {
            span: None,
            values: default,
        }),
        Some(s) => {
            let items = s.get_ref().to_vec();
            if items.is_empty() {
                return Err(ctx.at(s, key, "the list is empty; give at least one value"));
            }
            let values = items
                .iter()
                .map(|v| convert(v).map_err(|m| ctx.at(s, key, m)))
                .collect::<Result<Vec<U>, _>>()?;
            Ok(Factor {
                span: Some(s.span()),
                values,
            })
        }
    }
}

fn size_of(v: &SizeValue) -> Result<u64, String> {
    match v {
        SizeValue::Bytes(b) => {
            u64::try_from(*b).map_err(|_| format!("{b} is not a size: it is negative"))
        }
        SizeValue::Text(t) => parse_size(t),
    }
}

/// A size that must lie in `min..=max`; the error says the allowed range.
fn size_in(v: &SizeValue, min: u64, max: u64) -> Result<u64, String> {
    let s = size_of(v)?;
    crate::units::check_size_range(s, min, max).map_err(|m| {
        let written = match v {
            SizeValue::Bytes(b) => b.to_string(),
            SizeValue::Text(t) => t.trim().to_string(),
        };
        format!("`{written}` {m}")
    })?;
    Ok(s)
}

fn option_factor(raw: &Key<OptionSets>) -> Factor<Vec<String>> {
    match raw {
        None => Factor {
            span: None,
            values: vec![Vec::new()],
        },
        Some(s) => Factor {
            span: Some(s.span()),
            values: s.get_ref().to_sets(),
        },
    }
}

/// The configurations of the experiment: the matrix of `[filesystem]` and `[journal]`,
/// or, with `[[config]]` tables, the union of one matrix per table (each table's keys
/// override the base sections), for sets a single matrix cannot express (ext4 without
/// a journal, in two modes, and XFS).
fn build_configs(
    ctx: &Ctx,
    raw: &RawSpec,
    models: &BTreeMap<String, DeviceModelSpec>,
) -> Result<Vec<Config>, SpecError> {
    let mut all: Vec<(Config, Spans, Option<String>)> = Vec::new();
    if raw.config.is_empty() {
        for (c, s) in expand(
            ctx,
            &raw.filesystem,
            &raw.journal,
            &raw.memory_limit,
            models,
        )? {
            all.push((c, s, None));
        }
    }
    for entry in &raw.config {
        let e = entry.get_ref();
        let fs = e.filesystem.merged_over(&raw.filesystem);
        let j = e.journal.merged_over(&raw.journal);
        let mem = e.memory_limit.clone().or_else(|| raw.memory_limit.clone());
        let expanded = expand(ctx, &fs, &j, &mem, models)?;
        if all.len() + expanded.len() > MAX_CONFIGS {
            return Err(ctx.at(
                entry,
                "config",
                format!(
                    "the [[config]] tables make more than {MAX_CONFIGS} configurations, the most one experiment may have; split the experiment"
                ),
            ));
        }
        let label = e.label.as_ref().map(|l| l.get_ref().clone());
        if let Some(l) = &e.label {
            if l.get_ref().trim().is_empty() {
                return Err(ctx.at(l, "config.label", "must not be empty"));
            }
        }
        for (c, s) in expanded {
            all.push((c, s, label.clone()));
        }
    }
    assign_labels(&mut all);
    for (c, s, _) in &all {
        check_combination(ctx, c, s)?;
    }
    let mut seen = BTreeSet::new();
    for (c, _, _) in &all {
        if !seen.insert(c.label.clone()) {
            return Err(ctx.err(
                None,
                "",
                format!(
                    "two configurations would both be labelled `{}`; a list repeats a value or two [[config]] tables describe the same configuration",
                    c.label
                ),
            ));
        }
    }
    Ok(all.into_iter().map(|(c, _, _)| c).collect())
}

/// One matrix: every combination of the (list-valued) keys.
fn expand(
    ctx: &Ctx,
    fs: &RawFilesystem,
    j: &RawJournal,
    mem: &Key<OneOrMany<SizeValue>>,
    models: &BTreeMap<String, DeviceModelSpec>,
) -> Result<Vec<(Config, Spans)>, SpecError> {
    let fs_type = factor(
        ctx,
        "filesystem.type",
        &fs.fs_type,
        vec![FsType::Ext4],
        |t: &String| FsType::parse(t),
    )?;
    let fs_size = factor(ctx, "filesystem.size", &fs.size, vec![8 << 30], |v| {
        let s = size_of(v)?;
        if s < MIN_FS_SIZE {
            return Err(format!(
                "{} is too small; a file system needs at least {} (allowed {} to {})",
                format_size(s),
                format_size(MIN_FS_SIZE),
                format_size(MIN_FS_SIZE),
                format_size(MAX_FS_SIZE)
            ));
        }
        size_in(v, MIN_FS_SIZE, MAX_FS_SIZE)
    })?;
    let fs_device = factor(
        ctx,
        "filesystem.device",
        &fs.device,
        vec![None],
        |d: &String| device_path(d).map(Some),
    )?;
    let mkfs = option_factor(&fs.mkfs_options);
    let mount = option_factor(&fs.mount_options);
    let fs_model = factor(
        ctx,
        "filesystem.device_model",
        &fs.device_model,
        vec![None],
        |n: &String| model_of(models, n).map(Some),
    )?;

    let placement = factor(
        ctx,
        "journal.placement",
        &j.placement,
        vec![if j.device.is_some() {
            Placement::Device
        } else {
            Placement::Internal
        }],
        |p: &String| Placement::parse(p),
    )?;
    // `None` here means "not given": which disk the journal then gets depends on the
    // placement (see below).
    let jmodel = factor(
        ctx,
        "journal.device_model",
        &j.device_model,
        vec![None],
        |n: &String| model_of(models, n).map(Some),
    )?;
    let jsize = factor(ctx, "journal.size", &j.size, vec![16 << 20], |v| {
        let s = size_of(v)?;
        if s < MIN_JOURNAL_SIZE {
            return Err(format!(
                "{} is too small; a journal needs at least {} (1024 blocks of 4 KiB; allowed {} to {})",
                format_size(s),
                format_size(MIN_JOURNAL_SIZE),
                format_size(MIN_JOURNAL_SIZE),
                crate::units::describe_size(MAX_JOURNAL_SIZE)
            ));
        }
        if s > MAX_JOURNAL_SIZE {
            return Err(format!(
                "{} is larger than mke2fs allows ({} blocks of 4 KiB; allowed {} to {})",
                format_size(s),
                MAX_JOURNAL_SIZE / 4096,
                format_size(MIN_JOURNAL_SIZE),
                crate::units::describe_size(MAX_JOURNAL_SIZE)
            ));
        }
        if s % 4096 != 0 {
            return Err(format!("{s} bytes is not a whole number of 4 KiB blocks"));
        }
        Ok(s)
    })?;
    let mode = factor(
        ctx,
        "journal.mode",
        &j.mode,
        vec![DataMode::Ordered],
        |m: &String| DataMode::parse(m),
    )?;
    let jdevice = factor(
        ctx,
        "journal.device",
        &j.device,
        vec![None],
        |d: &String| device_path(d).map(Some),
    )?;
    let second = factor(
        ctx,
        "journal.second_disk_dir",
        &j.second_disk_dir,
        vec![None],
        |d: &String| absolute_dir(d).map(Some),
    )?;
    let ramdisk = factor(
        ctx,
        "journal.ramdisk_dir",
        &j.ramdisk_dir,
        vec![PathBuf::from("/dev/shm")],
        |d: &String| absolute_dir(d),
    )?;
    let ramdisk_size = factor(
        ctx,
        "journal.ramdisk_size",
        &j.ramdisk_size,
        vec![None],
        |v| size_in(v, MIN_JOURNAL_SIZE, MAX_MEMORY).map(Some),
    )?;
    let fast_commit = factor(
        ctx,
        "journal.fast_commit",
        &j.fast_commit,
        vec![false],
        |b: &bool| Ok(*b),
    )?;
    let commit = factor(
        ctx,
        "journal.commit",
        &j.commit,
        vec![None],
        |v: &String| {
            let range = format!("allowed 1s to {MAX_COMMIT_SECONDS}s, the most the kernel takes");
            let d = parse_duration(v).map_err(|m| format!("{m}; {range}"))?;
            let secs = d.as_secs();
            if d.subsec_nanos() != 0 || secs == 0 {
                return Err(format!(
                    "`{v}` must be a whole number of seconds, at least 1s ({range})"
                ));
            }
            if secs > MAX_COMMIT_SECONDS {
                return Err(format!("`{v}` is out of range: {range} (INT_MAX / HZ)"));
            }
            let secs = u32::try_from(secs).map_err(|_| format!("`{v}`: {range}"))?;
            Ok(Some(secs))
        },
    )?;
    let memory = factor(ctx, "memory_limit", mem, vec![None], |v| {
        let s = size_of(v)?;
        if s < MIN_MEMORY_LIMIT {
            return Err(format!(
                "{} is too little memory to run a workload in; use at least {} (allowed {} to {})",
                format_size(s),
                format_size(MIN_MEMORY_LIMIT),
                format_size(MIN_MEMORY_LIMIT),
                format_size(MAX_MEMORY)
            ));
        }
        size_in(v, MIN_MEMORY_LIMIT, MAX_MEMORY).map(Some)
    })?;

    let dims = [
        fs_type.values.len(),
        fs_size.values.len(),
        fs_device.values.len(),
        mkfs.values.len(),
        mount.values.len(),
        fs_model.values.len(),
        memory.values.len(),
        placement.values.len(),
        jmodel.values.len(),
        jsize.values.len(),
        mode.values.len(),
        jdevice.values.len(),
        second.values.len(),
        ramdisk.values.len(),
        ramdisk_size.values.len(),
        fast_commit.values.len(),
        commit.values.len(),
    ];
    check_matrix_size(
        ctx,
        &dims,
        [
            fs.size.as_ref().map(|s| s.span()),
            j.placement.as_ref().map(|s| s.span()),
        ],
    )?;
    let spans = |journal_model_asked: Option<DeviceModelSpec>| Spans {
        fs_type: fs_type.span.clone(),
        placement: placement.span.clone(),
        jsize: jsize.span.clone(),
        mode: mode.span.clone(),
        mount: mount.span.clone(),
        mkfs: mkfs.span.clone(),
        jdevice: jdevice.span.clone(),
        fs_device: fs_device.span.clone(),
        fs_size: fs_size.span.clone(),
        ramdisk_size: ramdisk_size.span.clone(),
        fast_commit: fast_commit.span.clone(),
        commit: commit.span.clone(),
        fs_model: fs_model.span.clone(),
        journal_model: jmodel.span.clone(),
        journal_model_asked,
    };
    Ok(cartesian(&dims)
        .into_iter()
        .map(|i| {
            let fs_model = fs_model.values[i[5]].clone();
            let placement = placement.values[i[7]];
            let asked = jmodel.values[i[8]].clone();
            let journal_model = match placement {
                // Two spindles of the same kind unless told otherwise.
                Placement::SecondDisk => asked.clone().or_else(|| fs_model.clone()),
                Placement::Ramdisk => asked.clone(),
                // On the file system's disk, or no disk of its own (checked later).
                _ => None,
            };
            let c = Config {
                label: String::new(),
                fs_type: fs_type.values[i[0]],
                fs_size: fs_size.values[i[1]],
                fs_device: fs_device.values[i[2]].clone(),
                mkfs_options: mkfs.values[i[3]].clone(),
                mount_options: mount.values[i[4]].clone(),
                fs_model,
                memory_limit: memory.values[i[6]],
                placement,
                journal_model,
                journal_size: jsize.values[i[9]],
                mode: mode.values[i[10]],
                journal_device: jdevice.values[i[11]].clone(),
                second_disk_dir: second.values[i[12]].clone(),
                ramdisk_dir: ramdisk.values[i[13]].clone(),
                ramdisk_size: ramdisk_size.values[i[14]],
                fast_commit: fast_commit.values[i[15]],
                commit_seconds: commit.values[i[16]],
            };
            (c, spans(asked))
        })
        .collect())
}

/// The label value of a disk that is not emulated (a plain loop device, tmpfs or a real
/// device), when configurations with and without a model are compared.
const UNEMULATED: &str = "unemulated";

/// A factor that can tell configurations apart: its name in labels and its value.
type LabelFactor = (&'static str, fn(&Config) -> String);

/// In label order: journal first, because that is what the studies vary.
const LABEL_FACTORS: [LabelFactor; 17] = [
    ("", |c| c.placement.to_string()),
    ("journal_model", |c| match c.placement {
        Placement::SecondDisk | Placement::Ramdisk => format!(
            "journal={}",
            c.journal_model
                .as_ref()
                .map_or(UNEMULATED, |m| m.name.as_str())
        ),
        _ => String::new(),
    }),
    ("fs_model", |c| {
        format!(
            "fs={}",
            c.fs_model.as_ref().map_or(UNEMULATED, |m| m.name.as_str())
        )
    }),
    ("", |c| format_size(c.journal_size)),
    ("", |c| c.mode_label().to_string()),
    ("", |c| c.fs_type.to_string()),
    ("fc", |c| {
        if c.fast_commit {
            "fast_commit".into()
        } else {
            "no-fast_commit".into()
        }
    }),
    ("commit", |c| {
        c.commit_seconds
            .map(|s| format!("commit={s}"))
            .unwrap_or_else(|| "commit=default".into())
    }),
    ("", |c| opt_path(&c.journal_device)),
    ("fs", |c| format!("fs{}", format_size(c.fs_size))),
    ("", |c| opt_path(&c.fs_device)),
    ("mkfs", |c| format!("mkfs[{}]", c.mkfs_options.join(" "))),
    ("mount", |c| format!("mount[{}]", c.mount_options.join(","))),
    ("mem", |c| {
        c.memory_limit
            .map(|m| format!("mem{}", format_size(m)))
            .unwrap_or_else(|| "mem-unlimited".into())
    }),
    ("", |c| opt_path(&c.second_disk_dir)),
    ("", |c| c.ramdisk_dir.display().to_string()),
    ("", |c| match (c.placement, c.ramdisk_size) {
        (Placement::Ramdisk, Some(s)) => format!("ramdisk{}", format_size(s)),
        (Placement::Ramdisk, None) => "ramdisk-journal-sized".into(),
        _ => String::new(),
    }),
];

/// Labels are made of the factor values that vary across all configurations; a
/// `[[config]]` label names its configuration (or prefixes its matrix's labels).
fn assign_labels(all: &mut [(Config, Spans, Option<String>)]) {
    // An empty value means the factor does not apply to that configuration.
    let varying: Vec<&LabelFactor> = LABEL_FACTORS
        .iter()
        .filter(|(_, f)| {
            let values: BTreeSet<String> = all
                .iter()
                .map(|(c, _, _)| f(c))
                .filter(|v| !v.is_empty())
                .collect();
            values.len() > 1
        })
        .collect();
    let mut per_label: std::collections::BTreeMap<Option<String>, usize> = Default::default();
    for (_, _, l) in all.iter() {
        *per_label.entry(l.clone()).or_default() += 1;
    }
    for (c, _, given) in all.iter_mut() {
        let mut parts: Vec<String> = varying
            .iter()
            .map(|(_, f)| f(c))
            .filter(|v| !v.is_empty())
            .collect();
        if parts.is_empty() {
            parts.push(c.placement.to_string());
        }
        let generated = parts.join(",");
        c.label = match given {
            Some(l) if per_label[&Some(l.clone())] == 1 => l.clone(),
            Some(l) => format!("{l},{generated}"),
            None => generated,
        };
    }
}

/// Refuses a matrix of more than [`MAX_CONFIGS`] configurations before it is built
/// (seventeen lists of ten values would be 10^17).
fn check_matrix_size(
    ctx: &Ctx,
    dims: &[usize],
    spans: [Option<Range<usize>>; 2],
) -> Result<(), SpecError> {
    let total = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_CONFIGS);
    if total.is_some() {
        return Ok(());
    }
    let product: Vec<String> = dims
        .iter()
        .filter(|&&d| d > 1)
        .map(|d| d.to_string())
        .collect();
    Err(ctx.err(
        spans.into_iter().flatten().next(),
        "",
        format!(
            "the lists make {} configurations; at most {MAX_CONFIGS} are allowed (a study runs each several times): shorten the lists or split the experiment",
            product.join(" x ")
        ),
    ))
}

/// Every index combination of the given dimensions, the last varying fastest (the
/// order nested loops would give).
fn cartesian<const N: usize>(dims: &[usize; N]) -> Vec<[usize; N]> {
    let total: usize = dims.iter().product();
    (0..total)
        .map(|mut k| {
            let mut idx = [0; N];
            for d in (0..N).rev() {
                idx[d] = k % dims[d];
                k /= dims[d];
            }
            idx
        })
        .collect()
}

struct Spans {
    fs_type: Option<Range<usize>>,
    placement: Option<Range<usize>>,
    jsize: Option<Range<usize>>,
    mode: Option<Range<usize>>,
    mount: Option<Range<usize>>,
    mkfs: Option<Range<usize>>,
    jdevice: Option<Range<usize>>,
    fs_device: Option<Range<usize>>,
    fs_size: Option<Range<usize>>,
    ramdisk_size: Option<Range<usize>>,
    fast_commit: Option<Range<usize>>,
    commit: Option<Range<usize>>,
    fs_model: Option<Range<usize>>,
    journal_model: Option<Range<usize>>,
    /// What `journal.device_model` asked for (`Config::journal_model` is what the
    /// placement makes of it).
    journal_model_asked: Option<DeviceModelSpec>,
}

fn opt_path(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "image".into())
}

fn device_path(d: &String) -> Result<PathBuf, String> {
    if !d.starts_with("/dev/") {
        return Err(format!("`{d}` is not a device path (expected /dev/...)"));
    }
    Ok(PathBuf::from(d))
}

fn absolute_dir(d: &String) -> Result<PathBuf, String> {
    if !Path::new(d).is_absolute() {
        return Err(format!("`{d}` must be an absolute path"));
    }
    Ok(PathBuf::from(d))
}

#[cfg(test)]
mod tests;
