//! The application's own recovery on a recovered crash state: the workload's
//! `recover` command started in the mount point (a database replaying its WAL, a
//! server loading its log), timed from its start until it says it is ready (it
//! creates `$JBENCH_READY`, or exits 0), kept running for the check, then stopped.
//! Whatever it started dies with its process group, on every path out (drop
//! included), so no server outlives its state.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::workload::command::{group_members, in_own_group, kill_group, RunAs, READY_ENV};

/// What starts and stops the application: the workload's `recover`, `stop`, and the
/// environment and user its check runs with.
#[derive(Debug, Clone)]
pub struct AppSteps {
    pub recover: Vec<String>,
    pub stop: Option<Vec<String>>,
    pub env: BTreeMap<String, String>,
    pub user: Option<RunAs>,
    pub timeout: Duration,
}

/// How long a `stop` command, and then the group after SIGTERM, may take before the
/// group is SIGKILLed: the state is thrown away, so only cleanliness is at stake.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// An application started on a recovered state, up until [`AppSession::stop`] (or drop).
pub struct AppSession {
    child: Option<Child>,
    pgid: i32,
    pub seconds: f64,
    /// What `recover` said about its recovery (`None`: it wrote no facts, or they
    /// did not parse: the time stands without them).
    pub facts: Option<AppFacts>,
    dir: PathBuf,
    env: BTreeMap<String, String>,
    check: AppSteps,
    out: PathBuf,
}

pub use crate::results::crash::AppFacts;

/// The environment variable naming where `recover` may write its [`AppFacts`].
pub const FACTS_ENV: &str = "JBENCH_APP_FACTS";

/// Why the application did not come up: its words, for the state's evidence.
pub struct NotRecovered {
    pub evidence: Vec<String>,
}

/// Starts `check.recover` in `mount` and waits until the application is ready: `Ok(Err)`
/// when it exited non-zero or timed out before that (the application could not
/// recover this state).
pub fn start(
    check: &AppSteps,
    mount: &Path,
    out: &Path,
    tail: usize,
) -> Result<std::result::Result<AppSession, NotRecovered>> {
    let argv = &check.recover;
    std::fs::create_dir_all(out)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o777))?;
    }
    let ready = out.join("ready");
    let _ = std::fs::remove_file(&ready);
    let mut env = check.env.clone();
    env.insert(READY_ENV.into(), ready.display().to_string());
    let facts = out.join("facts.json");
    let _ = std::fs::remove_file(&facts);
    env.insert(FACTS_ENV.into(), facts.display().to_string());
    let stdout = File::create(out.join("recover.stdout.txt"))?;
    let stderr = File::create(out.join("recover.stderr.txt"))?;
    let started = Instant::now();
    let child = in_own_group(argv, mount, &env, check.user.as_ref(), stdout, stderr)
        .spawn()
        .with_context(|| format!("cannot start `{}` in {}", argv[0], mount.display()))?;
    let mut session = AppSession {
        pgid: child.id() as i32,
        child: Some(child),
        seconds: 0.0,
        facts: None,
        dir: mount.to_path_buf(),
        env,
        check: check.clone(),
        out: out.to_path_buf(),
    };
    let what = format!("recover `{}`", crate::workload::command::brief(argv));
    let deadline = started + check.timeout;
    loop {
        // Ready the moment the file exists, or when the command is done and said yes.
        if ready.exists() {
            break;
        }
        let child = session.child.as_mut().expect("still ours");
        if let Some(status) = child.try_wait()? {
            if status.success() {
                break;
            }
            let mut evidence = vec![format!(
                "the application did not recover: {what} exited with {status} after {:.2} s",
                started.elapsed().as_secs_f64()
            )];
            evidence.extend(last_lines(&session.out, "recover.stderr.txt", tail));
            evidence.extend(last_lines(&session.out, "recover.stdout.txt", tail));
            return Ok(Err(NotRecovered { evidence }));
        }
        if Instant::now() >= deadline {
            let mut evidence = vec![format!(
                "the application did not recover within recover_timeout ({}): {what} was killed",
                crate::units::format_duration(check.timeout)
            )];
            evidence.extend(last_lines(&session.out, "recover.stderr.txt", tail));
            return Ok(Err(NotRecovered { evidence }));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    session.seconds = started.elapsed().as_secs_f64();
    session.facts = std::fs::read_to_string(&facts)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Ok(Ok(session))
}

/// The last `tail` non-blank lines of the file `name` in `out`, each prefixed with the
/// file's name: a step's words for a state's evidence.
pub(crate) fn last_lines(out: &Path, name: &str, tail: usize) -> Vec<String> {
    let text =
        String::from_utf8_lossy(&std::fs::read(out.join(name)).unwrap_or_default()).to_string();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(tail)..]
        .iter()
        .map(|l| format!("  {name}: {l}"))
        .collect()
}

impl AppSession {
    /// Runs `stop` (when given), then gives the group [`STOP_GRACE`] after SIGTERM
    /// before SIGKILL. Errors only when processes survive SIGKILL.
    pub fn stop(mut self) -> Result<()> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if let Some(stop) = &self.check.stop {
            let ctl = crate::workload::RunControl::new();
            let _ = crate::workload::command::run_one(
                stop,
                &self.dir,
                &self.env,
                self.check.user.as_ref(),
                STOP_GRACE,
                &self.out,
                "stop.",
                &ctl,
                &|| {},
            );
        }
        let until = Instant::now() + STOP_GRACE;
        if !group_members(self.pgid).is_empty() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pgid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        while !group_members(self.pgid).is_empty() && Instant::now() < until {
            let _ = child.try_wait();
            std::thread::sleep(Duration::from_millis(10));
        }
        let killed = kill_group(self.pgid);
        let _ = child.wait();
        killed
    }
}

impl Drop for AppSession {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}
