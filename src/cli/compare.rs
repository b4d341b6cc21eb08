//! `jbench compare`: several results directories side by side, as text or HTML.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::args::CompareArgs;
use crate::report::ReportOptions;
use crate::report::{self, html, Format};
use crate::results::compare;

pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    for d in &args.dirs {
        crate::results::store::require_results_dir(d)?;
    }
    let compared = compare::gather(&args.dirs)?;
    let opts = ReportOptions::of_comparison(&compared, args.baseline.as_deref())?;
    if matches!(args.format, Format::Csv | Format::Json) {
        for w in &compared.warnings {
            eprintln!("jbench: warning: {w}");
        }
    }
    out!("{}", report::compare::render(&compared, &opts, args.format));
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
        let page = html::render_page(&html::Page {
            records: &compared.records,
            env: None,
            title: &title,
            opts: &opts,
            results_dir: None,
            extra_warnings: &compared.warnings,
            // Crash states are per run; a comparison of runs has none of its own.
            crash: &[],
        })?;
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("HTML comparison: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
