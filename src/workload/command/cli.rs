//! `jbench workload command --dir D -- argv...`

use std::path::PathBuf;
use std::time::Duration;

use super::{resolve_user, CommandSpec};
use crate::workload::{RunControl, Workload};

/// Command-line arguments of `jbench workload command`.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to run in (must exist); the command's working directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// Run as this user.
    #[arg(long)]
    pub user: Option<String>,
    /// Kill the command's process group after this long: 90s, 10m, 1h.
    #[arg(long, default_value = "1h", value_parser = crate::units::parse_duration)]
    pub timeout: Duration,
    /// Keep stdout.txt, stderr.txt and exit.json here (default: a temporary folder,
    /// removed).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Also time the command up to syncfs of the file system.
    #[arg(long)]
    pub durable: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true)]
    pub argv: Vec<String>,
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    let mut spec = CommandSpec::new(args.argv.clone());
    spec.timeout = args.timeout;
    spec.user = args
        .user
        .as_deref()
        .map(resolve_user)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--user: {e}"))?;
    let ctl = ctl
        .clone()
        .with_durable(args.durable || ctl.durable())
        .with_output_dir(args.output.clone());
    let phases = spec.run(&args.dir, &ctl)?;
    if args.json {
        let out =
            serde_json::json!({"workload": "command", "params": spec.params(), "phases": phases});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("command in {}: {}", args.dir.display(), args.argv.join(" "));
        println!("{:<13} {:>10} {:>6}", "phase", "seconds", "runs");
        for r in &phases {
            println!("{:<13} {:>10.3} {:>6}", r.name, r.seconds, r.ops);
            if let Some(d) = r.durable_seconds {
                println!("{:<13} {:>10.3} (up to syncfs)", "", d);
            }
            for (k, v) in &r.counters {
                println!("{:<13} {k}={v}", "");
            }
        }
    }
    Ok(())
}
