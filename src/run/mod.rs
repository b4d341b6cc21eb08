//! Carrying out a plan: preflight checks, the runner that walks the trials, the
//! `Executor` that does one trial (rig + workload + monitors) and its scripted
//! stand-in for tests, trials side by side in child processes (`jobs`, `child`), adaptive extra rounds, progress output, Ctrl-C handling and the
//! clean-up of what an interrupted run left behind.

pub mod adaptive;
pub mod child;
pub mod cleanup;
pub mod ending;
pub mod executor;
pub mod interrupt;
pub mod jobs;
pub mod jobs_check;
pub mod preflight;
pub mod request;
pub mod runner;
pub mod scripted;
pub mod session;
