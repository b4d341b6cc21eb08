//! Recovers one crash state and judges it. The order matters: mount first (the kernel
//! replays the journal, as after a real power cut), fsck only when the mount fails;
//! then what fsync promised is compared with what is there; then unmount and a
//! read-only fsck of the recovered file system.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::recover::{Attached, RecoveryRig};
use crate::experiment::config::FsType;
use crate::results::crash::{LostJournal, RecoveryTimes, Verdict};
use crate::rig::cmd::Ran;

/// How many output lines of a tool go into the evidence.
const EVIDENCE_LINES: usize = 6;

/// What fsync promised at a cut.
#[derive(Debug, Clone, Default)]
pub struct Promises<'a> {
    /// Paths relative to the file system's root, fsync'ed before the cut.
    pub files: Vec<&'a str>,
    /// Every file's content once its fsync returned.
    pub content: Option<&'a [u8]>,
    /// The workload may have removed files by the cut (its `remove` phase began):
    /// a missing file is then no loss, a present one must still be whole.
    pub removal_started: bool,
}

/// The oracle's conclusion on one state.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub verdict: Verdict,
    pub evidence: Vec<String>,
    pub checked: u64,
    /// The daemon had to be aborted (a step hung): restart it before the next state.
    pub hung: bool,
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

/// The kernel's last messages about a device, for a mount that failed.
fn kernel_says(dev: &Path) -> Vec<String> {
    let name = dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = crate::rig::cmd::run("dmesg", &["--notime"]).unwrap_or_default();
    let mut hits: Vec<String> = text
        .lines()
        .filter(|l| l.contains(&name))
        .map(str::to_string)
        .collect();
    let n = hits.len();
    hits.drain(..n.saturating_sub(3));
    hits.into_iter().map(|l| format!("  kernel: {l}")).collect()
}

