//! `jbench report`: a results directory's tables in a format (with the crash lab's
//! states when it has `crash.jsonl`), or its HTML page.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::cli::args::ReportArgs;
use crate::report::{self, ReportOptions};

pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let results = crate::results::open(&args.dir)?;
    let opts = ReportOptions::of_results(&results, args.baseline, args.suspect_below.as_deref())?;
    if let Some(b) = &opts.baseline {
        if !results.records.iter().any(|r| &r.config.label == b) {
            let mut labels: Vec<&str> = results
                .records
                .iter()
                .map(|r| r.config.label.as_str())
                .collect();
            labels.sort_unstable();
            labels.dedup();
            bail!(
                "no configuration `{b}` in {}; --baseline takes one of its labels: {}",
                args.dir.display(),
                labels.join(", ")
            );
        }
    }
    if let Some(file) = &args.html {
        let page = report::html::render_results(&results, &opts)?;
        std::fs::write(file, page).with_context(|| format!("cannot write {}", file.display()))?;
        outln!("HTML report: {}", file.display());
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{}",
        report::environment::render_results(&results, &opts, args.format)
    );
    Ok(ExitCode::SUCCESS)
}
