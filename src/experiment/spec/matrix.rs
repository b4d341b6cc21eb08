//! The configurations of an experiment: every combination of the factors' values (the
//! columns read through [`FACTORS`]), one matrix per `[[config]]` table, labelled by
//! what varies and checked against the kernel's rules (`rules.rs`).

use super::*;

/// The configurations of the experiment: the matrix of `[filesystem]` and `[journal]`,
/// or, with `[[config]]` tables, the union of one matrix per table (each table's keys
/// override the base sections), for sets a single matrix cannot express (ext4 without
/// a journal, in two modes, and XFS).
pub(super) fn build_configs(
    ctx: &Ctx,
    raw: &RawSpec,
    models: &BTreeMap<String, DeviceModelSpec>,
) -> Result<Vec<Config>, SpecError> {
    let base = Sections {
        filesystem: &raw.filesystem,
        journal: &raw.journal,
        memory_limit: &raw.memory_limit,
    };
    let mut all: Vec<(Config, Spans, Option<String>)> = Vec::new();
    if raw.config.is_empty() {
        for (c, s) in expand(ctx, &Layers { over: None, base }, models)? {
            all.push((c, s, None));
        }
    }
    for entry in &raw.config {
        let e = entry.get_ref();
        let over = Sections {
            filesystem: &e.filesystem,
            journal: &e.journal,
            memory_limit: &e.memory_limit,
        };
        let expanded = expand(
            ctx,
            &Layers {
                over: Some(over),
                base,
            },
            models,
        )?;
        if all.len() + expanded.len() > MAX_CONFIGS {
            return Err(ctx.at(
                entry,
                "config",
                format!(
                    "the [[config]] tables make more than {MAX_CONFIGS} configurations, the most one experiment may have; split the experiment"
                ),
            ));
        }
        let label = e.label.as_ref().map(|l| l.get_ref().clone());
        if let Some(l) = &e.label {
            if l.get_ref().trim().is_empty() {
                return Err(ctx.at(l, "config.label", "must not be empty"));
            }
        }
        let env = e
            .env
            .as_ref()
            .map(|v| v.get_ref().clone())
            .unwrap_or_default();
        for k in env.keys() {
            if k.is_empty() || k.contains('=') || k.starts_with("JBENCH_") {
                let s = e.env.as_ref().expect("a key came from it");
                return Err(ctx.at(
                    s,
                    "config.env",
                    format!("`{k}`: a variable name must be non-empty, without `=`, and not start with JBENCH_ (jbench's own)"),
                ));
            }
        }
        if (!env.is_empty() || e.negative_control.is_some() || e.torn_page_control.is_some())
            && label.is_none()
        {
            return Err(ctx.at(
                entry,
                "config.label",
                "a [[config]] table with `env`, `negative_control` or `torn_page_control` needs a `label`: the application's setting is what tells its configurations apart",
            ));
        }
        let torn_page = e.torn_page_control.as_ref().is_some_and(|n| *n.get_ref());
        let negative = torn_page || e.negative_control.as_ref().is_some_and(|n| *n.get_ref());
        for (mut c, s) in expanded {
            c.env = env.clone();
            c.negative_control = negative;
            c.torn_page_control = torn_page;
            all.push((c, s, label.clone()));
        }
    }
    assign_labels(&mut all);
    for (c, s, _) in &all {
        check_combination(ctx, c, s)?;
    }
    let mut seen = BTreeSet::new();
    for (c, _, _) in &all {
        if !seen.insert(c.label.clone()) {
            return Err(ctx.err(
                None,
                "",
                format!(
                    "two configurations would both be labelled `{}`; a list repeats a value or two [[config]] tables describe the same configuration",
                    c.label
                ),
            ));
        }
    }
    Ok(all.into_iter().map(|(c, _, _)| c).collect())
}

/// Where each factor's key was written in one matrix, to blame in errors about
/// combinations, and what `journal.device_model` asked for.
pub(super) struct Spans {
    spans: Vec<Option<Range<usize>>>,
    /// What `journal.device_model` asked for (`Config::journal_model` is what the
    /// placement makes of it).
    pub journal_model_asked: Option<DeviceModelSpec>,
}

impl Spans {
    /// The span of the factor `key`, if the experiment file wrote it.
    pub fn of(&self, key: &str) -> Option<Range<usize>> {
        self.spans[position(key)].clone()
    }
}

