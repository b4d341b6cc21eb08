//! The tables of an experiment file that are not factors of the matrix: `[emulation]`,
//! `[crash]`, `[writeback]`, `[models]` (device models with overridden parameters) and
//! `[[workload]]`.

use super::*;

/// The `[emulation]` table; its absence means the defaults.
pub(super) fn build_emulation(
    ctx: &Ctx,
    raw: &Key<RawEmulation>,
) -> Result<EmulationOptions, SpecError> {
    let mut out = EmulationOptions::default();
    let Some(raw) = raw else {
        return Ok(out);
    };
    let e = raw.get_ref();
    if let Some(w) = &e.write_log {
        out.write_log = *w.get_ref();
    }
    if let Some(p) = &e.pin_cpus {
        out.pin_cpus = *p.get_ref();
    }
    if let Some(p) = &e.poll {
        out.poll = *p.get_ref();
    }
    if let Some(d) = &e.image_dir {
        let path = std::path::PathBuf::from(d.get_ref());
        if !path.is_absolute() {
            return Err(ctx.at(
                d,
                "emulation.image_dir",
                format!(
                    "`{}` is not an absolute path; name the directory from / (default {})",
                    d.get_ref(),
                    crate::emu::DEFAULT_IMAGE_DIR
                ),
            ));
        }
        out.image_dir = path;
    }
    if let Some(w) = &e.watchdog {
        let d = parse_duration(w.get_ref()).map_err(|m| ctx.at(w, "emulation.watchdog", m))?;
        if d < MIN_WATCHDOG {
            return Err(ctx.at(
                w,
                "emulation.watchdog",
                format!(
                    "`{}` is too short; the watchdog must allow at least 1s (allowed 1s to 86400s)",
                    w.get_ref()
                ),
            ));
        }
        let d = crate::units::parse_duration_in(w.get_ref(), MIN_WATCHDOG, MAX_WATCHDOG)
            .map_err(|m| ctx.at(w, "emulation.watchdog", m))?;
        out.watchdog = d;
    }
    Ok(out)
}

/// The `[writeback]` table. `interval` and `expire` take a duration or `"host"` (the
/// default: the host's setting is left alone).
pub(super) fn build_writeback(
    ctx: &Ctx,
    raw: &Key<RawWriteback>,
) -> Result<WritebackOptions, SpecError> {
    use crate::experiment::writeback_options::{centisecs, MAX_PIN};
    let mut out = WritebackOptions::default();
    let Some(raw) = raw else {
        return Ok(out);
    };
    let w = raw.get_ref();
    if let Some(s) = &w.sync_at_start {
        out.sync_at_start = *s.get_ref();
    }
    let pin = |v: &Key<String>, key: &str, sysctl: &str| -> Result<Option<Duration>, SpecError> {
        let Some(v) = v else {
            return Ok(None);
        };
        if v.get_ref() == "host" {
            return Ok(None);
        }
        let d =
            crate::units::parse_duration_in(v.get_ref(), Duration::ZERO, MAX_PIN).map_err(|m| {
                ctx.at(
                    v,
                    key,
                    format!("{m}, or \"host\" to leave {sysctl} as it is"),
                )
            })?;
        if centisecs(d).is_none() {
            return Err(ctx.at(
                v,
                key,
                format!(
                    "`{}` is not a whole number of centiseconds, the unit of {sysctl}; give e.g. \"5s\" or \"250ms\"",
                    v.get_ref()
                ),
            ));
        }
        Ok(Some(d))
    };
    out.interval = pin(
        &w.interval,
        "writeback.interval",
        "vm.dirty_writeback_centisecs",
    )?;
    out.expire = pin(&w.expire, "writeback.expire", "vm.dirty_expire_centisecs")?;
    Ok(out)
}

