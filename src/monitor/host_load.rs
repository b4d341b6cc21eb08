//! How much CPU other processes used while a trial ran, so that a report can say the
//! host was busy (as hyperfine does) instead of showing noisy figures without a cause.
//!
//! The approximation: the machine's busy time (`/proc/stat` user + nice + system)
//! minus the trial's own, which is jbench's process tree (this process, every live
//! descendant such as fio or the device daemon, and the reaped ones through their
//! parents' `cutime`/`cstime`) and every kernel thread (jbd2, loop and flush workers
//! doing the trial's I/O; another process's I/O done by kernel threads is counted as
//! the trial's too). Interrupt time counts as the trial's. Two walks of `/proc`, at
//! the monitor's start and stop, both outside the trial's clocks.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// `PF_KTHREAD` in `/proc/<pid>/stat`'s flags: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// What other processes used during a trial's monitored time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// Monitored seconds the figure is an average over.
    pub seconds: f64,
    /// CPU other processes used, in percent of one CPU (180 = 1.8 CPUs busy on
    /// average), as `top` counts it.
    pub other_cpu_pct: f64,
    /// The machine's CPUs, in the same unit: 100 per CPU.
    pub capacity_pct: f64,
    /// What the host did to the trial's own work: how long it waited for a CPU.
    /// `None` in records made before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait: Option<CpuWait>,
}

impl HostLoad {
    /// The host kept the trial's work from a CPU past the bound ([`CpuWait::starved`]
    /// over the monitored time); `false` when the wait was not measured.
    pub fn starved(&self) -> bool {
        self.cpu_wait
            .as_ref()
            .is_some_and(|w| w.starved(self.seconds))
    }
}

/// Time the trial's work spent ready to run but waiting for a CPU (the scheduler's
/// `run_delay`, `/proc/<pid>/task/<tid>/schedstat`), during the monitored time. On an
/// emulated disk this is the time the model cannot see: the device daemon keeps each
/// answer's deadline (its completion thread runs at real-time priority), but the workload's
/// thread that sends the next request, and the loop device's kernel worker that
/// passes it on, wait behind other processes; every such wait adds to the figure
/// (docs/devices.md, "A busy host").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuWait {
    /// jbench's process tree (the workload's threads, the device daemon, tools still
    /// running at the end; a thread that ended before is not counted), in seconds.
    pub own_seconds: f64,
    /// Kernel threads (the loop device's and the writeback workers among them).
    pub kernel_seconds: f64,
    /// `/proc/pressure/cpu` "some": the share of the time, in percent, that at least
    /// one task on the host waited for a CPU. `None` without PSI.
    pub pressure_pct: Option<f64>,
}

/// A trial whose work waited for a CPU longer than this share of its time (and than
/// [`STARVED_AT_LEAST`]) is *starved*: its figures carry the host's delays, and the
/// report says so (docs/devices.md, "A busy host").
pub const STARVED_SHARE: f64 = 0.05;

/// ... and longer than this, in seconds. The kernel threads' figure is every kernel
/// thread's on the host: 4 to 41 ms per trial of an idle `quick` run, whatever the
/// trial's length, which is up to 10% of a sub-second trial.
pub const STARVED_AT_LEAST: f64 = 0.05;

impl CpuWait {
    /// The trial's own and its kernel threads' wait, in seconds.
    pub fn seconds(&self) -> f64 {
        self.own_seconds + self.kernel_seconds
    }

    /// Whether the wait over `seconds` of work passes [`STARVED_SHARE`] (and
    /// [`STARVED_AT_LEAST`]). The kernel threads count: a trial's I/O waits on them
    /// (the loop device's worker, jbd2's commit, writeback), and on a busy host they,
    /// not the workload's threads asleep in I/O, are most of the wait.
    pub fn starved(&self, seconds: f64) -> bool {
        self.seconds() > (STARVED_SHARE * seconds).max(STARVED_AT_LEAST)
    }
}

/// Cumulative CPU ticks at one moment, split by whose they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSplit {
    /// `/proc/stat`: user + nice + system of all CPUs.
    pub busy: u64,
    /// jbench's process tree, reaped children included.
    pub own: u64,
    /// Every kernel thread.
    pub kernel: u64,
    /// Run delay of jbench's tree's and of kernel threads' live threads, in ns, by
    /// thread id: a thread that ends between two readings takes its wait with it,
    /// and summed totals would then hide the others' (a loop or writeback worker
    /// ending made a starved stream's kernel wait read 0).
    pub own_wait_ns: ThreadWaits,
    pub kernel_wait_ns: ThreadWaits,
    /// `/proc/pressure/cpu`'s "some" total, in µs.
    pub pressure_us: Option<u64>,
}

