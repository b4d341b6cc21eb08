//! The kernel's writeback settings and the CPU frequency governor: machine-wide
//! settings that move journaling figures (how long dirty data may wait, how much may
//! pile up before writers are throttled, how fast a core runs).

use serde::{Deserialize, Serialize};

/// `/proc/sys/vm/dirty_*`: when the kernel starts writing dirty pages back, and when
/// it makes writers wait. `None`: the file could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Writeback {
    /// Percent of available memory that may be dirty before writers are throttled.
    pub dirty_ratio: Option<u64>,
    /// Percent of available memory at which background writeback starts.
    pub dirty_background_ratio: Option<u64>,
    /// Bytes instead of `dirty_ratio` when not 0 (the kernel keeps one of the two).
    pub dirty_bytes: Option<u64>,
    /// Bytes instead of `dirty_background_ratio` when not 0.
    pub dirty_background_bytes: Option<u64>,
    /// Age (1/100 s) after which dirty data is written back.
    pub dirty_expire_centisecs: Option<u64>,
    /// Interval (1/100 s) of the writeback threads' wake-ups.
    pub dirty_writeback_centisecs: Option<u64>,
}

impl Writeback {
    /// This machine's settings.
    pub fn collect() -> Writeback {
        let vm = |name: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let mut w = Writeback {
            dirty_ratio: vm("dirty_ratio"),
            dirty_background_ratio: vm("dirty_background_ratio"),
            dirty_bytes: vm("dirty_bytes"),
            dirty_background_bytes: vm("dirty_background_bytes"),
            dirty_expire_centisecs: vm("dirty_expire_centisecs"),
            dirty_writeback_centisecs: vm("dirty_writeback_centisecs"),
        };
        // Another jbench on this host (a shard beside this one) may have them changed
        // for its trial or its run: the machine's settings are what it will put back.
        // Reading them needs root (the lock is under /run); without, they are as read.
        if let Ok(l) = crate::rig::dirty::SETTINGS.machine_values() {
            w.set_dirty_limits(l);
        }
        if let Ok(c) = crate::rig::writeback::SETTINGS.machine_values() {
            w.dirty_writeback_centisecs = Some(c.dirty_writeback_centisecs);
            w.dirty_expire_centisecs = Some(c.dirty_expire_centisecs);
        }
        w
    }

    /// The four dirty-limit fields as the kernel shows `l`: of a ratio and a byte
    /// count, the one not in use reads 0.
    pub fn set_dirty_limits(&mut self, l: crate::rig::dirty::Limits) {
        use crate::rig::dirty::Setting;
        let split = |s: Setting| match s {
            Setting::Ratio(r) => (Some(r), Some(0)),
            Setting::Bytes(b) => (Some(0), Some(b)),
        };
        (self.dirty_ratio, self.dirty_bytes) = split(l.dirty);
        (self.dirty_background_ratio, self.dirty_background_bytes) = split(l.background);
    }

    /// `(sysctl name, value)` in a fixed order, "unknown" for an unread value: what the
    /// merge fingerprint compares and names.
    pub fn fields(&self) -> [(&'static str, String); 6] {
        let v = |x: Option<u64>| x.map_or_else(|| "unknown".to_string(), |n| n.to_string());
        [
            ("vm.dirty_ratio", v(self.dirty_ratio)),
            ("vm.dirty_background_ratio", v(self.dirty_background_ratio)),
            ("vm.dirty_bytes", v(self.dirty_bytes)),
            ("vm.dirty_background_bytes", v(self.dirty_background_bytes)),
            ("vm.dirty_expire_centisecs", v(self.dirty_expire_centisecs)),
            (
                "vm.dirty_writeback_centisecs",
                v(self.dirty_writeback_centisecs),
            ),
        ]
    }
}

/// The distinct `scaling_governor`s of this machine's CPUs, sorted; empty when there
/// is no cpufreq (common in virtual machines), which is not an error: the host decides.
pub fn cpu_governors() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/sys/devices/system/cpu")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("cpufreq/scaling_governor")).ok())
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writeback_is_what_proc_says() {
        let w = Writeback::collect();
        let proc = |n: &str| -> u64 {
            std::fs::read_to_string(format!("/proc/sys/vm/{n}"))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        // Another jbench's trial beside this test may hold the dirty limits changed;
        // then the host's own are what it kept (rig::host_settings has those tests).
        let shared = std::fs::read_dir(crate::rig::host_settings::RESTORE_DIR)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("dirty-limits-"))
            })
            .unwrap_or(false);
        if !shared {
            assert_eq!(w.dirty_ratio, Some(proc("dirty_ratio")));
        }
        assert_eq!(
            w.dirty_writeback_centisecs,
            Some(proc("dirty_writeback_centisecs"))
        );
        let fields = w.fields();
        assert_eq!(fields[4].0, "vm.dirty_expire_centisecs");
        assert_eq!(fields[4].1, proc("dirty_expire_centisecs").to_string());
        assert_eq!(
            Writeback::default().fields()[0],
            ("vm.dirty_ratio", "unknown".to_string())
        );
    }

    #[test]
    fn dirty_limits_read_as_the_kernel_shows_them() {
        use crate::rig::dirty::{Limits, Setting};
        let mut w = Writeback::default();
        w.set_dirty_limits(Limits {
            dirty: Setting::Bytes(13421760),
            background: Setting::Ratio(10),
        });
        assert_eq!(
            (w.dirty_ratio, w.dirty_bytes),
            (Some(0), Some(13421760)),
            "a byte limit reads its ratio as 0"
        );
        assert_eq!(
            (w.dirty_background_ratio, w.dirty_background_bytes),
            (Some(10), Some(0))
        );
    }

    #[test]
    fn governors_are_distinct_and_read_from_sysfs() {
        let g = cpu_governors();
        let mut sorted = g.clone();
        sorted.dedup();
        assert_eq!(g, sorted);
        let cpu0 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
        match cpu0 {
            Ok(t) => assert!(g.contains(&t.trim().to_string()), "{g:?}"),
            Err(_) => assert!(g.is_empty(), "{g:?}"),
        }
    }
}
