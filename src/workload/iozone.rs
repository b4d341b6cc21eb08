//! (being written)

use crate::workload::{ParamError, RunControl};

/// Command-line arguments of `jbench workload iozone`.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in.
    #[arg(long)]
    pub dir: std::path::PathBuf,
}

pub fn run_cli(_args: &CliArgs, _ctl: &RunControl) -> anyhow::Result<()> {
    anyhow::bail!("the iozone engine is not built yet")
}

pub fn from_table(
    _t: &toml::Table,
) -> Result<std::sync::Arc<dyn crate::workload::Workload>, ParamError> {
    Err(ParamError::new(
        "kind",
        "the iozone engine is not built yet",
    ))
}
