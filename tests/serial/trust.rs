//! Directories jbench writes in must be trusted (owned by root, not writable by group
//! or others unless root's and sticky, no link owned by another user on the way), and
//! `jbench cleanup` acts only on session directories that pass the same checks.

use crate::common;

use std::fs;
use std::os::unix::fs::{chown, lchown, symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

const NOBODY: u32 = 65534;

/// The run that makes a session and the cleanup that scans every registered one are
/// kept apart: a session is briefly marked before it is locked.
static SESSIONS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn sessions_lock() -> std::sync::MutexGuard<'static, ()> {
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner())
}

fn mkdir(p: &Path, mode: u32, uid: u32) {
    fs::create_dir(p).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    chown(p, Some(uid), None).unwrap();
}

fn spec_in(tmp: &Path, work: &Path) -> PathBuf {
    write_spec(tmp, "tiny", &tiny_spec(work, r#""internal""#, 1, ""))
}

fn run(spec: &Path, results: &Path) -> Output {
    jbench()
        .arg("run")
        .arg(spec)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The run failed, saying why, and left nothing in `work` nor a results directory.
fn assert_refused(out: &Output, expected: &str, work: &Path, results: &Path) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {stderr}");
    assert!(stderr.contains(expected), "says `{expected}`: {stderr}");
    assert!(
        stderr.contains("choose another directory"),
        "names a fix: {stderr}"
    );
    assert!(
        entries(work).is_empty(),
        "nothing created in {}",
        work.display()
    );
    assert!(!results.exists(), "no results directory");
    assert!(loops_under(work).is_empty(), "no loop device attached");
}

#[test]
fn a_work_dir_owned_by_another_user_with_mode_777_is_refused_before_anything_is_created() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("trust-777-");
    let work = tmp.path().join("work");
    mkdir(&work, 0o777, NOBODY);
    let results = tmp.path().join("results");
    let out = run(&spec_in(tmp.path(), &work), &results);
    assert_refused(
        &out,
        &format!(
            "{} is owned by nobody (uid 65534) with mode 0777; jbench runs as root and will not create files where another user can replace them. `chown root` it and `chmod go-w` it, or choose another directory.",
            work.display()
        ),
        &work,
        &results,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("work_dir"));
}

#[test]
fn a_work_dir_reached_through_a_link_owned_by_another_user_is_refused() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("trust-link-");
    let real = tmp.path().join("real");
    mkdir(&real, 0o755, 0);
    let link = tmp.path().join("link");
    symlink(&real, &link).unwrap();
    lchown(&link, Some(NOBODY), None).unwrap();
    let results = tmp.path().join("results");
    let out = run(&spec_in(tmp.path(), &link.join("work")), &results);
    assert_refused(
        &out,
        &format!(
            "{} is a symbolic link owned by nobody (uid 65534)",
            link.display()
        ),
        &real,
        &results,
    );
}

#[test]
fn a_results_directory_pre_created_by_another_user_is_refused() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("trust-results-");
    let work = tmp.path().join("work");
    let results = tmp.path().join("results");
    mkdir(&results, 0o755, NOBODY);
    let spec = spec_in(tmp.path(), &work);
    let out = run(&spec, &results);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is owned by nobody (uid 65534) with mode 0755",
            results.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("`chown root` it, or choose another directory"),
        "{stderr}"
    );
    assert!(entries(&results).is_empty(), "nothing written in it");
    assert!(!work.exists(), "the work directory is not created either");
    // --resume into it is refused the same way.
    let out = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--resume")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("is owned by nobody"), "{stderr}");
}

#[test]
fn the_default_results_directory_under_a_directory_of_another_user_is_refused() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("trust-cwd-");
    let cwd = tmp.path().join("cwd");
    mkdir(&cwd, 0o755, NOBODY);
    let work = tmp.path().join("work");
    let out = jbench()
        .arg("run")
        .arg(spec_in(tmp.path(), &work))
        .current_dir(&cwd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{} is owned by nobody", cwd.display())),
        "{stderr}"
    );
    assert!(entries(&cwd).is_empty(), "no results/ created");
    assert!(!work.exists());
}

