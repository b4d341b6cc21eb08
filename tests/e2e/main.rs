//! The integration tests, in one binary (one link instead of one per file), grouped
//! by the flow they exercise: rig -> emulated disks -> workloads -> runs -> crash lab
//! -> reports -> scale-out, and qualifying a device; `structure` holds the source tree
//! to its shape (no two folders import each other). Tests that must not share the
//! machine with others (timing, machine-wide state) are in `tests/serial`.
//!
//! A test that needs root, a tool or a kernel feature says so with [`require!`]:
//! outside CI it skips with the reason, under CI (`CI=true`) it fails.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;
#[path = "../html_fixture/mod.rs"]
mod html_fixture;

mod crash;
mod emu;
mod qualify;
mod report;
mod rig;
mod run;
mod scale;
mod structure;
mod workload;
