//! Recovery as a property of a configuration, not a median of whichever states
//! happened to be timed: the file system's recovery time against how much of the
//! journal was live at the cut (a straight line fitted by least squares), the worst
//! recovery measured, and what the line predicts, with its interval, at the fullest
//! journal the workload left in any state. A person sizing a journal plans on the
//! upper end of that interval, and on the cost per live block.

use serde::{Deserialize, Serialize};

use super::stats::t_quantile;
use crate::results::crash::CrashRecord;

/// Confidence of the slope's interval and of the prediction at the fullest journal.
pub const MODEL_LEVEL: f64 = 0.95;

/// The timed states' recovery against the journal's live blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryModel {
    /// Timed states with a live-journal count: the points of the fit.
    pub points: usize,
    /// The longest recovery measured (s), and the live blocks of its state.
    pub worst_s: f64,
    pub worst_blocks: u64,
    /// The most live journal blocks of any state of this configuration (timed or not):
    /// the fullest journal the workload left.
    pub fullest_blocks: u64,
    /// Fitted seconds at an empty journal, and per 1000 live blocks, with the
    /// slope's interval at [`MODEL_LEVEL`] (`None` with fewer than 3 points or no
    /// spread of live blocks).
    pub intercept_s: Option<f64>,
    pub per_kblock_s: Option<f64>,
    pub per_kblock_low_s: Option<f64>,
    pub per_kblock_high_s: Option<f64>,
    /// Share of the variance of the times the line explains.
    pub r2: Option<f64>,
    /// The line at `fullest_blocks`, with its prediction interval (one new state's
    /// recovery, not the mean's) at [`MODEL_LEVEL`].
    pub at_fullest_s: Option<f64>,
    pub at_fullest_low_s: Option<f64>,
    pub at_fullest_high_s: Option<f64>,
}

impl RecoveryModel {
    /// What a person plans on: the larger of the worst measured recovery and the
    /// upper end of the prediction at the fullest journal.
    pub fn plan_s(&self) -> f64 {
        self.at_fullest_high_s
            .map_or(self.worst_s, |h| h.max(self.worst_s))
    }
}

/// The model of one configuration x workload's records; `None` when no timed state
/// records how much of the journal was live (XFS, no timing).
pub fn fit(recs: &[&CrashRecord]) -> Option<RecoveryModel> {
    let pts: Vec<(f64, f64)> = recs
        .iter()
        .filter_map(|r| {
            Some((
                r.journal_live?.blocks as f64,
                r.timings.as_ref()?.mount_seconds,
            ))
        })
        .filter(|(_, y)| y.is_finite())
        .collect();
    let (worst_blocks, worst_s) = pts.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let fullest_blocks = recs
        .iter()
        .filter_map(|r| r.journal_live.map(|l| l.blocks))
        .max()
        .unwrap_or(0);
    let mut m = RecoveryModel {
        points: pts.len(),
        worst_s,
        worst_blocks: worst_blocks as u64,
        fullest_blocks,
        intercept_s: None,
        per_kblock_s: None,
        per_kblock_low_s: None,
        per_kblock_high_s: None,
        r2: None,
        at_fullest_s: None,
        at_fullest_low_s: None,
        at_fullest_high_s: None,
    };
    if let Some(line) = Line::of(&pts) {
        let t = t_quantile(MODEL_LEVEL, (pts.len() - 2) as f64);
        let half = t * line.slope_se;
        m.intercept_s = Some(line.intercept);
        m.per_kblock_s = Some(line.slope * 1000.0);
        m.per_kblock_low_s = Some((line.slope - half) * 1000.0);
        m.per_kblock_high_s = Some((line.slope + half) * 1000.0);
        m.r2 = line.r2;
        let x0 = fullest_blocks as f64;
        let y0 = line.intercept + line.slope * x0;
        let half = t * line.prediction_se(x0);
        m.at_fullest_s = Some(y0);
        // A recovery takes no less than no time.
        m.at_fullest_low_s = Some((y0 - half).max(0.0));
        m.at_fullest_high_s = Some(y0 + half);
    }
    Some(m)
}

/// A least-squares line with what its intervals need.
pub(crate) struct Line {
    pub(crate) intercept: f64,
    pub(crate) slope: f64,
    pub(crate) slope_se: f64,
    /// Residual standard deviation.
    s: f64,
    n: f64,
    mean_x: f64,
    sxx: f64,
    pub(crate) r2: Option<f64>,
}

impl Line {
    /// `None` with fewer than 3 points or all at one `x`.
    pub(crate) fn of(pts: &[(f64, f64)]) -> Option<Line> {
        if pts.len() < 3 {
            return None;
        }
        let n = pts.len() as f64;
        let mean_x = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_y = pts.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = pts.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let syy: f64 = pts.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let intercept = mean_y - slope * mean_x;
        let sse: f64 = pts
            .iter()
            .map(|p| (p.1 - intercept - slope * p.0).powi(2))
            .sum();
        let s = (sse / (n - 2.0)).sqrt();
        Some(Line {
            intercept,
            slope,
            slope_se: s / sxx.sqrt(),
            s,
            n,
            mean_x,
            sxx,
            r2: (syy > 0.0).then(|| 1.0 - sse / syy),
        })
    }

