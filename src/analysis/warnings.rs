//! The warnings of a report: failed, stalled, excluded and single trials, phases
//! missing from some trials, emulated disks whose figures are partly the FUSE path's,
//! and one line per workload each for suspect (too short) phases, high-variance rates
//! and trials that shared a busy host.

use super::model::*;
use crate::results::record::TrialRecord;

/// A rate whose coefficient of variation exceeds this is flagged: the studies' sd
/// columns show such spread hides any but large differences.
const HIGH_CV: f64 = 0.10;

/// Records the reader refused to average ([`TrialRecord::is_excluded`]), in one line.
pub(crate) fn excluded_warning(sorted: &[&TrialRecord]) -> Option<String> {
    let why: Vec<&str> = sorted
        .iter()
        .filter(|r| r.is_excluded())
        .filter_map(|r| r.error.as_deref())
        .map(|e| e.trim_start_matches(crate::results::record::EXCLUDED))
        .collect();
    (!why.is_empty()).then(|| {
        format!(
            "{} invalid trial record(s) excluded from the statistics (counted as failed): {}",
            why.len(),
            why.join("; ")
        )
    })
}

/// "every trial failed (...): <first errors>" when no record is `ok`, else `None`.
pub fn every_trial_failed(records: &[TrialRecord]) -> Option<String> {
    all_failed_warning(&records.iter().collect::<Vec<_>>())
}

/// "every trial failed: ..." with the first distinct errors, so a run that measured
/// nothing never shows only empty tables.
pub(crate) fn all_failed_warning(sorted: &[&TrialRecord]) -> Option<String> {
    if sorted.is_empty() || sorted.iter().any(|r| r.is_ok()) {
        return None;
    }
    let mut firsts: Vec<String> = Vec::new();
    for r in sorted {
        let e = first_line(r.error.as_deref().unwrap_or("no error recorded")).to_string();
        if !firsts.contains(&e) {
            firsts.push(e);
        }
    }
    let more = firsts.len().saturating_sub(3);
    firsts.truncate(3);
    let tail = if more > 0 {
        format!(" (and {more} other error(s))")
    } else {
        String::new()
    };
    Some(format!(
        "every trial failed ({} of {}): {}{tail}",
        sorted.len(),
        sorted.len(),
        firsts.join("; ")
    ))
}

/// Failed and single trials, and phases missing from some trials, of one
/// configuration. Suspect phases and high variance are summed up per workload by
/// [`suspect_warning`] and [`variance_warning`].
pub(crate) fn config_warnings(
    workload: &str,
    c: &ConfigAnalysis,
    recs: &[&TrialRecord],
    out: &mut Vec<String>,
) {
    let at = format!("{workload}/{}", c.label);
    // A configuration is listed only when it has trials, so with no successful trial
    // this line already says "N of N trials failed".
    if c.failed > 0 {
        out.push(failed_warning(&at, c, recs));
    }
    out.extend(stalled_warnings(&at, c, recs));
    if c.ok == 1 {
        out.push(format!(
            "{at}: only 1 successful trial: no spread and no comparison possible"
        ));
    }
    for p in c.phases.iter().filter(|p| p.n < c.ok) {
        out.push(format!(
            "{at}/{}: recorded by only {} of {} successful trials",
            p.phase, p.n, c.ok
        ));
    }
    let ok: Vec<&TrialRecord> = recs
        .iter()
        .copied()
        .filter(|r| r.is_ok() && r.config.label == c.label)
        .collect();
    out.extend(emulation_warnings(&at, &ok));
}

/// Per emulated disk of `recs`, what its daemon recorded, summed over the trials.
#[derive(Default)]
struct DiskSum {
    model: String,
    requests: u64,
    floor_bound: u64,
    excess: f64,
    response: f64,
    late: u64,
    /// The path's 4 KiB floor measured in each trial, µs.
    floors: Vec<f64>,
}

impl DiskSum {
    /// The share of the disk's service time that was the path's, not the model's.
    fn path_share(&self) -> f64 {
        self.excess / (self.excess + self.response).max(f64::MIN_POSITIVE)
    }

    /// More than a tenth of the service time was the path's: the figures are partly
    /// a property of this host's emulation path.
    fn path_bound(&self) -> bool {
        self.floor_bound > 0 && self.path_share() > 0.10
    }
}

