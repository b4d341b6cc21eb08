//! What the FUSE thread and the completion thread share: the disks, the timing
//! switch, the write log and the queue of pending answers; and what a request does to
//! them (its model time, its counters, its log record), and the control commands.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use anyhow::{bail, Result};

use super::disk::{build_model, Disk};
use super::path::floor_of;
use super::queue::{Answer, LogEntry, Pending, Queue, INJECTED};
use super::{DaemonStats, DiskStats, PathCost};
use crate::emu::model::{Request, Service};
use crate::emu::writelog::{LogWriter, RecordKind, Stamp, NO_DISK};

/// The daemon's state, one per daemon, shared by its threads behind an `Arc`.
pub(super) struct Inner {
    pub(super) disks: Vec<Disk>,
    pub(super) timing: AtomicBool,
    pub(super) epoch: Instant,
    pub(super) log: Option<Mutex<LogWriter>>,
    pub(super) queue: Mutex<Queue>,
    pub(super) wake: Condvar,
    pub(super) seq: AtomicU64,
    /// The write log's event clock: a tick when a request arrives (`issued`) and one
    /// when its record is written (`acked`).
    pub(super) clock: AtomicU64,
    pub(super) snapshots: Mutex<HashMap<u64, Vec<u8>>>,
    pub(super) next_fh: AtomicU64,
    pub(super) read_mode: super::polling::ReadMode,
}

impl Inner {
    pub(super) fn time_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub(super) fn write_log(&self, e: &LogEntry) {
        if let Some(log) = &self.log {
            let mut w = log.lock().unwrap_or_else(|p| p.into_inner());
            // Ticked under the lock, so `acked` rises with `seq`. A marker arrives as
            // it is written.
            let issued = e.issued.unwrap_or_else(|| self.tick());
            let stamp = Stamp {
                time_ns: self.time_ns(),
                issued,
                acked: self.tick(),
            };
            // A log that cannot be written is reported by the stats (records stop
            // growing) rather than by failing the disk's I/O.
            let _ = w.append(e.kind, e.disk, e.offset, e.len, &e.payload, stamp);
        }
    }

