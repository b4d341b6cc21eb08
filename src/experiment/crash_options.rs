//! The `[crash]` table of an experiment: whether `jbench run` runs the crash lab too,
//! how many crash states it (or `jbench crash`) builds from each recorded trial, with
//! which strategies, and what else it measures.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Declares every crash strategy at once: its `Strategy` variant, its name (in the
/// experiment file, records and messages) and the words its coverage is described by.
/// One line per strategy, so the enum, [`Strategy::ALL`] and [`Strategy::info`] cannot
/// disagree. A strategy's planning is its own file in `crash/states/strategy/`,
/// registered by one line there; the spec parser and the results read this half
/// without the crash lab. Strategies after `test builds:` exist only in test builds.
macro_rules! strategies {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal { $($info:tt)* } ),+ ;
     test builds: $( $(#[doc = $t_doc:literal])* $t_variant:ident = $t_name:literal {
         $($t_info:tt)*
     } ),* $(,)?) => {
        /// How a crash state is cut from the write log (docs/crash.md).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Strategy {
            $( $(#[doc = $doc])* #[serde(rename = $name)] $variant, )+
            $( $(#[doc = $t_doc])* #[cfg(test)] #[serde(rename = $t_name)] $t_variant, )*
        }

        impl Strategy {
            /// Every strategy, in the order they are declared.
            pub const ALL: &'static [Strategy] = &[ $( Strategy::$variant, )+ ];

            /// Strategies only a test build has.
            #[cfg(test)]
            const TEST_ONLY: &'static [Strategy] = &[ $( Strategy::$t_variant, )* ];
            #[cfg(not(test))]
            const TEST_ONLY: &'static [Strategy] = &[];

            /// What the strategy says of itself; its planning is `crash/states/strategy/`'s.
            pub const fn info(self) -> &'static StrategyInfo {
                match self {
                    $( Strategy::$variant => &StrategyInfo { name: $name, $($info)* }, )+
                    $( #[cfg(test)] Strategy::$t_variant => &StrategyInfo { name: $t_name, $($t_info)* }, )*
                }
            }
        }
    };
}

strategies! {
    /// Every disk cut at one global sequence number right after a flush or an fsync
    /// marker: a power cut when the caches hold nothing unflushed.
    Prefix = "prefix" { noun: "prefix cuts", states_of: None, when_empty: None, first_share: None },
    /// A prefix up to a flush plus a seeded, order-preserving subset of the writes still
    /// in a volatile cache: what the cache may or may not have written.
    Subset = "subset" { noun: "subsets", states_of: None, when_empty: None, first_share: None },
    /// A subset state with one multi-block write kept only in part: its first logical
    /// blocks.
    Torn = "torn" { noun: "torn writes", states_of: None, when_empty: None, first_share: None },
    /// A multi-block write of a regular file's data kept only up to a logical-block
    /// boundary, at the last cut it is still in a volatile cache: a torn application
    /// page. Tears inside the file's larger pages come first (docs/crash.md).
    TornData = "torn-data" {
        noun: "tears of file data",
        states_of: None,
        when_empty: Some("no multi-block write of file data"),
        first_share: Some(50),
    },
    /// A subset of the volatile blocks right before (and right after) each flush that
    /// makes a synced file's data durable (a checkpoint, a WAL segment, an fsync'ed
    /// file), at least one of that file's blocks left out: every such flush once
    /// before any twice.
    FlushSubset = "flush-subset" {
        noun: "subsets around flushes of synced files",
        states_of: None,
        when_empty: Some("no flush of a synced file"),
        first_share: Some(15),
    },
    /// A power cut among the last writes before each promise (a commit acknowledged,
    /// an fsync returned): every write before the cut, none from it on, at each of the
    /// promised file's last writes, newest first.
    LastWrites = "last-writes" {
        noun: "cuts among the last writes before a promise",
        states_of: None,
        when_empty: Some("no write before a promise"),
        first_share: Some(10),
    },
    /// A prefix state at the persistence points where the ext3/ext4 journal holds the
    /// most committed transactions the replay would walk: recovery at its slowest.
    Fill = "fill" {
        noun: "cuts with journal content",
        states_of: Some(Strategy::Prefix),
        when_empty: Some("no cut with journal content"),
        first_share: None,
    };
    test builds:
    /// What adding a strategy takes: this line and `crash/states/strategy/made_up.rs`.
    MadeUp = "made-up" { noun: "made-up cuts", states_of: None, when_empty: None, first_share: None },
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// Its plan reads the recording's block labels (which file each write's data is).
    pub fn reads_block_labels(self) -> bool {
        matches!(
            self,
            Strategy::TornData | Strategy::FlushSubset | Strategy::LastWrites
        )
    }

    /// Every strategy's name, joined as a sentence ends them: "prefix, subset, torn or
    /// fill" (`last` = "or"), or a plain list (`last` = ",").
    pub fn names(last: &str) -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|s| s.as_str()).collect();
        match names.split_last() {
            Some((tail, head)) if !head.is_empty() && last != "," => {
                format!("{} {last} {tail}", head.join(", "))
            }
            _ => names.join(", "),
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .chain(Self::TEST_ONLY)
            .copied()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unknown crash strategy `{text}`; expected {}",
                    Self::names("or")
                )
            })
    }
}