fn disk_sums(recs: &[&TrialRecord]) -> std::collections::BTreeMap<String, DiskSum> {
    let mut disks: std::collections::BTreeMap<String, DiskSum> = Default::default();
    for r in recs {
        for d in r.emulation.iter().flat_map(|e| e.disks.iter()) {
            let s = disks.entry(d.name.clone()).or_default();
            s.model = d.model.clone();
            s.requests += d.reads + d.writes + d.flushes + d.discards;
            s.floor_bound += d.floor_bound;
            s.excess += d.floor_excess_seconds;
            s.response += d.response_seconds;
            s.late += d.late;
            if let Some(p) = &d.path {
                s.floors.push(p.floor_4k_us);
            }
        }
    }
    disks
}

/// The emulated disk of `recs` (successful trials of one configuration and workload)
/// whose service time was most the emulation path's, when that is over a tenth: the
/// same rule as the warning of [`emulation_warnings`], typed for the answer's mark.
pub(crate) fn path_bound(recs: &[&TrialRecord]) -> Option<PathBound> {
    disk_sums(recs)
        .into_iter()
        .filter(|(_, s)| s.path_bound())
        .max_by(|a, b| a.1.path_share().total_cmp(&b.1.path_share()))
        .map(|(disk, s)| PathBound {
            disk,
            model: s.model.clone(),
            share: s.path_share(),
        })
}

/// Emulated disks whose figures are partly the FUSE path's rather than the model's,
/// or whose answers the host delivered late.
fn emulation_warnings(at: &str, recs: &[&TrialRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, s) in disk_sums(recs) {
        let share = s.path_share();
        if s.path_bound() {
            let lo = s.floors.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = s.floors.iter().copied().fold(0.0, f64::max);
            let floor = if s.floors.is_empty() {
                format!(
                    "not measured, {} µs assumed",
                    crate::emu::FUSE_FLOOR.as_micros()
                )
            } else if hi - lo < 0.5 {
                format!("{lo:.0} µs per 4 KiB request, measured")
            } else {
                format!("{lo:.0}-{hi:.0} µs per 4 KiB request, measured in each trial")
            };
            out.push(format!(
                "{at}: the emulated {name} disk ({}) answered {:.0}% of its requests faster than the FUSE path can (its floor: {floor}); at least {:.0}% of its service time is the path's, not the model's (docs/devices.md)",
                s.model,
                100.0 * s.floor_bound as f64 / s.requests.max(1) as f64,
                100.0 * share
            ));
        }
        if s.late * 100 > s.requests {
            out.push(format!(
                "{at}: the emulated {name} disk's daemon answered {} of {} requests more than 1 ms late (a busy host): its times are longer than the model's",
                s.late, s.requests
            ));
        }
    }
    out
}

/// "N of M trials failed ...", with the first error of a trial that did not stall
/// (those that did are named one by one by [`stalled_warnings`]).
fn failed_warning(at: &str, c: &ConfigAnalysis, recs: &[&TrialRecord]) -> String {
    let first_error = recs
        .iter()
        .filter(|r| !r.is_ok() && !r.is_stalled() && r.config.label == c.label)
        .find_map(|r| r.error.as_deref())
        .map(first_line);
    let detail = match (c.stalled, first_error) {
        (0, Some(e)) => format!(" (first error: {e})"),
        (0, None) => String::new(),
        (n, Some(e)) => {
            format!(" ({n} because the device daemon stalled, below; first other error: {e})")
        }
        (n, None) => format!(" ({n} because the device daemon stalled, below)"),
    };
    format!(
        "{at}: {} of {} trials failed and are excluded from the statistics{detail}",
        c.failed,
        c.failed + c.ok
    )
}

/// Stalled trials named one line each, at most this many per configuration.
const STALLED_LISTED: usize = 3;

/// One line per trial of the configuration that failed because the device daemon
/// stalled ([`TrialRecord::is_stalled`]): which trial, which disk, how many requests
/// and how late. Never averaged, never silent (docs/devices.md, "Stalls").
pub(crate) fn stalled_warnings(at: &str, c: &ConfigAnalysis, recs: &[&TrialRecord]) -> Vec<String> {
    let stalled: Vec<&&TrialRecord> = recs
        .iter()
        .filter(|r| r.is_stalled() && r.config.label == c.label)
        .collect();
    let mut out: Vec<String> = stalled
        .iter()
        .take(STALLED_LISTED)
        .map(|r| {
            let why = r
                .error
                .as_deref()
                .unwrap_or_default()
                .trim_start_matches(crate::results::record::STALLED);
            format!(
                "{at}: STALLED trial {} (rep {}), excluded from the statistics: {}",
                r.trial,
                r.rep,
                first_line(why)
            )
        })
        .collect();
    if stalled.len() > STALLED_LISTED {
        let rest: Vec<String> = stalled[STALLED_LISTED..]
            .iter()
            .map(|r| r.trial.to_string())
            .collect();
        out.push(format!(
            "{at}: {} more trial(s) stalled the same way, excluded from the statistics: trial(s) {}",
            rest.len(),
            rest.join(", ")
        ));
    }
    out
}

pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

pub(crate) fn suspect_phases(configs: &[ConfigAnalysis]) -> Vec<SuspectPhase> {
    configs
        .iter()
        .flat_map(|c| c.phases.iter().map(move |p| (c, p)))
        .filter_map(|(c, p)| {
            let t = p.seconds.filter(|_| p.suspect)?;
            Some(SuspectPhase {
                config: c.label.clone(),
                phase: p.phase.clone(),
                mean_seconds: t.mean,
            })
        })
        .collect()
}

pub(crate) fn high_variance(configs: &[ConfigAnalysis]) -> Vec<HighVariance> {
    configs
        .iter()
        .flat_map(|c| c.phases.iter().map(move |p| (c, p)))
        .filter_map(|(c, p)| {
            let r = p
                .rate
                .filter(|r| r.n >= 2 && r.mean > 0.0 && r.cv() > HIGH_CV)?;
            Some(HighVariance {
                config: c.label.clone(),
                phase: p.phase.clone(),
                cv: r.cv(),
            })
        })
        .collect()
}

/// One line for all of a workload's suspect phases: when every measured phase is
/// suspect, how many and the longest; otherwise the suspect ones grouped by phase,
/// e.g. `dir_create (all configurations), file_remove (same-disk, ramdisk)`.
pub(crate) fn suspect_warning(
    workload: &str,
    configs: &[ConfigAnalysis],
    phases: &[PhaseInfo],
    suspect: &[SuspectPhase],
    threshold: f64,
) -> Option<String> {
    let longest = suspect
        .iter()
        .max_by(|a, b| a.mean_seconds.total_cmp(&b.mean_seconds))?;
    let measured = configs
        .iter()
        .flat_map(|c| &c.phases)
        .filter(|p| p.seconds.is_some())
        .count();
    let limit = format!("the {threshold} s suspect threshold");
    let (verb, pronoun) = if suspect.len() == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    let advice = format!("do not draw conclusions from {pronoun}");
    if suspect.len() == measured {
        let what = format!(
            "{} on {}, {} s",
            longest.phase,
            longest.config,
            fmt_num(longest.mean_seconds)
        );
        return Some(if measured == 1 {
            format!("{workload}: the only phase mean ({what}) is under {limit}; {advice}")
        } else {
            format!(
                "{workload}: all {measured} phase means are under {limit} (longest: {what}); {advice}"
            )
        });
    }
    let groups: Vec<String> = phases
        .iter()
        .filter_map(|info| {
            let who: Vec<&str> = suspect
                .iter()
                .filter(|s| s.phase == info.name)
                .map(|s| s.config.as_str())
                .collect();
            let who = match who.len() {
                0 => return None,
                n if n == configs.len() && n > 1 => "all configurations".to_string(),
                _ => who.join(", "),
            };
            Some(format!("{} ({who})", info.name))
        })
        .collect();
    Some(format!(
        "{workload}: {} of {measured} phase means {verb} under {limit}: {}; {advice}",
        suspect.len(),
        groups.join(", ")
    ))
}