    /// The next event-clock tick. SeqCst: a flush that reads a tick after a write's
    /// `acked` must also see that write's model state, whatever thread acked it.
    pub(super) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Answers at `at`: inline when it is already due and no log order is at stake,
    /// else through the completion thread.
    pub(super) fn complete(
        &self,
        at: Instant,
        disk: Option<usize>,
        answer: Answer,
        log: Option<LogEntry>,
    ) {
        // The path probe's requests change nothing (it writes back what it read) and
        // are no part of the disk's history.
        let log = match disk {
            Some(i) if self.disks[i].probing.load(Ordering::Acquire) => None,
            _ => log,
        };
        let now = Instant::now();
        if self.log.is_none() && at <= now {
            if let Some(i) = disk {
                self.answered(i, at, now);
            }
            answer.send();
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.heap.push(Pending {
            at,
            seq,
            disk,
            answer,
            log,
        });
        drop(q);
        self.wake.notify_one();
    }

    /// Runs `req` through disk `i`'s model (when timing is on); returns when to answer.
    ///
    /// The workload sees a request complete the path's transport (loop device, FUSE,
    /// this daemon's receiving and answering; measured, see [`PathCost`]) after the
    /// answer's deadline, so the deadline is the model's time minus that transport:
    /// the workload then sees the model's time. Never before arrival: a request the
    /// model serves faster than the path can takes the path's time (and is counted
    /// `floor_bound`). The image I/O, done before this call, runs inside that time.
    pub(super) fn schedule(&self, i: usize, req: Request, arrived: Instant) -> Instant {
        let disk = &self.disks[i];
        let mut st = disk.state.lock().unwrap_or_else(|p| p.into_inner());
        // Requests reach here right after their image I/O, which began on arrival.
        st.stats.add_io(arrived.elapsed());
        st.stats.count(&req);
        if !self.timing.load(Ordering::Acquire) {
            return arrived + st.probe_delay.unwrap_or_default();
        }
        let now = arrived.saturating_duration_since(st.start);
        let svc: Service = st.model.service(&req, now);
        let path = st.path;
        st.stats.add_service(&svc, floor_of(path, &req));
        let transport = path.map(|p| p.transport(&req)).unwrap_or_default();
        arrived + svc.duration.saturating_sub(transport)
    }

    /// `path NAME JSON`: disk NAME's path costs [`PathCost`] (JSON), measured by the
    /// rig through its loop device; `path NAME none` forgets it (no compensation).
    /// `path NAME delay NS` (timing off only): answer each of its requests NS ns after
    /// arrival, as a timed answer is sent, so the rig can measure what the path adds
    /// to a deadline; `path NAME delay off` ends that. `path NAME probe on|off`: the
    /// rig's probe requests begin or end; they stay out of the write log.
    fn set_path(&self, rest: &str) -> Result<()> {
        let Some((name, value)) = rest.split_once(' ') else {
            bail!("usage: path NAME JSON|none|delay NS|delay off|probe on|probe off");
        };
        if let Some(on) = value.trim().strip_prefix("probe ") {
            let on = match on.trim() {
                "on" => true,
                "off" => false,
                other => bail!("path {name} probe: expected on or off, got `{other}`"),
            };
            let Some(d) = self.disks.iter().find(|d| d.spec.name == name) else {
                bail!("no disk named `{name}`");
            };
            d.probing.store(on, Ordering::Release);
            return Ok(());
        }
        if let Some(delay) = value.trim().strip_prefix("delay ") {
            let delay = match delay.trim() {
                "off" => None,
                ns => match ns.parse::<u64>() {
                    Ok(ns) if ns <= 1_000_000_000 => Some(std::time::Duration::from_nanos(ns)),
                    _ => bail!(
                        "path {name} delay: expected nanoseconds up to 1 s or `off`, got `{ns}`"
                    ),
                },
            };
            let Some(d) = self.disks.iter().find(|d| d.spec.name == name) else {
                bail!("no disk named `{name}`");
            };
            d.state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .probe_delay = delay;
            return Ok(());
        }
        let path = match value.trim() {
            "none" => None,
            json => {
                let p: PathCost = serde_json::from_str(json)
                    .map_err(|e| anyhow::anyhow!("path {name}: not a path cost: {e}"))?;
                p.check()?;
                Some(p)
            }
        };
        let Some(d) = self.disks.iter().find(|d| d.spec.name == name) else {
            bail!("no disk named `{name}`");
        };
        let mut st = d.state.lock().unwrap_or_else(|p| p.into_inner());
        st.path = path;
        st.stats = DiskStats {
            below_floor: crate::emu::model::below_floor(
                st.model.as_ref(),
                super::path::floor_4k(path),
            ),
            path,
            ..st.stats.clone()
        };
        Ok(())
    }

    pub(super) fn set_timing(&self, on: bool) -> Result<()> {
        for d in &self.disks {
            let mut st = d.state.lock().unwrap_or_else(|p| p.into_inner());
            // A fresh model per measurement: the same seed and request stream give the
            // same answers in every trial.
            let model = build_model(&d.spec, d.size)?;
            st.stats = DiskStats::fresh(&d.spec, model.as_ref(), st.path);
            d.lateness.reset();
            st.model = model;
            st.start = Instant::now();
            st.probe_delay = None;
        }
        self.timing.store(on, Ordering::Release);
        self.write_log(&LogEntry {
            kind: RecordKind::Marker,
            disk: NO_DISK,
            offset: 0,
            len: 0,
            issued: None,
            payload: if on {
                b"timing on".to_vec()
            } else {
                b"timing off".to_vec()
            },
        });
        Ok(())
    }

    /// The counters, with the answers still waiting far past their deadline counted
    /// as overdue (see `add_waiting_overdue`).
    pub(super) fn stats(&self) -> DaemonStats {
        let mut stats = self.counters();
        self.add_waiting_overdue(&mut stats, Instant::now());
        stats
    }

    fn counters(&self) -> DaemonStats {
        let (log_records, log_bytes) = self
            .log
            .as_ref()
            .map(|l| {
                let w = l.lock().unwrap_or_else(|p| p.into_inner());
                (w.records(), w.bytes())
            })
            .unwrap_or((0, 0));
        DaemonStats {
            timing: self.timing.load(Ordering::Acquire),
            disks: self
                .disks
                .iter()
                .map(|d| {
                    let mut s = d
                        .state
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .stats
                        .clone();
                    s.lateness = Some(d.lateness.read());
                    s
                })
                .collect(),
            log_records,
            log_bytes,
            read_mode: self.read_mode.clone(),
        }
    }

    pub(super) fn control(&self, text: &str) -> Result<()> {
        let text = text.trim_end_matches(['\n', '\0']);
        match text {
            "timing on" => self.set_timing(true),
            "timing off" => self.set_timing(false),
            "overlay clear" => self.each_overlay(|_, o| {
                o.clear();
                Ok(())
            }),
            _ if text.starts_with("overlay ") => self.overlay_command(&text["overlay ".len()..]),
            _ if text.starts_with("inject stall ") => {
                // A testing aid (docs/devices.md, "Stalls"): `inject stall io|answer MS`.
                let mut words = text["inject stall ".len()..].split_whitespace();
                match (
                    words.next(),
                    words.next().map(str::parse::<u64>),
                    words.next(),
                ) {
                    (Some(at), Some(Ok(ms)), None) => INJECTED.arm(at, ms),
                    _ => bail!("usage: inject stall io|answer MILLISECONDS, not `{text}`"),
                }
            }
            _ if text.starts_with("path ") => self.set_path(&text["path ".len()..]),
            _ => match text.strip_prefix("marker ") {
                Some(label) => {
                    self.write_log(&LogEntry {
                        kind: RecordKind::Marker,
                        disk: NO_DISK,
                        offset: 0,
                        len: 0,
                        issued: None,
                        payload: label.as_bytes().to_vec(),
                    });
                    Ok(())
                }
                None => bail!("unknown control command `{text}`"),
            },
        }
    }

    fn each_overlay(
        &self,
        mut f: impl FnMut(&Disk, &mut super::overlay::Overlay) -> Result<()>,
    ) -> Result<()> {
        for d in &self.disks {
            let Some(o) = &d.overlay else {
                bail!("the daemon was not started to serve crash states (no overlay)");
            };
            f(d, &mut o.lock().unwrap_or_else(|p| p.into_inner()))?;
        }
        Ok(())
    }

    /// `load PATH`: apply the writes of the write log at PATH to the overlays (a crash
    /// state's own writes); `lose NAME`: disk NAME reads as zeros beneath its overlay
    /// (a RAM disk that came back empty).
    fn overlay_command(&self, rest: &str) -> Result<()> {
        if let Some(name) = rest.strip_prefix("lose ") {
            let mut found = false;
            self.each_overlay(|d, o| {
                if d.spec.name == name {
                    o.clear();
                    o.lost = true;
                    found = true;
                }
                Ok(())
            })?;
            if !found {
                bail!("no disk named `{name}`");
            }
            return Ok(());
        }
        let Some(path) = rest.strip_prefix("load ") else {
            bail!("unknown overlay command `{rest}`");
        };
        let mut log = crate::emu::writelog::LogReader::open(std::path::Path::new(path))?;
        while let Some(rec) = log.next_record()? {
            if rec.disk == NO_DISK {
                continue;
            }
            let Some(disk) = self.disks.get(rec.disk as usize) else {
                bail!(
                    "record {} is for disk {}, which this daemon does not serve",
                    rec.seq,
                    rec.disk
                );
            };
            let Some(o) = &disk.overlay else {
                bail!("the daemon was not started to serve crash states (no overlay)");
            };
            if rec.offset.saturating_add(rec.len) > disk.size {
                bail!(
                    "record {} writes past the end of disk {}",
                    rec.seq,
                    disk.spec.name
                );
            }
            let mut o = o.lock().unwrap_or_else(|p| p.into_inner());
            match rec.kind {
                RecordKind::Write => {
                    o.write_at(&disk.image, Some(&rec.payload), rec.offset, rec.len)?
                }
                RecordKind::Zero | RecordKind::Discard => {
                    o.write_at(&disk.image, None, rec.offset, rec.len)?
                }
                RecordKind::Flush | RecordKind::Marker => {}
            }
        }
        Ok(())
    }
}