/// fsck in the file system's own terms: read-only (`-n`) after recovery, repairing
/// (`-y`) when the state did not mount.
fn fsck(rig: &RecoveryRig, att: &Attached, repair: bool) -> Result<(String, Ran)> {
    let dev = att.fs_path().display().to_string();
    let j = att.journal_path().map(|p| p.display().to_string());
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

/// Compares the promised files with the mounted file system: `(missing, different)`
/// with the first few named.
pub fn check_files(mount: &Path, p: &Promises<'_>) -> (Vec<String>, Vec<String>) {
    let mut missing = Vec::new();
    let mut different = Vec::new();
    for rel in &p.files {
        let path = mount.join(rel);
        match std::fs::read(&path) {
            Ok(data) => {
                if let Some(want) = p.content {
                    if data != want {
                        different.push(format!(
                            "{rel}: {} bytes, {} expected{}",
                            data.len(),
                            want.len(),
                            if data.len() == want.len() {
                                ", content differs"
                            } else {
                                ""
                            }
                        ));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !p.removal_started {
                    missing.push(format!("{rel}: missing"));
                }
            }
            Err(e) => different.push(format!("{rel}: unreadable: {e}")),
        }
    }
    (missing, different)
}

/// Mounts, checks, unmounts and fscks the state the rig serves now.
pub fn judge(rig: &RecoveryRig, p: &Promises<'_>) -> Result<Judgement> {
    let att = rig.attached()?;
    let out = judge_attached(rig, att, p);
    if rig.is_mounted() {
        let _ = rig.unmount();
    }
    out
}

fn judge_attached(rig: &RecoveryRig, att: &Attached, p: &Promises<'_>) -> Result<Judgement> {
    let mut evidence = Vec::new();
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
        });
    }
    if !mount.ok() {
        evidence.extend(kernel_says(att.fs_path()));
        let (what, ran) = fsck(rig, att, true)?;
        evidence.extend(lines(&what, &ran));
        return Ok(Judgement {
            verdict: Verdict::Unmountable,
            evidence,
            checked: 0,
            hung: ran.timed_out,
        });
    }
    let (missing, different) = check_files(&rig.mount_point, p);
    let checked = p.files.len() as u64;
    rig.unmount()?;
    let (what, ran) = fsck(rig, att, false)?;
    let lost = missing.len() + different.len();
    if lost > 0 {
        evidence.push(format!(
            "{} of {checked} fsync'ed files lost: {} missing, {} different",
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
    let verdict = if lost > 0 {
        Verdict::LostFsynced
    } else if fsck_failed_to_run(rig.fs_type, &ran) {
        evidence.extend(lines(&what, &ran));
        return Ok(Judgement {
            verdict: Verdict::NoVerdict,
            evidence,
            checked,
            hung: ran.timed_out,
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
    })
}

/// Recovery timed with the model on: the mount's replay; for ext3/ext4 also
/// `e2fsck -E journal_only` on the unreplayed state and `e2fsck -f` after it. The rig
/// must serve the state freshly loaded; `reload` loads it again between the two.
pub fn time_recovery(
    rig: &RecoveryRig,
    reload: &mut dyn FnMut() -> Result<()>,
) -> Result<Option<RecoveryTimes>> {
    rig.daemon().set_timing(true)?;
    let out = time_recovery_on(rig, reload);
    let off = rig.daemon().set_timing(false);
    let out = out?;
    off?;
    Ok(out)
}

fn time_recovery_on(
    rig: &RecoveryRig,
    reload: &mut dyn FnMut() -> Result<()>,
) -> Result<Option<RecoveryTimes>> {
    let att = rig.attached()?;
    let mount = rig.mount(att);
    let mount_ok = matches!(&mount, Ok(r) if r.ok());
    if rig.is_mounted() {
        rig.unmount()?;
    }
    let mut times = RecoveryTimes {
        mount_seconds: mount?.seconds,
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

/// Recovers the state as if its `ram` journal disk came back empty: the mount must
/// fail; then the documented procedure (drop the journal with `tune2fs -f -f -O
/// ^has_journal`, `e2fsck -fy`, make a new journal) and a count of what was lost.
/// The rig must serve the state with the journal disk lost.
pub fn lose_journal(rig: &RecoveryRig, p: &Promises<'_>, journal_size: u64) -> Result<LostJournal> {
    let att = rig.attached()?;
    let out = lose_journal_attached(rig, att, p, journal_size);
    if rig.is_mounted() {
        let _ = rig.unmount();
    }
    out
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
    p: &Promises<'_>,
    journal_size: u64,
) -> Result<LostJournal> {
    let mut lj = LostJournal::default();
    let mount = rig.mount(att)?;
    lj.mount_failed = !mount.ok();
    if mount.ok() {
        rig.unmount()?;
        lj.mount_error = "the mount succeeded with the journal disk empty: the kernel did not notice the journal was gone".into();
        lj.evidence.extend(lines("mount", &mount));
        return Ok(lj);
    }
    let mut msg: Vec<String> = mount.head(2);
    msg.extend(
        kernel_says(att.fs_path())
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
    lj.recovered = true;
    let (missing, different) = check_files(&rig.mount_point, p);
    lj.fsynced_missing = missing.len() as u64;
    lj.fsynced_different = different.len() as u64;
    lj.lost_found = std::fs::read_dir(rig.mount_point.join("lost+found"))
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    rig.unmount()?;
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
        let p = Promises {
            files: vec!["a/good", "a/short", "a/bad", "a/gone"],
            content: Some(b"abcd"),
            removal_started: false,
        };
        let (missing, different) = check_files(dir.path(), &p);
        assert_eq!(missing, ["a/gone: missing"]);
        assert_eq!(different.len(), 2);
        assert!(different[0].starts_with("a/short: 2 bytes, 4 expected"));
        assert!(different[1].ends_with("content differs"));
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
    fn repairs_are_counted_from_fsck_answers() {
        let out = "Pass 1: Checking inodes\nInode 12 has illegal blocks.  Clear? yes\n\nFix? yes\nPass 2\nConnect to /lost+found? yes\n";
        assert_eq!(count_repairs(out), 3);
    }
}
