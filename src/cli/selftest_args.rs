//! The grammar of `jbench selftest`: benchmarks of jbench itself (kept apart from
//! `args.rs`, which holds every other command's).

use std::path::PathBuf;

use clap::Subcommand;

use super::args::{ExecutorKind, SpecSource};

#[derive(Subcommand)]
pub enum SelftestCmd {
    /// Panics on purpose, to show what a bug looks like to the user: one
    /// `jbench: internal error` line (tests/e2e/run/cli_output.rs checks it).
    #[command(hide = true)]
    Panic,
    /// Replay the adaptive-repetitions rule on a recorded fixed-N run: trials each
    /// configuration would have needed, and whether the verdicts stay the same.
    Adaptive {
        /// Results directory of a run with a fixed number of repetitions.
        dir: PathBuf,
        /// Target coefficient of variation [default: the run's, else 0.03].
        #[arg(long, value_parser = crate::units::cli::target_cv)]
        target_cv: Option<f64>,
        /// Trials every configuration gets first [default: the run's, else 3].
        #[arg(long, value_parser = crate::units::cli::adaptive_min)]
        min: Option<u32>,
    },
    /// A/A check of `jbench run --jobs N`: one configuration x workload of an
    /// experiment run alone and beside N-1 other trials of it, round after round, and
    /// the ratio of every phase's rate with its interval and verdict against the
    /// experiment's noise band (root; emulated disks).
    Jobs {
        #[command(flatten)]
        source: SpecSource,
        /// The configuration measured [default: the experiment's first].
        #[arg(long)]
        config: Option<String>,
        /// The workload measured [default: the experiment's first].
        #[arg(long)]
        workload: Option<String>,
        /// Numbers of jobs to check, each against the trial alone (repeatable).
        #[arg(long = "jobs", value_name = "N", default_values_t = vec![2u16], value_parser = crate::units::cli::jobs)]
        jobs: Vec<u16>,
        /// Rounds per number of jobs: one trial alone and one beside others each.
        #[arg(long, default_value_t = 4, value_parser = crate::units::cli::rounds)]
        rounds: u32,
        /// Check it even where `jbench run --jobs` runs it alone: a memory limit on a
        /// host with v1 memory cgroups (how such trials fare side by side).
        #[arg(long)]
        any_host: bool,
        /// Where the measured trials' records go [default: results/jobs-check-<time>].
        #[arg(long)]
        results: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "rig", hide = true)]
        executor: ExecutorKind,
    },
    /// fdtree engine vs a raw-syscall loop on tmpfs: ops/s per phase and their ratio;
    /// exits with status 4 when the engine is below its target (0.95 x raw) in a phase.
    Overhead {
        /// Directory on tmpfs to build the trees in.
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
        /// Alternating engine/raw rounds; the median is reported.
        #[arg(long, default_value_t = 5, value_parser = crate::units::cli::rounds)]
        rounds: u32,
        /// fdtree -d: subdirectories per directory [default: 12].
        #[arg(short = 'd', value_parser = crate::units::cli::tree_count)]
        dirs: Option<u32>,
        /// fdtree -f: files per directory [default: 1].
        #[arg(short = 'f', value_parser = crate::units::cli::tree_count)]
        files: Option<u32>,
        /// fdtree -s: 4 KiB blocks per file [default: 1].
        #[arg(short = 's', value_parser = crate::units::cli::tree_count)]
        blocks: Option<u32>,
        /// fdtree -l: levels of directories below the top [default: 4].
        #[arg(short = 'l', value_parser = crate::units::cli::tree_count)]
        levels: Option<u32>,
    },
    /// What the trial monitor costs: µs per sample, CPU share at 1 s, and the fdtree
    /// engine's rate on tmpfs with a monitor sampling vs none.
    Monitor {
        /// Directory on tmpfs to build the trees in.
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
        /// Alternating with/without rounds; the median is reported.
        #[arg(long, default_value_t = 5, value_parser = crate::units::cli::rounds)]
        rounds: u32,
        /// The monitor's interval during the engine runs (shorter than the default
        /// 1 s, so a disturbance would show).
        #[arg(long, default_value = "10ms", value_parser = crate::units::cli::monitor_interval)]
        interval: String,
        /// Samples timed for the per-sample cost.
        #[arg(long, default_value_t = 2000, value_parser = crate::units::cli::samples)]
        samples: usize,
    },
}
