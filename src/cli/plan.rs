//! `jbench plan`: the configurations and the ordered trials of an experiment.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::SpecSource;
use crate::experiment::plan;

pub fn plan(source: &SpecSource) -> Result<ExitCode> {
    let spec = source.load()?;
    out!("{}", plan::describe(&spec, &plan::plan(&spec)));
    Ok(ExitCode::SUCCESS)
}
