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

/// An emulated disk's cache and flush from its model's defaults with the spec's
/// overrides over them.
pub fn emulated(m: &DeviceModelSpec) -> DiskSettings {
    let mut p = crate::emu::model::default_params(&m.model).unwrap_or_default();
    for (k, v) in &m.params {
        p.insert(k.clone(), v.clone());
    }
    let flag = |k: &str| p.get(k).and_then(toml::Value::as_bool);
    let bytes = |k: &str| {
        p.get(k)
            .and_then(toml::Value::as_integer)
            .and_then(|n| u64::try_from(n).ok())
    };
    let (cache, cache_bytes, flush, flush_latency_us) = match m.model.as_str() {
        "hdd-7200" if flag("write_cache") == Some(true) => (
            "write back",
            bytes("write_cache_bytes"),
            if flag("honor_flush") == Some(false) {
                "ignored (the disk lies)"
            } else {
                "drains the cache"
            },
            None,
        ),
        "hdd-7200" => ("write through", None, "completes at once", None),
        "raid6" if flag("nonvolatile") == Some(true) => (
            "write back, battery-backed",
            bytes("cache_bytes"),
            "completes at once",
            None,
        ),
        "raid6" => ("write back", bytes("cache_bytes"), "drains the cache", None),
        "ram" => ("none", None, "completes at once", None),
        // ssd-sata, nvme, nvram: a request costs its kind's latency, a flush too.
        _ => (
            "none",
            None,
            "fixed latency",
            p.get("flush_latency_us")
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|n| n as f64))),
        ),
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
