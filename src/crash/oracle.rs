//! Recovers one crash state and judges it. The order matters: mount first (the kernel
//! replays the journal, as after a real power cut), fsck only when the mount fails;
//! then what fsync promised is compared with what is there; then unmount and a
//! read-only fsck of the recovered file system.

use std::path::Path;
use std::time::Instant;

use std::sync::Arc;

use anyhow::Result;

use super::recover::{Attached, RecoveryRig};
pub use super::user_check::UserCheck;
use super::verdict_cache::{self, CacheUse, VerdictCache};
use crate::experiment::config::FsType;
use crate::results::crash::{LostJournal, RecoveryTimes, Verdict};
use crate::rig::cmd::Ran;

/// How many output lines of a tool go into the evidence.
const EVIDENCE_LINES: usize = 6;

/// What a promise says must be there after recovery.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// The file exists.
    Exists,
    /// The file holds exactly these bytes.
    Bytes(Arc<[u8]>),
    /// The file's SHA-256 (lowercase hex).
    Sha256(String),
    /// The file exists and is not empty.
    NonEmpty,
    /// The file holds `len` bytes at `offset`: these when known.
    Range {
        offset: u64,
        len: u64,
        bytes: Option<Arc<[u8]>>,
    },
}

/// One promise: a path relative to the file system's root and what it must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Promise {
    pub path: String,
    pub expect: Expect,
}

/// What the workload promised at a cut.
#[derive(Debug, Clone, Default)]
pub struct Promises {
    pub items: Vec<Promise>,
    /// Application records the command promised before the cut (`durable-key KEY`),
    /// in the order it promised them: handed to the check in `$JBENCH_PROMISED_KEYS`.
    pub keys: Vec<String>,
    /// The workload may have removed files by the cut (its `remove` phase began):
    /// a missing file is then no loss, a present one must still be whole.
    pub removal_started: bool,
    /// Run after the promises were compared, before the unmount.
    pub check: Option<UserCheck>,
}

/// The oracle's conclusion on one state.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub verdict: Verdict,
    pub evidence: Vec<String>,
    pub checked: u64,
    /// The daemon had to be aborted (a step hung): restart it before the next state.
    pub hung: bool,
    /// The state mounted (so the promises and the user's check were looked at).
    pub mounted: bool,
    /// Promised records the workload's check listed missing.
    pub records_lost: Option<u64>,
    /// Whether the application's verdict was reused or audited (`verdict_cache`).
    pub cache: Option<CacheUse>,
}

fn lines(prefix: &str, ran: &Ran) -> Vec<String> {
    let mut v = vec![format!(
        "{prefix}: {} in {:.2} s",
        match (ran.timed_out, ran.code) {
            (true, _) => "timed out".to_string(),
            (false, Some(c)) => format!("exit {c}"),
            (false, None) => "killed".to_string(),
        },
        ran.seconds
    )];
    // Banners and pass headings say nothing about this state.
    let noise = |l: &str| {
        let t = l.trim_start();
        t.starts_with("Pass ")
            || [
                "e2fsck 1.",
                "tune2fs 1.",
                "debugfs 1.",
                "Phase ",
                "        - ",
            ]
            .iter()
            .any(|p| l.starts_with(p) || t.starts_with(p.trim()))
    };
    v.extend(
        ran.output
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty() && !noise(l))
            .take(EVIDENCE_LINES)
            .map(|l| format!("  {l}")),
    );
    v
}

/// The kernel's log from a point on: opened at its end before a step, read after
/// it, so nothing an earlier state made the kernel say is quoted for this one (loop
/// device names are reused from state to state).
pub struct KernelLog(Option<std::fs::File>);

impl KernelLog {
    pub fn open() -> Self {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()
            .and_then(|mut f| f.seek(SeekFrom::End(0)).ok().map(|_| f));
        KernelLog(f)
    }

    /// Messages logged since [`Self::open`].
    pub fn since(&self) -> Vec<String> {
        use std::io::Read;
        let Some(f) = &self.0 else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            // One record per read; EAGAIN once there are no more.
            match (&*f).read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    if let Some((_, msg)) = rec.split_once(';') {
                        out.push(msg.lines().next().unwrap_or("").to_string());
                    }
                }
                // EPIPE: records were overwritten while we read; go on from there.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        out
    }
}

