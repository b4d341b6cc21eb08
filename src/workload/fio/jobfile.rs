//! Reading an fio job file and deciding, before any trial, whether it stays inside the
//! laboratory: what it may touch, how much it writes, and which phases it reports.

use crate::units::format_size;

/// ioengines that only do file I/O through the kernel: none needs hardware or a
/// service jbench did not provision (no spdk, rdma, sg, nbd, network, external).
pub const SAFE_ENGINES: [&str; 15] = [
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "null",
];

/// Options naming a file fio writes or reads outside its `--directory` (logs are
/// relative to fio's working directory: the trial's output folder).
const PATH_OPTIONS: [&str; 9] = [
    "filename",
    "filename_format",
    "opendir",
    "write_iolog",
    "read_iolog",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
];

/// More clones than this is a typo, not an experiment.
const MAX_NUMJOBS: u64 = 1024;

/// One `key[=value]` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub line: usize,
}

/// One job section with the `[global]` options in force where it stands (fio applies
/// a `[global]` section to the jobs after it only).
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub section: String,
    pub line: usize,
    pub globals: Vec<Opt>,
    pub opts: Vec<Opt>,
}

/// A direction fio reports apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dir {
    Read,
    Write,
    Trim,
}

impl Dir {
    pub const ALL: [Dir; 3] = [Dir::Read, Dir::Write, Dir::Trim];

    /// fio's key for it in the JSON output, and the phase suffix.
    pub fn key(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        }
    }
}

/// One entry of fio's JSON `jobs[]`: a job, or consecutive jobs merged by
/// `group_reporting`, reported under the first one's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// fio's `jobname` of the entry (the first merged job's name).
    pub jobname: String,
    /// Phase prefix: the jobname, made unique with `.N` when clones of one job
    /// (`numjobs` without `group_reporting`) report apart under one name.
    pub phase: String,
    pub dirs: Vec<Dir>,
}

impl Entry {
    pub fn phase_name(&self, d: Dir) -> String {
        format!("{}:{}", self.phase, d.key())
    }
}

/// A checked job file.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    pub jobs: Vec<Job>,
    pub entries: Vec<Entry>,
    /// Bytes of data the jobs lay out: `size` x `numjobs`, summed.
    pub data_bytes: u64,
    /// Files the jobs lay out: `nrfiles` x `numjobs`, summed.
    pub files: u64,
}

/// Why a job file is refused: the option and its line (0: the file as a whole).
#[derive(Debug, Clone, PartialEq)]
pub struct JobError {
    pub line: usize,
    pub option: String,
    pub message: String,
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.option.is_empty()) {
            (0, _) => write!(f, "{}", self.message),
            (l, true) => write!(f, "line {l}: {}", self.message),
            (l, false) => write!(f, "line {l}: option `{}`: {}", self.option, self.message),
        }
    }
}

fn refuse(o: &Opt, message: impl Into<String>) -> JobError {
    JobError {
        line: o.line,
        option: o.key.clone(),
        message: message.into(),
    }
}

impl Job {
    /// The value in force for `key`: the job's own last one, else the last global.
    pub fn get(&self, key: &str) -> Option<&Opt> {
        self.opts
            .iter()
            .rev()
            .find(|o| o.key == key)
            .or_else(|| self.globals.iter().rev().find(|o| o.key == key))
    }

    /// Boolean options: bare `key` or a non-zero value switch them on.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(|o| match o.value.as_deref() {
            None => true,
            Some(v) => !matches!(v.trim(), "0" | "false" | ""),
        })
    }

    /// fio's job name: `name=` or the section's.
    pub fn name(&self) -> String {
        self.opts
            .iter()
            .rev()
            .find(|o| o.key == "name")
            .and_then(|o| o.value.clone())
            .unwrap_or_else(|| self.section.clone())
    }

    fn number(&self, key: &str, default: u64) -> Result<u64, JobError> {
        match self.get(key) {
            None => Ok(default),
            Some(o) => o
                .value
                .as_deref()
                .and_then(parse_fio_size)
                .ok_or_else(|| refuse(o, "expected a whole number")),
        }
    }

    /// The directions `rw` makes the job do.
    pub fn dirs(&self) -> Result<Vec<Dir>, JobError> {
        let opt = self.get("rw").or_else(|| self.get("readwrite"));
        let rw = opt.and_then(|o| o.value.as_deref()).unwrap_or("read");
        // `rw=randread:8` (an offset modifier) names the same direction.
        let verb = rw.split(':').next().unwrap_or("").trim();
        Ok(match verb {
            "read" | "randread" => vec![Dir::Read],
            "write" | "randwrite" => vec![Dir::Write],
            "trim" | "randtrim" => vec![Dir::Trim],
            "rw" | "readwrite" | "randrw" => vec![Dir::Read, Dir::Write],
            "trimwrite" | "randtrimwrite" => vec![Dir::Write, Dir::Trim],
            other => {
                return Err(refuse(
                    opt.expect("a bad verb came from an option"),
                    format!("unknown direction `{other}` (read, write, randrw, trim, ...)"),
                ))
            }
        })
    }
}

