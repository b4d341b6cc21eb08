//! The crash lab (`jbench crash`): what a journal placement buys in safety. Each
//! configuration x workload of an experiment runs once with the write log on; crash
//! states are cut from the log (one global cut across the file-system and journal
//! disks), served by the device daemon over a copy-on-write overlay, recovered by the
//! kernel and fsck, and judged by an oracle that knows what every fsync promised.
//!
//! - `options`: the `[crash]` table (read with the rest of the experiment file, so it
//!   is the experiment's: `experiment::crash_options`);
//! - `states`: which crash states a log yields (pure: no devices);
//! - `block_map`: what each logged block is (journal, metadata, which file's data at
//!   which offset), read with debugfs and kept beside the log, for `torn-data`;
//! - `journal_scan`: the jbd2 blocks of a log's payloads, and what the journal holds
//!   at a cut (for `fill` and each record's `journal_live`);
//! - `promises`: what the workload promised at a cut, from its markers;
//! - `content_key`: what an application can read of a recovered state, as a digest;
//! - `oracle`: recover one state and judge it;
//! - `promise_check`: the promises compared with a recovered tree (mounted or not);
//! - `user_check`: the workload's own check of a recovered state, and what it is handed;
//! - `verdict_cache`: an application's verdict reused for a state with the same input;
//! - `lost_journal_memo`: the lost-journal procedure's outcome reused for a state whose
//!   other disks hold the same records under the same promises;
//! - `app_recovery`: the application started on a recovered state, timed until ready;
//! - `pool`: several recovery rigs checking states at once;
//! - `state_bytes`, `jbd2_replay`, `inode_walk`, `user_verdict`, `fast_path`: a state
//!   judged in user space (its bytes in memory, the journal replayed, the promises
//!   read by `inode_walk`, else with `ext4-view`), the kernel auditing a sample and
//!   every failure;
//! - `lab`: build, check and store the states of one recorded trial;
//! - `campaign`: the lab over every recording of a results directory, resumable.

pub mod app_recovery;
pub mod block_map;
pub mod campaign;
pub mod content_key;
pub mod fast_path;
pub mod inode_walk;
pub mod jbd2_replay;
pub mod journal_scan;
pub mod lab;
pub mod lost_journal_memo;
pub use crate::experiment::crash_options as options;
pub mod oracle;
pub mod outcome_memo;
pub mod pool;
pub mod promise_check;
pub mod promises;
pub mod recover;
pub mod state_bytes;
pub mod states;
pub mod user_check;
pub mod user_verdict;
pub mod verdict_cache;

pub use options::{CrashOptions, Strategy};