/// What the kernel said about this state's devices since its mount began.
fn kernel_says(log: &KernelLog, att: &Attached) -> Vec<String> {
    let names: Vec<String> = std::iter::once(att.fs_path())
        .chain(att.journal_path())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut hits: Vec<String> = log
        .since()
        .into_iter()
        .filter(|l| {
            names.iter().any(|n| {
                l.contains(&format!("{n}:"))
                    || l.contains(&format!("({n})"))
                    || l.contains(&format!("{n} "))
            })
        })
        .collect();
    let n = hits.len();
    hits.drain(..n.saturating_sub(3));
    hits.into_iter().map(|l| format!("  kernel: {l}")).collect()
}

/// fsck in the file system's own terms: read-only (`-n`) after recovery, repairing
/// (`-y`) when the state did not mount.
/// A second file system is checked the same way after the first, and the two read as
/// one check: clean only when both are.
fn fsck(rig: &RecoveryRig, att: &Attached, repair: bool) -> Result<(String, Ran)> {
    let first = fsck_one(rig, att.fs_path(), att.journal_path(), repair)?;
    let Some(second) = att.second_path() else {
        return Ok(first);
    };
    let (what2, ran2) = fsck_one(rig, second, None, repair)?;
    let (what1, ran1) = first;
    let code = match (ran1.code, ran2.code) {
        (Some(a), Some(b)) if rig.fs_type == FsType::Xfs => Some(a.max(b)),
        (Some(a), Some(b)) => Some(a | b),
        _ => None,
    };
    Ok((
        format!("{what1}; {what2}"),
        Ran {
            code,
            output: format!("{}{}", ran1.output, ran2.output),
            seconds: ran1.seconds + ran2.seconds,
            timed_out: ran1.timed_out || ran2.timed_out,
        },
    ))
}

fn fsck_one(
    rig: &RecoveryRig,
    dev: &Path,
    journal: Option<&Path>,
    repair: bool,
) -> Result<(String, Ran)> {
    let dev = dev.display().to_string();
    let j = journal.map(|p| p.display().to_string());
    Ok(match rig.fs_type {
        FsType::Xfs => {
            let mut args = vec![if repair { "-L" } else { "-n" }];
            if let Some(j) = &j {
                args.extend(["-l", j.as_str()]);
            }
            args.push(&dev);
            (
                format!("xfs_repair {}", args.join(" ")),
                rig.step("xfs_repair", &args)?,
            )
        }
        _ => {
            let mut args = vec![if repair { "-fy" } else { "-fn" }];
            if let Some(j) = &j {
                args.extend(["-j", j.as_str()]);
            }
            args.push(&dev);
            (
                format!("e2fsck {}", args.join(" ")),
                rig.step("e2fsck", &args)?,
            )
        }
    })
}

/// e2fsck exit 8 (operational error) or a timeout: no verdict on the file system.
fn fsck_failed_to_run(fs: FsType, ran: &Ran) -> bool {
    ran.timed_out
        || match fs {
            FsType::Xfs => ran.code.is_none_or(|c| c > 1),
            _ => ran.code.is_none_or(|c| c & 8 != 0),
        }
}

pub use super::promise_check::{check_files, check_promises, PromisedTree};

/// Mounts, checks, unmounts and fscks the state the rig serves now.
pub fn judge(rig: &RecoveryRig, p: &Promises, cache: Option<&VerdictCache>) -> Result<Judgement> {
    let att = rig.attached()?;
    let out = judge_attached(rig, att, p, cache);
    if rig.is_mounted() {
        let _ = rig.unmount();
    }
    out
}