/// fio's size syntax as far as laying out files needs: a whole number with an
/// optional k/m/g/t/p suffix (1024-based, `b`, `ib` allowed). `None` otherwise.
pub fn parse_fio_size(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let digits = v.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = v[..digits].parse().ok()?;
    let shift = match v[digits..].trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// Splits the text into sections and options (no checks beyond the syntax).
pub fn parse(text: &str) -> Result<Vec<Job>, JobError> {
    let mut globals: Vec<Opt> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    // Where options go: the global list, or the last job.
    let mut in_global: Option<bool> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']').map(str::trim) else {
                return Err(JobError {
                    line,
                    option: String::new(),
                    message: format!("`{l}`: a section line is `[name]`"),
                });
            };
            if name.is_empty() {
                return Err(JobError {
                    line,
                    option: String::new(),
                    message: "empty section name".into(),
                });
            }
            if name == "global" {
                in_global = Some(true);
            } else {
                in_global = Some(false);
                jobs.push(Job {
                    section: name.to_string(),
                    line,
                    globals: globals.clone(),
                    opts: Vec::new(),
                });
            }
            continue;
        }
        let (key, value) = match l.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (l, None),
        };
        let key = key.to_ascii_lowercase();
        // `include other.fio` would bring in options these checks never saw.
        if key.starts_with("include ") || key == "include" {
            return Err(JobError {
                line,
                option: "include".into(),
                message: "including other job files is refused: put every option in this \
                          file, so jbench can check it"
                    .into(),
            });
        }
        let opt = Opt { key, value, line };
        match in_global {
            None => {
                return Err(refuse(
                    &opt,
                    "options must follow a section line ([global] or [job-name])",
                ))
            }
            Some(true) => globals.push(opt),
            Some(false) => jobs.last_mut().expect("a job section").opts.push(opt),
        }
    }
    if jobs.is_empty() {
        return Err(JobError {
            line: 0,
            option: String::new(),
            message: "the job file has no job section ([name] other than [global])".into(),
        });
    }
    Ok(jobs)
}

/// Refuses one option that would leave the laboratory.
fn check_option(o: &Opt) -> Result<(), JobError> {
    let value = o.value.as_deref().unwrap_or("");
    // fio expands `${VAR}` from its environment anywhere in a job file, which
    // would bypass the path checks below.
    if value.contains("${") {
        return Err(refuse(
            o,
            "environment variables (${...}) are refused: write the value out",
        ));
    }
    let k = o.key.as_str();
    if k == "directory" {
        return Err(refuse(
            o,
            "jbench sets the directory: the files go on the trial's file system",
        ));
    }
    if k == "ioengine" {
        let engine = value.trim();
        if !SAFE_ENGINES.contains(&engine) {
            return Err(refuse(
                o,
                format!(
                    "ioengine `{engine}` needs hardware or services jbench did not provision \
                     (allowed: {})",
                    SAFE_ENGINES.join(", ")
                ),
            ));
        }
    }
    if k.starts_with("exec_") || k.starts_with("trigger") {
        return Err(refuse(
            o,
            "running commands from a job file is refused (use kind = \"command\")",
        ));
    }
    if k.starts_with("cgroup") {
        return Err(refuse(
            o,
            "jbench runs the trial in its own memory cgroup; fio may not move jobs out of it",
        ));
    }
    if k.starts_with("numa_") {
        return Err(refuse(
            o,
            "NUMA placement changes memory policy outside the trial's control",
        ));
    }
    if k == "ioscheduler" {
        return Err(refuse(
            o,
            "changing the device's I/O scheduler is the configuration's business, not the job's",
        ));
    }
    if k == "replay_redirect" {
        return Err(refuse(o, "redirecting a replay to a device is refused"));
    }
    if k == "zonemode" && value.trim() != "none" {
        return Err(refuse(
            o,
            "zoned block devices are not provisioned by jbench",
        ));
    }
    if PATH_OPTIONS.contains(&k) {
        // `filename=a:b` lists several files.
        for part in value.split(':').filter(|p| !p.is_empty()) {
            let p = part.trim();
            if p.starts_with("/dev") || p.starts_with("\\\\.\\") {
                return Err(refuse(
                    o,
                    format!("`{p}` is a device; only files on the trial's file system may be used"),
                ));
            }
            if p.starts_with('/') {
                return Err(refuse(
                    o,
                    format!("`{p}` is absolute; give a path relative to the trial's directory"),
                ));
            }
            if p.split('/').any(|c| c == "..") {
                return Err(refuse(
                    o,
                    format!("`{p}` leaves the trial's directory (`..`)"),
                ));
            }
        }
    }
    if matches!(k, "size" | "filesize" | "io_size" | "io_limit") && value.contains('%') {
        return Err(refuse(
            o,
            "a percentage of the device is refused: give bytes, so the capacity can be checked",
        ));
    }
    Ok(())
}

