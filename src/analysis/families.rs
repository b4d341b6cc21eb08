//! Every test a workload's report makes, the family each is corrected in, and the one
//! rule that decides it and sets the interval printed beside it.
//!
//! Families (declared before any data is seen, like a study's primary endpoint):
//! - **primary**: the workload's main phase, every pair of configurations (the
//!   summary ranks them, so any pair may be the one a reader acts on);
//! - **secondary**: each other phase against the baseline;
//! - **suspect**: phases too short to trust (other than the main phase), in a family
//!   of their own so they never dilute the others.
//!
//! With several runs side by side (`jbench compare`), a pair inside one run is in that
//! run's family, exactly as its own report has it, and pairs across runs form a
//! family of their own.
//!
//! The rule, per family: Bonferroni over the adaptive looks, then Holm. Holm tests the
//! i-th smallest p at alpha / (m - i + 1) and stops at the first that fails; each
//! comparison's interval is Fieller's at that same level (at the level of the step
//! where Holm stopped, for those after it). So an interval excludes 1 exactly when the
//! adjusted p is below alpha. The word a comparison gets (different, equivalent,
//! undecided) is then read from where that same interval lies against the noise band
//! ([`super::decision`]), never from p alone.

use super::context::{samples, Ctx};
use super::decision::{self, Decision};
use super::model::{ConfigAnalysis, PhaseInfo};
pub use super::model::{Family, FamilyKind};
use super::ratio::{fieller, RatioCi};
use super::stats::{self, Summary};
use crate::results::record::TrialRecord;

/// One test: configuration `b` against the reference `a` on one phase.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Test {
    pub a: String,
    pub b: String,
    pub phase: String,
    pub family: String,
    pub n_a: usize,
    pub n_b: usize,
    /// mean(b) / mean(a); `None` when mean(a) is not above 0.
    pub ratio: Option<f64>,
    /// Welch's two-sided p of this pair alone.
    pub p: Option<f64>,
    /// After the looks and Holm.
    pub p_adjusted: Option<f64>,
    /// The level the comparison was decided at, and its interval at that level.
    pub level: Option<f64>,
    pub ci: Option<RatioCi>,
    /// Adjusted p below alpha: the interval excludes 1.
    pub rejected: bool,
    /// The interval against the noise band ([`super::decision`]); `None` without an
    /// interval. Symmetric in the pair, so it holds from either side.
    pub decision: Option<Decision>,
}

impl Test {
    /// This test as seen from `num`: the ratio mean(num) / mean(other) and its
    /// interval; `num` must be one of the pair.
    pub fn oriented(&self, num: &str) -> (Option<f64>, Option<RatioCi>) {
        if num == self.b {
            (self.ratio, self.ci)
        } else {
            (
                self.ratio.filter(|r| *r > 0.0).map(|r| 1.0 / r),
                self.ci.map(|c| c.inverted()),
            )
        }
    }

    pub fn is_pair(&self, x: &str, y: &str, phase: &str) -> bool {
        self.phase == phase && ((self.a == x && self.b == y) || (self.a == y && self.b == x))
    }
}

/// What the tests of one workload are made from.
pub(crate) struct Design<'a> {
    pub recs: &'a [&'a TrialRecord],
    pub configs: &'a [ConfigAnalysis],
    pub phases: &'a [PhaseInfo],
    pub main_phase: Option<&'a str>,
    pub baseline: Option<&'a str>,
}