fn judge_attached(
    rig: &RecoveryRig,
    att: &Attached,
    p: &Promises,
    cache: Option<&VerdictCache>,
) -> Result<Judgement> {
    let mut evidence = Vec::new();
    let kernel = KernelLog::open();
    let mount = rig.mount(att)?;
    evidence.extend(lines("mount", &mount));
    if mount.timed_out {
        return Ok(Judgement {
            verdict: Verdict::NoVerdict,
            evidence: vec![format!(
                "the mount hung for more than {} s (mount_timeout); the device daemon was aborted",
                rig.timeout.as_secs()
            )],
            checked: 0,
            hung: true,
            mounted: false,
            records_lost: None,
            cache: None,
        });
    }
    if !mount.ok() {
        evidence.extend(kernel_says(&kernel, att));
        let (what, ran) = fsck(rig, att, true)?;
        evidence.extend(lines(&what, &ran));
        return Ok(Judgement {
            verdict: Verdict::Unmountable,
            evidence,
            checked: 0,
            hung: ran.timed_out,
            mounted: false,
            records_lost: None,
            cache: None,
        });
    }
    let (missing, different) = check_files(&rig.mount_point, p);
    let checked = p.items.len() as u64;
    let (check_failed, records_lost, cache_use) = match &p.check {
        Some(c) => {
            let paths: Vec<&str> = p.items.iter().map(|i| i.path.as_str()).collect();
            verdict_cache::checked_or_cached(rig, c, &paths, &p.keys, EVIDENCE_LINES, cache)?
        }
        None => (None, None, None),
    };
    rig.unmount()?;
    let (what, ran) = fsck(rig, att, false)?;
    let lost = missing.len() + different.len();
    if lost > 0 {
        evidence.push(format!(
            "{} of {checked} promises broken (what fsync or a durable line promised): {} missing, {} different",
            lost,
            missing.len(),
            different.len()
        ));
        evidence.extend(
            missing
                .iter()
                .chain(&different)
                .take(EVIDENCE_LINES)
                .map(|l| format!("  {l}")),
        );
    }
    if let Some(why) = &check_failed {
        evidence.extend(why.evidence.iter().cloned());
    }
    if !p.keys.is_empty() && p.check.is_none() {
        evidence.push(format!(
            "{} record(s) promised (durable-key) but the workload has no check to look for them",
            p.keys.len()
        ));
    }
    let verdict = if lost > 0 || check_failed.as_ref().is_some_and(|c| c.lost_records) {
        Verdict::LostFsynced
    } else if check_failed.is_some() {
        Verdict::CheckFailed
    } else if fsck_failed_to_run(rig.fs_type, &ran) {
        evidence.extend(lines(&what, &ran));
        return Ok(Judgement {
            verdict: Verdict::NoVerdict,
            evidence,
            checked,
            hung: ran.timed_out,
            mounted: true,
            records_lost,
            cache: cache_use,
        });
    } else if !ran.ok() {
        // Both e2fsck -fn and xfs_repair -n exit 0 only on a clean file system.
        Verdict::FsckDirty
    } else {
        Verdict::Ok
    };
    if verdict != Verdict::Ok {
        evidence.extend(lines(&what, &ran));
    }
    Ok(Judgement {
        verdict,
        evidence,
        checked,
        hung: false,
        mounted: true,
        records_lost,
        cache: cache_use,
    })
}

/// Recovery timed with the model on: the mount's replay; for ext3/ext4 also
/// `e2fsck -E journal_only` on the unreplayed state and `e2fsck -f` after it. The rig
/// must serve the state freshly loaded; `reload` loads it again between the two.
pub fn time_recovery(
    rig: &RecoveryRig,
    app: Option<&UserCheck>,
    reload: &mut dyn FnMut() -> Result<()>,
) -> Result<Option<RecoveryTimes>> {
    rig.daemon().set_timing(true)?;
    let out = time_recovery_on(rig, app, reload);
    let off = rig.daemon().set_timing(false);
    let out = out?;
    off?;
    Ok(out)
}

