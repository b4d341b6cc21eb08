//! The application's own recovery as a property of its settings, as the file
//! system's is ([`super::recovery_model`]): the time from `recover`'s start until the
//! application was ready, against the log it said it replayed (PostgreSQL's WAL from
//! the checkpoint's redo point, Redis's AOF), a least-squares line with its slope's
//! interval, and what the line predicts, with its prediction interval, at the largest
//! log the application's settings allow (`log_bytes_max`, e.g. `max_wal_size`) or,
//! without one, at the largest it replayed. An operator sizes `max_wal_size` or
//! `checkpoint_timeout` on the upper end of that prediction, and on the cost per MiB.

use serde::{Deserialize, Serialize};

use super::recovery_model::{Line, MODEL_LEVEL};
use super::stats::t_quantile;
use crate::results::crash::CrashRecord;

/// The timed states' application recovery against the log each replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppRecoveryModel {
    /// Timed states whose application said how much log it replayed.
    pub points: usize,
    /// The slowest of them (s), the log it replayed, and its state and what the
    /// application said of it: the slow state, explained.
    pub worst_s: f64,
    pub worst_log_bytes: u64,
    pub worst_state: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_detail: Option<String>,
    /// The most log one state replayed, and the most the settings allow (if said).
    pub largest_log_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes_max: Option<u64>,
    /// Fitted seconds at an empty log, and per MiB replayed, with the slope's interval
    /// at [`MODEL_LEVEL`] (`None` with fewer than 3 points or all at one size).
    pub intercept_s: Option<f64>,
    pub per_mib_s: Option<f64>,
    pub per_mib_low_s: Option<f64>,
    pub per_mib_high_s: Option<f64>,
    pub r2: Option<f64>,
    /// Where the prediction is made: `log_bytes_max` if given, else the largest log.
    pub predicted_at_bytes: u64,
    /// The line there, with its prediction interval (one new state's recovery).
    pub predicted_s: Option<f64>,
    pub predicted_low_s: Option<f64>,
    pub predicted_high_s: Option<f64>,
}

impl AppRecoveryModel {
    /// What a person plans on: the larger of the slowest measured and the upper end
    /// of the prediction.
    pub fn plan_s(&self) -> f64 {
        self.predicted_high_s
            .map_or(self.worst_s, |h| h.max(self.worst_s))
    }
}

const MIB: f64 = 1048576.0;

/// The model of one configuration x workload's states; `None` when no timed state's
/// application said how much log it replayed.
pub fn fit(recs: &[&CrashRecord]) -> Option<AppRecoveryModel> {
    let pts: Vec<(u64, f64, u64, Option<String>)> = recs
        .iter()
        .filter_map(|r| {
            let t = r.timings.as_ref()?;
            let facts = t.application.as_ref()?;
            Some((
                facts.log_bytes?,
                t.application_seconds?,
                r.state,
                facts.detail.clone(),
            ))
        })
        .filter(|p| p.1.is_finite())
        .collect();
    let worst = pts.iter().max_by(|a, b| a.1.total_cmp(&b.1))?.clone();
    let largest = pts.iter().map(|p| p.0).max().unwrap_or(0);
    let log_bytes_max = recs
        .iter()
        .filter_map(|r| r.timings.as_ref()?.application.as_ref()?.log_bytes_max)
        .max();
    let at = log_bytes_max.unwrap_or(largest).max(largest);
    let mut m = AppRecoveryModel {
        points: pts.len(),
        worst_s: worst.1,
        worst_log_bytes: worst.0,
        worst_state: worst.2,
        worst_detail: worst.3,
        largest_log_bytes: largest,
        log_bytes_max,
        intercept_s: None,
        per_mib_s: None,
        per_mib_low_s: None,
        per_mib_high_s: None,
        r2: None,
        predicted_at_bytes: at,
        predicted_s: None,
        predicted_low_s: None,
        predicted_high_s: None,
    };
    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.0 as f64 / MIB, p.1)).collect();
    if let Some(line) = Line::of(&xy) {
        let t = t_quantile(MODEL_LEVEL, (xy.len() - 2) as f64);
        let half = t * line.slope_se;
        m.intercept_s = Some(line.intercept);
        m.per_mib_s = Some(line.slope);
        m.per_mib_low_s = Some(line.slope - half);
        m.per_mib_high_s = Some(line.slope + half);
        m.r2 = line.r2;
        let x0 = at as f64 / MIB;
        let y0 = line.intercept + line.slope * x0;
        let half = t * line.prediction_se(x0);
        m.predicted_s = Some(y0);
        m.predicted_low_s = Some((y0 - half).max(0.0));
        m.predicted_high_s = Some(y0 + half);
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::app_recovery::AppFacts;
    use crate::results::crash::RecoveryTimes;

    fn rec(state: u64, mib: f64, seconds: f64, max_mib: Option<u64>) -> CrashRecord {
        CrashRecord {
            state,
            timings: Some(RecoveryTimes {
                mount_seconds: 0.1,
                application_seconds: Some(seconds),
                application: Some(AppFacts {
                    log_bytes: Some((mib * MIB) as u64),
                    log_bytes_max: max_mib.map(|m| m << 20),
                    detail: Some(format!("state {state}")),
                }),
                ..RecoveryTimes::default()
            }),
            ..CrashRecord::test_default()
        }
    }

    #[test]
    fn the_line_is_found_and_predicted_at_the_settings_largest_log() {
        // 0.5 s + 0.2 s per MiB, a little noise; max_wal_size 64 MiB.
        let noise = [0.01, -0.02, 0.015, -0.005, 0.0, 0.01, -0.01, 0.02];
        let recs: Vec<CrashRecord> = (0..8)
            .map(|i| {
                let mib = 1.0 + 2.0 * i as f64;
                rec(i, mib, 0.5 + 0.2 * mib + noise[i as usize], Some(64))
            })
            .collect();
        let refs: Vec<&CrashRecord> = recs.iter().collect();
        let m = fit(&refs).unwrap();
        assert_eq!(m.points, 8);
        assert!((m.per_mib_s.unwrap() - 0.2).abs() < 0.01, "{m:?}");
        assert!(m.per_mib_low_s.unwrap() < 0.2 && m.per_mib_high_s.unwrap() > 0.2);
        assert!((m.intercept_s.unwrap() - 0.5).abs() < 0.05, "{m:?}");
        assert_eq!(m.predicted_at_bytes, 64 << 20);
        let p = m.predicted_s.unwrap();
        assert!((p - (0.5 + 0.2 * 64.0)).abs() < 0.5, "{m:?}");
        assert!(m.predicted_high_s.unwrap() > p && m.plan_s() >= m.worst_s);
        assert_eq!(m.worst_state, 7);
        assert_eq!(m.worst_detail.as_deref(), Some("state 7"));
    }

    #[test]
    fn without_facts_there_is_no_model_and_two_points_no_line() {
        let mut r = rec(1, 1.0, 1.0, None);
        r.timings.as_mut().unwrap().application = None;
        assert!(fit(&[&r]).is_none());
        let (a, b) = (rec(1, 1.0, 1.0, None), rec(2, 3.0, 2.0, None));
        let m = fit(&[&a, &b]).unwrap();
        assert!(m.per_mib_s.is_none());
        assert_eq!(m.predicted_at_bytes, 3 << 20);
        assert_eq!(m.plan_s(), 2.0);
    }
}
