//! Which trials may run on one host at the same time (`jbench run --jobs N`).
//!
//! A trial whose every timed disk is emulated keeps the model's time whatever else the
//! host does, within the limits `jbench selftest jobs` measures; one timed on a disk of
//! the host (an image in `work_dir`, a real device) would time its neighbours' I/O too,
//! so it runs alone. Trials that would set the host's settings differently never
//! overlap either: under cgroup v1 a memory limit sets the kernel's dirty limits for
//! the whole host (`rig::dirty`), so only trials with the same limit could share it,
//! and on such a host they do not (`Slot::on_host`): the kernel starts a device's
//! background writeback on the host's dirty pages, not the trial's, so a trial beside
//! others writes back differently from one alone, whatever the limits are set to.

use crate::experiment::config::{Config, Placement};
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;

/// What a trial needs of the host while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// Every disk the trial times is emulated: it may run beside trials of the same
    /// memory limit.
    Shared { memory_limit: Option<u64> },
    /// A disk of the host times it: nothing runs beside it.
    Alone,
    /// Under a memory limit on a host with cgroup v1, where the kernel's dirty limits
    /// and the start of its background writeback are the whole host's: a trial beside
    /// others does not write back as it does alone (measured: docs/scale-out.md), so it
    /// runs alone.
    HostDirtyLimits { memory_limit: u64 },
}

impl Slot {
    /// The slot of `trial` in `spec`.
    pub fn of(spec: &Spec, trial: &Trial) -> Slot {
        Slot::of_config(&spec.configs[trial.config])
    }

    pub fn of_config(config: &Config) -> Slot {
        let journal_timed_apart =
            config.placement.is_external() && !matches!(config.placement, Placement::SameDisk);
        let emulated = config.fs_model.is_some()
            && config.fs_device.is_none()
            && (!journal_timed_apart || config.journal_model.is_some())
            && (config.second_fs_size.is_none() || config.second_fs_model.is_some());
        if emulated {
            Slot::Shared {
                memory_limit: config.memory_limit,
            }
        } else {
            Slot::Alone
        }
    }

    /// The slot on a host whose memory cgroups are v1 (`cgroup_v1`) or not.
    pub fn on_host(self, cgroup_v1: bool) -> Slot {
        match self {
            Slot::Shared {
                memory_limit: Some(m),
            } if cgroup_v1 => Slot::HostDirtyLimits { memory_limit: m },
            s => s,
        }
    }

    /// Whether a trial of slot `self` may start while one of `other` runs.
    pub fn can_share(self, other: Slot) -> bool {
        matches!(self, Slot::Shared { .. }) && self == other
    }

    /// Why a trial of this slot does not share the host with one of `other`, for the
    /// plan; `None` when it may.
    pub fn why_apart(self, other: Slot) -> Option<String> {
        match (self, other) {
            (Slot::Alone, _) | (_, Slot::Alone) => Some(
                "a disk of the host times one of them (an image in work_dir or a real device): it runs alone".into(),
            ),
            (Slot::HostDirtyLimits { .. }, _) | (_, Slot::HostDirtyLimits { .. }) => Some(
                "one of them runs under a memory limit and this host's memory cgroups are v1, where the kernel's dirty limits and the start of its background writeback are the whole host's: beside others such a trial does not write back as it does alone (docs/scale-out.md), so it runs alone".into(),
            ),
            (a, b) if a != b => Some(
                "their memory limits differ, and under cgroup v1 a memory limit sets the host's dirty limits".into(),
            ),
            _ => None,
        }
    }

    /// `shared (memory limit 512M)`, `alone`: how the plan names it.
    pub fn describe(self) -> String {
        match self {
            Slot::Alone => "alone".into(),
            Slot::HostDirtyLimits { memory_limit } => format!(
                "alone (memory limit {} under cgroup v1)",
                crate::units::format_size(memory_limit)
            ),
            Slot::Shared { memory_limit: None } => "shared".into(),
            Slot::Shared {
                memory_limit: Some(m),
            } => format!("shared (memory limit {})", crate::units::format_size(m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::config::DeviceModelSpec;

    fn emulated(placement: Placement) -> Config {
        Config {
            placement,
            fs_model: Some(DeviceModelSpec::builtin("hdd-7200")),
            journal_model: placement
                .is_external()
                .then(|| DeviceModelSpec::builtin("ram")),
            memory_limit: Some(512 << 20),
            ..Config::default()
        }
    }

    #[test]
    fn emulated_trials_of_one_memory_limit_share_the_host() {
        let a = Slot::of_config(&emulated(Placement::Internal));
        let b = Slot::of_config(&emulated(Placement::Ramdisk));
        assert_eq!(
            a,
            Slot::Shared {
                memory_limit: Some(512 << 20)
            }
        );
        assert!(a.can_share(b));
        assert_eq!(a.why_apart(b), None);
    }

    #[test]
    fn different_memory_limits_never_overlap() {
        let a = Slot::of_config(&emulated(Placement::Internal));
        let mut c = emulated(Placement::Internal);
        c.memory_limit = Some(2 << 30);
        let b = Slot::of_config(&c);
        assert!(!a.can_share(b));
        assert!(a.why_apart(b).unwrap().contains("memory limits differ"));
    }

    #[test]
    fn under_cgroup_v1_a_memory_limit_runs_alone() {
        let a = Slot::of_config(&emulated(Placement::Internal));
        let v1 = a.on_host(true);
        assert_eq!(
            v1,
            Slot::HostDirtyLimits {
                memory_limit: 512 << 20
            }
        );
        assert!(!v1.can_share(v1));
        assert!(v1.why_apart(v1).unwrap().contains("cgroups are v1"));
        assert_eq!(a.on_host(false), a, "v2 keeps dirty limits per cgroup");
        let mut free = emulated(Placement::Internal);
        free.memory_limit = None;
        let f = Slot::of_config(&free);
        assert!(
            f.on_host(true).can_share(f.on_host(true)),
            "no limit, no host setting"
        );
    }

    #[test]
    fn a_trial_timed_on_the_hosts_disk_runs_alone() {
        let mut c = emulated(Placement::SecondDisk);
        c.journal_model = None;
        assert_eq!(Slot::of_config(&c), Slot::Alone);
        let mut d = emulated(Placement::Internal);
        d.fs_model = None;
        assert_eq!(Slot::of_config(&d), Slot::Alone);
        assert!(!Slot::Alone.can_share(Slot::Alone));
        // A same-disk journal lives on the file system's emulated disk.
        let same = emulated(Placement::SameDisk);
        assert!(matches!(Slot::of_config(&same), Slot::Shared { .. }));
    }
}
