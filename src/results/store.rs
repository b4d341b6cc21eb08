//! The results directory of a run: `spec.toml` (resolved), `spec.original.toml`,
//! `env.json`, `trials.jsonl` (appended and fsync'ed after every trial, so an
//! interrupted run loses nothing) and `summary.csv`.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::experiment::spec::Spec;
use crate::results::record::TrialRecord;

pub use super::layout::{ENV, ORIGINAL, SPEC, SUMMARY, TRIALS};

pub struct Store {
    dir: PathBuf,
    trials: File,
}

impl Store {
    /// Starts a new results directory; refuses one that already holds trials.
    pub fn create(dir: &Path, spec: &Spec, original: &str) -> Result<Self> {
        if dir.join(TRIALS).exists() {
            bail!(
                "{} already holds a run; use --resume {} to finish it, or choose another --results directory",
                dir.display(),
                dir.display()
            );
        }
        // 0700 and owned by root: nobody else may swap it for a link between writes.
        crate::trust::create_trusted_dir(dir)
            .with_context(|| format!("cannot create results directory {}", dir.display()))?;
        write_synced(&dir.join(SPEC), spec.resolved.as_bytes())?;
        write_synced(&dir.join(ORIGINAL), original.as_bytes())?;
        let env = serde_json::to_vec_pretty(&crate::results::envinfo::collect(spec))?;
        write_synced(&dir.join(ENV), &env)?;
        Self::open_trials(dir)
    }

    /// Reopens a results directory for `--resume`; the experiment must be the same one.
    pub fn resume(dir: &Path, spec: &Spec) -> Result<(Self, Vec<TrialRecord>)> {
        crate::trust::check_trusted_dir(dir)
            .with_context(|| format!("results directory {} cannot be trusted", dir.display()))?;
        let stored = fs::read_to_string(dir.join(SPEC)).with_context(|| {
            format!(
                "{} is not a jbench results directory (no {SPEC})",
                dir.display()
            )
        })?;
        if stored != spec.resolved {
            let diff: Vec<String> = stored
                .lines()
                .zip(spec.resolved.lines())
                .filter(|(a, b)| a != b)
                .take(5)
                .map(|(a, b)| format!("  stored: {a}\n  now:    {b}"))
                .collect();
            bail!(
                "the experiment differs from the one in {}; resuming would mix results.\n{}",
                dir.display(),
                diff.join("\n")
            );
        }
        let records = load_records(dir)?;
        drop_torn_tail(&dir.join(TRIALS))?;
        Ok((Self::open_trials(dir)?, records))
    }

    fn open_trials(dir: &Path) -> Result<Self> {
        let trials = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(TRIALS))
            .with_context(|| format!("cannot open {}", dir.join(TRIALS).display()))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            trials,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one record and forces it to disk before returning.
    pub fn append(&mut self, record: &TrialRecord) -> Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        self.trials
            .write_all(&line)
            .and_then(|_| self.trials.sync_data())
            .with_context(|| format!("cannot write {}", self.dir.join(TRIALS).display()))
    }
}

/// Makes `trials.jsonl` ready for appending: a torn last line (see [`torn_tail`]) is
/// cut off, and a complete last record that lost only its newline gets one, so the
/// next record starts on a line of its own.
fn drop_torn_tail(path: &Path) -> Result<()> {
    let bytes = fs::read(path).unwrap_or_default();
    let f = OpenOptions::new().write(true).open(path)?;
    if let Some((_, offset, _)) = torn_tail(path, &bytes)? {
        f.set_len(offset as u64)?;
    } else if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    } else {
        (&f).seek(std::io::SeekFrom::End(0))?;
        (&f).write_all(b"\n")?;
    }
    f.sync_all()?;
    Ok(())
}

/// Writes `bytes` to `path` and waits until they are on disk.
pub fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()
        .with_context(|| format!("cannot write {}", path.display()))
}

/// One parsed line of `trials.jsonl`.
pub(crate) enum Line {
    Record(Box<TrialRecord>),
    /// Not a trial record: JSON that does not parse, or parses into something else.
    Bad(String),
}

/// Splits `bytes` into non-blank lines with their 1-based line number and byte offset.
pub(crate) fn lines(bytes: &[u8]) -> Vec<(usize, usize, &[u8])> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push((i + 1, offset, line));
        }
        offset += line.len() + 1;
    }
    out
}

