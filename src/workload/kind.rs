//! What each workload engine declares about itself, in one place per engine
//! (`<engine>/kind.rs`), and the registry that names them all. Analysis, the crash lab
//! and the report ask an engine's facts here by the kind a trial recorded; none of
//! them names an engine. As fio's `ioengine_ops`: a new engine fills in every field
//! (there is no default, so a missing one does not compile) and adds one line to
//! [`ENGINES`].
//!
//! The facts are read from a trial's recorded `params` alone (trials.jsonl), because
//! reports and the crash lab run long after the engine did, perhaps in another
//! build. So the descriptor uses only this folder's types and plain data.

use std::sync::Arc;

pub use super::declare::{
    no_promises, no_sequential_threads, EngineKind, LatencyWords, NoPromises, PromiseReader,
    EACH_OPERATION, REMOVAL_PHASE,
};
use super::{ParamError, Workload};

/// Every engine, in the order error messages and `--help` list them. Adding an
/// engine: its folder with a `kind.rs` declaring its [`EngineKind`], its `pub mod`
/// line in `workload/mod.rs`, and one line here.
pub static ENGINES: &[&EngineKind] = &[
    &super::fdtree::kind::KIND,
    &super::postmark::kind::KIND,
    &super::iozone::kind::KIND,
    &super::fsync::kind::KIND,
    &super::command::kind::KIND,
    &super::fio::kind::KIND,
];

/// Engines only a test build has (`made_up`: a made-up engine that shows what adding
/// one takes, and that nothing outside its file names it).
#[cfg(test)]
static TEST_ENGINES: &[&EngineKind] = &[&super::made_up::KIND];
#[cfg(not(test))]
static TEST_ENGINES: &[&EngineKind] = &[];

fn all() -> impl Iterator<Item = &'static EngineKind> {
    ENGINES.iter().chain(TEST_ENGINES).copied()
}

/// The engine named `name`, if this build has it.
pub fn engine(name: &str) -> Option<&'static EngineKind> {
    all().find(|e| e.name == name)
}

/// The engine a record names, or for a kind this build does not know (records of
/// another build) the neutral facts: its first phase is its main one, it promises
/// nothing and its latency is each operation's.
pub fn kind_of(name: &str) -> &'static EngineKind {
    engine(name).unwrap_or(&UNKNOWN)
}

/// Every engine's name.
pub fn names() -> Vec<&'static str> {
    all().map(|e| e.name).collect()
}

static UNKNOWN: EngineKind = EngineKind {
    name: "unknown",
    example: "",
    build: |_| Err(ParamError::new("kind", "unknown workload kind")),
    main_phase: None,
    sequential_threads: no_sequential_threads,
    promises: no_promises,
    latency: EACH_OPERATION,
};

