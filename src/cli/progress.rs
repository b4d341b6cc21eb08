//! What a run says while it runs, drawn from its events: a progress bar on a terminal,
//! plain lines with an estimate of the time left otherwise (logs, CI). The time left
//! is the trials left at the rate the run has kept so far, plus what comes after the
//! trials (the crash lab), which no trial's rate tells.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// A trial past this long says which phase it is in, also in plain-line output.
const LONG_TRIAL: Duration = Duration::from_secs(10);

/// The running trial: what it is, since when, and the phase it is in.
#[derive(Debug, Default)]
pub(crate) struct Current {
    what: String,
    started: Option<Instant>,
    phase: Option<String>,
}

impl Current {
    /// `internal / t / rep 1 - file_create, 1m05s`: the bar's message, redrawn every
    /// second.
    pub(crate) fn describe(&self, now: Instant) -> String {
        let mut s = self.what.clone();
        if let Some(p) = &self.phase {
            s.push_str(&format!(" - {p}"));
        }
        if let Some(t) = self.started {
            s.push_str(&format!(
                ", {}",
                format_eta(now.saturating_duration_since(t).as_secs_f64())
            ));
        }
        s
    }
}

/// Progress output: a bar on a terminal, plain lines otherwise (logs, CI).
pub(crate) enum Progress {
    Bar(ProgressBar, Arc<Mutex<Current>>),
    Lines {
        total: usize,
        started: Instant,
        done_at_start: usize,
        current: Arc<Mutex<Current>>,
        /// Seconds of work after the last trial, from the estimate.
        after: f64,
    },
}

impl Progress {
    /// `total` trials of which `done` were recorded before; `after` seconds of work
    /// follow the last trial (the crash lab's estimate).
    pub(crate) fn new(total: usize, done: usize, after: f64) -> Self {
        if std::io::stderr().is_terminal() {
            let current = Arc::new(Mutex::new(Current::default()));
            let shown = current.clone();
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} trials, ETA {left}  {trial}",
                )
                .expect("valid template")
                // No trial finished yet: no rate to tell the time left by.
                .with_key(
                    "left",
                    move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = if st.pos() > done as u64 {
                            w.write_str(&format_eta(st.eta().as_secs_f64() + after))
                        } else {
                            w.write_str("after the first trial")
                        };
                    },
                )
                .with_key(
                    "trial",
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        if let Ok(c) = shown.lock() {
                            let _ = w.write_str(&c.describe(Instant::now()));
                        }
                    },
                )
                .progress_chars("=> "),
            );
            bar.set_position(done as u64);
            bar.reset_eta();
            // Redrawn every second, so the clocks move during a long trial.
            bar.enable_steady_tick(Duration::from_secs(1));
            Progress::Bar(bar, current)
        } else {
            Progress::Lines {
                total,
                started: Instant::now(),
                done_at_start: done,
                current: Arc::new(Mutex::new(Current::default())),
                after,
            }
        }
    }

    /// Plain lines' seconds left as trial `n` (1-based) starts: `None` until this
    /// process has finished a trial to tell the rate by.
    fn eta(&self, n: usize) -> Option<f64> {
        let Progress::Lines {
            total,
            started,
            done_at_start,
            after,
            ..
        } = self
        else {
            return None;
        };
        let ran = n.saturating_sub(done_at_start + 1);
        if ran == 0 {
            return None;
        }
        let per = started.elapsed().as_secs_f64() / ran as f64;
        Some(per * (total + 1).saturating_sub(n) as f64 + after)
    }

    pub(crate) fn say(&self, line: &str) {
        match self {
            Progress::Bar(b, _) => b.println(line),
            Progress::Lines { .. } => eprintln!("{line}"),
        }
    }

    pub(crate) fn start(&self, n: usize, what: &str) {
        match self {
            Progress::Bar(b, current) => {
                if let Ok(mut c) = current.lock() {
                    *c = Current {
                        what: what.to_string(),
                        started: Some(Instant::now()),
                        phase: None,
                    };
                }
                b.tick();
            }
            Progress::Lines { total, current, .. } => {
                if let Ok(mut c) = current.lock() {
                    *c = Current {
                        what: what.to_string(),
                        started: Some(Instant::now()),
                        phase: None,
                    };
                }
                // From the trials this process ran, like the bar's.
                let eta = self
                    .eta(n)
                    .map(|s| format!(", ETA {}", format_eta(s)))
                    .unwrap_or_default();
                eprintln!("[{n}/{total}{eta}] {what} ...")
            }
        }
    }

    pub(crate) fn finish_one(&self, line: &str) {
        match self {
            Progress::Bar(b, _) => {
                b.println(line);
                b.inc(1);
            }
            Progress::Lines { .. } => eprintln!("{line}"),
        }
    }

    pub(crate) fn finish(&self) {
        if let Progress::Bar(b, _) = self {
            b.finish_and_clear();
        }
    }

    /// Adaptive extra trials make the run longer than planned.
    pub(crate) fn grow(&mut self, by: usize) {
        match self {
            Progress::Bar(b, _) => b.inc_length(by as u64),
            Progress::Lines { total, .. } => *total += by,
        }
    }
}

