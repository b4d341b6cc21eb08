//! `jbench device qualify --model NAME`: the same measurement of an emulated disk,
//! served as a trial serves it, with model timing on.

use std::path::PathBuf;

use anyhow::Result;

use super::{qualify_device, ModelRef, Pattern, Patterns, Qualification};
use crate::events::{step, Activity};
use crate::selftest::bench::{pin_away_from_daemon, unpin, Backing, DiskOptions, Served};

pub struct ModelOptions {
    /// The name shown: a built-in model or a `[models]` entry.
    pub name: String,
    /// The built-in model it is made from, and its parameters.
    pub model: String,
    pub params: toml::Table,
    pub size: u64,
    pub seconds: f64,
    pub patterns: Patterns,
    pub work_dir: PathBuf,
    pub image_dir: PathBuf,
}

/// Qualifies an emulated disk of `opts.model`.
pub fn qualify_model(opts: &ModelOptions, stop: &dyn Fn() -> bool) -> Result<Qualification> {
    // A geometry spans the emulated disk, as in a trial.
    let params = crate::emu::params_for_disk(&opts.model, &opts.params, opts.size);
    let m = crate::emu::model_by_name(&opts.model, Some(&params))?;
    if let Some(cap) = m.capacity_bytes().filter(|&c| c > opts.size) {
        step(Activity::Qualify, format!(
            "{}'s geometry spans {}; the measurement covers its first {} only (shorter seeks, the outer zone): pass --size {} to measure all of it",
            opts.name,
            crate::units::format_size(cap),
            crate::units::format_size(opts.size),
            crate::units::format_size(cap)
        ));
    }
    let disk = DiskOptions {
        model: opts.model.clone(),
        params: params.clone(),
        size: opts.size,
        work_dir: opts.work_dir.clone(),
        image_dir: opts.image_dir.clone(),
    };
    let backing = Backing::create(&disk)?;
    let restore = pin_away_from_daemon()?;
    let result = (|| {
        let served = Served::start(&backing, &disk, None)?;
        step(
            Activity::Qualify,
            format!(
            "emulated {} on {}; the path's floor {:.1} µs per 4 KiB read, taken off every answer",
            opts.name,
            served.device.path().display(),
            served.path.floor_4k_us
        ),
        );
        // The path's own ceiling for 1 MiB transfers: the sequential pattern with the
        // model answering at once. The probe's 1 MiB read at one offset stays in the
        // CPU's cache and understates what reads across the disk cost.
        let untimed = if opts.patterns.has(Pattern::Sequential) {
            let only = Patterns::only(&[Pattern::Sequential]);
            Some(qualify_device(
                served.device.path(),
                opts.size,
                None,
                1.2,
                &only,
                stop,
            )?)
        } else {
            None
        };
        let (floor_1m_read, floor_1m_write) = untimed.map_or((0.0, 0.0), |u| {
            (
                u.sequential_read_1m.latency.p50_us,
                u.sequential_write_1m.latency.p50_us,
            )
        });
        served.daemon.set_timing(true)?;
        let q = qualify_device(
            served.device.path(),
            opts.size,
            None,
            opts.seconds,
            &opts.patterns,
            stop,
        );
        let floor = served.path.floor_4k_us;
        let stopped = served.stop();
        let mut q = q?;
        stopped?;
        q.target = format!("emulated {}", opts.name);
        q.model = Some(ModelRef {
            name: opts.name.clone(),
            base_model: opts.model.clone(),
            params,
            path_floor_4k_us: floor,
            path_floor_1m_read_us: floor_1m_read,
            path_floor_1m_write_us: floor_1m_write,
        });
        Ok(q)
    })();
    unpin(restore);
    drop(backing);
    result
}
