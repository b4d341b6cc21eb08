//! A made-up engine that exists in test builds only, to show what adding an engine
//! takes: this one file and one line in `kind.rs`'s registry. Tests in analysis,
//! the crash lab and the report read its facts through the registry and find them,
//! though none of those folders names it.

use std::path::Path;
use std::sync::Arc;

use super::declare::{EngineKind, LatencyWords, PromiseReader};
use super::{ParamError, PhaseResult, RunControl, Workload};

pub static KIND: EngineKind = EngineKind {
    name: "made-up",
    example: "",
    build: |t| {
        super::reject_unknown(t, &["beats"])?;
        let beats = match t.get("beats") {
            None => 3,
            Some(v) => v
                .as_integer()
                .and_then(|i| u64::try_from(i).ok())
                .ok_or_else(|| ParamError::new("beats", "expected a count"))?,
        };
        Ok(Arc::new(MadeUp { beats }))
    },
    main_phase: Some("churn"),
    sequential_threads: |params| params.get("beats")?.as_u64().map(|_| 1),
    promises: |params| {
        Box::new(Promises {
            beats: params.get("beats").and_then(|b| b.as_u64()).unwrap_or(0),
        })
    },
    latency: LatencyWords {
        title: "churn latency",
        what: |phase| {
            if phase == "churn" {
                "each churned file"
            } else {
                "each operation"
            }
        },
    },
};

/// Writes `beats` one-byte files in a `warm` phase, then rewrites them in `churn`.
struct MadeUp {
    beats: u64,
}

impl Workload for MadeUp {
    fn kind(&self) -> &'static str {
        KIND.name
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "beats": self.beats })
    }
    fn phase_names(&self) -> Vec<String> {
        vec!["warm".into(), "churn".into()]
    }
    fn peak_data_bytes(&self) -> u64 {
        self.beats
    }
    fn peak_inodes(&self) -> u64 {
        self.beats
    }
    fn run(&self, dir: &Path, _: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        let mut out = Vec::new();
        for phase in self.phase_names() {
            let t = std::time::Instant::now();
            for i in 0..self.beats {
                std::fs::write(dir.join(format!("beat{i}")), [i as u8])?;
            }
            out.push(PhaseResult {
                name: phase,
                seconds: t.elapsed().as_secs_f64(),
                ops: self.beats,
                bytes: self.beats,
                op_unit: "beats".into(),
                durable_seconds: None,
                latency: None,
                fio_latency: None,
                counters: Default::default(),
            });
        }
        Ok(out)
    }
}

/// Every file `beatI` holds the byte `I`.
struct Promises {
    beats: u64,
}

impl PromiseReader for Promises {
    fn makes_promises(&self) -> bool {
        self.beats > 0
    }
    fn file_content(&self, abs: &Path) -> Option<Vec<u8>> {
        let name = abs.file_name()?.to_str()?;
        let i: u64 = name.strip_prefix("beat")?.parse().ok()?;
        (i < self.beats).then(|| vec![i as u8])
    }
    fn removal_phase(&self) -> Option<&'static str> {
        None
    }
}

#[cfg(test)]
mod tests {
    /// Analysis, the crash lab and the report find the made-up engine's facts by the
    /// kind its records carry, though none of them names it.
    #[test]
    fn every_reader_of_engine_facts_finds_the_made_up_one() {
        let phases = ["warm", "churn"];
        assert_eq!(
            crate::analysis::summary::default_main_phase("made-up", &phases).as_deref(),
            Some("churn")
        );
        let params = serde_json::json!({ "beats": 2 });
        let book = crate::crash::promises::PromiseBook::new(
            "made-up",
            &params,
            "/mnt",
            &Default::default(),
        );
        assert!(book.checks_promises(&Default::default()));
        let reader = (super::KIND.promises)(&params);
        assert_eq!(
            reader.file_content(std::path::Path::new("/mnt/beat1")),
            Some(vec![1])
        );
        assert_eq!(
            reader.file_content(std::path::Path::new("/mnt/beat2")),
            None
        );
        // An engine the registry does not know gets the neutral facts instead.
        assert_eq!(
            crate::analysis::summary::default_main_phase("unheard-of", &phases).as_deref(),
            Some("warm")
        );
    }
}
