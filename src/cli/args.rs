//! The `jbench` command line's grammar: every command, argument and help text, as
//! clap derives them. What each command does is in the sibling module of its name.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::experiment::spec;
use crate::report::Format;

pub use super::selftest_args::SelftestCmd;

pub const ABOUT: &str =
    "Measures what a file system's journal placement, size and mode cost in speed and in safety.

jbench builds real ext4, ext3 and XFS file systems on loop images, RAM disks, emulated
disks (7200 rpm, SSD, NVRAM models served in user space) or named devices, with the
journal placed, sized and moded as an experiment file says, runs native
re-implementations of classic workloads (fdtree, PostMark, iozone, fsync) on a fresh file
system for every trial, verifies each configuration before measuring it, and reports
mean, spread, confidence and significance. With a [crash] table it also cuts power
mid-workload on emulated disks (the crash lab): what survives, and how long recovery takes.";

pub const AFTER: &str = "Examples:
  jbench run
      the built-in quick preset (emulated 7200 rpm disks): speed and crash states
      of each journal placement, one report, about 4 minutes
  jbench run --preset tradeoff
      journal place and size: faster, safe, and how long to recover
  jbench run --preset quick-host
      the same question on this machine's own disk
  jbench preset show quick > mine.toml && jbench run mine.toml
      start from a preset's file and change it
  jbench plan --preset study1-journal-device
      what a full study would run, and for how long
  jbench device qualify /data --fit disk --fit-to mine.toml
      measure a device and fit a model of it into an experiment file
  jbench report results/quick-20261123-101500 --format markdown
  jbench report results/quick-20261123-101500 --html report.html
      charts, tables, timelines
  jbench compare results/hdd-run results/ssd-run
      two runs side by side
  jbench run --preset quick --resume results/quick-20261123-101500
  jbench workload fdtree --dir /mnt/test -d 3 -f 4 -s 1 -l 5
  jbench device calibrate hdd-7200
      measure an emulated disk against its model
  jbench cleanup
      after a run was killed with SIGKILL

The presets: `jbench preset list`. The man pages (`jbench man DIR`) and the
repository's docs/experiment.md (the experiment file), docs/results.md,
docs/devices.md and docs/own-hardware.md say the rest; `jbench completions SHELL`
writes the shell completions.";

