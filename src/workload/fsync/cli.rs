//! `jbench workload fsync`: its arguments, the run, and the human table it prints.

use super::*;

/// Command-line arguments of `jbench workload fsync`.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in (must exist; files go to jbench-fsync.<pid> inside and are
    /// removed at the end).
    #[arg(long)]
    pub dir: PathBuf,
    /// Files per thread.
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub files: u64,
    /// Bytes per file: 4096, 16K, 1M.
    #[arg(short = 's', long, default_value = "4096", value_parser = parse_size)]
    pub size: u64,
    /// Threads, each in its own subtree, started together.
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: u64,
    /// Subdirectories per thread, filled round-robin (fs_mark -D).
    #[arg(short = 'D', long, default_value_t = 1)]
    pub dirs: u64,
    /// Also fsync the directory after each file, like a mail server.
    #[arg(long)]
    pub fsync_dir: bool,
    /// Bytes per write call [default: min(size, 16K)].
    #[arg(short = 'w', long, value_parser = parse_size)]
    pub write_size: Option<u64>,
    /// Also time each phase up to syncfs of the file system.
    #[arg(long)]
    pub durable: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl CliArgs {
    pub fn spec(&self) -> Result<FsyncSpec, ParamError> {
        let spec = FsyncSpec {
            files: self.files,
            size: self.size,
            dirs: self.dirs,
            threads: self.threads,
            fsync_dir: self.fsync_dir,
            write_size: self.write_size.unwrap_or(default_write_size(self.size)),
        };
        spec.validate()?;
        Ok(spec)
    }
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    let spec = args
        .spec()
        .map_err(|e| anyhow::anyhow!("--{}: {}", e.key.replace('_', "-"), e.message))?;
    crate::workload::require_dir(&args.dir)?;
    let ctl = ctl.clone().with_durable(args.durable || ctl.durable());
    let phases = spec.run(&args.dir, &ctl)?;
    if args.json {
        let out =
            serde_json::json!({"workload": "fsync", "params": spec.params(), "phases": phases});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", report(&spec, &args.dir, &phases));
    }
    Ok(())
}

/// The human table: rates, MiB/s and latency percentiles per phase.
pub fn report(spec: &FsyncSpec, dir: &Path, phases: &[PhaseResult]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "fsync in {}: {} thread(s) x {} files of {} in {} dir(s), {} per write, fsync dir: {}\n",
        dir.display(),
        spec.threads,
        spec.files,
        format_size(spec.size),
        spec.dirs,
        format_size(spec.write_size),
        if spec.fsync_dir { "yes" } else { "no" },
    );
    let _ = writeln!(
        out,
        "{:<13} {:>9} {:>9} {:>11} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "phase", "seconds", "files", "files/s", "MiB/s", "p50", "p95", "p99", "max"
    );
    for r in phases {
        let lat = r.latency.clone().unwrap_or_default();
        let mib = r.kib_per_sec() / 1024.0;
        let _ = writeln!(
            out,
            "{:<13} {:>9.3} {:>9} {:>11.1} {:>8.2} {:>9} {:>9} {:>9} {:>9}",
            r.name,
            r.seconds,
            r.ops,
            r.ops_per_sec(),
            mib,
            fmt_latency(lat.p50_us),
            fmt_latency(lat.p95_us),
            fmt_latency(lat.p99_us),
            fmt_latency(lat.max_us),
        );
        if let Some(d) = r.durable_seconds {
            let _ = writeln!(out, "{:<13} {:>9.3} (up to syncfs)", "", d);
        }
        if !r.counters.is_empty() {
            let list: Vec<String> = r.counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "{:<13} {}", "", list.join(" "));
        }
    }
    out
}

/// Microseconds below 10 ms, milliseconds above, three significant-ish digits.
pub(super) fn fmt_latency(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:.1}us")
    } else {
        format!("{:.2}ms", us / 1000.0)
    }
}
