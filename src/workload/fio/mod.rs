//! `kind = "fio"`: the real fio binary running a user's job file on the trial's file
//! system.
//!
//! The job file is read and checked when the spec is (`jobfile.rs`): options that
//! would leave the laboratory are refused with their line, the data it lays out is
//! the workload's peak (so the spec's capacity rule checks it), and its phases are
//! known before anything runs: one per entry of fio's report (a job, or the jobs
//! `group_reporting` merges, under the first one's name) and direction,
//! `<job>:read|write|trim`.
//!
//! One fio process runs every job: fio schedules them itself (concurrently unless
//! `stonewall`), so the phases are not separate stretches of time. The trial's
//! monitor sees the whole run as the first phase. Each phase's `seconds` is fio's own
//! runtime for that job and direction; latency is recomputed from fio's json+
//! completion-latency bins (`json.rs`). `durable` adds nothing here: fio's own
//! `fsync`/`fdatasync`/`end_fsync` say what must be on the devices.
//!
//! Layout: fio works in `jbench-fio.<pid>` inside the run directory (removed
//! afterwards); its working directory, where the job file copy, `fio.json`,
//! `fio.stderr` and any logs the job asks for go, is the trial's output folder, or a
//! temporary directory removed afterwards outside a run.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::{reject_unknown, Interrupted, ParamError, PhaseResult, RunControl, Workload};

mod cli;
pub mod jobfile;
pub mod json;
pub mod kind;
pub mod promises;
pub mod relay;
mod work;
pub use cli::*;

#[cfg(test)]
mod tests;
#[cfg(test)]
#[path = "tests/promises.rs"]
mod tests_promises;

/// Spec keys this kind accepts besides the common ones.
const KEYS: [&str; 2] = ["job", "job_text"];

/// Largest job file read: a job file is a few hundred bytes.
const MAX_JOB_BYTES: u64 = 1 << 20;

/// How often a running fio is checked for a stop request.
const POLL: Duration = Duration::from_millis(50);

/// How long the relay may take to read strace's last lines once fio is gone.
const RELAY_DRAIN: Duration = Duration::from_secs(30);

/// Keeps the temporary output folders of runs in one process apart.
static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One fio workload: a checked job file.
#[derive(Debug, Clone, PartialEq)]
pub struct Fio {
    /// The job file's text (what runs, and what the resolved spec records).
    pub text: String,
    /// Where it was read from, for messages (`None`: inline).
    pub source: Option<PathBuf>,
    pub job: jobfile::JobFile,
}

impl Fio {
    /// Checks `text`; errors name the line and option.
    pub fn new(text: String, source: Option<PathBuf>) -> Result<Self, jobfile::JobError> {
        let job = jobfile::check(&text)?;
        Ok(Fio { text, source, job })
    }

    /// Reads and checks a job file (a path relative to the current directory).
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = read_job(path)?;
        Fio::new(text, Some(path.to_path_buf()))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }
}

fn read_job(path: &Path) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read fio job file {}", path.display()))?;
    if meta.len() > MAX_JOB_BYTES {
        bail!(
            "{} is larger than 1 MiB; is it an fio job file?",
            path.display()
        );
    }
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read fio job file {}", path.display()))
}

/// `[[workload]] kind = "fio"` with exactly one of `job` (a path, relative to the
/// current directory) or `job_text` (the job file inline).
pub fn from_table(t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    reject_unknown(t, &KEYS)?;
    let string = |k: &str| match t.get(k) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(ParamError::new(k, format!("expected a string, found {v}"))),
    };
    let (key, text, source) = match (string("job")?, string("job_text")?) {
        (Some(_), Some(_)) => {
            return Err(ParamError::new(
                "job_text",
                "give either `job` (a job file) or `job_text` (its text), not both",
            ))
        }
        (None, None) => {
            return Err(ParamError::new(
                "job",
                "missing: give `job = \"path/to/job.fio\"` or `job_text = \"\"\"...\"\"\"`",
            ))
        }
        (Some(p), None) => {
            let path = PathBuf::from(&p);
            let text = read_job(&path).map_err(|e| ParamError::new("job", format!("{e:#}")))?;
            ("job", text, Some(path))
        }
        (None, Some(text)) => ("job_text", text, None),
    };
    let fio = Fio::new(text, source.clone()).map_err(|e| {
        let at = source.map_or("the job text".to_string(), |p| p.display().to_string());
        ParamError::new(key, format!("{at}, {e}"))
    })?;
    Ok(Arc::new(fio))
}

