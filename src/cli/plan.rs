//! `jbench plan`: the configurations and the ordered trials of an experiment, and with
//! `--shards N` which trials each shard of `jbench run --shard I/N` runs.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::SpecSource;
use crate::experiment::plan;
use crate::scale::shard::{self, ShardBy};

pub fn plan(source: &SpecSource, shards: Option<u64>, by: ShardBy) -> Result<ExitCode> {
    let spec = source.load()?;
    let trials = plan::plan(&spec);
    out!("{}", plan::describe(&spec, &trials));
    if let Some(n) = shards {
        if spec.adaptive.is_some() {
            anyhow::bail!(
                "an experiment with adaptive repetitions cannot be sharded: the extra rounds depend on every shard's results; give a fixed `repetitions`"
            );
        }
        out!("{}", shard::describe(&spec, &trials, n as usize, by));
    }
    Ok(ExitCode::SUCCESS)
}