/// Parses one line, refusing a record of a newer schema before anything else: its
/// fields may mean something this version does not know, so it must not be read as
/// if they did not exist.
/// Every reader of `trials.jsonl` (the report, resume, merge) reads its lines here.
pub(crate) fn parse_line(path: &Path, number: usize, line: &[u8]) -> Result<Line> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u64,
    }
    if let Ok(v) = serde_json::from_slice::<Version>(line) {
        if v.schema_version > u64::from(crate::results::record::SCHEMA_VERSION) {
            return Err(newer_schema(
                &format!("{}:{number}", path.display()),
                v.schema_version,
            ));
        }
    }
    Ok(match serde_json::from_slice::<TrialRecord>(line) {
        Ok(r) => Line::Record(Box::new(r)),
        Err(e) => Line::Bad(e.to_string()),
    })
}

/// The one refusal of trial records newer than this jbench, `at` a file (and line).
pub(crate) fn newer_schema(at: &str, found: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{at}: trial record of schema_version {found}, but this jbench ({}) reads up to {}; a newer jbench is needed to read this results directory",
        env!("CARGO_PKG_VERSION"),
        crate::results::record::SCHEMA_VERSION
    )
}

/// Where the torn last line of `bytes` starts, if there is one: the last non-blank
/// line does not parse. Whether it ends in a newline does not matter, since a crash
/// can leave a truncated record followed by a newline as well as one without.
/// `load_records` and `--resume` both decide through this function, so a record the
/// report ignored is the one resume cuts off.
fn torn_tail(path: &Path, bytes: &[u8]) -> Result<Option<(usize, usize, String)>> {
    let Some(&(number, offset, line)) = lines(bytes).last() else {
        return Ok(None);
    };
    Ok(match parse_line(path, number, line)? {
        Line::Bad(e) => Some((number, offset, e)),
        Line::Record(_) => None,
    })
}

/// Refuses a path that is not a results directory, with one wording for every
/// command that reads one: missing, not a directory, or without `trials.jsonl`.
pub fn require_results_dir(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "{}: no such directory; give a results directory (`jbench run` prints the one it writes)",
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", dir.display())),
        Ok(m) if !m.is_dir() => bail!(
            "{} is not a directory; give a results directory (`jbench run` prints the one it writes)",
            dir.display()
        ),
        Ok(_) if !dir.join(TRIALS).exists() => bail!(not_results_dir(dir)),
        Ok(_) => Ok(()),
    }
}

fn not_results_dir(dir: &Path) -> String {
    format!(
        "{} is not a jbench results directory (no {TRIALS})",
        dir.display()
    )
}

/// Reads `trials.jsonl`.
///
/// - A torn last line (the machine died mid-write) is skipped with a warning; a bad
///   line elsewhere is an error.
/// - A record of a newer `schema_version` is refused, as is a trial number recorded
///   twice (two runs mixed, or an edited file: which one is right cannot be told).
/// - A path that is no results directory is refused by [`require_results_dir`].
/// - An `ok` record that cannot be a measurement (no phases; a phase time that is 0,
///   negative or not finite) is turned into a failed one whose error says why, and
///   warned about: it is counted in the tables but never averaged.
pub fn load_records(dir: &Path) -> Result<Vec<TrialRecord>> {
    require_results_dir(dir)?;
    let path = dir.join(TRIALS);
    // A symlink to /dev/zero or a FIFO in place of the trials would read forever.
    if let Ok(m) = fs::metadata(&path) {
        if !m.is_file() {
            bail!(
                "{} is not a regular file; a results directory's {TRIALS} is one",
                path.display()
            );
        }
    }
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(not_results_dir(dir)),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let all = lines(&bytes);
    let mut out: Vec<TrialRecord> = Vec::with_capacity(all.len());
    let mut seen: std::collections::BTreeMap<usize, usize> = Default::default();
    for (i, &(number, _, line)) in all.iter().enumerate() {
        let mut r = match parse_line(&path, number, line)? {
            Line::Record(r) => *r,
            Line::Bad(e) if i + 1 == all.len() => {
                crate::events::emit(crate::events::Event::TornLine {
                    file: path.clone(),
                    line: number,
                    error: e,
                });
                continue;
            }
            Line::Bad(e) => bail!(
                "{}:{number}: not a trial record: {e}; fix or remove the line",
                path.display()
            ),
        };
        if let Some(first) = seen.insert(r.trial, number) {
            bail!(
                "{}: trial {} is recorded twice (lines {first} and {number}); two runs were mixed or the file was edited: keep one of the lines",
                path.display(),
                r.trial
            );
        }
        if let Some(why) = r.exclude_if_invalid() {
            crate::events::emit(crate::events::Event::RecordSetAside {
                at: format!("{}:{number}", path.display()),
                why: why.to_string(),
            });
        }
        // `jbench run` fails such a trial itself; a record written otherwise (an
        // edited or merged file) is failed here, so no reader averages it.
        if let Some(why) = r.fail_if_stalled() {
            crate::events::emit(crate::events::Event::RecordSetAside {
                at: format!("{}:{number}", path.display()),
                why: format!("trial {}: {why}", r.trial),
            });
        }
        out.push(r);
    }
    Ok(out)
}