fn time_recovery_on(
    rig: &RecoveryRig,
    app: Option<&UserCheck>,
    reload: &mut dyn FnMut() -> Result<()>,
) -> Result<Option<RecoveryTimes>> {
    let att = rig.attached()?;
    // What the replay will apply, read before it: the journal's logged blocks.
    let replayed = if rig.fs_type.is_ext() {
        logged_blocks(rig, att)
    } else {
        None
    };
    let before = rig.daemon().stats().ok();
    let mount = rig.mount(att);
    let mount_ok = matches!(&mount, Ok(r) if r.ok());
    let mount_io = match (before, rig.daemon().stats().ok()) {
        (Some(b), Some(a)) => crate::results::crash::DiskIo::between(&b.disks, &a.disks),
        _ => Vec::new(),
    };
    // The application's own recovery follows the file system's, on the same disks
    // with the same timing: what a restart after the power cut waits for.
    let application = match app.and_then(|c| c.on(rig).app_steps()) {
        Some(steps) if mount_ok => {
            let out = rig.session().join("timed-recover");
            let _ = std::fs::remove_dir_all(&out);
            match super::app_recovery::start(&steps, &rig.mount_point, &out, EVIDENCE_LINES)? {
                Ok(session) => {
                    let timed = (session.seconds, session.facts.clone());
                    session.stop()?;
                    Some(timed)
                }
                Err(_) => None,
            }
        }
        _ => None,
    };
    let (application, app_facts) = match application {
        Some((s, f)) => (Some(s), f),
        None => (None, None),
    };
    if rig.is_mounted() {
        rig.unmount()?;
    }
    let mut times = RecoveryTimes {
        mount_seconds: mount?.seconds,
        replayed_blocks: replayed.map(|r| r.blocks),
        replayed_transactions: replayed.map(|r| r.transactions),
        application_seconds: application,
        application: app_facts,
        mount_io,
        ..RecoveryTimes::default()
    };
    if !mount_ok {
        return Ok(None);
    }
    if rig.fs_type == FsType::Xfs {
        let (_, ran) = fsck(rig, att, false)?;
        times.full_fsck_seconds = Some(ran.seconds);
        return Ok(Some(times));
    }
    reload()?;
    let att = rig.attached()?;
    let dev = att.fs_path().display().to_string();
    let j = att.journal_path().map(|p| p.display().to_string());
    let mut args = vec!["-y", "-E", "journal_only"];
    if let Some(j) = &j {
        args.extend(["-j", j.as_str()]);
    }
    args.push(&dev);
    let started = Instant::now();
    let jo = rig.step("e2fsck", &args)?;
    times.journal_only_seconds = Some(started.elapsed().as_secs_f64()).filter(|_| !jo.timed_out);
    let mut args = vec!["-fn"];
    if let Some(j) = &j {
        args.extend(["-j", j.as_str()]);
    }
    args.push(&dev);
    let full = rig.step("e2fsck", &args)?;
    times.full_fsck_seconds = Some(full.seconds).filter(|_| !full.timed_out);
    Ok(Some(times))
}

/// What `debugfs -R "logdump -a"` shows a replay would apply: the committed
/// transactions from the journal's tail on and the file-system blocks they log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Logged {
    blocks: u64,
    transactions: u64,
}

fn logged_blocks(rig: &RecoveryRig, att: &Attached) -> Option<Logged> {
    let dev = att.fs_path().display().to_string();
    // debugfs 1.47 walks an external journal device (`logdump -f`) with the wrong tag
    // size: its tags land at every third block and the walk ends before the first
    // commit, so it would say 0. Unknown is the honest answer; the record's
    // `journal_live`, from the write log, counts the same transactions.
    if att.journal_path().is_some() {
        return None;
    }
    // Without -a, logdump names each descriptor but not the blocks its tags log.
    let request = "logdump -a".to_string();
    let ran = rig.step("debugfs", &["-c", "-R", &request, &dev]).ok()?;
    (ran.ok() && !ran.timed_out).then(|| count_logged(&ran.output))
}

/// logdump walks from the tail while it finds the expected sequence: "FS block N
/// logged at journal block M" per tag, "(commit block)" per transaction's end. The
/// blocks of a last transaction without its commit are not replayed and not counted.
fn count_logged(logdump: &str) -> Logged {
    let mut out = Logged::default();
    let mut pending = 0;
    for l in logdump.lines().map(str::trim_start) {
        if l.starts_with("FS block ") && l.contains(" logged at ") {
            pending += 1;
        } else if l.starts_with("Found expected sequence ") && l.contains("(commit block)") {
            out.transactions += 1;
            out.blocks += pending;
            pending = 0;
        }
    }
    out
}