#[derive(Parser)]
#[command(name = "jbench", version, about = ABOUT, long_about = ABOUT, after_help = AFTER)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run an experiment: provision, verify and measure every trial of the plan, and
    /// with a [crash] table the crash lab on one recording per configuration x
    /// workload, all in one results directory and one report (root).
    Run(RunArgs),
    /// Crash lab: run each configuration x workload once with the write log on, cut
    /// crash states from the log, recover and check every one (root; emulated disks).
    Crash(CrashArgs),
    /// A dry run: the configurations, the ordered trials, the expected wall time and
    /// the disk and memory at peak, and every check `jbench run` makes before it
    /// starts; runs nothing. Exits 1 with the reason when `run` would refuse.
    Plan(PlanArgs),
    /// Tables of times, rates and comparisons from a results directory.
    Report(ReportArgs),
    /// Configurations of several results directories side by side, labelled
    /// `<dir-name>:<label>`, with the same statistics and verdicts as `report`.
    Compare(CompareArgs),
    /// One trial of `jbench run --jobs N`, run by the run itself in a process of its own.
    #[command(hide = true)]
    Trial(TrialArgs),
    /// Merge the sealed shard attempts of a sharded run into one results directory
    /// that report, compare and --resume read like a single run's.
    Merge(MergeArgs),
    /// Run one workload in an existing directory, without provisioning anything.
    #[command(subcommand)]
    Workload(WorkloadCmd),
    /// Release mounts, loop and zram devices, device daemons and kernel settings left by
    /// a jbench that was killed, killing the workload processes that keep its mounts
    /// busy first (root).
    Cleanup {
        /// Also scan this work directory for session directories (repeatable);
        /// registered sessions and those loop devices point into are always found.
        #[arg(long = "work-dir")]
        work_dirs: Vec<PathBuf>,
        /// Say what would be released without releasing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write what Slurm, Kubernetes or GNU parallel needs to run an experiment's shards
    /// on many machines, and say how to start it and merge the results.
    Submit(SubmitArgs),
    /// Benchmarks of jbench itself.
    #[command(subcommand)]
    Selftest(SelftestCmd),
    /// Emulated disks: list the models, calibrate one, read a write log.
    #[command(subcommand)]
    Device(DeviceCmd),
    /// Print a shell's completion script: `jbench completions bash >
    /// /etc/bash_completion.d/jbench` (zsh: into a directory of `$fpath` as `_jbench`;
    /// fish: `~/.config/fish/completions/jbench.fish`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages for jbench and each of its commands (jbench.1, jbench-run.1,
    /// ...) into DIR, from the same definitions as --help: `jbench man
    /// /usr/local/share/man/man1`.
    Man {
        /// The directory to write into (made when missing).
        dir: PathBuf,
    },
    /// The experiments built into jbench: list them, or print one as a file to copy
    /// and edit.
    #[command(subcommand)]
    Preset(PresetCmd),
    /// Serves emulated disks over FUSE; started by `jbench run` and `jbench device`,
    /// not by hand.
    #[command(hide = true)]
    DeviceDaemon {
        /// The daemon's JSON configuration, written by the rig.
        config: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum PresetCmd {
    /// Each built-in experiment's name and the first line of what it asks.
    List,
    /// Print a built-in experiment's file: `jbench preset show quick > mine.toml`.
    Show {
        /// Its name (`jbench preset list`).
        #[arg(value_parser = PresetName, hide_possible_values = true)]
        name: String,
    },
}

/// A preset's name on the command line: shell completions offer every preset, and a
/// name that is none gets the one wording of `presets::lookup`, with its guess.
#[derive(Clone)]
pub struct PresetName;

impl clap::builder::TypedValueParser for PresetName {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let name = value.to_string_lossy();
        crate::experiment::presets::lookup(&name)
            .map(|_| name.into_owned())
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{e}\n")))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            crate::experiment::presets::names()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// Where the experiment comes from: a file, or a preset built into jbench.
#[derive(Args)]
pub struct SpecSource {
    /// Experiment file (TOML) [default: the built-in `quick` preset].
    pub spec: Option<PathBuf>,
    /// Use a built-in experiment instead of a file (`jbench preset list` says what each
    /// asks and how long it ran; `jbench preset show NAME` prints its file).
    #[arg(long, conflicts_with = "spec", value_name = "NAME", value_parser = PresetName, hide_possible_values = true)]
    pub preset: Option<String>,
    /// Create the experiment's work_dir with every missing parent. Without it, a
    /// work_dir whose parent does not exist is refused: a mistyped path (a disk not
    /// mounted) would put the images on whatever disk holds the nearest parent.
    #[arg(long)]
    pub create_work_dir: bool,
}

impl SpecSource {
    /// The experiment text and the name errors should point at.
    pub fn read(&self) -> Result<(String, String)> {
        match (&self.spec, &self.preset) {
            (Some(path), _) => Ok((
                spec::read_text(path).map_err(|e| {
                    let name = path.to_string_lossy();
                    // `jbench run quick` means the preset more often than a file.
                    match crate::experiment::presets::find(&name) {
                        Some(_) if !path.exists() => anyhow::anyhow!(
                            "{name}: no such experiment file; `{name}` is a built-in experiment: use --preset {name}"
                        ),
                        _ => anyhow::anyhow!("{}: {e}", path.display()),
                    }
                })?,
                path.display().to_string(),
            )),
            (None, name) => {
                let name = name.as_deref().unwrap_or("quick");
                let text =
                    crate::experiment::presets::lookup(name).map_err(|e| anyhow::anyhow!(e))?;
                Ok((text.to_string(), format!("preset {name}")))
            }
        }
    }

    pub fn load(&self) -> Result<spec::Spec> {
        let (text, origin) = self.read()?;
        let spec = spec::parse(&text, &origin)?;
        Ok(self.applied(spec))
    }

    /// `spec` with what this command line adds to it (`--create-work-dir`).
    pub fn applied(&self, mut spec: spec::Spec) -> spec::Spec {
        spec.create_work_dir |= self.create_work_dir;
        spec
    }
}

#[derive(Args)]
#[command(
    after_help = "An experiment with a [crash] table (quick has one) also runs, after the timed \
trials, one crash recording per configuration x workload (write log on, kept out of the speed \
figures) and the crash lab on it: crash states recovered and checked against what every fsync \
promised, replay times, a lost RAM-disk journal (docs/crash.md). The run ends with the answer \
at a glance: what to do, then per configuration how much faster, how many power cuts lost \
nothing, the recovery time (every table: --verbose, or `jbench report DIR` later). \
Exit status: 0 all measured and no crash state failed; 2 some trials (or a crash lab run) \
failed; 3 every trial failed; 5 a crash state lost data or consistency; 6 a recovery hung; 130 \
interrupted (finish with --resume DIR, which keeps the trials and crash states done)."
)]
pub struct RunArgs {
    #[command(flatten)]
    pub source: SpecSource,
    /// Results directory [default: results/<name>-<timestamp>].
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Finish an interrupted run: only the trials missing from DIR/trials.jsonl are run.
    #[arg(long, value_name = "DIR", conflicts_with = "results")]
    pub resume: Option<PathBuf>,
    /// Allow formatting this exact real device named by filesystem.device or
    /// journal.device; ALL DATA ON IT IS LOST. Repeat for each device.
    #[arg(long = "destroy-data-on", value_name = "DEV")]
    pub destroy: Vec<PathBuf>,
    /// No progress output (the final report is still printed).
    #[arg(long, short)]
    pub quiet: bool,
    /// Also print each configuration's devices, mount and every check that verified
    /// it, when it is first built (by default one line says it was verified), and at
    /// the end the whole text report (every table) instead of the answer at a glance.
    #[arg(long, short, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Run only shard I of N (0-based) of the plan, with the trial numbers and seeds
    /// of the unsharded plan; `auto/N` takes I from SLURM_ARRAY_TASK_ID minus
    /// SLURM_ARRAY_TASK_MIN (Slurm array job), else JOB_COMPLETION_INDEX (Kubernetes
    /// Indexed Job). Each attempt writes its own directory [default:
    /// results/<name>-shard<I>of<N>-<host>-<pid>-<timestamp>], sealed with shard.json
    /// once every trial of the shard has a record; `jbench plan --shards N` shows the
    /// split.
    #[arg(long, value_name = "I/N", value_parser = crate::scale::shard::parse_shard_arg)]
    pub shard: Option<crate::scale::shard::ShardArg>,
    /// The unit a shard keeps together on one machine: `round` = every configuration
    /// of one repetition of a workload, so each round runs on one machine while rounds
    /// may come from different machines (comparisons pool rounds, so merge needs the
    /// machines to match); `workload`
    /// = all configurations and repetitions of a workload, so every comparison of a
    /// workload and its spread come from one machine (coarser balance).
    #[arg(long, value_enum, default_value = "round", requires = "shard")]
    pub shard_by: crate::scale::shard::ShardBy,
    // Hidden, for tests: `--executor scripted` runs every trial through
    // `run::scripted::ScriptedExecutor` (made-up, deterministic phase times; no devices,
    // no root), so the whole path run -> store -> report -> report.html is tested
    // without root (tests/e2e/run/cli_scripted.rs). Not in `--help`.
    #[arg(long, value_enum, default_value = "rig", hide = true)]
    pub executor: ExecutorKind,
    /// Run up to N trials at once, each in a process of its own with its own emulated
    /// disks and daemon, starting in plan order. Only trials whose every timed disk is
    /// emulated and that share one memory limit run side by side; the others run alone
    /// (`jbench plan --jobs N` says which). Run `jbench selftest jobs` first: it
    /// measures what running beside others does to a trial's figures on this machine.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::units::cli::jobs)]
    pub jobs: u16,
}

/// `jbench trial` (hidden): one trial of a `jbench run --jobs N`, in a process of its
/// own; prints the trial's record as one JSON line.
#[derive(Args)]
pub struct TrialArgs {
    /// The run's results directory (its spec.toml is the experiment).
    #[arg(long)]
    pub results: PathBuf,
    #[arg(long)]
    pub index: usize,
    #[arg(long)]
    pub config: usize,
    #[arg(long)]
    pub workload: usize,
    #[arg(long)]
    pub rep: u32,
    #[arg(long)]
    pub recording: bool,
    #[arg(long = "destroy-data-on", value_name = "DEV")]
    pub destroy: Vec<PathBuf>,
    #[arg(long, short)]
    pub verbose: bool,
    /// Say how the configuration was built (the run's first trial of it).
    #[arg(long)]
    pub show_build: bool,
    /// Nothing runs beside it: run it as a run of one trial at a time does.
    #[arg(long)]
    pub alone: bool,
    #[arg(long, value_enum, default_value = "rig")]
    pub executor: ExecutorKind,
}

/// `jbench plan`.
#[derive(Args)]
#[command(
    after_help = "The expected time prices each trial's work (files, bytes, fsyncs, as the \
workload's engine counts them) at the costs of its devices: an emulated disk's own model, else \
figures of a typical host disk; plus the fixed cost of building a file system and the crash \
lab's per state. docs/experiment.md (\"How long a run takes\") gives its measured error per \
preset. Where the model cannot price a trial (many files written back to a spinning disk) the \
time is a range: the model's figure as a floor, the likely figure and the most at what such \
trials measured. --history DIR uses the trial times an earlier run measured instead, for every \
configuration and workload it has. --crash plans `jbench crash` on the experiment instead of \
`jbench run`. Exit status: 0 the command planned would start; 1 it would refuse (the reason is \
printed: not root, a missing tool, a work_dir that is a file, a device in use, too little space \
or memory, disks the crash lab cannot record, ...)."
)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: SpecSource,
    /// Also print how the plan splits into N shards for `jbench run --shard I/N`:
    /// each shard's trial numbers, count and expected time.
    #[arg(long, value_name = "N", value_parser = crate::units::cli::shards)]
    pub shards: Option<u32>,
    /// The unit a shard keeps together on one machine (see `jbench run --help`).
    #[arg(long, value_enum, default_value = "round", requires = "shards")]
    pub shard_by: crate::scale::shard::ShardBy,
    /// Results directory of an earlier run whose measured trial times replace the
    /// estimate for the configurations and workloads it shares (by label and name);
    /// repeat for several.
    #[arg(long, value_name = "DIR")]
    pub history: Vec<PathBuf>,
    /// As for `jbench run`: the real device the checks may count as yours to format.
    #[arg(long = "destroy-data-on", value_name = "DEV")]
    pub destroy: Vec<PathBuf>,
    /// Also give the wall time with up to N trials at once, each starting in plan order
    /// once a job is free and every running trial may share the host with it (every
    /// disk it times emulated, the same memory limit); trials are assumed to keep their
    /// serial time (`jbench selftest jobs` measures how far they slow each other).
    #[arg(long, value_name = "N", value_parser = crate::units::cli::jobs, conflicts_with = "crash")]
    pub jobs: Option<u16>,
    /// Plan `jbench crash` on this experiment instead of `jbench run`: one crash
    /// recording per configuration x workload and the crash lab on each, its time, and
    /// the checks `jbench crash` makes.
    #[arg(long, conflicts_with = "shards")]
    pub crash: bool,
    /// With --crash: crash states per configuration x workload, as `jbench crash
    /// --states N` [default: the spec's crash.states, 200].
    #[arg(long, value_name = "N", value_parser = crate::units::cli::states, requires = "crash")]
    pub states: Option<u32>,
}

