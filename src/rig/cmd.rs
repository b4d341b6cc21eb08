//! Running the system tools that are the source of truth (mke2fs, dumpe2fs, losetup,
//! blkid, mount), with errors that show the command and what it said.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Tools run in their own process group: a Ctrl-C at the terminal reaches jbench alone,
/// which then stops between steps. Otherwise the SIGINT would also kill a `losetup -d` or
/// `umount` half-way through teardown and leave devices behind.
fn command(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).process_group(0);
    cmd
}

/// Runs `program args...` with stdin closed and returns its stdout. A non-zero exit is
/// an error carrying the whole command line and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = command(program, args).output().with_context(|| {
        format!("cannot start `{program}`; is it installed? (Debian: e2fsprogs, mount, util-linux)")
    })?;
    if !out.status.success() {
        bail!(
            "`{} {}` failed ({}): {}",
            program,
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Like [`run`] but returns stdout and stderr together, for tools (mke2fs -V) that
/// print their version on stderr.
pub fn run_all(program: &str, args: &[&str]) -> Result<String> {
    let out = command(program, args)
        .output()
        .with_context(|| format!("cannot start `{program}`"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(text)
}

/// Whether a program is on PATH.
pub fn available(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
        .unwrap_or(false)
        || ["/sbin", "/usr/sbin"]
            .iter()
            .any(|p| std::path::Path::new(p).join(program).is_file())
}

/// What a command run by [`run_timed`] did.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// Exit code; `None` when killed by a signal or still running at the deadline.
    pub code: Option<i32>,
    /// Standard output, then standard error.
    pub output: String,
    pub seconds: f64,
    /// It did not end within the time it was given and was killed; a process stuck in
    /// the kernel (I/O on a hung device) may outlive the kill: [`Ran`] says so only.
    pub timed_out: bool,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// The first `n` non-empty lines of its output, for evidence.
    pub fn head(&self, n: usize) -> Vec<String> {
        self.output
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .take(n)
            .map(str::to_string)
            .collect()
    }
}

/// Runs `program args...` for at most `timeout`, timing it; never fails for the
/// command's own exit status (the caller judges it). `on_timeout` runs once when the
/// deadline passes (e.g. to abort a hung device), before the command is reaped.
pub fn run_timed(
    program: &str,
    args: &[&str],
    timeout: std::time::Duration,
    on_timeout: &mut dyn FnMut(),
) -> Result<Ran> {
    use std::io::Read;
    use std::sync::mpsc;
    let started = std::time::Instant::now();
    let mut child = command(program, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{program}`; is it installed?"))?;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        let _ = err.read_to_end(&mut e);
        e
    });
    let stdout_reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        let _ = out.read_to_end(&mut o);
        o
    });
    // A thread blocked in wait() wakes the moment the child exits; polling try_wait
    // with sleeps cost more than the short steps it timed (mount, e2fsck: a few ms).
    // Until that thread reaps it the child's pid cannot be reused, so killing it by
    // pid from here is safe.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let mut timed_out = false;
    let status = match rx.recv_timeout(timeout) {
        Ok(s) => Some(s?),
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            timed_out = true;
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            on_timeout();
            // Reaped once the kernel lets it go; a process stuck on a dead device may
            // never be: give it a little while, then leave its waiter behind.
            match rx.recv_timeout(std::time::Duration::from_secs(10)) {
                Ok(s) => Some(s?),
                Err(_) => None,
            }
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut output = String::new();
    if status.is_some() {
        output.push_str(&String::from_utf8_lossy(
            &stdout_reader.join().unwrap_or_default(),
        ));
        output.push_str(&String::from_utf8_lossy(&reader.join().unwrap_or_default()));
    }
    Ok(Ran {
        code: status.and_then(|s| s.code()),
        output,
        seconds,
        timed_out,
    })
}

/// Calls `f` on a thread of its own for at most `timeout`: its result and the seconds
/// it took, or `None` if the deadline passed first. `on_timeout` runs once at the
/// deadline (e.g. to abort a hung device, which makes a system call stuck on it
/// return); the call is then given a little while more, and left running after that.
pub fn call_timed<T: Send + 'static>(
    timeout: std::time::Duration,
    on_timeout: &mut dyn FnMut(),
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<(Option<T>, f64)> {
    let started = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("timed-call".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .context("cannot start a thread")?;
    let out = match rx.recv_timeout(timeout) {
        Ok(t) => Some(t),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            on_timeout();
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            None
        }
    };
    Ok((out, started.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_timed_command_returns_its_exit_code_and_output() {
        let ran = run_timed(
            "sh",
            &["-c", "echo out; echo err >&2; exit 3"],
            Duration::from_secs(30),
            &mut || panic!("no timeout expected"),
        )
        .unwrap();
        assert_eq!(ran.code, Some(3));
        assert!(!ran.timed_out);
        assert_eq!(ran.output, "out\nerr\n");
    }

    #[test]
    fn a_command_past_its_time_is_killed_and_on_timeout_runs_once() {
        let mut calls = 0;
        let started = Instant::now();
        let ran = run_timed("sleep", &["30"], Duration::from_millis(100), &mut || {
            calls += 1
        })
        .unwrap();
        assert!(ran.timed_out);
        assert_eq!(calls, 1);
        assert_eq!(ran.code, None, "killed by a signal");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the kill did not end it"
        );
    }

    #[test]
    fn a_timed_call_returns_its_value_or_none_past_its_time() {
        let (v, _) =
            call_timed(Duration::from_secs(30), &mut || panic!("no timeout"), || 7).unwrap();
        assert_eq!(v, Some(7));
        // The call ends only once `on_timeout` has run, as a mount on an aborted
        // device does; its late result is not taken for a timely one.
        let aborted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = aborted.clone();
        let mut calls = 0;
        let (v, _) = call_timed(
            Duration::from_millis(50),
            &mut || {
                calls += 1;
                aborted.store(true, std::sync::atomic::Ordering::SeqCst);
            },
            move || {
                while !seen.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                7
            },
        )
        .unwrap();
        assert_eq!((v, calls), (None, 1));
    }
}
