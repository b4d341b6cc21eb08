//! What an fio job promises the crash lab, and what the promised bytes must be.
//!
//! A promise is a write fio saw complete on a file opened `O_SYNC`/`O_DSYNC` (or a
//! `pwritev2` with `RWF_SYNC`/`RWF_DSYNC`), or a write that completed before an
//! `fsync`/`fdatasync` of its file began and that call returned 0 (`fsync=N`,
//! `fdatasync=N`, `end_fsync`, `fsync_on_close`). `relay.rs` watches for them; this
//! file decides which jobs and files can be watched and what their bytes are.
//!
//! Content: when the trial keeps a write log, every job whose content jbench can
//! predict gets `verify=pattern`, `verify_pattern=0x<tag>%o` and `do_verify=0` (fio
//! 3.33 then fills each write buffer with the 16 bytes `tag ‖ le64(offset of the
//! write)` repeated, and verifies nothing). The tag is `jbfio` and the section's index,
//! so it is a function of the job text alone, which the trial records: the crash lab
//! derives the expected bytes from `params.job_text` without anything else.
//! A byte at file offset `x` then holds `pattern[(x - o) % 16]`, `o` being the start
//! of the write that covered it; with a fixed write block size `bs` on offsets that
//! are multiples of `bs`, `o = x - x % bs`, a function of the offset alone.

use std::collections::BTreeMap;

use super::jobfile::{self, parse_fio_size, Dir, Job, JobFile};

/// Engines that make one system call per write and per fsync, which fio waits for:
/// what strace shows is what fio saw complete. Asynchronous engines (libaio,
/// io_uring, posixaio) and mmap complete writes where strace cannot tell which.
pub const TRACED_ENGINES: [&str; 5] = ["sync", "psync", "vsync", "pvsync", "pvsync2"];

/// The first bytes of every tag; the rest is the section's index.
const TAG_PREFIX: &[u8; 5] = b"jbfio";

/// More files than this in one job and the names are not listed (no promises).
const MAX_LISTED_FILES: u64 = 100_000;

/// What the bytes of one file must be once promised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    pub tag: [u8; 8],
    /// The job's write block size: every write starts at a multiple of it.
    pub bs: u64,
}

impl Pattern {
    /// The 16 bytes fio repeats over a write that starts at `start`.
    fn unit(&self, start: u64) -> [u8; 16] {
        let mut u = [0u8; 16];
        u[..8].copy_from_slice(&self.tag);
        u[8..].copy_from_slice(&start.to_le_bytes());
        u
    }

    /// Bytes `[offset, offset + len)` of the file.
    pub fn content(&self, offset: u64, len: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(len as usize);
        let mut x = offset;
        while x < offset + len {
            let start = x - x % self.bs;
            let end = (start + self.bs).min(offset + len);
            let unit = self.unit(start);
            out.extend((x..end).map(|p| unit[((p - start) % 16) as usize]));
            x = end;
        }
        out
    }
}

/// What the relay does with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// No promises: not fio's, or its bytes or existence cannot be vouched for.
    Ignore,
    /// Promised ranges must exist (the file is at least that long); content unknown.
    Exists,
    /// Promised ranges must hold the pattern; other writes are not promised.
    Pattern(Pattern),
}

/// One job section as the crash lab sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    pub index: usize,
    pub name: String,
    /// Its files, relative to fio's directory (`None`: cannot be told in advance).
    pub files: Option<Vec<String>>,
    /// Its writes and syncs are system calls strace sees (see [`TRACED_ENGINES`]).
    pub traced: bool,
    /// Traced, writes, and makes data durable by one of fio's own options.
    pub promises: bool,
    /// jbench can choose its content (see the module comment).
    pub pattern: Option<Pattern>,
}

/// The plan of a whole job file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub jobs: Vec<JobPlan>,
    /// A job removes its files (`unlink`, `unlink_each_loop`): nothing is promised,
    /// since a promise cannot be taken back before fio removes the file.
    pub unlinks: bool,
    rules: BTreeMap<String, Rule>,
}