    /// Standard error of one new observation at `x0`.
    pub(crate) fn prediction_se(&self, x0: f64) -> f64 {
        self.s * (1.0 + 1.0 / self.n + (x0 - self.mean_x).powi(2) / self.sxx).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::crash::{JournalLive, RecoveryTimes};

    fn rec(blocks: u64, seconds: Option<f64>) -> CrashRecord {
        CrashRecord {
            journal_live: Some(JournalLive {
                transactions: 1,
                blocks,
            }),
            timings: seconds.map(|s| RecoveryTimes {
                mount_seconds: s,
                ..RecoveryTimes::default()
            }),
            ..CrashRecord::test_default()
        }
    }

    #[test]
    fn an_exact_line_is_found_with_a_zero_width_interval() {
        // 0.1 s + 2 ms per block, timed at 0..400; the fullest state (1000) untimed.
        let recs: Vec<CrashRecord> = [0u64, 100, 200, 300, 400]
            .iter()
            .map(|&b| rec(b, Some(0.1 + 0.002 * b as f64)))
            .chain([rec(1000, None)])
            .collect();
        let refs: Vec<&CrashRecord> = recs.iter().collect();
        let m = fit(&refs).unwrap();
        assert_eq!(m.points, 5);
        assert_eq!((m.worst_blocks, m.fullest_blocks), (400, 1000));
        assert!((m.worst_s - 0.9).abs() < 1e-12);
        assert!((m.per_kblock_s.unwrap() - 2.0).abs() < 1e-9);
        assert!((m.intercept_s.unwrap() - 0.1).abs() < 1e-9);
        assert!((m.at_fullest_s.unwrap() - 2.1).abs() < 1e-9);
        assert!((m.at_fullest_high_s.unwrap() - 2.1).abs() < 1e-9);
        assert!((m.r2.unwrap() - 1.0).abs() < 1e-12);
        // The plan is the prediction at the fullest journal, beyond any state timed.
        assert!((m.plan_s() - 2.1).abs() < 1e-9);
    }

    #[test]
    fn noise_widens_the_intervals_as_least_squares_says() {
        // y = 1 + 0.001 x + e, e = +-0.1 alternating: slope 1 ms per block.
        let xs = [0u64, 100, 200, 300, 400, 500];
        let e = [0.1, -0.1, 0.1, -0.1, 0.1, -0.1];
        let recs: Vec<CrashRecord> = xs
            .iter()
            .zip(e)
            .map(|(&x, e)| rec(x, Some(1.0 + 0.001 * x as f64 + e)))
            .collect();
        let refs: Vec<&CrashRecord> = recs.iter().collect();
        let m = fit(&refs).unwrap();
        // By hand: mean x 250, Sxx 175000; the errors add sum((x - 250) e) = -30 to
        // Sxy, so the slope is 0.001 - 30/175000 s per block.
        let slope = 0.001 - 30.0 / 175_000.0;
        assert!((m.per_kblock_s.unwrap() - slope * 1000.0).abs() < 1e-6);
        let (lo, hi) = (m.per_kblock_low_s.unwrap(), m.per_kblock_high_s.unwrap());
        assert!(lo < slope * 1000.0 && slope * 1000.0 < hi);
        // Symmetric about the slope, t(0.975, 4) = 2.776 standard errors each side.
        assert!(((hi - lo) / 2.0 - (hi - slope * 1000.0)).abs() < 1e-9);
        let at = m.at_fullest_s.unwrap();
        assert!(m.at_fullest_low_s.unwrap() < at && at < m.at_fullest_high_s.unwrap());
        // R² = SSR / (SSR + SSE): SSR = slope² Sxx, SSE = sum(e²) - (-30)² / Sxx.
        let ssr = slope * slope * 175_000.0;
        let sse = 0.06 - 900.0 / 175_000.0;
        assert!((m.r2.unwrap() - ssr / (ssr + sse)).abs() < 1e-9);
        assert!(m.plan_s() >= m.worst_s);
    }

    #[test]
    fn without_live_counts_or_spread_there_is_no_line() {
        let same: Vec<CrashRecord> = (0..4).map(|_| rec(50, Some(0.5))).collect();
        let refs: Vec<&CrashRecord> = same.iter().collect();
        let m = fit(&refs).unwrap();
        assert_eq!(m.per_kblock_s, None);
        assert_eq!(m.plan_s(), 0.5);
        let two = [rec(0, Some(0.1)), rec(10, Some(0.2))];
        let refs: Vec<&CrashRecord> = two.iter().collect();
        assert_eq!(fit(&refs).unwrap().r2, None);
        let untimed = [rec(10, None)];
        let refs: Vec<&CrashRecord> = untimed.iter().collect();
        assert_eq!(fit(&refs), None);
    }
}
