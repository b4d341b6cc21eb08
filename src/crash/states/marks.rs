//! The markers of a write log the crash lab reads: where the workload started, its
//! phases, and what it promised.

use anyhow::{bail, Result};

use super::LogRec;
use crate::emu::writelog::RecordKind;

/// A promise a workload made, as its marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromiseMark {
    /// `fsync PATH`: the fsync engine's file, with content its parameters decide.
    Fsync(String),
    /// `durable PATH [sha256=HEX]`: a command's file, whole, after its own fsync.
    Durable {
        path: String,
        sha256: Option<String>,
    },
    /// `durable PATH nonempty`: a command's file that, from here on, is never empty
    /// (a file the application replaces by writing a new one and renaming it over).
    NonEmpty(String),
    /// `durable-range PATH OFFSET LEN`: bytes of a file a synchronous write or an
    /// fsync made durable (fio, iozone).
    Range { path: String, offset: u64, len: u64 },
    /// `durable-key KEY`: an application record a command acknowledged; only the
    /// workload's own check can look for it.
    Key(String),
}

impl PromiseMark {
    pub fn parse(label: &str) -> Option<Self> {
        if let Some(k) = label.strip_prefix(crate::workload::command::KEY_PREFIX) {
            return Some(Self::Key(k.to_string()));
        }
        if let Some(p) = label.strip_prefix("fsync ") {
            return Some(Self::Fsync(p.to_string()));
        }
        if let Some(rest) = label.strip_prefix("durable-range ") {
            let mut it = rest.rsplitn(3, ' ');
            let len = it.next()?.parse().ok()?;
            let offset = it.next()?.parse().ok()?;
            let path = it.next()?.to_string();
            return Some(Self::Range { path, offset, len });
        }
        if let Some(rest) = label.strip_prefix("durable ") {
            if let Some(path) = rest.strip_suffix(" nonempty") {
                return Some(Self::NonEmpty(path.to_string()));
            }
            if let Some((path, hex)) = rest.rsplit_once(" sha256=") {
                if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Some(Self::Durable {
                        path: path.to_string(),
                        sha256: Some(hex.to_ascii_lowercase()),
                    });
                }
            }
            return Some(Self::Durable {
                path: rest.to_string(),
                sha256: None,
            });
        }
        None
    }

    /// The file the promise is about; `None` for a record key.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::Fsync(p) | Self::NonEmpty(p) => Some(p),
            Self::Durable { path, .. } | Self::Range { path, .. } => Some(path),
            Self::Key(_) => None,
        }
    }
}

/// The markers of a log that the lab uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// `timing on`: where the workload starts. No state is cut before it.
    pub timing_on: u64,
    /// `fsync PATH` markers: `(seq, path)`.
    pub fsyncs: Vec<(u64, String)>,
    /// Every promise marker (fsync, durable, durable-range): `(seq, promise)`.
    pub promises: Vec<(u64, PromiseMark)>,
    /// `phase NAME` markers: `(seq, name)`.
    pub phases: Vec<(u64, String)>,
    /// `end NAME` markers (a phase's clock stopped): `(seq, name)`.
    pub ends: Vec<(u64, String)>,
}

impl Marks {
    pub fn of(recs: &[LogRec]) -> Result<Self> {
        let mut m = Marks::default();
        let mut timing_on = None;
        for r in recs.iter().filter(|r| r.kind == RecordKind::Marker) {
            let label = r.label.as_deref().unwrap_or("");
            if label == "timing on" && timing_on.is_none() {
                timing_on = Some(r.seq);
            } else if let Some(p) = label.strip_prefix("phase ") {
                m.phases.push((r.seq, p.to_string()));
            } else if let Some(p) = label.strip_prefix("end ") {
                m.ends.push((r.seq, p.to_string()));
            } else if let Some(p) = PromiseMark::parse(label) {
                if let PromiseMark::Fsync(path) = &p {
                    m.fsyncs.push((r.seq, path.clone()));
                }
                m.promises.push((r.seq, p));
            }
        }
        let Some(t) = timing_on else {
            bail!("the write log has no `timing on` marker, so where the workload started is unknown; it was not recorded by `jbench crash` or `jbench run` with [emulation] write_log");
        };
        m.timing_on = t;
        Ok(m)
    }

    /// fsync markers before `cut`.
    pub fn fsyncs_before(&self, cut: u64) -> &[(u64, String)] {
        let n = self.fsyncs.partition_point(|(s, _)| *s < cut);
        &self.fsyncs[..n]
    }

    /// Promise markers of every kind before `cut`.
    pub fn promises_before(&self, cut: u64) -> &[(u64, PromiseMark)] {
        let n = self.promises.partition_point(|(s, _)| *s < cut);
        &self.promises[..n]
    }

    /// The phase running at `cut` (the last phase marker before it).
    pub fn phase_at(&self, cut: u64) -> Option<&str> {
        let n = self.phases.partition_point(|(s, _)| *s < cut);
        n.checked_sub(1).map(|i| self.phases[i].1.as_str())
    }

    /// The stratum a cut falls in: its phase, `setup` before the first phase, and
    /// `teardown` once the last phase's clock stopped (the final unmount is there).
    pub fn stratum_at(&self, cut: u64) -> String {
        let last_begin = self
            .phases
            .iter()
            .take_while(|(s, _)| *s < cut)
            .last()
            .map(|(s, _)| *s);
        let last_end = self
            .ends
            .iter()
            .take_while(|(s, _)| *s < cut)
            .last()
            .map(|(s, _)| *s);
        match (last_begin, last_end) {
            (None, None) => "setup".into(),
            (b, Some(e)) if b.is_none_or(|b| e > b) && self.phases.iter().all(|(s, _)| *s < e) => {
                "teardown".into()
            }
            _ => self.phase_at(cut).unwrap_or("setup").to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PromiseMark;

    #[test]
    fn a_nonempty_line_promises_the_file_is_never_empty() {
        assert_eq!(
            PromiseMark::parse("durable /m/target nonempty"),
            Some(PromiseMark::NonEmpty("/m/target".into()))
        );
        assert_eq!(
            PromiseMark::parse("durable /m/target nonempty")
                .and_then(|m| m.path().map(String::from)),
            Some("/m/target".into())
        );
    }
}