/// `jbench crash`.
#[derive(Args)]
#[command(
    after_help = "Every configuration needs emulated disks (`device_model`): the write log \
that crash states are cut from is kept by the device daemon. The [crash] table of the experiment \
sets the states, strategies, seed, recovery_timing and lose_journal (docs/crash.md). States are \
cut at the device's logical block; every state is checked when there are few, a stratified \
sample when there are many. A `command` workload declares what must survive by appending \
`durable PATH` lines to $JBENCH_DURABLE, and its `check` runs in every recovered state. The \
report opens with safety and recovery: every trial is a write-logged crash recording, never \
ranked for speed. Exit status: 0 every state judged as expected; 5 an ordinary configuration \
lost data or consistency, or a negative control lost nothing fsync promised; 6 a recovery hung \
(no verdict); 2 a recording trial failed; 130 interrupted (finish with --resume)."
)]
pub struct CrashArgs {
    #[command(flatten)]
    pub source: SpecSource,
    /// Results directory [default: results/<name>-crash-<timestamp>].
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Finish an interrupted crash run: missing recordings and states only.
    #[arg(long, value_name = "DIR", conflicts_with = "results")]
    pub resume: Option<PathBuf>,
    /// Crash states per configuration x workload [default: the spec's crash.states, 200].
    #[arg(long, value_name = "N", value_parser = crate::units::cli::states)]
    pub states: Option<u32>,
    /// Seed of the state choice [default: the spec's crash.seed, else its seed].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// No progress output (the final report is still printed).
    #[arg(long, short)]
    pub quiet: bool,
    /// Also print each configuration's devices, mount and checks when first built, and
    /// at the end the whole text report instead of the answer at a glance.
    #[arg(long, short, conflicts_with = "quiet")]
    pub verbose: bool,
}