/// One line for all of a workload's high-variance rates, grouped by configuration:
/// `high variance (rate CV > 10%): same-disk dir_create 32%, file_create 24%; ...`.
pub(crate) fn variance_warning(workload: &str, high: &[HighVariance]) -> Option<String> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for h in high {
        let item = format!("{} {}", h.phase, fmt_cv(h.cv));
        match groups.last_mut() {
            Some((config, items)) if *config == h.config => items.push(item),
            _ => groups.push((&h.config, vec![item])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let groups: Vec<String> = groups
        .iter()
        .map(|(config, items)| format!("{config} {}", items.join(", ")))
        .collect();
    Some(format!(
        "{workload}: high variance (rate CV > {:.0}%): {}",
        HIGH_CV * 100.0,
        groups.join("; ")
    ))
}

/// Other processes' average CPU during a trial above this share of one CPU (percent)
/// makes the trial one on a busy host: a quarter of a core taken from a benchmark
/// that is itself often CPU-bound in the page cache moves its figures visibly.
pub(crate) const BUSY_HOST_CPU_PCT: f64 = 25.0;

/// "the host was busy: ..." when other processes used more than
/// [`BUSY_HOST_CPU_PCT`] of one CPU on average during some of a workload's trials
/// (the monitor's `host_load`; records without it are not counted).
pub(crate) fn busy_host_warning(workload: &str, recs: &[&TrialRecord]) -> Option<String> {
    let loads: Vec<&crate::monitor::HostLoad> = recs
        .iter()
        .filter_map(|r| r.monitor.as_ref()?.host_load.as_ref())
        .collect();
    let busy: Vec<&&crate::monitor::HostLoad> = loads
        .iter()
        .filter(|l| l.other_cpu_pct > BUSY_HOST_CPU_PCT)
        .collect();
    let worst = busy
        .iter()
        .max_by(|a, b| a.other_cpu_pct.total_cmp(&b.other_cpu_pct))?;
    Some(format!(
        "the host was busy: other processes used {}{:.0}% CPU (of {:.0}%) during {} of {} trials of {workload}; figures may be noisy. Run on an idle machine",
        if busy.len() > 1 { "up to " } else { "" },
        worst.other_cpu_pct,
        worst.capacity_pct,
        busy.len(),
        loads.len()
    ))
}

/// Starved trials named, at most this many per workload.
const STARVED_LISTED: usize = 3;

/// "the host kept ... waiting for a CPU ..." when some of a workload's trials waited
/// for a CPU longer than [`STARVED_SHARE`](crate::monitor::host_load::STARVED_SHARE)
/// of their time (the monitor's `host_load.cpu_wait`): their figures carry the host's
/// delays, which an emulated disk's model cannot see. Each such trial is named.
pub(crate) fn starved_warning(workload: &str, recs: &[&TrialRecord]) -> Option<String> {
    let measured: Vec<(
        usize,
        &crate::monitor::HostLoad,
        &crate::monitor::host_load::CpuWait,
    )> = recs
        .iter()
        .filter_map(|r| {
            let l = r.monitor.as_ref()?.host_load.as_ref()?;
            Some((r.trial, l, l.cpu_wait.as_ref()?))
        })
        .collect();
    let starved: Vec<String> = measured
        .iter()
        .filter(|(_, l, _)| l.starved())
        .map(|(trial, l, w)| {
            format!(
                "trial {trial} {:.2} s of {:.1} s ({:.0}%)",
                w.seconds(),
                l.seconds,
                100.0 * w.seconds() / l.seconds.max(f64::MIN_POSITIVE)
            )
        })
        .collect();
    if starved.is_empty() {
        return None;
    }
    let more = starved.len().saturating_sub(STARVED_LISTED);
    // On a machine with few CPUs the trial's own threads (the disks' daemons, the
    // loop and jbd2 workers) can keep each other waiting with nothing else running;
    // "run on an idle machine" would then send the user after a neighbour that is not there.
    let others = measured
        .iter()
        .filter(|(_, l, _)| l.starved())
        .map(|(_, l, _)| l.other_cpu_pct)
        .fold(0.0, f64::max);
    let advice = if others < BUSY_HOST_CPU_PCT {
        format!(
            "Nothing else kept it busy (other processes used at most {others:.0}% of a CPU): the trial's own threads outnumbered the machine's CPUs; a machine with more CPUs removes the wait"
        )
    } else {
        "Run on an idle machine".to_string()
    };
    Some(format!(
        "the host kept {} of {} trials of {workload} waiting for a CPU for more than {:.0}% of their time ({}{}): their times include the host's delays, which the emulated disks' models do not see (docs/devices.md, \"A busy host\"). {advice}",
        starved.len(),
        measured.len(),
        100.0 * crate::monitor::host_load::STARVED_SHARE,
        starved[..starved.len().min(STARVED_LISTED)].join(", "),
        if more > 0 { format!(", and {more} more") } else { String::new() }
    ))
}

/// A coefficient of variation in whole percent, or with one decimal when rounding
/// would hide that it exceeds the threshold ("10.4%", not "10%").
pub(crate) fn fmt_cv(cv: f64) -> String {
    let pct = cv * 100.0;
    if pct.round() <= (HIGH_CV * 100.0).round() {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}

/// Decimals for a figure of this magnitude: about four significant digits, never
/// scientific notation (the studies' tables read 12345 and 0.123 alike).
pub(crate) fn decimals(x: f64) -> usize {
    match x.abs() {
        a if a >= 1000.0 => 0,
        a if a >= 100.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    }
}

pub(crate) fn fmt_num(x: f64) -> String {
    format!("{:.*}", decimals(x), x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::{HostLoad, MonitorSummary};
    use crate::run::adaptive::tests::rec;

    fn with_load(trial: usize, other_cpu_pct: Option<f64>) -> TrialRecord {
        let mut r = rec(trial, "internal", "fsync", 100.0);
        r.monitor = Some(MonitorSummary {
            host_load: other_cpu_pct.map(|pct| HostLoad {
                seconds: 10.0,
                other_cpu_pct: pct,
                capacity_pct: 200.0,
                cpu_wait: None,
            }),
            ..Default::default()
        });
        r
    }

    #[test]
    fn trials_kept_waiting_for_a_cpu_are_named_with_their_wait() {
        let with_wait = |trial: usize, own: f64| {
            let mut r = with_load(trial, Some(90.0));
            let l = r.monitor.as_mut().unwrap().host_load.as_mut().unwrap();
            l.cpu_wait = Some(crate::monitor::host_load::CpuWait {
                own_seconds: own,
                kernel_seconds: 0.05,
                pressure_pct: Some(40.0),
            });
            r
        };
        let recs = [
            with_wait(0, 0.01),
            with_wait(1, 1.2),
            with_load(2, Some(10.0)),
            with_wait(3, 0.75),
        ];
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        let w = starved_warning("fsync", &refs).unwrap();
        assert!(
            w.starts_with("the host kept 2 of 3 trials of fsync waiting for a CPU for more than 5% of their time (trial 1 1.25 s of 10.0 s (12%), trial 3 0.80 s of 10.0 s (8%))"),
            "{w}"
        );
        assert!(w.ends_with("Run on an idle machine"), "{w}");
        assert_eq!(starved_warning("fsync", &refs[..1]), None);
        // With nothing else running the wait is the trial's own: say so, not "idle".
        let mut alone = with_wait(5, 1.2);
        alone
            .monitor
            .as_mut()
            .unwrap()
            .host_load
            .as_mut()
            .unwrap()
            .other_cpu_pct = 0.3;
        let w = starved_warning("fsync", &[&alone]).unwrap();
        assert!(
            w.ends_with("Nothing else kept it busy (other processes used at most 0% of a CPU): the trial's own threads outnumbered the machine's CPUs; a machine with more CPUs removes the wait"),
            "{w}"
        );
        // Records from before the wait was measured say nothing.
        assert_eq!(starved_warning("fsync", &refs[2..3]), None);
    }

    #[test]
    fn busy_host_names_how_busy_and_how_many_trials() {
        let recs = [
            with_load(0, Some(180.0)),
            with_load(1, Some(3.0)),
            with_load(2, Some(120.0)),
            with_load(3, Some(BUSY_HOST_CPU_PCT)),
            with_load(4, None),
        ];
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        assert_eq!(
            busy_host_warning("fsync", &refs).as_deref(),
            Some("the host was busy: other processes used up to 180% CPU (of 200%) during 2 of 4 trials of fsync; figures may be noisy. Run on an idle machine")
        );
        // At the threshold, or without the monitor's figure, there is nothing to say.
        assert_eq!(busy_host_warning("fsync", &refs[1..2]), None);
        assert_eq!(busy_host_warning("fsync", &refs[3..]), None);
        let one = busy_host_warning("fsync", &refs[..2]).unwrap();
        assert!(
            one.contains("used 180% CPU (of 200%) during 1 of 2"),
            "{one}"
        );
    }

    #[test]
    fn the_warning_reaches_the_workloads_warnings() {
        let recs = vec![with_load(0, Some(90.0)), with_load(1, Some(1.0))];
        let a = crate::analysis::analyse(
            &recs,
            &ReportOptions {
                suspect_below_secs: 0.0,
                baseline: None,
                confidence: 0.95,
                config_order: vec![],
                workload_order: vec![],
                noise_band: 0.02,
                adaptive_looks: None,
                main_phases: Default::default(),
                warnings: vec![],
                runs: vec![],
                ..Default::default()
            },
        );
        let w = &a.workloads[0].warnings;
        assert!(
            w.iter()
                .any(|l| l.starts_with("the host was busy: other processes used 90% CPU")),
            "{w:?}"
        );
    }
}
