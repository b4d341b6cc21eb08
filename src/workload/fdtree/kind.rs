//! fdtree as the rest of jbench sees it: its question is how fast files are
//! created; it promises nothing at a power cut.

use std::sync::Arc;

use crate::workload::declare::{no_promises, no_sequential_threads, EngineKind, EACH_OPERATION};

pub static KIND: EngineKind = EngineKind {
    name: "fdtree",
    example: "",
    build: |t| Ok(Arc::new(super::Fdtree::from_table(t)?)),
    main_phase: Some("file_create"),
    sequential_threads: no_sequential_threads,
    promises: no_promises,
    latency: EACH_OPERATION,
};
