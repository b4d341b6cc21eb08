//! The workload's own check, run in a recovered crash state's mount point: what it is
//! handed (the paths declared durable and the records promised before the cut) and
//! how its exit status reads (0 consistent, [`CHECK_LOST_RECORDS`] a promised record
//! missing, anything else its own invariant broken).

use std::path::Path;

use anyhow::Result;

use super::app_recovery::last_lines;
use super::recover::RecoveryRig;

/// The workload's own consistency check, run in the recovered mount point: the
/// `check` (with `recover` and `stop`) read back from the trial's record, its `env`
/// merged with the configuration's.
pub use crate::workload::command::CheckSpec as UserCheck;

impl UserCheck {
    /// This check as run on `rig`'s states: its environment also names the state's
    /// second file system, where the configuration has one.
    pub fn on(&self, rig: &RecoveryRig) -> UserCheck {
        let mut check = self.clone();
        if let Some(m) = rig.second_mount() {
            check.env.insert(
                crate::workload::command::SECOND_FS_ENV.into(),
                m.display().to_string(),
            );
        }
        check
    }

    /// The application's start and stop, when the workload has a `recover`.
    pub fn app_steps(&self) -> Option<super::app_recovery::AppSteps> {
        Some(super::app_recovery::AppSteps {
            recover: self.recover.clone()?,
            stop: self.stop.clone(),
            env: self.env.clone(),
            user: self.user.clone(),
            timeout: self.recover_timeout,
        })
    }
}

/// The environment variable naming the file that lists, one per line, the paths
/// declared durable at the state's cut, for a workload's `check`.
pub const PROMISED_ENV: &str = "JBENCH_PROMISED";

/// The environment variable naming the file that lists, one per line and in the
/// order they were promised, the application records (`durable-key KEY`) promised
/// before the state's cut, for a workload's `check`.
pub const PROMISED_KEYS_ENV: &str = "JBENCH_PROMISED_KEYS";

/// The exit status by which a workload's check says a promised record is missing:
/// the verdict is then `lost-fsynced` (what was promised is gone), not
/// `check-failed` (the application's own invariant broke).
pub const CHECK_LOST_RECORDS: i32 = 3;

/// The environment variable naming a file where the check may list, one per line,
/// the promised records it found missing: the state's `records_lost`.
pub const MISSING_KEYS_ENV: &str = "JBENCH_MISSING_KEYS";

/// A check that did not pass: why, with the last lines it printed, and whether it
/// said promised records are missing ([`CHECK_LOST_RECORDS`]).
pub(crate) struct CheckFailure {
    pub(crate) evidence: Vec<String>,
    pub(crate) lost_records: bool,
}

/// What the check (and the application's recovery before it) made of a state.
pub(crate) struct CheckOutcome {
    pub(crate) failure: Option<CheckFailure>,
    /// Promised records the check listed in `$JBENCH_MISSING_KEYS` (`None`: it
    /// listed none, or was not asked to).
    pub(crate) records_lost: Option<u64>,
}

/// Runs `check` in the rig's recovered mount point, handing it `paths` (declared
/// durable, relative to the mount point) and `keys` (records promised, in order),
/// after starting the application on the state when the workload has a `recover`
/// (stopped after the check): whether it passed, else why not, with at most `tail`
/// lines of each of its outputs.
pub(crate) fn run(
    rig: &RecoveryRig,
    check: &UserCheck,
    paths: &[&str],
    keys: &[String],
    tail: usize,
) -> Result<CheckOutcome> {
    let out = rig.session().join("check");
    let _ = std::fs::remove_dir_all(&out);
    let check = &check.on(rig);
    let app = match check.app_steps() {
        None => None,
        Some(steps) => match super::app_recovery::start(&steps, &rig.mount_point, &out, tail)? {
            Ok(session) => Some(session),
            Err(not) => {
                return Ok(CheckOutcome {
                    failure: Some(CheckFailure {
                        evidence: not.evidence,
                        lost_records: false,
                    }),
                    records_lost: None,
                })
            }
        },
    };
    let judged = run_check(rig, check, &out, paths, keys, tail);
    if let Some(app) = app {
        app.stop()?;
    }
    judged
}

fn run_check(
    rig: &RecoveryRig,
    check: &UserCheck,
    out: &Path,
    paths: &[&str],
    keys: &[String],
    tail: usize,
) -> Result<CheckOutcome> {
    std::fs::create_dir_all(out)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o777))?;
    }
    // The check learns which paths were declared durable at this cut: an invariant
    // often holds only once the application's initial state was made durable.
    let mut paths = paths.to_vec();
    paths.dedup();
    let promised = out.join("promised.txt");
    write_list(&promised, &paths)?;
    let promised_keys = out.join("promised-keys.txt");
    write_list(&promised_keys, keys)?;
    let missing = out.join("missing-keys.txt");
    let _ = std::fs::remove_file(&missing);
    let mut env = check.env.clone();
    env.insert(MISSING_KEYS_ENV.into(), missing.display().to_string());
    env.insert(PROMISED_ENV.into(), promised.display().to_string());
    env.insert(
        PROMISED_KEYS_ENV.into(),
        promised_keys.display().to_string(),
    );
    let ctl = crate::workload::RunControl::new();
    let ran = crate::workload::command::run_one(
        &check.argv,
        &rig.mount_point,
        &env,
        check.user.as_ref(),
        check.timeout,
        out,
        "",
        &ctl,
        &|| {},
    );
    let records_lost = std::fs::read_to_string(&missing)
        .ok()
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count() as u64);
    let what = format!("check `{}`", crate::workload::command::brief(&check.argv));
    let lost_records = matches!(&ran, Ok(f) if f.status.code() == Some(CHECK_LOST_RECORDS));
    let mut evidence = match &ran {
        Ok(f) if f.status.success() => {
            return Ok(CheckOutcome {
                failure: None,
                records_lost,
            })
        }
        Ok(_) if lost_records => vec![format!(
            "{what}: exit {CHECK_LOST_RECORDS}, promised records missing ({} promised before the cut)",
            keys.len()
        )],
        Ok(f) => vec![format!(
            "{what}: {} in {:.2} s",
            match f.status.code() {
                Some(c) => format!("exit {c}"),
                None => "killed by a signal".into(),
            },
            f.seconds
        )],
        Err(e) => vec![format!("{what}: {e:#}")],
    };
    evidence.extend(last_lines(out, "stdout.txt", tail));
    evidence.extend(last_lines(out, "stderr.txt", tail));
    Ok(CheckOutcome {
        failure: Some(CheckFailure {
            evidence,
            lost_records,
        }),
        records_lost,
    })
}

/// `items`, one per line, into `path`, readable by the check's user.
fn write_list(path: &Path, items: &[impl AsRef<str>]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let text: String = items.iter().map(|i| format!("{}\n", i.as_ref())).collect();
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}
