//! Adaptive repetitions: after the `min` interleaved rounds, a (configuration,
//! workload) gets another trial only while its main phase's rate varies more than the
//! target coefficient of variation, or the report would call its comparison with the
//! baseline on the main phase undecided (its interval reaches across an edge of the
//! noise band), and never beyond `max` trials. A suspect main phase (shorter than the
//! suspect threshold) is never chased: more trials of a phase too short to trust do
//! not make it trustworthy.
//!
//! The rule reads the report's own analysis ([`crate::analysis::analyse`] with the
//! run's report options), so it stops on exactly the outcomes the report prints
//! (different, equivalent, undecided: [`crate::analysis::decision`]), at the levels
//! the report decides them at.
//!
//! The rule is a pure function of the recorded trials ([`needs_more`]), so a resumed
//! run recomputes the same decisions from `trials.jsonl` and continues where it
//! stopped, and `jbench selftest adaptive` can replay it on a recorded run.
//! [`next_round`] turns the rule's answer into the trials the runner runs next.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::analysis::{Outcome, ReportOptions};
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::results::record::TrialRecord;

/// The decision rule's parameters; the noise band, the baseline, the main phases and
/// the suspect threshold are the report's ([`ReportOptions`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Largest coefficient of variation of the main phase's rate that needs no more
    /// trials.
    pub target_cv: f64,
    /// Trials (successful or failed) a (configuration, workload) may have at most.
    pub max: u32,
}

impl Rule {
    pub fn of(spec: &Spec) -> Option<Rule> {
        spec.adaptive.map(|a| Rule {
            target_cv: a.target_cv,
            max: a.max,
        })
    }
}

/// A (configuration, workload) that needs another trial, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    pub config: String,
    pub workload: String,
    /// e.g. `file_create CV 7.2% > 3%` or `file_create vs ramdisk undecided against
    /// ±10% (+8.2% [+0.5%, +16.3%] reaches across the band)`.
    pub reason: String,
    /// Trials it has so far (successful or failed).
    pub trials: u32,
}

impl Need {
    /// `small-shallow/same-disk: file_create CV 7.2% > 3%: trial 4 of at most 10`.
    pub fn message(&self, max: u32) -> String {
        format!(
            "{}/{}: {}: trial {} of at most {max}",
            self.workload,
            self.config,
            self.reason,
            self.trials + 1
        )
    }
}

