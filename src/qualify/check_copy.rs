//! `jbench device qualify DIR --fit NAME --check-copy`: does the emulated copy of the
//! device predict the device? The same short placement experiment (ext4, the journal
//! inside the file system and on a second disk, fsync'ed small files) runs on loop
//! images in DIR, as a study there would, and on emulated disks of the fitted model,
//! as a study of the copy would; per placement the copy's throughput and fsync'ed
//! create latency (p50) are compared with the real directory's, each ratio with its
//! interval and a verdict against a stated tolerance, by the one rule every report
//! follows (`analysis::decision`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::fit::{render_fit, Fit};
use crate::analysis::decision::{self, Decision};
use crate::analysis::ratio::{fieller, RatioCi};
use crate::results::record::TrialRecord;
use crate::run::request::RunRequest;

/// The copy's throughput must be within this of the real directory's (a ratio band:
/// 1/1.15 to 1.15).
pub const RATE_TOLERANCE: f64 = 0.15;
/// ... and its median fsync'ed create latency within this.
pub const P50_TOLERANCE: f64 = 0.20;
/// Confidence level of the intervals.
pub const LEVEL: f64 = 0.95;
/// A copy whose answers took the emulation path's time (not the model's) for more than
/// this share of the workload's time stands for the path, not the device.
pub const FLOOR_SHARE: f64 = 0.10;

/// The experiment run on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct CheckOptions {
    /// The directory the device was qualified in (the real side's images go there).
    pub dir: PathBuf,
    /// File-system and journal sizes.
    pub fs_size: String,
    pub journal_size: String,
    /// Fsync'ed 4 KiB files per trial.
    pub files: u32,
    pub repetitions: u32,
    /// Where the run's records go.
    pub results: PathBuf,
}

/// The placements compared.
pub const PLACEMENTS: [&str; 2] = ["internal", "second-disk"];

/// The experiment file: a `real` configuration (loop images in `dir`) and a `copy`
/// (emulated disks of the fitted model), each with the journal in both placements.
pub fn spec_text(opts: &CheckOptions, fit: &Fit) -> String {
    let placements = PLACEMENTS
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"# jbench device qualify --check-copy: the fitted copy against the directory
name = "check-copy-{name}"
repetitions = {reps}
seed = 1
work_dir = {dir}

[filesystem]
type = "ext4"
size = "{fs}"

[journal]
placement = [{placements}]
size = "{journal}"
mode = "ordered"

{models}
[[config]]
label = "real"

[[config]]
label = "copy"
filesystem.device_model = "{name}"

[[workload]]
kind = "fsync"
name = "fsync"
files = {files}
size = "4K"
"#,
        // Quoted as TOML quotes it: a directory's name may hold `"` or `\`.
        dir = toml::Value::String(opts.dir.to_string_lossy().into_owned()),
        name = fit.name,
        reps = opts.repetitions,
        fs = opts.fs_size,
        journal = opts.journal_size,
        models = render_fit(fit),
        files = opts.files,
    )
}

/// One placement, copy against real.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementCheck {
    pub placement: String,
    /// Fsync'ed file creates per second, mean of the trials.
    pub real_rate: f64,
    pub copy_rate: f64,
    pub rate: Compared,
    /// Median fsync'ed create latency, mean of the trials' medians, µs.
    pub real_p50_us: f64,
    pub copy_p50_us: f64,
    pub p50: Compared,
}

/// A ratio copy / real, its interval and its verdict against `tolerance`.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    pub ratio: f64,
    /// `None`: too few trials on a side for an interval.
    pub interval: Option<RatioCi>,
    pub tolerance: f64,
    /// `equivalent`: within the tolerance; `different`: outside it; `undecided`.
    pub decision: Option<Decision>,
}

impl Compared {
    fn of(copy: &[f64], real: &[f64], tolerance: f64) -> Self {
        let interval = fieller(copy, real, LEVEL);
        Compared {
            ratio: mean(copy).zip(mean(real)).map_or(f64::NAN, |(c, r)| c / r),
            interval,
            tolerance,
            decision: interval.map(|ci| decision::of(ci, tolerance)),
        }
    }
}

