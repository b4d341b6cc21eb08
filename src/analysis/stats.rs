//! Descriptive statistics and Welch's t-test for comparing configurations.
//!
//! The studies report mean and standard deviation per phase; the report adds a
//! t-based confidence interval and a Welch test so every comparison can say whether
//! a difference is larger than the noise. Welch (not Student) because configurations
//! routinely differ in spread (a RAM-disk journal is steadier than a disk one), and
//! sample sizes differ when trials fail.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of the `ci95_*` fields of [`Summary`] and of [`welch`].
pub const DEFAULT_LEVEL: f64 = 0.95;

/// Mean, spread and a confidence interval of the mean for one sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divisor n - 1); `None` (JSON `null`) when n = 1:
    /// one value has no spread to estimate, which is not a spread of 0.
    pub sd: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the mean from the t distribution with n - 1 degrees
    /// of freedom; `None` when n = 1 (a zero-width interval would claim certainty).
    /// For values that are all 0 or more, `ci95_low` is never below 0.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
}

impl Summary {
    /// Summarises `xs`. `None` when `xs` is empty or holds a non-finite value, so a
    /// NaN can never turn into a plausible-looking figure in a report.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() || !all_finite(xs) {
            return None;
        }
        let n = xs.len();
        let mean = mean(xs);
        let sd = (n >= 2).then(|| sample_variance(xs, mean).sqrt());
        // The mean of huge finite values can overflow; such a sample has no figure.
        if !mean.is_finite() || !sd.unwrap_or(0.0).is_finite() {
            return None;
        }
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut s = Summary {
            n,
            mean,
            sd,
            min,
            max,
            ci95_low: None,
            ci95_high: None,
        };
        if let Some((lo, hi)) = s.ci(DEFAULT_LEVEL) {
            (s.ci95_low, s.ci95_high) = (Some(lo), Some(hi));
        }
        Some(s)
    }

    /// Coefficient of variation, sd / mean. NaN when n = 1 (no sd); infinite or NaN
    /// when the mean is 0.
    pub fn cv(&self) -> f64 {
        self.sd.map_or(f64::NAN, |sd| sd / self.mean)
    }

    /// Standard error of the mean; NaN when n = 1.
    pub fn sem(&self) -> f64 {
        self.sd.map_or(f64::NAN, |sd| sd / (self.n as f64).sqrt())
    }

    /// Confidence interval of the mean at `level` (e.g. 0.90), t-based with n - 1
    /// degrees of freedom; `None` when n < 2. With zero spread it is `(mean, mean)`:
    /// every value was the same.
    ///
    /// # Panics
    /// If `level` is not strictly between 0 and 1.
    pub fn ci(&self, level: f64) -> Option<(f64, f64)> {
        check_level(level);
        let sd = self.sd?;
        if sd == 0.0 {
            return Some((self.mean, self.mean));
        }
        let half = t_quantile(level, (self.n - 1) as f64) * self.sem();
        // The mean of values that cannot be negative (rates, times) cannot be either:
        // the interval is cut at 0 rather than claim the impossible. Cutting an
        // interval to where the mean can lie keeps its coverage.
        let floor = if self.min >= 0.0 {
            0.0
        } else {
            f64::NEG_INFINITY
        };
        Some(((self.mean - half).max(floor), self.mean + half))
    }
}

/// Result of Welch's unequal-variance t-test of `b` against `a`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// mean(b) - mean(a).
    pub diff: f64,
    /// diff / standard error; ±infinity when both samples have zero variance but
    /// different means.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Confidence interval of `diff` at the requested level (t-based, Welch df).
    pub ci_low: f64,
    pub ci_high: f64,
    /// Confidence level of the interval, e.g. 0.95.
    pub level: f64,
}

/// Welch's t-test at the 95% level; see [`welch_with_level`].
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    welch_with_level(a, b, DEFAULT_LEVEL)
}

