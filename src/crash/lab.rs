//! One recorded trial through the crash lab: read its write log, plan the states,
//! build each on the recovery rig, judge it, time some recoveries, lose the RAM
//! journal where there is one, and hand each state's record to the caller.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};

use super::block_map;
use super::fast_path::{self, Decision, FastPath};
use super::journal_scan::{scan_log, JournalNotes};
use super::lost_journal_memo::{Lookup, LostJournalMemo};
use super::options::{CrashOptions, Strategy};
use super::oracle;
use super::pool;
use super::promises::PromiseBook;
use super::recover::RecoveryRig;
use super::states::{
    blocks_of, journal_live, plan_knowing, Coverage, DiskTraits, FileWrites, LogRec, Marks,
    StatePlan, DEFAULT_BLOCK,
};
use super::user_verdict::{self, Fast};
use super::verdict_cache::{self, VerdictCache};
use crate::emu::writelog::{read_payload, LogHeader, LogReader, RecordKind};
use crate::events::{step, Activity};
use crate::experiment::config::{Config, FsType};
use crate::results::crash::{
    CrashRecord, FsyncMark, JudgedBy, TornWrite, Verdict, CRASH_SCHEMA_VERSION,
};
use crate::results::record::TrialRecord;
use crate::workload::RunControl;

/// A write log read into memory without its payloads.
pub struct LoadedLog {
    pub header: LogHeader,
    pub recs: Vec<LogRec>,
}

pub fn load_log(path: &Path) -> Result<LoadedLog> {
    let mut r = LogReader::open(path)?;
    let header = r.header.clone();
    let mut recs = Vec::new();
    while let Some(meta) = r.next_meta()? {
        let label = if meta.kind == RecordKind::Marker {
            Some(String::from_utf8_lossy(&read_payload(r.file(), &meta)?).into_owned())
        } else {
            None
        };
        recs.push(LogRec { meta, label });
    }
    Ok(LoadedLog { header, recs })
}

/// How each disk of the log treats acknowledged writes. A version 1 log does not say:
/// its disks are taken to have volatile caches that honour flushes (hdd-7200's
/// defaults), which can only add states, never hide one. Logical blocks are 4 KiB
/// (the loop devices'); [`with_blocks`] sets what the devices say.
pub fn disk_traits(header: &LogHeader) -> Vec<DiskTraits> {
    header
        .disks
        .iter()
        .map(|d| DiskTraits {
            volatile_cache: d.volatile_cache.unwrap_or(true),
            honor_flush: d.honor_flush.unwrap_or(true),
            block: DEFAULT_BLOCK,
        })
        .collect()
}

/// The traits with each disk's logical block size as its device reports it.
pub fn with_blocks(mut traits: Vec<DiskTraits>, blocks: &[u64]) -> Vec<DiskTraits> {
    for (t, b) in traits.iter_mut().zip(blocks) {
        t.block = *b;
    }
    traits
}

/// A configuration built to lose data: a disk that ignores flushes, or flushes turned
/// off while a disk has a volatile cache.
pub fn is_negative_control(config: &Config, header: &LogHeader) -> bool {
    let lying = header.disks.iter().any(|d| d.honor_flush == Some(false));
    let no_barrier = config
        .mount_options
        .iter()
        .any(|o| matches!(o.as_str(), "barrier=0" | "nobarrier"));
    let volatile = disk_traits(header).iter().any(|t| t.volatile_cache);
    config.negative_control || lying || (no_barrier && volatile)
}

/// Whether a lost-journal recovery applies: ext3/ext4 or XFS with its journal (log)
/// alone on a disk whose model does not keep its contents across the power cut (`ram`;
/// an `nvram` disk keeps them), unless `lose_journal = false` turns it off.
pub fn journal_can_be_lost(config: &Config, opts: &CrashOptions) -> bool {
    let forgets = config
        .journal_model
        .as_ref()
        .is_some_and(|m| !crate::emu::keeps_contents(&m.model));
    (config.fs_type.is_ext() || config.fs_type == FsType::Xfs)
        && forgets
        && opts.lose_journal.unwrap_or(true)
}