/// Plans, runs and decides every test of one workload; returns the tests and their
/// families (families in primary, secondary, suspect order).
pub(crate) fn test_all(d: &Design, ctx: &Ctx) -> (Vec<Test>, Vec<Family>) {
    let rates = |label: &str, phase: &str| -> Vec<f64> {
        let of: Vec<&TrialRecord> = d
            .recs
            .iter()
            .copied()
            .filter(|r| r.config.label == label)
            .collect();
        samples(&of, phase).rates
    };
    let suspect = |label: &str, i: usize| {
        d.configs
            .iter()
            .find(|c| c.label == label)
            .is_some_and(|c| c.phases[i].suspect)
    };
    let mut planned: Vec<(String, String, usize, FamilyKind)> = Vec::new();
    for (i, info) in d.phases.iter().enumerate() {
        if Some(info.name.as_str()) == d.main_phase {
            for (x, cx) in d.configs.iter().enumerate() {
                for cy in &d.configs[x + 1..] {
                    // The baseline is the reference of any pair it is in.
                    let (a, b) = if Some(cy.label.as_str()) == d.baseline {
                        (&cy.label, &cx.label)
                    } else {
                        (&cx.label, &cy.label)
                    };
                    planned.push((a.clone(), b.clone(), i, FamilyKind::Primary));
                }
            }
        } else if let Some(base) = d.baseline {
            for c in d.configs.iter().filter(|c| c.label != base) {
                let kind = if suspect(base, i) || suspect(&c.label, i) {
                    FamilyKind::Suspect
                } else {
                    FamilyKind::Secondary
                };
                planned.push((base.to_string(), c.label.clone(), i, kind));
            }
        }
    }
    let mut tests: Vec<Test> = Vec::new();
    // Each test's (reference, other) rates, kept for its interval once its level is known.
    let mut sampled: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
    let mut kinds: Vec<(String, FamilyKind, Option<String>)> = Vec::new();
    for (a, b, i, kind) in planned {
        let phase = &d.phases[i].name;
        let (ra, rb) = (rates(&a, phase), rates(&b, phase));
        let scope = scope_of(&a, &b, ctx);
        let family = match &scope {
            Some(s) => format!("{} ({s})", kind.name()),
            None => kind.name().to_string(),
        };
        if !kinds.iter().any(|k| k.0 == family) {
            kinds.push((family.clone(), kind, scope));
        }
        let mean_a = Summary::of(&ra).map(|s| s.mean).filter(|m| *m > 0.0);
        let ratio = mean_a
            .zip(Summary::of(&rb).map(|s| s.mean))
            .map(|(ma, mb)| mb / ma)
            .filter(|r| r.is_finite());
        let p = stats::welch(&ra, &rb)
            .map(|w| w.p)
            .filter(|p| p.is_finite() && ratio.is_some());
        tests.push(Test {
            a,
            b,
            phase: phase.clone(),
            family,
            n_a: ra.len(),
            n_b: rb.len(),
            ratio,
            p,
            p_adjusted: None,
            level: None,
            ci: None,
            rejected: false,
            decision: None,
        });
        sampled.push((ra, rb));
    }
    let alpha = 1.0 - ctx.confidence;
    kinds.sort_by_key(|k| k.1 as u8);
    let families = kinds
        .into_iter()
        .map(|(id, kind, scope)| {
            let looks = looks_of(scope.as_deref(), ctx);
            let members: Vec<usize> = (0..tests.len())
                .filter(|&t| tests[t].family == id && tests[t].p.is_some())
                .collect();
            decide(&mut tests, &sampled, &members, looks, alpha);
            for &t in &members {
                tests[t].decision = tests[t].ci.map(|ci| decision::of(ci, ctx.opts.noise_band));
            }
            let mut phases: Vec<String> = Vec::new();
            for info in d.phases {
                if tests.iter().any(|t| t.family == id && t.phase == info.name) {
                    phases.push(info.name.clone());
                }
            }
            Family {
                id,
                kind,
                scope,
                phases,
                size: members.len(),
            }
        })
        .collect();
    (tests, families)
}

/// Holm over `members` (indices into `tests` and their `sampled` rates) after
/// multiplying each p by `looks`; sets each member's adjusted p, decision, level and
/// interval.
fn decide(
    tests: &mut [Test],
    sampled: &[(Vec<f64>, Vec<f64>)],
    members: &[usize],
    looks: u32,
    alpha: f64,
) {
    let m = members.len();
    let raw: Vec<f64> = members
        .iter()
        .map(|&t| stats::sequential_p(tests[t].p.unwrap_or(1.0), looks))
        .collect();
    let steps = stats::holm_steps(&raw);
    // The step where Holm stopped rejecting (adjusted p only grows with the rank).
    let stop = steps
        .iter()
        .filter(|s| s.adjusted >= alpha)
        .map(|s| s.rank)
        .min()
        .unwrap_or(m);
    for (&t, step) in members.iter().zip(&steps) {
        let (rank, adjusted) = (step.rank, step.adjusted);
        tests[t].p_adjusted = Some(adjusted);
        tests[t].rejected = adjusted < alpha;
        // Holm tested this one at alpha / (m - rank); one after the stop at the
        // stopping step's level, which its p (no smaller) cannot pass either.
        let divisor = (m - rank.min(stop)) as f64 * f64::from(looks.max(1));
        let level = 1.0 - alpha / divisor;
        let (ra, rb) = &sampled[t];
        tests[t].level = Some(level);
        tests[t].ci = fieller(rb, ra, level);
    }
}

/// Comparing runs: the run both configurations belong to, or `across runs`.
fn scope_of(a: &str, b: &str, ctx: &Ctx) -> Option<String> {
    let runs = &ctx.opts.runs;
    if runs.is_empty() {
        return None;
    }
    let run = |l: &str| runs.iter().find(|r| r.labels.iter().any(|x| x == l));
    match (run(a), run(b)) {
        (Some(x), Some(y)) if x.name == y.name => Some(format!("run {}", x.name)),
        _ => Some(ACROSS_RUNS.to_string()),
    }
}

pub const ACROSS_RUNS: &str = "across runs";

/// The looks of the adaptive stopping rule that apply to a family: its run's, or
/// across runs the most any run could take (conservative for the others).
fn looks_of(scope: Option<&str>, ctx: &Ctx) -> u32 {
    let of_run = scope
        .and_then(|s| s.strip_prefix("run "))
        .and_then(|name| ctx.opts.runs.iter().find(|r| r.name == name));
    match of_run {
        Some(r) => r.adaptive_looks.unwrap_or(1),
        None => ctx.adaptive_looks.unwrap_or(1),
    }
}
