//! What the path between the workload and the daemon costs a request (the loop
//! device, FUSE, the daemon receiving it and sending its answer), as the rig measures
//! it: the daemon takes it off every deadline and flags requests against it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::emu::model::{Kind, Request, FUSE_FLOOR};

/// What the path between the workload and the daemon costs one request of a disk, as
/// measured through its loop device with timing off (`DeviceDaemon::measure_path`,
/// handed over with the `path` control command): QD1 reads of 4 KiB and of 1 MiB,
/// each figure a mean without the slowest 2%.
///
/// A request's *floor* is its whole round trip when the daemon answers it at once: no
/// request can be faster. Its *transport* is what the round trip adds to the daemon's
/// deadline when the answer waits for one (the loop device, FUSE, the daemon receiving
/// the request and its completion thread sending the answer): measured with every
/// answer held to arrival + a fixed delay longer than the image I/O, it is the round
/// trip minus that delay. The daemon takes the transport off every deadline; the image
/// I/O runs inside what is left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PathCost {
    /// Round trip of a 4 KiB read answered at once: the floor.
    pub floor_4k_us: f64,
    /// Round trip of a 4 KiB read answered at a deadline, minus the deadline.
    pub transport_4k_us: f64,
    /// The daemon's image I/O in each 4 KiB read of the floor (a cached page's).
    #[serde(default)]
    pub io_4k_us: f64,
    /// The same for reads of `big_len` bytes (1 MiB, or less if the device is smaller
    /// or the kernel split 1 MiB reads).
    pub floor_big_us: f64,
    pub transport_big_us: f64,
    #[serde(default)]
    pub io_big_us: f64,
    pub big_len: u64,
    /// Round trip of a 4 KiB write (of the bytes the probe had just read) answered at
    /// once, and its image I/O; 0: not measured (a write costs what a read does).
    #[serde(default)]
    pub floor_write_4k_us: f64,
    #[serde(default)]
    pub io_write_4k_us: f64,
    /// Round trip of a flush answered at once, and what it adds to a deadline; 0: not
    /// measured (a flush costs what a 4 KiB read does).
    #[serde(default)]
    pub floor_flush_us: f64,
    #[serde(default)]
    pub transport_flush_us: f64,
}

impl PathCost {
    /// `small` at 4 KiB, `big` at `big_len`, linear between, clamped outside. Only
    /// reads and writes carry data; a flush or discard costs what 4 KiB does.
    fn at(&self, req: &Request, small: f64, big: f64) -> Duration {
        let len = match req.kind {
            Kind::Read | Kind::Write => req.len,
            Kind::Flush | Kind::Discard => 0,
        };
        let (lo, hi) = (4096.0, (self.big_len as f64).max(4096.0));
        let x = (len as f64).clamp(lo, hi);
        let us = if hi > lo {
            small + (big - small) * (x - lo) / (hi - lo)
        } else {
            small
        };
        Duration::from_secs_f64(us.max(0.0) / 1e6)
    }

    /// The round trip of `req` with no model delay: what it cannot beat.
    pub fn floor(&self, req: &Request) -> Duration {
        match req.kind {
            Kind::Flush if self.floor_flush_us > 0.0 => us(self.floor_flush_us),
            // A write's extra over a read of its size, as measured at 4 KiB.
            Kind::Write if self.floor_write_4k_us > 0.0 => us(self
                .at(req, self.floor_4k_us, self.floor_big_us)
                .as_secs_f64()
                * 1e6
                + self.floor_write_4k_us
                - self.floor_4k_us),
            _ => self.at(req, self.floor_4k_us, self.floor_big_us),
        }
    }

    /// The part of `req`'s round trip the daemon does not overlap with the model's
    /// time: what it takes off the deadline.
    pub fn transport(&self, req: &Request) -> Duration {
        match req.kind {
            Kind::Flush if self.transport_flush_us > 0.0 => us(self.transport_flush_us),
            _ => self.at(req, self.transport_4k_us, self.transport_big_us),
        }
    }

    /// The image I/O in the floor of `req` (as measured: a cached page's, none for a
    /// flush).
    pub fn io(&self, req: &Request) -> Duration {
        match req.kind {
            Kind::Flush => Duration::ZERO,
            Kind::Write if self.floor_write_4k_us > 0.0 => us(self
                .at(req, self.io_4k_us, self.io_big_us)
                .as_secs_f64()
                * 1e6
                + self.io_write_4k_us
                - self.io_4k_us),
            _ => self.at(req, self.io_4k_us, self.io_big_us),
        }
    }

    /// Refuses figures that are not a measurement.
    pub fn check(&self) -> anyhow::Result<()> {
        let all = [
            self.floor_4k_us,
            self.transport_4k_us,
            self.io_4k_us,
            self.floor_big_us,
            self.transport_big_us,
            self.io_big_us,
            self.floor_write_4k_us,
            self.io_write_4k_us,
            self.floor_flush_us,
            self.transport_flush_us,
        ];
        if all
            .iter()
            .any(|v| !(v.is_finite() && *v >= 0.0 && *v < 1e6))
        {
            let shown: Vec<String> = all.iter().map(|v| format!("{v}")).collect();
            anyhow::bail!(
                "path cost figures must be µs from 0 to 1 s; these are not: {}",
                shown.join(", ")
            );
        }
        Ok(())
    }
}

