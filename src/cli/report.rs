//! `jbench report`: a results directory's tables in a format (with the crash lab's
//! states when it has `crash.jsonl`), or its HTML page; and
//! the report options a stored experiment and the command line make together.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::cli::args::ReportArgs;
use crate::experiment::spec;
use crate::report::{self, ReportOptions};
use crate::results::crash::load_crash_records;
use crate::results::{layout, store};

pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let mut records = store::load_records(&args.dir)?;
    let spec_path = args.dir.join(store::SPEC);
    let spec = spec::load(&spec_path).with_context(|| {
        format!(
            "cannot read the experiment stored in {}",
            spec_path.display()
        )
    })?;
    let mut opts = report_options(&spec, args.baseline, args.suspect_below.as_deref())?;
    // A merged directory: per-machine labels and the merge's warnings (the HTML page
    // applies the same to the records it reads).
    crate::scale::merge::apply_dir(&args.dir, &mut records, &mut opts)?;
    if let Some(b) = &opts.baseline {
        if !records.iter().any(|r| &r.config.label == b) {
            let mut labels: Vec<&str> = records.iter().map(|r| r.config.label.as_str()).collect();
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
        let page = report::html::render_dir(&args.dir, &spec.name, &opts)?;
        std::fs::write(file, page).with_context(|| format!("cannot write {}", file.display()))?;
        outln!("HTML report: {}", file.display());
        return Ok(ExitCode::SUCCESS);
    }
    let crash = load_crash_records(&layout::crash_file(&args.dir))?;
    out!(
        "{}",
        report::environment::render_in_dir(&args.dir, &records, &crash, &opts, args.format)
    );
    Ok(ExitCode::SUCCESS)
}

/// The spec's report settings, with the command line's `--baseline` and
/// `--suspect-below` over them.
pub fn report_options(
    spec: &spec::Spec,
    baseline: Option<String>,
    suspect: Option<&str>,
) -> Result<ReportOptions> {
    let suspect_below = match suspect {
        Some(s) => crate::units::parse_duration(s).map_err(anyhow::Error::msg)?,
        None => spec.suspect_below,
    };
    Ok(ReportOptions {
        suspect_below_secs: suspect_below.as_secs_f64(),
        baseline: baseline.or_else(|| spec.baseline.clone()),
        confidence: 0.95,
        config_order: spec.configs.iter().map(|c| c.label.clone()).collect(),
        workload_order: spec.workloads.iter().map(|w| w.name.clone()).collect(),
        main_phases: spec
            .workloads
            .iter()
            .filter_map(|w| Some((w.name.clone(), w.main_phase.clone()?)))
            .collect(),
        noise_band: spec.noise_band,
        adaptive_looks: spec.adaptive.map(|a| a.max.saturating_sub(a.min) + 1),
        warnings: Vec::new(),
        runs: Vec::new(),
    })
}
