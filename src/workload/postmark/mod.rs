//! PostMark 1.53 (Jeffrey Katcher, Network Appliance), re-implemented natively so
//! that a run makes the same files, of the same sizes, in the same order, with the
//! same system calls as the original, and counts what it counts.
//!
//! What is reproduced, and why it matters for comparing figures:
//! - The random stream: MT19937 seeded with the *old* `sgenrand` (Knuth's 69069
//!   recurrence, not `init_genrand`), `RND(x) = genrand() % x` and no draw at all
//!   when `x` is 0. The run first draws `2 * high` values of `RND(95)` for its data
//!   buffer, then per create: location (only with two locations or more),
//!   subdirectory (only with two or more), size; per transaction: `RND(10)` for read
//!   or append, the file (redrawing `RND(2 * number)` until a used slot), the append
//!   size, `RND(10)` for create or delete, the file to delete. One draw out of place
//!   and every later count differs, so the order lives in one place ([`Engine`]).
//! - The slot table of `2 * number` entries, names `1, 2, 3, ...` never reused,
//!   appends that never grow a file past `high`, the final deletion in slot order,
//!   "out of files" ending the transactions early, no fsync anywhere.
//! - The system calls: buffered mode opens as `fopen` does (`"w"`:
//!   `O_WRONLY|O_CREAT|O_TRUNC, 0666`; `"a"`: `O_WRONLY|O_CREAT|O_APPEND, 0666`;
//!   `"r"`: `O_RDONLY`) and reads and writes in the sizes glibc's stdio issues with
//!   its 4096-byte buffer ([`StdioOut`], [`StdioIn`]); unbuffered mode opens as the
//!   original does (`O_RDWR|O_CREAT, 0644`; `O_RDWR|O_APPEND`; `O_RDONLY`) and
//!   issues one call per block plus one for the remainder, even an empty one. The
//!   `fstat` and `lseek` that stdio adds are left out: they change nothing on disk.
//!   `O_CLOEXEC` is added to every open (nothing on disk either) so that commands the
//!   rig spawns meanwhile do not inherit descriptors.
//!
//! Where the engine deliberately differs: the original prints an error and carries
//! on when a call fails; the engine stops with an error naming the call, the path
//! and the errno, since a benchmark that silently skipped files would report
//! meaningless rates. It also creates missing location directories (and removes the
//! ones it made), where the original would fail on every file.
//!
//! # Spec keys (`kind = "postmark"`)
//!
//! Named after PostMark's `set` commands; defaults are PostMark's.
//!
//! | key | type | default | PostMark command | meaning |
//! |---|---|---|---|---|
//! | `size` | `[low, high]` or one integer | `[500, 10000]` | `set size low high` | file sizes in bytes, uniform in `low..high` (one integer: every file that size) |
//! | `number` | integer >= 1 | 500 | `set number` | files created before the transactions (the table holds twice as many) |
//! | `transactions` | integer >= 1 | 500 | `set transactions` | transactions, each a read or append plus a create or delete |
//! | `subdirectories` | integer >= 0 | 0 | `set subdirectories` | subdirectories `s0..` per location (used only when >= 2, as in PostMark) |
//! | `read` | integer >= 1 | 512 | `set read` | read block size in bytes |
//! | `write` | integer >= 1 | 512 | `set write` | write block size in bytes |
//! | `buffering` | bool | `true` | `set buffering` | stdio buffered I/O (`true`) or raw `read`/`write` (`false`) |
//! | `bias_read` | integer -1..=10 | 5 | `set bias read` | chance in 10 of read over append; -1 disables reads and appends |
//! | `bias_create` | integer -1..=10 | 5 | `set bias create` | chance in 10 of create over delete; -1 disables creates and deletes |
//! | `seed` | integer >= 1 | 42 | `set seed` | seed of the random stream |
//! | `locations` | array of `{ path = "a", weight = 1 }` | none (the workload directory) | `set location path weight` | relative directories under the workload directory, picked with probability proportional to `weight` (default 1) |
//!
//! # Phases and counters
//!
//! - `create` (ops = files created for the pool, bytes = bytes written); counters
//!   `created`, `bytes_written`.
//! - `transactions` (ops = transactions done, bytes = bytes read + bytes written);
//!   counters `transactions`, `created`, `read`, `appended`, `deleted`,
//!   `bytes_read`, `bytes_written` (those of the transactions alone).
//! - `delete` (ops = files deleted, bytes = 0); counters `deleted` and PostMark's
//!   run totals `total_created`, `total_read`, `total_appended`, `total_deleted`,
//!   `total_bytes_read`, `total_bytes_written`.
//!
//! # Command line
//!
//! `jbench workload postmark --dir DIR [--pmrc FILE] [overrides]` reads PostMark's
//! own command language from FILE (`set ...`, `load`, `run`, `quit`; relative
//! locations are taken relative to DIR), and prints PostMark's verbose (or terse)
//! report with whole-second `time()` figures and integer rates, then rates from a
//! monotonic clock. `--json` puts a JSON document on stdout and the reports on
//! stderr.
//!
//! # Layout
//!
//! Here: the configuration and its limits. `rng.rs` the random stream, `engine.rs`
//! the workload apart from the file system, `files.rs` the real file operations,
//! `run.rs` the timed phases, `params.rs` the spec table, `report.rs` the printed
//! reports, `cli.rs` the command line, `pmrc.rs` PostMark's command language and
//! `locations.rs` the run's directories.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use nix::errno::Errno;

use crate::workload::{
    reject_unknown, table_u64, Interrupted, ParamError, PhaseResult, RunControl, Workload,
};

pub mod kind;
mod locations;
mod pmrc;
use locations::*;
pub use pmrc::*;