fn pct(x: f64) -> String {
    let s = format!("{:.1}", x * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The (configuration, workload) pairs that need another trial, in order of their
/// first recorded trial, judged on each workload's main phase as the report made with
/// `opts` judges it. Pairs with fewer than 2 successful trials are left alone
/// (failures are not noise), as are pairs that reached `rule.max` and pairs whose main
/// phase is suspect.
pub fn needs_more(records: &[TrialRecord], opts: &ReportOptions, rule: &Rule) -> Vec<Need> {
    let a = crate::analysis::analyse(records, opts);
    let mut sorted: Vec<&TrialRecord> = records.iter().filter(|r| !r.crash_recording).collect();
    sorted.sort_by_key(|r| r.trial);
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for r in &sorted {
        let key = (r.config.label.as_str(), r.workload.name.as_str());
        if !pairs.contains(&key) {
            pairs.push(key);
        }
    }
    let mut out = Vec::new();
    for &(label, workload) in &pairs {
        let recs: Vec<&&TrialRecord> = sorted
            .iter()
            .filter(|r| r.config.label == label && r.workload.name == workload)
            .collect();
        let trials = recs.len() as u32;
        if trials >= rule.max || recs.iter().filter(|r| r.is_ok()).count() < 2 {
            continue;
        }
        let Some(w) = a.workloads.iter().find(|w| w.name == workload) else {
            continue;
        };
        let Some(main) = w.summary.as_ref().map(|s| s.main_phase.as_str()) else {
            continue;
        };
        let Some(idx) = w.phases.iter().position(|p| p.name == main) else {
            continue;
        };
        let Some(c) = w.configs.iter().find(|c| c.label == label) else {
            continue;
        };
        let stats = &c.phases[idx];
        if stats.suspect {
            continue;
        }
        let mut reasons = Vec::new();
        if let Some(s) = stats
            .rate
            .filter(|s| s.mean > 0.0 && s.cv() > rule.target_cv)
        {
            reasons.push(format!(
                "{main} CV {:.1}% > {}",
                s.cv() * 100.0,
                pct(rule.target_cv)
            ));
        }
        let vs_base = w
            .comparisons
            .iter()
            .find(|x| x.config == label)
            .map(|x| &x.phases[idx])
            .filter(|p| !p.suspect && p.outcome == Outcome::Undecided);
        if let Some(p) = vs_base {
            let words = crate::report::words::Wording::of(w, &a);
            reasons.push(format!(
                "{main} vs {} {}",
                w.baseline.as_deref().unwrap_or("the baseline"),
                words.outcome(p)
            ));
        }
        if !reasons.is_empty() {
            out.push(Need {
                config: label.to_string(),
                workload: workload.to_string(),
                reason: reasons.join(", "),
                trials,
            });
        }
    }
    out
}

/// One extra trial of an adaptive round, and why it is run (the progress line).
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraTrial {
    pub trial: Trial,
    pub why: String,
}

/// The next round of extra trials the rule asks for after `records` (every trial of
/// this results directory so far), one per (configuration, workload) that needs
/// more; empty when the run is done. Extra trials take the indices after the plan's
/// `planned` trials and after every recorded one. The round is shuffled with the
/// spec's seed and the round's first index, so a resumed run makes the same order
/// from the same records.
pub fn next_round(
    spec: &Spec,
    rule: &Rule,
    records: &[TrialRecord],
    planned: usize,
) -> Vec<ExtraTrial> {
    // The report's own options, so the rule stops on what the report will print. A
    // spec's options cannot fail to build without a command-line threshold to parse.
    let Ok(opts) = ReportOptions::of_spec(spec, None, None) else {
        return Vec::new();
    };
    // Crash recordings are not timed trials: `needs_more` (through the analysis)
    // leaves them out of every spread and comparison.
    let needs = needs_more(records, &opts, rule);
    let mut next = records
        .iter()
        .map(|r| r.trial.saturating_add(1))
        .max()
        .unwrap_or(0)
        .max(planned);
    let mut order: Vec<&Need> = needs.iter().collect();
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ (next as u64).rotate_left(32));
    order.shuffle(&mut rng);
    let mut round = Vec::new();
    for need in order {
        let config = spec.configs.iter().position(|c| c.label == need.config);
        let workload = spec.workloads.iter().position(|w| w.name == need.workload);
        let (Some(config), Some(workload)) = (config, workload) else {
            continue; // records of another experiment: not ours to extend
        };
        let trial = Trial {
            index: next,
            config,
            workload,
            rep: need.trials + 1,
            recording: false,
        };
        next += 1;
        round.push(ExtraTrial {
            trial,
            why: need.message(rule.max),
        });
    }
    round
}

/// One configuration of a replay: trials the adaptive rule would have run against
/// those recorded, and whether its verdicts are the same.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRow {
    pub config: String,
    pub needed: usize,
    pub recorded: usize,
    /// `None` for the baseline (nothing to compare).
    pub same_verdicts: Option<bool>,
    /// `workload/phase: all-trials verdict -> subset verdict` where they differ.
    pub differences: Vec<String>,
}

/// What a verdict says, without its figures: faster, slower, no difference, or the
/// reason there is none. Read from the typed outcome, never from the verdict text.
fn verdict_class(c: &crate::report::PhaseComparison) -> String {
    crate::report::words::outcome_class(c.outcome).to_string()
}

fn verdict_classes(
    records: &[TrialRecord],
    opts: &crate::report::ReportOptions,
) -> Vec<(String, String, String)> {
    let a = crate::report::analyse(records, opts);
    a.workloads
        .iter()
        .flat_map(|w| {
            w.comparisons.iter().flat_map(move |c| {
                c.phases.iter().map(move |p| {
                    (
                        c.config.clone(),
                        format!("{}/{}", w.name, p.phase),
                        verdict_class(p),
                    )
                })
            })
        })
        .collect()
}