/// Recovers the state as if its `ram` journal disk came back empty: the mount must
/// fail; then the documented procedure (drop the journal with `tune2fs -f -f -O
/// ^has_journal`, `e2fsck -fy`, make a new journal) and a count of what was lost.
/// The rig must serve the state with the journal disk lost.
pub fn lose_journal(rig: &RecoveryRig, p: &Promises, journal_size: u64) -> Result<LostJournal> {
    let att = rig.attached()?;
    let out = lose_journal_attached(rig, att, p, journal_size);
    if rig.is_mounted() {
        let _ = rig.unmount();
    }
    out
}

/// XFS's documented procedure for a lost log: `xfs_repair -L` zeroes the (external)
/// log, throwing away whatever it held, and repairs what that leaves; then the file
/// system mounts on the zeroed log and what was lost is counted.
fn lose_xfs_log(
    rig: &RecoveryRig,
    att: &Attached,
    p: &Promises,
    mut lj: LostJournal,
    dev: &str,
    jdev: &str,
) -> Result<LostJournal> {
    let repair = rig.step("xfs_repair", &["-L", "-l", jdev, dev])?;
    lj.fsck_repairs = count_xfs_repairs(&repair.output);
    lj.evidence
        .extend(lines(&format!("xfs_repair -L -l {jdev}"), &repair));
    if repair.timed_out || repair.code.is_none_or(|c| c != 0) {
        return Ok(lj);
    }
    let mount = rig.mount(att)?;
    lj.evidence
        .extend(lines("mount with the zeroed log", &mount));
    if !mount.ok() {
        return Ok(lj);
    }
    count_losses(rig, p, &mut lj)?;
    Ok(lj)
}

/// With the file system mounted after its journal was lost: what the promises lost
/// and what fsck put in lost+found; then the unmount.
fn count_losses(rig: &RecoveryRig, p: &Promises, lj: &mut LostJournal) -> Result<()> {
    lj.recovered = true;
    let (missing, different) = check_files(&rig.mount_point, p);
    lj.fsynced_missing = missing.len() as u64;
    lj.fsynced_different = different.len() as u64;
    lj.lost_found = std::fs::read_dir(rig.mount_point.join("lost+found"))
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    rig.unmount()
}

/// What xfs_repair fixed: its lines that say it cleared, junked, moved, reset,
/// rebuilt or corrected something.
fn count_xfs_repairs(output: &str) -> u64 {
    output
        .lines()
        .map(|l| l.trim().to_ascii_lowercase())
        .filter(|l| {
            !l.starts_with("phase ")
                && !l.starts_with("- ")
                && [
                    "clearing",
                    "junking",
                    "moving",
                    "resetting",
                    "rebuilding",
                    "correcting",
                    "fixing",
                    "disconnected",
                ]
                .iter()
                .any(|w| l.contains(w))
        })
        .count() as u64
}

fn count_repairs(output: &str) -> u64 {
    output
        .lines()
        .filter(|l| l.trim_end().ends_with("? yes") || l.trim_end().ends_with("? yes."))
        .count() as u64
}

