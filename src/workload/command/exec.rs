//! Running one command in its own process group: output to files, a timeout, Ctrl-C,
//! and whatever it leaves running killed.

use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::{CommandSpec, PhaseSource, RunAs, WHOLE_PHASE};
use crate::workload::{Interrupted, PhaseResult, RunControl};

/// Lines of stderr quoted when a command fails.
const STDERR_TAIL: usize = 20;

/// How a finished command ended.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: ExitStatus,
    pub seconds: f64,
    /// Processes still in its group after it exited (killed since).
    pub leftovers: u64,
    /// When the clock started, for `finish_phase`.
    pub started: Instant,
}

/// The trial's output folder, or a temporary one removed when dropped.
struct OutDir {
    path: PathBuf,
    temporary: bool,
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn out_dir(ctl: &RunControl) -> anyhow::Result<OutDir> {
    if let Some(d) = ctl.output_dir() {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        return Ok(OutDir {
            path: d.to_path_buf(),
            temporary: false,
        });
    }
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "jbench-command.{}.{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(OutDir {
        path,
        temporary: true,
    })
}

/// Pids of live (not zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name may hold spaces and parentheses: fields follow the last `)`.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// SIGKILLs group `pgid` and waits (up to 5 s) until none of it is alive.
pub fn kill_group(pgid: i32) -> anyhow::Result<()> {
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    let until = Instant::now() + Duration::from_secs(5);
    while !group_members(pgid).is_empty() {
        if Instant::now() > until {
            bail!(
                "processes of group {pgid} survived SIGKILL: {}",
                group_members(pgid)
                    .iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// `argv` ready to spawn in `dir` as the leader of a process group of its own (so
/// everything it starts can be killed with it), as `user` when given, stdin closed.
pub fn in_own_group(
    argv: &[String],
    dir: &Path,
    env: &std::collections::BTreeMap<String, String>,
    user: Option<&RunAs>,
    stdout: File,
    stderr: File,
) -> Command {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    if let Some(u) = user.cloned() {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let gid = u.gid as libc::gid_t;
                if libc::setgroups(1, &gid) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(u.uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd
}

/// Runs `argv` in `dir` with stdout/stderr to `<out>/<stem>stdout.txt` and
/// `<stem>stderr.txt`. Calls `begin` right before the clock starts. Returns after the
/// command and its whole process group are gone; `Interrupted` on stop.
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    argv: &[String],
    dir: &Path,
    env: &std::collections::BTreeMap<String, String>,
    user: Option<&RunAs>,
    timeout: Duration,
    out: &Path,
    stem: &str,
    ctl: &RunControl,
    begin: &dyn Fn(),
) -> anyhow::Result<Finished> {
    let stdout = File::create(out.join(format!("{stem}stdout.txt")))?;
    let stderr = File::create(out.join(format!("{stem}stderr.txt")))?;
    let mut cmd = in_own_group(argv, dir, env, user, stdout, stderr);
    begin();
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{}` in {}", argv[0], dir.display()))?;
    let pgid = child.id() as i32;
    // A thread waits so the clock stops the moment the command exits, not at a poll.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = child.wait();
        let _ = tx.send((r, Instant::now()));
    });
    let deadline = started + timeout;
    let (status, ended) = loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok((r, at)) => break (r.context("waiting for the command")?, at),
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("lost the command's waiter"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if ctl.stop_requested() {
            kill_group(pgid)?;
            let _ = rx.recv_timeout(Duration::from_secs(5));
            return Err(Interrupted.into());
        }
        if Instant::now() >= deadline {
            kill_group(pgid)?;
            let _ = rx.recv_timeout(Duration::from_secs(5));
            bail!(
                "`{}` timed out after {}; its process group was killed",
                super::brief(argv),
                crate::units::format_duration(timeout)
            );
        }
    };
    let seconds = (ended - started).as_secs_f64();
    let leftovers = group_members(pgid).len() as u64;
    if leftovers > 0 {
        kill_group(pgid)?;
    }
    Ok(Finished {
        status,
        seconds,
        leftovers,
        started,
    })
}

fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => format!("{status}"),
    }
}

fn stderr_tail(path: &Path) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).to_string();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(STDERR_TAIL)..].join("\n")
}

/// Fails with the status and stderr's last lines when `f` did not exit 0.
fn check(what: &str, f: &Finished, out: &Path, stem: &str) -> anyhow::Result<()> {
    if f.status.success() {
        return Ok(());
    }
    let tail = stderr_tail(&out.join(format!("{stem}stderr.txt")));
    bail!(
        "{what} failed with {}{}",
        describe(&f.status),
        if tail.is_empty() {
            " (stderr empty)".to_string()
        } else {
            format!("; last lines of stderr:\n{tail}")
        }
    )
}

fn write_exit(out: &Path, argv: &[String], r: &anyhow::Result<Finished>) {
    let v = match r {
        Ok(f) => serde_json::json!({
            "argv": argv,
            "status": f.status.code(),
            "signal": f.status.signal(),
            "seconds": f.seconds,
            "leftover_processes": f.leftovers,
        }),
        Err(e) => serde_json::json!({"argv": argv, "error": format!("{e:#}")}),
    };
    let _ = std::fs::write(
        out.join("exit.json"),
        serde_json::to_string_pretty(&v).unwrap_or_default(),
    );
}

/// The promise channel of one run (`JBENCH_DURABLE`): a FIFO outside the file system
/// under test, and a thread that turns each line a command writes to it into a
/// `durable` marker in the write log. The marker lands after the command wrote its
/// line, so after its own fsync returned: late is safe (the promise applies to fewer
/// crash states), early is impossible.
struct DurableChannel {
    dir: PathBuf,
    path: PathBuf,
    stop: Option<File>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The line that ends the relay: a command cannot write a NUL in a path.
const STOP_LINE: &[u8] = b"\0jbench-stop\n";

impl DurableChannel {
    fn open(run_dir: &Path, ctl: &RunControl) -> anyhow::Result<Self> {
        use std::io::BufRead;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let base = if Path::new("/run").is_dir() {
            PathBuf::from("/run")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "jbench-durable.{}.{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711))?;
        let path = dir.join("durable");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o622))
            .with_context(|| format!("cannot make the promise channel {}", path.display()))?;
        // mkfifo's mode is cut by the umask; the command may run as another user.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622))?;
        // Read and write: the relay never sees end-of-file between writers, and
        // opening it never blocks.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)?;
        let stop = reader.try_clone()?;
        let ctl = ctl.clone();
        let run_dir = run_dir.to_path_buf();
        let thread = std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(reader);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line == STOP_LINE => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line);
                match durable_marker(&text, &run_dir) {
                    Ok(Some(label)) => ctl.mark(&label),
                    Ok(None) => {}
                    Err(e) => crate::events::emit(crate::events::Event::CommandWarning {
                        text: format!("{DURABLE_ENV_NAME}: {e}"),
                    }),
                }
            }
        });
        Ok(Self {
            dir,
            path,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

const DURABLE_ENV_NAME: &str = super::DURABLE_ENV;

impl Drop for DurableChannel {
    fn drop(&mut self) {
        use std::io::Write;
        if let Some(mut s) = self.stop.take() {
            // Behind every line the command wrote: the relay marks them all first.
            let _ = s.write_all(STOP_LINE);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The marker label of one line a command wrote to its promise channel: `durable
/// PATH`, `durable PATH sha256=HEX` or `durable PATH nonempty` (from that line on, the
/// file is never found empty: what replacing it by rename promises; the word
/// `durable` may be left out), PATH
/// relative to the run directory or absolute inside it; or `durable-key KEY`, an
/// application record the command acknowledged (a committed row's id, a log
/// sequence number), which the workload's `check` is handed in order. `None` for a
/// blank line.
pub fn durable_marker(line: &str, run_dir: &Path) -> anyhow::Result<Option<String>> {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.trim().is_empty() {
        return Ok(None);
    }
    if let Some(key) = line.strip_prefix(KEY_PREFIX) {
        return key_marker(line, key).map(Some);
    }
    let rest = line.strip_prefix("durable ").unwrap_or(line);
    let (rest, nonempty) = match rest.strip_suffix(" nonempty") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let (path, sha) = match rest.rsplit_once(" sha256=") {
        Some((p, h)) => {
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!("`{line}`: sha256= takes 64 hex digits");
            }
            (p, Some(h.to_ascii_lowercase()))
        }
        None => (rest, None),
    };
    let p = Path::new(path);
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        bail!("`{line}`: a promised path may not contain `..`");
    }
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        run_dir.join(p)
    };
    if !abs.starts_with(run_dir) || abs == run_dir {
        bail!(
            "`{line}`: {} is not a file inside the file system under test ({}); ignored",
            abs.display(),
            run_dir.display()
        );
    }
    Ok(Some(match (sha, nonempty) {
        (Some(_), true) => bail!("`{line}`: a promise is sha256= or nonempty, not both"),
        (Some(h), false) => format!("durable {} sha256={h}", abs.display()),
        (None, true) => format!("durable {} nonempty", abs.display()),
        (None, false) => format!("durable {}", abs.display()),
    }))
}

/// The word a promise channel line starts with to promise an application record.
pub const KEY_PREFIX: &str = "durable-key ";

/// Longest key a command may promise: a key names one record, and every crash state
/// hands the check every key promised before its cut.
pub const MAX_KEY_BYTES: usize = 256;

fn key_marker(line: &str, key: &str) -> anyhow::Result<String> {
    let key = key.trim();
    if key.is_empty() {
        bail!("`{line}`: durable-key takes a key (a record's id), e.g. `durable-key 42`");
    }
    if key.len() > MAX_KEY_BYTES {
        bail!("`{line}`: a key is at most {MAX_KEY_BYTES} bytes");
    }
    if key.chars().any(char::is_control) {
        bail!("`{line}`: a key may not hold control characters");
    }
    Ok(format!("{KEY_PREFIX}{key}"))
}

/// The whole run: setup, the timed command, teardown, then its phases.
pub fn run_spec(
    spec: &CommandSpec,
    dir: &Path,
    ctl: &RunControl,
) -> anyhow::Result<Vec<PhaseResult>> {
    crate::workload::require_dir(dir)?;
    // The command runs in `dir`, so a relative path handed to it would name a
    // place below itself.
    let dir = &std::path::absolute(dir)?;
    let out = out_dir(ctl)?;
    // Only a recording keeps promises; elsewhere the channel swallows them.
    let channel = if ctl.marks() {
        Some(DurableChannel::open(dir, ctl)?)
    } else {
        None
    };
    // The configuration's settings win: they are what the experiment varies.
    let mut env = spec.env.clone();
    env.extend(ctl.env().iter().map(|(k, v)| (k.clone(), v.clone())));
    env.insert(
        super::DURABLE_ENV.to_string(),
        channel
            .as_ref()
            .map(|c| c.path.display().to_string())
            .unwrap_or_else(|| "/dev/null".into()),
    );
    let spec = &CommandSpec {
        env,
        ..spec.clone()
    };
    let no_user = None;
    if let Some(setup) = &spec.setup {
        // Setup and teardown run as jbench's own user, so setup can hand the mount
        // point to `user` (e.g. `chown nobody .`).
        let f = run_one(
            setup,
            dir,
            &spec.env,
            no_user,
            spec.timeout,
            &out.path,
            "setup.",
            ctl,
            &|| {},
        )?;
        check("setup", &f, &out.path, "setup.")?;
    }
    let argv = spec.argv();
    let r = run_one(
        &argv,
        dir,
        &spec.env,
        spec.user.as_ref(),
        spec.timeout,
        &out.path,
        "",
        ctl,
        &|| ctl.phase_begin(WHOLE_PHASE),
    );
    write_exit(&out.path, &argv, &r);
    if matches!(&r, Err(e) if e.is::<Interrupted>()) {
        return r.map(|_| Vec::new());
    }
    // Every line the command wrote is marked before anything after it is logged.
    drop(channel);
    let mut durable = None;
    if r.is_ok() {
        durable = ctl.finish_phase(
            dir,
            r.as_ref()
                .map(|f| f.started)
                .unwrap_or_else(|_| Instant::now()),
        )?;
        ctl.phase_end(WHOLE_PHASE);
    }
    let teardown = match &spec.teardown {
        Some(t) => run_one(
            t,
            dir,
            &spec.env,
            no_user,
            spec.timeout,
            &out.path,
            "teardown.",
            ctl,
            &|| {},
        )
        .and_then(|f| check("teardown", &f, &out.path, "teardown.")),
        None => Ok(()),
    };
    let f = r?;
    check(&format!("`{}`", super::brief(&argv)), &f, &out.path, "").map_err(|e| {
        e.context(format!(
            "saved in {}",
            if out.temporary {
                "a temporary folder (removed)".into()
            } else {
                out.path.display().to_string()
            }
        ))
    })?;
    teardown?;
    let mut phases = match &spec.phases {
        PhaseSource::Whole => vec![PhaseResult {
            name: WHOLE_PHASE.into(),
            seconds: f.seconds,
            ops: 1,
            bytes: 0,
            op_unit: "runs".into(),
            durable_seconds: durable,
            ..Default::default()
        }],
        PhaseSource::Patterns(ps) => {
            let stdout =
                String::from_utf8_lossy(&std::fs::read(out.path.join("stdout.txt"))?).to_string();
            super::phases::from_patterns(ps, &stdout)?
        }
        PhaseSource::Json { path, names } => {
            let (text, from) = if path == "-" {
                (
                    std::fs::read(out.path.join("stdout.txt"))?,
                    "stdout".to_string(),
                )
            } else {
                let p = dir.join(path);
                (
                    std::fs::read(&p)
                        .with_context(|| format!("the command wrote no {}", p.display()))?,
                    p.display().to_string(),
                )
            };
            super::phases::from_json(names, &String::from_utf8_lossy(&text), &from)?
        }
    };
    if f.leftovers > 0 {
        crate::events::emit(crate::events::Event::CommandWarning {
            text: format!(
                "`{}` left {} process(es) running in its process group; they were killed",
                super::brief(&argv),
                f.leftovers
            ),
        });
        if let Some(p) = phases.first_mut() {
            p.counters.insert("leftover_processes".into(), f.leftovers);
        }
    }
    Ok(phases)
}
