//! The `[writeback]` table of an experiment: how a trial is put at the same point of
//! the kernel's writeback clock every time (docs/experiment.md, "The writeback clock").
//!
//! Two clocks decide when a file system's dirty data reaches its disk: the flusher's
//! periodic wake-up (`vm.dirty_writeback_centisecs`) with its age limit
//! (`vm.dirty_expire_centisecs`), and the journal's commit timer (5 s). Where a trial's
//! phases fall on them decides how much of a short-lived file is written before it is
//! deleted, so two identical trials can write different amounts. `sync_at_start`
//! restarts both clocks at the workload's first write; `interval` and `expire` pin the
//! flusher's settings for the run, so every trial and every machine of a sharded run
//! uses the same ones.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The longest `interval` or `expire` a spec may pin.
pub const MAX_PIN: Duration = Duration::from_secs(3600);

/// What the `[writeback]` table asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WritebackOptions {
    /// Write back everything and commit every journal right before the workload
    /// starts, outside its clocks (`sync_at_start`, default true). The flusher's
    /// periodic wake-up is armed by the first page dirtied after that, and the journal's
    /// commit timer by the first transaction, so both start with the workload's first
    /// write instead of wherever the mount and the checks left them.
    pub sync_at_start: bool,
    /// `vm.dirty_writeback_centisecs` while the run lasts; `None`: the host's.
    pub interval: Option<Duration>,
    /// `vm.dirty_expire_centisecs` while the run lasts; `None`: the host's.
    pub expire: Option<Duration>,
}

impl Default for WritebackOptions {
    fn default() -> Self {
        Self {
            sync_at_start: true,
            interval: None,
            expire: None,
        }
    }
}

impl WritebackOptions {
    /// Whether the run pins any of the kernel's settings.
    pub fn pins(&self) -> bool {
        self.interval.is_some() || self.expire.is_some()
    }
}

/// Centiseconds, the unit of both sysctls. `None` when `d` is not a whole number of
/// them (the spec refuses such a value rather than round it silently).
pub fn centisecs(d: Duration) -> Option<u64> {
    let ms = d.as_millis();
    (d.subsec_nanos().is_multiple_of(1_000_000) && ms.is_multiple_of(10))
        .then_some((ms / 10) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_centiseconds_convert() {
        assert_eq!(centisecs(Duration::from_secs(5)), Some(500));
        assert_eq!(centisecs(Duration::from_millis(30)), Some(3));
        assert_eq!(centisecs(Duration::ZERO), Some(0));
        assert_eq!(centisecs(Duration::from_millis(15)), None);
        assert_eq!(centisecs(Duration::from_micros(10_500)), None);
    }

    #[test]
    fn the_default_syncs_and_pins_nothing() {
        let d = WritebackOptions::default();
        assert!(d.sync_at_start && !d.pins());
    }
}
