//! `ssd-sata`, `nvme`, `nvram` and the published drives (`ssd-sata-plp`,
//! `nvme-consumer`, `nvme-plp`): a fixed latency per request kind plus a bandwidth cap,
//! with no position; its only state is the bytes written since the last flush, which a
//! flush writes back at `flush_mb_per_s` (0: a flush costs its latency alone).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::declare::{defaults_of, params_of, ModelKind, PowerCut};
use super::{transfer_time, us, CacheWords, DeviceModel, Kind, ModelError, Request, Service, KIB4};

/// A fixed-latency model named `name` with `base` as its defaults; every one keeps
/// its contents at a power cut (what its cache loses is `power_loss_protection`'s
/// question), on persistent media or, `nvram`, on its battery.
macro_rules! fixed_kind {
    ($name:literal, $base:expr) => {
        fixed_kind!($name, $base, PowerCut::Keeps)
    };
    ($name:literal, $base:expr, $cut:expr) => {
        ModelKind {
            name: $name,
            spans_disk: false,
            at_power_cut: $cut,
            defaults: || defaults_of($base),
            build: |p| {
                Ok(Box::new(FixedModel::new(
                    $name,
                    params_of($name, $base, p)?,
                )?))
            },
        }
    };
}

pub const SSD_SATA: ModelKind = fixed_kind!("ssd-sata", FixedParams::default());
pub const NVME: ModelKind = fixed_kind!("nvme", FixedParams::nvme());
pub const NVRAM: ModelKind = fixed_kind!("nvram", FixedParams::nvram(), PowerCut::BatteryBacked);
pub const SSD_SATA_PLP: ModelKind = fixed_kind!("ssd-sata-plp", FixedParams::sata_plp());
pub const NVME_CONSUMER: ModelKind = fixed_kind!("nvme-consumer", FixedParams::nvme_consumer());
pub const NVME_PLP: ModelKind = fixed_kind!("nvme-plp", FixedParams::nvme_plp());

/// Parameters of the fixed-latency models (`ssd-sata`, `nvme`, `nvram`): each request
/// costs its kind's latency plus `len / bandwidth`. `Default` is `ssd-sata`; see
/// [`FixedParams::nvme`] and [`FixedParams::nvram`] for the others' defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FixedParams {
    pub read_latency_us: f64,
    pub write_latency_us: f64,
    pub flush_latency_us: f64,
    pub discard_latency_us: f64,
    pub read_mb_per_s: f64,
    pub write_mb_per_s: f64,
    /// A flush also writes back what was written since the last one, at this rate
    /// (0: a flush costs `flush_latency_us` whatever was written). What a loop image's
    /// flush costs on a host file system: its `fdatasync` writes the image's dirty
    /// pages before the device flush (`jbench device qualify --fit` fits it).
    pub flush_mb_per_s: f64,
    /// Acknowledged writes survive a power cut (capacitors or a battery hold the
    /// cache): the crash lab keeps them without a flush.
    pub power_loss_protection: bool,
}

impl Default for FixedParams {
    /// A SATA SSD. Approximate figures from public data sheets and reviews of
    /// consumer SATA SSDs (e.g. Samsung 860-class): ~100 µs QD1 4 KiB read, 50-80 µs
    /// write (into the drive's SLC/DRAM buffer), 1-2 ms for a cache flush on drives
    /// without power-loss protection, and the SATA 6 Gb/s link's ~550 MB/s ceiling
    /// (500 MB/s sustained).
    fn default() -> Self {
        FixedParams {
            read_latency_us: 100.0,
            write_latency_us: 60.0,
            flush_latency_us: 1500.0,
            discard_latency_us: 100.0,
            read_mb_per_s: 500.0,
            write_mb_per_s: 500.0,
            flush_mb_per_s: 0.0,
            power_loss_protection: false,
        }
    }
}