impl CpuSplit {
    /// This moment's split; `None` when `/proc/stat` cannot be read.
    pub fn now() -> Option<CpuSplit> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let busy = busy_ticks(&stat)?;
        let mut tasks = Vec::new();
        for e in std::fs::read_dir("/proc").ok()?.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            // A process that exits meanwhile is gone: its time went to its parent.
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                if let Some(t) = parse_task(pid, &text) {
                    tasks.push(t);
                }
            }
        }
        let tree = tree_members(&tasks, run_root());
        let (own, kernel) = ticks_of(&tasks, &tree);
        Some(CpuSplit {
            busy,
            own,
            kernel,
            own_wait_ns: tree.iter().flat_map(|&pid| run_delays_ns(pid)).collect(),
            kernel_wait_ns: tasks
                .iter()
                .filter(|t| t.kernel)
                .flat_map(|t| run_delays_ns(t.pid))
                .collect(),
            pressure_us: std::fs::read_to_string("/proc/pressure/cpu")
                .ok()
                .and_then(|t| some_total_us(&t)),
        })
    }

    /// The wait between `self` (earlier) and `end`, over `seconds`.
    pub fn wait_until(&self, end: &CpuSplit, seconds: f64) -> CpuWait {
        let d = |a: u64, b: u64| b.saturating_sub(a) as f64;
        CpuWait {
            own_seconds: waited_ns(&self.own_wait_ns, &end.own_wait_ns) as f64 / 1e9,
            kernel_seconds: waited_ns(&self.kernel_wait_ns, &end.kernel_wait_ns) as f64 / 1e9,
            pressure_pct: match (self.pressure_us, end.pressure_us) {
                (Some(a), Some(b)) if seconds > 0.0 => Some(d(a, b) / 1e6 / seconds * 100.0),
                _ => None,
            },
        }
    }

    /// Other processes' share between `self` (earlier) and `end`, over `seconds`.
    pub fn load_until(&self, end: &CpuSplit, seconds: f64) -> Option<HostLoad> {
        if seconds <= 0.0 {
            return None;
        }
        let d = |a: u64, b: u64| b.saturating_sub(a);
        // Per-process and system-wide ticks are accounted apart and may disagree by
        // a few ticks; a negative remainder is none.
        let other = d(self.busy, end.busy)
            .saturating_sub(d(self.own, end.own))
            .saturating_sub(d(self.kernel, end.kernel));
        let hz = ticks_per_second();
        Some(HostLoad {
            seconds,
            other_cpu_pct: other as f64 / hz / seconds * 100.0,
            // What the machine can give: 100% per online CPU. Not this thread's
            // affinity: the monitor may run pinned with the workload to one CPU (a
            // busy host's warning read "143% CPU (of 100%)" on two CPUs).
            capacity_pct: online_cpus() as f64 * 100.0,
            cpu_wait: Some(self.wait_until(end, seconds)),
        })
    }
}

/// CPUs online in the machine (at least 1).
fn online_cpus() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
        .ok()
        .flatten()
        .map_or(1, |n| n.max(1) as usize)
}

/// user + nice + system of `/proc/stat`'s `cpu` line.
pub fn busy_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(3)
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 3).then(|| v.iter().sum())
}

/// One task of `/proc`: its parent, whether it is a kernel thread, and its CPU ticks
/// with its reaped children's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub pid: u32,
    pub ppid: u32,
    pub kernel: bool,
    pub ticks: u64,
}

/// A `/proc/<pid>/stat` line. The command name may hold spaces and parentheses, so
/// fields are counted from the last `)`.
pub fn parse_task(pid: u32, text: &str) -> Option<Task> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... flags(6) ... utime(11) stime(12)
    // cutime(13) cstime(14).
    let num = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some(Task {
        pid,
        ppid: num(1)? as u32,
        kernel: num(6)? & PF_KTHREAD != 0,
        ticks: num(11)? + num(12)? + num(13)? + num(14)?,
    })
}

/// The environment variable a trial of a concurrent run (`jbench run --jobs N`) finds
/// the run's own process in.
pub const RUN_ROOT_ENV: &str = "JBENCH_RUN_ROOT";

/// The process whose tree is the run's own: this one, or in a trial of a concurrent
/// run (`jbench run --jobs N`) the run that started it, so the trials beside it count
/// as the run's work, not as another program's.
fn run_root() -> u32 {
    std::env::var(RUN_ROOT_ENV)
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(std::process::id)
}

