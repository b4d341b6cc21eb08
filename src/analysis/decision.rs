//! The one rule that turns a ratio's interval into a word: **different** when the
//! whole interval lies outside the noise band, **equivalent** when the whole interval
//! lies inside it (two one-sided tests: each edge of the band is rejected at the
//! interval's level), **undecided** otherwise. Every verdict of a report (summary,
//! answer, tables, JSON, CSV, HTML, `compare`) and the adaptive stopping rule read it
//! from here, so a word can never stand beside an interval that contradicts it.
//!
//! The band is symmetric in ratio, not in percent: ±10% means ratios from 1/1.1
//! (−9.1%) to 1.1 (+10%). A pair is then decided the same way whichever
//! configuration is the reference; a band of ±10% percent would call [1.02×, 1.105×]
//! undecided and its own reciprocal [0.905×, 0.980×] equivalent.

use serde::{Deserialize, Serialize};

use super::ratio::RatioCi;

/// What a ratio's interval says against the noise band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The whole interval lies beyond one edge of the band.
    Different,
    /// The whole interval lies inside the band.
    Equivalent,
    /// The interval reaches across an edge of the band (or is open above and reaches
    /// into it).
    Undecided,
}

impl Decision {
    /// `different`, `equivalent`, `undecided`: the word every exporter prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Different => "different",
            Decision::Equivalent => "equivalent",
            Decision::Undecided => "undecided",
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The band's edges as ratios for a relative band `band` (0.1 = ±10%):
/// `(1 / (1 + band), 1 + band)`.
pub fn band_edges(band: f64) -> (f64, f64) {
    let hi = 1.0 + band.max(0.0);
    (1.0 / hi, hi)
}

/// The decision of interval `ci` against ±`band`. A band of 0 makes "equivalent"
/// unreachable (no interval of positive width fits in it) and "different" the same
/// as "the interval excludes 1".
pub fn of(ci: RatioCi, band: f64) -> Decision {
    let (lo_edge, hi_edge) = band_edges(band);
    let beyond_above = ci.low > hi_edge;
    let beyond_below = ci.high.is_some_and(|h| h < lo_edge);
    let inside = ci.low > lo_edge && ci.high.is_some_and(|h| h < hi_edge);
    if beyond_above || beyond_below {
        Decision::Different
    } else if inside {
        Decision::Equivalent
    } else {
        Decision::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(low: f64, high: Option<f64>) -> RatioCi {
        RatioCi { low, high }
    }

    #[test]
    fn the_issue_examples_are_undecided() {
        // Study 3's 4100K: −9.6% [−13.7%, −5.3%] with a 10% band.
        assert_eq!(of(ci(0.863, Some(0.947)), 0.10), Decision::Undecided);
        // 1.09× [1.05×, 1.14×].
        assert_eq!(of(ci(1.05, Some(1.14)), 0.10), Decision::Undecided);
        // +8.2% [+0.5%, +16.3%].
        assert_eq!(of(ci(1.005, Some(1.163)), 0.10), Decision::Undecided);
    }

    #[test]
    fn whole_intervals_on_one_side_decide() {
        assert_eq!(of(ci(2.11, Some(2.48)), 0.10), Decision::Different);
        assert_eq!(of(ci(0.40, Some(0.88)), 0.10), Decision::Different);
        assert_eq!(of(ci(0.97, Some(1.06)), 0.10), Decision::Equivalent);
        // Open above: different only when its low end is beyond the band.
        assert_eq!(of(ci(1.2, None), 0.10), Decision::Different);
        assert_eq!(of(ci(0.95, None), 0.10), Decision::Undecided);
        // No band: equivalence is unreachable, difference means "excludes 1".
        assert_eq!(of(ci(0.999, Some(1.001)), 0.0), Decision::Undecided);
        assert_eq!(of(ci(1.001, Some(1.002)), 0.0), Decision::Different);
    }

    #[test]
    fn the_decision_does_not_depend_on_which_side_is_the_reference() {
        for (lo, hi) in [
            (1.02, 1.105),
            (0.905, 0.98),
            (0.5, 0.95),
            (1.05, 1.14),
            (0.91, 1.09),
            (1.2, 3.0),
        ] {
            let c = ci(lo, Some(hi));
            assert_eq!(of(c, 0.1), of(c.inverted(), 0.1), "{c:?}");
        }
        let open = ci(1.3, None);
        assert_eq!(of(open, 0.1), of(open.inverted(), 0.1));
    }
}
