//! The words of verdicts, written only here: "12.3% faster [+8.1%, +16.5%]",
//! "equivalent within ±10% (...)", "undecided against ±10% (...)", "too few trials", the " (suspect: ...)" suffix, and the
//! p-value and level expressions the tables and verdict lines share. The analysis
//! decides the typed [`Outcome`] and its figures; every exporter words it through
//! [`Wording`], so no code reads a verdict back from its text.

use crate::analysis::{Analysis, Outcome, PhaseComparison, WorkloadAnalysis};

/// What the words of one workload's comparisons need besides each comparison's own
/// figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Wording {
    /// [`crate::analysis::ReportOptions::noise_band`].
    pub noise_band: f64,
    /// The report's confidence level: an interval at another level names its own.
    pub confidence: f64,
    /// Phases shorter than this many seconds are suspect.
    pub suspect_below_secs: f64,
    /// Phases whose baseline mean rate is not above 0: their comparisons are not
    /// comparable for that reason rather than for invalid values.
    pub zero_baseline_phases: Vec<String>,
}

impl Wording {
    /// The wording of workload `w`'s comparisons in `a`.
    pub fn of(w: &WorkloadAnalysis, a: &Analysis) -> Self {
        let base = w
            .configs
            .iter()
            .find(|c| Some(&c.label) == w.baseline.as_ref());
        let zero_baseline_phases = base
            .map(|b| {
                b.phases
                    .iter()
                    .filter(|p| p.rate.is_some_and(|r| r.mean <= 0.0))
                    .map(|p| p.phase.clone())
                    .collect()
            })
            .unwrap_or_default();
        Self {
            noise_band: a.noise_band,
            confidence: a.confidence,
            suspect_below_secs: a.suspect_below_secs,
            zero_baseline_phases,
        }
    }

    /// The whole verdict, as the CSV and JSON exports carry it: the outcome in words,
    /// with " (suspect: phase < 60 s)" appended when a side's phase is suspect.
    pub fn verdict(&self, c: &PhaseComparison) -> String {
        let words = self.outcome(c);
        if c.suspect {
            format!("{words} (suspect: phase < {} s)", self.suspect_below_secs)
        } else {
            words
        }
    }

    /// The outcome in words, without the suspect suffix (a table cell carries a `*`
    /// instead); never empty. A decided outcome carries the interval it was decided
    /// by: "12.3% faster [+8.1%, +16.5%] at 99%", "equivalent within ±10% (-1.2%
    /// [-3.1%, +4.0%])", "undecided against ±10% (+8.2% [+0.5%, +16.3%] reaches
    /// across the band)".
    pub fn outcome(&self, c: &PhaseComparison) -> String {
        let pct = c.pct.unwrap_or(0.0);
        let interval = self.interval(c);
        let band = self.band();
        match c.outcome {
            Outcome::Faster | Outcome::Slower => {
                format!("{}{interval}", verdict_text(pct))
            }
            Outcome::Equivalent => format!("equivalent within {band} ({pct:+.1}%{interval})"),
            Outcome::Undecided => {
                format!("undecided against {band} ({pct:+.1}%{interval} reaches across the band)")
            }
            Outcome::TooFewTrials | Outcome::NotComparable => {
                let (head, why) = self.group(c);
                format!("{head}{why}")
            }
        }
    }

    /// " [+8.1%, +16.5%] at 99%": the interval the outcome was decided by, with its
    /// level where it is not the report's; empty without one.
    fn interval(&self, c: &PhaseComparison) -> String {
        let Some(lo) = c.ci_low_pct else {
            return String::new();
        };
        let level = c
            .ci_level
            .filter(|l| (l - self.confidence).abs() > 1e-12)
            .map(|l| format!(" at {}%", fmt_ci_level(l)))
            .unwrap_or_default();
        format!(" {}{level}", fmt_pct_ci(lo, c.ci_high_pct))
    }

    /// "±10%".
    pub fn band(&self) -> String {
        fmt_band(self.noise_band)
    }

    /// How a verdict line groups phases that are not different: the words they
    /// share, and a reason that differs between groups of the same words
    /// (" (baseline rate is 0)"). The figures are left out: they are in the table.
    pub fn group(&self, c: &PhaseComparison) -> (String, &'static str) {
        let head = match c.outcome {
            Outcome::Faster => "faster".to_string(),
            Outcome::Slower => "slower".to_string(),
            Outcome::Equivalent => format!("equivalent within {}", self.band()),
            Outcome::Undecided => format!("undecided against {}", self.band()),
            Outcome::TooFewTrials => "too few trials".to_string(),
            Outcome::NotComparable => "not comparable".to_string(),
        };
        let why = match c.outcome {
            Outcome::NotComparable if self.zero_baseline_phases.contains(&c.phase) => {
                " (baseline rate is 0)"
            }
            Outcome::NotComparable => " (invalid values)",
            _ => "",
        };
        (head, why)
    }
}

