//! `jbench merge`: the sealed shard attempts into one results directory
//! ([`crate::scale::merge`]), its summary.csv as `jbench run` writes it, and what was
//! used and ignored.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::MergeArgs;
use crate::report::{self, Format, ReportOptions};
use crate::results::store;
use crate::scale::merge::{self, MergeOutcome, MergeRequest};

pub fn merge(args: MergeArgs) -> Result<ExitCode> {
    let outcome = merge::merge(&MergeRequest {
        dirs: args.dirs,
        out: args.out.clone(),
        partial: args.partial,
        allow_heterogeneous: args.allow_heterogeneous,
    })?;
    let dir = &args.out;
    let results = crate::results::open(dir)?;
    let opts = ReportOptions::of_results(&results, None, None)?;
    store::write_summary(dir, &report::render(&results.records, &opts, Format::Csv))?;
    print_outcome(&outcome, dir)?;
    for w in &opts.warnings {
        eprintln!("jbench: warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

fn print_outcome(o: &MergeOutcome, dir: &std::path::Path) -> Result<()> {
    let m = &o.record;
    outln!(
        "merged {} of {} shards (--shard-by {}) into {}",
        m.attempts.len(),
        m.shards,
        m.shard_by,
        dir.display()
    );
    outln!("attempts used:");
    for a in &m.attempts {
        outln!(
            "  shard {}: {} (machine {}, sealed {}{})",
            a.shard,
            a.dir,
            a.machine,
            a.sealed_at,
            scheduler(&a.scheduler)
        );
    }
    if !m.duplicates_ignored.is_empty() {
        outln!("duplicates ignored (another attempt of the shard was sealed first):");
        for d in &m.duplicates_ignored {
            outln!(
                "  shard {}: {} (sealed {}{})",
                d.shard,
                d.dir,
                d.sealed_at,
                scheduler(&d.scheduler)
            );
        }
    }
    if !m.unsealed_ignored.is_empty() {
        outln!("not sealed (an attempt that did not finish), ignored:");
        for d in &m.unsealed_ignored {
            outln!("  {d}");
        }
    }
    for s in &o.skipped {
        outln!("skipped: {s}");
    }
    if m.partial {
        outln!(
            "missing shards: {} ({} trials); finish with: jbench run SPEC --resume {}",
            m.missing_shards
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            m.missing_trials.len(),
            dir.display()
        );
    }
    outln!("trials merged: {}", o.trials);
    outln!(
        "machines: {}{}",
        m.machines.len(),
        if m.heterogeneous {
            " (heterogeneous: the report keeps them apart as <label>@<machine>)"
        } else {
            ""
        }
    );
    for (id, f) in &m.machines {
        let n = m.trial_machine.values().filter(|t| *t == id).count();
        outln!(
            "  {id}: {}, {} CPUs, {} MiB, kernel {}, {}: {n} trials",
            f.cpu_model,
            f.cpus,
            f.memory_bytes >> 20,
            f.kernel,
            f.virtualization
        );
    }
    Ok(())
}

fn scheduler(ids: &std::collections::BTreeMap<String, String>) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let list: Vec<String> = ids.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(", {}", list.join(" "))
}