/// What the check concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every figure's interval within its tolerance.
    Predicts,
    /// Some figure's interval wholly outside its tolerance.
    Misses,
    /// Neither: more trials would tell.
    Undecided,
    /// The copy cannot stand for the device (reasons given); no verdict of fit.
    CannotStand,
}

/// The flush latency set from the first pass's real trials: a flush costs, where the
/// study puts it (the host file system's `fdatasync` of a sparse image its file system
/// is filling), what no pattern of `qualify` reproduces exactly (the first flush of a
/// commit covers fresh blocks, the next one a single block).
#[derive(Debug, Clone, Serialize)]
pub struct Refit {
    pub from_us: f64,
    pub to_us: f64,
    /// Flushes per fsync'ed create on the copy (every disk), per placement.
    pub flushes_per_op: Vec<f64>,
    /// Mean time per create, real and copy, per placement, µs.
    pub real_us_per_op: Vec<f64>,
    pub copy_us_per_op: Vec<f64>,
    /// The first pass's comparison, with the qualified flush latency.
    pub first_pass: Vec<PlacementCheck>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CopyCheck {
    /// The model checked (after the refit).
    pub fit: Fit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refit: Option<Refit>,
    pub placements: Vec<PlacementCheck>,
    /// Why the copy cannot stand for the device, when it cannot.
    pub cannot_stand: Vec<String>,
    /// Trials (of the pass that decided) the host kept waiting for a CPU past the
    /// reports' bound: their times are the host's as much as the device's.
    pub starved_trials: Vec<usize>,
    pub verdict: Verdict,
    pub results: PathBuf,
}

/// The successful timed trials of `placement` on one side: the copy's (on emulated
/// disks) or the directory's.
fn side<'a>(
    records: &'a [TrialRecord],
    placement: &'a str,
    copy: bool,
) -> impl Iterator<Item = &'a TrialRecord> + 'a {
    records.iter().filter(move |r| {
        r.is_ok()
            && !r.crash_recording
            && r.config.placement == placement
            && r.emulation.is_some() == copy
    })
}

/// The trial's main phase: the one its engine declares, as every report ranks on.
fn main_phase(r: &TrialRecord) -> Option<&crate::workload::PhaseResult> {
    let names: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
    let main = crate::analysis::summary::default_main_phase(&r.workload.kind, &names)?;
    r.phases.iter().find(|p| p.name == main)
}

/// The main phase's rate and median latency of a trial.
fn figures(r: &TrialRecord) -> Option<(f64, f64)> {
    let main = main_phase(r)?;
    let p50 = main.latency.as_ref()?.p50_us;
    (main.seconds > 0.0).then(|| (main.ops as f64 / main.seconds, p50))
}

/// "a and b", one figure per placement.
fn and_list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(" and ")
}

fn mean(v: &[f64]) -> Option<f64> {
    crate::analysis::stats::Summary::of(v).map(|s| s.mean)
}