/// A strategy's name and the words and counting rules its coverage is described by.
#[derive(Debug, PartialEq, Eq)]
pub struct StrategyInfo {
    pub name: &'static str,
    /// What its states are, in a coverage line: "all prefix cuts".
    pub noun: &'static str,
    /// Its states are also another strategy's (fill's are prefix cuts): counted in
    /// that one's total once, and its planned states in that one's.
    pub states_of: Option<Strategy>,
    /// Said instead of "all 0 {noun}" when its space is empty.
    pub when_empty: Option<&'static str>,
    /// Planned before the strategies without one, with up to this percentage of
    /// `states` (all of them when it is the only strategy); what it leaves goes to the
    /// others, split evenly. `None`: an even share of what is left.
    pub first_share: Option<u32>,
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Default `states`: crash states per configuration x workload.
pub const DEFAULT_STATES: u32 = 200;
/// Default `recovery_timing`: states also recovered with model timing on.
pub const DEFAULT_RECOVERY_TIMING: u32 = 10;
/// Default `mount_timeout`: a recovery mount (or fsck) that takes longer is stopped and
/// the state gets `no-verdict`.
pub const DEFAULT_MOUNT_TIMEOUT: Duration = Duration::from_secs(120);
/// Most states per configuration x workload.
pub const MAX_STATES: u32 = 1_000_000;
/// `mount_timeout` range: below a second a healthy journal replay on an emulated
/// spindle would be cut off; past an hour the state is hung, not slow.
pub const MIN_MOUNT_TIMEOUT: Duration = Duration::from_secs(1);
pub const MAX_MOUNT_TIMEOUT: Duration = Duration::from_secs(3600);

/// The `[crash]` table, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct CrashOptions {
    /// The experiment has a `[crash]` table: `jbench run` runs the crash lab on one
    /// extra recording trial per configuration x workload, besides the timed trials.
    /// `jbench crash` runs the lab either way.
    pub requested: bool,
    /// Crash states per configuration x workload.
    pub states: u32,
    /// Strategies the states are spread over, in this order.
    pub strategies: Vec<Strategy>,
    /// Seed of the state choice; `None`: the experiment's `seed`. A parsed experiment
    /// always has `Some`, so the stored spec names the seed its states were cut with.
    pub seed: Option<u64>,
    /// How many states per configuration x workload are also recovered with model
    /// timing on, to time the journal replay and fsck.
    pub recovery_timing: u32,
    /// Also recover as if the journal disk came back empty; `None`: wherever its model
    /// does not keep its contents at a power cut (`ram`; not `nvram`).
    pub lose_journal: Option<bool>,
    /// Longest a recovery step (mount, fsck) may take before the state is given up.
    pub mount_timeout: Duration,
}

impl CrashOptions {
    /// The seed the states are chosen with, given the experiment's own.
    pub fn effective_seed(&self, experiment_seed: u64) -> u64 {
        self.seed.unwrap_or(experiment_seed)
    }
}

impl Default for CrashOptions {
    fn default() -> Self {
        Self {
            requested: false,
            states: DEFAULT_STATES,
            strategies: vec![
                Strategy::TornData,
                Strategy::FlushSubset,
                Strategy::LastWrites,
                Strategy::Prefix,
                Strategy::Subset,
            ],
            seed: None,
            recovery_timing: DEFAULT_RECOVERY_TIMING,
            lose_journal: None,
            mount_timeout: DEFAULT_MOUNT_TIMEOUT,
        }
    }
}
