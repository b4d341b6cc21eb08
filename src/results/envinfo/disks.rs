//! The cache and flush behaviour of every disk an experiment's configurations use:
//! emulated disks as their model's resolved parameters say, real devices as their
//! block queue says. A journal commit waits for a flush, so these decide its cost.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::storage::BlockQueue;
use crate::experiment::config::DeviceModelSpec;
use crate::experiment::spec::Spec;

/// One disk of one configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskSettings {
    /// The configuration's label.
    pub config: String,
    /// `fs` (the file system's disk, also an internal journal's) or `journal`.
    pub role: String,
    /// `emulated` or `device`.
    pub kind: String,
    /// The model as the spec names it (a built-in or a `[models]` entry), or the
    /// device's path.
    pub name: String,
    /// The built-in model an emulated disk is made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `write back` (a volatile cache that a flush must drain), `write back,
    /// battery-backed`, `write through`, or `none`; for a device, its
    /// `queue/write_cache`.
    pub cache: String,
    /// Size of the write cache, bytes, when the model has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
    /// What a flush does: `drains the cache`, `ignored (the disk lies)`, `completes
    /// at once`, `fixed latency`; empty for a device (the kernel cannot tell).
    pub flush: String,
    /// A fixed-latency model's cost of one flush, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_latency_us: Option<f64>,
    /// A device's `queue/rotational`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
}

/// Every emulated disk and real device of `spec`'s configurations, in matrix order.
pub fn collect(spec: &Spec) -> Vec<DiskSettings> {
    let mut out = Vec::new();
    for c in &spec.configs {
        let disks = [
            ("fs", c.fs_model.as_ref(), c.fs_device.as_deref()),
            (
                "journal",
                c.journal_model.as_ref(),
                c.journal_device.as_deref(),
            ),
        ];
        for (role, model, device) in disks {
            let mut d = match (model, device) {
                (Some(m), _) => emulated(m),
                (None, Some(dev)) => real(dev),
                (None, None) => continue,
            };
            d.config = c.label.clone();
            d.role = role.to_string();
            out.push(d);
        }
    }
    out
}

/// An emulated disk's cache and flush, as its model says of itself with the spec's
/// overrides over its defaults.
pub fn emulated(m: &DeviceModelSpec) -> DiskSettings {
    let words = crate::emu::model_by_name(&m.model, Some(&m.params)).map(|d| d.cache_words());
    let (cache, cache_bytes, flush, flush_latency_us) = match words {
        Ok(w) => (w.cache, w.cache_bytes, w.flush, w.flush_latency_us),
        // The spec refuses such a model; a record of another build may still name one.
        Err(_) => ("unknown", None, "unknown", None),
    };
    DiskSettings {
        kind: "emulated".into(),
        name: m.name.clone(),
        model: Some(m.model.clone()),
        cache: cache.into(),
        cache_bytes,
        flush: flush.into(),
        flush_latency_us,
        ..Default::default()
    }
}

/// A real device's write cache and rotational flag, from the queue of the disk it
/// is (or is a partition of).
fn real(dev: &Path) -> DiskSettings {
    let name = std::fs::canonicalize(dev)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let q = BlockQueue::of(&name).unwrap_or_default();
    DiskSettings {
        kind: "device".into(),
        name: dev.display().to_string(),
        cache: q.write_cache,
        rotational: q.rotational,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, model: &str, params: &str) -> DeviceModelSpec {
        DeviceModelSpec {
            name: name.into(),
            model: model.into(),
            params: params.parse().unwrap(),
        }
    }

    #[test]
    fn models_resolve_with_overrides() {
        let hdd = emulated(&spec("hdd-7200", "hdd-7200", ""));
        let defaults = crate::emu::model::default_params("hdd-7200").unwrap();
        assert_eq!(
            hdd.cache == "write back",
            defaults["write_cache"].as_bool().unwrap()
        );
        let liar = emulated(&spec(
            "liar",
            "hdd-7200",
            "write_cache = true\nhonor_flush = false\nwrite_cache_bytes = 1024",
        ));
        assert_eq!(liar.flush, "ignored (the disk lies)");
        assert_eq!(liar.cache_bytes, Some(1024));
        assert_eq!(liar.model.as_deref(), Some("hdd-7200"));
        let wt = emulated(&spec("wt", "hdd-7200", "write_cache = false"));
        assert_eq!((wt.cache.as_str(), wt.cache_bytes), ("write through", None));
        let bbu = emulated(&spec("raid6", "raid6", ""));
        assert_eq!(
            bbu.flush == "completes at once",
            crate::emu::model::default_params("raid6").unwrap()["nonvolatile"]
                .as_bool()
                .unwrap()
        );
        let ssd = emulated(&spec("slow", "ssd-sata", "flush_latency_us = 9000.0"));
        assert_eq!(ssd.flush_latency_us, Some(9000.0));
        assert_eq!(emulated(&spec("ram", "ram", "")).cache, "none");
    }

    #[test]
    fn a_real_device_reads_its_queue() {
        let Some(disk) = std::fs::read_dir("/sys/block")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| Path::new("/dev").join(n).exists())
        else {
            return;
        };
        let d = real(&Path::new("/dev").join(&disk));
        let want = std::fs::read_to_string(format!("/sys/block/{disk}/queue/write_cache")).unwrap();
        assert_eq!(d.cache, want.trim());
        assert!(d.rotational.is_some());
    }
}
