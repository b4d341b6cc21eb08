//! Stalls injected on purpose, for tests (docs/devices.md, "Stalls"): which trial's
//! daemon to hold, where, and for how long, as `JBENCH_EMU_INJECT_STALL` says.

use anyhow::Result;

/// Where an injected stall holds the daemon ([`super::DeviceDaemon::inject_stall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallAt {
    /// The FUSE thread, before the next disk request's image I/O.
    Io,
    /// The completion thread, before the next answer it sends.
    Answer,
}

/// A stall to inject into one trial's daemon (`JBENCH_EMU_INJECT_STALL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedStall {
    /// The trial (its index in the plan) whose daemon stalls.
    pub trial: usize,
    pub at: StallAt,
    pub ms: u64,
}

/// The environment variable that injects a stall into one trial (a testing aid,
/// docs/devices.md "Stalls"): `TRIAL:io:MS` or `TRIAL:answer:MS`.
pub const INJECT_STALL_VAR: &str = "JBENCH_EMU_INJECT_STALL";

impl InjectedStall {
    /// Parses `TRIAL:io:MS` or `TRIAL:answer:MS`.
    pub fn parse(text: &str) -> Result<Self> {
        let parts: Vec<&str> = text.trim().split(':').collect();
        let usage = || {
            anyhow::anyhow!(
                "{INJECT_STALL_VAR}=`{text}`: expected TRIAL:io:MS or TRIAL:answer:MS, e.g. 0:io:3000"
            )
        };
        let [trial, at, ms] = parts.as_slice() else {
            return Err(usage());
        };
        Ok(Self {
            trial: trial.parse().map_err(|_| usage())?,
            at: match *at {
                "io" => StallAt::Io,
                "answer" => StallAt::Answer,
                _ => return Err(usage()),
            },
            ms: ms.parse().map_err(|_| usage())?,
        })
    }

    /// The stall `JBENCH_EMU_INJECT_STALL` asks for in trial `trial`, if any.
    pub fn for_trial(trial: usize) -> Result<Option<Self>> {
        match std::env::var(INJECT_STALL_VAR) {
            Ok(v) if !v.trim().is_empty() => {
                Ok(Some(Self::parse(&v)?).filter(|s| s.trial == trial))
            }
            _ => Ok(None),
        }
    }
}
