//! What a run says while it runs: a progress bar on a terminal, plain lines with an
//! estimate of the time left otherwise (logs, CI), nothing with `--quiet`.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

/// Progress output: a bar on a terminal, plain lines otherwise (logs, CI).
pub(crate) enum Progress {
    Bar(ProgressBar),
    Lines {
        total: usize,
        started: Instant,
        done_at_start: usize,
    },
    Quiet,
}

impl Progress {
    pub(crate) fn new(total: usize, done: usize, quiet: bool) -> Self {
        if quiet {
            return Progress::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} trials, ETA {eta}  {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_position(done as u64);
            bar.reset_eta();
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                total,
                started: Instant::now(),
                done_at_start: done,
            }
        }
    }

    pub(crate) fn say(&self, line: &str) {
        match self {
            Progress::Bar(b) => b.println(line),
            Progress::Lines { .. } => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    pub(crate) fn start(&self, n: usize, what: &str) {
        match self {
            Progress::Bar(b) => b.set_message(what.to_string()),
            Progress::Lines {
                total,
                started,
                done_at_start,
            } => {
                // ETA from the trials this process ran, like the bar's.
                let ran = n.saturating_sub(done_at_start + 1);
                let eta = if ran > 0 {
                    let per = started.elapsed().as_secs_f64() / ran as f64;
                    format!(", ETA {}", format_eta(per * (total + 1 - n) as f64))
                } else {
                    String::new()
                };
                eprintln!("[{n}/{total}{eta}] {what} ...")
            }
            Progress::Quiet => {}
        }
    }

    pub(crate) fn finish_one(&self, line: &str) {
        match self {
            Progress::Bar(b) => {
                b.println(line);
                b.inc(1);
            }
            Progress::Lines { .. } => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    pub(crate) fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }

    /// Adaptive extra trials make the run longer than planned.
    pub(crate) fn grow(&mut self, by: usize) {
        match self {
            Progress::Bar(b) => b.inc_length(by as u64),
            Progress::Lines { total, .. } => *total += by,
            Progress::Quiet => {}
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
    fn eta_is_human_readable() {
        assert_eq!(format_eta(42.4), "42s");
        assert_eq!(format_eta(125.0), "2m05s");
        assert_eq!(format_eta(7380.0), "2h03m");
    }
}