/// What an outcome says without its figures, for comparing verdicts across runs
/// (adaptive replay): faster, slower, equivalent, undecided, or why there is no test.
pub fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Faster => "faster",
        Outcome::Slower => "slower",
        Outcome::Equivalent => "equivalent",
        Outcome::Undecided => "undecided",
        Outcome::TooFewTrials => "too few trials",
        Outcome::NotComparable => "not comparable",
    }
}

/// "p = 0.03, adjusted p = 0.21", or just "p = 0.03" when the adjustment changed
/// nothing (a family of one).
pub(crate) fn p_pair(p: f64, adjusted: f64, spaced: bool) -> String {
    if p_expr(p, spaced) == p_expr(adjusted, spaced) {
        p_expr(p, spaced)
    } else {
        format!(
            "{}, adjusted {}",
            p_expr(p, spaced),
            p_expr(adjusted, spaced)
        )
    }
}

/// A noise band as the words print it: 0.1 -> "±10%".
pub(crate) fn fmt_band(band: f64) -> String {
    format!("±{}%", fmt_num_short(band * 100.0))
}

/// 2, 2.5: a percentage without trailing zeros.
pub(crate) fn fmt_num_short(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "12.3% faster", "8.1% slower": a difference's size and direction.
pub(crate) fn verdict_text(pct: f64) -> String {
    let direction = if pct > 0.0 { "faster" } else { "slower" };
    let magnitude = pct.abs();
    // Keep a tiny but real difference (a band of 0) from printing as "0.0% faster".
    if magnitude < 0.1 {
        format!("{magnitude:.2}% {direction}")
    } else {
        format!("{magnitude:.1}% {direction}")
    }
}

/// The significance level as a short decimal: 0.05, 0.01, 0.005.
pub(crate) fn fmt_alpha(alpha: f64) -> String {
    let s = format!("{alpha:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "p = 0.41" (`spaced`) or "p=0.41": two decimals for ordinary p-values, three near
/// and below 0.05 so significance is visible, and a floor below which digits mean
/// nothing.
pub(crate) fn p_expr(p: f64, spaced: bool) -> String {
    let (rel, value) = if p >= 0.1 {
        ("=", format!("{p:.2}"))
    } else if p >= 0.001 {
        ("=", format!("{p:.3}"))
    } else {
        ("<", "0.001".to_string())
    };
    if spaced {
        format!("p {rel} {value}")
    } else {
        format!("p{rel}{value}")
    }
}

pub(crate) fn fmt_level(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}")
    } else {
        format!("{pct}")
    }
}
/// A decision level as a percentage with as many decimals as show how far it is from
/// 100%: 95, 98.3, 99.58, 99.958.
pub(crate) fn fmt_ci_level(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        return format!("{pct:.0}");
    }
    let gap = (100.0 - pct).max(1e-9);
    let d = ((-gap.log10()).floor() as i64 + 2).clamp(1, 6) as usize;
    format!("{pct:.d$}")
}

/// A ratio's interval with its unit: "[1.08×, 1.38×]", "[0.62×, ∞)" when it is
/// unbounded above.
pub(crate) fn fmt_ratio_ci(low: f64, high: Option<f64>) -> String {
    match high {
        Some(h) => format!("[{}×, {}×]", fmt_ratio(low), fmt_ratio(h)),
        None => format!("[{}×, ∞)", fmt_ratio(low)),
    }
}

/// A percentage change's interval with its unit: "[+8.1%, +16.5%]", "[-38.0%, +∞)".
pub(crate) fn fmt_pct_ci(low: f64, high: Option<f64>) -> String {
    match high {
        Some(h) => format!("[{low:+.1}%, {h:+.1}%]"),
        None => format!("[{low:+.1}%, +∞)"),
    }
}

/// Two decimals, three when the ratio is within 1% of 1 (so 1.004 does not read as
/// "1.00× as fast").
pub(crate) fn fmt_ratio(r: f64) -> String {
    if (r - 1.0).abs() < 0.01 {
        format!("{r:.3}")
    } else {
        format!("{r:.2}")
    }
}

/// Three significant digits, never scientific notation: 1234, 12.3, 0.0812.
pub(crate) fn fmt_sig(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 || !a.is_finite() {
        return format!("{x}");
    }
    let d = if a >= 100.0 {
        0
    } else {
        // 10 -> 1, 1 -> 2, 0.1 -> 3, 0.01 -> 4, ...; at most 9.
        (2 - a.log10().floor() as i64).clamp(0, 9) as usize
    };
    format!("{x:.d$}")
}
