//! `kind = "command"`: any program the user brings (a script, dbench, the original
//! fdtree.bash), run in the trial's mount point inside jbench's laboratory.
//!
//! Phases come one of three ways: the whole command timed by jbench (`command`),
//! named regular expressions matched against its stdout (`[[workload.phase]]`), or a
//! JSON document it writes (`json`, with the names declared in `phases`).
//!
//! Here: the spec and its checks; `exec.rs` runs a command in its own process group
//! and kills what it leaves behind; `phases.rs` turns output into phases; `cli.rs` is
//! `jbench workload command`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;

use super::{
    reject_unknown, table_bool, table_size, table_u64, ParamError, PhaseResult, RunControl,
    Workload,
};
use crate::units::{format_duration, parse_duration_in};

mod cli;
mod exec;
pub mod kind;
mod phases;
pub use cli::*;
pub use exec::*;
pub use phases::*;

/// Timeout when the spec gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Timeout of a `recover` when the spec gives none: an application's start-up on a
/// crash state, its WAL replayed, on a slow emulated disk.
pub const DEFAULT_RECOVER_TIMEOUT: Duration = Duration::from_secs(300);

/// The environment variable naming the file a `recover` command creates when the
/// application it started is ready (a server); one that exits 0 is ready too.
pub const READY_ENV: &str = "JBENCH_READY";

/// The environment variable holding the second file system's mount point
/// (`filesystem.second_size`), for the run, check, recover and stop alike.
pub const SECOND_FS_ENV: &str = "JBENCH_SECOND_FS";
/// The workload's `neighbour_rate` in bytes per second (0: none), for the command to
/// log or to scale its own load by; jbench runs the neighbour itself.
pub const NEIGHBOUR_RATE_ENV: &str = "JBENCH_NEIGHBOUR_RATE";

/// Timeout of a `check` when the spec gives none: a consistency check of one crash
/// state should take seconds.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that names the promise channel: a command appends
/// `durable PATH` (or `durable PATH sha256=HEX`) lines to it after its own fsync.
pub const DURABLE_ENV: &str = "JBENCH_DURABLE";

/// The phase name when jbench times the whole command.
pub const WHOLE_PHASE: &str = "command";

const KEYS: [&str; 17] = [
    "check",
    "check_timeout",
    "recover",
    "recover_timeout",
    "stop",
    "run",
    "shell",
    "user",
    "timeout",
    "setup",
    "teardown",
    "env",
    "phase",
    "json",
    "phases",
    "data_bytes",
    "inodes",
];

/// A user to run the command as, resolved when the spec is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// One phase read from stdout with a regular expression.
#[derive(Debug, Clone)]
pub struct PatternPhase {
    pub name: String,
    pub pattern: Regex,
    /// Capture group holding seconds.
    pub seconds: String,
    pub ops: Option<String>,
    pub bytes: Option<String>,
    pub unit: Option<String>,
}

/// Where the phases come from.
#[derive(Debug, Clone)]
pub enum PhaseSource {
    /// One phase, `command`, timed by jbench.
    Whole,
    Patterns(Vec<PatternPhase>),
    /// A JSON document at this path relative to the mount point (`-`: stdout).
    Json {
        path: String,
        names: Vec<String>,
    },
}

/// What `[[workload]] kind = "command"` describes.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// The argv as written (`shell`: one string).
    pub run: Vec<String>,
    pub shell: bool,
    pub user: Option<RunAs>,
    pub timeout: Duration,
    pub setup: Option<Vec<String>>,
    pub teardown: Option<Vec<String>>,
    pub env: BTreeMap<String, String>,
    pub phases: PhaseSource,
    /// Stated by the user: jbench cannot know what a command writes.
    pub data_bytes: u64,
    pub inodes: u64,
    /// The application's own consistency check, run by the crash lab in every
    /// recovered state's mount point (as `user`); exit 0 means consistent.
    pub check: Option<Vec<String>>,
    pub check_timeout: Duration,
    /// The application's own recovery on a recovered state, run before `check` and
    /// timed: it starts the application (a server stays up for the check).
    pub recover: Option<Vec<String>>,
    pub recover_timeout: Duration,
    /// Stops what `recover` started, after the check.
    pub stop: Option<Vec<String>>,
}

