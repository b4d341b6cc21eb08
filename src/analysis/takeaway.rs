//! What to do, per workload: the configuration a person can put their journal on,
//! read from the answer ([`super::answer`]) by one rule, so the sentence that opens a
//! report can never say more than its figures.
//!
//! The pick is the fastest configuration that is safe: it lost nothing in the power
//! cuts checked, is no control built to lose data, and its journal is not on a device
//! a power cut empties (a RAM disk). Against the baseline it is then used only when the
//! comparison is decided *different* (the whole interval beyond the noise band, the
//! rule every verdict word follows) and neither side's figure is marked (suspect,
//! path-bound); an *equivalent* comparison keeps the baseline, an undecided one says so.
//! Faster configurations that are not safe are named, with why.

use serde::{Deserialize, Serialize};

use super::answer::{ConfigAnswer, WorkloadAnswer};
use super::decision::Decision;
use crate::emu::PowerCut;

/// One workload's advice and the faster configurations it sets aside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Takeaway {
    pub advice: Advice,
    /// Configurations faster than the pick that are not safe, fastest first.
    pub set_aside: Vec<String>,
}

/// What the figures allow a person to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Advice {
    /// `config` is decided faster than the baseline and is safe: use it.
    Use { config: String, baseline: String },
    /// Keep the baseline: no safe configuration is decided faster than it; the safe
    /// ones decided equivalent to it are named.
    Keep {
        config: String,
        equivalent: Vec<String>,
    },
    /// The fastest safe `config` against the baseline is undecided: more trials.
    Undecided { config: String, baseline: String },
    /// The fastest safe `config`'s figures, or the baseline's, are marked (suspect,
    /// path-bound): nothing to act on until they are measured again.
    Marked { config: String, baseline: String },
    /// No timed configuration is safe.
    NoneSafe,
    /// No timed trial to rank: the answer is about safety and recovery only.
    SafetyOnly,
}

impl ConfigAnswer {
    /// Safe to put a journal on: crash states checked without a failure, no control,
    /// and a journal that a power cut does not empty. Without crash states the speed
    /// half stands alone and safety is not claimed ([`ConfigAnswer::crash_tested`]).
    pub fn safe(&self) -> bool {
        !self.negative_control
            && !self.torn_page_control
            && self.crash_failures == 0
            && self.journal_power_cut != PowerCut::Empties
    }

    pub fn crash_tested(&self) -> bool {
        self.crash_states > 0
    }
}

