//! What `jbench run` (and `crash`) prints when it ends: the answer at a glance first,
//! then the warnings, where to find every table, and the answer again when warnings
//! came between, so the screen a run leaves behind ends with what to do. `--verbose` prints the whole text report
//! in the glance's place. A run without crash states has no glance: its summary opens
//! the text report, which is printed whole as before.

use super::grid::{warning_block, Style};
use crate::analysis::Analysis;

/// The end of a run of `a` whose results are in `dir`; `verbose`: the whole report.
pub fn render(a: &Analysis, dir: &std::path::Path, verbose: bool) -> String {
    let glance = super::glance::glance_block(a, Style::Plain);
    if glance.is_empty() {
        return super::text::render_text(a, Style::Plain);
    }
    let warnings = every_warning(a);
    let mut out = if verbose {
        super::text::render_text(a, Style::Plain)
    } else {
        let mut out = glance.clone();
        if !warnings.is_empty() {
            out.push_str(&warning_block(
                &format!("Warnings ({})", warnings.len()),
                &warnings,
                Style::Plain,
            ));
        }
        out
    };
    out.push_str(&format!(
        "Every table and each figure's basis: jbench report {} (or run with --verbose)\n\n",
        dir.display()
    ));
    // The screen a run leaves ends with the answer when anything came between; with
    // nothing between, the answer is one line above and twice would be noise.
    if verbose || !warnings.is_empty() {
        out.push_str(&glance);
    }
    out
}

/// The run's warnings, the crash lab's and each workload's, as the full report lists
/// them.
fn every_warning(a: &Analysis) -> Vec<String> {
    let mut out = a.warnings.clone();
    out.extend(super::crash::all_crash_warnings(a));
    for w in &a.workloads {
        out.extend(w.warnings.iter().map(|x| format!("{}: {x}", w.name)));
    }
    out
}