/// Welch's t-test of `b` against `a` with a `level` confidence interval of
/// mean(b) - mean(a).
///
/// `None` when either side has fewer than 2 values (no variance estimate) or holds a
/// non-finite value.
///
/// Degenerate case, both variances 0 (e.g. identical counts from a deterministic
/// workload): the Welch–Satterthwaite df is 0/0, so df is taken as n_a + n_b - 2
/// (the pooled df, which is what Welch's df tends to when the variances shrink
/// together). Equal means then give t = 0, p = 1; different means give t = ±inf,
/// p = 0. The interval collapses to `diff..diff` since there is no noise to widen it.
///
/// # Panics
/// If `level` is not strictly between 0 and 1.
pub fn welch_with_level(a: &[f64], b: &[f64], level: f64) -> Option<Welch> {
    check_level(level);
    if a.len() < 2 || b.len() < 2 || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    // Squared standard errors of each mean.
    let sa = sample_variance(a, ma) / na;
    let sb = sample_variance(b, mb) / nb;
    let diff = mb - ma;
    let se2 = sa + sb;
    // Values so large that the means or variances overflow give no test at all,
    // rather than a NaN p-value.
    if !diff.is_finite() || !se2.is_finite() {
        return None;
    }
    if se2 == 0.0 {
        return Some(zero_variance_welch(diff, na + nb - 2.0, level));
    }
    let se = se2.sqrt();
    let t = diff / se;
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    // 2 * sf(|t|) rather than 2 * (1 - cdf) keeps precision for tiny p-values.
    let p = (2.0 * dist.sf(t.abs())).min(1.0);
    let half = dist.inverse_cdf(upper_tail_prob(level)) * se;
    Some(Welch {
        diff,
        t,
        df,
        p,
        ci_low: diff - half,
        ci_high: diff + half,
        level,
    })
}

/// Result of the Mann-Whitney U test of `b` against `a` (two-sided).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of `b`: the number of pairs (a_i, b_j) with b_j > a_i, ties counting 1/2.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (no ties, both sides at most [`MW_EXACT_MAX`] values) or
    /// from the normal approximation with tie and continuity correction.
    pub exact: bool,
}

/// Largest side for which the exact distribution of U is used.
pub const MW_EXACT_MAX: usize = 20;

/// The Mann-Whitney U test: a rank test that does not assume normal rates, so a
/// single outlier trial cannot carry a verdict. `None` when a side has fewer than 4
/// values (with 3 per side the smallest possible two-sided p is 0.1) or holds a
/// non-finite value.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.len() < 4 || b.len() < 4 || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let u: f64 = b
        .iter()
        .map(|&y| {
            a.iter()
                .map(|&x| match y.partial_cmp(&x) {
                    Some(std::cmp::Ordering::Greater) => 1.0,
                    Some(std::cmp::Ordering::Equal) => 0.5,
                    _ => 0.0,
                })
                .sum::<f64>()
        })
        .sum();
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|&&x| x == all[i]).count();
        let t = j as f64;
        tie_term += t * t * t - t;
        i += j;
    }
    let mean_u = (n1 * n2) as f64 / 2.0;
    if tie_term == 0.0 && n1 <= MW_EXACT_MAX && n2 <= MW_EXACT_MAX {
        // Two-sided: twice the tail of the smaller of U and n1*n2 - U.
        let low = u.min((n1 * n2) as f64 - u).round() as usize;
        let counts = u_distribution(n1, n2);
        let total: f64 = counts.iter().sum();
        let tail: f64 = counts[..=low].iter().sum();
        return Some(MannWhitney {
            u,
            p: (2.0 * tail / total).min(1.0),
            exact: true,
        });
    }
    let n = (n1 + n2) as f64;
    let var = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        1.0 // every value tied
    } else {
        let z = ((u - mean_u).abs() - 0.5).max(0.0) / var.sqrt();
        let normal = statrs::distribution::Normal::new(0.0, 1.0).ok()?;
        (2.0 * normal.sf(z)).min(1.0)
    };
    Some(MannWhitney { u, p, exact: false })
}