/// The takeaway of `w`: its configurations in the answer's order (fastest first), each
/// with its comparison with the baseline.
pub fn of(w: &WorkloadAnswer) -> Takeaway {
    let timed: Vec<&ConfigAnswer> = w.configs.iter().filter(|c| c.rate_mean.is_some()).collect();
    if timed.is_empty() {
        return Takeaway {
            advice: Advice::SafetyOnly,
            set_aside: Vec::new(),
        };
    }
    let Some(pick) = timed.iter().position(|c| c.safe()) else {
        return Takeaway {
            advice: Advice::NoneSafe,
            set_aside: timed.iter().map(|c| c.config.clone()).collect(),
        };
    };
    let set_aside: Vec<String> = timed[..pick].iter().map(|c| c.config.clone()).collect();
    let c = timed[pick];
    let baseline = w.baseline.clone().unwrap_or_else(|| c.config.clone());
    let base = w.configs.iter().find(|x| x.config == baseline);
    let marked = |x: &ConfigAnswer| x.suspect || x.path_bound.is_some();
    let equivalent: Vec<String> = timed
        .iter()
        .filter(|x| x.safe())
        .filter(|x| {
            x.vs_baseline
                .as_ref()
                .is_some_and(|v| v.decision == Some(Decision::Equivalent))
        })
        .map(|x| x.config.clone())
        .collect();
    let advice = if c.config == baseline {
        Advice::Keep {
            config: baseline,
            equivalent,
        }
    } else if marked(c) || base.is_some_and(marked) {
        Advice::Marked {
            config: c.config.clone(),
            baseline,
        }
    } else {
        match c.vs_baseline.as_ref().and_then(|v| v.decision) {
            Some(Decision::Different) if c.vs_baseline.as_ref().is_some_and(|v| v.ratio > 1.0) => {
                Advice::Use {
                    config: c.config.clone(),
                    baseline,
                }
            }
            Some(Decision::Equivalent) => Advice::Keep {
                config: baseline,
                equivalent,
            },
            // Decided slower by its mean yet ranked faster cannot happen with one
            // set of means; read it, and a missing test, as undecided.
            _ => Advice::Undecided {
                config: c.config.clone(),
                baseline,
            },
        }
    };
    Takeaway { advice, set_aside }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::answer::tests_support::config;
    use crate::analysis::versus::VersusBaseline;

    fn vs(ratio: f64, decision: Decision) -> Option<VersusBaseline> {
        Some(VersusBaseline {
            baseline: "internal".into(),
            ratio,
            ci_low: Some(ratio * 0.98),
            ci_high: Some(ratio * 1.02),
            decision: Some(decision),
        })
    }

    fn workload(configs: Vec<ConfigAnswer>) -> WorkloadAnswer {
        WorkloadAnswer {
            workload: "w".into(),
            main_phase: Some("create".into()),
            rate_unit: Some("files/s".into()),
            baseline: Some("internal".into()),
            configs,
        }
    }

    #[test]
    fn a_ram_disk_journal_is_set_aside_and_the_fastest_safe_one_is_used() {
        let mut ram = config("ramdisk", 200.0, 40, 0);
        ram.journal_power_cut = PowerCut::Empties;
        ram.vs_baseline = vs(4.0, Decision::Different);
        let mut second = config("second-disk", 90.0, 40, 0);
        second.vs_baseline = vs(1.8, Decision::Different);
        let base = config("internal", 50.0, 40, 0);
        let t = of(&workload(vec![ram, second, base]));
        assert_eq!(
            t.advice,
            Advice::Use {
                config: "second-disk".into(),
                baseline: "internal".into()
            }
        );
        assert_eq!(t.set_aside, vec!["ramdisk".to_string()]);
    }

    #[test]
    fn only_a_decided_difference_is_acted_on() {
        for (decision, want) in [
            (
                Decision::Undecided,
                Advice::Undecided {
                    config: "second-disk".into(),
                    baseline: "internal".into(),
                },
            ),
            (
                Decision::Equivalent,
                Advice::Keep {
                    config: "internal".into(),
                    equivalent: vec!["second-disk".into()],
                },
            ),
        ] {
            let mut second = config("second-disk", 51.0, 40, 0);
            second.vs_baseline = vs(1.02, decision);
            let t = of(&workload(vec![second, config("internal", 50.0, 40, 0)]));
            assert_eq!(t.advice, want, "{decision:?}");
        }
        // A decided difference whose figure is marked suspect is not acted on.
        let mut second = config("second-disk", 90.0, 40, 0);
        second.vs_baseline = vs(1.8, Decision::Different);
        second.suspect = true;
        let t = of(&workload(vec![second, config("internal", 50.0, 40, 0)]));
        assert!(matches!(t.advice, Advice::Marked { .. }), "{t:?}");
    }

    #[test]
    fn a_failed_power_cut_or_a_control_is_never_picked() {
        let mut lost = config("second-disk", 90.0, 40, 3);
        lost.vs_baseline = vs(1.8, Decision::Different);
        let mut control = config("nobarrier", 95.0, 40, 0);
        control.negative_control = true;
        let t = of(&workload(vec![
            control,
            lost,
            config("internal", 50.0, 40, 0),
        ]));
        assert_eq!(
            t.advice,
            Advice::Keep {
                config: "internal".into(),
                equivalent: Vec::new()
            }
        );
        assert_eq!(
            t.set_aside,
            vec!["nobarrier".to_string(), "second-disk".into()]
        );
        let t = of(&workload(vec![config("internal", 50.0, 40, 2)]));
        assert_eq!(t.advice, Advice::NoneSafe);
    }
}
