//! `jbench selftest monitor`: what the trial monitor costs.
//!
//! Two figures: the time one sample of the real sampler takes (the three /proc files
//! and two device lines, plus a jbd2 `info` read as each phase boundary does), which at
//! the default 1 s interval is the sampler's share of one CPU; and the fdtree engine's
//! rate on tmpfs with a monitor sampling (at a much shorter interval than the default,
//! to make any disturbance visible) against the engine alone, phase by phase, the two
//! taking turns as in `selftest overhead`.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::{median, ops_of, spread_pct, Scratch};
use crate::monitor::{self, Monitor, Targets};
use crate::workload::fdtree::{Fdtree, Phase};
use crate::workload::RunControl;

#[derive(Debug, Clone, PartialEq)]
pub struct MonitorCostOptions {
    /// tmpfs directory for the fdtree runs.
    pub dir: PathBuf,
    pub tree: Fdtree,
    pub rounds: u32,
    /// Samples timed for the per-sample cost.
    pub samples: usize,
    /// The monitor's interval during the engine runs.
    pub interval: Duration,
}

impl Default for MonitorCostOptions {
    fn default() -> Self {
        let base = super::OverheadOptions::default();
        Self {
            dir: base.dir,
            tree: base.tree,
            rounds: base.rounds,
            samples: 2000,
            interval: Duration::from_millis(10),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MonitorCostReport {
    pub opts: MonitorCostOptions,
    /// The devices sampled.
    pub devices: Vec<String>,
    /// Median µs of one interval sample.
    pub sample_us: f64,
    /// Median µs of one jbd2 `info` read, when this machine has a jbd2 journal.
    pub jbd2_us: Option<f64>,
    /// Per phase: rates with the monitor, rates without, in round order.
    pub phases: Vec<(Phase, Vec<f64>, Vec<f64>)>,
}

impl MonitorCostReport {
    /// Share of one CPU the sampler takes at `interval`, percent.
    pub fn cpu_pct_at(&self, interval: Duration) -> f64 {
        self.sample_us / 1e6 / interval.as_secs_f64() * 100.0
    }

    /// Median rate with the monitor over median rate without, per phase.
    pub fn ratios(&self) -> Vec<(Phase, f64)> {
        self.phases
            .iter()
            .map(|(p, with, without)| (*p, median(with) / median(without)))
            .collect()
    }
}

pub fn run_monitor_cost(opts: &MonitorCostOptions) -> anyhow::Result<MonitorCostReport> {
    if opts.rounds == 0 {
        bail!("selftest monitor: rounds must be at least 1");
    }
    opts.tree.validate()?;
    let diskstats = std::fs::read_to_string("/proc/diskstats").context("/proc/diskstats")?;
    let devices: Vec<String> = diskstats
        .lines()
        .filter_map(monitor::parse_diskstats_line)
        .map(|(n, _)| n.to_string())
        .take(2)
        .collect();
    if devices.is_empty() {
        bail!("selftest monitor: /proc/diskstats lists no device");
    }
    let targets = Targets {
        devices: ["fs", "journal"]
            .iter()
            .zip(&devices)
            .map(|(r, d)| (r.to_string(), d.clone()))
            .collect(),
        jbd2: None,
    };
    let sample_us = monitor::sample_cost_us(&targets, opts.samples);
    let jbd2_us = std::fs::read_dir("/proc/fs/jbd2")
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| {
            let path = e.path().join("info");
            let mut times: Vec<f64> = (0..opts.samples.max(1))
                .map(|_| {
                    let t = Instant::now();
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    std::hint::black_box(monitor::parse_jbd2_info(&text));
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        });

    let scratch = Scratch::create(&opts.dir)?;
    let with_dir = scratch.subdir("m")?;
    let without_dir = scratch.subdir("n")?;
    let mut phases: Vec<(Phase, Vec<f64>, Vec<f64>)> = Phase::ALL
        .iter()
        .map(|&p| (p, Vec::new(), Vec::new()))
        .collect();
    // One uncounted warm-up round, then alternate who goes first.
    for n in 0..=opts.rounds {
        for (i, phase) in Phase::ALL.into_iter().enumerate() {
            let ops = ops_of(&opts.tree, phase) as f64;
            let first_with = n % 2 == 0;
            for with in [first_with, !first_with] {
                let (dir, m) = if with {
                    let m = Monitor::start(targets.clone(), opts.interval, None)?;
                    (&with_dir, Some(m))
                } else {
                    (&without_dir, None)
                };
                let ctl = RunControl::new().with_phase_hook(m.as_ref().map(Monitor::hook));
                let r = opts
                    .tree
                    .run_phases(dir, &[phase], &ctl)
                    .context("engine run")?;
                if let Some(m) = m {
                    m.stop(None)?;
                }
                if n > 0 {
                    let rate = ops / r[0].seconds;
                    if with {
                        phases[i].1.push(rate);
                    } else {
                        phases[i].2.push(rate);
                    }
                }
            }
        }
    }
    scratch.remove()?;
    Ok(MonitorCostReport {
        opts: opts.clone(),
        devices,
        sample_us,
        jbd2_us,
        phases,
    })
}

impl fmt::Display for MonitorCostReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "selftest monitor: one sample (diskstats of {}, stat, meminfo) takes {:.1} µs (median of {})",
            self.devices.join(", "),
            self.sample_us,
            self.opts.samples
        )?;
        if let Some(j) = self.jbd2_us {
            writeln!(
                f,
                "  a jbd2 info read (each phase boundary) takes {j:.1} µs"
            )?;
        }
        writeln!(
            f,
            "  at the default 1 s interval the sampler takes {:.4}% of one CPU",
            self.cpu_pct_at(Duration::from_secs(1))
        )?;
        writeln!(
            f,
            "fdtree {} in {} with a monitor every {} ms vs none, {} rounds each:",
            self.opts.tree,
            self.opts.dir.display(),
            self.opts.interval.as_millis(),
            self.opts.rounds
        )?;
        writeln!(
            f,
            "  {:<12} {:>14} {:>14} {:>8} {:>9} {:>9}",
            "phase", "with ops/s", "without ops/s", "ratio", "spread+", "spread-"
        )?;
        for ((phase, with, without), (_, ratio)) in self.phases.iter().zip(self.ratios()) {
            writeln!(
                f,
                "  {:<12} {:>14.0} {:>14.0} {:>8.3} {:>8.1}% {:>8.1}%",
                phase.name(),
                median(with),
                median(without),
                ratio,
                spread_pct(with),
                spread_pct(without)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monitor_cost_is_measured_on_a_small_tree() {
        let dir = tempfile::tempdir().unwrap();
        let opts = MonitorCostOptions {
            dir: dir.path().to_path_buf(),
            tree: Fdtree::new(2, 2, 1, 2),
            rounds: 2,
            samples: 50,
            interval: Duration::from_millis(5),
        };
        let r = run_monitor_cost(&opts).unwrap();
        assert!(r.sample_us > 0.0 && r.sample_us < 100_000.0, "{r}");
        assert_eq!(r.phases.len(), 4);
        for (_, with, without) in &r.phases {
            assert_eq!((with.len(), without.len()), (2, 2));
        }
        assert!(r.ratios().iter().all(|(_, x)| x.is_finite() && *x > 0.0));
        let shown = r.to_string();
        assert!(
            shown.contains("µs") && shown.contains("dir_create"),
            "{shown}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
