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
}

/// Cumulative CPU ticks at one moment, split by whose they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSplit {
    /// `/proc/stat`: user + nice + system of all CPUs.
    pub busy: u64,
    /// jbench's process tree, reaped children included.
    pub own: u64,
    /// Every kernel thread.
    pub kernel: u64,
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
        let (own, kernel) = split(&tasks, run_root());
        Some(CpuSplit { busy, own, kernel })
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
            // What the machine can give: 100% per core jbench may run on.
            capacity_pct: std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
                * 100.0,
        })
    }
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

/// `(ticks of root's tree, ticks of kernel threads)`.
pub fn split(tasks: &[Task], root: u32) -> (u64, u64) {
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
    let own = tasks
        .iter()
        .filter(|t| !t.kernel && in_tree(t.pid))
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
        };
        let end = CpuSplit {
            busy: 1000 + 300,
            own: 100 + 100,
            kernel: 50 + 20,
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
    }
}