/// Parses and checks a job file: every refusal names the option and its line.
pub fn check(text: &str) -> Result<JobFile, JobError> {
    let jobs = parse(text)?;
    let mut seen_global = std::collections::HashSet::new();
    for job in &jobs {
        for o in &job.globals {
            if seen_global.insert(o.line) {
                check_option(o)?;
            }
        }
        for o in &job.opts {
            check_option(o)?;
        }
    }
    let mut data_bytes: u64 = 0;
    let mut files: u64 = 0;
    for job in &jobs {
        let name = job.name();
        let no_size = || JobError {
            line: job.line,
            option: "size".into(),
            message: format!(
                "job `{name}` has no size: give `size=` in it or in [global], so the \
                 file system's capacity can be checked"
            ),
        };
        let size_opt = job.get("size").ok_or_else(no_size)?;
        let size = size_opt
            .value
            .as_deref()
            .and_then(parse_fio_size)
            .ok_or_else(|| refuse(size_opt, "expected bytes such as 4096, 64k or 4M"))?;
        if size == 0 {
            return Err(refuse(size_opt, "must be more than 0"));
        }
        let numjobs = job.number("numjobs", 1)?;
        if numjobs == 0 || numjobs > MAX_NUMJOBS {
            let o = job
                .get("numjobs")
                .expect("a bad count came from the option");
            return Err(refuse(o, format!("must be 1 to {MAX_NUMJOBS}")));
        }
        let nrfiles = job.number("nrfiles", 1)?.max(1);
        data_bytes = data_bytes.saturating_add(size.saturating_mul(numjobs));
        files = files.saturating_add(nrfiles.saturating_mul(numjobs));
        if job.flag("time_based") {
            let runtime = job
                .get("runtime")
                .and_then(|o| o.value.as_deref())
                .map(|v| v.trim().trim_end_matches('s'))
                .and_then(|v| v.parse::<u64>().ok());
            if runtime.is_none_or(|r| r == 0) {
                let o = job.get("time_based").expect("time_based is set");
                return Err(refuse(
                    o,
                    format!(
                        "job `{name}` is time_based but has no runtime (seconds, e.g. runtime=30): \
                         it would run until killed"
                    ),
                ));
            }
        }
        job.dirs()?;
    }
    let entries = entries(&jobs)?;
    Ok(JobFile {
        jobs,
        entries,
        data_bytes,
        files,
    })
}

/// The entries of fio's JSON `jobs[]`, as fio's own reporting makes them: each job
/// clone starts one, unless it has `group_reporting` and is in the same reporting
/// group as the clone before (then it is merged into that one's entry). A job with
/// `stonewall`, `wait_for_previous` or `new_group` starts a new group.
pub fn entries(jobs: &[Job]) -> Result<Vec<Entry>, JobError> {
    let mut out: Vec<Entry> = Vec::new();
    let mut group = 0u64;
    let mut last_group: Option<u64> = None;
    for (i, job) in jobs.iter().enumerate() {
        if i > 0
            && (job.flag("stonewall") || job.flag("wait_for_previous") || job.flag("new_group"))
        {
            group += 1;
        }
        let dirs = job.dirs()?;
        let grouped = job.flag("group_reporting");
        for _ in 0..job.number("numjobs", 1)? {
            match out.last_mut() {
                Some(e) if grouped && last_group == Some(group) => {
                    for d in &dirs {
                        if !e.dirs.contains(d) {
                            e.dirs.push(*d);
                        }
                    }
                    e.dirs.sort();
                }
                _ => {
                    let jobname = job.name();
                    let mut phase = jobname.clone();
                    let mut n = 0;
                    while out.iter().any(|e| e.phase == phase) {
                        n += 1;
                        phase = format!("{jobname}.{n}");
                    }
                    out.push(Entry {
                        jobname,
                        phase,
                        dirs: dirs.clone(),
                    });
                }
            }
            last_group = Some(group);
        }
    }
    Ok(out)
}

impl JobFile {
    pub fn phase_names(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|e| e.dirs.iter().map(move |d| e.phase_name(*d)))
            .collect()
    }

    /// One line for reports: jobs and data.
    pub fn summary(&self) -> String {
        format!(
            "{} job section(s), {} fio report entr{}, {} in {} file(s)",
            self.jobs.len(),
            self.entries.len(),
            if self.entries.len() == 1 { "y" } else { "ies" },
            format_size(self.data_bytes),
            self.files
        )
    }
}
