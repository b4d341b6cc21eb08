//! A configuration against the workload's baseline on the main phase, read from the
//! pair the primary family tested (either way round): what the answer carries per
//! configuration and the takeaway decides by.

use serde::{Deserialize, Serialize};

use super::decision::Decision;
use super::model::PairComparison;

/// A configuration against the baseline on the main phase, as the primary family
/// decided it: mean(config) / mean(baseline), its interval and the decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersusBaseline {
    pub baseline: String,
    pub ratio: f64,
    pub ci_low: Option<f64>,
    /// `None`: unbounded above.
    pub ci_high: Option<f64>,
    pub decision: Option<Decision>,
}

/// `config` against `baseline` on `phase`, from the pair the primary family tested
/// (either way round).
pub fn versus_baseline(
    pairs: &[PairComparison],
    phase: &str,
    config: &str,
    baseline: &str,
) -> Option<VersusBaseline> {
    if config == baseline {
        return None;
    }
    let p = pairs.iter().find(|p| {
        p.phase == phase
            && ((p.a == baseline && p.b == config) || (p.a == config && p.b == baseline))
    })?;
    let ratio = p.ratio?;
    let (ratio, ci_low, ci_high) = if p.a == baseline {
        (ratio, p.ci_low, p.ci_high)
    } else {
        // mean(a)/mean(b) turned round: [1/high, 1/low], open above at a low of 0.
        (
            1.0 / ratio,
            Some(p.ci_high.map_or(0.0, |h| 1.0 / h)),
            p.ci_low.filter(|&l| l > 0.0).map(|l| 1.0 / l),
        )
    };
    Some(VersusBaseline {
        baseline: baseline.to_string(),
        ratio,
        ci_low,
        ci_high,
        decision: p.decision,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_read_the_other_way_round_turns_its_interval_round() {
        let pair = PairComparison {
            a: "second-disk".into(),
            b: "internal".into(),
            phase: "create".into(),
            ratio: Some(0.5),
            ci_low: Some(0.4),
            ci_high: Some(0.625),
            ci_level: Some(0.95),
            p: Some(0.001),
            p_adjusted: Some(0.001),
            family: "primary".into(),
            different: true,
            decision: Some(Decision::Different),
        };
        let v = versus_baseline(&[pair], "create", "second-disk", "internal").unwrap();
        assert_eq!(v.ratio, 2.0);
        assert_eq!((v.ci_low, v.ci_high), (Some(1.6), Some(2.5)));
        assert_eq!(v.decision, Some(Decision::Different));
    }
}
