//! fdtree's printed block (its labels, bash's whole seconds and integer rates) and
//! the precise per-phase table.

use super::*;

/// The block fdtree 1.0.2 prints (without its `date` lines), for a run in `start`
/// by this process: same labels, whole-second times and integer rates, so figures
/// can be set beside published ones.
pub fn compat_report(tree: &Fdtree, start: &Path, phases: &[PhaseResult]) -> String {
    let base = format!("{}/{}/", start.display(), root_name());
    render_compat(tree, &base, phases)
}

pub(super) fn render_compat(tree: &Fdtree, base: &str, phases: &[PhaseResult]) -> String {
    let ndtot = tree.dir_count();
    let nftot = tree.file_count();
    let mut out = String::new();
    let _ = write!(
        out,
        "fdtree-{FDTREE_VERSION}: starting at {base}\n\
         \tcreating/deleting {} directory levels with {} directories at each level\n\
         \tfor a total of {ndtot} directories\n\
         \twith {} files of size {}KiB per directory\n\
         \tfor a total of {nftot} files and {}KiB\n",
        tree.levels,
        tree.dirs,
        tree.files,
        u64::from(tree.blocks) * 4,
        tree.data_kib(),
    );
    for (phase, clock) in bash_seconds(phases) {
        let rate = |count: u64| count.checked_div(clock.total).unwrap_or(0);
        let times = format!("{}, {}, {}", clock.tin, clock.tout, clock.total);
        let _ = match phase {
            Phase::DirCreate => write!(
                out,
                "DIRECTORY CREATE TIME IN, OUT, TOTAL = {times}\n\
                 \tDirectory creates per second =  {}\n",
                rate(ndtot)
            ),
            Phase::FileCreate => write!(
                out,
                "FILE CREATE TIME IN, OUT, TOTAL      = {times}\n\
                 \tFile creates per second      =  {}\n\
                 \tKiB per second               =  {}\n",
                rate(nftot),
                rate(tree.data_kib())
            ),
            Phase::FileRemove => write!(
                out,
                "FILE REMOVE TIME IN, OUT, TOTAL      = {times}\n\
                 \tFile removals per second     =  {}\n",
                rate(nftot)
            ),
            Phase::DirRemove => write!(
                out,
                "DIRECTORY REMOVE TIME IN, OUT, TOTAL = {times}\n\
                 \tDirectory removals per second =  {}\n",
                rate(ndtot)
            ),
        };
    }
    out
}

/// Whole-second phase boundaries as bash's `$SECONDS` would have shown them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BashClock {
    pub(super) tin: u64,
    pub(super) tout: u64,
    pub(super) total: u64,
}

/// `$SECONDS` counts whole seconds since the script began, so a phase's TOTAL is the
/// difference of two floors of the running elapsed time, not the floor of its own
/// duration. Phases with unknown names are skipped.
pub(super) fn bash_seconds(phases: &[PhaseResult]) -> Vec<(Phase, BashClock)> {
    let mut elapsed = 0.0f64;
    let mut out = Vec::with_capacity(phases.len());
    for result in phases {
        let tin = elapsed.floor() as u64;
        elapsed += result.seconds;
        let tout = elapsed.floor() as u64;
        if let Some(phase) = Phase::from_name(&result.name) {
            let total = tout - tin;
            out.push((phase, BashClock { tin, tout, total }));
        }
    }
    out
}

/// Per-phase seconds (ms precision), operations and rates in fdtree's units, from
/// the monotonic clock rather than `$SECONDS`.
pub fn precise_report(tree: &Fdtree, phases: &[PhaseResult]) -> String {
    let mut out = format!(
        "fdtree {tree}: {} directories, {} files, {} KiB\n",
        tree.dir_count(),
        tree.file_count(),
        tree.data_kib()
    );
    let _ = writeln!(
        out,
        "{:<12} {:>10} {:>10} {:>14} {:<10} {:>14}",
        "phase", "seconds", "ops", "rate", "unit", "KiB/s"
    );
    for result in phases {
        let unit = Phase::from_name(&result.name).map_or("ops/s", Phase::rate_unit);
        let kib = if result.bytes > 0 {
            format!("{:.1}", result.kib_per_sec())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<12} {:>10.3} {:>10} {:>14.1} {:<10} {:>14}",
            result.name,
            result.seconds,
            result.ops,
            result.ops_per_sec(),
            unit,
            kib
        );
    }
    out
}