impl FixedParams {
    /// An NVMe SSD (issue 4's working figures; order of magnitude of PCIe 3.0 x4 NAND
    /// drives' data sheets): ~20 µs read, 15 µs write (buffered), a flush of 0.1-0.5 ms
    /// (0.3 ms here), ~3 GB/s. Real NAND QD1 reads are often 50-80 µs; override
    /// `read_latency_us` for a specific drive.
    pub fn nvme() -> Self {
        FixedParams {
            read_latency_us: 20.0,
            write_latency_us: 15.0,
            flush_latency_us: 300.0,
            discard_latency_us: 20.0,
            read_mb_per_s: 3000.0,
            write_mb_per_s: 3000.0,
            flush_mb_per_s: 0.0,
            power_loss_protection: false,
        }
    }

    /// Battery-backed NVRAM (Study 3's journal device, which the study itself simulated
    /// with a RAM disk): a few µs per access, memory-bus bandwidth (1 GB/s here, a
    /// PCI-era card), and a free flush since writes are durable on arrival.
    pub fn nvram() -> Self {
        FixedParams {
            read_latency_us: 2.0,
            write_latency_us: 3.0,
            flush_latency_us: 0.0,
            discard_latency_us: 0.0,
            read_mb_per_s: 1000.0,
            write_mb_per_s: 1000.0,
            flush_mb_per_s: 0.0,
            power_loss_protection: true,
        }
    }

    /// `ssd-sata-plp`: a SATA SSD with power-loss protection, from the Intel SSD 710's
    /// published figures (docs/devices.md names the sources). FreeBSD's `diskinfo -wS`
    /// measured its 4 KiB write+flush at 158.2 µs (0.5 KiB: 138.3 µs); the data sheet
    /// gives 270 MB/s read and 210 MB/s write. So write + flush = 158.2 - 4096 B at
    /// 210 MB/s (19.5 µs) = 138.7 µs. How that splits is not published: the flush gets
    /// a command's 20 µs (a protected cache has nothing to drain), the write the rest.
    /// No QD1 read latency was published; 100 µs is `ssd-sata`'s.
    pub fn sata_plp() -> Self {
        FixedParams {
            read_latency_us: 100.0,
            write_latency_us: 118.7,
            flush_latency_us: 20.0,
            discard_latency_us: 100.0,
            read_mb_per_s: 270.0,
            write_mb_per_s: 210.0,
            flush_mb_per_s: 0.0,
            power_loss_protection: true,
        }
    }

    /// `nvme-consumer`: a consumer NVMe SSD without power-loss protection, from the
    /// Samsung 950 PRO (512 GB)'s published figures. `diskinfo -wS`: 4 KiB write+flush
    /// 2090.7 µs; data sheet: 2500 MB/s read, 1500 MB/s write, and at queue depth 1
    /// 12,000 IOPS of 4 KiB random reads (83.3 µs each, 1.6 of it transfer) and 43,000
    /// of writes (23.3 µs, 2.7 of it transfer). So the flush is 2090.7 - 23.3 µs.
    pub fn nvme_consumer() -> Self {
        FixedParams {
            read_latency_us: 81.7,
            write_latency_us: 20.6,
            flush_latency_us: 2067.4,
            discard_latency_us: 20.0,
            read_mb_per_s: 2500.0,
            write_mb_per_s: 1500.0,
            flush_mb_per_s: 0.0,
            power_loss_protection: false,
        }
    }

    /// `nvme-plp`: an enterprise NVMe SSD with power-loss protection, from the Intel
    /// DC P4500 (2 TB)'s data sheet: 4 KiB random read 85 µs and write 20 µs (transfer
    /// included, taken off here), 3200 MB/s read, 1050 MB/s write. Such a drive
    /// reports no volatile write cache, so a flush costs nothing (an Optane 900P's
    /// measured `fdatasync` of 30 µs agrees in magnitude).
    pub fn nvme_plp() -> Self {
        FixedParams {
            read_latency_us: 83.7,
            write_latency_us: 16.1,
            flush_latency_us: 0.0,
            discard_latency_us: 20.0,
            read_mb_per_s: 3200.0,
            write_mb_per_s: 1050.0,
            flush_mb_per_s: 0.0,
            power_loss_protection: true,
        }
    }