/// The run delay of every thread of process `pid` that runs at an ordinary priority,
/// in ns, by thread id (none when the process is gone). A real-time thread (the device daemon's) waits only
/// behind other real-time threads, its own daemon's, never behind another program:
/// that wait is the daemon's design, inside the model's time, not the host's doing.
fn run_delays_ns(pid: u32) -> Vec<(u32, i64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let threads: Vec<Thread> = dir
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            let sched = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
            Some(Thread {
                tid,
                comm: comm(&stat)?.to_string(),
                realtime: rt_priority(&stat)? != 0,
                runtime_ns: schedstat_field(&sched, 0)?,
                delay_ns: schedstat_field(&sched, 1)?,
            })
        })
        .collect();
    waits_of(&threads)
}

/// One thread's name, class and `schedstat`.
struct Thread {
    tid: u32,
    comm: String,
    realtime: bool,
    runtime_ns: u64,
    delay_ns: u64,
}

/// The run delay of one process's ordinary threads. A polling device daemon's reader
/// (`fuser-*` at normal priority) is always runnable: it waits whenever the daemon's
/// real-time completion thread runs on its CPU, which is the daemon answering, not
/// the trial waiting; that thread's run time is taken off the reader's wait.
fn waits_of(threads: &[Thread]) -> Vec<(u32, i64)> {
    let answering: u64 = threads
        .iter()
        .filter(|t| t.realtime && t.comm == crate::emu::daemon::COMPLETER_THREAD)
        .map(|t| t.runtime_ns)
        .sum();
    threads
        .iter()
        .filter(|t| !t.realtime)
        .map(|t| {
            let own = if t.comm.starts_with(crate::emu::daemon::FUSE_READER_PREFIX) {
                t.delay_ns as i64 - answering as i64
            } else {
                t.delay_ns as i64
            };
            (t.tid, own)
        })
        .collect()
}

/// The command name of a `stat` line (between the first `(` and the last `)`).
fn comm(stat: &str) -> Option<&str> {
    stat.get(stat.find('(')? + 1..stat.rfind(')')?)
}

/// Run delay by thread id, ns (signed: a polling reader's is its delay less its
/// daemon's answering time, see `waits_of`).
pub type ThreadWaits = std::collections::BTreeMap<u32, i64>;

/// What the threads alive at `end` waited since `start`: a thread born meanwhile
/// waited all of its run delay within the interval; one that ended is not counted.
fn waited_ns(start: &ThreadWaits, end: &ThreadWaits) -> u64 {
    end.iter()
        .map(|(tid, &ns)| (ns - start.get(tid).copied().unwrap_or(0)).max(0) as u64)
        .sum()
}

/// A task's `rt_priority` from its `stat` line (0: not real-time).
pub fn rt_priority(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(37)?.parse().ok()
}

/// Field `n` of a `schedstat` line: 0 time on the CPU, 1 time waiting for it (ns).
fn schedstat_field(text: &str, n: usize) -> Option<u64> {
    text.split_whitespace().nth(n)?.parse().ok()
}