/// Which states (by number) are also recovered with model timing on: `n` spread
/// evenly over the `total`.
pub fn timed_states(total: usize, n: u32) -> BTreeSet<usize> {
    let n = (n as usize).min(total);
    (0..n).map(|i| i * total / n.max(1)).collect()
}

/// Which states are timed when some are `fill` states (`preferred`): half the `n`
/// (rounded up) spread over them, so the replay of the fullest journals is timed, and
/// the rest over the others, so the typical replay is too. Without preferred states,
/// [`timed_states`].
pub fn timed_states_preferring(preferred: &[bool], n: u32) -> BTreeSet<usize> {
    let (ours, others): (Vec<usize>, Vec<usize>) =
        (0..preferred.len()).partition(|&i| preferred[i]);
    let want = (n as usize).min(preferred.len());
    let from_ours = want.div_ceil(2).min(ours.len());
    let from_others = (want - from_ours).min(others.len());
    // Whatever one side cannot take goes to the other.
    let from_ours = (want - from_others).min(ours.len());
    let pick = |of: &[usize], k: usize| -> Vec<usize> {
        timed_states(of.len(), k as u32)
            .into_iter()
            .map(|i| of[i])
            .collect()
    };
    pick(&ours, from_ours)
        .into_iter()
        .chain(pick(&others, from_others))
        .collect()
}

/// Which states are timed when each state's live journal blocks are known: `n`
/// spread evenly over the range of live blocks, from the emptiest to the fullest
/// (ties broken by state number), so recovery is measured against how much there is
/// to replay, at its fullest included, not wherever the states happened to fall.
pub fn timed_states_spread(live: &[u64], n: u32) -> BTreeSet<usize> {
    let n = (n as usize).min(live.len());
    if n == 0 {
        return BTreeSet::new();
    }
    let mut by_live: Vec<usize> = (0..live.len()).collect();
    by_live.sort_by_key(|&i| (live[i], i));
    let last = live.len() - 1;
    if n == 1 {
        return BTreeSet::from([by_live[last]]);
    }
    let mut out: BTreeSet<usize> = (0..n)
        .map(|k| by_live[(k * last + (n - 1) / 2) / (n - 1)])
        .collect();
    // Rounding may pick a rank twice: fill up from the fullest end.
    for &i in by_live.iter().rev() {
        if out.len() >= n {
            break;
        }
        out.insert(i);
    }
    out
}

/// What one recorded trial needs from the run.
pub struct Recorded<'a> {
    pub config: &'a Config,
    pub record: &'a TrialRecord,
    pub log: &'a Path,
}

/// Counts for the progress line and the caller's summary.
#[derive(Debug, Default, Clone)]
pub struct LabTally {
    pub states: u64,
    pub failures: u64,
    /// Seconds spent building and judging states (`check_seconds` summed).
    pub seconds: f64,
    /// Wall seconds of the whole lab on this trial: recovery timing, the lost journal
    /// and set-up included.
    pub wall_seconds: f64,
    pub interrupted: bool,
}

impl LabTally {
    fn count(&mut self, record: &CrashRecord) {
        self.failures += u64::from(record.verdict.is_failure());
        self.states += 1;
        self.seconds += record.check_seconds;
    }
}

/// The lab's progress line, every 5 seconds.
struct Progress {
    last: Instant,
    started: Instant,
    /// States judged before this run (a resumed one), of `total`.
    already: usize,
    total: usize,
    judged: usize,
}

impl Progress {
    fn judged_one(&mut self, t: &Recorded<'_>, failures: u64) {
        self.judged += 1;
        if self.last.elapsed().as_secs() < 5 {
            return;
        }
        self.last = Instant::now();
        let rate = self.judged as f64 / self.started.elapsed().as_secs_f64();
        let done = self.already + self.judged;
        let total = self.total;
        say(
            t,
            &format!("{done}/{total} states, {failures} failed, {rate:.1} states/s"),
        );
    }
}

