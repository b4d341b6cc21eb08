//! How long a run will take, before it runs: each trial's work as its engine counts it
//! (`Workload::work`), priced at the costs of the devices under it — an emulated
//! disk's own model, run over the request streams `jbench device calibrate` sends —
//! plus the fixed cost of building and checking a file system, and the crash lab's
//! cost per state. The constants below were fitted to measured runs of the built-in
//! presets on a 2-vCPU VM (docs/experiment.md, "How long a run takes"); earlier runs'
//! records (`jbench plan --history DIR`) replace the model for the trials they cover.
//!
//! The figures are deterministic (no reading of this machine's state), because shards
//! on different machines balance by them and must agree on the split.

use std::collections::BTreeMap;

use std::time::Duration;

use crate::emu::model::{model_for_disk, predicted, CalibrationRun, DeviceModel, Pattern, Request};
use crate::experiment::config::{Config, DeviceModelSpec, Placement};
use crate::experiment::plan::Trial;
use crate::experiment::schedule::{self, Job};
use crate::experiment::slots::Slot;
use crate::experiment::spec::Spec;
use crate::workload::work::Work;

/// What the device under a trial costs per primitive, host path included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceCost {
    pub seq_write_bps: f64,
    pub seq_read_bps: f64,
    /// A 4 KiB write followed by a flush: the floor of a journal commit.
    pub sync_s: f64,
    pub random_write_s: f64,
    pub random_read_s: f64,
}

/// A fresh model of `spec`, its geometry laid over `capacity` bytes.
fn build(spec: &DeviceModelSpec, capacity: u64) -> Option<Box<dyn DeviceModel>> {
    model_for_disk(&spec.model, &spec.params, capacity).ok()
}

impl DeviceCost {
    /// An image on the host's own disk (a virtio disk here: `fdatasync` p50 0.26 ms,
    /// `jbench device qualify`). Real devices differ; `--history` knows better.
    pub const HOST: DeviceCost = DeviceCost {
        seq_write_bps: 400e6,
        seq_read_bps: 800e6,
        sync_s: 0.4e-3,
        random_write_s: 0.05e-3,
        random_read_s: 0.2e-3,
    };

    /// Memory: a RAM-disk journal, a zram device.
    pub const MEMORY: DeviceCost = DeviceCost {
        seq_write_bps: 2e9,
        seq_read_bps: 4e9,
        sync_s: 10e-6,
        random_write_s: 5e-6,
        random_read_s: 5e-6,
    };

    /// What an emulated disk of `model` and `capacity` bytes costs: the model's own
    /// answers to calibrate's streams, plus the emulation path's floor per request.
    pub fn of_model(model: &DeviceModelSpec, capacity: u64) -> DeviceCost {
        let span = capacity.max(64 << 20);
        let run = |pattern: Pattern, requests: u64| {
            let mut m = build(model, capacity)?;
            let mut r = CalibrationRun::new(pattern, span);
            r.requests = requests;
            let p = predicted(m.as_mut(), &r);
            Some(p.elapsed.as_secs_f64() / requests as f64)
        };
        let per = |pattern, requests, fallback: f64| run(pattern, requests).unwrap_or(fallback);
        let mib = (1u64 << 20) as f64;
        let seq_w = per(Pattern::SequentialWrite1m, 200, 0.01) + PATH_1M_S;
        let seq_r = per(Pattern::SequentialRead1m, 200, 0.01) + PATH_1M_S;
        DeviceCost {
            seq_write_bps: mib / seq_w,
            seq_read_bps: mib / seq_r,
            sync_s: per(Pattern::FsyncWrite4k, 200, 0.01) + 2.0 * PATH_4K_S,
            random_write_s: per(Pattern::RandomWrite4k, 2000, 0.001) + PATH_4K_S,
            random_read_s: per(Pattern::RandomRead4k, 500, 0.01) + PATH_4K_S,
        }
    }
}