/// The `total=` of `/proc/pressure/cpu`'s "some" line, µs.
pub fn some_total_us(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The processes of `root`'s tree (kernel threads never are).
pub fn tree_members(tasks: &[Task], root: u32) -> std::collections::HashSet<u32> {
    let parent: HashMap<u32, u32> = tasks.iter().map(|t| (t.pid, t.ppid)).collect();
    let in_tree = |mut pid: u32| {
        // Bounded: a parent chain is at most as long as the process table.
        for _ in 0..=tasks.len() {
            if pid == root {
                return true;
            }
            match parent.get(&pid) {
                Some(&p) if p != 0 && p != pid => pid = p,
                _ => return false,
            }
        }
        false
    };
    tasks
        .iter()
        .filter(|t| !t.kernel && in_tree(t.pid))
        .map(|t| t.pid)
        .collect()
}

/// `(ticks of root's tree, ticks of kernel threads)`.
pub fn split(tasks: &[Task], root: u32) -> (u64, u64) {
    ticks_of(tasks, &tree_members(tasks, root))
}

/// `(ticks of the processes of `tree`, ticks of kernel threads)`.
fn ticks_of(tasks: &[Task], tree: &std::collections::HashSet<u32>) -> (u64, u64) {
    let own = tasks
        .iter()
        .filter(|t| tree.contains(&t.pid))
        .map(|t| t.ticks)
        .sum();
    let kernel = tasks.iter().filter(|t| t.kernel).map(|t| t.ticks).sum();
    (own, kernel)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names() {
        let t = parse_task(
            42,
            "42 (a b) c)) S 7 42 42 0 -1 4194560 1 0 0 0 30 12 5 3 20 0 1 0 1 1 1\n",
        )
        .unwrap();
        assert_eq!((t.ppid, t.kernel, t.ticks), (7, false, 30 + 12 + 5 + 3));
        let k = parse_task(2, "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 1 2 0 0 20\n").unwrap();
        assert!(k.kernel);
        assert_eq!(
            busy_ticks("cpu  10 2 5 100 7 1 1 0 0 0\ncpu0 1 1 1 1\n"),
            Some(17)
        );
    }

    #[test]
    fn own_tree_and_kernel_threads_are_apart_from_others() {
        let task = |pid, ppid, kernel, ticks| Task {
            pid,
            ppid,
            kernel,
            ticks,
        };
        let tasks = [
            task(1, 0, false, 1000),
            task(2, 0, true, 50),
            task(10, 1, false, 7),   // jbench
            task(11, 10, false, 20), // fio, its child
            task(12, 11, false, 3),  // fio's worker
            task(20, 1, false, 400), // a compiler elsewhere
            task(30, 2, true, 9),    // a kworker
        ];
        assert_eq!(split(&tasks, 10), (7 + 20 + 3, 50 + 9));
    }

    #[test]
    fn a_busy_child_is_the_trials_and_a_stranger_is_other() {
        let start = CpuSplit {
            busy: 1000,
            own: 100,
            kernel: 50,
            ..CpuSplit::default()
        };
        let end = CpuSplit {
            busy: 1000 + 300,
            own: 100 + 100,
            kernel: 50 + 20,
            ..CpuSplit::default()
        };
        let hz = ticks_per_second();
        let l = start.load_until(&end, 1.0).unwrap();
        assert!((l.other_cpu_pct - 180.0 / hz * 100.0).abs() < 1e-9, "{l:?}");
        assert!(start.load_until(&end, 0.0).is_none());
        // More own time than the machine's (accounting skew) is no negative load.
        let skew = CpuSplit {
            own: 100 + 400,
            ..end
        };
        assert_eq!(start.load_until(&skew, 1.0).unwrap().other_cpu_pct, 0.0);
    }

    #[test]
    fn run_delay_and_pressure_are_read_as_the_kernel_writes_them() {
        assert_eq!(
            schedstat_field("227715165 368833671 13235\n", 1),
            Some(368_833_671)
        );
        assert_eq!(schedstat_field("12\n", 1), None);
        let stat = |rt: u32| {
            format!("7 (a) b) S 1 7 7 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 4 0 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 1 {rt} 1 0 0\n")
        };
        assert_eq!(rt_priority(&stat(0)), Some(0));
        assert_eq!(rt_priority(&stat(50)), Some(50));
        let psi = "some avg10=53.76 avg60=15.51 avg300=5.31 total=6096999164\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(some_total_us(psi), Some(6_096_999_164));
        let waits = |w: &[(u32, i64)]| w.iter().copied().collect::<ThreadWaits>();
        let start = CpuSplit {
            own_wait_ns: waits(&[(7, 1_000_000_000)]),
            // Thread 40 ends before the second reading, 41 is born after the first.
            kernel_wait_ns: waits(&[(30, 10), (40, 900_000_000)]),
            pressure_us: Some(5_000_000),
            ..CpuSplit::default()
        };
        let end = CpuSplit {
            own_wait_ns: waits(&[(7, 1_300_000_000)]),
            kernel_wait_ns: waits(&[(30, 15_000_010), (41, 5_000_000)]),
            pressure_us: Some(6_000_000),
            ..CpuSplit::default()
        };
        let w = start.wait_until(&end, 2.0);
        assert!((w.own_seconds - 0.3).abs() < 1e-9 && (w.kernel_seconds - 0.02).abs() < 1e-9);
        assert_eq!(w.pressure_pct, Some(50.0));
        // 0.32 s of 2 s is past the 5% bound; of 10 s it is not.
        assert!(w.starved(2.0) && !w.starved(10.0));
        // An idle host's kernel threads' few tens of milliseconds are no starved
        // trial, however short.
        let idle = CpuWait {
            own_seconds: 0.003,
            kernel_seconds: 0.026,
            pressure_pct: Some(1.6),
        };
        assert!(!idle.starved(0.3));
        // Thread 40 took its 0.9 s with it when it ended: the others' waits stand
        // (the totals, 0.9 s then 0.02 s, would have read none).
        assert_eq!(
            waited_ns(&start.kernel_wait_ns, &end.kernel_wait_ns),
            20_000_000
        );
    }

    #[test]
    fn a_polling_readers_wait_behind_its_own_answers_is_not_the_trials() {
        let t = |tid, comm: &str, realtime, runtime_ns, delay_ns| Thread {
            tid,
            comm: comm.into(),
            realtime,
            runtime_ns,
            delay_ns,
        };
        let daemon = [
            t(10, "jbench", false, 5_000, 700),
            t(11, "completer", true, 300_000, 50),
            t(12, "fuser-0", false, 9_000_000, 420_000),
        ];
        // The reader waited 420 µs, 300 of them while the completer answered; the
        // real-time thread itself is not counted.
        assert_eq!(waits_of(&daemon), vec![(10, 700), (12, 120_000)]);
        // Without a completion thread (not a daemon), a `fuser-` thread's wait is whole.
        assert_eq!(waits_of(&daemon[2..]), vec![(12, 420_000)]);
        assert_eq!(comm("12 (fuser-0) R 1 2 3"), Some("fuser-0"));
        assert_eq!(comm("7 (a) b) S 1"), Some("a) b"));
        // A reader that waited less than its daemon answered meanwhile: no wait, and
        // not a negative one taken off the others.
        let start: ThreadWaits = [(12, 0)].into_iter().collect();
        let end: ThreadWaits = [(12, -5_000), (10, 700)].into_iter().collect();
        assert_eq!(waited_ns(&start, &end), 700);
    }

    /// Two spinning processes outside jbench's tree on this thread's one CPU keep it
    /// waiting for the CPU about two thirds of the time, whatever the machine's CPU
    /// count, and the wait is this tree's.
    #[test]
    fn a_thread_kept_from_the_cpu_by_others_shows_its_wait() {
        use crate::rig::emulated::{allowed_cpus, pin_current_thread};
        let cpu = allowed_cpus()[0];
        let before = pin_current_thread(&[cpu]).unwrap();
        let mut burners = Vec::new();
        for _ in 0..2 {
            let out = std::process::Command::new("sh")
                // Spinning without forking (a loop that runs `date` each turn
                // spends its time in fork and exec, and kept this thread waiting
                // 0.03-0.09 s in 1.5 s); `timeout` ends it if the kill is missed.
                .args([
                    "-c",
                    &format!(
                        "taskset -c {cpu} timeout 3 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!"
                    ),
                ])
                .output()
                .unwrap();
            burners.push(
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse::<i32>()
                    .unwrap(),
            );
        }
        let t0 = std::time::Instant::now();
        let start = CpuSplit::now().expect("/proc/stat is readable");
        while t0.elapsed() < std::time::Duration::from_millis(1500) {
            std::hint::spin_loop();
        }
        let end = CpuSplit::now().unwrap();
        let w = start.wait_until(&end, t0.elapsed().as_secs_f64());
        for pid in burners {
            // SAFETY: kill with a pid we started; `timeout` passes SIGTERM on to its
            // spinner, and ends it by itself anyway.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        pin_current_thread(&before).unwrap();
        // Three spinners on one CPU: this one waits about two thirds of the time.
        assert!(w.own_seconds > 0.1, "{w:?}");
        assert!(w.starved(1.5), "{w:?}");
    }

    #[test]
    fn a_cpu_burner_outside_the_tree_shows_up() {
        let Some(a) = CpuSplit::now() else {
            return;
        };
        assert!(a.own > 0 || a.busy > 0);
        // Not our child: a grandchild of a shell that exits at once is reparented
        // away from this process, like any other process on the machine.
        let out = std::process::Command::new("sh")
            .args(["-c", "sh -c 'end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do :; done' >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let t0 = std::time::Instant::now();
        let start = CpuSplit::now().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let end = CpuSplit::now().unwrap();
        let load = start.load_until(&end, t0.elapsed().as_secs_f64()).unwrap();
        // SAFETY: kill with a pid we started; the burner ends by itself anyway.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        // One core spinning, less whatever else the machine's other jobs took from it.
        assert!(load.other_cpu_pct > 40.0, "{load:?}");
        assert!(load.other_cpu_pct <= load.capacity_pct + 5.0, "{load:?}");
        // The machine's CPUs, whatever this thread is pinned to.
        use crate::rig::emulated::{allowed_cpus, pin_current_thread};
        let allowed = allowed_cpus();
        let before = pin_current_thread(&allowed[..1]).unwrap();
        let pinned = a.load_until(&CpuSplit::now().unwrap(), 1.0).unwrap();
        pin_current_thread(&before).unwrap();
        assert!(
            pinned.capacity_pct >= allowed.len() as f64 * 100.0,
            "{pinned:?}"
        );
    }
}