    fn validate(&self, name: &str) -> Result<(), ModelError> {
        let latencies = [
            ("read_latency_us", self.read_latency_us),
            ("write_latency_us", self.write_latency_us),
            ("flush_latency_us", self.flush_latency_us),
            ("discard_latency_us", self.discard_latency_us),
        ];
        for (k, v) in latencies {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ModelError::invalid(
                    name,
                    format!("{k} must be a number >= 0, got {v}"),
                ));
            }
        }
        if !(self.flush_mb_per_s.is_finite() && self.flush_mb_per_s >= 0.0) {
            return Err(ModelError::invalid(
                name,
                format!(
                    "flush_mb_per_s must be a number >= 0 (0: a flush's time does not depend on what was written), got {}",
                    self.flush_mb_per_s
                ),
            ));
        }
        for (k, v) in [
            ("read_mb_per_s", self.read_mb_per_s),
            ("write_mb_per_s", self.write_mb_per_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ModelError::invalid(
                    name,
                    format!("{k} must be a positive number, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// Fixed latency per request kind plus a bandwidth cap; no position. The only state
/// besides the clock: the bytes written since the last flush (`flush_mb_per_s`).
#[derive(Debug, Clone)]
pub struct FixedModel {
    name: &'static str,
    p: FixedParams,
    busy_until: Duration,
    dirty: u64,
}

impl FixedModel {
    pub fn new(name: &'static str, p: FixedParams) -> Result<Self, ModelError> {
        p.validate(name)?;
        Ok(FixedModel {
            name,
            p,
            busy_until: Duration::ZERO,
            dirty: 0,
        })
    }

    fn work(&self, req: &Request) -> Duration {
        let p = &self.p;
        match req.kind {
            Kind::Read | Kind::Write if req.len == 0 => Duration::ZERO,
            Kind::Read => us(p.read_latency_us) + transfer_time(req.len, p.read_mb_per_s),
            Kind::Write => us(p.write_latency_us) + transfer_time(req.len, p.write_mb_per_s),
            Kind::Flush if p.flush_mb_per_s > 0.0 => {
                us(p.flush_latency_us) + transfer_time(self.dirty, p.flush_mb_per_s)
            }
            Kind::Flush => us(p.flush_latency_us),
            Kind::Discard => us(p.discard_latency_us),
        }
    }
}

impl DeviceModel for FixedModel {
    fn name(&self) -> &'static str {
        self.name
    }

    fn service(&mut self, req: &Request, now: Duration) -> Service {
        let start = now.max(self.busy_until);
        let work = self.work(req);
        match req.kind {
            Kind::Write => self.dirty += req.len,
            Kind::Flush => self.dirty = 0,
            Kind::Read | Kind::Discard => {}
        }
        self.busy_until = start + work;
        Service {
            duration: self.busy_until - now,
            transfer: work,
            ..Service::default()
        }
    }

    fn min_service(&self) -> Duration {
        self.work(&Request::read(0, KIB4))
            .min(self.work(&Request::write(0, KIB4)))
    }

    /// `ssd-sata`, `nvme` and `nvme-consumer` stand for drives without power-loss
    /// protection, whose buffered writes are lost unless flushed; `nvram`,
    /// `ssd-sata-plp` and `nvme-plp` are durable on arrival.
    fn volatile_cache(&self) -> bool {
        !self.p.power_loss_protection
    }

    /// A request costs its kind's latency, a flush too.
    fn cache_words(&self) -> CacheWords {
        CacheWords {
            cache: "none",
            cache_bytes: None,
            flush: if self.p.flush_mb_per_s > 0.0 {
                "fixed latency plus writing back what was written since the last flush"
            } else {
                "fixed latency"
            },
            flush_latency_us: Some(self.p.flush_latency_us),
        }
    }
}