impl CommandSpec {
    /// A plain argv, timed whole, with the defaults.
    pub fn new(run: Vec<String>) -> Self {
        CommandSpec {
            run,
            shell: false,
            user: None,
            timeout: DEFAULT_TIMEOUT,
            setup: None,
            teardown: None,
            env: BTreeMap::new(),
            phases: PhaseSource::Whole,
            data_bytes: 0,
            inodes: 0,
            check: None,
            check_timeout: DEFAULT_CHECK_TIMEOUT,
            recover: None,
            recover_timeout: DEFAULT_RECOVER_TIMEOUT,
            stop: None,
        }
    }

    /// An argv as the spec wrote it: a shell string stays one string.
    fn as_written(&self, argv: &[String]) -> serde_json::Value {
        match (self.shell, argv) {
            (true, [sh, dash_c, line]) if sh == "/bin/sh" && dash_c == "-c" => line.clone().into(),
            _ => argv.to_vec().into(),
        }
    }

    /// The argv actually executed.
    pub fn argv(&self) -> Vec<String> {
        if self.shell {
            vec!["/bin/sh".into(), "-c".into(), self.run[0].clone()]
        } else {
            self.run.clone()
        }
    }
}

/// A command workload's `check`, as the crash lab runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSpec {
    pub argv: Vec<String>,
    pub user: Option<RunAs>,
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
    /// `recover`, `recover_timeout` and `stop`, as the spec gave them.
    pub recover: Option<Vec<String>>,
    pub recover_timeout: Duration,
    pub stop: Option<Vec<String>>,
}

/// The `check` of a command workload back from its recorded `params` (trials.jsonl),
/// for the crash lab. `None` without a check.
pub fn check_of(params: &serde_json::Value) -> Option<CheckSpec> {
    let shell = params
        .get("shell")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let argv_of = |key: &str| -> Option<Vec<String>> {
        match params.get(key)? {
            serde_json::Value::String(s) if shell => {
                Some(vec!["/bin/sh".into(), "-c".into(), s.clone()])
            }
            serde_json::Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>(),
            _ => None,
        }
    };
    let argv = argv_of("check")?;
    let duration_of = |key: &str, default: Duration| {
        params
            .get(key)
            .and_then(|v| v.as_str())
            .and_then(|s| {
                parse_duration_in(s, Duration::from_millis(100), Duration::from_secs(86_400)).ok()
            })
            .unwrap_or(default)
    };
    let user = params
        .get("user")
        .and_then(|v| v.as_str())
        .and_then(|n| resolve_user(n).ok());
    let env = params
        .get("env")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    Some(CheckSpec {
        argv,
        user,
        env,
        timeout: duration_of("check_timeout", DEFAULT_CHECK_TIMEOUT),
        recover: argv_of("recover"),
        recover_timeout: duration_of("recover_timeout", DEFAULT_RECOVER_TIMEOUT),
        stop: argv_of("stop"),
    })
}

/// An argv for a one-line message: a shell script by its first line that is not a
/// comment, cut at 60 characters (the spec holds the whole script).
pub fn brief(argv: &[String]) -> String {
    let text = match argv {
        [sh, dash_c, script] if sh == "/bin/sh" && dash_c == "-c" => {
            let lines: Vec<&str> = script
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect();
            match lines.as_slice() {
                [] => String::new(),
                [one] => one.to_string(),
                [first, rest @ ..] => format!("{first} ... ({} more lines)", rest.len()),
            }
        }
        _ => argv.join(" "),
    };
    if text.chars().count() > 80 {
        let cut: String = text.chars().take(60).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// Resolves a user name, refusing one the system does not know.
pub fn resolve_user(name: &str) -> Result<RunAs, String> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(RunAs {
            name: name.to_string(),
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        }),
        Ok(None) => Err(format!("no user `{name}` on this machine")),
        Err(e) => Err(format!("cannot look up user `{name}`: {e}")),
    }
}

