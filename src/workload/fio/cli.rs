//! `jbench workload fio`: a job file run in an existing directory, and its table.

use super::*;

/// Command-line arguments of `jbench workload fio`.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in (must exist; fio's files go to jbench-fio.<pid> inside and
    /// are removed at the end).
    #[arg(long)]
    pub dir: PathBuf,
    /// The fio job file (checked as in an experiment: no devices, no paths outside,
    /// a size per job).
    #[arg(long)]
    pub job: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    let fio = Fio::from_file(&args.job)?;
    crate::workload::require_dir(&args.dir)?;
    let phases = fio.run(&args.dir, ctl)?;
    if args.json {
        let out = serde_json::json!({"workload": "fio", "params": fio.params(), "phases": phases});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", report(&fio, &args.dir, &phases));
    }
    Ok(())
}

/// The human table: IOs, rates and latency percentiles per job and direction.
pub fn report(fio: &Fio, dir: &Path, phases: &[PhaseResult]) -> String {
    use std::fmt::Write as _;
    let src = fio
        .source
        .as_ref()
        .map_or("inline job".to_string(), |p| p.display().to_string());
    let mut out = format!("fio {src} in {}: {}\n", dir.display(), fio.job.summary());
    let width = phases
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        out,
        "{:<width$} {:>9} {:>10} {:>11} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "phase", "seconds", "IOs", "IOPS", "MiB/s", "latency", "p50", "p95", "p99", "max"
    );
    for r in phases {
        let mut first = format!(
            "{:<width$} {:>9.3} {:>10} {:>11.1} {:>8.2}",
            r.name,
            r.seconds,
            r.ops,
            r.ops_per_sec(),
            r.kib_per_sec() / 1024.0,
        );
        let rows = latency_rows(r);
        if rows.is_empty() {
            let _ = writeln!(out, "{first}");
        }
        for (kind, lat) in rows {
            let _ = writeln!(
                out,
                "{first} {kind:>7} {:>9} {:>9} {:>9} {:>9}",
                fmt_latency(lat.p50_us),
                fmt_latency(lat.p95_us),
                fmt_latency(lat.p99_us),
                fmt_latency(lat.max_us),
            );
            // The phase's figures once; its further latencies under them.
            first = " ".repeat(first.chars().count());
        }
    }
    if phases.iter().any(|r| latency_rows(r).len() > 1) {
        out.push_str(
            "latency as fio names it: clat = completion of each I/O, sync = the fsync/fdatasync calls, lat = submission + completion (without the sync)\n",
        );
    }
    out
}

/// The phase's latencies under fio's names, those fio's output has.
fn latency_rows(r: &PhaseResult) -> Vec<(&'static str, crate::workload::Latency)> {
    match &r.fio_latency {
        Some(f) => [("clat", &f.clat), ("sync", &f.sync), ("lat", &f.lat)]
            .into_iter()
            .filter_map(|(k, l)| Some((k, l.clone()?)))
            .collect(),
        None => r.latency.iter().map(|l| ("clat", l.clone())).collect(),
    }
}

/// Microseconds below 10 ms, milliseconds above.
fn fmt_latency(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:.1}us")
    } else {
        format!("{:.2}ms", us / 1000.0)
    }
}