/// The emulation path's cost per request on top of the model's (the FUSE daemon and
/// loop device; `jbench device qualify` measured 22-44 µs for 4 KiB here).
const PATH_4K_S: f64 = 40e-6;
const PATH_1M_S: f64 = 400e-6;

/// Building, verifying and tearing down a trial's file system on host images, and
/// what an emulated disk's daemon adds (start, image, stop). Fitted: quick's and
/// crash-placement's small-tree trials, whose workload takes 0.05 s, took 0.9-2.9 s.
const SETUP_S: f64 = 0.6;
const EMULATED_SETUP_S: f64 = 0.7;
/// A crash recording's write log: opened, filled, synced and closed (quick: +2.0 s).
const RECORDING_SETUP_S: f64 = 2.0;
/// Metadata calls per second that stay in memory (create, unlink, mkdir).
const METADATA_OPS_PER_S: f64 = 20_000.0;
/// Journal writes per commit that wait for the device: the commit block after its
/// descriptor and data, each with a flush.
const COMMIT_SYNCS: f64 = 1.0;
/// Page cache assumed for read-back when the configuration sets no memory_limit.
const ASSUMED_CACHE: u64 = 4 << 30;
/// The crash lab's seconds per recording (reading its log, the lost-journal states,
/// the timed recoveries) and per state (built, replayed, checked). Fitted to quick's
/// lab at 40 and at 400 states per recording (8 recordings: 28.8 s and 86.8 s, the
/// mean of two runs, 2026-11-30), most states judged in user space, its RAM-disk
/// journal's lost-journal states by the kernel. Before the user-space verdict's own
/// file walk: 3.6 s and 0.026 s; before the user-space verdict: 5.5 s and 0.105 s.
const LAB_RECORDING_S: f64 = 2.8;
const LAB_STATE_S: f64 = 0.020;
/// A 4 KiB random write slower than this, in a sustained stream, waits for the
/// medium: 1 ms is above any cache's or flash's answer and below any seek.
const WAITS_FOR_MEDIUM_S: f64 = 1e-3;
/// Starting a run and writing its report.
const RUN_FIXED_S: f64 = 3.0;

/// What trials the model cannot price (`writeback_unpriced`) took against the model's
/// figure for them: Study 3's PostMark trials on the era disk, settled with the
/// controls on, on the 2-vCPU development VM (docs/reproducing.md, "Study 3 settled";
/// docs/experiment.md, "How long a run takes"). Per configuration and workload it was
/// 11x (small-medium, internal journal) to 116x (very-small-scaled, 4100K journal).
/// Over the whole settled run, 68 trials took 15 h 27 min where the model says about
/// 1 h (30 small-medium trials at ~41 s, measured ~7.9 min each; 20 very-small-scaled
/// at ~12 s, ~7.2 min; 18 medium-large at ~118 s, 29.4 to 33.2 min): 15.5x. The likely
/// figure takes that whole-run ratio, which weighs each workload by its time, rather
/// than the middle of the range, which one small journal's trials stretch; a unit test
/// keeps it within 10% of the ratio the model gives for those trials today.
pub const UNPRICED_LIKELY: f64 = 15.5;
pub const UNPRICED_MOST: f64 = 116.0;

/// How many times the model's figure the built-in application presets (`command`
/// workloads: a server started, checked and recovered per crash state) took on the
/// development VM: sqlite, redis and postgres ran 1.49, 1.75 and 4.1 times the model's
/// whole-run figure (7 min 3 s, 3 min 38 s and 16 min 39 s against 4 min 44 s, 2 min 4 s
/// and 4 min 3 s; 2026-11-29; docs/experiment.md, "How long a run takes"). `plan` gives
/// a `command` workload's run this range instead of one figure it cannot stand by.
pub const APP_LIKELY: f64 = 1.5;
pub const APP_MOST: f64 = 4.1;

