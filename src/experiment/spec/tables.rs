//! The tables of an experiment file that are not factors of the matrix: `[emulation]`,
//! `[models]` (device models with overridden parameters) and `[[workload]]`.

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
                        crate::workload::KINDS.join("\" or \"")
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
        if out.iter().any(|o| o.name == name) {
            return Err(blame(
                "name",
                format!("two workloads are named `{name}`; give each a unique name"),
            ));
        }
        out.push(WorkloadSpec {
            name,
            engine,
            durable,
            main_phase,
        });
    }
    Ok(out)
}

/// `phase` if the engine runs it (or, with `durable`, its `+syncfs` variant), else
/// why not, listing the phases it may name.
fn checked_main_phase(
    phase: &str,
    engine: &dyn crate::workload::Workload,
    durable: bool,
) -> Result<String, String> {
    let suffix = crate::analysis::DURABLE_SUFFIX;
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
