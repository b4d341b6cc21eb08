//! A private single-node Slurm cluster for one test: munged (unless one already runs),
//! slurmctld and slurmd with a generated slurm.conf in a temporary directory, on ports
//! of their own so a system Slurm is left alone. Everything it started is stopped in
//! Drop, which also runs when the test panics.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const MUNGE_PID: &str = "/run/munge/munged.pid";

pub struct Slurm {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub host: String,
    started_munged: bool,
}

fn pid_alive(pid_file: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

fn kill_by_pid_file(pid_file: &Path) {
    let Some(pid) = pid_alive(pid_file) else {
        return;
    };
    let pid = nix::unistd::Pid::from_raw(pid);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until && Path::new(&format!("/proc/{pid}")).exists() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
}

impl Slurm {
    /// Starts the cluster and waits (bounded) until its node is idle.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("jbench-slurm-")
            .tempdir()
            .unwrap();
        let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let d = dir.path().display();
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let conf = dir.path().join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=jbenchtest
SlurmctldHost={host}
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MinJobAge=600
NodeName={host} CPUs={cpus} RealMemory=256 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"
            ),
        )
        .unwrap();
        let mut slurm = Slurm {
            dir,
            conf,
            host,
            started_munged: false,
        };
        slurm.start_munged();
        for daemon in ["slurmctld", "slurmd"] {
            let out = Command::new(daemon)
                .env("SLURM_CONF", &slurm.conf)
                .output()
                .unwrap_or_else(|e| panic!("{daemon}: {e}"));
            assert!(
                out.status.success(),
                "{daemon} did not start: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                slurm.logs()
            );
        }
        slurm.wait_for("the node to be idle", Duration::from_secs(60), |s| {
            s.output(&["sinfo", "-h", "-o", "%T"]).trim() == "idle"
        });
        slurm
    }

    fn start_munged(&mut self) {
        if pid_alive(Path::new(MUNGE_PID)).is_some() {
            return;
        }
        std::fs::create_dir_all("/run/munge").unwrap();
        for d in [
            "/run/munge",
            "/etc/munge",
            "/var/lib/munge",
            "/var/log/munge",
        ] {
            let _ = Command::new("chown")
                .args(["-R", "munge:munge", d])
                .status();
        }
        let out = Command::new("runuser")
            .args(["-u", "munge", "--", "munged"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "munged did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.started_munged = true;
    }

    /// A Slurm client command talking to this cluster.
    pub fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// Standard output of a client command (`args[0]` is the program).
    pub fn output(&self, args: &[&str]) -> String {
        let out = self.cmd(args[0]).args(&args[1..]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a client command and asserts it succeeded.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args[0]).args(&args[1..]).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls `done` every 200 ms; panics with the daemons' logs after `limit`.
    pub fn wait_for(&self, what: &str, limit: Duration, mut done: impl FnMut(&Self) -> bool) {
        let until = Instant::now() + limit;
        while !done(self) {
            assert!(
                Instant::now() < until,
                "timed out after {limit:?} waiting for {what}\nsqueue:\n{}\n{}",
                self.output(&["squeue", "-a", "-r"]),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Whether `job` has no task left in the queue.
    pub fn job_done(&self, job: &str) -> bool {
        let out = self
            .cmd("squeue")
            .args(["-h", "-r", "-j", job])
            .output()
            .unwrap();
        // squeue fails on a job the controller has already purged: gone is done.
        !out.status.success() || String::from_utf8_lossy(&out.stdout).trim().is_empty()
    }

    /// The last lines of both daemons' logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for name in ["slurmctld.log", "slurmd.log"] {
            let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            s += &format!(
                "--- {name} (last 30 lines)\n{}\n",
                lines[lines.len().saturating_sub(30)..].join("\n")
            );
        }
        s
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = self.cmd("scancel").args(["-u", "root"]).output();
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until && !self.output(&["squeue", "-h"]).trim().is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
        kill_by_pid_file(&self.dir.path().join("slurmd.pid"));
        kill_by_pid_file(&self.dir.path().join("slurmctld.pid"));
        if self.started_munged {
            kill_by_pid_file(Path::new(MUNGE_PID));
        }
    }
}