/// The `[crash]` table: its presence makes `jbench run` run the crash lab too; its
/// absence means the defaults (for `jbench crash`).
/// `seed` falls back to the experiment's, so the stored spec names the seed in use.
pub(super) fn build_crash(
    ctx: &Ctx,
    raw: &Key<RawCrash>,
    experiment_seed: u64,
) -> Result<CrashOptions, SpecError> {
    use crate::experiment::crash_options::{
        DEFAULT_RECOVERY_TIMING, MAX_MOUNT_TIMEOUT, MAX_STATES, MIN_MOUNT_TIMEOUT,
    };
    let mut out = CrashOptions {
        seed: Some(experiment_seed),
        ..CrashOptions::default()
    };
    let Some(raw) = raw else {
        return Ok(out);
    };
    out.requested = true;
    let c = raw.get_ref();
    // A whole number in `min..=max`; `range` says what the allowed range is.
    let count = |v: &Spanned<toml::Value>, key: &str, min: u32, max: u32, range: &str| match v
        .get_ref()
        .as_integer()
    {
        Some(i) if (i64::from(min)..=i64::from(max)).contains(&i) => Ok(i as u32),
        Some(i) => Err(ctx.at(v, key, format!("{i} is out of range: allowed {range}"))),
        None => Err(ctx.at(
            v,
            key,
            format!(
                "expected a whole number ({range}); found {}",
                kind_of(v.get_ref())
            ),
        )),
    };
    if let Some(v) = &c.states {
        let range = format!("1 to {MAX_STATES} states per configuration x workload");
        out.states = count(v, "crash.states", 1, MAX_STATES, &range)?;
    }
    out.recovery_timing = match &c.recovery_timing {
        Some(v) => {
            let range = format!("0 to crash.states, {}", out.states);
            count(v, "crash.recovery_timing", 0, out.states, &range)?
        }
        // Asking for 5 states must not be refused over a default nobody wrote.
        None => DEFAULT_RECOVERY_TIMING.min(out.states),
    };
    if let Some(v) = &c.strategies {
        out.strategies = read_strategies(ctx, v)?;
    }
    if let Some(v) = &c.seed {
        out.seed = Some(match v.get_ref().as_integer() {
            Some(i) if i >= 0 => i as u64,
            Some(i) => {
                return Err(ctx.at(
                    v,
                    "crash.seed",
                    format!("{i} is out of range: allowed 0 to {}", i64::MAX),
                ))
            }
            None => {
                return Err(ctx.at(
                    v,
                    "crash.seed",
                    format!(
                        "expected a whole number from 0 to {}; found {}",
                        i64::MAX,
                        kind_of(v.get_ref())
                    ),
                ))
            }
        });
    }
    if let Some(v) = &c.lose_journal {
        out.lose_journal = match v.get_ref() {
            toml::Value::Boolean(b) => Some(*b),
            toml::Value::String(t) if t == "auto" => None,
            other => {
                return Err(ctx.at(
                    v,
                    "crash.lose_journal",
                    format!(
                        "expected true, false or \"auto\" (\"auto\": on where the journal is alone on a disk whose model does not keep its contents, `ram`; `nvram` keeps them); found {}",
                        match other {
                            toml::Value::String(t) => format!("\"{t}\""),
                            other => kind_of(other).to_string(),
                        }
                    ),
                ))
            }
        };
    }
    if let Some(t) = &c.mount_timeout {
        let blame = |m: String| ctx.at(t, "crash.mount_timeout", m);
        let text = t.get_ref().as_str().ok_or_else(|| {
            blame(format!(
                "expected a duration such as \"120s\" (1s to 3600s); found {}",
                kind_of(t.get_ref())
            ))
        })?;
        out.mount_timeout =
            crate::units::parse_duration_in(text, MIN_MOUNT_TIMEOUT, MAX_MOUNT_TIMEOUT)
                .map_err(blame)?;
    }
    Ok(out)
}

/// `strategies = ["prefix", "subset"]`: a non-empty list, each strategy once.
fn read_strategies(
    ctx: &Ctx,
    v: &Spanned<toml::Value>,
) -> Result<Vec<crate::experiment::crash_options::Strategy>, SpecError> {
    use crate::experiment::crash_options::Strategy;
    let blame = |m: String| ctx.at(v, "crash.strategies", m);
    let toml::Value::Array(items) = v.get_ref() else {
        return Err(blame(format!(
            "expected a list of strategies such as [\"prefix\", \"subset\"]; found {}",
            kind_of(v.get_ref())
        )));
    };
    if items.is_empty() {
        return Err(blame(format!(
            "the list is empty; name at least one of {}",
            Strategy::names(",")
        )));
    }
    let mut out = Vec::new();
    for item in items {
        let Some(text) = item.as_str() else {
            return Err(blame(format!(
                "expected strategy names ({}); found {}",
                Strategy::names(","),
                kind_of(item)
            )));
        };
        let s = Strategy::parse(text).map_err(blame)?;
        if out.contains(&s) {
            return Err(blame(format!(
                "`{s}` is listed twice; name each strategy once"
            )));
        }
        out.push(s);
    }
    Ok(out)
}