#[test]
fn a_group_writable_root_ancestor_without_the_sticky_bit_is_refused() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("trust-group-");
    let shared = tmp.path().join("shared");
    mkdir(&shared, 0o775, 0);
    let work = shared.join("work");
    let results = tmp.path().join("results");
    let out = run(&spec_in(tmp.path(), &work), &results);
    assert_refused(
        &out,
        &format!(
            "{} is owned by root (uid 0) with mode 0775; jbench runs as root and will not create files where another user can replace them. `chmod go-w` it, or choose another directory.",
            shared.display()
        ),
        &shared,
        &results,
    );
}

/// A root-owned sticky directory (as /tmp and /var/tmp are) is a fine parent; what
/// jbench creates in it is 0711 (others pass through, no more), each component.
#[test]
fn a_root_sticky_parent_is_fine_and_created_directories_are_0711() {
    let _alone = crate::alone();
    require!(root);
    let _serial = sessions_lock();
    let tmp = scratch("trust-sticky-");
    let sticky = tmp.path().join("sticky");
    mkdir(&sticky, 0o1777, 0);
    let work = sticky.join("a/work");
    let results = sticky.join("b/results");
    // Its parent `a` is missing too: jbench makes both only when asked to.
    let out = jbench()
        .arg("run")
        .arg(spec_in(tmp.path(), &work))
        .arg("--results")
        .arg(&results)
        .arg("--create-work-dir")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for d in [
        sticky.join("a"),
        work.clone(),
        sticky.join("b"),
        results.clone(),
    ] {
        let m = fs::metadata(&d).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o711, "{}", d.display());
        assert_eq!(m.uid(), 0, "{}", d.display());
    }
    assert_eq!(records(&results).len(), 1);
    assert_no_leaks(tmp.path());
}

/// A work_dir reached through a root's own link is trusted; the trial must then name
/// its mount point as the kernel does, or verification fails and a loop device leaks.
#[test]
fn a_work_dir_through_a_root_owned_link_runs_and_leaves_nothing() {
    let _alone = crate::alone();
    require!(root);
    let _serial = sessions_lock();
    let tmp = scratch("trust-rootlink-");
    let real = tmp.path().join("real");
    mkdir(&real, 0o700, 0);
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let results = tmp.path().join("results");
    let out = run(&spec_in(tmp.path(), &link), &results);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(records(&results).len(), 1);
    assert!(
        records(&results)[0]["status"] == "ok",
        "{:?}",
        records(&results)
    );
    assert_no_leaks(tmp.path());
    assert_no_leaks(&real);
}

#[test]
fn cleanup_skips_a_session_directory_owned_by_another_user_and_says_why() {
    let _alone = crate::alone();
    require!(root);
    let _serial = sessions_lock();
    let tmp = scratch("trust-cleanup-");
    let work = tmp.path().join("work");
    mkdir(&work, 0o755, 0);
    // Session-shaped directories of a process that is gone: one another user made,
    // one root's.
    let planted = work.join("jbench-999999999-0");
    mkdir(&planted, 0o755, NOBODY);
    fs::write(planted.join(".jbench-session"), "").unwrap();
    let stale = work.join("jbench-999999999-1");
    mkdir(&stale, 0o700, 0);
    fs::write(stale.join(".jbench-session"), "").unwrap();

    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(&work));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "skipped (not trusted): {}: {} is owned by nobody (uid 65534) with mode 0755",
            planted.display(),
            planted.display()
        )),
        "{stdout}"
    );
    assert!(planted.join(".jbench-session").exists(), "left alone");
    assert!(
        stdout.contains(&format!("remove {}", stale.display())),
        "{stdout}"
    );
    assert!(
        !stale.exists(),
        "a trusted stale session is still cleaned up"
    );
}