/// One matrix: every combination of the factors' values.
fn expand(
    ctx: &Ctx,
    layers: &Layers,
    models: &BTreeMap<String, DeviceModelSpec>,
) -> Result<Vec<(Config, Spans)>, SpecError> {
    let mut read: Vec<Option<Column>> = FACTORS.iter().map(|_| None).collect();
    for i in read_order() {
        let env = Env {
            ctx,
            models,
            key: FACTORS[i].key,
        };
        read[i] = Some((FACTORS[i].read)(&env, layers)?);
    }
    let columns: Vec<Column> = read.into_iter().flatten().collect();
    let dims: Vec<usize> = columns.iter().map(|c| c.len).collect();
    let span = |key: &str| columns[position(key)].span.clone();
    check_matrix_size(
        ctx,
        &dims,
        [span("filesystem.size"), span("journal.placement")],
    )?;
    let spans: Vec<Option<Range<usize>>> = columns.iter().map(|c| c.span.clone()).collect();
    Ok(cartesian(&dims)
        .into_iter()
        .map(|index| {
            let mut c = Config::default();
            for (column, &i) in columns.iter().zip(&index) {
                (column.set)(&mut c, i);
            }
            let asked = settle_journal_model(&mut c);
            settle_second_fs_model(&mut c);
            let spans = Spans {
                spans: spans.clone(),
                journal_model_asked: asked,
            };
            (c, spans)
        })
        .collect())
}

/// Turns what `journal.device_model` asked for into the journal's own disk, which
/// depends on the placement; returns what was asked, for the rules.
fn settle_journal_model(c: &mut Config) -> Option<DeviceModelSpec> {
    let asked = c.journal_model.take();
    c.journal_model = match c.placement {
        // Two spindles of the same kind unless told otherwise.
        Placement::SecondDisk => asked.clone().or_else(|| c.fs_model.clone()),
        Placement::Ramdisk => asked.clone(),
        // On the file system's disk, or no disk of its own (checked later).
        _ => None,
    };
    asked
}

/// A second file system gets a disk of the file system's kind unless told otherwise;
/// without one, a model asked for it means nothing (checked by the rules).
fn settle_second_fs_model(c: &mut Config) {
    if c.second_fs_size.is_some() {
        c.second_fs_model = c.second_fs_model.take().or_else(|| c.fs_model.clone());
    }
}

/// Labels are made of the factor values that vary across all configurations; a
/// `[[config]]` label names its configuration (or prefixes its matrix's labels).
fn assign_labels(all: &mut [(Config, Spans, Option<String>)]) {
    // An empty value means the factor does not apply to that configuration.
    let varying: Vec<&Factor> = label_order()
        .into_iter()
        .filter(|f| {
            let values: BTreeSet<String> = all
                .iter()
                .map(|(c, _, _)| (f.label)(c))
                .filter(|v| !v.is_empty())
                .collect();
            values.len() > 1
        })
        .collect();
    let mut per_label: BTreeMap<Option<String>, usize> = Default::default();
    for (_, _, l) in all.iter() {
        *per_label.entry(l.clone()).or_default() += 1;
    }
    for (c, _, given) in all.iter_mut() {
        let mut parts: Vec<String> = varying
            .iter()
            .map(|f| (f.label)(c))
            .filter(|v| !v.is_empty())
            .collect();
        if parts.is_empty() {
            parts.push(c.placement.to_string());
        }
        let generated = parts.join(",");
        c.label = match given {
            Some(l) if per_label[&Some(l.clone())] == 1 => l.clone(),
            Some(l) => format!("{l},{generated}"),
            None => generated,
        };
    }
}

/// Refuses a matrix of more than [`MAX_CONFIGS`] configurations before it is built
/// (seventeen lists of ten values would be 10^17).
fn check_matrix_size(
    ctx: &Ctx,
    dims: &[usize],
    spans: [Option<Range<usize>>; 2],
) -> Result<(), SpecError> {
    let total = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_CONFIGS);
    if total.is_some() {
        return Ok(());
    }
    let product: Vec<String> = dims
        .iter()
        .filter(|&&d| d > 1)
        .map(|d| d.to_string())
        .collect();
    Err(ctx.err(
        spans.into_iter().flatten().next(),
        "",
        format!(
            "the lists make {} configurations; at most {MAX_CONFIGS} are allowed (a study runs each several times): shorten the lists or split the experiment",
            product.join(" x ")
        ),
    ))
}

/// Every index combination of the given dimensions, the last varying fastest (the
/// order nested loops would give).
pub(super) fn cartesian(dims: &[usize]) -> Vec<Vec<usize>> {
    let total: usize = dims.iter().product();
    (0..total)
        .map(|mut k| {
            let mut idx = vec![0; dims.len()];
            for d in (0..dims.len()).rev() {
                idx[d] = k % dims[d];
                k /= dims[d];
            }
            idx
        })
        .collect()
}