/// The crash lab on `recordings` recordings cut into up to `states` states each.
pub fn lab_seconds(recordings: usize, states: u32) -> f64 {
    recordings as f64 * (LAB_RECORDING_S + f64::from(states) * LAB_STATE_S)
}

/// Journal bytes one small file's fsync writes before its commit block: the
/// descriptor, the inode table, bitmap, group descriptor and directory blocks.
const COMMIT_BYTES: u64 = 6 * 4096;

/// Seconds one fsync of a new small file takes on the configuration's emulated disks,
/// simulated on their own models: the file's block written and flushed, then, where
/// the journal lives, its descriptor and metadata blocks, a flush, the commit block
/// and a flush; each request also pays the emulation path. `None` without a model.
/// With `commit` false, only the data block and its flush (an fdatasync of blocks
/// already allocated).
fn simulated_sync(c: &Config, commit: bool) -> Option<f64> {
    const N: u64 = 64;
    let fs_model = c.fs_model.as_ref()?;
    let same_disk_bytes = if c.placement == Placement::SameDisk {
        c.journal_size
    } else {
        0
    };
    let mut data = build(fs_model, c.fs_size + same_disk_bytes)?;
    let mut external: Option<Box<dyn DeviceModel>> = match c.placement {
        Placement::Ramdisk | Placement::Zram | Placement::SecondDisk | Placement::Device => c
            .journal_model
            .as_ref()
            .and_then(|m| build(m, c.journal_size)),
        _ => None,
    };
    // mke2fs puts an internal journal in the middle of the file system; same-disk
    // puts it after the file system on the same image.
    let journal_start = match c.placement {
        Placement::Internal => c.fs_size / 2,
        Placement::SameDisk => c.fs_size,
        _ => 0,
    };
    let journalled = commit && c.placement != Placement::None;
    let external_floor = match c.placement {
        Placement::Ramdisk | Placement::Zram => DeviceCost::MEMORY.sync_s,
        _ => DeviceCost::HOST.sync_s,
    };
    let path = Duration::from_secs_f64(PATH_4K_S);
    let mut now = Duration::ZERO;
    let serve = |m: &mut dyn DeviceModel, r: Request, now: &mut Duration| {
        *now += m.service(&r, *now).duration + path;
    };
    let data_start = c.fs_size / 8;
    for i in 0..N {
        let d = if commit {
            data_start + i * 8192
        } else {
            // Scattered overwrites: a different place each time.
            (i.wrapping_mul(0x9E37_79B9) % (c.fs_size / 4096).max(1)) * 4096
        };
        serve(data.as_mut(), Request::write(d, 4096), &mut now);
        serve(data.as_mut(), Request::flush(), &mut now);
        if !journalled {
            continue;
        }
        let j = journal_start + (i * (COMMIT_BYTES + 4096)) % c.journal_size.max(1 << 20);
        let steps = [
            Request::write(j, COMMIT_BYTES),
            Request::flush(),
            Request::write(j + COMMIT_BYTES, 4096),
            Request::flush(),
        ];
        match (&mut external, c.placement) {
            (Some(m), _) => steps
                .into_iter()
                .for_each(|r| serve(m.as_mut(), r, &mut now)),
            (None, Placement::Internal | Placement::SameDisk) => steps
                .into_iter()
                .for_each(|r| serve(data.as_mut(), r, &mut now)),
            (None, _) => now += Duration::from_secs_f64(2.0 * external_floor),
        }
    }
    Some(now.as_secs_f64() / N as f64)
}