fn string_list(t: &toml::Table, key: &str) -> Result<Option<Vec<String>>, ParamError> {
    let bad = || {
        ParamError::new(
            key,
            "expected a non-empty list of strings, e.g. [\"prog\", \"arg\"]",
        )
    };
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::Array(a)) => {
            let v: Option<Vec<String>> = a.iter().map(|x| x.as_str().map(str::to_string)).collect();
            match v {
                Some(v) if !v.is_empty() && !v[0].is_empty() => Ok(Some(v)),
                _ => Err(bad()),
            }
        }
        Some(_) => Err(bad()),
    }
}

fn opt_string(t: &toml::Table, key: &str) -> Result<Option<String>, ParamError> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(v) => Err(ParamError::new(
            key,
            format!("expected a non-empty string, found {v}"),
        )),
    }
}

fn pattern_phase(i: usize, v: &toml::Value) -> Result<PatternPhase, ParamError> {
    let t = v
        .as_table()
        .ok_or_else(|| ParamError::new("phase", "each [[workload.phase]] must be a table"))?;
    let name = opt_string(t, "name")
        .ok()
        .flatten()
        .ok_or_else(|| ParamError::new("phase", format!("phase #{} needs a name", i + 1)))?;
    let blame = |msg: String| ParamError::new("phase", format!("phase `{name}`: {msg}"));
    for k in t.keys() {
        if !["name", "pattern", "seconds", "ops", "bytes", "unit"].contains(&k.as_str()) {
            return Err(blame(format!(
                "unknown key `{k}` (known: name, pattern, seconds, ops, bytes, unit)"
            )));
        }
    }
    let get = |k: &str| opt_string(t, k).map_err(|e| blame(format!("`{k}`: {}", e.message)));
    let text = get("pattern")?.ok_or_else(|| blame("needs a `pattern`".into()))?;
    let pattern = Regex::new(&text).map_err(|e| blame(format!("bad pattern: {e}")))?;
    let groups: Vec<&str> = pattern.capture_names().flatten().collect();
    let group = |k: &str| -> Result<Option<String>, ParamError> {
        let g = get(k)?;
        if let Some(g) = &g {
            if !groups.contains(&g.as_str()) {
                return Err(blame(format!(
                    "`{k} = \"{g}\"` names no group of the pattern (its named groups: {})",
                    if groups.is_empty() {
                        "none; write (?P<name>...)".to_string()
                    } else {
                        groups.join(", ")
                    }
                )));
            }
        }
        Ok(g)
    };
    let seconds = group("seconds")?.ok_or_else(|| blame("needs `seconds = \"group\"`".into()))?;
    Ok(PatternPhase {
        ops: group("ops")?,
        bytes: group("bytes")?,
        unit: get("unit")?,
        name,
        pattern,
        seconds,
    })
}

/// The timeout `key` of a crash-lab step, which may be given only with its step
/// (`of`: the step's key when the spec has it).
fn step_timeout(
    t: &toml::Table,
    key: &str,
    default: Duration,
    of: Option<&str>,
) -> Result<Duration, ParamError> {
    let given = opt_string(t, key)?;
    if given.is_some() && of.is_none() {
        let step = key.trim_end_matches("_timeout");
        return Err(ParamError::new(key, format!("only with `{step}`")));
    }
    match given {
        None => Ok(default),
        Some(s) => parse_duration_in(&s, Duration::from_millis(100), Duration::from_secs(86_400))
            .map_err(|e| ParamError::new(key, e)),
    }
}