/// Replays the adaptive rule on a fixed-N run: every (configuration, workload)
/// starts with its first `min` recorded trials, and while the rule asks for more, the
/// next recorded trial of each pair that needs one is taken, as if they arrived one
/// round at a time, up to what was recorded. Returns per configuration the trials the
/// rule needed and whether the verdicts with that subset equal those with all trials.
pub fn replay(
    records: &[TrialRecord],
    min: u32,
    rule: &Rule,
    opts: &ReportOptions,
) -> Vec<ReplayRow> {
    let mut sorted: Vec<&TrialRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.trial);
    let mut pairs: Vec<((String, String), Vec<&TrialRecord>)> = Vec::new();
    for r in sorted {
        let key = (r.config.label.clone(), r.workload.name.clone());
        match pairs.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => pairs.push((key, vec![r])),
        }
    }
    let mut taken: Vec<usize> = pairs
        .iter()
        .map(|(_, v)| v.len().min(min as usize))
        .collect();
    let subset = |taken: &[usize]| -> Vec<TrialRecord> {
        pairs
            .iter()
            .zip(taken)
            .flat_map(|((_, v), k)| v[..*k].iter().map(|r| (*r).clone()))
            .collect()
    };
    let unbounded = Rule {
        max: u32::MAX,
        ..*rule
    };
    loop {
        let needs = needs_more(&subset(&taken), opts, &unbounded);
        let mut advanced = false;
        for need in needs {
            if let Some(i) = pairs
                .iter()
                .position(|((c, w), _)| *c == need.config && *w == need.workload)
            {
                if taken[i] < pairs[i].1.len() {
                    taken[i] += 1;
                    advanced = true;
                }
            }
        }
        if !advanced {
            break;
        }
    }
    let full = verdict_classes(records, opts);
    let part = verdict_classes(&subset(&taken), opts);
    let mut configs: Vec<String> = opts
        .config_order
        .iter()
        .filter(|l| pairs.iter().any(|((c, _), _)| c == *l))
        .cloned()
        .collect();
    for ((c, _), _) in &pairs {
        if !configs.contains(c) {
            configs.push(c.clone());
        }
    }
    configs
        .into_iter()
        .map(|config| {
            let (mut needed, mut recorded) = (0, 0);
            for (((c, _), v), k) in pairs.iter().zip(&taken) {
                if *c == config {
                    needed += k;
                    recorded += v.len();
                }
            }
            let mine: Vec<&(String, String, String)> =
                full.iter().filter(|(c, _, _)| *c == config).collect();
            let differences: Vec<String> = mine
                .iter()
                .map(|(_, at, class)| {
                    let sub = part
                        .iter()
                        .find(|(c, a, _)| *c == config && a == at)
                        .map(|(_, _, k)| k.as_str())
                        .unwrap_or("none");
                    (at, class, sub)
                })
                .filter(|(_, class, sub)| class.as_str() != *sub)
                .map(|(at, class, sub)| format!("{at}: {class} -> {sub}"))
                .collect();
            ReplayRow {
                same_verdicts: (!mine.is_empty()).then_some(differences.is_empty()),
                config,
                needed,
                recorded,
                differences,
            }
        })
        .collect()
}

/// The replay as a table, with a total line.
pub fn render_replay(rows: &[ReplayRow], min: u32, rule: &Rule, noise_band: f64) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "adaptive rule replayed: min {min}, target CV {}, noise band {}\n\n",
        pct(rule.target_cv),
        pct(noise_band)
    );
    let w = rows
        .iter()
        .map(|r| r.config.chars().count())
        .chain(["configuration".len()])
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "{:<w$}  needed  recorded  verdicts", "configuration");
    for r in rows {
        let verdicts = match r.same_verdicts {
            None => "baseline".to_string(),
            Some(true) => "same".to_string(),
            Some(false) => format!("differ: {}", r.differences.join("; ")),
        };
        let _ = writeln!(
            out,
            "{:<w$}  {:>6}  {:>8}  {verdicts}",
            r.config, r.needed, r.recorded
        );
    }
    let needed: usize = rows.iter().map(|r| r.needed).sum();
    let recorded: usize = rows.iter().map(|r| r.recorded).sum();
    let compared = rows.iter().filter(|r| r.same_verdicts.is_some()).count();
    let same = rows
        .iter()
        .filter(|r| r.same_verdicts == Some(true))
        .count();
    let _ = writeln!(
        out,
        "\ntotal: {needed} of {recorded} trials ({:.0}%); the same verdicts for {same} of {compared} compared configurations",
        100.0 * needed as f64 / recorded.max(1) as f64
    );
    out
}

