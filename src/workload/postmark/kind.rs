//! PostMark as the rest of jbench sees it: its question is the transactions' rate;
//! it promises nothing at a power cut (PostMark never syncs).

use crate::workload::declare::{no_promises, no_sequential_threads, EngineKind, EACH_OPERATION};

pub static KIND: EngineKind = EngineKind {
    name: "postmark",
    example: "",
    build: super::from_table,
    main_phase: Some("transactions"),
    sequential_threads: no_sequential_threads,
    promises: no_promises,
    latency: EACH_OPERATION,
};
