//! A user's command as the rest of jbench sees it: the user names its phases, so its
//! first is its main one; what it promises it writes as `durable` lines (seen in the
//! write log, not here), and its `check` is run on every recovered state.

use super::CheckSpec;
use crate::workload::declare::{no_sequential_threads, EngineKind, PromiseReader, EACH_OPERATION};

pub static KIND: EngineKind = EngineKind {
    name: "command",
    example: "run = [\"true\"]",
    build: super::from_table,
    main_phase: None,
    sequential_threads: no_sequential_threads,
    promises: |params| Box::new(Promises(super::check_of(params))),
    latency: EACH_OPERATION,
};

struct Promises(Option<CheckSpec>);

impl PromiseReader for Promises {
    fn makes_promises(&self) -> bool {
        false
    }

    fn check(&self) -> Option<CheckSpec> {
        self.0.clone()
    }
}
