//! The confidence interval of a ratio of two mean rates (Fieller's), kept to what a
//! ratio of rates can be: never below 0, and unbounded above when the denominator's
//! mean is too noisy to be told from 0. It is the interval the Welch test of the same
//! pair is dual to: at the same level and degrees of freedom, it excludes 1 exactly
//! when Welch's test rejects "equal means", so a verdict decided by one never
//! contradicts an interval printed from the other.

use serde::{Deserialize, Serialize};

use super::stats;

/// A confidence interval of a ratio of means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioCi {
    /// Never below 0: a rate cannot be negative, so neither can a ratio of rates.
    pub low: f64,
    /// `None`: unbounded above (the denominator's mean is not clearly above 0 at this
    /// level, so no upper bound holds).
    pub high: Option<f64>,
}

impl RatioCi {
    pub fn contains(&self, x: f64) -> bool {
        x >= self.low && self.high.is_none_or(|h| x <= h)
    }

    /// Whether 1 (no difference) is outside the interval.
    pub fn excludes_one(&self) -> bool {
        !self.contains(1.0)
    }

    /// The interval of the reciprocal ratio. Fieller's set is the same set of
    /// reciprocals when numerator and denominator swap, so this is exact.
    pub fn inverted(&self) -> RatioCi {
        RatioCi {
            low: self
                .high
                .map_or(0.0, |h| if h > 0.0 { 1.0 / h } else { 0.0 }),
            high: (self.low > 0.0).then(|| 1.0 / self.low),
        }
    }
}

/// Fieller's confidence interval of mean(num) / mean(den) for independent samples at
/// `level`, with the Welch–Satterthwaite degrees of freedom of the pair (so it is
/// dual to [`stats::welch_with_level`]). `None` with fewer than 2 values on a side,
/// a non-finite value, a denominator mean not above 0 or a negative numerator mean.
///
/// The interval is the set of ratios r with (n - r d)² ≤ t² (v_n + r² v_d), n and d
/// the means and v their squared standard errors, intersected with r ≥ 0. When
/// d² ≤ t² v_d that set is unbounded above; it is returned as such rather than
/// dropped, because "at least 0.62×" still says something.
pub fn fieller(num: &[f64], den: &[f64], level: f64) -> Option<RatioCi> {
    let w = stats::welch_with_level(den, num, level)?;
    let (sn, sd) = (stats::Summary::of(num)?, stats::Summary::of(den)?);
    let (n, d) = (sn.mean, sd.mean);
    if d <= 0.0 || n < 0.0 {
        return None;
    }
    let vn = sn.sd? * sn.sd? / sn.n as f64;
    let vd = sd.sd? * sd.sd? / sd.n as f64;
    let t = stats::t_quantile(level, w.df);
    if !t.is_finite() {
        return None;
    }
    let t2 = t * t;
    // The quadratic a r² - 2 n d r + c ≤ 0.
    let a = d * d - t2 * vd;
    let c = n * n - t2 * vn;
    let disc = d * d * vn + n * n * vd - t2 * vn * vd;
    let out = if a > 0.0 {
        let half = t * disc.max(0.0).sqrt();
        RatioCi {
            low: ((n * d - half) / a).max(0.0),
            high: Some((n * d + half) / a),
        }
    } else if a == 0.0 {
        // Linear: -2 n d r + c ≤ 0.
        RatioCi {
            low: (c / (2.0 * n * d)).max(0.0),
            high: None,
        }
    } else if disc < 0.0 {
        // Every ratio satisfies it: the data bound nothing.
        RatioCi {
            low: 0.0,
            high: None,
        }
    } else {
        // Outside the two roots; with a < 0 the larger root is (n d - t √disc) / a.
        let larger = (n * d - t * disc.sqrt()) / a;
        RatioCi {
            low: larger.max(0.0),
            high: None,
        }
    };
    (out.low.is_finite() && out.high.is_none_or(f64::is_finite)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_solve_the_quadratic_and_hold_the_point() {
        let (num, den) = ([9.0, 10.0, 11.5], [4.0, 5.0, 6.2]);
        let ci = fieller(&num, &den, 0.95).unwrap();
        let (a, b) = (
            stats::Summary::of(&num).unwrap(),
            stats::Summary::of(&den).unwrap(),
        );
        let w = stats::welch(&den, &num).unwrap();
        let t = stats::t_quantile(0.95, w.df);
        let on_edge = |r: f64| {
            let lhs = (a.mean - r * b.mean).powi(2);
            let rhs = t * t * (a.sem().powi(2) + r * r * b.sem().powi(2));
            (lhs - rhs).abs() < 1e-9 * rhs
        };
        let hi = ci.high.expect("a bounded interval");
        assert!(on_edge(ci.low) && on_edge(hi), "{ci:?}");
        assert!(ci.contains(a.mean / b.mean));
        // No variance: the interval is the ratio itself.
        let exact = fieller(&[6.0, 6.0], &[3.0, 3.0], 0.95).unwrap();
        assert_eq!((exact.low, exact.high), (2.0, Some(2.0)));
        // A denominator whose mean is not above 0 has no ratio to bound.
        assert_eq!(fieller(&[1.0, 2.0], &[-1.0, 0.8], 0.95), None);
    }

    #[test]
    fn a_noisy_denominator_leaves_the_interval_open_above_and_never_below_zero() {
        // Two trials a side: about 1 degree of freedom, t = 12.7 at 95%.
        let ci = fieller(&[100.0, 140.0], &[50.0, 90.0], 0.95).unwrap();
        assert_eq!(ci.high, None, "{ci:?}");
        assert!(ci.low >= 0.0 && ci.contains(120.0 / 70.0), "{ci:?}");
        // A numerator not clearly above 0 takes the low end to 0, not below.
        let ci = fieller(&[1.0, 200.0], &[100.0, 101.0], 0.95).unwrap();
        assert_eq!(ci.low, 0.0, "{ci:?}");
    }

    #[test]
    fn the_interval_excludes_one_exactly_when_welch_rejects() {
        let cases: [(&[f64], &[f64]); 4] = [
            (&[10.0, 11.0, 12.0], &[10.5, 11.5, 12.5]),
            (&[20.0, 21.0, 22.0], &[10.0, 11.0, 12.0]),
            (&[100.0, 140.0], &[50.0, 90.0]),
            (&[5.0, 5.0, 5.0], &[4.0, 4.0, 4.0]),
        ];
        for level in [0.95, 0.99, 0.999] {
            for (num, den) in cases {
                let ci = fieller(num, den, level).unwrap();
                let w = stats::welch_with_level(den, num, level).unwrap();
                assert_eq!(
                    ci.excludes_one(),
                    w.p < 1.0 - level,
                    "{num:?} {den:?} {ci:?}"
                );
            }
        }
    }

    #[test]
    fn inverting_swaps_the_roles_exactly() {
        let (num, den) = ([9.0, 10.0, 11.5], [4.0, 5.0, 6.2]);
        let ci = fieller(&num, &den, 0.95).unwrap().inverted();
        let swapped = fieller(&den, &num, 0.95).unwrap();
        assert!((ci.low - swapped.low).abs() < 1e-9);
        assert!((ci.high.unwrap() - swapped.high.unwrap()).abs() < 1e-9);
        let open = RatioCi {
            low: 0.5,
            high: None,
        };
        assert_eq!(
            open.inverted(),
            RatioCi {
                low: 0.0,
                high: Some(2.0)
            }
        );
    }
}