/// Compares the copy's trials (those on emulated disks) of `fit` with the real ones,
/// per placement; `memory`: the device measured keeps its data in memory.
pub fn compare(
    records: &[TrialRecord],
    fit: &Fit,
    memory: bool,
    results: &Path,
) -> Result<CopyCheck> {
    let mut placements = Vec::new();
    for p in PLACEMENTS {
        let figs = |copy| {
            side(records, p, copy)
                .filter_map(figures)
                .collect::<Vec<_>>()
        };
        let (real, copy) = (figs(false), figs(true));
        if real.is_empty() || copy.is_empty() {
            bail!(
                "the check has no successful {p} trial on the {} side; see the records in {}",
                if real.is_empty() { "real" } else { "copy's" },
                results.display()
            );
        }
        let rates = |v: &[(f64, f64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        let p50s = |v: &[(f64, f64)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
        let (real_rate, copy_rate, real_p50, copy_p50) =
            (rates(&real), rates(&copy), p50s(&real), p50s(&copy));
        placements.push(PlacementCheck {
            placement: p.to_string(),
            real_rate: mean(&real_rate).unwrap_or(f64::NAN),
            copy_rate: mean(&copy_rate).unwrap_or(f64::NAN),
            rate: Compared::of(&copy_rate, &real_rate, RATE_TOLERANCE),
            real_p50_us: mean(&real_p50).unwrap_or(f64::NAN),
            copy_p50_us: mean(&copy_p50).unwrap_or(f64::NAN),
            p50: Compared::of(&copy_p50, &real_p50, P50_TOLERANCE),
        });
    }
    let timed: Vec<&TrialRecord> = PLACEMENTS
        .iter()
        .flat_map(|p| side(records, p, false).chain(side(records, p, true)))
        .collect();
    let cannot_stand = why_not_a_copy(&timed, memory);
    let decisions: Vec<Option<Decision>> = placements
        .iter()
        .flat_map(|p| [p.rate.decision, p.p50.decision])
        .collect();
    let verdict = if !cannot_stand.is_empty() {
        Verdict::CannotStand
    } else if decisions.contains(&Some(Decision::Different)) {
        Verdict::Misses
    } else if decisions.iter().all(|d| *d == Some(Decision::Equivalent)) {
        Verdict::Predicts
    } else {
        Verdict::Undecided
    };
    let mut starved_trials: Vec<usize> = timed
        .iter()
        .filter(|r| {
            r.monitor
                .as_ref()
                .and_then(|m| m.host_load.as_ref())
                .is_some_and(|l| l.starved())
        })
        .map(|r| r.trial)
        .collect();
    starved_trials.sort_unstable();
    Ok(CopyCheck {
        fit: fit.clone(),
        refit: None,
        placements,
        cannot_stand,
        starved_trials,
        verdict,
        results: results.to_path_buf(),
    })
}

/// Why the copy's figures are not a model of the device: a device in memory, or
/// answers that took the emulation path's time instead of the model's.
fn why_not_a_copy(ok: &[&TrialRecord], memory: bool) -> Vec<String> {
    let mut why = Vec::new();
    if memory {
        why.push("the directory is in memory (tmpfs or ramfs): its figures are memory's, which no disk model behind the emulation path can reproduce".to_string());
    }
    let (mut excess, mut seconds, mut bound, mut answers, mut floor) = (0.0, 0.0, 0, 0, 0.0f64);
    for r in ok.iter().filter(|r| r.emulation.is_some()) {
        seconds += r.phases.iter().map(|p| p.seconds).sum::<f64>();
        for d in &r.emulation.as_ref().expect("filtered").disks {
            excess += d.floor_excess_seconds;
            bound += d.floor_bound;
            answers += d.reads + d.writes + d.flushes + d.discards;
            if let Some(p) = &d.path {
                floor = floor.max(p.floor_4k_us);
            }
        }
    }
    if seconds > 0.0 && excess / seconds > FLOOR_SHARE {
        why.push(format!(
            "the model answers faster than the emulation path can here (its floor: {floor:.0} µs per 4 KiB request): {bound} of {answers} of the copy's answers took the path's time, {:.0}% of its workload's time more than the model's",
            excess / seconds * 100.0
        ));
    }
    why
}

/// Runs the experiment of `fit` into `dir`, as `jbench run` would; its records.
fn run_pass(opts: &CheckOptions, fit: &Fit, dir: &Path) -> Result<Vec<TrialRecord>> {
    let original = spec_text(opts, fit);
    let req = RunRequest {
        spec: crate::experiment::spec::parse(&original, "check-copy.toml")?,
        original,
        shard: None,
        resume: None,
        results: Some(dir.to_path_buf()),
        real: true,
        jobs: 1,
        destroy: Vec::new(),
        verbose: false,
    };
    let planned = req.plan()?;
    for w in &planned.warnings {
        crate::events::step(crate::events::Activity::Qualify, format!("warning: {w}"));
    }
    let mut session = req.open(&planned)?;
    let outcome = req.execute(&mut session, &planned)?;
    if outcome.interrupted() {
        bail!(
            "interrupted; the check's trials so far are in {}",
            dir.display()
        );
    }
    Ok(req
        .conclude(&session, &planned, &outcome)?
        .done
        .results
        .records)
}

/// Seconds per op of the main phase, mean over one side's trials of `placement`.
fn per_op(records: &[TrialRecord], placement: &str, copy: bool) -> Option<f64> {
    let v: Vec<f64> = side(records, placement, copy)
        .filter_map(|r| figures(r).map(|(rate, _)| 1.0 / rate))
        .collect();
    mean(&v)
}

/// Flushes per main-phase op on the copy's disks, mean over its trials of `placement`.
fn flushes_per_op(records: &[TrialRecord], placement: &str) -> Option<f64> {
    let v: Vec<f64> = side(records, placement, true)
        .filter_map(|r| {
            let ops = main_phase(r)?.ops;
            let flushes: u64 = r.emulation.as_ref()?.disks.iter().map(|d| d.flushes).sum();
            (ops > 0).then(|| flushes as f64 / ops as f64)
        })
        .collect();
    mean(&v)
}

/// The fit with its flush latency moved so the copy's time per create matches the real
/// one's, on average over the placements: the copy's time moves by the flushes per
/// create for each µs of flush latency.
pub fn refit(records: &[TrialRecord], fit: &Fit) -> Option<(Fit, Refit)> {
    let from = fit.params.get("flush_latency_us")?.as_float()?;
    let (mut shifts, mut flushes, mut real, mut copy) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in PLACEMENTS {
        let (r, c, k) = (
            per_op(records, p, false)?,
            per_op(records, p, true)?,
            flushes_per_op(records, p)?,
        );
        if k < 0.5 {
            return None;
        }
        shifts.push((r - c) * 1e6 / k);
        flushes.push(k);
        real.push(r * 1e6);
        copy.push(c * 1e6);
    }
    let to = (from + shifts.iter().sum::<f64>() / shifts.len() as f64).max(0.0);
    let to = (to * 10.0).round() / 10.0;
    let mut f = fit.clone();
    f.params.insert("flush_latency_us".into(), to.into());
    let said = format!(
            "set by --check-copy from its first pass: {from:.0} µs as qualified, {to:.0} µs so the copy's fsync'ed create takes the real directory's time ({} flushes per create; real {} µs, copy {} µs per create)",
            and_list(flushes.iter().map(|k| format!("{k:.1}"))),
            and_list(real.iter().map(|v| format!("{v:.0}"))),
            and_list(copy.iter().map(|v| format!("{v:.0}"))),
        );
    // One comment per parameter: the refit goes after what was qualified.
    let flush_entry = f
        .basis
        .iter_mut()
        .find(|(k, _)| k.split(", ").next() == Some("flush_latency_us"));
    match flush_entry {
        Some((_, why)) => *why = format!("{why}; then {said}"),
        None => f.basis.push(("flush_latency_us".into(), said)),
    }
    Some((
        f,
        Refit {
            from_us: from,
            to_us: to,
            flushes_per_op: flushes,
            real_us_per_op: real,
            copy_us_per_op: copy,
            first_pass: Vec::new(),
        },
    ))
}

/// The check in two passes, records in `opts.results`: the first (`fit-pass`) runs the
/// qualified fit beside the directory and sets the flush latency from it ([`refit`]);
/// the second (`check-pass`), with fresh trials on both sides, decides.
pub fn run(opts: &CheckOptions, fit: &Fit, memory: bool) -> Result<CopyCheck> {
    if opts.results.exists() {
        bail!(
            "{} already exists; the check keeps its records in a new directory. Remove it or give another --check-results.",
            opts.results.display()
        );
    }
    std::fs::create_dir_all(&opts.results)
        .with_context(|| format!("cannot create {}", opts.results.display()))?;
    let first_dir = opts.results.join("fit-pass");
    let first = run_pass(opts, fit, &first_dir)?;
    let first_cmp = compare(&first, fit, memory, &first_dir)?;
    let (checked, refit) = match refit(&first, fit) {
        Some((f, mut r)) if first_cmp.cannot_stand.is_empty() => {
            r.first_pass = first_cmp.placements;
            crate::events::step(
                crate::events::Activity::Qualify,
                format!(
                    "flush latency {:.0} µs → {:.0} µs from the first pass; the second decides",
                    r.from_us, r.to_us
                ),
            );
            (f, Some(r))
        }
        _ => return Ok(first_cmp),
    };
    let second_dir = opts.results.join("check-pass");
    let second = run_pass(opts, &checked, &second_dir)?;
    Ok(CopyCheck {
        refit,
        ..compare(&second, &checked, memory, &second_dir)?
    })
}

/// The check as a table, the verdict and what to do about it.
pub fn render(c: &CopyCheck) -> String {
    let word = |d: Option<Decision>| d.map_or("no interval", |d| d.as_str());
    let ci = |x: &Compared| match x.interval {
        Some(RatioCi { low, high: Some(h) }) => format!("[{low:.2}, {h:.2}]"),
        Some(RatioCi { low, high: None }) => format!("[{low:.2}, ∞)"),
        None => "-".into(),
    };
    let mut s = format!(
        "the copy against the directory (ext4, fsync'ed 4 KiB files; records in {}):\n\n{:<12} {:>11} {:>11} {:>18} {:>12}   {:>9} {:>9} {:>18} {:>12}\n",
        c.results.display(),
        "placement", "real /s", "copy /s", "copy/real", format!("±{:.0}%", RATE_TOLERANCE * 100.0),
        "real p50", "copy p50", "copy/real", format!("±{:.0}%", P50_TOLERANCE * 100.0)
    );
    for p in &c.placements {
        s.push_str(&format!(
            "{:<12} {:>11.0} {:>11.0} {:>18} {:>12}   {:>6.0} µs {:>6.0} µs {:>18} {:>12}\n",
            p.placement,
            p.real_rate,
            p.copy_rate,
            format!("{:.2}× {}", p.rate.ratio, ci(&p.rate)),
            word(p.rate.decision),
            p.real_p50_us,
            p.copy_p50_us,
            format!("{:.2}× {}", p.p50.ratio, ci(&p.p50)),
            word(p.p50.decision),
        ));
    }
    if let Some(r) = &c.refit {
        s.push_str(&format!(
            "\n(flush_latency_us {:.0} → {:.0} µs, set from the first pass in {}: there the copy took {} µs per create against the directory's {})\n",
            r.from_us,
            r.to_us,
            c.results.parent().unwrap_or(&c.results).join("fit-pass").display(),
            and_list(r.copy_us_per_op.iter().map(|v| format!("{v:.0}"))),
            and_list(r.real_us_per_op.iter().map(|v| format!("{v:.0}"))),
        ));
    }
    s.push('\n');
    s.push_str(match c.verdict {
        Verdict::Predicts => "verdict: the copy predicts the device: every ratio's interval is within its tolerance. Study placements on it.\n",
        Verdict::Misses => "verdict: the copy MISSES the device: a ratio's whole interval is outside its tolerance. Its rankings may hold, its absolute figures do not: qualify again for longer (--seconds) on an idle machine, or set the model's parameters from the table above and check again.\n",
        Verdict::Undecided => "verdict: undecided: an interval reaches across a tolerance's edge. Run the check with more --check-repetitions.\n",
        Verdict::CannotStand => "verdict: the copy cannot stand for this device:\n",
    });
    for why in &c.cannot_stand {
        s.push_str(&format!("  - {why}\n"));
    }
    if c.verdict == Verdict::CannotStand {
        s.push_str(
            "  Study the directory itself (a study with work_dir there), not a copy of it.\n",
        );
    }
    if !c.starved_trials.is_empty() {
        s.push_str(&format!(
            "warning: the host kept {} of the check's trials waiting for a CPU past {:.0}% of their time (trials {}): their figures are the host's as much as the device's. Check again on an idle machine.\n",
            c.starved_trials.len(),
            crate::monitor::host_load::STARVED_SHARE * 100.0,
            c.starved_trials
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::daemon::DiskStats;
    use crate::rig::emulated::EmulationRecord;
    use crate::run::adaptive::tests::rec;

    fn fit() -> Fit {
        let mut params = toml::Table::new();
        params.insert("flush_latency_us".into(), 200.0.into());
        params.insert("write_latency_us".into(), 48.0.into());
        Fit {
            name: "vdisk".into(),
            model: "ssd-sata".into(),
            params,
            basis: vec![("write_latency_us".into(), "random 4 KiB writes".into())],
        }
    }

    /// A trial of `placement`: 400 creates at `rate`/s with median `p50_us`; on the
    /// copy (emulated disks) with `flushes` per create, `excess` s at the path's floor.
    fn trial(
        placement: &str,
        copy: bool,
        rate: f64,
        p50_us: f64,
        flushes: u64,
        excess: f64,
    ) -> TrialRecord {
        let mut r = rec(0, placement, "fsync", rate);
        r.phases[0].ops = 400;
        r.phases[0].seconds = 400.0 / rate;
        r.phases[0].latency = Some(crate::workload::Latency {
            count: 400,
            p50_us,
            ..Default::default()
        });
        if copy {
            r.emulation = Some(EmulationRecord {
                disks: vec![DiskStats {
                    flushes: flushes * 400,
                    writes: 1200,
                    floor_excess_seconds: excess,
                    floor_bound: if excess > 0.0 { 1000 } else { 0 },
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        r
    }

    fn side(copy: bool, rates: &[f64], p50: f64) -> Vec<TrialRecord> {
        PLACEMENTS
            .iter()
            .flat_map(|p| rates.iter().map(move |&r| trial(p, copy, r, p50, 2, 0.0)))
            .collect()
    }

    #[test]
    fn the_experiment_file_is_a_real_and_a_copy_configuration_per_placement() {
        let opts = CheckOptions {
            dir: "/var/tmp".into(),
            fs_size: "512M".into(),
            journal_size: "32M".into(),
            files: 400,
            repetitions: 6,
            results: "r".into(),
        };
        let text = spec_text(&opts, &fit());
        let spec = crate::experiment::spec::parse(&text, "check.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(spec.repetitions, 6);
        let configs: Vec<(String, bool)> = spec
            .configs
            .iter()
            .map(|c| (c.placement.to_string(), c.fs_model.is_some()))
            .collect();
        assert_eq!(
            configs,
            [
                ("internal".to_string(), false),
                ("second-disk".to_string(), false),
                ("internal".to_string(), true),
                ("second-disk".to_string(), true)
            ]
        );
        // The copy's second disk is the fitted model too; the real one a loop image.
        let copy_second = &spec.configs[3];
        assert_eq!(copy_second.journal_model.as_ref().unwrap().name, "vdisk");
        assert!(spec.configs[1].journal_model.is_none());
    }

    #[test]
    fn the_verdict_follows_the_intervals_against_the_tolerances() {
        let real = side(false, &[1000.0, 1010.0, 990.0, 1005.0], 600.0);
        let close = side(true, &[1002.0, 998.0, 1004.0, 996.0], 610.0);
        let all: Vec<TrialRecord> = real.iter().chain(&close).cloned().collect();
        let c = compare(&all, &fit(), false, Path::new("r")).unwrap();
        assert_eq!(c.verdict, Verdict::Predicts, "{c:?}");
        for p in &c.placements {
            assert!((p.rate.ratio - 1.0).abs() < 0.01, "{p:?}");
            let ci = p.rate.interval.unwrap();
            assert!(ci.low > 1.0 / 1.15 && ci.high.unwrap() < 1.15, "{ci:?}");
            assert_eq!(p.p50.decision, Some(Decision::Equivalent));
        }
        // Twice as fast as the directory: the whole interval is beyond the band.
        let fast = side(true, &[2000.0, 2020.0, 1990.0, 2010.0], 300.0);
        let all: Vec<TrialRecord> = real.iter().chain(&fast).cloned().collect();
        let c = compare(&all, &fit(), false, Path::new("r")).unwrap();
        assert_eq!(c.verdict, Verdict::Misses);
        assert_eq!(c.placements[0].rate.decision, Some(Decision::Different));
        // Noisy: an interval across the band's edge.
        let noisy = side(true, &[800.0, 1200.0, 950.0, 1100.0], 600.0);
        let all: Vec<TrialRecord> = real.iter().chain(&noisy).cloned().collect();
        assert_eq!(
            compare(&all, &fit(), false, Path::new("r"))
                .unwrap()
                .verdict,
            Verdict::Undecided
        );
        // A trial the host kept from a CPU is named beside the verdict.
        let mut busy = close.clone();
        busy[1].trial = 7;
        busy[1].monitor = Some(crate::monitor::MonitorSummary {
            host_load: Some(crate::monitor::HostLoad {
                seconds: 1.0,
                other_cpu_pct: 150.0,
                capacity_pct: 200.0,
                cpu_wait: Some(crate::monitor::host_load::CpuWait {
                    own_seconds: 0.3,
                    kernel_seconds: 0.1,
                    pressure_pct: None,
                }),
            }),
            ..Default::default()
        });
        let all: Vec<TrialRecord> = real.iter().chain(&busy).cloned().collect();
        let c = compare(&all, &fit(), false, Path::new("r")).unwrap();
        assert_eq!(c.starved_trials, [7]);
        assert!(render(&c).contains("the host kept 1 of the check's trials waiting"));
        // A side without trials is an error naming it.
        let e = compare(&real, &fit(), false, Path::new("r"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no successful internal trial on the copy's side"),
            "{e}"
        );
    }

    #[test]
    fn memory_or_answers_at_the_paths_floor_cannot_stand_for_the_device() {
        let real = side(false, &[1000.0, 1010.0, 990.0], 600.0);
        let copy = side(true, &[1000.0, 1010.0, 990.0], 600.0);
        let all: Vec<TrialRecord> = real.iter().chain(&copy).cloned().collect();
        let c = compare(&all, &fit(), true, Path::new("r")).unwrap();
        assert_eq!(c.verdict, Verdict::CannotStand);
        assert!(
            c.cannot_stand[0].contains("in memory"),
            "{:?}",
            c.cannot_stand
        );
        // Each copy trial spent 0.2 of its 0.4 s at the floor: half its time the path's.
        let floor_bound: Vec<TrialRecord> = PLACEMENTS
            .iter()
            .flat_map(|p| (0..3).map(move |_| trial(p, true, 1000.0, 600.0, 2, 0.2)))
            .collect();
        let all: Vec<TrialRecord> = real.iter().chain(&floor_bound).cloned().collect();
        let c = compare(&all, &fit(), false, Path::new("r")).unwrap();
        assert_eq!(c.verdict, Verdict::CannotStand);
        assert!(
            c.cannot_stand[0].contains("faster than the emulation path"),
            "{:?}",
            c.cannot_stand
        );
        assert!(render(&c).contains("cannot stand for this device"));
    }

    #[test]
    fn the_flush_latency_moves_by_the_time_missing_per_flush() {
        // Real: 1000 creates/s (1000 µs each); copy: 1250/s (800 µs), 2 flushes each.
        let real = side(false, &[1000.0, 1000.0], 600.0);
        let copy = side(true, &[1250.0, 1250.0], 500.0);
        let all: Vec<TrialRecord> = real.iter().chain(&copy).cloned().collect();
        let (f, r) = refit(&all, &fit()).unwrap();
        assert_eq!((r.from_us, r.to_us), (200.0, 300.0));
        assert_eq!(f.params["flush_latency_us"].as_float(), Some(300.0));
        assert_eq!(f.params["write_latency_us"].as_float(), Some(48.0));
        assert!(f
            .basis
            .iter()
            .any(|(k, why)| k == "flush_latency_us" && why.contains("set by --check-copy")));
        // Never below 0.
        let slow_real = side(false, &[5000.0, 5000.0], 100.0);
        let all: Vec<TrialRecord> = slow_real.iter().chain(&copy).cloned().collect();
        assert_eq!(refit(&all, &fit()).unwrap().1.to_us, 0.0);
    }
}
