//! `jbench workload postmark`: its arguments, pmrc files, and what it prints.

use super::*;

/// Command-line arguments of `jbench workload postmark`.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in (PostMark's current directory; relative locations are
    /// taken from here).
    #[arg(long)]
    pub dir: PathBuf,
    /// PostMark configuration file (`set size 1000 100000`, `set number 2000`, ...,
    /// `run`). Without a `run` line, one run follows the last line.
    #[arg(long)]
    pub pmrc: Option<PathBuf>,
    /// File sizes in bytes: LOW [HIGH] (set size).
    #[arg(long, num_args = 1..=2, value_names = ["LOW", "HIGH"])]
    pub size: Option<Vec<u32>>,
    /// Files in the pool (set number).
    #[arg(long)]
    pub number: Option<u32>,
    /// Transactions (set transactions).
    #[arg(long)]
    pub transactions: Option<u32>,
    /// Subdirectories s0.. (set subdirectories).
    #[arg(long)]
    pub subdirectories: Option<u32>,
    /// Read block size in bytes (set read).
    #[arg(long)]
    pub read: Option<u32>,
    /// Write block size in bytes (set write).
    #[arg(long)]
    pub write: Option<u32>,
    /// stdio buffered I/O (set buffering).
    #[arg(long)]
    pub buffering: Option<bool>,
    /// Chance in 10 of read over append, -1 disables (set bias read).
    #[arg(long, allow_negative_numbers = true)]
    pub bias_read: Option<i32>,
    /// Chance in 10 of create over delete, -1 disables (set bias create).
    #[arg(long, allow_negative_numbers = true)]
    pub bias_create: Option<i32>,
    /// Seed of the random stream (set seed).
    #[arg(long)]
    pub seed: Option<u32>,
    /// Print JSON on stdout; the reports go to stderr.
    #[arg(long)]
    pub json: bool,
}

impl CliArgs {
    /// Flags win over the configuration file.
    pub(super) fn overlay(&self, cfg: &mut Postmark) {
        if let Some(s) = &self.size {
            cfg.size_low = s[0];
            cfg.size_high = *s.get(1).unwrap_or(&s[0]);
        }
        let set = |dst: &mut u32, v: Option<u32>| {
            if let Some(v) = v {
                *dst = v;
            }
        };
        set(&mut cfg.number, self.number);
        set(&mut cfg.transactions, self.transactions);
        set(&mut cfg.subdirectories, self.subdirectories);
        set(&mut cfg.read_block, self.read);
        set(&mut cfg.write_block, self.write);
        set(&mut cfg.seed, self.seed);
        if let Some(b) = self.buffering {
            cfg.buffering = b;
        }
        if let Some(b) = self.bias_read {
            cfg.bias_read = b;
        }
        if let Some(b) = self.bias_create {
            cfg.bias_create = b;
        }
    }

    /// The configurations to run, in order.
    pub(super) fn configurations(&self) -> anyhow::Result<Vec<Postmark>> {
        let mut script = Script::default();
        if let Some(p) = &self.pmrc {
            parse_pmrc(p, &mut script, 0)?;
        }
        let mut runs = if script.runs.is_empty() {
            vec![script.last]
        } else {
            script.runs
        };
        for cfg in &mut runs {
            self.overlay(cfg);
            cfg.validate()
                .map_err(|e| anyhow::anyhow!("postmark: {}: {}", cli_key(&e.key), e.message))?;
        }
        Ok(runs)
    }
}

/// A spec key as the command line and PostMark's language name it.
pub(super) fn cli_key(key: &str) -> String {
    match key {
        "bias_read" => "--bias-read (set bias read)".to_string(),
        "bias_create" => "--bias-create (set bias create)".to_string(),
        "locations" => "set location".to_string(),
        k => format!("--{k} (set {k})"),
    }
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    crate::workload::require_dir(&args.dir)?;
    let runs = args.configurations()?;
    let mut documents = Vec::new();
    for cfg in &runs {
        let outcome = run_in(cfg, &args.dir, ctl)?;
        let text = cli_text(cfg, &outcome);
        if args.json {
            eprint!("{text}");
            documents.push(json_report(cfg, &outcome));
        } else {
            print!("{text}");
        }
    }
    if args.json {
        let doc = match documents.len() {
            1 => documents.pop().expect("one document"),
            _ => serde_json::Value::Array(documents),
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(())
}

pub(super) fn cli_text(cfg: &Postmark, outcome: &Outcome) -> String {
    let mut text = format!("PostMark {POSTMARK_VERSION} workload (jbench engine)\n");
    if outcome.tally.out_of_files(cfg) {
        // PostMark prints this and then no report.
        text.push_str(
            "out of files!\nFor this workload, either increase the number of files or\n\
             decrease the number of transactions.\n",
        );
    } else if cfg.terse {
        text.push_str(&terse_report(cfg, &outcome.tally, &outcome.wall));
    } else {
        text.push_str(&compat_report(cfg, &outcome.tally, &outcome.wall));
    }
    text.push('\n');
    text.push_str(&precise_report(cfg, outcome));
    text
}
