//! The sharing rules on a pretend kernel (one number per test thread) and a restore
//! directory of the test's own: pid 1 stands for a live jbench, a pid above the
//! kernel's largest for a killed one.

use std::cell::Cell;

use super::*;

thread_local! {
    static KERNEL: Cell<u64> = const { Cell::new(0) };
    static REFUSE: Cell<bool> = const { Cell::new(false) };
}

fn read() -> Result<u64> {
    Ok(KERNEL.get())
}

fn write(v: u64) -> Result<()> {
    if REFUSE.get() {
        bail!("refused");
    }
    KERNEL.set(v);
    Ok(())
}

const LIVE: i32 = 1;
/// Above PID_MAX_LIMIT (4194304): never a process.
const KILLED: i32 = 4_194_305;

fn settings(kernel: u64) -> (Settings<u64>, tempfile::TempDir) {
    KERNEL.set(kernel);
    REFUSE.set(false);
    let dir = tempfile::tempdir().unwrap();
    let path: &'static str = Box::leak(dir.path().to_str().unwrap().to_string().into_boxed_str());
    let s = Settings {
        prefix: "test-",
        what: "test settings",
        read,
        write,
        dir: path,
    };
    (s, dir)
}

fn keep(s: &Settings<u64>, pid: i32, host: u64) -> PathBuf {
    let f = Path::new(s.dir).join(format!("{}{pid}.json", s.prefix));
    fs::write(&f, host.to_string()).unwrap();
    f
}

#[test]
fn alone_it_changes_keeps_the_host_value_and_puts_it_back() {
    let (s, _d) = settings(10);
    let c = s.change(|h| h * 3).unwrap();
    assert_eq!(KERNEL.get(), 30);
    assert_eq!(fs::read_to_string(s.own_file()).unwrap(), "10");
    drop(c);
    assert_eq!(KERNEL.get(), 10);
    assert!(!s.own_file().exists());
}

#[test]
fn beside_a_live_one_it_takes_the_host_value_from_its_file_and_leaves_the_change() {
    // The live one found 10 and changed it to 20; this one wants the same change.
    let (s, _d) = settings(20);
    let theirs = keep(&s, LIVE, 10);
    let c = s.change(|h| h * 2).unwrap();
    assert_eq!(fs::read_to_string(s.own_file()).unwrap(), "10");
    assert_eq!(
        s.machine_values().unwrap(),
        20,
        "this one's own change is in effect"
    );
    drop(c);
    assert_eq!(KERNEL.get(), 20, "the live one still needs its change");
    assert!(theirs.exists() && !s.own_file().exists());
    assert_eq!(
        s.machine_values().unwrap(),
        10,
        "the machine's value is the host's own"
    );
}

#[test]
fn a_different_change_over_a_live_ones_is_refused_and_nothing_is_touched() {
    let (s, _d) = settings(20);
    keep(&s, LIVE, 10);
    match s.change(|h| h * 3) {
        Err(ChangeError::Conflict {
            pid,
            in_effect,
            wanted,
        }) => assert_eq!((pid, in_effect, wanted), (LIVE, 20, 30)),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(KERNEL.get(), 20);
    assert!(!s.own_file().exists());
}

#[test]
fn a_killed_ones_host_value_is_adopted_and_put_back_at_the_end() {
    // A killed jbench left the kernel at 20; the host's own value is 10.
    let (s, _d) = settings(20);
    let dead = keep(&s, KILLED, 10);
    assert_eq!(s.stale(), vec![dead.clone()]);
    let c = s.change(|h| h + 1).unwrap();
    assert_eq!(
        KERNEL.get(),
        11,
        "the target is computed from the host's own value"
    );
    assert!(!dead.exists());
    drop(c);
    assert_eq!(KERNEL.get(), 10);
}

#[test]
fn stale_files_are_restored_only_when_no_live_one_shares_the_settings() {
    let (s, _d) = settings(20);
    let dead = keep(&s, KILLED, 10);
    let live = keep(&s, LIVE, 10);
    assert_eq!(s.restore_stale().unwrap(), vec![dead.clone()]);
    assert_eq!(KERNEL.get(), 20, "the live one puts them back when it ends");
    assert!(!dead.exists() && live.exists());

    fs::remove_file(&live).unwrap();
    let dead = keep(&s, KILLED, 10);
    assert_eq!(s.restore_stale().unwrap(), vec![dead.clone()]);
    assert_eq!(KERNEL.get(), 10);
    assert!(!dead.exists());
    assert!(s.restore_stale().unwrap().is_empty());
}

#[test]
fn a_change_the_kernel_refuses_leaves_no_file_and_the_host_value() {
    let (s, _d) = settings(10);
    REFUSE.set(true);
    match s.change(|h| h + 5) {
        Err(ChangeError::Failed(e)) => assert!(format!("{e:#}").contains("test settings")),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(KERNEL.get(), 10);
    assert!(!s.own_file().exists());
}

#[test]
fn a_restore_the_kernel_refuses_keeps_the_file_for_cleanup() {
    let (s, _d) = settings(10);
    let c = s.change(|h| h + 5).unwrap();
    REFUSE.set(true);
    drop(c);
    assert_eq!(fs::read_to_string(s.own_file()).unwrap(), "10");
    fs::remove_file(s.own_file()).unwrap();
}