impl Workload for Fio {
    fn kind(&self) -> &'static str {
        "fio"
    }

    /// The text itself, so a resolved spec (and a merge elsewhere) does not depend on
    /// the job file still being where it was.
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "job_text": self.text })
    }

    fn phase_names(&self) -> Vec<String> {
        self.job.phase_names()
    }

    fn peak_data_bytes(&self) -> u64 {
        self.job.data_bytes
    }

    fn peak_inodes(&self) -> u64 {
        self.job.files.saturating_add(1)
    }

    fn work(&self) -> crate::workload::work::Work {
        self.job.work()
    }

    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        // fio runs in the output directory, so a relative `dir` would name another
        // place there.
        let dir = &std::path::absolute(dir)
            .with_context(|| format!("cannot resolve {}", dir.display()))?;
        let work = dir.join(format!("jbench-fio.{}", std::process::id()));
        std::fs::create_dir(&work).with_context(|| format!("cannot make {}", work.display()))?;
        let (out_dir, temporary) = match ctl.output_dir() {
            Some(d) => (d.to_path_buf(), false),
            None => (
                std::env::temp_dir().join(format!(
                    "jbench-fio-out.{}.{}",
                    std::process::id(),
                    RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                )),
                true,
            ),
        };
        let result = std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("cannot make {}", out_dir.display()))
            .and_then(|()| self.run_in(&work, &out_dir, ctl));
        // The crash lab must not count the removal of promised files as a loss.
        if ctl.marks() {
            ctl.mark("phase remove");
        }
        let cleanup = super::remove_own_tree(&work);
        if temporary {
            let _ = std::fs::remove_dir_all(&out_dir);
        }
        match result {
            Ok(p) => cleanup.map(|()| p),
            Err(e) => Err(super::after_cleanup(e, "fio", dir, cleanup)),
        }
    }
}

