//! fio as the rest of jbench sees it: the user names its phases (jobs), so its first
//! is its main one; the jobs jbench can follow promise what they sync, with bytes
//! derived from the recorded job text (`promises.rs`); its recorded latency is
//! fio's completion latency.

use super::promises::{within_work_dir, Plan, Rule};
use crate::workload::declare::{no_sequential_threads, EngineKind, LatencyWords, PromiseReader};

pub static KIND: EngineKind = EngineKind {
    name: "fio",
    example: "job_text = \"[w]\\nrw=write\\nsize=1M\\n\"",
    build: super::from_table,
    main_phase: None,
    // Latencies overlap with `iodepth` and across jobs: they bound no phase.
    sequential_threads: no_sequential_threads,
    promises: |params| {
        let plan = params
            .get("job_text")
            .and_then(|t| t.as_str())
            .and_then(Plan::of_text);
        Box::new(Promises { plan })
    },
    latency: LatencyWords {
        title: "completion latency (clat)",
        what: |_| {
            "fio's completion latency (clat: the I/O's completion, without the fsync or fdatasync fio times separately)"
        },
    },
};

/// The job file's plan, parsed once per trial.
struct Promises {
    plan: Option<Plan>,
}

impl PromiseReader for Promises {
    fn makes_promises(&self) -> bool {
        self.plan.as_ref().is_some_and(|p| p.promises())
    }

    fn range_content(&self, rel: &str, offset: u64, len: u64) -> Option<Vec<u8>> {
        match self.plan.as_ref()?.rule(within_work_dir(rel)) {
            Rule::Pattern(p) => Some(p.content(offset, len)),
            Rule::Exists | Rule::Ignore => None,
        }
    }
}
