//! iozone as the rest of jbench sees it: its question is the write rate; with
//! `osync` every write is a promise, and each 4 KiB block of its files holds a stamp
//! of the file and the block's offset followed by iozone's fill byte.

use std::path::Path;

use crate::workload::declare::{no_sequential_threads, EngineKind, PromiseReader, EACH_OPERATION};

pub static KIND: EngineKind = EngineKind {
    name: "iozone",
    example: "",
    build: super::from_table,
    main_phase: Some("write"),
    sequential_threads: no_sequential_threads,
    promises: |params| {
        Box::new(Promises {
            osync: params.get("osync").and_then(|o| o.as_bool()) == Some(true),
            threads: params.get("threads").and_then(|t| t.as_u64()).unwrap_or(1),
        })
    },
    latency: EACH_OPERATION,
};

struct Promises {
    osync: bool,
    threads: u64,
}

impl PromiseReader for Promises {
    fn makes_promises(&self) -> bool {
        self.osync
    }

    fn range_content(&self, rel: &str, offset: u64, len: u64) -> Option<Vec<u8>> {
        if !self.osync {
            return None;
        }
        let id = super::file_id(Path::new(rel))?;
        // Single-stream mode writes iozone.tmp only; throughput mode DUMMY files.
        let name = Path::new(rel).file_name()?.to_str()?;
        let single = name == super::SINGLE_FILE;
        if single != (self.threads <= 1) || u64::from(id) >= self.threads.max(1) {
            return None;
        }
        Some(super::stamped_content(id, offset, len))
    }
}