impl Fio {
    fn run_in(
        &self,
        work: &Path,
        out: &Path,
        ctl: &RunControl,
    ) -> anyhow::Result<Vec<PhaseResult>> {
        let job = out.join("fio-job.fio");
        let json = out.join("fio.json");
        let stderr_path = out.join("fio.stderr");
        // Promises are only worth their cost (strace on every write) when a write log
        // keeps the markers.
        let plan = ctl
            .marks()
            .then(|| promises::Plan::new(&self.job))
            .filter(promises::Plan::promises);
        let text = match &plan {
            Some(p) => p.inject(&self.text, &self.job),
            None => self.text.clone(),
        };
        std::fs::write(&job, &text).with_context(|| format!("cannot write {}", job.display()))?;
        let stderr = std::fs::File::create(&stderr_path)
            .with_context(|| format!("cannot write {}", stderr_path.display()))?;
        let first = self.phase_names().into_iter().next().unwrap_or_default();
        if ctl.stop_requested() {
            return Err(Interrupted.into());
        }
        let mut fio_args: Vec<std::ffi::OsString> = vec![
            "--output-format=json+".into(),
            // Total latency (lat_ns) gets bins too; fio 3.20 and later keep the
            // completion latency's beside it.
            "--lat_percentiles=1".into(),
            format!("--directory={}", work.display()).into(),
            format!("--output={}", json.display()).into(),
            job.clone().into(),
        ];
        let (mut cmd, relay) = match plan {
            None => (Command::new("fio"), None),
            Some(plan) => {
                let (cmd, relay) = traced(plan, work, ctl)?;
                (cmd, Some(relay))
            }
        };
        if relay.is_some() {
            fio_args.insert(0, "fio".into());
        }
        cmd.args(&fio_args)
            // Logs the job asks for land next to its output, never in the mount.
            .current_dir(out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            // fio runs each job in a process of its own: a group of their own lets a
            // stop kill them all, not just the parent (a surviving job keeps the mount
            // busy and the trial's devices attached).
            .process_group(0);
        ctl.phase_begin(&first);
        let started = Instant::now();
        let spawned = cmd.spawn();
        // The parent's copy of strace's end of the pipe: the relay sees the end of
        // the output once strace and fio are gone.
        let relay = relay.map(Relay::started);
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                ctl.phase_end(&first);
                if let Some(r) = relay {
                    r.finish(out);
                    return Err(e).context(
                        "cannot start strace, which relays fio's fsyncs to the crash lab \
                         (is it installed? `apt-get install strace`)",
                    );
                }
                return Err(e).context("cannot start fio (is it installed? `apt-get install fio`)");
            }
        };
        // A panic or an error while fio runs must not leave it (or strace) running
        // with the mount busy.
        let mut running = Running {
            child: Some(child),
            job: &job,
        };
        let status = loop {
            let child = running.child.as_mut().expect("reaped only on drop");
            if let Some(s) = child.try_wait().context("waiting for fio")? {
                running.child = None;
                break s;
            }
            if ctl.stop_requested() {
                drop(running);
                if let Some(r) = relay {
                    r.finish(out);
                }
                ctl.phase_end(&first);
                return Err(Interrupted.into());
            }
            std::thread::sleep(POLL);
        };
        let elapsed = started.elapsed();
        if let Some(r) = relay {
            r.finish(out);
        }
        ctl.phase_end(&first);
        if !status.success() {
            let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            bail!(
                "fio exited with {status} after {:.1} s: {}",
                elapsed.as_secs_f64(),
                tail(&err, 2000)
            );
        }
        let text = std::fs::read_to_string(&json)
            .with_context(|| format!("cannot read fio's output {}", json.display()))?;
        json::phases(&text, &self.job.entries)
            .with_context(|| format!("reading fio's output {}", json.display()))
    }
}

/// strace's options: follow every fio process, stop only at the traced calls
/// (seccomp), no attach/exit or signal lines, descriptors with their paths, the
/// first bytes of each written buffer, output to the relay's pipe on fd 3.
fn strace_args() -> Vec<String> {
    vec![
        "-f".into(),
        "--seccomp-bpf".into(),
        "-qq".into(),
        "-y".into(),
        "-s".into(),
        relay::DATA_PREFIX.to_string(),
        "-e".into(),
        "signal=none".into(),
        "-e".into(),
        format!("trace={}", relay::TRACED_CALLS),
        "-o".into(),
        "/dev/fd/3".into(),
        "--".into(),
    ]
}

/// A relay whose pipe is made and whose command is ready to spawn.
struct Relay {
    write_end: Option<std::os::fd::OwnedFd>,
    thread: Option<std::thread::JoinHandle<()>>,
    done: std::sync::mpsc::Receiver<std::collections::BTreeSet<String>>,
}

impl Relay {
    fn started(mut self) -> Self {
        self.write_end = None;
        self
    }

    /// Waits for the relay to read strace's last line (bounded: a stray process
    /// holding the pipe must not hang the trial), and says which files it stopped
    /// promising for.
    fn finish(mut self, out: &Path) {
        self.write_end = None;
        match self.done.recv_timeout(RELAY_DRAIN) {
            Ok(tainted) => {
                if let Some(t) = self.thread.take() {
                    let _ = t.join();
                }
                if !tainted.is_empty() {
                    let _ = std::fs::write(
                        out.join("fio-promises.txt"),
                        format!(
                            "writes to these files stopped matching the bytes jbench \
                             predicted for them, so no later write was promised:\n{}\n",
                            tainted.into_iter().collect::<Vec<_>>().join("\n")
                        ),
                    );
                }
            }
            Err(_) => {
                let _ = std::fs::write(
                    out.join("fio-promises.txt"),
                    "strace's output did not end within 30 s of fio's exit; the promises \
                     after that were not relayed\n",
                );
            }
        }
    }
}

