//! The fsync engine as the rest of jbench sees it: its question is how fast files
//! are created and fsync'ed; every file whose fsync returned is a promise, with bytes
//! known from its recorded params; its threads create one file at a time, so its
//! latencies bound its phases.

use std::path::Path;

use super::FsyncSpec;
use crate::workload::declare::{EngineKind, LatencyWords, PromiseReader};

pub static KIND: EngineKind = EngineKind {
    name: "fsync",
    example: "",
    build: super::from_table,
    main_phase: Some("create_fsync"),
    sequential_threads: |params| params.get("threads")?.as_u64(),
    promises: |params| Box::new(Promises(FsyncSpec::from_params(params))),
    latency: LatencyWords {
        title: "latency percentiles",
        what: |phase| match phase {
            "create_fsync" => "each file's create, writes, fsync and close",
            "remove" => "each unlink",
            _ => "each operation",
        },
    },
};

/// The spec back from the trial's params; `None` when they are not this build's.
struct Promises(Option<FsyncSpec>);

impl PromiseReader for Promises {
    fn makes_promises(&self) -> bool {
        true
    }

    fn file_content(&self, abs: &Path) -> Option<Vec<u8>> {
        Some(self.0.as_ref()?.file_content_of(abs))
    }
}