/// `jbench submit`.
#[derive(Args)]
#[command(
    after_help = "Each shard runs `jbench run SPEC --shard auto/N` and writes its own \
results directory under the results root, sealed by shard.json when it finished; \
`jbench merge RESULTS_ROOT --out DIR` puts the sealed attempts together (docs/scale-out.md)."
)]
pub struct SubmitArgs {
    /// The scheduler: slurm (an sbatch array script), k8s (an Indexed Job manifest) or
    /// parallel (a GNU parallel script for SSH hosts or this one).
    #[arg(value_enum)]
    pub scheduler: SchedulerKind,
    #[command(flatten)]
    pub source: SpecSource,
    /// Number of shards.
    #[arg(long, value_name = "N", value_parser = crate::units::cli::shards)]
    pub shards: u32,
    /// Where the launcher, the copied experiment file and the logs go
    /// [default: jbench-submit-<name>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where every attempt writes its results directory; a path all machines share, or
    /// one you collect; on k8s the hostPath on each node [default: OUT/results].
    #[arg(long, value_name = "PATH")]
    pub results_root: Option<PathBuf>,
    /// What one shard keeps together on one machine: every configuration of a
    /// repetition round of a workload (round), or all of a workload (workload).
    #[arg(long, default_value = "round", value_parser = ["round", "workload"])]
    pub shard_by: String,
    /// At most K shards at once (slurm, k8s).
    #[arg(long, value_name = "K", value_parser = crate::units::cli::positive)]
    pub throttle: Option<u32>,
    /// Retries of a failed shard (k8s backoffLimitPerIndex, parallel --retries).
    #[arg(long, value_name = "R", default_value_t = 2)]
    pub retries: u32,
    /// k8s: the container image (jbench, e2fsprogs, xfsprogs, util-linux).
    #[arg(long, default_value = "jbench:latest")]
    pub image: String,
    /// k8s: a ReadWriteMany PersistentVolumeClaim for the results instead of a hostPath
    /// on each node.
    #[arg(long, value_name = "CLAIM")]
    pub pvc: Option<String>,
    /// k8s: keep the experiment's work_dir (loop images, mounts) on this directory of
    /// each node (hostPath) instead of an emptyDir the pod loses when it ends.
    #[arg(long, value_name = "PATH")]
    pub work_host_path: Option<PathBuf>,
    /// k8s: the Job fails, and stops its running shards, once more than N shards have
    /// failed for good (maxFailedIndexes) [default: a quarter of the shards, at least 1].
    #[arg(long, value_name = "N")]
    pub max_failed_shards: Option<u32>,
    /// parallel: the SSH hosts (GNU parallel's format) [default: this machine only].
    #[arg(long, value_name = "FILE")]
    pub sshloginfile: Option<PathBuf>,
    /// The jbench the shards run (slurm, parallel) [default: this one].
    #[arg(long, value_name = "PATH")]
    pub jbench: Option<PathBuf>,
    /// slurm: also call `sbatch` and print the job id.
    #[arg(long)]
    pub submit: bool,
    // Hidden, for tests: extra arguments for every `jbench run` (`--executor scripted`).
    #[arg(long, value_name = "ARGS", hide = true, allow_hyphen_values = true)]
    pub run_args: Option<String>,
}