/// `v` µs, never negative.
fn us(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0) / 1e6)
}

/// The 4 KiB floor of `path`, else the assumed one.
pub(super) fn floor_4k(path: Option<PathCost>) -> Duration {
    path.map_or(FUSE_FLOOR, |p| p.floor(&Request::read(0, 4096)))
}

/// What the path alone costs `req`: its measured floor, else the assumed one.
pub(super) fn floor_of(path: Option<PathCost>, req: &Request) -> Duration {
    path.map_or(FUSE_FLOOR, |p| p.floor(req))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::daemon::{DiskSpec, DiskStats};
    use crate::emu::model::Service;

    #[test]
    fn path_cost_is_interpolated_by_the_bytes_a_request_carries() {
        let p = PathCost {
            floor_4k_us: 30.0,
            transport_4k_us: 25.0,
            io_4k_us: 3.0,
            floor_big_us: 430.0,
            transport_big_us: 325.0,
            io_big_us: 90.0,
            big_len: 1 << 20,
            ..PathCost::default()
        };
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        assert!((us(p.floor(&Request::read(0, 4096))) - 30.0).abs() < 1e-6);
        assert!((us(p.transport(&Request::read(0, 4096))) - 25.0).abs() < 1e-6);
        assert!((us(p.floor(&Request::write(0, 1 << 20))) - 430.0).abs() < 1e-6);
        assert!((us(p.transport(&Request::write(0, 1 << 20))) - 325.0).abs() < 1e-6);
        // Halfway in bytes, halfway in cost.
        let mid = (4096 + (1 << 20)) / 2;
        assert!((us(p.floor(&Request::read(0, mid))) - 230.0).abs() < 1e-6);
        // No data: the 4 KiB figure, however long a discard's range.
        assert_eq!(p.floor(&Request::flush()), p.floor(&Request::read(0, 4096)));
        assert_eq!(
            p.transport(&Request::discard(0, 1 << 30)),
            p.transport(&Request::read(0, 4096))
        );
        // Beyond the measured sizes: clamped, not extrapolated.
        assert_eq!(
            p.floor(&Request::read(0, 512)),
            p.floor(&Request::read(0, 4096))
        );
        assert_eq!(
            p.floor(&Request::write(0, 4 << 20)),
            p.floor(&Request::write(0, 1 << 20))
        );
        assert!(p.check().is_ok());
        // Measured writes and flushes: their own figures.
        let q = PathCost {
            floor_write_4k_us: 40.0,
            io_write_4k_us: 9.0,
            floor_flush_us: 35.0,
            transport_flush_us: 33.0,
            ..p
        };
        assert!((us(q.floor(&Request::write(0, 4096))) - 40.0).abs() < 1e-6);
        assert!((us(q.floor(&Request::write(0, 1 << 20))) - 440.0).abs() < 1e-6);
        assert!((us(q.io(&Request::write(0, 4096))) - 9.0).abs() < 1e-6);
        assert!((us(q.floor(&Request::read(0, 4096))) - 30.0).abs() < 1e-6);
        assert!((us(q.floor(&Request::flush())) - 35.0).abs() < 1e-6);
        assert!((us(q.transport(&Request::flush())) - 33.0).abs() < 1e-6);
        assert_eq!(q.io(&Request::flush()), Duration::ZERO);
        assert_eq!(
            q.transport(&Request::write(0, 4096)),
            q.transport(&Request::read(0, 4096))
        );
        assert!(PathCost {
            floor_4k_us: f64::NAN,
            ..p
        }
        .check()
        .is_err());
    }

    #[test]
    fn the_measured_floor_decides_what_is_floor_bound() {
        let spec = DiskSpec {
            name: "fs".into(),
            image: "/nonexistent".into(),
            model: "ssd-sata".into(),
            params: toml::Table::new(),
            image_id: None,
        };
        let model = crate::emu::model_by_name("ssd-sata", None).unwrap();
        // Unmeasured: the 100 µs assumption flags the 68 µs buffered write.
        assert!(DiskStats::fresh(&spec, model.as_ref(), None).below_floor);
        let fast = PathCost {
            floor_4k_us: 30.0,
            transport_4k_us: 25.0,
            io_4k_us: 3.0,
            floor_big_us: 400.0,
            transport_big_us: 300.0,
            io_big_us: 90.0,
            big_len: 1 << 20,
            ..PathCost::default()
        };
        let mut s = DiskStats::fresh(&spec, model.as_ref(), Some(fast));
        assert!(!s.below_floor);
        assert_eq!(s.path, Some(fast));
        let req = Request::read(0, 4096);
        let svc = |us: u64| Service {
            duration: Duration::from_micros(us),
            ..Service::default()
        };
        s.add_service(&svc(20), floor_of(s.path, &req));
        s.add_service(&svc(100), floor_of(s.path, &req));
        assert_eq!(s.floor_bound, 1);
        assert!((s.floor_excess_seconds - 10e-6).abs() < 1e-9);
    }
}