/// How many of the C(n1 + n2, n1) orderings without ties give each U = 0..=n1*n2:
/// the recurrence f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // table[j][u] for the current i (first sample size) and j = 0..=n2.
    let max = n1 * n2;
    let mut prev: Vec<Vec<f64>> = (0..=n2)
        .map(|_| {
            let mut v = vec![0.0; max + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for u in 0..=i * j {
                let from_i = if u >= j { prev[j][u - j] } else { 0.0 };
                cur[j][u] = from_i + cur[j - 1][u];
            }
        }
        prev = cur;
    }
    prev.swap_remove(n2)
}

fn zero_variance_welch(diff: f64, df: f64, level: f64) -> Welch {
    let (t, p) = if diff == 0.0 {
        (0.0, 1.0)
    } else {
        (diff.signum() * f64::INFINITY, 0.0)
    };
    Welch {
        diff,
        t,
        df,
        p,
        ci_low: diff,
        ci_high: diff,
        level,
    }
}

/// Two-sided critical value of the t distribution: the `(1 + level) / 2` quantile.
pub fn t_quantile(level: f64, df: f64) -> f64 {
    check_level(level);
    StudentsT::new(0.0, 1.0, df)
        .map(|d| d.inverse_cdf(upper_tail_prob(level)))
        .unwrap_or(f64::NAN)
}

fn upper_tail_prob(level: f64) -> f64 {
    (1.0 + level) / 2.0
}

fn check_level(level: f64) {
    assert!(
        level > 0.0 && level < 1.0,
        "confidence level must be between 0 and 1 (exclusive), got {level}"
    );
}

fn all_finite(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Holm–Bonferroni adjusted p-values of a family of tests, in the order given.
///
/// The i-th smallest of m p-values is multiplied by m - i + 1, the products are made
/// non-decreasing in that order (an adjusted p is never below that of a smaller raw
/// p), and capped at 1. Rejecting where the adjusted p is below alpha keeps the
/// chance of any false positive in the family at most alpha, whatever the dependence
/// between the tests, and rejects at least as much as plain Bonferroni. A NaN counts
/// as 1 (no evidence).
pub fn holm(ps: &[f64]) -> Vec<f64> {
    holm_steps(ps).into_iter().map(|s| s.adjusted).collect()
}

/// One test's place in Holm's step-down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HolmStep {
    /// Its adjusted p ([`holm`]).
    pub adjusted: f64,
    /// Its rank among the p-values, smallest first (ties in the order given): Holm
    /// tests it at alpha / (m - rank).
    pub rank: usize,
}

/// [`holm`], with each test's rank, for a caller that also needs the level each test
/// was judged at.
pub fn holm_steps(ps: &[f64]) -> Vec<HolmStep> {
    let m = ps.len();
    let clean = |p: f64| if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) };
    let mut order: Vec<usize> = (0..m).collect();
    // Stable: ties keep their order.
    order.sort_by(|&i, &j| clean(ps[i]).total_cmp(&clean(ps[j])));
    let mut out = vec![
        HolmStep {
            adjusted: 1.0,
            rank: 0
        };
        m
    ];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * clean(ps[i])).min(1.0));
        out[i] = HolmStep {
            adjusted: running,
            rank,
        };
    }
    out
}

/// A p-value valid under optional stopping with at most `looks` interim analyses:
/// `min(1, looks * p)` (Bonferroni over the looks). Whichever look a run stopped at,
/// its p is one of the `looks` p-values it could have stopped on, and the chance that
/// any of them is below alpha / looks under no difference is at most alpha.
pub fn sequential_p(p: f64, looks: u32) -> f64 {
    (p * f64::from(looks.max(1))).min(1.0)
}