/// Options that decide what fio writes: a job that sets one keeps its own content.
fn sets_content(job: &Job) -> bool {
    let keys = job.opts.iter().chain(&job.globals).map(|o| o.key.as_str());
    for k in keys {
        if k.starts_with("verify")
            || k.starts_with("dedupe")
            || k.starts_with("buffer_")
            || k.starts_with("compress")
            || k.starts_with("replay_")
            || matches!(
                k,
                "do_verify"
                    | "zero_buffers"
                    | "refill_buffers"
                    | "scramble_buffers"
                    | "experimental_verify"
                    | "read_iolog"
                    | "trim_percentage"
                    | "trim_verify_zero"
            )
        {
            return true;
        }
    }
    matches!(job.get("mem").or(job.get("iomem")).and_then(|o| o.value.as_deref()), Some(v) if v.contains("cuda"))
}

/// Options under which writes may start off the `bs` grid, or at the end of a file.
const OFF_GRID: [&str; 16] = [
    "bsrange",
    "blocksize_range",
    "bssplit",
    "bs_unaligned",
    "blocksize_unaligned",
    "blockalign",
    "ba",
    "bs_is_seq_rand",
    "offset_align",
    "file_append",
    "zonemode",
    "zonesize",
    "zonerange",
    "zoneskip",
    "read_iolog",
    "rw_sequencer",
];

/// The job's write block size: `bs=R,W[,T]` names one per direction (fio's
/// default: 4 KiB).
fn write_bs(job: &Job) -> Option<u64> {
    let Some(o) = job.get("bs").or_else(|| job.get("blocksize")) else {
        return Some(4096);
    };
    let v = o.value.as_deref()?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let w = match parts.get(1) {
        Some(w) if !w.is_empty() => w,
        _ => parts[0],
    };
    parse_fio_size(w).filter(|b| *b > 0)
}

fn size_opt(job: &Job, key: &str) -> Option<Option<u64>> {
    match job.get(key) {
        None => Some(None),
        Some(o) => o.value.as_deref().and_then(parse_fio_size).map(Some),
    }
}

/// The job's pattern when its writes are sure to start at multiples of one `bs`.
fn pattern_of(job: &Job, index: usize) -> Option<Pattern> {
    if sets_content(job) || OFF_GRID.iter().any(|k| job.get(k).is_some()) {
        return None;
    }
    let rw = job.get("rw").or_else(|| job.get("readwrite"));
    // `rw=randwrite:8` skips or jitters offsets.
    if rw
        .and_then(|o| o.value.as_deref())
        .is_some_and(|v| v.contains(':'))
    {
        return None;
    }
    let bs = write_bs(job)?;
    for key in ["offset", "offset_increment"] {
        if size_opt(job, key)?.is_some_and(|v| !v.is_multiple_of(bs)) {
            return None;
        }
    }
    let mut tag = [0u8; 8];
    tag[..5].copy_from_slice(TAG_PREFIX);
    tag[5..].copy_from_slice(&(index as u32).to_be_bytes()[1..]);
    Some(Pattern { tag, bs })
}

/// An option that is on unless `0`, `false` or `none` (bare `key` is on).
fn on(job: &Job, key: &str) -> bool {
    job.get(key).is_some_and(|o| match o.value.as_deref() {
        None => true,
        Some(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "none" | "off" | "no" | ""
        ),
    })
}

/// The files fio makes for `job`, relative to its directory.
fn files_of(job: &Job) -> Option<Vec<String>> {
    if job.get("filename_format").is_some() || job.get("opendir").is_some() {
        return None;
    }
    if let Some(o) = job.get("filename") {
        let v = o.value.as_deref()?;
        // `\:` escapes a colon in a name; not worth modelling.
        if v.contains('\\') {
            return None;
        }
        return Some(
            v.split(':')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| p.trim_start_matches("./").to_string())
                .collect(),
        );
    }
    let number = |k: &str| {
        job.get(k)
            .and_then(|o| o.value.as_deref())
            .map_or(Some(1), parse_fio_size)
    };
    let (numjobs, nrfiles) = (number("numjobs")?.max(1), number("nrfiles")?.max(1));
    if numjobs.saturating_mul(nrfiles) > MAX_LISTED_FILES {
        return None;
    }
    let name = job.name();
    Some(
        (0..numjobs)
            .flat_map(|j| (0..nrfiles).map(move |f| (j, f)))
            .map(|(j, f)| format!("{name}.{j}.{f}"))
            .collect(),
    )
}

