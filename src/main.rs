//! The `jbench` command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use jbench::cli::exit::{fail, install_panic_hook, is_broken_pipe, write_out, StdoutError};
use jbench::experiment::{plan, spec};
use jbench::report::{self, Format, ReportOptions};
use jbench::results::{layout, store};
use jbench::run::{cleanup, executor, interrupt, preflight, runner};
use jbench::selftest;

/// `print!` and `println!` that return a write error (through `?`) instead of
/// panicking, as `print!` does on a closed or full standard output.
macro_rules! out {
    ($($arg:tt)*) => {
        write_out(format_args!($($arg)*))?
    };
}

macro_rules! outln {
    () => {
        write_out(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        write_out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

const ABOUT: &str = "Measures what a file system's journal placement, size and mode cost in speed.

jbench builds real ext4, ext3 and XFS file systems on loop images, RAM disks, emulated
disks (7200 rpm, SSD, NVRAM models served in user space) or named devices, with the
journal placed, sized and moded as an experiment file says, runs native
re-implementations of classic workloads (fdtree, PostMark, iozone, fsync) on a fresh file
system for every trial, verifies each configuration before measuring it, and reports
mean, spread, confidence and significance.";

const AFTER: &str = "Examples:
  jbench run                                 the built-in quick preset: a few minutes
  jbench run presets/quick.toml              the same, from its file
  jbench plan presets/study1-journal-device.toml   what the full study would run
  jbench report results/quick-20261123-101500 --format markdown
  jbench compare results/hdd-run results/ssd-run   two runs side by side
  jbench report results/quick-20261123-101500 --html report.html   charts, tables, timelines
  jbench run presets/quick.toml --resume results/quick-20261123-101500
  jbench workload fdtree --dir /mnt/test -d 3 -f 4 -s 1 -l 5
  jbench run --preset study1-hdd             Study 1 on emulated 7200 rpm disks
  jbench device calibrate hdd-7200           measure an emulated disk against its model
  jbench cleanup                             after a run was killed with SIGKILL

The experiment file format, the results schema and the presets are described in README.md;
emulated disks in docs/devices.md.";

#[derive(Parser)]
#[command(name = "jbench", version, about = ABOUT, long_about = ABOUT, after_help = AFTER)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment: provision, verify and measure every trial of the plan (root).
    Run(RunArgs),
    /// Print the configurations and the ordered trial plan of an experiment; runs nothing.
    Plan {
        #[command(flatten)]
        source: SpecSource,
    },
    /// Tables of times, rates and comparisons from a results directory.
    Report(ReportArgs),
    /// Configurations of several results directories side by side, labelled
    /// `<dir-name>:<label>`, with the same statistics and verdicts as `report`.
    Compare(CompareArgs),
    /// Run one workload in an existing directory, without provisioning anything.
    #[command(subcommand)]
    Workload(WorkloadCmd),
    /// Release mounts, loop and zram devices left by a jbench that was killed (root).
    Cleanup {
        /// Also scan this work directory for session directories (repeatable);
        /// registered sessions and those loop devices point into are always found.
        #[arg(long = "work-dir")]
        work_dirs: Vec<PathBuf>,
        /// Say what would be released without releasing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Benchmarks of jbench itself.
    #[command(subcommand)]
    Selftest(SelftestCmd),
    /// Emulated disks: list the models, calibrate one, read a write log.
    #[command(subcommand)]
    Device(DeviceCmd),
    /// Serves emulated disks over FUSE; started by `jbench run` and `jbench device`,
    /// not by hand.
    #[command(hide = true)]
    DeviceDaemon {
        /// The daemon's JSON configuration, written by the rig.
        config: PathBuf,
    },
}

/// Where the experiment comes from: a file, or a preset built into jbench.
#[derive(Args)]
struct SpecSource {
    /// Experiment file (TOML) [default: the built-in `quick` preset].
    spec: Option<PathBuf>,
    /// Use a built-in experiment instead of a file: quick, study1-journal-device,
    /// study2-journal-size, study3-nvram-postmark, study4-journaling-modes-iozone,
    /// study1-hdd, study2-hdd (the files in presets/ are the same).
    #[arg(long, conflicts_with = "spec")]
    preset: Option<String>,
}

impl SpecSource {
    /// The experiment text and the name errors should point at.
    fn read(&self) -> Result<(String, String)> {
        match (&self.spec, &self.preset) {
            (Some(path), _) => Ok((
                spec::read_text(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
                path.display().to_string(),
            )),
            (None, name) => {
                let name = name.as_deref().unwrap_or("quick");
                let text = jbench::experiment::presets::find(name).with_context(|| {
                    format!(
                        "no preset `{name}` (built in: {})",
                        jbench::experiment::presets::names().join(", ")
                    )
                })?;
                Ok((text.to_string(), format!("preset {name}")))
            }
        }
    }

    fn load(&self) -> Result<spec::Spec> {
        let (text, origin) = self.read()?;
        Ok(spec::parse(&text, &origin)?)
    }
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    source: SpecSource,
    /// Results directory [default: results/<name>-<timestamp>].
    #[arg(long)]
    results: Option<PathBuf>,
    /// Finish an interrupted run: only the trials missing from DIR/trials.jsonl are run.
    #[arg(long, value_name = "DIR", conflicts_with = "results")]
    resume: Option<PathBuf>,
    /// Allow formatting this exact real device named by filesystem.device or
    /// journal.device; ALL DATA ON IT IS LOST. Repeat for each device.
    #[arg(long = "destroy-data-on", value_name = "DEV")]
    destroy: Vec<PathBuf>,
    /// No progress output (the final report is still printed).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct ReportArgs {
    /// Results directory of a run.
    dir: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Configuration label to compare the others with [default: the spec's baseline,
    /// else the first configuration].
    #[arg(long)]
    baseline: Option<String>,
    /// Phases shorter than this are marked suspect [default: the spec's suspect_below].
    #[arg(long, value_name = "DURATION", value_parser = jbench::units::cli::suspect_below)]
    suspect_below: Option<String>,
    /// Write the self-contained HTML report (charts, tables, timelines) to FILE
    /// instead of printing the text report.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

#[derive(Args)]
struct CompareArgs {
    /// Results directories (two or more); their configurations are shown in this order.
    #[arg(required = true, num_args = 2..)]
    dirs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Configuration to compare the others with: `<dir-name>:<label>`, or a label of
    /// the first run that has it [default: the first run's baseline, else its first
    /// configuration].
    #[arg(long)]
    baseline: Option<String>,
    /// Also write the comparison as one self-contained HTML page (charts, tables,
    /// warnings) to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

#[derive(Subcommand)]
enum WorkloadCmd {
    /// fdtree 1.0.2: create a directory tree, fill it with files, remove both; prints
    /// fdtree's own report and precise figures.
    Fdtree(FdtreeArgs),
    /// PostMark 1.53: a pool of files of random sizes, then transactions pairing a
    /// create or delete with a read or append; reads PostMark's own config files.
    Postmark(jbench::workload::postmark::CliArgs),
    /// iozone-style sequential write/rewrite and read/re-read, optionally O_SYNC,
    /// flush-timed, or with N workers on N files.
    Iozone(jbench::workload::iozone::CliArgs),
    /// Create files, write and fsync each before close (fs_mark -S 1 style): the
    /// workload where journal placement shows most. Per-operation latency percentiles.
    Fsync(jbench::workload::fsync::CliArgs),
}

#[derive(Args)]
struct FdtreeArgs {
    /// Directory to work in (must exist; the tree is made in LEVEL0.<host>.<pid> inside).
    #[arg(long)]
    dir: PathBuf,
    /// Subdirectories per directory (fdtree -d).
    #[arg(short = 'd', default_value_t = 10)]
    dirs: u32,
    /// Files per directory (fdtree -f).
    #[arg(short = 'f', default_value_t = 10)]
    files: u32,
    /// File size in 4 KiB blocks (fdtree -s).
    #[arg(short = 's', default_value_t = 10)]
    blocks: u32,
    /// Levels below the root (fdtree -l).
    #[arg(short = 'l', default_value_t = 4)]
    levels: u32,
    /// Print the phases as JSON instead of the reports.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum DeviceCmd {
    /// The built-in device models with their default parameters (the keys a
    /// `[models.NAME]` table can override) and the figures they predict.
    Models,
    /// Measure a model through the whole emulation path (loop device, FUSE, daemon):
    /// QD1 random 4K reads and writes, sequential 1 MiB, fsync'ed 4K appends, each
    /// beside what the model predicts for the same requests plus the measured FUSE
    /// floor (root).
    Calibrate(CalibrateArgs),
    /// Summarise a write log (docs/write-log.md): records per kind, markers.
    Log {
        /// A `.wlog` file from a results directory's write-logs/.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct CalibrateArgs {
    /// hdd-7200, ssd-sata, nvme, nvram or ram.
    model: String,
    /// Override a model parameter, e.g. --set write_cache=false (repeatable; the value
    /// is TOML).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Size of the emulated disk; an hdd's geometry spans it.
    #[arg(long, default_value = "8G", value_parser = jbench::units::cli::disk_size)]
    size: String,
    /// Where the (sparse) images and the session directory go.
    #[arg(long, default_value = "/var/tmp/jbench")]
    work_dir: PathBuf,
    /// Predicted seconds each pattern may take; request counts are cut to fit.
    #[arg(long, default_value_t = 8.0, value_parser = jbench::units::cli::pattern_seconds)]
    seconds: f64,
    /// Also run every pattern with the write log on and show what it costs.
    #[arg(long)]
    write_log: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum SelftestCmd {
    /// Panics on purpose, to show what a bug looks like to the user: one
    /// `jbench: internal error` line (tests/cli_output.rs checks it).
    #[command(hide = true)]
    Panic,
    /// Replay the adaptive-repetitions rule on a recorded fixed-N run: trials each
    /// configuration would have needed, and whether the verdicts stay the same.
    Adaptive {
        /// Results directory of a run with a fixed number of repetitions.
        dir: PathBuf,
        /// Target coefficient of variation [default: the run's, else 0.03].
        #[arg(long, value_parser = jbench::units::cli::target_cv)]
        target_cv: Option<f64>,
        /// Trials every configuration gets first [default: the run's, else 3].
        #[arg(long, value_parser = jbench::units::cli::adaptive_min)]
        min: Option<u32>,
    },
    /// fdtree engine vs a raw-syscall loop on tmpfs: ops/s per phase and their ratio.
    Overhead {
        /// Directory on tmpfs to build the trees in.
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
        /// Alternating engine/raw rounds; the median is reported.
        #[arg(long, default_value_t = 5, value_parser = jbench::units::cli::rounds)]
        rounds: u32,
        #[arg(short = 'd', value_parser = jbench::units::cli::tree_count)]
        dirs: Option<u32>,
        #[arg(short = 'f', value_parser = jbench::units::cli::tree_count)]
        files: Option<u32>,
        #[arg(short = 's', value_parser = jbench::units::cli::tree_count)]
        blocks: Option<u32>,
        #[arg(short = 'l', value_parser = jbench::units::cli::tree_count)]
        levels: Option<u32>,
    },
    /// What the trial monitor costs: µs per sample, CPU share at 1 s, and the fdtree
    /// engine's rate on tmpfs with a monitor sampling vs none.
    Monitor {
        /// Directory on tmpfs to build the trees in.
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
        /// Alternating with/without rounds; the median is reported.
        #[arg(long, default_value_t = 5, value_parser = jbench::units::cli::rounds)]
        rounds: u32,
        /// The monitor's interval during the engine runs (shorter than the default
        /// 1 s, so a disturbance would show).
        #[arg(long, default_value = "10ms", value_parser = jbench::units::cli::monitor_interval)]
        interval: String,
        /// Samples timed for the per-sample cost.
        #[arg(long, default_value_t = 2000, value_parser = jbench::units::cli::samples)]
        samples: usize,
    },
}

fn cmd_device(cmd: DeviceCmd) -> Result<ExitCode> {
    use jbench::emu::{calibrate, model, writelog};
    match cmd {
        DeviceCmd::Models => {
            for name in jbench::emu::MODEL_NAMES {
                outln!("{name}");
                let params = model::default_params(name).unwrap_or_default();
                if params.is_empty() {
                    outln!("  (no parameters)");
                }
                for (k, v) in &params {
                    outln!("  {k} = {v}");
                }
                for (label, p) in model::predicted_set(name, None).map_err(anyhow::Error::msg)? {
                    outln!(
                        "  predicted {label}: {:.1} IOPS, {:.1} MB/s",
                        p.iops,
                        p.mb_per_s
                    );
                }
                outln!();
            }
            Ok(ExitCode::SUCCESS)
        }
        DeviceCmd::Calibrate(a) => {
            preflight::require_root("jbench device calibrate")?;
            // Its images are attached and served like a run's: the same trust rules.
            jbench::trust::create_trusted_dir(&a.work_dir)?;
            let mut params = toml::Table::new();
            for kv in &a.set {
                let (k, v) = kv
                    .split_once('=')
                    .with_context(|| format!("--set {kv}: expected KEY=VALUE"))?;
                let value: toml::Value = format!("v = {v}")
                    .parse::<toml::Table>()
                    .ok()
                    .and_then(|mut t| t.remove("v"))
                    .unwrap_or_else(|| toml::Value::String(v.to_string()));
                params.insert(k.trim().to_string(), value);
            }
            jbench::emu::model_by_name(&a.model, Some(&params)).map_err(anyhow::Error::msg)?;
            let size = jbench::units::parse_size(&a.size).map_err(anyhow::Error::msg)?;
            let opts = calibrate::CalibrateOptions {
                model: a.model,
                params,
                size,
                work_dir: a.work_dir,
                seconds_per_pattern: a.seconds,
                write_log: a.write_log,
            };
            let ctl = interrupt::install()?;
            let c = calibrate::calibrate(&opts, &ctl, &mut |line| eprintln!("jbench: {line}"))?;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&c)?);
            } else {
                out!("{}", calibrate::render(&c));
            }
            Ok(ExitCode::SUCCESS)
        }
        DeviceCmd::Log { file, json } => {
            let (header, summary) = writelog::summarize(&file)?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "header": header,
                        "summary": summary,
                    }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            for d in &header.disks {
                outln!(
                    "disk {}: {} ({}, {})",
                    d.index,
                    d.name,
                    d.model,
                    jbench::units::format_size(d.size)
                );
            }
            outln!(
                "{} records: {} writes ({}), {} zero writes, {} discards, {} flushes, {} markers",
                summary.records,
                summary.writes,
                jbench::units::format_size(summary.write_bytes),
                summary.zero_writes,
                summary.discards,
                summary.flushes,
                summary.markers.len()
            );
            for (seq, label) in summary.markers.iter().take(20) {
                outln!("  #{seq}: {label}");
            }
            if summary.markers.len() > 20 {
                outln!("  ... {} more markers", summary.markers.len() - 20);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    install_panic_hook();
    let result = match Cli::try_parse() {
        Ok(cli) => dispatch(cli),
        Err(e) => clap_exit(e),
    };
    // Text without a final newline, and anything held in the buffer, is written only
    // here: an error now is as real as one in the middle.
    let flushed = std::io::stdout().flush().map_err(StdoutError);
    match result.and_then(|code| flushed.map(|()| code).map_err(Into::into)) {
        Ok(code) => code,
        Err(e) => fail(e),
    }
}

/// Help, version and usage errors, printed as clap would but through a checked write.
fn clap_exit(e: clap::Error) -> Result<ExitCode> {
    let code = u8::try_from(e.exit_code()).unwrap_or(1);
    if e.use_stderr() {
        let _ = e.print();
    } else {
        out!("{}", e.render());
    }
    Ok(ExitCode::from(code))
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Plan { source } => {
            let spec = source.load()?;
            out!("{}", plan::describe(&spec, &plan::plan(&spec)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Report(args) => cmd_report(args),
        Command::Compare(args) => cmd_compare(args),
        Command::Workload(WorkloadCmd::Fdtree(args)) => cmd_fdtree(args),
        Command::Workload(WorkloadCmd::Postmark(args)) => {
            jbench::workload::postmark::run_cli(&args, &interrupt::install()?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Workload(WorkloadCmd::Iozone(args)) => {
            jbench::workload::iozone::run_cli(&args, &interrupt::install()?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Workload(WorkloadCmd::Fsync(args)) => {
            jbench::workload::fsync::run_cli(&args, &interrupt::install()?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Cleanup { work_dirs, dry_run } => cmd_cleanup(work_dirs, dry_run),
        Command::Device(cmd) => cmd_device(cmd),
        Command::DeviceDaemon { config } => {
            jbench::emu::daemon::run(&config)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Selftest(SelftestCmd::Panic) => panic!("a panic on purpose"),
        Command::Selftest(SelftestCmd::Adaptive {
            dir,
            target_cv,
            min,
        }) => {
            out!(
                "{}",
                jbench::run::adaptive::replay_dir(&dir, target_cv, min)?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Selftest(SelftestCmd::Overhead {
            dir,
            rounds,
            dirs,
            files,
            blocks,
            levels,
        }) => {
            let mut opts = selftest::OverheadOptions {
                dir,
                rounds,
                ..Default::default()
            };
            let t = &mut opts.tree;
            t.dirs = dirs.unwrap_or(t.dirs);
            t.files = files.unwrap_or(t.files);
            t.blocks = blocks.unwrap_or(t.blocks);
            t.levels = levels.unwrap_or(t.levels);
            let report = selftest::run_overhead(&opts)?;
            out!("{report}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Selftest(SelftestCmd::Monitor {
            dir,
            rounds,
            interval,
            samples,
        }) => {
            let interval = jbench::units::parse_duration(&interval).map_err(anyhow::Error::msg)?;
            if interval.is_zero() {
                anyhow::bail!("--interval must be above zero");
            }
            let opts = selftest::monitor::MonitorCostOptions {
                dir,
                rounds,
                interval,
                samples,
                ..Default::default()
            };
            let report = selftest::monitor::run_monitor_cost(&opts)?;
            out!("{report}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn cmd_run(args: RunArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = spec::parse(&original, &origin)?;
    preflight::require_root("jbench run")?;
    for w in preflight::check(&spec, &args.destroy)? {
        eprintln!("jbench: warning: {w}");
    }
    let results_dir = match (&args.resume, &args.results) {
        (Some(dir), _) | (None, Some(dir)) => dir.clone(),
        (None, None) => default_results_dir(&spec.name),
    };
    preflight::check_results_dir_trusted(&results_dir)?;
    preflight::create_dirs(&spec)?;
    let trials = plan::plan(&spec);
    let (mut store, existing) = match &args.resume {
        Some(dir) => store::Store::resume(dir, &spec)?,
        None => (
            store::Store::create(&results_dir, &spec, &original)?,
            Vec::new(),
        ),
    };
    let dir = store.dir().to_path_buf();
    if !args.quiet {
        let reps = match spec.adaptive {
            Some(a) => format!(
                "{}..{} repetitions, adaptive to a rate CV of {:.1}%",
                a.min,
                a.max,
                a.target_cv * 100.0
            ),
            None => format!("{} repetitions", spec.repetitions),
        };
        eprintln!(
            "jbench: {} trials ({} configurations x {} workloads x {reps}); results in {}",
            trials.len(),
            spec.configs.len(),
            spec.workloads.len(),
            dir.display()
        );
    }
    let ctl = interrupt::install()?;
    let outcome = {
        let mut exec = executor::RigExecutor::new(&spec, args.destroy.clone())?
            .with_write_logs(layout::write_log_dir(&dir))
            .with_monitor_dir(layout::monitor_dir(&dir));
        runner::Run::new(&spec, &mut store, &mut exec, &ctl)
            .quiet(args.quiet)
            .execute(&trials, &existing)?
    };
    let records = store::load_records(&dir)?;
    let opts = report_options(&spec, None, None)?;
    store::write_summary(&dir, &report::render(&records, &opts, Format::Csv))?;
    // The run's status says what happened to the trials; a closed or full standard
    // output must not hide it (the results are on disk either way).
    let printed = print_run_report(&dir, &spec, &records, &opts);
    let code = run_status(&args, &dir, &records, &outcome);
    match printed {
        Ok(()) => Ok(code),
        Err(e) if code == ExitCode::SUCCESS => Err(e),
        Err(e) => {
            if !is_broken_pipe(&e) {
                eprintln!("jbench: error: {e:#}");
            }
            Ok(code)
        }
    }
}

/// The tables, the HTML report's path and the results directory, on standard output.
fn print_run_report(
    dir: &Path,
    spec: &spec::Spec,
    records: &[jbench::results::record::TrialRecord],
    opts: &ReportOptions,
) -> Result<()> {
    outln!("{}", report::render(records, opts, Format::Table));
    let html_path = layout::report_html(dir);
    match jbench::report::html::render_dir(dir, &spec.name, opts)
        .and_then(|page| Ok(std::fs::write(&html_path, page)?))
    {
        Ok(()) => outln!("HTML report: {}", html_path.display()),
        Err(e) => eprintln!(
            "jbench: warning: cannot write {}: {e:#}",
            html_path.display()
        ),
    }
    outln!("results: {}", dir.display());
    Ok(())
}

/// 130 interrupted, 3 every trial failed, 2 some failed, 0 all measured; said on stderr.
fn run_status(
    args: &RunArgs,
    dir: &Path,
    records: &[jbench::results::record::TrialRecord],
    outcome: &runner::RunOutcome,
) -> ExitCode {
    if outcome.interrupted {
        let again = match (&args.source.spec, &args.source.preset) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(p)) => format!("--preset {p}"),
            (None, None) => String::new(),
        };
        eprintln!(
            "jbench: interrupted; everything was released. Finish with: jbench run {again} --resume {}",
            dir.display()
        );
        return ExitCode::from(130);
    }
    if !records.is_empty() && records.iter().all(|r| !r.is_ok()) {
        eprintln!(
            "jbench: {}; nothing was measured (errors in {}/trials.jsonl)",
            report::every_trial_failed(records).unwrap_or_default(),
            dir.display()
        );
        return ExitCode::from(3);
    }
    if outcome.failed > 0 {
        eprintln!(
            "jbench: {} trial(s) failed; see the `error` field in {}/trials.jsonl",
            outcome.failed,
            dir.display()
        );
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

fn default_results_dir(name: &str) -> PathBuf {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    PathBuf::from("results").join(format!("{name}-{stamp}"))
}

fn report_options(
    spec: &spec::Spec,
    baseline: Option<String>,
    suspect: Option<&str>,
) -> Result<ReportOptions> {
    let suspect_below = match suspect {
        Some(s) => jbench::units::parse_duration(s).map_err(anyhow::Error::msg)?,
        None => spec.suspect_below,
    };
    Ok(ReportOptions {
        suspect_below_secs: suspect_below.as_secs_f64(),
        baseline: baseline.or_else(|| spec.baseline.clone()),
        confidence: 0.95,
        config_order: spec.configs.iter().map(|c| c.label.clone()).collect(),
        workload_order: spec.workloads.iter().map(|w| w.name.clone()).collect(),
        noise_band: spec.noise_band,
        adaptive_looks: spec.adaptive.map(|a| a.max.saturating_sub(a.min) + 1),
    })
}

fn cmd_report(args: ReportArgs) -> Result<ExitCode> {
    let records = store::load_records(&args.dir)?;
    let spec_path = args.dir.join(store::SPEC);
    let spec = spec::load(&spec_path).with_context(|| {
        format!(
            "cannot read the experiment stored in {}",
            spec_path.display()
        )
    })?;
    let opts = report_options(&spec, args.baseline, args.suspect_below.as_deref())?;
    if let Some(b) = &opts.baseline {
        if !records.iter().any(|r| &r.config.label == b) {
            bail!("no configuration `{b}` in {}", args.dir.display());
        }
    }
    if let Some(file) = &args.html {
        let page = jbench::report::html::render_dir(&args.dir, &spec.name, &opts)?;
        std::fs::write(file, page).with_context(|| format!("cannot write {}", file.display()))?;
        outln!("HTML report: {}", file.display());
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", report::render(&records, &opts, args.format));
    Ok(ExitCode::SUCCESS)
}

fn cmd_compare(args: CompareArgs) -> Result<ExitCode> {
    use jbench::analysis::compare;
    for d in &args.dirs {
        if !compare::is_results_dir(d) {
            bail!(
                "{} is not a jbench results directory (no trials.jsonl)",
                d.display()
            );
        }
    }
    let merged = compare::merge(&args.dirs)?;
    let opts = merged.report_options(args.baseline.as_deref())?;
    if matches!(args.format, Format::Csv | Format::Json) {
        for w in &merged.warnings {
            eprintln!("jbench: warning: {w}");
        }
    }
    out!("{}", compare::render(&merged, &opts, args.format));
    if let Some(path) = &args.html {
        let names: Vec<String> = args
            .dirs
            .iter()
            .map(|d| {
                d.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let title = format!("compare {}", names.join(" / "));
        let page = jbench::report::html::render_page(&jbench::report::html::Page {
            records: &merged.records,
            env: None,
            title: &title,
            opts: &opts,
            results_dir: None,
            extra_warnings: &merged.warnings,
        })?;
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("HTML comparison: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_fdtree(args: FdtreeArgs) -> Result<ExitCode> {
    use jbench::workload::{fdtree::Fdtree, Workload};
    let tree = Fdtree {
        dirs: args.dirs,
        files: args.files,
        blocks: args.blocks,
        levels: args.levels,
    };
    tree.preflight_cli(&args.dir)?;
    let ctl = interrupt::install()?;
    let phases = tree.run(&args.dir, &ctl)?;
    if args.json {
        let out =
            serde_json::json!({"workload": "fdtree", "params": tree.params(), "phases": phases});
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        out!(
            "{}",
            jbench::workload::fdtree::compat_report(&tree, Path::new(&args.dir), &phases)
        );
        outln!();
        out!(
            "{}",
            jbench::workload::fdtree::precise_report(&tree, &phases)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_cleanup(work_dirs: Vec<PathBuf>, dry_run: bool) -> Result<ExitCode> {
    preflight::require_root("jbench cleanup")?;
    let mut dirs = work_dirs;
    dirs.push(PathBuf::from("/var/tmp/jbench"));
    dirs.push(PathBuf::from("/dev/shm"));
    let report = cleanup::cleanup(&dirs, dry_run)?;
    for line in &report.released {
        outln!("{line}");
    }
    for live in &report.skipped_live {
        outln!("left alone (a running jbench holds it): {}", live.display());
    }
    for (dir, why) in &report.skipped_untrusted {
        outln!("skipped (not trusted): {}: {why}", dir.display());
    }
    for e in &report.errors {
        eprintln!("jbench: cleanup: {e}");
    }
    if report.released.is_empty() && report.errors.is_empty() && report.skipped_untrusted.is_empty()
    {
        outln!("nothing to clean up");
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