mod rng;
pub use rng::*;
mod engine;
pub use engine::*;
mod files;
pub use files::*;
mod run;
pub use run::*;
mod params;
pub use params::*;
mod report;
pub use report::*;
mod cli;
pub use cli::*;

/// The version whose workload and report this engine reproduces.
pub const POSTMARK_VERSION: &str = "1.53";

/// glibc gives a stream a buffer of the file's `st_blksize`, 4096 on the file
/// systems under test (ext4, xfs, tmpfs), so stdio moves data in 4096-byte calls.
pub const STDIO_BUFFER: usize = 4096;

/// PostMark keeps every count in a C `int`, and doubles `number` and `high`.
const INT_MAX: u64 = i32::MAX as u64;

/// Largest file: PostMark doubles `high` in a C `int` (and holds a buffer of
/// `2 * high` bytes).
const MAX_SIZE: u64 = (1 << 30) - 1;

/// Largest pool: the table of `2 * number` slots is held in memory (16 bytes each),
/// and ten million files is far past any published PostMark run.
pub const MAX_NUMBER: u64 = 10_000_000;

/// Most `s<n>` subdirectories per location: all are made before the first file.
pub const MAX_SUBDIRECTORIES: u64 = 1_000_000;

/// A location must stay inside the workload directory: a relative path of plain
/// components (no `..`, no `.`, not absolute), so a run never writes outside the
/// file system it was given. Symbolic links are checked when the run starts.
pub fn check_location(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if path.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!(
            "`{path}` must be a relative path without `..` (it is taken inside the workload \
             directory)"
        ));
    }
    Ok(())
}

/// A weighted working directory (`set location path weight`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub weight: u32,
}

/// One PostMark configuration: the state its `set` commands build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Postmark {
    pub size_low: u32,
    pub size_high: u32,
    pub number: u32,
    pub transactions: u32,
    pub subdirectories: u32,
    pub read_block: u32,
    pub write_block: u32,
    pub buffering: bool,
    pub bias_read: i32,
    pub bias_create: i32,
    pub seed: u32,
    pub locations: Vec<Location>,
    /// `set report terse`: only the command line's report uses it.
    pub terse: bool,
}

impl Default for Postmark {
    /// PostMark's compiled-in defaults.
    fn default() -> Self {
        Postmark {
            size_low: 500,
            size_high: 10_000,
            number: 500,
            transactions: 500,
            subdirectories: 0,
            read_block: 512,
            write_block: 512,
            buffering: true,
            bias_read: 5,
            bias_create: 5,
            seed: 42,
            locations: Vec::new(),
            terse: false,
        }
    }
}

impl Postmark {
    /// Refuses what PostMark's `set` commands refuse, values its C `int`s could not
    /// hold (it doubles `number` and `high`), tables too large to hold in memory, and
    /// locations outside the workload directory; each message gives the allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        let range = |key: &str, v: u64, lo: u64, hi: u64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(ParamError::new(
                    key,
                    format!("{v} is out of range: must be {lo} to {hi}"),
                ))
            }
        };
        range("size", self.size_low.into(), 1, MAX_SIZE)?;
        range(
            "size",
            self.size_high.into(),
            self.size_low.into(),
            MAX_SIZE,
        )
        .map_err(|e| ParamError::new("size", format!("high: {} (and high >= low)", e.message)))?;
        range("number", self.number.into(), 1, MAX_NUMBER)?;
        range("transactions", self.transactions.into(), 1, INT_MAX)?;
        range(
            "subdirectories",
            self.subdirectories.into(),
            0,
            MAX_SUBDIRECTORIES,
        )?;
        range("read", self.read_block.into(), 1, INT_MAX)?;
        range("write", self.write_block.into(), 1, INT_MAX)?;
        range("seed", self.seed.into(), 1, INT_MAX)?;
        for (key, bias) in [
            ("bias_read", self.bias_read),
            ("bias_create", self.bias_create),
        ] {
            if !(-1..=10).contains(&bias) {
                return Err(ParamError::new(
                    key,
                    format!("{bias} is out of range: must be -1 (disabled) or 0 to 10"),
                ));
            }
        }
        let weight: u64 = self.locations.iter().map(|l| u64::from(l.weight)).sum();
        if weight > INT_MAX {
            return Err(ParamError::new(
                "locations",
                format!("the weights sum to {weight}; at most {INT_MAX} in all"),
            ));
        }
        for l in &self.locations {
            if l.weight == 0 {
                return Err(ParamError::new(
                    "locations",
                    format!("`{}`: weight must be 1 to {INT_MAX}", l.path),
                ));
            }
            check_location(&l.path).map_err(|m| ParamError::new("locations", m))?;
        }
        Ok(())
    }

    /// Most files alive at once: the pool plus one per transaction, but never more
    /// than the table's `2 * number` slots.
    pub fn peak_files(&self) -> u64 {
        let n = u64::from(self.number);
        (n + u64::from(self.transactions)).min(2 * n)
    }

    /// Directories the run makes below its locations.
    fn subdir_count(&self) -> u64 {
        if self.subdirectories > 1 {
            u64::from(self.subdirectories) * self.locations.len().max(1) as u64
        } else {
            0
        }
    }

    fn describe(&self) -> String {
        format!(
            "size {}..{}, number {}, transactions {}, subdirectories {}, read {}, write {}, \
             buffering {}, bias read {}, bias create {}, seed {}",
            self.size_low,
            self.size_high,
            self.number,
            self.transactions,
            self.subdirectories,
            self.read_block,
            self.write_block,
            self.buffering,
            self.bias_read,
            self.bias_create,
            self.seed
        )
    }
}

#[cfg(test)]
mod tests;