/// A journal commit on a file system without a model (host images, real devices):
/// the journal device's durable write, and for an external journal the flush jbd2
/// sends the file system's device before the commit block.
fn host_commit(c: &Config, data: &DeviceCost) -> f64 {
    let modelled = |fallback: DeviceCost| {
        c.journal_model
            .as_ref()
            .map_or(fallback, |m| DeviceCost::of_model(m, c.journal_size))
    };
    let (journal, external) = match c.placement {
        Placement::None | Placement::Internal => (*data, false),
        Placement::Ramdisk | Placement::Zram => (modelled(DeviceCost::MEMORY), true),
        Placement::SameDisk => (*data, true),
        Placement::SecondDisk | Placement::Device => (modelled(DeviceCost::HOST), true),
    };
    journal.sync_s * COMMIT_SYNCS + if external { data.sync_s * 0.5 } else { 0.0 }
}

/// The device costs a configuration's trials see, computed once per configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigCost {
    /// An fsync of a new small file: its data, then a journal commit.
    pub fsync_s: f64,
    /// An fdatasync of an overwrite: the data block and a flush.
    pub data_sync_s: f64,
    pub data: DeviceCost,
    pub emulated: bool,
}

impl ConfigCost {
    pub fn of(c: &Config) -> ConfigCost {
        let data = match &c.fs_model {
            Some(m) => DeviceCost::of_model(m, c.fs_size),
            None => DeviceCost::HOST,
        };
        ConfigCost {
            fsync_s: simulated_sync(c, true)
                .unwrap_or_else(|| data.random_write_s + host_commit(c, &data)),
            data_sync_s: simulated_sync(c, false).unwrap_or(data.sync_s),
            data,
            emulated: c.fs_model.is_some() || c.journal_model.is_some(),
        }
    }

    /// Seconds of one run of `work` on this configuration, setup excluded.
    pub fn work_seconds(&self, w: &Work, cache_bytes: u64) -> f64 {
        let d = &self.data;
        let read_back_bps = if w.bytes_read_back > cache_bytes {
            d.seq_read_bps
        } else {
            DeviceCost::MEMORY.seq_read_bps
        };
        w.fixed_seconds
            + w.metadata_ops as f64 / METADATA_OPS_PER_S
            + w.bytes_written as f64 / d.seq_write_bps
            + w.bytes_read as f64 / d.seq_read_bps
            + w.bytes_read_back as f64 / read_back_bps
            + w.syncs as f64 * self.fsync_s
            + w.data_syncs as f64 * self.data_sync_s
            + w.random_writes as f64 * d.random_write_s
            + w.random_reads as f64 * d.random_read_s
    }

    pub fn setup_seconds(&self) -> f64 {
        SETUP_S + if self.emulated { EMULATED_SETUP_S } else { 0.0 }
    }
}

/// The estimate of one trial, in parts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrialEstimate {
    pub setup: f64,
    pub work: f64,
    /// The crash lab on this trial's write log (recordings only).
    pub lab: f64,
    /// From an earlier run's records rather than the model.
    pub from_history: bool,
    /// The workload's counts were a guess from its sizes.
    pub guessed: bool,
    /// The workload's writeback is scattered over many files and the data disk's
    /// scattered writes wait for the medium (a spinning disk, its write cache off or
    /// outrun): the estimate leaves out the cost that decides such a trial's time, so
    /// `plan` says so.
    pub writeback_unpriced: bool,
}

impl TrialEstimate {
    pub fn total(&self) -> f64 {
        self.setup + self.work + self.lab
    }

    /// The trial alone (its crash lab runs after every trial), `factor` times the
    /// model's figure where the model cannot price it.
    pub fn trial_seconds(&self, factor: f64) -> f64 {
        let f = if self.writeback_unpriced { factor } else { 1.0 };
        (self.setup + self.work) * f
    }
}

/// A whole run's expected seconds. Where the model prices every trial the three
/// figures are one; where it cannot price some, its own figure is a floor (it leaves a
/// cost out), and those trials at [`UNPRICED_LIKELY`] and [`UNPRICED_MOST`] times it
/// give the likely and the largest figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEstimate {
    pub floor: f64,
    pub likely: f64,
    pub most: f64,
    /// Trials the model cannot price.
    pub unpriced: usize,
}