/// The schedulers `jbench submit` writes files for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchedulerKind {
    Slurm,
    K8s,
    Parallel,
}

/// What runs each trial of `jbench run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorKind {
    /// Real file systems on real, loop, zram or emulated devices.
    Rig,
    /// Made-up, deterministic phase times; nothing is provisioned (tests only).
    Scripted,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Results directory of a run.
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Configuration label to compare the others with [default: the spec's baseline,
    /// else the first configuration].
    #[arg(long)]
    pub baseline: Option<String>,
    /// Phases shorter than this are marked suspect [default: the spec's suspect_below].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::cli::suspect_below)]
    pub suspect_below: Option<String>,
    /// Write the self-contained HTML report (charts, tables, timelines) to FILE
    /// instead of printing the text report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Results directories (two or more); their configurations are shown in this order.
    #[arg(required = true, num_args = 2..)]
    pub dirs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Configuration to compare the others with: `<dir-name>:<label>`, or a label of
    /// the first run that has it [default: the first run's baseline, else its first
    /// configuration].
    #[arg(long)]
    pub baseline: Option<String>,
    /// Also write the comparison as one self-contained HTML page (charts, tables,
    /// warnings) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `jbench merge`.
#[derive(Args)]
#[command(
    after_help = "Only sealed attempts (shard.json) count; a directory without one did \
not finish and is listed, not used. All attempts must come from the same spec, jbench version \
and results schema; one attempt is taken per shard (the earliest sealed) and the duplicates \
are listed. The merged directory records all of it in merge.json (docs/scale-out.md)."
)]
pub struct MergeArgs {
    /// Attempt directories, or directories holding attempt directories one level down
    /// (the results root of a Slurm array).
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub dirs: Vec<PathBuf>,
    /// The merged results directory (new, or empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Merge even though some shards have no sealed attempt; every report then says
    /// which are missing, and `jbench run SPEC --resume DIR` runs their trials here.
    #[arg(long)]
    pub partial: bool,
    /// Merge shards run on machines that differ; the report then keeps each machine's
    /// trials apart (`<label>@<machine>`) instead of pooling their rates.
    #[arg(long)]
    pub allow_heterogeneous: bool,
}

