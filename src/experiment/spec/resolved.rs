//! The resolved spec: every default made explicit, as stored with the results.

use super::*;

#[derive(Serialize)]
pub(super) struct Resolved<'a> {
    name: &'a str,
    repetitions: toml::Value,
    noise_band: f64,
    tail_band: f64,
    order: Order,
    seed: u64,
    suspect_below: String,
    monitor_interval: String,
    work_dir: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<&'a str>,
    emulation: toml::Table,
    writeback: toml::Table,
    #[serde(skip_serializing_if = "Option::is_none")]
    crash: Option<toml::Table>,
    /// The `[models]` entries the configurations use.
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    models: toml::Table,
    workload: Vec<toml::Table>,
    config: Vec<toml::Table>,
}

/// One configuration as a `[[config]]` table with every key explicit, so the resolved
/// spec lists exactly the configurations that ran, under their labels. Each factor
/// writes its own key, in the table its key names (`journal.size` in `journal`).
pub(super) fn config_table(c: &Config) -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("label".into(), toml::Value::String(c.label.clone()));
    for f in &FACTORS {
        let Some(value) = (f.store)(c) else {
            continue;
        };
        let (table, name) = match f.key.split_once('.') {
            Some((table, name)) => {
                let sub = t
                    .entry(table)
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                (
                    sub.as_table_mut().expect("a factor's table is a table"),
                    name,
                )
            }
            None => (&mut t, f.key),
        };
        table.insert(name.into(), value);
    }
    if !c.env.is_empty() {
        t.insert(
            "env".into(),
            toml::Value::Table(
                c.env
                    .iter()
                    .map(|(k, v)| (k.clone(), toml::Value::String(v.clone())))
                    .collect(),
            ),
        );
    }
    if c.torn_page_control {
        t.insert("torn_page_control".into(), toml::Value::Boolean(true));
    } else if c.negative_control {
        t.insert("negative_control".into(), toml::Value::Boolean(true));
    }
    t
}

pub(super) fn resolve(spec: &Spec) -> String {
    let s = |x: &str| toml::Value::String(x.to_string());
    let config: Vec<toml::Table> = spec.configs.iter().map(config_table).collect();
    let workload = spec
        .workloads
        .iter()
        .map(|w| {
            let mut t = toml::Table::new();
            t.insert("kind".into(), s(w.engine.kind()));
            t.insert("name".into(), s(&w.name));
            if w.durable {
                t.insert("durable".into(), toml::Value::Boolean(true));
            }
            if let Some(p) = &w.main_phase {
                t.insert("main_phase".into(), s(p));
            }
            if let serde_json::Value::Object(m) = w.engine.params() {
                for (k, v) in m {
                    if let Some(v) = json_to_toml(&v) {
                        t.insert(k, v);
                    }
                }
            }
            t
        })
        .collect();
    let mut emulation = toml::Table::new();
    emulation.insert(
        "write_log".into(),
        toml::Value::Boolean(spec.emulation.write_log),
    );
    emulation.insert(
        "watchdog".into(),
        s(&format!("{}s", spec.emulation.watchdog.as_secs_f64())),
    );
    emulation.insert(
        "pin_cpus".into(),
        toml::Value::Boolean(spec.emulation.pin_cpus),
    );
    emulation.insert("poll".into(), toml::Value::Boolean(spec.emulation.poll));
    let mut writeback = toml::Table::new();
    writeback.insert(
        "sync_at_start".into(),
        toml::Value::Boolean(spec.writeback.sync_at_start),
    );
    let pinned = |d: Option<Duration>| match d {
        Some(d) => s(&crate::units::format_duration(d)),
        None => s("host"),
    };
    writeback.insert("interval".into(), pinned(spec.writeback.interval));
    writeback.insert("expire".into(), pinned(spec.writeback.expire));
    let mut models = toml::Table::new();
    for m in spec
        .configs
        .iter()
        .flat_map(|c| [&c.fs_model, &c.journal_model, &c.second_fs_model])
        .flatten()
    {
        if crate::emu::MODEL_NAMES.contains(&m.name.as_str()) {
            continue; // a built-in model used by name
        }
        let mut t = m.params.clone();
        t.insert("model".into(), s(&m.model));
        models.insert(m.name.clone(), toml::Value::Table(t));
    }
    // Only a `[crash]` the experiment has: its presence is what runs the crash lab.
    let crash = spec
        .crash
        .requested
        .then(|| crash_table(&spec.crash, spec.seed));
    let r = Resolved {
        name: &spec.name,
        repetitions: match spec.adaptive {
            None => toml::Value::Integer(spec.repetitions.into()),
            Some(a) => {
                let mut t = toml::Table::new();
                t.insert("min".into(), toml::Value::Integer(a.min.into()));
                t.insert("max".into(), toml::Value::Integer(a.max.into()));
                t.insert("target_cv".into(), toml::Value::Float(a.target_cv));
                toml::Value::Table(t)
            }
        },
        noise_band: spec.noise_band,
        tail_band: spec.tail_band,
        order: spec.order,
        seed: spec.seed,
        suspect_below: format!("{}s", spec.suspect_below.as_secs_f64()),
        monitor_interval: match spec.monitor_interval {
            Some(d) => format!("{}s", d.as_secs_f64()),
            None => "off".into(),
        },
        work_dir: spec.work_dir.display().to_string(),
        baseline: spec.baseline.as_deref(),
        emulation,
        writeback,
        crash,
        models,
        workload,
        config,
    };
    let body = toml::to_string_pretty(&r).expect("resolved spec serializes");
    let labels: Vec<&str> = spec.configs.iter().map(|c| c.label.as_str()).collect();
    format!(
        "# Resolved by jbench {}: every default made explicit.\n# Configurations: {}\n{body}",
        env!("CARGO_PKG_VERSION"),
        labels.join(" | ")
    )
}

/// `[crash]` with every key explicit. `lose_journal` left to the placement is written
/// `"auto"`, which reads back as not given: writing the per-configuration answer would
/// turn a rule into a fixed choice.
fn crash_table(
    c: &crate::experiment::crash_options::CrashOptions,
    experiment_seed: u64,
) -> toml::Table {
    let int = |n: u64| toml::Value::Integer(n as i64);
    let mut t = toml::Table::new();
    t.insert("states".into(), int(c.states.into()));
    t.insert(
        "strategies".into(),
        toml::Value::Array(
            c.strategies
                .iter()
                .map(|s| toml::Value::String(s.as_str().into()))
                .collect(),
        ),
    );
    t.insert("seed".into(), int(c.effective_seed(experiment_seed)));
    t.insert("recovery_timing".into(), int(c.recovery_timing.into()));
    t.insert(
        "lose_journal".into(),
        match c.lose_journal {
            Some(b) => toml::Value::Boolean(b),
            None => toml::Value::String("auto".into()),
        },
    );
    t.insert(
        "mount_timeout".into(),
        toml::Value::String(crate::units::format_duration(c.mount_timeout)),
    );
    t
}

/// TOML has no null: absent parameters are left out.
pub(super) fn json_to_toml(v: &serde_json::Value) -> Option<toml::Value> {
    use serde_json::Value as J;
    Some(match v {
        J::Null => return None,
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(a) => toml::Value::Array(a.iter().filter_map(json_to_toml).collect()),
        J::Object(m) => toml::Value::Table(
            m.iter()
                .filter_map(|(k, v)| json_to_toml(v).map(|v| (k.clone(), v)))
                .collect(),
        ),
    })
}
