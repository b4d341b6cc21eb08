//! A timed run: the run's directories, the three phases on the clock, and their
//! results.

use super::*;

/// `time()` at PostMark's four instants, for its whole-second report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WallClock {
    pub start: u64,
    pub t_start: u64,
    pub t_end: u64,
    pub end: u64,
}

pub(super) fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub tally: Tally,
    pub phases: Vec<PhaseResult>,
    pub wall: WallClock,
}

/// Runs the three phases in `dir`, which must exist. The phases' clocks and `time()`
/// readings sit where PostMark's do; the subdirectories are made and removed outside
/// them. On failure or interruption every file and directory the run made is
/// removed, and the error says so (or what was left).
pub fn run_in(cfg: &Postmark, dir: &Path, ctl: &RunControl) -> anyhow::Result<Outcome> {
    cfg.validate()
        .map_err(|e| anyhow::anyhow!("postmark: {}: {}", e.key, e.message))?;
    crate::workload::require_dir(dir)?;
    let mut dirs = Dirs::default();
    if let Err(e) = dirs.prepare(cfg, dir) {
        let made_any = !(dirs.made.is_empty() && dirs.subdirs.is_empty());
        return Err(if made_any {
            crate::workload::after_cleanup(e, "postmark", dir, dirs.remove())
        } else {
            e
        });
    }
    let mut engine = Engine::new(cfg);
    let mut fs = SysFiles::new(cfg, &dirs.locations)?;
    match run_phases(dir, ctl, &mut engine, &mut fs) {
        Ok(outcome) => {
            dirs.remove()?;
            Ok(outcome)
        }
        Err(e) => {
            let files = engine.remove_all(&mut fs);
            let cleanup = match (files, dirs.remove()) {
                (Ok(()), d) => d,
                (Err(f), Ok(())) => Err(f),
                (Err(f), Err(d)) => Err(f.context(format!("{d:#}"))),
            };
            Err(crate::workload::after_cleanup(e, "postmark", dir, cleanup))
        }
    }
}

pub(super) fn run_phases(
    dir: &Path,
    ctl: &RunControl,
    engine: &mut Engine,
    fs: &mut SysFiles,
) -> anyhow::Result<Outcome> {
    let mut wall = WallClock {
        start: unix_seconds(),
        ..WallClock::default()
    };

    ctl.phase_begin("create");
    let started = Instant::now();
    engine
        .create_pool(fs, ctl)
        .context("postmark phase create")?;
    let create = timed_phase("create", started, dir, ctl)?;
    let after_create = engine.counts;

    wall.t_start = unix_seconds();
    ctl.phase_begin("transactions");
    let started = Instant::now();
    let done = engine
        .run_transactions(fs, ctl)
        .context("postmark phase transactions")?;
    let transactions = timed_phase("transactions", started, dir, ctl)?;
    wall.t_end = unix_seconds();
    let after_transactions = engine.counts;

    ctl.phase_begin("delete");
    let started = Instant::now();
    let deleted = engine
        .delete_rest(fs, ctl)
        .context("postmark phase delete")?;
    let delete = timed_phase("delete", started, dir, ctl)?;
    wall.end = unix_seconds();

    let tally = Tally {
        counts: engine.counts,
        creation_alone: after_create.created,
        deletion_alone: deleted,
        transactions_done: done,
    };
    let phases = vec![
        create_result(create, &after_create),
        transactions_result(transactions, done, &after_create, &after_transactions),
        delete_result(delete, &tally),
    ];
    Ok(Outcome {
        tally,
        phases,
        wall,
    })
}

/// Stops the plain clock, then lets `finish_phase` add the flush with `durable`.
pub(super) fn timed_phase(
    name: &str,
    started: Instant,
    dir: &Path,
    ctl: &RunControl,
) -> anyhow::Result<PhaseResult> {
    let seconds = started.elapsed().as_secs_f64();
    let durable_seconds = ctl.finish_phase(dir, started)?;
    ctl.phase_end(name);
    Ok(PhaseResult {
        name: name.to_string(),
        seconds,
        durable_seconds,
        ..PhaseResult::default()
    })
}

pub(super) fn create_result(mut r: PhaseResult, c: &Counts) -> PhaseResult {
    r.ops = c.created;
    r.bytes = c.bytes_written;
    r.op_unit = "file creates".to_string();
    r.counters = [("created", c.created), ("bytes_written", c.bytes_written)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    r
}

pub(super) fn transactions_result(
    mut r: PhaseResult,
    done: u32,
    before: &Counts,
    after: &Counts,
) -> PhaseResult {
    let read = after.bytes_read - before.bytes_read;
    let written = after.bytes_written - before.bytes_written;
    r.ops = u64::from(done);
    r.bytes = read + written;
    r.op_unit = "transactions".to_string();
    r.counters = [
        ("transactions", u64::from(done)),
        ("created", after.created - before.created),
        ("read", after.read - before.read),
        ("appended", after.appended - before.appended),
        ("deleted", after.deleted - before.deleted),
        ("bytes_read", read),
        ("bytes_written", written),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    r
}

pub(super) fn delete_result(mut r: PhaseResult, t: &Tally) -> PhaseResult {
    let c = &t.counts;
    r.ops = t.deletion_alone;
    r.op_unit = "file deletes".to_string();
    r.counters = [
        ("deleted", t.deletion_alone),
        ("total_created", c.created),
        ("total_read", c.read),
        ("total_appended", c.appended),
        ("total_deleted", c.deleted),
        ("total_bytes_read", c.bytes_read),
        ("total_bytes_written", c.bytes_written),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    r
}