impl Plan {
    pub fn new(file: &JobFile) -> Plan {
        let mut jobs = Vec::new();
        let mut unlinks = false;
        for (index, job) in file.jobs.iter().enumerate() {
            unlinks |= on(job, "unlink") || on(job, "unlink_each_loop");
            let engine = job
                .get("ioengine")
                .and_then(|o| o.value.as_deref())
                .unwrap_or("psync")
                .trim()
                .to_string();
            let dirs = job.dirs().unwrap_or_default();
            let files = files_of(job);
            let traced = TRACED_ENGINES.contains(&engine.as_str())
                && dirs.contains(&Dir::Write)
                && !dirs.contains(&Dir::Trim)
                && files.is_some()
                // Files laid out by a job's own process may be laid out again
                // while a clone already writes them.
                && job
                    .get("create_serialize")
                    .is_none_or(|o| on(job, &o.key));
            let syncs = ["fsync", "fdatasync", "end_fsync", "fsync_on_close", "sync"]
                .iter()
                .any(|k| on(job, k));
            jobs.push(JobPlan {
                index,
                name: job.name(),
                files,
                traced,
                promises: traced && syncs,
                pattern: pattern_of(job, index),
            });
        }
        // A file two sections name may hold either's bytes, or be laid out again.
        let mut named: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for j in &jobs {
            for f in j.files.iter().flatten() {
                named.entry(f.clone()).or_default().push(j.index);
            }
        }
        let mut rules = BTreeMap::new();
        for (f, by) in named {
            let j = &jobs[by[0]];
            let rule = if unlinks || by.iter().any(|i| *i != by[0]) || !j.promises {
                Rule::Ignore
            } else {
                j.pattern.map_or(Rule::Exists, Rule::Pattern)
            };
            rules.insert(f, rule);
        }
        Plan {
            jobs,
            unlinks,
            rules,
        }
    }

    /// The plan of a job text (`None`: it does not pass jbench's checks).
    pub fn of_text(text: &str) -> Option<Plan> {
        jobfile::check(text).ok().map(|f| Plan::new(&f))
    }

    /// The rule for a file, given relative to fio's directory.
    pub fn rule(&self, rel: &str) -> Rule {
        self.rules.get(rel).copied().unwrap_or(Rule::Ignore)
    }

    /// Whether any file gets promises at all.
    pub fn promises(&self) -> bool {
        self.rules.values().any(|r| *r != Rule::Ignore)
    }

    /// The job text with the content options added to every job jbench can
    /// predict, right after its section line (so they are the job's own options).
    pub fn inject(&self, text: &str, file: &JobFile) -> String {
        let mut after: BTreeMap<usize, String> = BTreeMap::new();
        for (job, plan) in file.jobs.iter().zip(&self.jobs) {
            if let (Some(p), true) = (plan.pattern, plan.promises) {
                let hex: String = p.tag.iter().map(|b| format!("{b:02x}")).collect();
                after.insert(
                    job.line,
                    format!(
                        "; added by jbench for the crash lab: bytes that are a function of \
                         the file and offset\nverify=pattern\nverify_pattern=0x{hex}%o\n\
                         do_verify=0\n"
                    ),
                );
            }
        }
        let mut out = String::with_capacity(text.len() + after.len() * 160);
        for (i, line) in text.lines().enumerate() {
            out.push_str(line);
            out.push('\n');
            if let Some(extra) = after.get(&(i + 1)) {
                out.push_str(extra);
            }
        }
        out
    }
}

/// The part of a path relative to the file system that fio's directory holds:
/// what follows the `jbench-fio.<pid>` component (the whole path without one).
pub fn within_work_dir(rel: &str) -> &str {
    let rel = rel.trim_start_matches('/');
    let mut rest = rel;
    loop {
        let (head, tail) = rest.split_once('/').unwrap_or((rest, ""));
        if head.starts_with("jbench-fio.") {
            return tail;
        }
        if tail.is_empty() {
            return rel;
        }
        rest = tail;
    }
}
