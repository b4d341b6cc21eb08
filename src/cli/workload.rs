//! `jbench workload ...`: one engine in an existing directory, nothing provisioned.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::{FdtreeArgs, WorkloadCmd};
use crate::run::interrupt;
use crate::workload;

pub fn workload(cmd: WorkloadCmd) -> Result<ExitCode> {
    match cmd {
        WorkloadCmd::Fdtree(args) => return fdtree(args),
        WorkloadCmd::Postmark(args) => workload::postmark::run_cli(&args, &interrupt::install()?)?,
        WorkloadCmd::Iozone(args) => workload::iozone::run_cli(&args, &interrupt::install()?)?,
        WorkloadCmd::Fsync(args) => workload::fsync::run_cli(&args, &interrupt::install()?)?,
        WorkloadCmd::Fio(args) => workload::fio::run_cli(&args, &interrupt::install()?)?,
        WorkloadCmd::Command(args) => workload::command::run_cli(&args, &interrupt::install()?)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn fdtree(args: FdtreeArgs) -> Result<ExitCode> {
    use crate::workload::{fdtree::Fdtree, Workload};
    let tree = Fdtree {
        dirs: args.dirs,
        files: args.files,
        blocks: args.blocks,
        levels: args.levels,
    };
    tree.preflight_cli(&args.dir)?;
    let ctl = interrupt::install()?;
    let phases = tree.run(&args.dir, &ctl)?;
    if args.json {
        let out =
            serde_json::json!({"workload": "fdtree", "params": tree.params(), "phases": phases});
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        out!(
            "{}",
            workload::fdtree::compat_report(&tree, Path::new(&args.dir), &phases)
        );
        outln!();
        out!("{}", workload::fdtree::precise_report(&tree, &phases));
    }
    Ok(ExitCode::SUCCESS)
}
