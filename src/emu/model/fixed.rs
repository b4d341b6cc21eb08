//! `ssd-sata`, `nvme`, `nvram`: a fixed latency per request kind plus a bandwidth cap,
//! with no position and no cache state.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{transfer_time, us, DeviceModel, Kind, ModelError, Request, Service, KIB4};

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

/// Fixed latency per request kind plus a bandwidth cap; no position, no cache state.
#[derive(Debug, Clone)]
pub struct FixedModel {
    name: &'static str,
    p: FixedParams,
    busy_until: Duration,
}

impl FixedModel {
    pub fn new(name: &'static str, p: FixedParams) -> Result<Self, ModelError> {
        p.validate(name)?;
        Ok(FixedModel {
            name,
            p,
            busy_until: Duration::ZERO,
        })
    }

    fn work(&self, req: &Request) -> Duration {
        let p = &self.p;
        match req.kind {
            Kind::Read | Kind::Write if req.len == 0 => Duration::ZERO,
            Kind::Read => us(p.read_latency_us) + transfer_time(req.len, p.read_mb_per_s),
            Kind::Write => us(p.write_latency_us) + transfer_time(req.len, p.write_mb_per_s),
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

    /// `ssd-sata` and `nvme` stand for drives without power-loss protection, whose
    /// buffered writes are lost unless flushed; `nvram` is durable on arrival.
    fn volatile_cache(&self) -> bool {
        self.name != "nvram"
    }
}
