//! `jbench workload iozone`: its iozone-named flags, the run, and the iozone-like
//! block it prints.

use super::*;

/// Command-line arguments of `jbench workload iozone`, named as iozone's flags.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in (must exist; files iozone.tmp or iozone.DUMMY.<i> go inside).
    #[arg(long)]
    pub dir: std::path::PathBuf,
    /// Record size (iozone -r): a bare number is KiB; k, m, g suffixes (4m, 1g).
    #[arg(short = 'r', default_value = "4k", value_parser = parse_iozone_size)]
    pub record: u64,
    /// File size per worker (iozone -s): a bare number is KiB; k, m, g suffixes (75m).
    #[arg(short = 's', default_value = "512k", value_parser = parse_iozone_size)]
    pub size: u64,
    /// Test to run, repeatable (iozone -i): 0 = write/rewrite, 1 = read/re-read
    /// [default: -i 0 -i 1].
    #[arg(short = 'i', value_parser = clap::value_parser!(u8).range(0..=1))]
    pub tests: Vec<u8>,
    /// O_SYNC on every open (iozone -o).
    #[arg(short = 'o')]
    pub osync: bool,
    /// Include fsync in the write timings (iozone -e).
    #[arg(short = 'e')]
    pub flush: bool,
    /// Throughput mode with N workers on N files (iozone -t); -t 1 is single-stream.
    #[arg(short = 't', value_name = "N")]
    pub threads: Option<u32>,
    /// Turn off stonewalling (iozone -x).
    #[arg(short = 'x')]
    pub no_stonewall: bool,
    /// Do not remove the files at the end (iozone -w).
    #[arg(short = 'w')]
    pub keep: bool,
    /// Print the phases as JSON instead of the report.
    #[arg(long)]
    pub json: bool,
}

impl CliArgs {
    pub fn to_iozone(&self) -> Iozone {
        let tests = if self.tests.is_empty() {
            &[0, 1][..]
        } else {
            &self.tests[..]
        };
        Iozone {
            record: self.record,
            size: self.size,
            write: tests.contains(&0),
            read: tests.contains(&1),
            osync: self.osync,
            flush: self.flush,
            threads: self.threads.unwrap_or(1),
            stonewall: !self.no_stonewall,
        }
    }
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    crate::workload::require_dir(&args.dir)?;
    let io = args.to_iozone();
    io.validate()
        .map_err(|e| anyhow::anyhow!("{}: {}", cli_flag(&e.key), e.message))?;
    if let Some(w) = io.size_warning() {
        eprintln!("jbench: warning: {w}");
    }
    let results = io.run_in(&args.dir, ctl, args.keep)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", report(&io, &results));
    }
    Ok(())
}

pub(super) fn cli_flag(key: &str) -> &'static str {
    match key {
        "record" => "-r",
        "size" => "-s",
        "threads" => "-t",
        "tests" => "-i",
        _ => "iozone",
    }
}

/// An iozone-like block: its header lines, then its single-stream table or its
/// throughput-mode figures, then precise figures iozone does not print.
pub fn report(io: &Iozone, results: &[PhaseResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\tIozone: Performance Test of File I/O (jbench native, iozone {IOZONE_VERSION} semantics)\n\
         \n\tCommand line used: {}\n\tOutput is in kBytes/sec",
        io.command_line()
    );
    if io.osync {
        out.push_str("\tSYNC Mode. \n");
    }
    if io.flush {
        out.push_str("\tInclude fsync in write timing\n");
    }
    let _ = writeln!(
        out,
        "\tRecord Size {} kB\n\tFile size set to {} kB",
        io.record / 1024,
        io.size / 1024
    );
    if let Some(w) = io.size_warning() {
        let _ = writeln!(out, "\tWarning: {w}");
    }
    if io.throughput_mode() {
        throughput_block(io, results, &mut out);
    } else {
        single_stream_table(io, results, &mut out);
    }
    out.push_str("\n\tphase       seconds   records   KiB moved      KiB/s\n");
    for r in results {
        let _ = writeln!(
            out,
            "\t{:<9} {:>9.3} {:>9} {:>11} {:>10.1}",
            r.name,
            r.seconds,
            r.ops,
            r.bytes / 1024,
            r.kib_per_sec()
        );
    }
    out
}

pub(super) fn counter(r: &PhaseResult, key: &str) -> u64 {
    r.counters.get(key).copied().unwrap_or(0)
}

pub(super) fn single_stream_table(io: &Iozone, results: &[PhaseResult], out: &mut String) {
    out.push_str("\n              kB  reclen");
    for r in results {
        let _ = write!(out, " {:>8}", r.name);
    }
    let _ = write!(out, "\n{:>16}{:>8}", io.size / 1024, io.record / 1024);
    for r in results {
        let _ = write!(out, " {:>8}", counter(r, "children_kib_per_s"));
    }
    out.push('\n');
}

pub(super) fn throughput_block(io: &Iozone, results: &[PhaseResult], out: &mut String) {
    let n = io.threads;
    let _ = writeln!(
        out,
        "\tThroughput test with {n} threads\n\tEach thread writes a {} kByte file in {} kByte records",
        io.size / 1024,
        io.record / 1024
    );
    let phase = |name: &str| Phase::ALL.into_iter().find(|p| p.name() == name);
    for r in results {
        let label = phase(&r.name).map_or("?", Phase::iozone_label);
        let c = |k| counter(r, k) as f64;
        let _ = write!(
            out,
            "\n\tChildren see throughput for {n:2} {label:<15} = {:10.2} kB/sec\n\
             \tParent sees throughput for {n:2} {label:<16} = {:10.2} kB/sec\n\
             \tMin throughput per thread \t\t\t= {:10.2} kB/sec \n\
             \tMax throughput per thread \t\t\t= {:10.2} kB/sec\n\
             \tAvg throughput per thread \t\t\t= {:10.2} kB/sec\n\
             \tMin xfer \t\t\t\t\t= {:10.2} kB\n",
            c("children_kib_per_s"),
            c("parent_kib_per_s"),
            c("min_kib_per_s"),
            c("max_kib_per_s"),
            c("children_kib_per_s") / f64::from(n),
            c("min_xfer_kib"),
        );
    }
}