/// Trial indices already recorded (ok or failed): `--resume` skips them.
pub fn done_indices(records: &[TrialRecord]) -> BTreeSet<usize> {
    records.iter().map(|r| r.trial).collect()
}

/// Writes `summary.csv` beside the trials.
pub fn write_summary(dir: &Path, csv: &str) -> Result<()> {
    write_synced(&dir.join(SUMMARY), csv.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::adaptive::tests::rec;

    #[test]
    fn a_path_that_is_no_results_directory_gets_one_wording_per_case() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("gone");
        let err = load_records(&missing).unwrap_err().to_string();
        assert!(err.ends_with("gone: no such directory; give a results directory (`jbench run` prints the one it writes)"), "{err}");
        let file = tmp.path().join("f");
        fs::write(&file, "x").unwrap();
        let err = require_results_dir(&file).unwrap_err().to_string();
        assert!(err.contains("f is not a directory"), "{err}");
        let err = load_records(tmp.path()).unwrap_err().to_string();
        assert!(
            err.ends_with("is not a jbench results directory (no trials.jsonl)"),
            "{err}"
        );
    }

    fn line(r: &TrialRecord) -> String {
        serde_json::to_string(r).unwrap() + "\n"
    }

    fn dir_with(text: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(TRIALS), text).unwrap();
        d
    }

    fn two() -> String {
        line(&rec(0, "a", "w", 10.0)) + &line(&rec(1, "b", "w", 20.0))
    }

    #[test]
    fn trials_that_are_not_a_regular_file_are_refused_without_reading() {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.path().join(TRIALS)).unwrap();
        let err = format!("{:#}", load_records(d.path()).unwrap_err());
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn a_newer_schema_is_refused_naming_file_version_and_remedy() {
        let mut r = rec(2, "a", "w", 10.0);
        r.schema_version = crate::results::record::SCHEMA_VERSION + 1;
        let d = dir_with(&(two() + &line(&r)));
        let err = format!("{:#}", load_records(d.path()).unwrap_err());
        assert!(err.contains(TRIALS) && err.contains(":3:"), "{err}");
        assert!(err.contains("schema_version 2"), "{err}");
        assert!(err.contains("a newer jbench is needed"), "{err}");
        // Even as the last line, where a torn record would be forgiven.
        let newer_only = serde_json::json!({"schema_version": 99, "future": true}).to_string();
        let d = dir_with(&(two() + &newer_only + "\n"));
        assert!(load_records(d.path()).is_err());
    }

    #[test]
    fn a_torn_last_line_is_skipped_with_or_without_newline_and_resume_cuts_it() {
        let torn = &line(&rec(2, "a", "w", 10.0))[..40];
        for tail in ["", "\n"] {
            let d = dir_with(&(two() + torn + tail));
            let recs = load_records(d.path()).unwrap();
            assert_eq!(recs.len(), 2, "tail {tail:?}");
            drop_torn_tail(&d.path().join(TRIALS)).unwrap();
            assert_eq!(fs::read_to_string(d.path().join(TRIALS)).unwrap(), two());
        }
        // A torn line that is not the last one is an error, not silently skipped.
        let d = dir_with(
            &(line(&rec(0, "a", "w", 10.0)) + torn + "\n" + &line(&rec(1, "b", "w", 1.0))),
        );
        let err = format!("{:#}", load_records(d.path()).unwrap_err());
        assert!(err.contains(":2: not a trial record"), "{err}");
    }

    #[test]
    fn a_complete_last_record_without_newline_is_kept_and_resume_ends_its_line() {
        let text = two();
        let d = dir_with(text.trim_end());
        assert_eq!(load_records(d.path()).unwrap().len(), 2);
        drop_torn_tail(&d.path().join(TRIALS)).unwrap();
        assert_eq!(fs::read_to_string(d.path().join(TRIALS)).unwrap(), text);
    }

    #[test]
    fn a_trial_number_recorded_twice_is_refused() {
        let d = dir_with(&(two() + &line(&rec(1, "b", "w", 30.0))));
        let err = format!("{:#}", load_records(d.path()).unwrap_err());
        assert!(
            err.contains("trial 1 is recorded twice (lines 2 and 3)"),
            "{err}"
        );
    }

    #[test]
    fn records_that_cannot_be_measurements_are_excluded_not_averaged() {
        let mut zero = rec(2, "a", "w", 10.0);
        zero.phases[0].seconds = 0.0;
        let mut negative = rec(3, "a", "w", 10.0);
        negative.phases[0].seconds = -1.5;
        let mut no_phases = rec(4, "a", "w", 10.0);
        no_phases.phases.clear();
        let mut bad_durable = rec(5, "a", "w", 10.0);
        bad_durable.phases[0].durable_seconds = Some(0.0);
        let text =
            two() + &line(&zero) + &line(&negative) + &line(&no_phases) + &line(&bad_durable);
        let recs = load_records(dir_with(&text).path()).unwrap();
        assert_eq!(recs.len(), 6);
        for r in &recs[2..] {
            assert!(!r.is_ok() && r.is_excluded(), "{r:?}");
        }
        assert!(recs[2].error.as_ref().unwrap().contains("seconds = 0"));
        assert!(recs[4].error.as_ref().unwrap().contains("no phases"));
        assert!(recs[..2].iter().all(|r| r.is_ok()));
    }

    #[test]
    fn a_record_whose_daemon_stalled_is_read_as_failed_with_the_reason() {
        use crate::emu::daemon::DiskStats;
        use crate::rig::emulated::EmulationRecord;
        let with = |trial, overdue, slow_io| {
            let mut r = rec(trial, "a", "w", 10.0);
            r.emulation = Some(EmulationRecord {
                disks: vec![DiskStats {
                    name: "fs".into(),
                    model: "hdd-7200".into(),
                    overdue,
                    slow_io,
                    worst_late_ms: 2_500.0,
                    ..DiskStats::default()
                }],
                ..EmulationRecord::default()
            });
            r
        };
        let mut recording = with(4, 1, 0);
        recording.crash_recording = true;
        let text = line(&with(0, 0, 0))
            + &line(&with(1, 1, 0))
            + &line(&with(2, 0, 1))
            + &line(&recording);
        let recs = load_records(dir_with(&text).path()).unwrap();
        assert!(recs[0].is_ok(), "punctual: {:?}", recs[0]);
        for r in &recs[1..3] {
            assert!(r.is_stalled() && !r.is_excluded(), "{r:?}");
            let e = r.error.as_deref().unwrap();
            assert!(e.starts_with(crate::results::record::STALLED), "{e}");
            assert!(e.contains("emulated fs disk (hdd-7200)"), "{e}");
        }
        assert!(recs[1]
            .error
            .as_deref()
            .unwrap()
            .contains("worst 2.50 s late"));
        assert!(
            recs[3].is_ok(),
            "a crash recording is never averaged anyway"
        );
    }

    #[test]
    fn values_json_cannot_hold_are_not_trial_records() {
        // Infinite (overflowing) seconds and negative counts do not parse: refused
        // unless on the torn last line.
        let good = line(&rec(0, "a", "w", 10.0));
        for bad in [
            good.replace("\"seconds\":100.0", "\"seconds\":1e999"),
            good.replace("\"ops\":1000", "\"ops\":-1000"),
            good.replace("\"ops\":1000", "\"ops\":NaN"),
        ] {
            assert_ne!(bad, good);
            let d = dir_with(&(bad.replace("\"trial\":0", "\"trial\":7") + &good));
            assert!(load_records(d.path()).is_err(), "{bad}");
        }
    }
}

