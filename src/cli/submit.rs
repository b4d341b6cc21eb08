//! `jbench submit`: checks the experiment, copies it next to the launcher (so every
//! machine runs the same text), writes the launcher ([`crate::scale::launch`]) and
//! says how to start it and how to merge; with `--submit`, hands it to `sbatch`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::cli::args::{SchedulerKind, SubmitArgs};
use crate::experiment::{plan, spec};
use crate::scale::launch::{self, Launch, Scheduler};

pub fn submit(args: SubmitArgs) -> Result<ExitCode> {
    let (text, origin) = args.source.read()?;
    let spec = spec::parse(&text, &origin)?;
    let scheduler = match args.scheduler {
        SchedulerKind::Slurm => Scheduler::Slurm,
        SchedulerKind::K8s => Scheduler::K8s,
        SchedulerKind::Parallel => Scheduler::Parallel,
    };
    if args.submit && scheduler != Scheduler::Slurm {
        bail!("--submit starts Slurm jobs only; start the k8s or parallel launcher as it says");
    }
    if args.throttle.is_some() && scheduler == Scheduler::Parallel {
        bail!("--throttle is for slurm and k8s; parallel runs one shard per host at a time, so the hosts in --sshloginfile are the limit");
    }
    let planned = plan::plan(&spec);
    let trials = planned.len();
    let shards = args.shards as usize;
    let by = if args.shard_by == "workload" {
        crate::scale::shard::ShardBy::Workload
    } else {
        crate::scale::shard::ShardBy::Round
    };
    // An empty shard would still take a node and a completion on the scheduler.
    crate::scale::shard::check_shard_count(&planned, shards, by)?;
    let name = launch::dns_name(&spec.name);
    let out = absolute(
        &args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("jbench-submit-{name}"))),
    )?;
    let results_root = absolute(
        &args
            .results_root
            .clone()
            .unwrap_or_else(|| out.join("results")),
    )?;
    let jbench = match &args.jbench {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("cannot find this jbench's path")?,
    };
    if scheduler != Scheduler::K8s {
        // `#SBATCH` lines are not shell words and parallel re-joins its command into
        // one shell line: a path with blanks would split there.
        for p in [&out, &results_root, &jbench] {
            if p.to_string_lossy().contains(char::is_whitespace) {
                bail!(
                    "{}: paths with blanks cannot go into a {} launcher; choose another",
                    p.display(),
                    scheduler_name(scheduler)
                );
            }
        }
    }
    let run_args = args
        .run_args
        .as_deref()
        .map(|a| a.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let l = Launch {
        name: spec.name.clone(),
        spec_file: format!("{name}.toml"),
        spec_text: text.clone(),
        out: out.clone(),
        results_root: results_root.clone(),
        shards,
        shard_by: args.shard_by.clone(),
        throttle: args.throttle.map(|k| k as usize),
        retries: args.retries,
        jbench,
        image: args.image.clone(),
        pvc: args.pvc.clone(),
        work_dir: spec.work_dir.clone(),
        work_host_path: args.work_host_path.clone(),
        max_failed: match args.max_failed_shards {
            Some(n) => (n as usize).min(shards),
            None => launch::default_max_failed(shards),
        },
        sshloginfile: args.sshloginfile.as_deref().map(absolute).transpose()?,
        run_args,
    };

    std::fs::create_dir_all(out.join("logs"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    if scheduler != Scheduler::K8s {
        std::fs::create_dir_all(&results_root)
            .with_context(|| format!("cannot create {}", results_root.display()))?;
    }
    std::fs::write(l.spec_path(), &text)
        .with_context(|| format!("cannot write {}", l.spec_path().display()))?;
    let file = l.file(scheduler);
    std::fs::write(&file, l.render(scheduler))
        .with_context(|| format!("cannot write {}", file.display()))?;
    if scheduler != Scheduler::K8s {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))?;
    }

    outln!(
        "{} of {} ({}, kept together by {}); experiment copied to {}",
        crate::units::count(shards as u64, "shard"),
        spec.name,
        crate::units::count(trials as u64, "trial"),
        args.shard_by,
        l.spec_path().display()
    );
    outln!("wrote {}", file.display());
    match scheduler {
        Scheduler::Slurm if !args.submit => {
            outln!("start:  sbatch {}", file.display());
        }
        Scheduler::Slurm => {}
        Scheduler::K8s => {
            outln!("start:  kubectl apply -f {}", file.display());
            outln!("note:   {}", launch::K8S_IMAGE_NOTE);
        }
        Scheduler::Parallel => {
            outln!("start:  bash {}", file.display());
            if l.sshloginfile.is_some() {
                outln!(
                    "note:   results land under {} on each host: use a shared path or copy them back before merging",
                    results_root.display()
                );
            }
        }
    }
    outln!(
        "merge:  jbench merge {} --out {}",
        results_root.display(),
        out.join("merged").display()
    );
    if args.submit {
        let job = sbatch(&file)?;
        outln!("submitted Slurm job {job} (array 0-{})", shards - 1);
    }
    Ok(ExitCode::SUCCESS)
}

fn scheduler_name(s: Scheduler) -> &'static str {
    match s {
        Scheduler::Slurm => "slurm",
        Scheduler::K8s => "k8s",
        Scheduler::Parallel => "parallel",
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// `sbatch --parsable FILE`: the job id (`<id>` or `<id>;<cluster>`).
fn sbatch(file: &Path) -> Result<String> {
    let out = std::process::Command::new("sbatch")
        .arg("--parsable")
        .arg(file)
        .output()
        .context("cannot run sbatch (is Slurm's client installed?)")?;
    if !out.status.success() {
        bail!(
            "sbatch {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = stdout
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!(
            "sbatch printed no job id (its output: `{}`); is Slurm answering (`sinfo`)?",
            stdout.trim()
        );
    }
    Ok(id)
}