/// Reads and checks a `[[workload]] kind = "command"` table.
pub fn spec_from_table(t: &toml::Table) -> Result<CommandSpec, ParamError> {
    reject_unknown(t, &KEYS)?;
    let shell = table_bool(t, "shell", false)?;
    let run = match (t.get("run"), shell) {
        (None, _) => return Err(ParamError::new("run", "missing: the command to run, e.g. run = [\"dbench\", \"4\"]")),
        (Some(toml::Value::String(s)), true) if !s.trim().is_empty() => vec![s.clone()],
        (Some(toml::Value::String(_)), false) => {
            return Err(ParamError::new("run", "a string is run by a shell only with shell = true; otherwise give a list [\"argv0\", \"arg\", ...]"))
        }
        _ => string_list(t, "run")?.unwrap_or_default(),
    };
    if run.is_empty() || run[0].trim().is_empty() {
        return Err(ParamError::new("run", "must not be empty"));
    }
    if shell && run.len() != 1 {
        return Err(ParamError::new(
            "run",
            "with shell = true, give one string (the shell command line)",
        ));
    }
    let user = opt_string(t, "user")?
        .map(|n| resolve_user(&n).map_err(|e| ParamError::new("user", e)))
        .transpose()?;
    let timeout = match opt_string(t, "timeout")? {
        None => DEFAULT_TIMEOUT,
        Some(s) => parse_duration_in(
            &s,
            Duration::from_millis(100),
            Duration::from_secs(7 * 86_400),
        )
        .map_err(|e| ParamError::new("timeout", e))?,
    };
    let env = match t.get("env") {
        None => BTreeMap::new(),
        Some(toml::Value::Table(e)) => e
            .iter()
            .map(|(k, v)| match v.as_str() {
                Some(s) if !k.is_empty() && !k.contains('=') => Ok((k.clone(), s.to_string())),
                _ => Err(ParamError::new(
                    "env",
                    format!("`{k}` must be a name without `=` with a string value"),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ParamError::new(
                "env",
                "expected a table, e.g. env = { KEY = \"value\" }",
            ))
        }
    };
    let json = opt_string(t, "json")?;
    let declared = string_list(t, "phases")?;
    let patterns = match t.get("phase") {
        None => None,
        Some(toml::Value::Array(a)) if !a.is_empty() => Some(
            a.iter()
                .enumerate()
                .map(|(i, v)| pattern_phase(i, v))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => {
            return Err(ParamError::new(
                "phase",
                "expected [[workload.phase]] tables",
            ))
        }
    };
    let phases = match (json, declared, patterns) {
        (Some(_), _, Some(_)) => {
            return Err(ParamError::new("json", "give either `json` or [[workload.phase]] patterns, not both"))
        }
        (Some(path), Some(names), None) => {
            if path != "-" && (Path::new(&path).is_absolute() || path.split('/').any(|c| c == "..")) {
                return Err(ParamError::new("json", "must be `-` (stdout) or a path inside the mount point, without `..`"));
            }
            PhaseSource::Json { path, names }
        }
        (Some(_), None, None) => {
            return Err(ParamError::new("phases", "with `json`, declare the phase names the document holds, e.g. phases = [\"load\", \"run\"]"))
        }
        (None, Some(_), _) => return Err(ParamError::new("phases", "only with `json` (patterns name their phases)")),
        (None, None, Some(p)) => PhaseSource::Patterns(p),
        (None, None, None) => PhaseSource::Whole,
    };
    let names = match &phases {
        PhaseSource::Whole => vec![WHOLE_PHASE.to_string()],
        PhaseSource::Patterns(p) => p.iter().map(|p| p.name.clone()).collect(),
        PhaseSource::Json { names, .. } => names.clone(),
    };
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(ParamError::new(
                "phase",
                format!("phase `{n}` is declared twice"),
            ));
        }
    }
    // Only the whole-command phase has a jbench clock that a syncfs can extend.
    if table_bool(t, "durable", false)? && !matches!(phases, PhaseSource::Whole) {
        return Err(ParamError::new(
            "durable",
            "applies only to a command timed whole (no patterns, no json)",
        ));
    }
    // `check`, `recover` and `stop` like `run`: a list, or one string for the shell
    // with shell = true.
    let argv_key = |key: &str| -> Result<Option<Vec<String>>, ParamError> {
        match (t.get(key), shell) {
            (None, _) => Ok(None),
            (Some(toml::Value::String(s)), true) if !s.trim().is_empty() => {
                Ok(Some(vec!["/bin/sh".to_string(), "-c".to_string(), s.clone()]))
            }
            (Some(toml::Value::String(_)), false) => Err(ParamError::new(key, "a string is run by a shell only with shell = true; otherwise give a list [\"argv0\", \"arg\", ...]")),
            _ => string_list(t, key),
        }
    };
    let check = argv_key("check")?;
    let recover = argv_key("recover")?;
    let stop = argv_key("stop")?;
    if check.is_none() && recover.is_some() {
        return Err(ParamError::new("recover", "only with `check`: the application's recovery is timed on the crash states its check judges"));
    }
    if recover.is_none() && stop.is_some() {
        return Err(ParamError::new(
            "stop",
            "only with `recover` (it stops what recover started)",
        ));
    }
    let recover_timeout = step_timeout(
        t,
        "recover_timeout",
        DEFAULT_RECOVER_TIMEOUT,
        recover.is_some().then_some("recover"),
    )?;
    let check_timeout = step_timeout(
        t,
        "check_timeout",
        DEFAULT_CHECK_TIMEOUT,
        check.is_some().then_some("check"),
    )?;
    Ok(CommandSpec {
        check,
        check_timeout,
        recover,
        recover_timeout,
        stop,
        run,
        shell,
        user,
        timeout,
        setup: string_list(t, "setup")?,
        teardown: string_list(t, "teardown")?,
        env,
        phases,
        data_bytes: table_size(t, "data_bytes", 0)?,
        inodes: table_u64(t, "inodes", 0)?,
    })
}

pub fn from_table(t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    Ok(Arc::new(spec_from_table(t)?))
}

impl Workload for CommandSpec {
    fn kind(&self) -> &'static str {
        "command"
    }

    /// The experiment file's own keys, so the resolved spec reads back the same.
    fn params(&self) -> serde_json::Value {
        let mut p = serde_json::Map::new();
        p.insert(
            "run".into(),
            if self.shell {
                self.run[0].clone().into()
            } else {
                self.run.clone().into()
            },
        );
        p.insert("shell".into(), self.shell.into());
        if let Some(u) = &self.user {
            p.insert("user".into(), u.name.clone().into());
        }
        p.insert("timeout".into(), format_duration(self.timeout).into());
        if let Some(s) = &self.setup {
            p.insert("setup".into(), s.clone().into());
        }
        if let Some(s) = &self.teardown {
            p.insert("teardown".into(), s.clone().into());
        }
        if !self.env.is_empty() {
            p.insert(
                "env".into(),
                serde_json::to_value(&self.env).unwrap_or_default(),
            );
        }
        match &self.phases {
            PhaseSource::Whole => {}
            PhaseSource::Patterns(ps) => {
                let list: Vec<serde_json::Value> = ps
                    .iter()
                    .map(|ph| {
                        let mut m = serde_json::json!({"name": ph.name, "pattern": ph.pattern.as_str(), "seconds": ph.seconds});
                        for (k, v) in [("ops", &ph.ops), ("bytes", &ph.bytes), ("unit", &ph.unit)] {
                            if let Some(v) = v {
                                m[k] = v.clone().into();
                            }
                        }
                        m
                    })
                    .collect();
                p.insert("phase".into(), list.into());
            }
            PhaseSource::Json { path, names } => {
                p.insert("json".into(), path.clone().into());
                p.insert("phases".into(), names.clone().into());
            }
        }
        p.insert("data_bytes".into(), self.data_bytes.into());
        p.insert("inodes".into(), self.inodes.into());
        if let Some(c) = &self.check {
            let v = self.as_written(c);
            p.insert("check".into(), v);
            p.insert(
                "check_timeout".into(),
                format_duration(self.check_timeout).into(),
            );
        }
        for (key, argv) in [("recover", &self.recover), ("stop", &self.stop)] {
            if let Some(a) = argv {
                p.insert(key.into(), self.as_written(a));
            }
        }
        if self.recover.is_some() {
            p.insert(
                "recover_timeout".into(),
                format_duration(self.recover_timeout).into(),
            );
        }
        p.into()
    }

    /// `command-<program>`: the program's file name (`sh` with a shell).
    fn default_name(&self) -> String {
        let argv = self.argv();
        let prog = Path::new(&argv[0])
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "run".into());
        format!("command-{prog}")
    }

    fn phase_names(&self) -> Vec<String> {
        match &self.phases {
            PhaseSource::Whole => vec![WHOLE_PHASE.to_string()],
            PhaseSource::Patterns(p) => p.iter().map(|p| p.name.clone()).collect(),
            PhaseSource::Json { names, .. } => names.clone(),
        }
    }

    fn peak_data_bytes(&self) -> u64 {
        self.data_bytes
    }

    fn peak_inodes(&self) -> u64 {
        self.inodes
    }

    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        exec::run_spec(self, dir, ctl)
    }
}

#[cfg(test)]
mod tests;