/// Whatever `trials.jsonl` holds, reading it and rendering the report in every format
/// never panics.
#[cfg(test)]
mod props {
    use super::*;
    use crate::report::{self, Format, ReportOptions};
    use proptest::prelude::*;

    fn valid_lines() -> Vec<String> {
        let mut out = Vec::new();
        for (i, (label, rate)) in [("a", 10.0), ("b", 12.0), ("a", 11.0), ("b", 13.0)]
            .into_iter()
            .enumerate()
        {
            let mut r = crate::run::adaptive::tests::rec(i, label, "w", rate);
            r.phases[0].durable_seconds = Some(2.0);
            out.push(serde_json::to_string(&r).unwrap());
        }
        out
    }

    /// Hostile replacements for a JSON value.
    fn weird_value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("-1".to_string()),
            Just("0".to_string()),
            Just("1e308".to_string()),
            Just("-1e308".to_string()),
            Just("1e999".to_string()),
            Just("18446744073709551616".to_string()),
            Just("5e-324".to_string()),
            Just("\"NaN\"".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            Just("\"\"".to_string()),
            Just("true".to_string()),
            any::<i64>().prop_map(|x| x.to_string()),
            any::<f64>().prop_map(|x| format!("{x:e}")),
        ]
    }

    /// A valid record with one field removed or replaced (possibly nested).
    fn mutated(line: String, key_pick: usize, value: String, remove: bool) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let mut paths: Vec<Vec<String>> = Vec::new();
        fn walk(v: &serde_json::Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
            if let serde_json::Value::Object(m) = v {
                for (k, x) in m {
                    let mut p = at.clone();
                    p.push(k.clone());
                    out.push(p.clone());
                    walk(x, p, out);
                }
            } else if let serde_json::Value::Array(a) = v {
                for (i, x) in a.iter().enumerate() {
                    let mut p = at.clone();
                    p.push(i.to_string());
                    walk(x, p, out);
                }
            }
        }
        walk(&v, Vec::new(), &mut paths);
        let path = &paths[key_pick % paths.len()];
        let (last, parent) = path.split_last().unwrap();
        let mut cur = &mut v;
        for k in parent {
            cur = match cur {
                serde_json::Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
                other => &mut other[k.as_str()],
            };
        }
        let Some(m) = cur.as_object_mut() else {
            return line;
        };
        if remove {
            m.remove(last);
            return v.to_string();
        }
        // Splice the raw text in, so values serde_json cannot hold (1e999) get through.
        let marker = "\u{1}MARK\u{1}";
        m.insert(last.clone(), serde_json::Value::String(marker.into()));
        v.to_string().replace(&format!("\"{marker}\""), &value)
    }

    fn file_text() -> impl Strategy<Value = Vec<u8>> {
        let lines = valid_lines();
        let mutate = (0..lines.len(), any::<usize>(), weird_value(), any::<bool>())
            .prop_map(move |(i, k, v, rm)| (i, k, v, rm));
        let l2 = valid_lines();
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..400),
            proptest::collection::vec(mutate, 0..4).prop_map(move |muts| {
                let mut ls = l2.clone();
                for (i, k, v, rm) in muts {
                    ls[i] = mutated(ls[i].clone(), k, v, rm);
                }
                (ls.join("\n") + "\n").into_bytes()
            }),
            (any::<usize>(), any::<bool>(), 0..4usize).prop_map(move |(cut, nl, dup)| {
                let mut text = lines.join("\n") + "\n";
                text.push_str(&lines[dup]);
                text.push('\n');
                let mut b = text.into_bytes();
                b.truncate(cut % (b.len() + 1));
                if nl {
                    b.push(b'\n');
                }
                b
            }),
            "[ -~\n]{0,300}".prop_map(String::into_bytes),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 200,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn reading_and_rendering_any_trials_file_never_panics(bytes in file_text()) {
            let d = tempfile::tempdir().unwrap();
            fs::write(d.path().join(TRIALS), &bytes).unwrap();
            if let Ok(records) = load_records(d.path()) {
                for opts in [ReportOptions::default(), ReportOptions { adaptive_looks: Some(4), ..Default::default() }] {
                    for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
                        let _ = report::render(&records, &opts, f);
                    }
                }
                // No spec.toml or env.json: the HTML page must still not panic.
                let _ = crate::report::html::render_page(&crate::report::html::Page {
                    records: &records,
                    env: None,
                    title: "t",
                    opts: &ReportOptions::default(),
                    results_dir: Some(d.path()),
                    extra_warnings: &[],
                    crash: &[],
                });
            }
            // --resume's view must agree: after cutting, the same records load.
            if let Ok(before) = load_records(d.path()) {
                drop_torn_tail(&d.path().join(TRIALS)).unwrap();
                let after = load_records(d.path()).unwrap();
                prop_assert_eq!(before.len(), after.len());
            }
        }
    }
}