/// A seed per configuration x workload, so adding a configuration does not change the
/// states of the others.
fn seed_for(seed: u64, config: &str, workload: &str) -> u64 {
    // FNV-1a: stable across Rust versions, unlike the standard hasher.
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in config.bytes().chain([0]).chain(workload.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Runs the lab on one recorded trial. `done` holds state numbers already in
/// crash.jsonl (a resumed run skips them); `emit` stores each new record.
#[allow(clippy::too_many_arguments)]
pub fn test_trial(
    work_dir: &Path,
    t: &Recorded<'_>,
    opts: &CrashOptions,
    seed: u64,
    done: &BTreeSet<u64>,
    ctl: &RunControl,
    emit: &mut dyn FnMut(CrashRecord) -> Result<()>,
) -> Result<LabTally> {
    let config = t.config;
    let wl = &t.record.workload;
    let log = load_log(t.log)
        .with_context(|| format!("configuration `{}`, workload `{}`", config.label, wl.name))?;
    let marks = Marks::of(&log.recs)?;
    let negative = is_negative_control(config, &log.header);
    let trial_mount = mount_point(t);
    let book = PromiseBook::new(&wl.kind, &wl.params, &trial_mount, &config.env);
    let checks_promises = book.checks_promises(&marks);
    let lose = journal_can_be_lost(config, opts);
    // A failure drops (and so releases) the rigs already made.
    let mut rigs = vec![rig_for(work_dir, t, &log.header, opts)?];
    // The unit a power cut cannot split is the device's logical block: ask it.
    let traits = with_blocks(disk_traits(&log.header), &rigs[0].logical_blocks()?);
    let journal = journal_notes(t, &log)?;
    let files = file_writes(work_dir, t, &log, &traits, &marks, opts);
    let (plans, coverage) = plan_knowing(
        &log.recs,
        &traits,
        opts,
        seed_for(seed, &config.label, &wl.name),
        journal.as_ref().unwrap_or(&JournalNotes::default()),
        &files,
    )?;
    let timed = timed_of(&plans, journal.as_ref(), opts.recovery_timing);
    // Each strategy's count once: its part of the plan and of its space.
    let said = format!(
        "{} from {} log records{}{}",
        coverage.describe_plan(plans.len() as u64),
        log.recs.len(),
        no_fill_words(opts, &coverage, journal.as_ref()),
        if negative {
            "; a negative control: it should lose data"
        } else {
            ""
        }
    );
    say(t, &said);
    let todo: Vec<usize> = (0..plans.len())
        .filter(|i| !done.contains(&(*i as u64)))
        .collect();
    let mut tally = LabTally::default();
    let started = Instant::now();
    if todo.is_empty() {
        return Ok(tally);
    }
    let rigs_n = rigs_for(lose, todo.len(), book.starts_an_application());
    let cache = VerdictCache::default();
    let fast = FastPath::default();
    let lost_memo = (lose && verdict_cache::enabled())
        .then(|| LostJournalMemo::of_log(&log.header, &log.recs))
        .flatten();
    while rigs.len() < rigs_n {
        rigs.push(rig_for(work_dir, t, &log.header, opts)?);
    }
    let inodes = inode_count(&mut rigs[0], &log.recs, plans.first(), config.fs_type);
    let st = StateInputs {
        t,
        log: &log,
        plans: &plans,
        marks: &marks,
        book: &book,
        checks_promises,
        coverage: &coverage,
        timed: &timed,
        lose,
        negative,
        inodes,
        journal: journal.as_ref(),
        files: &files,
        traits: &traits,
        cache: verdict_cache::enabled().then_some(&cache),
        fast: fast_path::enabled().then_some(&fast),
        lost: lost_memo.as_ref(),
    };
    let mut progress = Progress {
        last: Instant::now(),
        started,
        already: plans.len() - todo.len(),
        total: plans.len(),
        judged: 0,
    };
    let interrupted = pool::check_states(
        rigs,
        &todo,
        |rig, i| check_state(rig, &st, i),
        &|| ctl.stop_requested(),
        |_, record: CrashRecord| {
            tally.count(&record);
            emit(record)?;
            progress.judged_one(t, tally.failures);
            Ok(())
        },
    )?;
    let judged = progress.judged;
    tally.interrupted = interrupted;
    // The rigs work side by side: the states' own times overlap.
    tally.seconds /= rigs_n as f64;
    tally.wall_seconds = started.elapsed().as_secs_f64();
    let lost_said = lost_memo.as_ref().and_then(|m| m.summary());
    for said in [cache.summary(judged), fast.summary(judged), lost_said]
        .into_iter()
        .flatten()
    {
        say(t, &said);
    }
    Ok(tally)
}

/// How many rigs check the states. Every rig serves the same disks, with the same
/// file-system and journal UUIDs. The lost-journal procedure's `tune2fs -O
/// ^has_journal` looks the external journal up by UUID among all block devices and
/// rewrites the one it finds: with rigs side by side, another rig's journal, in the
/// middle of its own state. So a trial whose journal is lost gets one.
fn rigs_for(lose: bool, states: usize, app: bool) -> usize {
    if lose {
        1
    } else {
        pool::rig_count(states, app)
    }
}

fn rig_for(
    work_dir: &Path,
    t: &Recorded<'_>,
    header: &LogHeader,
    opts: &CrashOptions,
) -> Result<RecoveryRig> {
    RecoveryRig::new(work_dir, t.config, header, t.log, opts.mount_timeout)
}

/// A progress line of trial `t`'s lab.
fn say(t: &Recorded<'_>, what: &str) {
    step(
        Activity::CrashLab,
        format!("{} / {}: {what}", t.config.label, t.record.workload.name),
    );
}

/// The log's jbd2 blocks: only a jbd2 journal is read (XFS's log has its own
/// format, and no record of an XFS state gets `journal_live`).
fn journal_notes(t: &Recorded<'_>, log: &LoadedLog) -> Result<Option<JournalNotes>> {
    if !t.config.fs_type.is_ext() {
        return Ok(None);
    }
    let notes = scan_log(t.log, log.recs.iter().map(|r| &r.meta)).with_context(|| {
        format!(
            "reading the journal blocks of configuration `{}`",
            t.config.label
        )
    })?;
    Ok(Some(notes))
}

/// The states whose recovery is timed: spread over the live journal where it is
/// known, else `fill` states first.
fn timed_of(plans: &[StatePlan], journal: Option<&JournalNotes>, n: u32) -> BTreeSet<usize> {
    match journal {
        Some(notes) => {
            let live: Vec<u64> = plans
                .iter()
                .map(|p| journal_live(notes, p).blocks)
                .collect();
            timed_states_spread(&live, n)
        }
        None => {
            let fill: Vec<bool> = plans.iter().map(|p| p.strategy == Strategy::Fill).collect();
            timed_states_preferring(&fill, n)
        }
    }
}

/// Which file each logged write's blocks hold, for the strategies that read the labels
/// (kept beside the log), and where the file system was mounted. Without labels
/// torn-data has no state and its share goes to the others: a run is not lost to a
/// debugfs that cannot read one image.
fn file_writes(
    work_dir: &Path,
    t: &Recorded<'_>,
    log: &LoadedLog,
    traits: &[DiskTraits],
    marks: &Marks,
    opts: &CrashOptions,
) -> FileWrites {
    let mount = mount_point(t);
    if !opts.strategies.iter().any(|s| s.reads_block_labels()) {
        return FileWrites {
            mount,
            ..FileWrites::default()
        };
    }
    let from = marks.timing_on;
    match block_map::of_recording(work_dir, t.config, &log.header, t.log, &log.recs, from) {
        Ok(map) => {
            for note in &map.notes {
                say(t, note);
            }
            FileWrites {
                mount,
                ..block_map::file_writes(&map, &log.recs, traits, from)
            }
        }
        Err(e) => {
            say(t, &format!(
                "the logged blocks could not be labelled ({e:#}); torn-data plans no state, and flush-subset and last-writes know files by the promises alone"
            ));
            FileWrites {
                mount,
                ..FileWrites::default()
            }
        }
    }
}

/// Where the recording's file system was mounted (its markers name absolute paths).
fn mount_point(t: &Recorded<'_>) -> String {
    t.record
        .layout
        .get("mount_point")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string()
}

/// What every state of one trial shares, for [`check_state`].
struct StateInputs<'a> {
    t: &'a Recorded<'a>,
    log: &'a LoadedLog,
    plans: &'a [StatePlan],
    marks: &'a Marks,
    book: &'a PromiseBook,
    checks_promises: bool,
    coverage: &'a Coverage,
    timed: &'a BTreeSet<usize>,
    lose: bool,
    negative: bool,
    inodes: u64,
    /// The log's jbd2 blocks (ext3/ext4 only).
    journal: Option<&'a JournalNotes>,
    /// Which writes hold file data, to name the page a torn state tears.
    files: &'a FileWrites,
    traits: &'a [DiskTraits],
    /// Application verdicts of this trial's states, for states with the same input.
    cache: Option<&'a VerdictCache>,
    /// The user-space verdict, where it is on.
    fast: Option<&'a FastPath>,
    /// Lost-journal outcomes of this trial's states, for states with the same input.
    lost: Option<&'a LostJournalMemo>,
}

/// The lab on state `i`, on a rig of its own: build it, judge it, time its recovery
/// and lose its journal where asked, and make its record.
fn check_state(rig: &mut RecoveryRig, s: &StateInputs<'_>, i: usize) -> Result<CrashRecord> {
    let config = s.t.config;
    let wl = &s.t.record.workload;
    let plan = &s.plans[i];
    let log = s.log;
    let state_started = Instant::now();
    let fsyncs = s.marks.fsyncs_before(plan.cut);
    let promises = s.book.at(s.marks, plan.cut);
    let (judged, by) = judge_state(rig, s, i, &promises)?;
    let check_seconds = state_started.elapsed().as_secs_f64();
    let mut timings = None;
    if s.timed.contains(&i) && !judged.hung && judged.verdict != Verdict::Unmountable {
        rig.load(&log.recs, plan)?;
        let recs = &log.recs;
        let rig_ref: &RecoveryRig = rig;
        // The reload only clears and reloads the overlay: the base stays put.
        timings = oracle::time_recovery(rig_ref, promises.check.as_ref(), &mut || {
            reload(rig_ref, recs, plan)
        })?;
    }
    let mut lost_journal = None;
    let mut loaded = by.loaded;
    if s.lose && !judged.hung {
        // The application's check belongs to the state as the power cut left it.
        let no_check = oracle::Promises {
            check: None,
            ..promises.clone()
        };
        let lookup = s.lost.map(|m| m.lookup(m.key(&log.recs, plan, &no_check)));
        lost_journal = Some(match lookup {
            Some(Lookup::Hit(lj)) => lj,
            lookup => {
                rig.load(&log.recs, plan)?;
                loaded = true;
                rig.daemon().overlay_lose("journal")?;
                let lj = oracle::lose_journal(rig, &no_check, config.journal_size)?;
                match (lookup, s.lost) {
                    (Some(Lookup::Miss(key)), Some(m)) => m.ran(key, lj, None),
                    (Some(Lookup::Audit(key, kept)), Some(m)) => m.ran(key, lj, Some(&kept)),
                    _ => lj,
                }
            }
        });
    }
    if loaded {
        rig.clear()?;
    }
    Ok(CrashRecord {
        schema: CRASH_SCHEMA_VERSION,
        config: config.label.clone(),
        workload: wl.name.clone(),
        trial: s.t.record.trial,
        state: i as u64,
        strategy: plan.strategy.to_string(),
        cut: plan.cut,
        kept: plan.kept,
        dropped: plan.dropped,
        dropped_blocks: plan.dropped_blocks,
        stratum: plan.stratum.clone(),
        coverage: Some(s.coverage.clone()),
        torn: plan.torn.map(|(seq, kept_bytes, len)| {
            let rec = &log.recs[seq as usize];
            let block = s
                .traits
                .get(rec.disk as usize)
                .map_or(DEFAULT_BLOCK, |t| t.block);
            let at = s
                .files
                .torn_at(seq, kept_bytes, &blocks_of(&rec.meta, block));
            TornWrite {
                seq,
                kept_bytes,
                len,
                file: at.map(|a| a.0.to_string()),
                file_offset: at.and_then(|a| a.1),
            }
        }),
        last_fsync: fsyncs.last().map(|(seq, p)| FsyncMark {
            seq: *seq,
            path: s.book.relative(p),
        }),
        fsynced_files: judged.checked,
        verdict: judged.verdict,
        evidence: judged.evidence,
        timings,
        journal_live: s.journal.map(|n| journal_live(n, plan)),
        lost_journal,
        check_seconds,
        filesystem: config.fs_type.to_string(),
        placement: config.placement.to_string(),
        mode: config.mode_label().to_string(),
        journal_size: config.journal_bytes(),
        inodes: s.inodes,
        negative_control: s.negative,
        torn_page_control: config.torn_page_control,
        checks_fsync: s.checks_promises,
        user_check: s.book.has_check() && judged.mounted,
        hung: judged.hung,
        records_promised: promises.keys.len() as u64,
        records_lost: judged.records_lost,
        check_cache: judged.cache,
        judged_by: Some(by.judged_by),
        fast_fallback: by.fallback,
        outcome: by.outcome,
    })
}

/// Who judged a state, for its record.
struct JudgedHow {
    judged_by: JudgedBy,
    fallback: Option<String>,
    outcome: Option<String>,
    /// The daemon serves the state (the kernel's path ran): clear it after.
    loaded: bool,
}

/// Judges state `i`: in user space where the path applies and the kernel need not
/// audit it, else (and also) by the kernel, whose verdict then stands.
fn judge_state(
    rig: &mut RecoveryRig,
    s: &StateInputs<'_>,
    i: usize,
    promises: &oracle::Promises,
) -> Result<(oracle::Judgement, JudgedHow)> {
    let plan = &s.plans[i];
    let recs = &s.log.recs;
    let fast = match s
        .fast
        .filter(|f| f.is_on() && fast_path::applies(s.t.config, promises, s.timed.contains(&i)))
    {
        Some(f) => {
            let (state, fs, journal) = rig.user_state(recs, plan)?;
            let fast =
                user_verdict::judge_once(Arc::new(state), fs, journal, promises, Some(&f.memo));
            Some((f, fast))
        }
        None => None,
    };
    let mut how = JudgedHow {
        judged_by: JudgedBy::Kernel,
        fallback: None,
        outcome: None,
        loaded: true,
    };
    if let Some((
        f,
        Fast::Ok {
            checked,
            transactions,
            outcome,
            repeated,
        },
    )) = &fast
    {
        how.outcome = Some(outcome[..8].iter().map(|b| format!("{b:02x}")).collect());
        if f.called_ok(outcome) == Decision::Trust {
            how.judged_by = JudgedBy::UserSpace;
            how.loaded = false;
            let judged = oracle::Judgement {
                verdict: Verdict::Ok,
                evidence: vec![format!(
                    "user space: {transactions} committed transactions replayed in memory, {checked} promises {}; not mounted, no fsck (a sample of such states is audited by the kernel)",
                    if *repeated {
                        "held: every block their check reads holds the bytes it held in a state judged before"
                    } else {
                        "read back whole"
                    }
                )],
                checked: *checked,
                hung: false,
                mounted: true,
                records_lost: None,
                cache: None,
            };
            return Ok((judged, how));
        }
    }
    rig.load(recs, plan)?;
    let mut judged = oracle::judge(rig, promises, s.cache)?;
    if judged.hung {
        rig.restart_daemon()?;
    }
    if let Some((f, fast)) = &fast {
        if let Fast::Fallback(why) = fast {
            f.fell_back(why);
            how.fallback = Some(why.clone());
        } else {
            let (by, said) = f.audit(fast, judged.verdict);
            how.judged_by = by;
            judged.evidence.extend(said);
        }
    }
    Ok((judged, how))
}

fn reload(rig: &RecoveryRig, recs: &[LogRec], plan: &StatePlan) -> Result<()> {
    // `load` needs `&mut` only to move the base, which is already at `plan.base`.
    rig.clear()?;
    rig.reload_overlay(recs, plan)
}

/// Why `fill` made no state, for the progress line; empty when it made some or was
/// not asked for. Its share went to the strategies after it.
fn no_fill_words(opts: &CrashOptions, cov: &Coverage, journal: Option<&JournalNotes>) -> String {
    if !opts.strategies.contains(&Strategy::Fill) || cov.space(Strategy::Fill) > 0.0 {
        return String::new();
    }
    match journal {
        None => "; fill: no state, only an ext3/ext4 journal is read".into(),
        Some(j) if j.is_empty() => "; fill: no state, the log holds no jbd2 journal block".into(),
        Some(_) => {
            "; fill: no state, the journal holds no committed transaction at any persistence point"
                .into()
        }
    }
}

/// Inodes of the file system, read from the first state's superblock (ext only).
fn inode_count(
    rig: &mut RecoveryRig,
    recs: &[LogRec],
    first: Option<&StatePlan>,
    fs: FsType,
) -> u64 {
    let (Some(plan), true) = (first, fs.is_ext()) else {
        return 0;
    };
    let count = (|| -> Result<u64> {
        rig.load(recs, plan)?;
        let att = rig.attach()?;
        let sb = crate::rig::ext4::superblock(att.fs_path());
        att.release()?;
        rig.clear()?;
        Ok(sb?
            .get("Inode count")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0))
    })();
    count.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_states_spread_over_the_run() {
        assert_eq!(timed_states(100, 4), BTreeSet::from([0, 25, 50, 75]));
        // Spread over live blocks: the emptiest, the fullest and evenly between, by
        // rank, whatever the states' order.
        let live = [50, 0, 400, 100, 300, 200, 0, 400];
        assert_eq!(timed_states_spread(&live, 1), BTreeSet::from([7]));
        let two = timed_states_spread(&live, 2);
        assert!(two.contains(&1) && two.contains(&7), "{two:?}");
        let four = timed_states_spread(&live, 4);
        assert_eq!(four.len(), 4);
        assert!(four.contains(&1) && four.contains(&7), "{four:?}");
        assert_eq!(timed_states_spread(&live, 20).len(), live.len());
        assert!(timed_states_spread(&live, 0).is_empty());
        assert!(timed_states_spread(&[], 3).is_empty());
        assert_eq!(timed_states(3, 10), BTreeSet::from([0, 1, 2]));
        assert!(timed_states(50, 0).is_empty());
        assert!(timed_states(0, 5).is_empty());
        // Half the timings go to the fill states, the rest to the others.
        let fill = [false, true, false, true, true, false, false, false];
        let t = timed_states_preferring(&fill, 4);
        assert_eq!(t.len(), 4);
        assert_eq!(t.iter().filter(|&&i| fill[i]).count(), 2);
        // No fill state: as before; too few of one kind: the other takes the rest.
        assert_eq!(
            timed_states_preferring(&[false; 100], 4),
            timed_states(100, 4)
        );
        let t = timed_states_preferring(&[true, false, false, false, false], 4);
        assert_eq!(t.len(), 4);
        assert!(t.contains(&0));
    }

    #[test]
    fn seeds_differ_per_configuration_and_workload_and_are_stable() {
        assert_ne!(seed_for(1, "a", "b"), seed_for(1, "ab", ""));
        assert_ne!(seed_for(1, "a", "b"), seed_for(2, "a", "b"));
        assert_eq!(seed_for(1, "a", "b"), seed_for(1, "a", "b"));
    }
}