fn lose_journal_attached(
    rig: &RecoveryRig,
    att: &Attached,
    p: &Promises,
    journal_size: u64,
) -> Result<LostJournal> {
    let mut lj = LostJournal::default();
    let kernel = KernelLog::open();
    let mount = rig.mount(att)?;
    lj.mount_failed = !mount.ok();
    if mount.ok() && rig.fs_type == FsType::Xfs {
        // XFS takes an all-zero log for a clean one (it is what `xfs_repair -L`
        // leaves): it mounts, and whatever only the log held is silently gone. Count
        // it, then ask xfs_repair what the file system looks like now.
        lj.mount_error = "XFS mounted with its log device empty: it takes a zeroed log for a clean one, so what only the log held is gone without a message".into();
        lj.evidence.extend(lines("mount", &mount));
        count_losses(rig, p, &mut lj)?;
        let (what, ran) = fsck(rig, att, false)?;
        lj.fsck_repairs = count_xfs_repairs(&ran.output)
            + u64::from(!ran.ok() && count_xfs_repairs(&ran.output) == 0);
        lj.evidence.extend(lines(&what, &ran));
        return Ok(lj);
    }
    if mount.ok() {
        rig.unmount()?;
        lj.mount_error = "the mount succeeded with the journal disk empty: the kernel did not notice the journal was gone".into();
        lj.evidence.extend(lines("mount", &mount));
        return Ok(lj);
    }
    let mut msg: Vec<String> = mount.head(2);
    // (a failed mount from here on)
    msg.extend(
        kernel_says(&kernel, att)
            .into_iter()
            .map(|l| l.trim().to_string()),
    );
    lj.mount_error = msg.join(" / ");
    let dev = att.fs_path().display().to_string();
    let Some(jdev) = att.journal_path().map(|p| p.display().to_string()) else {
        lj.mount_error
            .push_str(" (no external journal: nothing to lose)");
        return Ok(lj);
    };
    if rig.fs_type == FsType::Xfs {
        return lose_xfs_log(rig, att, p, lj, &dev, &jdev);
    }
    let drop_journal = rig.step("tune2fs", &["-f", "-f", "-O", "^has_journal", &dev])?;
    lj.evidence
        .extend(lines("tune2fs -f -f -O ^has_journal", &drop_journal));
    if !drop_journal.ok() {
        // e2fsprogs 1.47's tune2fs first tries to replay the journal that needs
        // recovery, and fails on the empty device whatever -f says; the flag that asks
        // for the replay is cleared by hand, then the journal can go.
        let clear = rig.step(
            "debugfs",
            &["-w", "-n", "-R", "feature -needs_recovery", &dev],
        )?;
        lj.evidence
            .extend(lines("debugfs -w -n -R 'feature -needs_recovery'", &clear));
        let again = rig.step("tune2fs", &["-f", "-O", "^has_journal", &dev])?;
        lj.evidence
            .extend(lines("tune2fs -f -O ^has_journal", &again));
        if !again.ok() {
            return Ok(lj);
        }
    }
    let repair = rig.step("e2fsck", &["-fy", &dev])?;
    lj.fsck_repairs = count_repairs(&repair.output);
    lj.evidence.extend(lines("e2fsck -fy", &repair));
    if repair.timed_out || repair.code.is_none_or(|c| c & 8 != 0) {
        return Ok(lj);
    }
    let make =
        crate::rig::ext4::make_journal_device(att.journal_path().expect("checked"), journal_size)
            .and_then(|()| {
                crate::rig::cmd::run("tune2fs", &["-J", &format!("device={jdev}"), &dev])
            });
    match make {
        Ok(_) => lj
            .evidence
            .push(format!("new journal made on {jdev} ({journal_size} bytes)")),
        Err(e) => {
            lj.evidence
                .push(format!("a new journal could not be made: {e:#}"));
            return Ok(lj);
        }
    }
    let mount = rig.mount(att)?;
    lj.evidence
        .extend(lines("mount with the new journal", &mount));
    if !mount.ok() {
        return Ok(lj);
    }
    count_losses(rig, p, &mut lj)?;
    Ok(lj)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promised_files_are_missing_different_or_fine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/good"), b"abcd").unwrap();
        std::fs::write(dir.path().join("a/short"), b"ab").unwrap();
        std::fs::write(dir.path().join("a/bad"), b"abce").unwrap();
        let want: Arc<[u8]> = Arc::from(&b"abcd"[..]);
        let p = Promises {
            items: ["a/good", "a/short", "a/bad", "a/gone"]
                .iter()
                .map(|f| Promise {
                    path: f.to_string(),
                    expect: Expect::Bytes(want.clone()),
                })
                .collect(),
            ..Promises::default()
        };
        let (missing, different) = check_files(dir.path(), &p);
        assert_eq!(missing, ["a/gone: missing"]);
        assert_eq!(different.len(), 2);
        assert!(different[0].starts_with("a/short: 2 bytes, 4 expected"));
        assert!(
            different[1].ends_with("content differs from byte 3"),
            "{}",
            different[1]
        );
        // Once removal began a missing file is no loss; a damaged one still is.
        let (missing, different) = check_files(
            dir.path(),
            &Promises {
                removal_started: true,
                ..p
            },
        );
        assert!(missing.is_empty());
        assert_eq!(different.len(), 2);
    }

    #[test]
    fn ranges_and_hashes_are_checked_and_a_short_file_breaks_a_range() {
        let dir = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("f"), &body).unwrap();
        let range = |offset: u64, len: u64, bytes: Option<&[u8]>| Promise {
            path: "f".into(),
            expect: Expect::Range {
                offset,
                len,
                bytes: bytes.map(Arc::from),
            },
        };
        use sha2::Digest;
        let hex = format!("{:x}", sha2::Sha256::digest(&body));
        let p = Promises {
            items: vec![
                range(4096, 4096, Some(&body[4096..])),
                range(0, 8192, None),
                Promise {
                    path: "f".into(),
                    expect: Expect::Sha256(hex),
                },
                Promise {
                    path: "f".into(),
                    expect: Expect::Exists,
                },
            ],
            ..Promises::default()
        };
        assert_eq!(check_files(dir.path(), &p), (vec![], vec![]));
        let mut swapped = body.clone();
        swapped[4096] ^= 1;
        let p = Promises {
            items: vec![
                range(4096, 4096, Some(&swapped[4096..])),
                range(0, 12288, None),
                Promise {
                    path: "f".into(),
                    expect: Expect::Sha256("00".repeat(32)),
                },
            ],
            ..Promises::default()
        };
        let (missing, different) = check_files(dir.path(), &p);
        assert!(missing.is_empty());
        assert_eq!(different.len(), 3, "{different:?}");
        assert!(different[0].contains("from byte 4096"), "{}", different[0]);
        assert!(different[1].contains("8192 bytes"), "{}", different[1]);
    }

    #[test]
    fn the_kernel_log_reads_only_what_came_after_it_was_opened() {
        use std::io::Write;
        let tag = format!("jbench-kmsg-test-{}", std::process::id());
        let say = |what: &str| {
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/kmsg")
                .and_then(|mut f| f.write_all(format!("{tag} {what}\n").as_bytes()))
        };
        if let Err(e) = say("before") {
            // Writing the kernel log needs root; CI runs as root and must not skip.
            let why = format!("cannot write /dev/kmsg: {e}");
            let test = "the_kernel_log_reads_only_what_came_after_it_was_opened";
            assert!(!crate::test_require::require(test, false, &why));
            return;
        }
        let log = KernelLog::open();
        say("after").unwrap();
        let seen: Vec<String> = log
            .since()
            .into_iter()
            .filter(|l| l.contains(&tag))
            .collect();
        assert_eq!(seen, [format!("{tag} after")]);
    }

    #[test]
    fn logged_blocks_are_counted_from_logdump() {
        // What debugfs 1.47.0 prints for `logdump -a` of a journal with two committed
        // transactions and a third cut before its commit.
        let out = "Journal starts at block 1, transaction 2
Found expected sequence 2, type 1 (descriptor block) at block 1
Dumping descriptor block, sequence 2, at block 1:
  FS block 33 logged at journal block 2 (flags 0x0)
  FS block 17 logged at journal block 3 (flags 0xa)
Found expected sequence 2, type 2 (commit block) at block 4
Found expected sequence 3, type 1 (descriptor block) at block 5
Dumping descriptor block, sequence 3, at block 5:
  FS block 33 logged at journal block 6 (flags 0x0)
  FS block 1 logged at journal block 7 (flags 0x2)
  FS block 17 logged at journal block 8 (flags 0xa)
Found expected sequence 3, type 5 (revoke table) at block 9
Dumping revoke block, sequence 3, at block 9:
  Revoke FS block 40
Found expected sequence 3, type 2 (commit block) at block 10
Found expected sequence 4, type 1 (descriptor block) at block 11
Dumping descriptor block, sequence 4, at block 11:
  FS block 33 logged at journal block 12 (flags 0x8)
No magic number at block 13: end of journal.
";
        assert_eq!(
            count_logged(out),
            Logged {
                blocks: 5,
                transactions: 2
            }
        );
        assert_eq!(
            count_logged("Journal starts at block 0, transaction 9\n"),
            Logged::default()
        );
        assert_eq!(count_xfs_repairs("Phase 1 - find and verify superblock...\nclearing inode number in entry 12\n        - agno = 0\nmoving disconnected inodes to lost+found ...\n"), 2);
    }

    #[test]
    fn repairs_are_counted_from_fsck_answers() {
        let out = "Pass 1: Checking inodes\nInode 12 has illegal blocks.  Clear? yes\n\nFix? yes\nPass 2\nConnect to /lost+found? yes\n";
        assert_eq!(count_repairs(out), 3);
    }
}