/// The command that runs fio under strace, and the thread that turns strace's lines
/// into `durable-range` markers as they come.
fn traced(plan: promises::Plan, work: &Path, ctl: &RunControl) -> anyhow::Result<(Command, Relay)> {
    use std::io::BufRead;
    use std::os::fd::AsRawFd;
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .context("cannot make a pipe for strace's output")?;
    let mut cmd = Command::new("strace");
    cmd.args(strace_args());
    let raw = write_end.as_raw_fd();
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if raw == 3 {
                if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(raw, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // strace prints the paths the kernel resolves; markers name them as the trial
    // does, under `work`.
    let seen_root = std::fs::canonicalize(work)
        .with_context(|| format!("cannot resolve {}", work.display()))?
        .display()
        .to_string();
    let named_root = work.to_path_buf();
    let ctl = ctl.clone();
    let (tx, done) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("fio-relay".into())
        .spawn(move || {
            let mut relay = relay::Relay::new(&seen_root, move |rel| plan.rule(rel));
            let mut reader = std::io::BufReader::new(std::fs::File::from(read_end));
            let mut buf = Vec::new();
            let mut ranges = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                ranges.clear();
                relay.line(&String::from_utf8_lossy(&buf), &mut ranges);
                for d in &ranges {
                    let rel = d
                        .path
                        .strip_prefix(&seen_root)
                        .unwrap_or(&d.path)
                        .trim_start_matches('/');
                    ctl.mark(&super::durable_range_label(
                        &named_root.join(rel),
                        d.offset,
                        d.len,
                    ));
                }
            }
            let _ = tx.send(relay.tainted);
        })
        .context("cannot start the thread that relays strace's output")?;
    Ok((
        cmd,
        Relay {
            write_end: Some(write_end),
            thread: Some(thread),
            done,
        },
    ))
}

/// fio (or strace running it) until it is reaped; stopped with [`kill_fio`] if dropped
/// before.
struct Running<'a> {
    child: Option<std::process::Child>,
    job: &'a Path,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if matches!(c.try_wait(), Ok(None)) {
                kill_fio(&mut c, self.job);
            }
        }
    }
}

/// The end of a long message (fio's errors come last).
fn tail(s: &str, max: usize) -> &str {
    let s = s.trim();
    if s.len() <= max {
        return s;
    }
    let mut i = s.len() - max;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// Stops fio and every job process it forked, then reaps fio. fio puts its jobs in a
/// session of their own, so neither killing the parent nor its process group reaches
/// them; they are found by their command line, which names this run's job file.
/// SIGTERM first (fio then stops its jobs itself), SIGKILL for whatever is left after
/// 5 s; returns once none is left, or after 15 s.
fn kill_fio(child: &mut std::process::Child, job: &std::path::Path) {
    use nix::sys::signal::{kill, Signal};
    let mine = job.display().to_string();
    let members = || -> Vec<nix::unistd::Pid> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                let cmd = String::from_utf8_lossy(&cmd);
                (cmd.starts_with("fio\0") && cmd.contains(&*mine))
                    .then(|| nix::unistd::Pid::from_raw(pid))
            })
            .collect()
    };
    let _ = kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        Signal::SIGTERM,
    );
    let started = Instant::now();
    loop {
        let _ = child.try_wait();
        let left = members();
        if left.is_empty() {
            break;
        }
        if started.elapsed() > std::time::Duration::from_secs(5) {
            for p in &left {
                let _ = kill(*p, Signal::SIGKILL);
            }
        }
        if started.elapsed() > std::time::Duration::from_secs(15) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.wait();
}