/// The `[models]` table: each entry a built-in model (`model = "hdd-7200"`) with some
/// of its parameters overridden, checked by building the model once.
pub(super) fn build_models(
    ctx: &Ctx,
    raw: &BTreeMap<String, Spanned<toml::Table>>,
) -> Result<BTreeMap<String, DeviceModelSpec>, SpecError> {
    let mut out = BTreeMap::new();
    for (name, t) in raw {
        let key = format!("models.{name}");
        let blame = |message: String| ctx.at(t, &key, message);
        if crate::emu::MODEL_NAMES.contains(&name.as_str()) {
            return Err(blame(format!(
                "`{name}` is a built-in model; give the [models] entry another name (e.g. `my-{name}`) and set model = \"{name}\""
            )));
        }
        if name.trim().is_empty() || name.contains(',') {
            return Err(blame(
                "a model name must be non-empty and contain no `,` (it appears in labels)".into(),
            ));
        }
        let mut params = t.get_ref().clone();
        let model = match params.remove("model") {
            Some(toml::Value::String(m)) => m,
            Some(_) => {
                let m =
                    "`model` must be a string naming a built-in model, e.g. model = \"hdd-7200\"";
                return Err(blame(m.into()));
            }
            None => {
                return Err(blame(format!(
                    "missing `model`: the built-in model this entry is made from ({})",
                    crate::emu::MODEL_NAMES.join(", ")
                )))
            }
        };
        crate::emu::model_by_name(&model, Some(&params)).map_err(|e| blame(e.to_string()))?;
        out.insert(
            name.clone(),
            DeviceModelSpec {
                name: name.clone(),
                model,
                params,
            },
        );
    }
    Ok(out)
}

/// What a `device_model` value names: a `[models]` entry or a built-in model.
pub(super) fn model_of(
    models: &BTreeMap<String, DeviceModelSpec>,
    name: &str,
) -> Result<DeviceModelSpec, String> {
    if let Some(m) = models.get(name) {
        return Ok(m.clone());
    }
    if crate::emu::MODEL_NAMES.contains(&name) {
        crate::emu::model_by_name(name, None).map_err(|e| e.to_string())?;
        return Ok(DeviceModelSpec::builtin(name));
    }
    let entries: Vec<&str> = models.keys().map(String::as_str).collect();
    Err(format!(
        "unknown device model `{name}`; built-in models: {}; [models] entries: {}",
        crate::emu::MODEL_NAMES.join(", "),
        if entries.is_empty() {
            "(none)".to_string()
        } else {
            entries.join(", ")
        }
    ))
}

pub(super) fn build_workloads(
    ctx: &Ctx,
    raws: &[Spanned<toml::Table>],
) -> Result<Vec<WorkloadSpec>, SpecError> {
    if raws.is_empty() {
        return Err(ctx.err(
            None,
            "workload",
            "the experiment has no [[workload]]; add one, e.g.\n[[workload]]\nkind = \"fdtree\"\ndirs = 3\nfiles = 4\nblocks = 1\nlevels = 5",
        ));
    }
    let mut out: Vec<WorkloadSpec> = Vec::new();
    for (i, w) in raws.iter().enumerate() {
        let table = w.get_ref();
        let key = format!("workload[{i}]");
        // The table's own keys carry no spans; find each key's line inside the table.
        let blame = |k: &str, message: String| {
            ctx.err(
                Some(key_span(ctx.text, w.span(), k)),
                &format!("{key}.{k}"),
                message,
            )
        };
        let kind = match table.get("kind") {
            Some(toml::Value::String(k)) => k.as_str(),
            Some(_) => {
                return Err(blame(
                    "kind",
                    "must be a string, e.g. kind = \"fdtree\"".into(),
                ))
            }
            None => {
                return Err(blame(
                    "kind",
                    format!(
                        "missing (use kind = \"{}\")",
                        crate::workload::kind::names().join("\" or \"")
                    ),
                ))
            }
        };
        let engine =
            crate::workload::from_table(kind, table).map_err(|e| blame(&e.key, e.message))?;
        let name = match table.get("name") {
            Some(toml::Value::String(n)) if n.trim().is_empty() || n.contains('/') => {
                return Err(blame("name", "must be non-empty and contain no `/`".into()))
            }
            Some(toml::Value::String(n)) => n.clone(),
            Some(_) => return Err(blame("name", "must be a string".into())),
            None => engine.default_name(),
        };
        let durable = match table.get("durable") {
            None => false,
            Some(toml::Value::Boolean(b)) => *b,
            Some(_) => return Err(blame("durable", "must be true or false".into())),
        };
        let main_phase = match table.get("main_phase") {
            None => None,
            Some(toml::Value::String(p)) => {
                Some(checked_main_phase(p, &*engine, durable).map_err(|m| blame("main_phase", m))?)
            }
            Some(_) => {
                return Err(blame(
                    "main_phase",
                    "must be a string naming a phase".into(),
                ))
            }
        };
        let rates =
            neighbour_rates(table.get("neighbour_rate")).map_err(|m| blame("neighbour_rate", m))?;
        for (suffix, neighbour_rate) in rates {
            let name = format!("{name}{suffix}");
            if out.iter().any(|o| o.name == name) {
                return Err(blame(
                    "name",
                    format!("two workloads are named `{name}`; give each a unique name"),
                ));
            }
            out.push(WorkloadSpec {
                name,
                engine: engine.clone(),
                durable,
                main_phase: main_phase.clone(),
                neighbour_rate,
            });
        }
    }
    Ok(out)
}