/// Builds the engine a `[[workload]]` table names with `kind`.
pub fn from_table(kind: &str, t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    match engine(kind) {
        Some(e) => (e.build)(t),
        None => Err(ParamError::new(
            "kind",
            format!(
                "unknown workload kind `{kind}` (available: {})",
                names().join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn every_engine_has_one_name_and_its_engine_says_it() {
        let mut seen = std::collections::BTreeSet::new();
        for e in all() {
            assert!(seen.insert(e.name), "{} is registered twice", e.name);
        }
        for (e, table) in samples() {
            let w = (e.build)(&table)
                .unwrap_or_else(|err| panic!("{}: {}: {}", e.name, err.key, err.message));
            assert_eq!(w.kind(), e.name, "{}'s engine names another kind", e.name);
            if let Some(main) = e.main_phase {
                assert!(
                    w.phase_names().iter().any(|p| p == main),
                    "{}: main phase {main} is not one of its phases {:?}",
                    e.name,
                    w.phase_names()
                );
            }
            // Its promises read back from what it records.
            let _ = (e.promises)(&w.params());
        }
    }

    fn samples() -> Vec<(&'static EngineKind, toml::Table)> {
        all()
            .map(|e| {
                let t = e.example.parse::<toml::Table>();
                (
                    e,
                    t.unwrap_or_else(|err| panic!("{}'s example: {err}", e.name)),
                )
            })
            .collect()
    }

    /// docs/experiment.md has a section per engine and lists each in `kind`'s row
    /// and its main phase in `main_phase`'s.
    #[test]
    fn the_experiment_guide_describes_every_engine() {
        let doc = include_str!("../../docs/experiment.md");
        let row = |key: &str| {
            doc.lines()
                .find(|l| l.starts_with(&format!("| `{key}` | ")))
                .unwrap_or_else(|| panic!("docs/experiment.md has no row for `{key}`"))
                .to_string()
        };
        let (kinds, mains) = (row("kind"), row("main_phase"));
        for e in ENGINES {
            assert!(
                doc.contains(&format!("### `kind = \"{}\"`", e.name)),
                "docs/experiment.md: no section for kind = \"{}\"",
                e.name
            );
            assert!(
                kinds.contains(&format!("`{}`", e.name)),
                "`kind`'s row leaves out {}",
                e.name
            );
            let main = match e.main_phase {
                Some(p) => format!("`{}` → `{p}`", e.name),
                None => format!("`{}`", e.name),
            };
            assert!(mains.contains(&main), "`main_phase`'s row: no {main}");
        }
    }

    #[test]
    fn an_unknown_kind_names_every_engine() {
        let err = from_table("zigzag", &toml::Table::new()).err().unwrap();
        for n in ENGINES.iter().map(|e| e.name) {
            assert!(err.message.contains(n), "{}", err.message);
        }
        assert_eq!(kind_of("zigzag").main_phase, None);
        assert!(!(kind_of("zigzag").promises)(&serde_json::Value::Null).makes_promises());
    }

    #[test]
    fn the_fsync_engine_reads_its_promises_back_from_its_params() {
        let e = engine("fsync").unwrap();
        let w = (e.build)(&"files = 4".parse().unwrap()).unwrap();
        let r = (e.promises)(&w.params());
        assert!(r.makes_promises());
        assert!(r.file_content(Path::new("/mnt/d0/f0")).is_some());
        assert_eq!(r.removal_phase(), Some("remove"));
        let fdtree = engine("fdtree").unwrap();
        assert!(!(fdtree.promises)(&serde_json::json!({})).makes_promises());
    }

    fn range(
        kind: &str,
        params: &serde_json::Value,
        rel: &str,
        off: u64,
        len: u64,
    ) -> Option<Vec<u8>> {
        (kind_of(kind).promises)(params).range_content(rel, off, len)
    }

    fn promises(kind: &str, params: &serde_json::Value) -> bool {
        (kind_of(kind).promises)(params).makes_promises()
    }

    #[test]
    fn fio_content_follows_the_recorded_job_text() {
        let params = json!({"job_text": "[global]\nsize=64k\n[a]\nrw=write\nbs=8k\nfsync=1\n\
                                         [b]\nrw=write\nverify=md5\nfsync=1\n[c]\nrw=write\n"});
        let got = range("fio", &params, "jbench-fio.7/a.0.0", 8192, 4096 + 16).unwrap();
        let mut unit = b"jbfio\0\0\0".to_vec();
        unit.extend(8192u64.to_le_bytes());
        assert_eq!(&got[..16], &unit[..]);
        assert_eq!(
            &got[4096..],
            &unit[..],
            "the second 4 KiB repeats the write's start"
        );
        assert_eq!(got.len(), 4096 + 16);
        // Its own verify: the range must exist, its bytes are fio's.
        assert_eq!(range("fio", &params, "jbench-fio.7/b.0.0", 0, 10), None);
        assert_eq!(range("fio", &params, "jbench-fio.7/c.0.0", 0, 10), None);
        assert_eq!(range("fio", &params, "jbench-fio.7/zzz", 0, 10), None);
        assert_eq!(range("fio", &json!({}), "a.0.0", 0, 10), None);
        assert!(promises("fio", &params));
        assert!(!promises(
            "fio",
            &json!({"job_text": "[a]\nsize=1M\nrw=write\n"})
        ));
        assert!(!promises(
            "fio",
            &json!({"job_text": "[a]\nsize=1M\nrw=write\nioengine=libaio\nfsync=1\n"})
        ));
    }

    #[test]
    fn iozone_content_is_stamped_blocks_of_osync_runs_only() {
        let p = |osync: bool, threads: u64| json!({"osync": osync, "threads": threads, "record": "4K", "size": "64K"});
        let got = range("iozone", &p(true, 1), "iozone.tmp", 4096, 4096).unwrap();
        assert_eq!(&got[..4], b"jbIZ");
        assert_eq!(&got[4..8], &0u32.to_le_bytes());
        assert_eq!(&got[8..16], &4096u64.to_le_bytes());
        assert!(got[16..].iter().all(|b| *b == 0xA5));
        let got = range("iozone", &p(true, 3), "sub/iozone.DUMMY.2", 0, 16).unwrap();
        assert_eq!(&got[4..8], &2u32.to_le_bytes());
        assert_eq!(range("iozone", &p(true, 3), "iozone.DUMMY.3", 0, 16), None);
        assert_eq!(range("iozone", &p(true, 3), "iozone.tmp", 0, 16), None);
        assert_eq!(range("iozone", &p(false, 1), "iozone.tmp", 0, 16), None);
        assert!(promises("iozone", &p(true, 1)));
        assert!(!promises("iozone", &p(false, 1)));
        assert!(promises("fsync", &json!({})));
        assert!(!promises("fdtree", &json!({})));
        assert_eq!(range("postmark", &json!({}), "x", 0, 1), None);
    }

    #[test]
    fn durable_range_labels_round_trip_paths_with_spaces() {
        let l = crate::workload::durable_range_label(Path::new("/m/a b/c 1"), 4096, 8192);
        assert_eq!(l, "durable-range /m/a b/c 1 4096 8192");
        assert_eq!(
            crate::workload::parse_durable_range(&l),
            Some(("/m/a b/c 1", 4096, 8192))
        );
        assert_eq!(crate::workload::parse_durable_range("fsync /x"), None);
        assert_eq!(
            crate::workload::parse_durable_range("durable-range /x 1"),
            None
        );
    }
}