impl Progress {
    /// The running trial entered phase `name`: the bar shows it, and plain lines say
    /// it for a trial that has run past [`LONG_TRIAL`].
    pub(crate) fn phase(&self, name: &str) {
        let (current, lines) = match self {
            Progress::Bar(_, c) => (c, false),
            Progress::Lines { current, .. } => (current, true),
        };
        let Ok(mut c) = current.lock() else { return };
        c.phase = Some(name.to_string());
        let long = c.started.is_some_and(|t| t.elapsed() >= LONG_TRIAL);
        if lines && long {
            eprintln!("  ... {}", c.describe(Instant::now()));
        }
    }
}

pub(crate) fn format_eta(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_trial_shows_its_phase_and_how_long_it_has_run() {
        let p = Progress::Lines {
            total: 1,
            started: Instant::now(),
            done_at_start: 0,
            current: Arc::new(Mutex::new(Current::default())),
            after: 0.0,
        };
        p.start(1, "internal / t / rep 1");
        p.phase("file_create");
        let Progress::Lines { current, .. } = &p else {
            unreachable!()
        };
        let c = current.lock().unwrap();
        let later = c.started.unwrap() + Duration::from_secs(65);
        assert_eq!(
            c.describe(later),
            "internal / t / rep 1 - file_create, 1m05s"
        );
    }

    /// quick's last trials said "ETA 57s" with the crash lab's minutes still to come:
    /// the time left counts what follows the trials.
    #[test]
    fn the_time_left_counts_the_crash_lab_after_the_trials() {
        let lines = |elapsed: u64, after: f64| Progress::Lines {
            total: 4,
            started: Instant::now() - Duration::from_secs(elapsed),
            done_at_start: 0,
            current: Arc::new(Mutex::new(Current::default())),
            after,
        };
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 0.5);
        // Two trials ran in 20 s; the third and fourth are left, then the lab.
        let eta = lines(20, 0.0).eta(3);
        assert!(close(eta, 20.0), "{eta:?}");
        let eta = lines(20, 78.0).eta(3);
        assert!(close(eta, 98.0), "{eta:?}");
        // Three ran in 30 s and the last one starts: its time, then the lab.
        let eta = lines(30, 78.0).eta(4);
        assert!(close(eta, 88.0), "{eta:?}");
        // No trial finished yet in this process: no rate.
        assert_eq!(lines(20, 78.0).eta(1), None);
        let resumed = Progress::Lines {
            total: 4,
            started: Instant::now(),
            done_at_start: 2,
            current: Arc::new(Mutex::new(Current::default())),
            after: 78.0,
        };
        assert_eq!(resumed.eta(3), None);
    }

    #[test]
    fn eta_is_human_readable() {
        assert_eq!(format_eta(42.4), "42s");
        assert_eq!(format_eta(125.0), "2m05s");
        assert_eq!(format_eta(7380.0), "2h03m");
    }
}