#[derive(Subcommand)]
pub enum WorkloadCmd {
    /// fdtree 1.0.2: create a directory tree, fill it with files, remove both; prints
    /// fdtree's own report and precise figures.
    Fdtree(FdtreeArgs),
    /// PostMark 1.53: a pool of files of random sizes, then transactions pairing a
    /// create or delete with a read or append; reads PostMark's own config files.
    Postmark(crate::workload::postmark::CliArgs),
    /// iozone-style sequential write/rewrite and read/re-read, optionally O_SYNC,
    /// flush-timed, or with N workers on N files.
    Iozone(crate::workload::iozone::CliArgs),
    /// Create files, write and fsync each before close (fs_mark -S 1 style): the
    /// workload where journal placement shows most. Per-operation latency percentiles.
    Fsync(crate::workload::fsync::CliArgs),
    /// The real fio running a job file (checked: no devices, no paths outside DIR);
    /// IOs, bytes and latency percentiles per job and direction from fio's json+.
    Fio(crate::workload::fio::CliArgs),
    /// Any program, run in DIR in its own process group with a timeout; timed whole.
    /// stdout/stderr go to --output (or a temporary folder).
    Command(crate::workload::command::CliArgs),
}

#[derive(Args)]
pub struct FdtreeArgs {
    /// Directory to work in (must exist; the tree is made in LEVEL0.<host>.<pid> inside).
    #[arg(long)]
    pub dir: PathBuf,
    /// Subdirectories per directory (fdtree -d).
    #[arg(short = 'd', default_value_t = 10)]
    pub dirs: u32,
    /// Files per directory (fdtree -f).
    #[arg(short = 'f', default_value_t = 10)]
    pub files: u32,
    /// File size in 4 KiB blocks (fdtree -s).
    #[arg(short = 's', default_value_t = 10)]
    pub blocks: u32,
    /// Levels below the root (fdtree -l).
    #[arg(short = 'l', default_value_t = 4)]
    pub levels: u32,
    /// Print the phases as JSON instead of the reports.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum DeviceCmd {
    /// The built-in device models with their default parameters (the keys a
    /// `[models.NAME]` table can override) and the figures they predict.
    Models,
    /// Measure a model through the whole emulation path (loop device, FUSE, daemon):
    /// QD1 random 4K reads and writes, sequential 1 MiB, fsync'ed 4K appends, each
    /// beside what the model predicts for the same requests, every request taking at
    /// least the path's measured floor. Ends with a verdict; exits with status 4 when
    /// a pattern is more than 10% off (root).
    Calibrate(CalibrateArgs),
    /// Many concurrent writers (4 KiB to 4 MiB, with flushes) on emulated disks, to show
    /// the daemon never stalls: fails (exit 1) on a watchdog abort, an I/O error, an
    /// image I/O call blocked past 1 s or an answer more than 100 ms past its model
    /// deadline (root). Without MODEL: hdd-7200,
    /// raid6 with an 8 MiB cache (so it fills) and ssd-sata.
    Stress(StressArgs),
    /// What a 4 KiB request at queue depth 1 costs on each part of the emulated
    /// disk's path: image I/O, loop device, FUSE round trip (root).
    Floor(FloorArgs),
    /// Is the device under DIR fit to hold a journal or a log? Measures, at queue
    /// depth 1 in a scratch directory under DIR that is removed afterwards: fdatasync
    /// after small appends (p50/p99/p99.9, against etcd's 10 ms), write+flush latency
    /// for 4 KiB to 1 MiB, random 4 KiB and sequential 1 MiB reads and writes, and
    /// whether a flush drains a volatile cache. Nothing outside the scratch directory
    /// is touched (docs/devices.md, "Qualifying a device").
    Qualify(QualifyArgs),
    /// Summarise a write log (docs/write-log.md): records per kind, markers.
    Log {
        /// A `.wlog` file from a results directory's write-logs/.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Where a device tool puts the emulated disks it serves.
#[derive(Args)]
pub struct EmulatedDirs {
    /// Where the session directory (mount point, daemon files) goes.
    #[arg(long, default_value = "/var/tmp/jbench")]
    pub work_dir: PathBuf,
    /// Where the (sparse) image of each emulated disk goes, as a trial's `[emulation]
    /// image_dir`: on tmpfs the image's own writes cost least and never wait for
    /// writeback.
    #[arg(long, default_value = crate::emu::DEFAULT_IMAGE_DIR)]
    pub image_dir: PathBuf,
}

#[derive(Args)]
pub struct CalibrateArgs {
    /// hdd-7200, raid6, ssd-sata, nvme, nvram or ram; with --spec, also the name of
    /// one of the experiment file's [models] entries.
    pub model: String,
    /// Take MODEL from this experiment file's [models] table (e.g. `jbench preset show
    /// study4-hdd > s4.toml`, then --spec s4.toml raid6-bbu); --set overrides its
    /// parameters further.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Override a model parameter, e.g. --set write_cache=false (repeatable; the value
    /// is TOML).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Size of the emulated disk; an hdd's geometry spans it.
    #[arg(long, default_value = "8G", value_parser = crate::units::cli::disk_size)]
    pub size: String,
    #[command(flatten)]
    pub dirs: EmulatedDirs,
    /// Predicted seconds each pattern may take; request counts are cut to fit.
    #[arg(long, default_value_t = 8.0, value_parser = crate::units::cli::pattern_seconds)]
    pub seconds: f64,
    /// Also run every pattern with the write log on and show what it costs.
    #[arg(long)]
    pub write_log: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct QualifyArgs {
    /// A directory on the device to measure (it must exist, be writable and be one
    /// jbench can trust: owned by root and not writable by others, or sticky).
    #[arg(
        required_unless_present_any = ["model", "destroy_data_on"],
        conflicts_with_all = ["model", "destroy_data_on"]
    )]
    pub dir: Option<PathBuf>,
    /// Measure this real block device itself instead, overwriting its first --size
    /// bytes and its last 22 MiB (root). Refused while it is mounted, in use or
    /// partitioned.
    #[arg(long = "destroy-data-on", value_name = "DEV", conflicts_with = "model")]
    pub destroy_data_on: Option<PathBuf>,
    /// Measure an emulated disk of this model instead (root): a built-in model, or with
    /// --spec one of that experiment file's [models] entries.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The experiment file whose [models] table defines --model.
    #[arg(long, value_name = "FILE", requires = "model")]
    pub spec: Option<PathBuf>,
    /// Override a parameter of --model, e.g. --set write_cache=false (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "model")]
    pub set: Vec<String>,
    /// About how long the whole measurement takes, in seconds (the scratch file is
    /// written whole first, whatever this says).
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Size of the scratch file the random and sequential patterns span (of the
    /// emulated disk with --model); bigger spreads the random requests further.
    #[arg(long, default_value = "1G", value_parser = crate::units::cli::disk_size)]
    pub size: String,
    /// Run only these patterns (comma-separated): sequential, random, write-flush,
    /// rewrite, fdatasync. They share --seconds as all of them would; any but fdatasync
    /// writes the scratch file whole first. E.g. --only fdatasync for etcd's recipe
    /// alone.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PATTERNS")]
    pub only: Vec<crate::qualify::Pattern>,
    /// Also print a [models.NAME] entry fitted to the measurement, for an experiment
    /// file's device_model (needs every pattern: not with --only).
    #[arg(
        long,
        value_name = "NAME",
        num_args = 0..=1,
        default_missing_value = "fitted",
        conflicts_with = "only"
    )]
    pub fit: Option<String>,
    /// Write the fitted entry into this experiment file as [models.NAME] (the file is
    /// created if missing; an entry of that name is replaced, the rest kept as it
    /// was): e.g. `jbench preset show own-hardware > mine.toml` first.
    #[arg(long, value_name = "FILE", requires = "fit")]
    pub fit_to: Option<PathBuf>,
    /// Then check the fitted copy against the directory (root): the same placement
    /// experiment (ext4, journal internal and on a second disk, fsync'ed 4 KiB files)
    /// on loop images in DIR and on emulated disks of the fit, side by side; prints
    /// each placement's copy/real ratio of throughput (±15%) and of median fsync'ed
    /// create latency (±20%) with 95% intervals, and a verdict. Exit status 1 when the
    /// copy misses or cannot stand for the device. Implies --fit.
    #[arg(long, requires = "dir", conflicts_with = "only")]
    pub check_copy: bool,
    /// Fsync'ed files per trial of the check.
    #[arg(long, default_value_t = 400, requires = "check_copy")]
    pub check_files: u32,
    /// Trials per placement and side of each of the check's two passes (at least 2,
    /// for an interval; with 3 the intervals were still too wide to decide on the
    /// development VM, with 6 they decided).
    #[arg(long, default_value_t = 6, requires = "check_copy")]
    pub check_repetitions: u32,
    /// Where the check's records go [default: results/check-copy-NAME-TIME].
    #[arg(long, value_name = "DIR", requires = "check_copy")]
    pub check_results: Option<PathBuf>,
    #[command(flatten)]
    pub dirs: EmulatedDirs,
    /// Print JSON instead of the table and findings.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct StressArgs {
    /// Models to stress (any built-in model: jbench device models lists them); default: hdd-7200,
    /// raid6 with an 8 MiB cache, ssd-sata.
    pub models: Vec<String>,
    /// Override a parameter of every model named, e.g. --set cache_bytes=8388608.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Concurrent writers.
    #[arg(long, default_value_t = 8, value_parser = crate::units::cli::jobs)]
    pub writers: u16,
    /// Seconds per model (the soak in docs/devices.md ran 600).
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Size of each emulated disk.
    #[arg(long, default_value = "2G", value_parser = crate::units::cli::disk_size)]
    pub size: String,
    #[command(flatten)]
    pub dirs: EmulatedDirs,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct FloorArgs {
    /// Requests of each kind (reads, writes) per part.
    #[arg(long, default_value_t = 5000)]
    pub requests: u64,
    /// The session directory, and the daemon's image as a trial's (an image in the
    /// page cache of a disk's file system costs each write 2.3-7.8 µs more, measured on
    /// the development VM's ext4).
    #[command(flatten)]
    pub dirs: EmulatedDirs,
    /// A directory on tmpfs, for the plain loop device's file.
    #[arg(long, default_value = "/dev/shm/jbench")]
    pub tmpfs_dir: PathBuf,
    /// Where the daemon runs: split (as in a trial: its own CPU), shared (every CPU),
    /// one (everything on one CPU).
    #[arg(long, value_enum, default_value = "split")]
    pub placement: crate::selftest::floor::Placement,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}
