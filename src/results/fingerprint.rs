//! The machine a trial ran on, taken at run time. Two machines whose fingerprints
//! differ give rates that must not be pooled into one mean.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::results::envinfo::{self, Writeback};

/// What decides whether trials from two machines are comparable. The fields after
/// `jbench_version` came later: their defaults let an older seal load, and it then
/// differs from a newer one on them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cpu_model: String,
    pub cpus: usize,
    /// Total memory, bytes (rounded to MiB so a few pages of difference do not count).
    pub memory_bytes: u64,
    /// `uname -r`.
    pub kernel: String,
    /// `systemd-detect-virt`, or what /proc/cpuinfo and DMI say; `none` on bare metal.
    pub virtualization: String,
    pub e2fsprogs: String,
    pub xfsprogs: String,
    /// File-system type and source device of `work_dir`, where the images live.
    pub work_dir_storage: String,
    pub jbench_version: String,
    /// `/proc/sys/vm/dirty_*`: how long and how much dirty data may wait.
    #[serde(default)]
    pub writeback: Writeback,
    /// Mount options of `work_dir`'s mount (per-mount, then the file system's).
    #[serde(default)]
    pub work_dir_mount_options: String,
    /// I/O scheduler of the disk under `work_dir` (past a loop device, its file's disk).
    #[serde(default)]
    pub work_dir_scheduler: String,
    /// `queue/write_cache` of that disk.
    #[serde(default)]
    pub work_dir_write_cache: String,
    /// `queue/rotational` of that disk: `yes`, `no`, or empty when unknown.
    #[serde(default)]
    pub work_dir_rotational: String,
    /// Distinct CPU frequency governors, comma-separated; empty without cpufreq.
    #[serde(default)]
    pub cpu_governor: String,
    /// The real devices the spec names, with their write cache and rotational flag
    /// (`/dev/sdb: write back, rotational`); emulated disks come from the spec, whose
    /// hash a merge already compares.
    #[serde(default)]
    pub devices: String,
}

impl Fingerprint {
    /// This machine, with `work_dir` (where the spec puts its images) as the storage
    /// that is described. Fields that cannot be read are empty (or "not found" for the
    /// tools), so two machines that both lack something still compare equal on it.
    pub fn collect(work_dir: &Path) -> Fingerprint {
        let storage = envinfo::location("work_dir", work_dir);
        let queue = storage.queue.clone().unwrap_or_default();
        Fingerprint {
            cpu_model: envinfo::cpu_model(),
            cpus: envinfo::cores(),
            memory_bytes: envinfo::memory_bytes() >> 20 << 20,
            kernel: nix::sys::utsname::uname()
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
            virtualization: virtualization(),
            e2fsprogs: envinfo::e2fsprogs(),
            xfsprogs: envinfo::xfsprogs(),
            work_dir_storage: format!("{} on {}", storage.filesystem, storage.device),
            jbench_version: env!("CARGO_PKG_VERSION").to_string(),
            writeback: Writeback::collect(),
            work_dir_mount_options: format!(
                "{} ({})",
                storage.mount_options, storage.superblock_options
            ),
            work_dir_scheduler: queue.scheduler,
            work_dir_write_cache: queue.write_cache,
            work_dir_rotational: yes_no(queue.rotational),
            cpu_governor: envinfo::host::cpu_governors().join(", "),
            devices: String::new(),
        }
    }

    /// This machine as the experiment `spec` sees it: [`Fingerprint::collect`] of its
    /// work_dir, and the real devices it names.
    pub fn of_spec(spec: &crate::experiment::spec::Spec) -> Fingerprint {
        let mut f = Fingerprint::collect(&spec.work_dir);
        let mut devices: Vec<String> = envinfo::disks::collect(spec)
            .into_iter()
            .filter(|d| d.kind == "device")
            .map(|d| {
                let rot = match d.rotational {
                    Some(true) => ", rotational",
                    Some(false) => ", not rotational",
                    None => "",
                };
                format!("{}: {}{rot}", d.name, d.cache)
            })
            .collect();
        devices.sort();
        devices.dedup();
        f.devices = devices.join("; ");
        f
    }