/// Measured trial times of earlier runs, by (configuration label, workload name).
#[derive(Debug, Clone, Default)]
pub struct History {
    pub seconds: BTreeMap<(String, String), Vec<f64>>,
}

impl History {
    /// The median of the measured times of a pair, if any run measured it.
    pub fn median(&self, config: &str, workload: &str) -> Option<f64> {
        let v = self
            .seconds
            .get(&(config.to_string(), workload.to_string()))?;
        let mut v = v.clone();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    }
}

/// Prices trials of one spec, each configuration's devices computed once.
pub struct Estimator<'a> {
    spec: &'a Spec,
    costs: Vec<ConfigCost>,
    history: Option<&'a History>,
    /// The host's memory cgroups are v1 (`Slot::on_host`).
    cgroup_v1: bool,
}

impl<'a> Estimator<'a> {
    pub fn new(spec: &'a Spec) -> Self {
        Estimator {
            spec,
            costs: spec.configs.iter().map(ConfigCost::of).collect(),
            history: None,
            cgroup_v1: false,
        }
    }

    pub fn with_history(mut self, history: &'a History) -> Self {
        self.history = Some(history);
        self
    }

    pub fn trial(&self, t: &Trial) -> TrialEstimate {
        let spec = self.spec;
        let c = &spec.configs[t.config];
        let w = &spec.workloads[t.workload];
        let cost = &self.costs[t.config];
        let lab = if t.recording {
            lab_seconds(1, spec.crash.states)
        } else {
            0.0
        };
        if !t.recording {
            if let Some(s) = self.history.and_then(|h| h.median(&c.label, &w.name)) {
                return TrialEstimate {
                    work: s,
                    from_history: true,
                    ..Default::default()
                };
            }
        }
        let work = w.engine.work();
        let cache = c.memory_limit.unwrap_or(ASSUMED_CACHE);
        TrialEstimate {
            setup: cost.setup_seconds() + if t.recording { RECORDING_SETUP_S } else { 0.0 },
            work: cost.work_seconds(&work, cache),
            lab,
            from_history: false,
            guessed: work.guessed,
            writeback_unpriced: work.scattered_writeback
                && cost.data.random_write_s > WAITS_FOR_MEDIUM_S,
        }
    }

    /// Slots as a host with v1 memory cgroups has them (`--jobs`; nothing else here
    /// reads the host).
    pub fn on_cgroup_v1(mut self, v1: bool) -> Self {
        self.cgroup_v1 = v1;
        self
    }

    pub fn seconds(&self, t: &Trial) -> f64 {
        self.trial(t).total()
    }

