//! What a workload promised at a cut, from the promise markers in its write log: the
//! fsync engine's files (content stamped per file and block), a command's `durable`
//! lines (existence, or a SHA-256), and durable ranges (fio, iozone). Built once per
//! promise and shared by every state that has it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::oracle::{Expect, Promise, Promises, UserCheck};
use super::states::{Marks, PromiseMark};
use crate::workload::kind::{kind_of, PromiseReader};

/// Builds [`Promises`] for the states of one recorded trial.
pub struct PromiseBook {
    /// The engine's promises, read back from the trial's params.
    reader: Box<dyn PromiseReader>,
    /// Where the recording's file system was mounted: markers name absolute paths.
    mount: String,
    check: Option<UserCheck>,
    /// One [`Promise`] per marker, by the marker's seq (rigs on several threads share
    /// the book).
    built: Mutex<HashMap<u64, Option<Promise>>>,
}

impl PromiseBook {
    /// `config_env`: the configuration's `env`, over the workload's own, as the run
    /// handed it to the command.
    pub fn new(
        kind: &str,
        params: &serde_json::Value,
        mount: &str,
        config_env: &std::collections::BTreeMap<String, String>,
    ) -> Self {
        let reader = (kind_of(kind).promises)(params);
        let check = reader.check().map(|mut c| {
            c.env
                .extend(config_env.iter().map(|(k, v)| (k.clone(), v.clone())));
            c
        });
        Self {
            reader,
            mount: mount.to_string(),
            check,
            built: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the workload makes promises the oracle checks (states of one that
    /// makes none are checked for consistency only). A command may or may not write
    /// `durable` lines; its log says whether it did.
    pub fn checks_promises(&self, marks: &Marks) -> bool {
        !marks.promises.is_empty() || self.reader.makes_promises()
    }

    pub fn has_check(&self) -> bool {
        self.check.is_some()
    }

    /// Whether the check starts the application first (the workload has a `recover`).
    pub fn starts_an_application(&self) -> bool {
        self.check.as_ref().is_some_and(|c| c.recover.is_some())
    }

    /// The marker's path relative to the recording's mount point.
    pub fn relative(&self, path: &str) -> String {
        relative(path, &self.mount)
    }

    /// The promises in force at `cut`: every promise marker before it (the latest
    /// `durable` line of a path replaces its earlier ones), and the user's check.
    pub fn at(&self, marks: &Marks, cut: u64) -> Promises {
        let before = marks.promises_before(cut);
        let mut latest_durable: HashMap<&str, u64> = HashMap::new();
        for (seq, p) in before {
            if let PromiseMark::Durable { path, .. } = p {
                latest_durable.insert(path.as_str(), *seq);
            }
        }
        let mut items = Vec::with_capacity(before.len());
        let mut keys = Vec::new();
        for (seq, p) in before {
            match p {
                PromiseMark::Key(k) => {
                    keys.push(k.clone());
                    continue;
                }
                PromiseMark::Durable { path, .. }
                    if latest_durable.get(path.as_str()) != Some(seq) =>
                {
                    continue;
                }
                _ => {}
            }
            let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
            let Some(promise) = built.entry(*seq).or_insert_with(|| self.build(p)).clone() else {
                continue;
            };
            items.push(promise);
        }
        Promises {
            items,
            keys,
            removal_started: marks
                .phase_at(cut)
                .is_some_and(|p| Some(p) == self.reader.removal_phase()),
            check: self.check.clone(),
        }
    }

    /// The file promise of marker `p`; `None` for a record key, which only the
    /// workload's check can look for.
    fn build(&self, p: &PromiseMark) -> Option<Promise> {
        let path = self.relative(p.path()?);
        let expect = match p {
            PromiseMark::Fsync(abs) => match self.reader.file_content(Path::new(abs)) {
                Some(bytes) => Expect::Bytes(Arc::from(bytes)),
                None => Expect::Exists,
            },
            PromiseMark::Durable { sha256, .. } => match sha256 {
                Some(h) => Expect::Sha256(h.clone()),
                None => Expect::Exists,
            },
            PromiseMark::NonEmpty(_) => Expect::NonEmpty,
            PromiseMark::Range { offset, len, .. } => Expect::Range {
                offset: *offset,
                len: *len,
                bytes: range_bytes(self.reader.as_ref(), &path, *offset, *len).map(Arc::from),
            },
            PromiseMark::Key(_) => return None,
        };
        Some(Promise { path, expect })
    }
}

/// The bytes a `durable-range` marker promised, as the engine knows them; a range
/// that cannot be held in memory is a corrupt marker, not a promise.
fn range_bytes(reader: &dyn PromiseReader, rel: &str, offset: u64, len: u64) -> Option<Vec<u8>> {
    if len > 1 << 32 || offset.checked_add(len).is_none() {
        return None;
    }
    reader.range_content(rel, offset, len)
}

/// The marker's path relative to the trial's mount point.
pub fn relative(path: &str, mount: &str) -> String {
    let p = Path::new(path);
    p.strip_prefix(mount)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| path.trim_start_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::states::LogRec;
    use crate::emu::writelog::{RecordKind, RecordMeta, NO_DISK};

    fn marks(labels: &[&str]) -> Marks {
        let recs: Vec<LogRec> = std::iter::once("timing on")
            .chain(labels.iter().copied())
            .enumerate()
            .map(|(i, l)| LogRec {
                meta: RecordMeta {
                    seq: i as u64,
                    time_ns: 0,
                    kind: RecordKind::Marker,
                    disk: NO_DISK,
                    offset: 0,
                    len: l.len() as u64,
                    issued: None,
                    acked: None,
                    payload_pos: 0,
                },
                label: Some(l.to_string()),
            })
            .collect();
        Marks::of(&recs).unwrap()
    }

    #[test]
    fn marker_paths_are_made_relative_to_the_trial_mount() {
        assert_eq!(
            relative(
                "/w/jbench-1-0/mnt/jbench-fsync.7/t0/d0/f1",
                "/w/jbench-1-0/mnt"
            ),
            "jbench-fsync.7/t0/d0/f1"
        );
        assert_eq!(relative("/elsewhere/f", "/w/mnt"), "elsewhere/f");
    }

    #[test]
    fn fsync_files_expect_their_own_stamped_content() {
        let params = serde_json::json!({"files": 2, "size": 8192, "dirs": 1, "threads": 1, "fsync_dir": true, "write_size": 4096});
        let m = marks(&[
            "fsync /mnt/jbench-fsync.1/t0/d0/f0",
            "fsync /mnt/jbench-fsync.1/t0/d0/f1",
        ]);
        let book = PromiseBook::new("fsync", &params, "/mnt", &Default::default());
        assert!(book.checks_promises(&m));
        let p = book.at(&m, 10);
        assert_eq!(p.items.len(), 2);
        assert_eq!(p.items[0].path, "jbench-fsync.1/t0/d0/f0");
        let (Expect::Bytes(a), Expect::Bytes(b)) = (&p.items[0].expect, &p.items[1].expect) else {
            panic!("{:?}", p.items);
        };
        assert_eq!(a.len(), 8192);
        assert_ne!(a, b, "two files expect the same bytes: a swap would pass");
        assert_ne!(
            a[..4096],
            a[4096..],
            "two blocks of one file are alike: a move would pass"
        );
        // Only the promises before the cut.
        assert_eq!(book.at(&m, 2).items.len(), 1);
    }

    #[test]
    fn a_later_durable_line_replaces_an_earlier_one_and_a_command_without_lines_promises_nothing() {
        let hex = "ab".repeat(32);
        let m = marks(&[
            "durable /mnt/db",
            &format!("durable /mnt/db sha256={hex}"),
            "durable /mnt/wal",
        ]);
        let book = PromiseBook::new(
            "command",
            &serde_json::json!({"run": ["x"]}),
            "/mnt",
            &Default::default(),
        );
        let p = book.at(&m, 100);
        assert_eq!(p.items.len(), 2);
        assert_eq!(
            p.items[0],
            Promise {
                path: "db".into(),
                expect: Expect::Sha256(hex)
            }
        );
        assert_eq!(
            p.items[1],
            Promise {
                path: "wal".into(),
                expect: Expect::Exists
            }
        );
        assert!(p.check.is_none());
        assert!(!book.checks_promises(&marks(&[])));
    }

    #[test]
    fn record_keys_reach_the_check_in_order_and_only_those_before_the_cut() {
        let m = marks(&[
            "durable /mnt/db",
            "durable-key 1",
            "durable-key tx 2",
            "durable-key 3",
        ]);
        let params = serde_json::json!({"run": ["x"], "check": ["true"]});
        let book = PromiseBook::new("command", &params, "/mnt", &Default::default());
        assert!(book.checks_promises(&marks(&["durable-key 1"])));
        let all = book.at(&m, 100);
        assert_eq!(all.keys, ["1", "tx 2", "3"]);
        assert_eq!(
            all.items.len(),
            1,
            "a key is no file promise: {:?}",
            all.items
        );
        assert!(all.check.is_some());
        // Marker seqs: "timing on" 0, the durable line 1, the keys 2, 3 and 4.
        assert_eq!(book.at(&m, 4).keys, ["1", "tx 2"]);
        assert!(book.at(&m, 2).keys.is_empty());
    }
}
