//! `jbench device ...`: the emulated disks' models, their calibration, write logs.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::args::DeviceCmd;
use crate::run::{interrupt, preflight};

pub fn device(cmd: DeviceCmd) -> Result<ExitCode> {
    use crate::emu::{model, writelog};
    use crate::selftest::calibrate;
    match cmd {
        DeviceCmd::Models => {
            for name in crate::emu::MODEL_NAMES {
                outln!("{name}");
                let params = model::default_params(name).unwrap_or_default();
                if params.is_empty() {
                    outln!("  (no parameters)");
                }
                for (k, v) in &params {
                    outln!("  {k} = {v}");
                }
                for (label, p) in model::predicted_set(name, None)? {
                    outln!(
                        "  predicted {label}: {:.1} IOPS, {:.1} MB/s",
                        p.iops,
                        p.mb_per_s
                    );
                }
                outln!();
            }
            Ok(ExitCode::SUCCESS)
        }
        DeviceCmd::Calibrate(a) => {
            preflight::require_root("jbench device calibrate")?;
            // Its images are attached and served like a run's: the same trust rules.
            crate::trust::create_trusted_dir(&a.dirs.work_dir)?;
            crate::trust::create_trusted_dir(&a.dirs.image_dir)?;
            let (model, mut params) = match &a.spec {
                Some(file) => spec_model(file, &a.model)?,
                None => (a.model.clone(), toml::Table::new()),
            };
            // --set overrides the experiment file's parameters, key by key (a dotted
            // key one key of a nested table).
            apply_set(&mut params, &a.set)?;
            crate::emu::model_by_name(&model, Some(&params))?;
            let size = crate::units::parse_size(&a.size).map_err(anyhow::Error::msg)?;
            let opts = calibrate::CalibrateOptions {
                name: a.model,
                model,
                params,
                spec: a.spec,
                size,
                work_dir: a.dirs.work_dir,
                image_dir: a.dirs.image_dir,
                seconds_per_pattern: a.seconds,
                write_log: a.write_log,
            };
            let ctl = interrupt::install()?;
            let c = calibrate::calibrate(&opts, &ctl)?;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&c)?);
            } else {
                out!("{}", calibrate::render(&c));
            }
            if !c.within_tolerance {
                return Ok(ExitCode::from(OUT_OF_TOLERANCE));
            }
            Ok(ExitCode::SUCCESS)
        }
        DeviceCmd::Stress(a) => stress(a),
        DeviceCmd::Qualify(a) => qualify(a),
        DeviceCmd::Floor(a) => {
            preflight::require_root("jbench device floor")?;
            crate::trust::create_trusted_dir(&a.dirs.work_dir)?;
            crate::trust::create_trusted_dir(&a.tmpfs_dir)?;
            crate::trust::create_trusted_dir(&a.dirs.image_dir)?;
            let opts = crate::selftest::floor::FloorOptions {
                work_dir: a.dirs.work_dir,
                tmpfs_dir: a.tmpfs_dir,
                image_dir: a.dirs.image_dir,
                requests: a.requests.max(100),
                placement: a.placement,
            };
            let f = crate::selftest::floor::floor(&opts)?;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&f)?);
            } else {
                out!("{}", crate::selftest::floor::render(&f));
            }
            Ok(ExitCode::SUCCESS)
        }
        DeviceCmd::Log { file, json } => {
            let (header, summary) = writelog::summarize(&file)?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "header": header,
                        "summary": summary,
                    }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            outln!("write log version {}", header.version);
            for d in &header.disks {
                let cache = match (d.volatile_cache, d.honor_flush) {
                    (Some(true), Some(false)) => ", volatile write cache, flushes ignored",
                    (Some(true), _) => ", volatile write cache",
                    _ => "",
                };
                outln!(
                    "disk {}: {} ({}, {}{cache})",
                    d.index,
                    d.name,
                    d.model,
                    crate::units::format_size(d.size)
                );
            }
            outln!(
                "{} records: {} writes ({}), {} zero writes, {} discards, {} flushes, {} markers",
                summary.records,
                summary.writes,
                crate::units::format_size(summary.write_bytes),
                summary.zero_writes,
                summary.discards,
                summary.flushes,
                summary.markers.len()
            );
            for (seq, label) in summary.markers.iter().take(20) {
                outln!("  #{seq}: {label}");
            }
            if summary.markers.len() > 20 {
                outln!("  ... {} more markers", summary.markers.len() - 20);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--set KEY=VALUE ...` as a parameter table.
fn parse_set(set: &[String]) -> Result<toml::Table> {
    let mut params = toml::Table::new();
    apply_set(&mut params, set)?;
    Ok(params)
}

/// Sets each `--set KEY=VALUE` in `params`, over what is there.
fn apply_set(params: &mut toml::Table, set: &[String]) -> Result<()> {
    for kv in set {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--set {kv}: expected KEY=VALUE"))?;
        let value: toml::Value = format!("v = {v}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(v.to_string()));
        set_param(params, k.trim(), value);
    }
    Ok(())
}

/// `jbench device qualify DIR`, or `--model NAME`.
fn qualify(a: crate::cli::args::QualifyArgs) -> Result<ExitCode> {
    use crate::qualify;
    if !(a.seconds > 0.0 && a.seconds <= 86400.0) {
        anyhow::bail!("--seconds {}: give 0 < seconds <= 86400", a.seconds);
    }
    let size = crate::units::parse_size(&a.size).map_err(anyhow::Error::msg)?;
    if let Some(name) = &a.fit {
        qualify::check_name(name)?;
    }
    if a.check_copy {
        preflight::require_root("jbench device qualify --check-copy")?;
        if a.check_repetitions < 2 {
            anyhow::bail!(
                "--check-repetitions {}: give at least 2 (an interval needs two trials a side)",
                a.check_repetitions
            );
        }
    }
    let patterns = qualify::Patterns::only(&a.only);
    let ctl = interrupt::install()?;
    let stop = || ctl.stop_requested();
    let q = match (&a.dir, &a.model) {
        _ if a.destroy_data_on.is_some() => {
            let dev = a.destroy_data_on.clone().unwrap_or_default();
            preflight::require_root("jbench device qualify --destroy-data-on")?;
            // The same refusals as before formatting one: mounted, swap, held,
            // partitioned or open exclusively.
            crate::rig::safety::check_formattable(&dev, std::slice::from_ref(&dev))?;
            let dev_size = crate::rig::safety::device_size(&dev)?;
            qualify::qualify_device(&dev, dev_size, Some(size), a.seconds, &patterns, &stop)?
        }
        (_, Some(name)) => {
            preflight::require_root("jbench device qualify --model")?;
            crate::trust::create_trusted_dir(&a.dirs.work_dir)?;
            crate::trust::create_trusted_dir(&a.dirs.image_dir)?;
            let (model, mut params) = match &a.spec {
                Some(file) => spec_model(file, name)?,
                None => (name.clone(), toml::Table::new()),
            };
            apply_set(&mut params, &a.set)?;
            let opts = qualify::ModelOptions {
                name: name.clone(),
                model,
                params,
                size,
                seconds: a.seconds,
                patterns,
                work_dir: a.dirs.work_dir.clone(),
                image_dir: a.dirs.image_dir.clone(),
            };
            qualify::qualify_model(&opts, &stop)?
        }
        (Some(dir), None) => {
            let opts = qualify::QualifyOptions {
                dir: dir.clone(),
                size,
                seconds: a.seconds,
                patterns,
            };
            qualify::qualify(&opts, &stop)?
        }
        (None, None) => anyhow::bail!("give a directory to measure in, or --model NAME"),
    };
    let fit_name = a
        .fit
        .clone()
        .or_else(|| a.check_copy.then(|| "fitted".to_string()));
    let fit = fit_name.as_ref().map(|name| qualify::fit(&q, name));
    // With --check-copy, JSON is one object printed after the check; text is printed
    // as soon as it is known.
    let json_of = |check: Option<&crate::qualify::check_copy::CopyCheck>| -> Result<String> {
        let mut v = serde_json::to_value(&q)?;
        if let Some(f) = &fit {
            v["fit"] = serde_json::to_value(f)?;
        }
        if let Some(c) = check {
            v["check_copy"] = serde_json::to_value(c)?;
        }
        Ok(serde_json::to_string_pretty(&v)?)
    };
    if a.json && !a.check_copy {
        outln!("{}", json_of(None)?);
    } else if !a.json {
        out!("{}", qualify::render(&q));
        if let Some(f) = &fit {
            out!("\n{}", qualify::render_fit(f));
        }
    }
    // After the measurement is printed: a file that cannot be written loses nothing.
    // With --check-copy, the model written is the one the check used.
    let write_to = |f: &qualify::Fit| -> Result<()> {
        if let Some(file) = &a.fit_to {
            let what = match qualify::write_fit(file, f, &q.target)? {
                qualify::Written::Created => "written to a new file",
                qualify::Written::Added => "added to",
                qualify::Written::Replaced => "replaced in",
            };
            eprintln!("jbench: [models.{}] {what} {}", f.name, file.display());
        }
        Ok(())
    };
    let (Some(f), Some(dir), true) = (&fit, &a.dir, a.check_copy) else {
        if let Some(f) = &fit {
            write_to(f)?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let c = match check_copy(&a, f, &q, dir) {
        Ok(c) => c,
        Err(e) => {
            // The measurement and its fit stand without the check: nothing is lost.
            if a.json {
                outln!("{}", json_of(None)?);
            }
            write_to(f)?;
            return Err(e);
        }
    };
    if a.json {
        outln!("{}", json_of(Some(&c))?);
    } else {
        out!("\n{}", crate::qualify::check_copy::render(&c));
        if c.refit.is_some() {
            out!(
                "\nthe model the check used:\n{}",
                qualify::render_fit(&c.fit)
            );
        }
    }
    write_to(&c.fit)?;
    use crate::qualify::check_copy::Verdict;
    Ok(match c.verdict {
        Verdict::Predicts | Verdict::Undecided => ExitCode::SUCCESS,
        Verdict::Misses | Verdict::CannotStand => ExitCode::from(1),
    })
}

/// `--check-copy`: the fitted copy against the directory.
fn check_copy(
    a: &crate::cli::args::QualifyArgs,
    fit: &crate::qualify::Fit,
    q: &crate::qualify::Qualification,
    dir: &std::path::Path,
) -> Result<crate::qualify::check_copy::CopyCheck> {
    use crate::qualify::check_copy::{self, CheckOptions, PLACEMENTS};
    let results = match &a.check_results {
        Some(d) => d.clone(),
        None => {
            crate::run::session::results_dir(&None, &None, &format!("check-copy-{}", fit.name))?
        }
    };
    let opts = CheckOptions {
        dir: dir.to_path_buf(),
        fs_size: "512M".into(),
        journal_size: "32M".into(),
        files: a.check_files,
        repetitions: a.check_repetitions,
        results,
    };
    crate::events::step(
        crate::events::Activity::Qualify,
        format!(
            "checking the copy: two passes of {} trials of {} fsync'ed files each, on loop images in {} and on emulated disks of [models.{}]",
            2 * PLACEMENTS.len() as u32 * opts.repetitions,
            opts.files,
            dir.display(),
            fit.name
        ),
    );
    check_copy::run(&opts, fit, q.memory)
}

/// `jbench device stress`: exit 1 when any model's run failed.
fn stress(a: crate::cli::args::StressArgs) -> Result<ExitCode> {
    use crate::selftest::stress;
    preflight::require_root("jbench device stress")?;
    crate::trust::create_trusted_dir(&a.dirs.work_dir)?;
    crate::trust::create_trusted_dir(&a.dirs.image_dir)?;
    if !(a.seconds > 0.0 && a.seconds <= 86400.0) {
        anyhow::bail!("--seconds {}: give 0 < seconds <= 86400", a.seconds);
    }
    let size = crate::units::parse_size(&a.size).map_err(anyhow::Error::msg)?;
    let set = parse_set(&a.set)?;
    let runs: Vec<(String, toml::Table)> = if a.models.is_empty() {
        // A cache small enough that eight writers fill it within a second.
        let small_cache: toml::Table = toml::toml! { cache_bytes = 8388608 };
        vec![
            ("hdd-7200".into(), set.clone()),
            (
                "raid6".into(),
                small_cache.into_iter().chain(set.clone()).collect(),
            ),
            ("ssd-sata".into(), set.clone()),
        ]
    } else {
        a.models.iter().map(|m| (m.clone(), set.clone())).collect()
    };
    let ctl = interrupt::install()?;
    let mut reports = Vec::new();
    for (model, params) in runs {
        let opts = stress::StressOptions {
            model,
            params,
            size,
            work_dir: a.dirs.work_dir.clone(),
            image_dir: a.dirs.image_dir.clone(),
            writers: a.writers as usize,
            seconds: a.seconds,
            seed: 1,
        };
        reports.push(stress::stress(&opts, &ctl)?);
        if ctl.stop_requested() {
            anyhow::bail!("interrupted");
        }
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        out!("{}", stress::render(&reports));
    }
    Ok(if reports.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Exit status of a calibration (or `selftest overhead`) that measured, but outside
/// its tolerance.
pub const OUT_OF_TOLERANCE: u8 = 4;

/// The built-in model and parameters `name` stands for in the experiment file `file`:
/// one of its `[models]` entries, or a built-in model.
fn spec_model(file: &std::path::Path, name: &str) -> Result<(String, toml::Table)> {
    let spec = crate::experiment::spec::load(file)?;
    if let Some(m) = spec.models.get(name) {
        return Ok((m.model.clone(), m.params.clone()));
    }
    if crate::emu::MODEL_NAMES.contains(&name) {
        return Ok((name.to_string(), toml::Table::new()));
    }
    let entries: Vec<&str> = spec.models.keys().map(String::as_str).collect();
    anyhow::bail!(
        "{} has no [models.{name}] entry ({}); built-in models: {}",
        file.display(),
        if entries.is_empty() {
            "it has no [models] table".to_string()
        } else {
            format!("its entries: {}", entries.join(", "))
        },
        crate::emu::MODEL_NAMES.join(", ")
    )
}

/// `--set KEY=VALUE`; a dotted key (`spindle.rpm=5400`) sets one key of a nested
/// table, keeping the table's other keys given earlier.
fn set_param(params: &mut toml::Table, key: &str, value: toml::Value) {
    match key.split_once('.') {
        Some((outer, inner)) if !outer.is_empty() && !inner.is_empty() => {
            let entry = params
                .entry(outer.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if !entry.is_table() {
                *entry = toml::Value::Table(toml::Table::new());
            }
            if let toml::Value::Table(t) = entry {
                t.insert(inner.to_string(), value);
            }
        }
        _ => {
            params.insert(key.to_string(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::set_param;

    #[test]
    fn dotted_set_keys_fill_a_nested_table() {
        let mut p = toml::Table::new();
        set_param(&mut p, "spindle.rpm", toml::Value::Integer(5400));
        set_param(&mut p, "spindle.write_cache", toml::Value::Boolean(true));
        set_param(&mut p, "cache_bytes", toml::Value::Integer(1 << 24));
        assert_eq!(
            p,
            "cache_bytes = 16777216\nspindle = { rpm = 5400, write_cache = true }"
                .parse::<toml::Table>()
                .unwrap()
        );
        // The result is what raid6 merges one level deep.
        crate::emu::model_by_name("raid6", Some(&p)).unwrap();
    }
}