    /// The whole run with up to `jobs` trials at once (1: one after another): the
    /// trials as [`schedule::makespan`] places them in plan order, then the crash lab
    /// on the recordings, which runs after every trial, and the fixed cost of starting
    /// and reporting.
    pub fn run(&self, trials: &[Trial], jobs: usize) -> RunEstimate {
        let est: Vec<(TrialEstimate, Slot)> = trials
            .iter()
            .map(|t| {
                (
                    self.trial(t),
                    Slot::of(self.spec, t).on_host(self.cgroup_v1),
                )
            })
            .collect();
        let lab: f64 = est.iter().map(|(e, _)| e.lab).sum();
        let at = |factor: f64| {
            let list: Vec<Job> = est
                .iter()
                .map(|(e, slot)| Job {
                    seconds: e.trial_seconds(factor),
                    slot: *slot,
                })
                .collect();
            RUN_FIXED_S + lab + schedule::makespan(&list, jobs)
        };
        let unpriced = est.iter().filter(|(e, _)| e.writeback_unpriced).count();
        let floor = at(1.0);
        if unpriced == 0 {
            return RunEstimate {
                floor,
                likely: floor,
                most: floor,
                unpriced,
            };
        }
        RunEstimate {
            floor,
            likely: at(UNPRICED_LIKELY),
            most: at(UNPRICED_MOST),
            unpriced,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Spec {
        preset("quick")
    }

    fn preset(name: &str) -> Spec {
        let text = crate::experiment::presets::find(name).unwrap();
        crate::experiment::spec::parse(text, name).unwrap()
    }

    /// PostMark's scattered writeback on a spinning disk is what the model leaves out;
    /// the same workloads on a fast device, and other engines, are priced. An earlier
    /// run's measured time replaces the model and its caveat.
    #[test]
    fn scattered_writeback_to_a_spinning_disk_is_marked_unpriced() {
        let unpriced = |s: &Spec, e: &Estimator| {
            crate::experiment::plan::plan(s)
                .iter()
                .filter(|t| e.trial(t).writeback_unpriced)
                .count()
        };
        let era = preset("study3-hdd");
        let trials = crate::experiment::plan::plan(&era);
        assert_eq!(unpriced(&era, &Estimator::new(&era)), trials.len());
        // Today's disk has a write cache, but a sustained stream of scattered writes
        // outruns it and waits for the medium all the same.
        let mut modern = preset("study3-hdd-modern");
        assert_eq!(
            unpriced(&modern, &Estimator::new(&modern)),
            crate::experiment::plan::plan(&modern).len()
        );
        // The same workloads on host images, with no model, are priced.
        for c in &mut modern.configs {
            c.fs_model = None;
        }
        assert_eq!(unpriced(&modern, &Estimator::new(&modern)), 0);
        let q = quick();
        assert_eq!(unpriced(&q, &Estimator::new(&q)), 0);

        let mut h = History::default();
        let w = &era.workloads[0].name;
        for c in &era.configs {
            h.seconds.insert((c.label.clone(), w.clone()), vec![450.0]);
        }
        let measured = trials.iter().filter(|t| t.workload == 0).count();
        assert!(measured > 0 && measured < trials.len());
        assert_eq!(
            unpriced(&era, &Estimator::new(&era).with_history(&h)),
            trials.len() - measured
        );
    }

    /// The likely factor is the settled Study 3 run's measured time over what the
    /// model says for those trials: it moves when the model's figure for them does.
    #[test]
    fn the_likely_factor_is_what_study_3_measured_over_the_model() {
        let s = preset("study3-hdd");
        let e = Estimator::new(&s);
        // The settled runs left the 8M journal out.
        let configs: Vec<usize> = (0..s.configs.len())
            .filter(|&c| s.configs[c].label != "ramdisk,8M")
            .collect();
        assert_eq!(configs.len(), 6);
        let mean = |name: &str| {
            let w = s.workloads.iter().position(|w| w.name == name).unwrap();
            let secs: f64 = configs
                .iter()
                .map(|&config| {
                    let t = Trial {
                        index: 0,
                        config,
                        workload: w,
                        rep: 1,
                        recording: false,
                    };
                    let est = e.trial(&t);
                    assert!(est.writeback_unpriced, "{name}");
                    est.trial_seconds(1.0)
                })
                .sum();
            secs / configs.len() as f64
        };
        // 68 trials, 15 h 27 min (docs/reproducing.md, "Study 3 settled").
        let model = 30.0 * mean("small-medium")
            + 20.0 * mean("very-small-scaled")
            + 18.0 * mean("medium-large");
        let ratio = (15.0 * 3600.0 + 27.0 * 60.0) / model;
        assert!(
            (UNPRICED_LIKELY / ratio - 1.0).abs() < 0.1,
            "measured / model = {ratio:.1}, UNPRICED_LIKELY = {UNPRICED_LIKELY}"
        );
    }

    #[test]
    fn a_run_the_model_prices_has_one_figure_and_one_it_cannot_a_range() {
        let q = quick();
        let trials = crate::experiment::plan::plan(&q);
        let e = Estimator::new(&q);
        let r = e.run(&trials, 1);
        let serial = RUN_FIXED_S + trials.iter().map(|t| e.seconds(t)).sum::<f64>();
        assert!((r.floor - serial).abs() < 1e-6, "{r:?} vs {serial}");
        assert_eq!((r.likely, r.most, r.unpriced), (r.floor, r.floor, 0));

        let s = preset("study3-hdd");
        let trials = crate::experiment::plan::plan(&s);
        let e = Estimator::new(&s);
        let r = e.run(&trials, 1);
        assert_eq!(r.unpriced, trials.len());
        // Every trial is unpriced: the trials scale whole, the fixed cost does not.
        let trials_s = r.floor - RUN_FIXED_S;
        assert!((r.likely - (RUN_FIXED_S + trials_s * UNPRICED_LIKELY)).abs() < 1e-6);
        assert!((r.most - (RUN_FIXED_S + trials_s * UNPRICED_MOST)).abs() < 1e-6);
        // 16 h or more, as docs/reproducing.md estimates from the measured trials.
        assert!((14.0..20.0).contains(&(r.likely / 3600.0)), "{r:?}");

        // Measured trials replace the model, and with it the range.
        let mut h = History::default();
        for c in &s.configs {
            for w in &s.workloads {
                h.seconds
                    .insert((c.label.clone(), w.name.clone()), vec![600.0]);
            }
        }
        let r = Estimator::new(&s).with_history(&h).run(&trials, 1);
        assert_eq!(r.unpriced, 0);
        assert_eq!((r.likely, r.most), (r.floor, r.floor));
        assert!(
            (r.floor - (RUN_FIXED_S + 600.0 * 84.0)).abs() < 1e-6,
            "{r:?}"
        );
    }

    /// Study 3's trials share one memory limit on emulated disks: two at a time halve
    /// the trials' part; quick-host's are timed on the host's disk and run alone.
    #[test]
    fn concurrent_trials_shorten_a_run_only_where_they_may_share_the_host() {
        let s = preset("study3-hdd");
        let trials = crate::experiment::plan::plan(&s);
        let e = Estimator::new(&s);
        let (one, two) = (e.run(&trials, 1), e.run(&trials, 2));
        let ratio = (two.floor - RUN_FIXED_S) / (one.floor - RUN_FIXED_S);
        assert!((0.5..0.6).contains(&ratio), "{ratio}");
        assert!(two.likely < one.likely && two.most < one.most);

        let h = preset("quick-host");
        let trials = crate::experiment::plan::plan(&h);
        assert!(trials.iter().all(|t| Slot::of(&h, t) == Slot::Alone));
        let e = Estimator::new(&h);
        assert_eq!(e.run(&trials, 4), e.run(&trials, 1));
    }

    #[test]
    fn an_fsync_costs_most_where_the_journal_is_farthest_from_the_data() {
        // Measured on quick (hdd-7200, 200 fsync'ed 4 KiB files): ramdisk 8.6 ms per
        // file, second-disk 17.6, internal 31.5, same-disk 44.
        let s = quick();
        let cost: BTreeMap<&str, f64> = s
            .configs
            .iter()
            .map(|c| (c.label.as_str(), ConfigCost::of(c).fsync_s * 1e3))
            .collect();
        for (label, measured) in [
            ("ramdisk", 8.6),
            ("second-disk", 17.6),
            ("internal", 31.5),
            ("same-disk", 44.0),
        ] {
            let ratio = cost[label] / measured;
            assert!((0.8..1.25).contains(&ratio), "{label}: {cost:?}");
        }
        assert!(cost["ramdisk"] < cost["second-disk"], "{cost:?}");
        assert!(cost["second-disk"] < cost["internal"], "{cost:?}");
        assert!(cost["internal"] < cost["same-disk"], "{cost:?}");
    }
}