/// The `q` quantile (0 to 1) of `xs`, interpolating linearly between the two nearest
/// ranks: position `(n - 1) * q` of the sorted values (NumPy's default, Hyndman and
/// Fan's type 7), so the median of an even count is the mean of the middle two and
/// a p95 of few values is not simply the largest. `None` when `xs` is empty or holds
/// a non-finite value.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() || !all_finite(xs) || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Two-pass sample variance (divisor n - 1): subtracting the mean first avoids the
/// cancellation of the sum-of-squares formula on large, close values such as rates.
fn sample_variance(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    ss / (xs.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    //! Reference values were computed independently with SciPy 1.17.1 (NumPy
    //! `mean`/`std(ddof=1)`, `scipy.stats.t.interval`, `scipy.stats.t.ppf`,
    //! `scipy.stats.ttest_ind(b, a, equal_var=False)` and its
    //! `.confidence_interval(level)`), and pasted here as literals.
    use super::*;

    fn close(actual: f64, expected: f64, tol: f64) {
        assert!(
            (actual - expected).abs() <= tol * expected.abs().max(1.0),
            "expected {expected}, got {actual}"
        );
    }

    const X: [f64; 5] = [10.2, 11.5, 9.8, 12.1, 10.9];
    const A: [f64; 6] = [20.1, 22.3, 19.8, 21.5, 20.9, 23.0];

    #[test]
    fn summary_of_small_sample() {
        let s = Summary::of(&X).unwrap();
        assert_eq!(s.n, 5);
        close(s.mean, 10.9, 1e-12);
        close(s.sd.unwrap(), 0.9354143466934852, 1e-12);
        assert_eq!(s.min, 9.8);
        assert_eq!(s.max, 12.1);
        // scipy.stats.t.interval(0.95, 4, loc=mean, scale=sem)
        close(s.ci95_low.unwrap(), 9.738529682307405, 1e-9);
        close(s.ci95_high.unwrap(), 12.061470317692596, 1e-9);
        close(s.cv(), 0.9354143466934852 / 10.9, 1e-12);
    }

    #[test]
    fn summary_ci_at_other_level() {
        let s = Summary::of(&X).unwrap();
        let (lo, hi) = s.ci(0.90).unwrap();
        close(lo, 10.00818450559268, 1e-9);
        close(hi, 11.79181549440732, 1e-9);
    }

    #[test]
    fn t_quantiles_match_scipy() {
        close(t_quantile(0.95, 4.0), 2.7764451051977934, 1e-9);
        // Non-integer df, as Welch produces.
        close(t_quantile(0.95, 2.5), 3.5746548420036817, 1e-9);
    }

    #[test]
    fn holm_matches_a_hand_computed_example() {
        // Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> 0.06
        // (kept monotone: never below the adjusted p of a smaller raw p).
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            close(*a, w, 1e-12);
        }
        // Capped at 1: 0.4*3, 0.6*2 and 0.9*1 all become 1.
        assert_eq!(holm(&[0.6, 0.4, 0.9]), vec![1.0, 1.0, 1.0]);
        // One test: unchanged; none: empty; NaN: no evidence.
        assert_eq!(holm(&[0.03]), vec![0.03]);
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        // Ties share the larger multiplier's successor, monotone: 0.02*2, 0.02*1 -> 0.04.
        assert_eq!(holm(&[0.02, 0.02]), vec![0.04, 0.04]);
    }

    #[test]
    fn sequential_p_is_bonferroni_over_the_looks() {
        close(sequential_p(0.01, 4), 0.04, 1e-12);
        assert_eq!(sequential_p(0.4, 3), 1.0);
        assert_eq!(sequential_p(0.02, 0), 0.02);
    }

    #[test]
    fn summary_edge_cases() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        let one = Summary::of(&[42.0]).unwrap();
        assert_eq!(one.n, 1);
        // One value: no spread and no interval, not a zero-width one.
        assert_eq!(one.sd, None);
        assert_eq!((one.ci95_low, one.ci95_high), (None, None));
        assert_eq!(one.ci(0.9), None);
        assert!(one.cv().is_nan());
        assert_eq!((one.min, one.max), (42.0, 42.0));
        let json = serde_json::to_value(one).unwrap();
        assert!(json["sd"].is_null() && json["ci95_low"].is_null(), "{json}");
        // Identical values: a real spread of 0 and a zero-width interval.
        let same = Summary::of(&[3.0, 3.0]).unwrap();
        assert_eq!((same.sd, same.ci95_low), (Some(0.0), Some(3.0)));
        // Finite values whose mean overflows have no summary.
        assert!(Summary::of(&[f64::MAX, f64::MAX]).is_none());
    }

    #[test]
    fn welch_unequal_variance_and_size_not_significant() {
        let b = [24.5, 30.2, 27.8, 22.1];
        let w = welch(&A, &b).unwrap();
        close(w.diff, 4.883333333333333, 1e-12);
        close(w.t, 2.6303905045116625, 1e-10);
        close(w.df, 3.4937107205453204, 1e-10);
        close(w.p, 0.06683743367734248, 1e-8);
        close(w.ci_low, -0.5795334247017889, 1e-8);
        close(w.ci_high, 10.346200091368456, 1e-8);
        assert_eq!(w.level, 0.95);
        let w90 = welch_with_level(&A, &b, 0.90).unwrap();
        close(w90.ci_low, 0.7548666396301478, 1e-8);
        close(w90.ci_high, 9.011800027036516, 1e-8);
        assert_eq!(w90.p, w.p, "the level changes the interval, not the test");
    }

    #[test]
    fn welch_significant_difference() {
        let b = [25.5, 27.2, 26.8, 24.1];
        let w = welch(&A, &b).unwrap();
        close(w.t, 5.347340517881567, 1e-10);
        close(w.df, 5.996050991948305, 1e-10);
        close(w.p, 0.0017526630291328626, 1e-8);
        close(w.ci_low, 2.5128084810788813, 1e-8);
        close(w.ci_high, 6.753858185587784, 1e-8);
        // Swapping the sides flips the sign, not the p-value.
        let r = welch(&b, &A).unwrap();
        close(r.t, -5.347340517881567, 1e-10);
        close(r.p, w.p, 1e-12);
        close(r.ci_low, -6.753858185587784, 1e-8);
    }

    #[test]
    fn welch_tiny_p_keeps_precision() {
        let a = [100.0, 101.0, 99.5, 100.5];
        let b = [200.0, 201.0, 199.0, 200.5, 202.0];
        let w = welch(&a, &b).unwrap();
        close(w.t, 168.45369410856958, 1e-10);
        close(w.df, 6.518796992481203, 1e-10);
        // Relative tolerance on a value near 4e-13: 1 - cdf would have lost it.
        assert!((w.p - 4.146665677091391e-13).abs() < 1e-6 * 4.146665677091391e-13);
    }

    #[test]
    fn welch_nearly_identical_means() {
        let a = [100.0, 104.0, 98.0, 101.0, 97.0];
        let b = [99.0, 103.0, 102.0, 96.0, 100.5, 101.5, 98.5];
        let w = welch(&a, &b).unwrap();
        close(w.t, 0.04682929057908337, 1e-9);
        close(w.df, 8.00277104260478, 1e-10);
        close(w.p, 0.9637968144255067, 1e-9);
        close(w.ci_low, -3.44570038826481, 1e-8);
        close(w.ci_high, 3.588557531121949, 1e-8);
    }

    #[test]
    fn welch_one_side_without_variance() {
        // df falls back to n_b - 1 = 3 by the Welch formula itself.
        let w = welch(&[5.0, 5.0, 5.0], &[6.0, 7.0, 8.0, 6.5]).unwrap();
        close(w.t, 4.3915503282684, 1e-10);
        close(w.df, 3.0, 1e-12);
        close(w.p, 0.021875398782757818, 1e-8);
        close(w.ci_low, 0.5162345581019925, 1e-8);
        close(w.ci_high, 3.2337654418980075, 1e-8);
    }

    #[test]
    fn welch_identical_samples_have_p_one() {
        let w = welch(&A, &A).unwrap();
        assert_eq!(w.diff, 0.0);
        assert_eq!(w.t, 0.0);
        close(w.p, 1.0, 1e-12);
        assert!(w.ci_low < 0.0 && w.ci_high > 0.0);
    }

    #[test]
    fn welch_both_variances_zero() {
        let same = welch(&[3.0, 3.0], &[3.0, 3.0, 3.0]).unwrap();
        assert_eq!((same.t, same.p, same.df), (0.0, 1.0, 3.0));
        assert_eq!((same.ci_low, same.ci_high), (0.0, 0.0));
        let differ = welch(&[3.0, 3.0], &[4.0, 4.0, 4.0]).unwrap();
        assert_eq!(differ.p, 0.0);
        assert_eq!(differ.t, f64::INFINITY);
        assert_eq!(differ.df, 3.0);
        assert_eq!((differ.ci_low, differ.ci_high), (1.0, 1.0));
        let lower = welch(&[4.0, 4.0], &[3.0, 3.0]).unwrap();
        assert_eq!(lower.t, f64::NEG_INFINITY);
    }

    #[test]
    fn welch_needs_two_values_per_side() {
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
        assert!(welch(&[1.0, 2.0], &[3.0]).is_none());
        assert!(welch(&[], &[]).is_none());
        assert!(welch(&[1.0, f64::INFINITY], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn mann_whitney_exact_small_samples() {
        // All of b above all of a: U = 16, P(U <= 0) = 1 / C(8, 4) = 1/70, p = 2/70.
        let m = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!(m.u, 16.0);
        assert!(m.exact);
        close(m.p, 2.0 / 70.0, 1e-12);
        // Alternating: U = 10, the other side's 6; orderings with U <= 6 are the
        // partitions of 0..=6 into at most 4 parts of at most 4:
        // 1 + 1 + 2 + 3 + 5 + 5 + 7 = 24, so p = 2 * 24 / 70.
        let m = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).unwrap();
        assert_eq!(m.u, 10.0);
        close(m.p, 48.0 / 70.0, 1e-12);
        // Symmetric: swapping sides gives U' = n1*n2 - U and the same p.
        let r = mann_whitney(&[2.0, 4.0, 6.0, 8.0], &[1.0, 3.0, 5.0, 7.0]).unwrap();
        assert_eq!(r.u, 6.0);
        close(r.p, m.p, 1e-12);
        // 4 and 5 values, fully separated: p = 2 / C(9, 4) = 2/126.
        let m = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[9.0, 8.0, 7.0, 6.0, 5.0]).unwrap();
        close(m.p, 2.0 / 126.0, 1e-12);
    }

    #[test]
    fn mann_whitney_normal_approximation_with_ties() {
        // a = 1 2 2 3, b = 2 3 3 4. U(b) = 0.5*... by pairs: 2 beats 1 and ties two 2s
        // (1 + 0.5 + 0.5 = 2), each 3 beats 1, 2, 2 and ties 3 (3.5), 4 beats all (4):
        // U = 2 + 3.5 + 3.5 + 4 = 13. Ties: three 2s, three 3s: sum(t^3 - t) = 48.
        // var = 16/12 * (9 - 48/56) = 10.857142857; z = (|13 - 8| - 0.5) / sqrt(var)
        // = 1.365698; p = 2 * (1 - Phi(z)) = 0.172034.
        let m = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 3.0, 4.0]).unwrap();
        assert_eq!(m.u, 13.0);
        assert!(!m.exact);
        let z: f64 = 4.5 / (16.0f64 / 12.0 * (9.0 - 48.0 / 56.0)).sqrt();
        close(z, 1.365_698_2, 1e-6);
        close(m.p, 0.172_034, 1e-4);
        // Everything tied: no evidence at all.
        assert_eq!(mann_whitney(&[5.0; 4], &[5.0; 4]).unwrap().p, 1.0);
    }

    #[test]
    fn mann_whitney_needs_four_values_per_side() {
        assert!(mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0, 7.0]).is_none());
        assert!(mann_whitney(&[1.0, 2.0, 3.0, f64::NAN], &[4.0, 5.0, 6.0, 7.0]).is_none());
    }

    #[test]
    #[should_panic(expected = "confidence level")]
    fn invalid_level_panics() {
        welch_with_level(&A, &A, 95.0);
    }
}