    /// `field: mine vs theirs`, one line per field that differs; empty when equal.
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let (a, b) = (self.fields(), other.fields());
        a.into_iter()
            .zip(b)
            .filter(|((_, x), (_, y))| x != y)
            .map(|((name, x), (_, y))| format!("{name}: {x} vs {y}"))
            .collect()
    }

    /// A short hash of every field: the name of a machine group in a merge. Stable
    /// across runs and versions as long as the field names and values are.
    pub fn id(&self) -> String {
        // serde_json writes struct fields in declaration order, so the bytes are stable.
        let json = serde_json::to_vec(self).expect("a fingerprint serialises");
        sha256_hex(&json)[..12].to_string()
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("cpu_model", self.cpu_model.clone()),
            ("cpus", self.cpus.to_string()),
            ("memory_bytes", self.memory_bytes.to_string()),
            ("kernel", self.kernel.clone()),
            ("virtualization", self.virtualization.clone()),
            ("e2fsprogs", self.e2fsprogs.clone()),
            ("xfsprogs", self.xfsprogs.clone()),
            ("work_dir_storage", self.work_dir_storage.clone()),
            ("jbench_version", self.jbench_version.clone()),
        ];
        out.extend(self.writeback.fields());
        out.extend([
            (
                "work_dir_mount_options",
                self.work_dir_mount_options.clone(),
            ),
            ("work_dir_scheduler", self.work_dir_scheduler.clone()),
            ("work_dir_write_cache", self.work_dir_write_cache.clone()),
            ("work_dir_rotational", self.work_dir_rotational.clone()),
            ("cpu_governor", self.cpu_governor.clone()),
            ("devices", self.devices.clone()),
        ]);
        out
    }
}

fn yes_no(flag: Option<bool>) -> String {
    match flag {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    }
    .to_string()
}

/// `systemd-detect-virt` (kvm, docker, none, ...) where it exists; else the
/// cpuinfo `hypervisor` flag, which every mainstream hypervisor sets: "vm" or "none".
fn virtualization() -> String {
    if let Ok(out) = std::process::Command::new("systemd-detect-virt")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    {
        // It exits 1 with "none" on bare metal: the text, not the status, is the answer.
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !text.is_empty() {
            return text;
        }
    }
    let flagged = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| {
            t.lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
        })
        .unwrap_or(false);
    if flagged { "vm" } else { "none" }.to_string()
}

/// SHA-256 of `bytes`, lowercase hex: the spec and trial hashes of a seal.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Fingerprint {
        Fingerprint {
            cpu_model: "Example CPU".into(),
            cpus: 8,
            memory_bytes: 16 << 30,
            kernel: "6.1.0".into(),
            virtualization: "kvm".into(),
            e2fsprogs: "mke2fs 1.47.0".into(),
            xfsprogs: "mkfs.xfs version 6.1.0".into(),
            work_dir_storage: "ext4 on /dev/vda1".into(),
            jbench_version: "0.1.0".into(),
            writeback: Writeback {
                dirty_ratio: Some(20),
                ..Default::default()
            },
            work_dir_scheduler: "mq-deadline".into(),
            ..Default::default()
        }
    }

    #[test]
    fn differences_name_each_field_and_id_follows_them() {
        let a = sample();
        assert!(a.differences(&a.clone()).is_empty());
        assert_eq!(a.id(), sample().id());
        assert_eq!(a.id().len(), 12);
        let mut b = sample();
        b.kernel = "6.12.0".into();
        b.cpus = 4;
        assert_eq!(
            a.differences(&b),
            ["cpus: 8 vs 4", "kernel: 6.1.0 vs 6.12.0"]
        );
        assert_ne!(a.id(), b.id());
        let mut c = sample();
        c.writeback.dirty_ratio = Some(40);
        c.work_dir_scheduler = "bfq".into();
        assert_eq!(
            a.differences(&c),
            [
                "vm.dirty_ratio: 20 vs 40",
                "work_dir_scheduler: mq-deadline vs bfq"
            ]
        );
    }

    #[test]
    fn an_older_seal_without_the_environment_loads() {
        let mut json = serde_json::to_value(sample()).unwrap();
        let obj = json.as_object_mut().unwrap();
        obj.retain(|k, _| !matches!(k.as_str(), "writeback" | "cpu_governor" | "devices"));
        let old: Fingerprint = serde_json::from_value(json).unwrap();
        assert_eq!(old.writeback, Writeback::default());
        assert_eq!(old.cpu_governor, "");
    }

    #[test]
    fn collects_this_machine() {
        let f = Fingerprint::collect(Path::new("/var/tmp/jbench-does-not-exist/x"));
        assert!(f.cpus >= 1);
        assert!(!f.kernel.is_empty());
        assert!(!f.virtualization.is_empty());
        assert_eq!(f.memory_bytes % (1 << 20), 0);
        assert!(
            f.work_dir_storage.contains(" on "),
            "{}",
            f.work_dir_storage
        );
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let (opts, _) = f.work_dir_mount_options.split_once(' ').unwrap();
        assert!(
            mountinfo.lines().any(|l| l.split(' ').nth(5) == Some(opts)),
            "{opts}"
        );
        assert_eq!(
            f.writeback.dirty_expire_centisecs,
            std::fs::read_to_string("/proc/sys/vm/dirty_expire_centisecs")
                .ok()
                .and_then(|t| t.trim().parse().ok())
        );
        assert_eq!(
            f,
            Fingerprint::collect(Path::new("/var/tmp/jbench-does-not-exist/x"))
        );
    }
}