/// `neighbour_rate`: absent (no neighbour), one rate, or a list of rates, each a size
/// per second ("8M", "0" for none). A list makes one workload per rate, named
/// `NAME@nbRATE` so each is analysed, compared with its baseline and answered apart:
/// the rate is the load the configurations are compared under, not a configuration.
fn neighbour_rates(v: Option<&toml::Value>) -> Result<Vec<(String, Option<u64>)>, String> {
    const HOW: &str = "must be bytes per second as a size (\"8M\" = 8 MiB/s, \"0\" = none) or a list of them, e.g. neighbour_rate = [\"0\", \"2M\", \"8M\"]";
    let one = |v: &toml::Value| -> Result<(String, Option<u64>), String> {
        let text = match v {
            toml::Value::String(s) => s.trim().to_string(),
            toml::Value::Integer(i) if *i >= 0 => i.to_string(),
            _ => return Err(HOW.into()),
        };
        let bytes = crate::units::parse_size(&text).map_err(|e| format!("`{text}`: {e}; {HOW}"))?;
        if bytes > 0 && bytes < 256 << 10 {
            return Err(format!(
                "`{text}` is below 256K/s, the neighbour's smallest write per second; use \"0\" for none"
            ));
        }
        Ok((text, (bytes > 0).then_some(bytes)))
    };
    match v {
        None => Ok(vec![(String::new(), None)]),
        Some(toml::Value::Array(list)) if list.is_empty() => Err(HOW.into()),
        Some(toml::Value::Array(list)) if list.len() == 1 => {
            one(&list[0]).map(|(_, r)| vec![(String::new(), r)])
        }
        Some(toml::Value::Array(list)) => list
            .iter()
            .map(|v| one(v).map(|(text, r)| (format!("@nb{text}"), r)))
            .collect(),
        Some(v) => one(v).map(|(_, r)| vec![(String::new(), r)]),
    }
}

/// `phase` if the engine runs it (or, with `durable`, its `+syncfs` variant), else
/// why not, listing the phases it may name.
fn checked_main_phase(
    phase: &str,
    engine: &dyn crate::workload::Workload,
    durable: bool,
) -> Result<String, String> {
    let suffix = crate::workload::DURABLE_SUFFIX;
    let mut allowed: Vec<String> = engine.phase_names().iter().map(|p| p.to_string()).collect();
    if durable {
        let timed: Vec<String> = allowed.iter().map(|p| format!("{p}{suffix}")).collect();
        allowed.extend(timed);
    }
    if allowed.iter().any(|p| p == phase) {
        return Ok(phase.to_string());
    }
    let hint = if !durable && phase.ends_with(suffix) {
        " (`+syncfs` phases exist only with durable = true)"
    } else {
        ""
    };
    Err(format!(
        "unknown phase `{phase}` for kind = \"{}\"{hint}; phases: {}",
        engine.kind(),
        allowed.join(", ")
    ))
}

/// The span of `key = ...` inside the table spanning `table`, else the table itself.
fn key_span(text: &str, table: Range<usize>, key: &str) -> Range<usize> {
    let end = table.end.min(text.len());
    let mut offset = table.start.min(end);
    for line in text[offset..end].split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                return offset..offset + line.len();
            }
        }
        offset += line.len();
    }
    table
}