/// `jbench selftest adaptive DIR`: replays the rule on a recorded results directory.
/// `target_cv` and `min` default to the run's own adaptive rule, else 0.03 and 3.
pub fn replay_dir(
    dir: &std::path::Path,
    target_cv: Option<f64>,
    min: Option<u32>,
) -> anyhow::Result<String> {
    use anyhow::Context;
    let records = crate::results::store::load_records(dir)?;
    let spec_path = dir.join(crate::results::store::SPEC);
    let spec = crate::experiment::spec::load(&spec_path)
        .with_context(|| format!("cannot read the experiment in {}", spec_path.display()))?;
    let min = min.or(spec.adaptive.map(|a| a.min)).unwrap_or(3);
    if min < 2 {
        anyhow::bail!("--min must be at least 2");
    }
    let target_cv = target_cv
        .or(spec.adaptive.map(|a| a.target_cv))
        .unwrap_or(0.03);
    if !(target_cv > 0.0 && target_cv < 1.0) {
        anyhow::bail!("--target-cv must be between 0 and 1 (0.03 = 3%)");
    }
    let rule = Rule {
        target_cv,
        max: u32::MAX,
    };
    let opts = ReportOptions::of_spec(&spec, None, None)?;
    let rows = replay(&records, min, &rule, &opts);
    Ok(render_replay(&rows, min, &rule, opts.noise_band))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::record::{ConfigRecord, Status, WorkloadRecord, SCHEMA_VERSION};
    use crate::workload::PhaseResult;

    /// A successful trial whose one phase, `file_create`, ran 1000 ops at `rate`.
    pub(crate) fn rec(trial: usize, label: &str, workload: &str, rate: f64) -> TrialRecord {
        TrialRecord {
            schema_version: SCHEMA_VERSION,
            trial,
            rep: 1,
            crash_recording: false,
            config: ConfigRecord {
                label: label.into(),
                filesystem: "ext4".into(),
                fs_size: 1 << 30,
                placement: label.into(),
                journal_size: 16 << 20,
                mode: "ordered".into(),
                mkfs_options: vec![],
                mount_options: vec![],
                fast_commit: false,
                commit_seconds: None,
                memory_limit: None,
                ramdisk_size: None,
                fs_device_model: None,
                journal_device_model: None,
            },
            workload: WorkloadRecord {
                kind: "fdtree".into(),
                name: workload.into(),
                params: serde_json::json!({"dirs": 2}),
                durable: false,
                neighbour_rate: None,
            },
            layout: serde_json::Value::Null,
            verified: None,
            phases: vec![PhaseResult {
                name: "file_create".into(),
                seconds: 1000.0 / rate,
                ops: 1000,
                op_unit: "file creates".into(),
                ..PhaseResult::default()
            }],
            memory: None,
            emulation: None,
            monitor: None,
            writeback: None,
            neighbour: None,
            concurrency: None,
            status: Status::Ok,
            error: None,
            started_at: "2026-01-01T00:00:00Z".into(),
            wall_seconds: 1.0,
        }
    }

    const RULE: Rule = Rule {
        target_cv: 0.03,
        max: 10,
    };

    /// The report's options these tests judge by: baseline `base`, a 2% band, and a
    /// suspect threshold under the test phases' 0.5-1 s.
    fn opts() -> ReportOptions {
        ReportOptions {
            baseline: Some("base".into()),
            noise_band: 0.02,
            suspect_below_secs: 0.1,
            ..ReportOptions::default()
        }
    }

    fn series(out: &mut Vec<TrialRecord>, label: &str, rates: &[f64]) {
        for r in rates {
            out.push(rec(out.len(), label, "w", *r));
        }
    }

    #[test]
    fn steady_configurations_far_apart_need_nothing() {
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1001.0, 999.0]);
        series(&mut recs, "fast", &[1500.0, 1502.0, 1498.0]);
        assert_eq!(needs_more(&recs, &opts(), &RULE), []);
    }

    #[test]
    fn a_noisy_configuration_needs_more_until_max() {
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1001.0, 999.0]);
        series(&mut recs, "noisy", &[1500.0, 1800.0, 1200.0]);
        let needs = needs_more(&recs, &opts(), &RULE);
        assert_eq!(needs.len(), 1, "{needs:?}");
        assert_eq!(needs[0].config, "noisy");
        let message = needs[0].message(10);
        assert!(
            message.starts_with("w/noisy: file_create CV 20.0% > 3%, file_create vs base undecided against ±2% (+50.0% [")
                && message.ends_with("reaches across the band): trial 4 of at most 10"),
            "{message}"
        );
        let capped = Rule { max: 3, ..RULE };
        assert_eq!(needs_more(&recs, &opts(), &capped), []);
    }

    #[test]
    fn a_comparison_straddling_the_band_is_undecided() {
        // 2% faster with ~1% noise: the interval crosses +2%.
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1010.0, 990.0]);
        series(&mut recs, "near", &[1020.0, 1030.0, 1010.0]);
        let needs = needs_more(&recs, &opts(), &RULE);
        assert_eq!(needs.len(), 1, "{needs:?}");
        assert!(
            needs[0]
                .reason
                .starts_with("file_create vs base undecided against ±2% (+2.0% ["),
            "{needs:?}"
        );
        // Identical and steady: equivalent within the band, so nothing more.
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1001.0, 999.0]);
        series(&mut recs, "same", &[1000.0, 1000.5, 999.5]);
        assert_eq!(needs_more(&recs, &opts(), &RULE), []);
    }

    #[test]
    fn a_suspect_main_phase_is_never_chased() {
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1001.0, 999.0]);
        series(&mut recs, "noisy", &[1500.0, 1800.0, 1200.0]);
        // Every phase ran about 1 s: under a 2 s threshold, all suspect.
        let strict = ReportOptions {
            suspect_below_secs: 2.0,
            ..opts()
        };
        assert_eq!(needs_more(&recs, &strict, &RULE), []);
        assert_eq!(needs_more(&recs, &opts(), &RULE).len(), 1);
    }

    #[test]
    fn only_the_main_phase_is_judged() {
        // A second phase, noisy and far from the baseline's, never asks for trials:
        // the main phase (fdtree's file_create) is steady and decided.
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1001.0, 999.0]);
        series(&mut recs, "fast", &[1500.0, 1502.0, 1498.0]);
        for (i, r) in recs.iter_mut().enumerate() {
            let wobble = [0.5, 1.0, 2.0][i % 3];
            r.phases.push(PhaseResult {
                name: "dir_remove".into(),
                seconds: wobble,
                ops: 100,
                op_unit: "dir removes".into(),
                ..PhaseResult::default()
            });
        }
        assert_eq!(needs_more(&recs, &opts(), &RULE), []);
    }

    #[test]
    fn a_replay_on_a_recorded_directory_needs_fewer_trials_for_steady_configurations() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "repetitions = 10\nseed = 3\nsuspect_below = \"100ms\"\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = [\"internal\", \"same-disk\", \"ramdisk\"]\n[[workload]]\nkind = \"fdtree\"\nname = \"w\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "t").unwrap();
        std::fs::write(tmp.path().join(crate::results::store::SPEC), &spec.resolved).unwrap();
        // Ten interleaved rounds: internal steady, same-disk steady and 30% faster,
        // ramdisk ±10% around the baseline.
        let mut lines = String::new();
        let mut i = 0;
        for round in 0..10 {
            let wobble = if round % 2 == 0 { 1.0 } else { -1.0 };
            for (label, rate) in [
                ("internal", 1000.0 + wobble),
                ("same-disk", 1300.0 - wobble),
                ("ramdisk", 1000.0 * (1.0 + 0.1 * wobble)),
            ] {
                let mut r = rec(i, label, "w", rate);
                r.rep = round + 1;
                lines.push_str(&serde_json::to_string(&r).unwrap());
                lines.push('\n');
                i += 1;
            }
        }
        std::fs::write(tmp.path().join(crate::results::store::TRIALS), lines).unwrap();
        let out = replay_dir(tmp.path(), Some(0.03), Some(3)).unwrap();
        assert!(out.contains("min 3, target CV 3%, noise band 2%"), "{out}");
        let row = |label: &str| {
            out.lines()
                .find(|l| l.starts_with(&format!("{label} ")))
                .unwrap_or_else(|| panic!("{label} in {out}"))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(row("internal"), "internal 3 10 baseline", "{out}");
        assert_eq!(row("same-disk"), "same-disk 3 10 same", "{out}");
        assert_eq!(row("ramdisk"), "ramdisk 10 10 same", "{out}");
        assert!(
            out.contains("total: 16 of 30 trials (53%); the same verdicts for 2 of 2"),
            "{out}"
        );
    }

    #[test]
    fn failures_and_single_trials_add_nothing() {
        let mut recs = Vec::new();
        series(&mut recs, "base", &[1000.0, 1001.0, 999.0]);
        series(&mut recs, "broken", &[1500.0, 1800.0]);
        recs[4].status = Status::Failed;
        assert_eq!(needs_more(&recs, &opts(), &RULE), []);
    }
}
