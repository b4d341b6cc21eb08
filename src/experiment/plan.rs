//! The ordered list of trials. A trial is one (configuration, workload, repetition) on
//! a fresh file system; its index is stable for a given spec, which is what `--resume`
//! matches on.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::experiment::config::{Config, FsType, Placement};
use crate::experiment::spec::{Order, Spec};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trial {
    /// Position in the plan, 0-based.
    pub index: usize,
    /// Index into `spec.configs`.
    pub config: usize,
    /// Index into `spec.workloads`.
    pub workload: usize,
    /// Repetition, 1-based.
    pub rep: u32,
    /// The crash lab's recording of this configuration x workload (an experiment with
    /// `[crash]`): run with the write log on and kept out of the speed statistics,
    /// since logging every write costs time the timed trials must not pay.
    pub recording: bool,
}

/// Orders the trials. Interleaved rounds are shuffled with a ChaCha stream seeded by
/// `spec.seed`, which is stable across platforms and crate versions, so a recorded
/// seed reproduces the order.
pub fn plan(spec: &Spec) -> Vec<Trial> {
    let pairs: Vec<(usize, usize)> = (0..spec.configs.len())
        .flat_map(|c| (0..spec.workloads.len()).map(move |w| (c, w)))
        .collect();
    let mut trials = Vec::with_capacity(pairs.len() * spec.repetitions as usize);
    match spec.order {
        Order::Sequential => {
            for &(config, workload) in &pairs {
                for rep in 1..=spec.repetitions {
                    trials.push((config, workload, rep));
                }
            }
        }
        Order::Interleaved => {
            let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
            for rep in 1..=spec.repetitions {
                let mut round = pairs.clone();
                round.shuffle(&mut rng);
                trials.extend(round.into_iter().map(|(c, w)| (c, w, rep)));
            }
        }
    }
    let mut out: Vec<Trial> = trials
        .into_iter()
        .enumerate()
        .map(|(index, (config, workload, rep))| Trial {
            index,
            config,
            workload,
            rep,
            recording: false,
        })
        .collect();
    // The recordings come after every timed trial, so the indices of the timed trials
    // do not depend on whether the experiment asks for the crash lab.
    if spec.crash.requested {
        let first = out.len();
        out.extend(
            pairs
                .iter()
                .enumerate()
                .map(|(i, &(config, workload))| Trial {
                    index: first + i,
                    config,
                    workload,
                    rep: 1,
                    recording: true,
                }),
        );
    }
    out
}

/// The experiment as `jbench crash` runs it, and its trials: one recording per
/// configuration x workload with every write logged, and no timed trials. The
/// experiment's own `[crash]` recordings would be a second copy of them, so its
/// `[crash]` table asks for none; they are marked as `jbench run` marks its own, so
/// their write-logged times stay out of every speed figure.
pub fn crash_plan(spec: &Spec) -> (Spec, Vec<Trial>) {
    let mut spec = spec.clone();
    spec.emulation.write_log = true;
    spec.crash.requested = false;
    spec.repetitions = 1;
    spec.adaptive = None;
    let trials = plan(&spec)
        .into_iter()
        .map(|t| Trial {
            recording: true,
            ..t
        })
        .collect();
    (spec, trials)
}

/// One line saying what a configuration builds.
pub fn describe_config(c: &Config) -> String {
    use crate::units::format_size;
    let disk = c
        .fs_device
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| match &c.fs_model {
            Some(m) => format!("an emulated {} disk", m.name),
            None => "image".into(),
        });
    let mut line = format!("{} {} on {disk}, ", c.fs_type, format_size(c.fs_size));
    let log = if c.fs_type == FsType::Xfs {
        "log"
    } else {
        "journal"
    };
    let place = match c.placement {
        Placement::None => String::new(),
        Placement::Internal => "in the file system".into(),
        Placement::SameDisk => "on the same image, after the file system".into(),
        Placement::SecondDisk => c
            .second_disk_dir
            .as_ref()
            .map(|d| format!("on an image in {}", d.display()))
            .unwrap_or_else(|| "on a second image".into()),
        Placement::Ramdisk => match c.ramdisk_size {
            Some(total) => format!(
                "on part of a {} RAM disk in {}",
                format_size(total),
                c.ramdisk_dir.display()
            ),
            None => format!("on a RAM disk in {}", c.ramdisk_dir.display()),
        },
        Placement::Zram => "on a new zram device".into(),
        Placement::Device => c
            .journal_device
            .as_ref()
            .map(|d| format!("on {}", d.display()))
            .unwrap_or_default(),
    };
    if c.placement == Placement::None {
        line.push_str("no journal");
    } else {
        line.push_str(&format!("{log} {} {place}", format_size(c.journal_size)));
        if let Some(m) = &c.journal_model {
            line.push_str(&format!(" (an emulated {} disk)", m.name));
        }
    }
    if c.fs_type.is_ext() && c.placement != Placement::None {
        line.push_str(&format!(", data={}", c.mode));
    }
    if c.fast_commit {
        line.push_str(", fast_commit");
    }
    if let Some(secs) = c.commit_seconds {
        line.push_str(&format!(", commit={secs}"));
    }
    // Options like barrier=0 change the answer as much as the journal's place does.
    if !c.mount_options.is_empty() {
        line.push_str(&format!(", mount -o {}", c.mount_options.join(",")));
    }
    if let Some(m) = c.memory_limit {
        line.push_str(&format!(", memory limit {}", format_size(m)));
    }
    if let Some(size) = c.second_fs_size {
        line.push_str(&format!(
            "; a second {} file system of {} on its own{} disk ($JBENCH_SECOND_FS)",
            c.fs_type,
            format_size(size),
            c.second_fs_model
                .as_ref()
                .map(|m| format!(" emulated {}", m.name))
                .unwrap_or_default()
        ));
    }
    // The application's settings are this configuration's point when it has them.
    if !c.env.is_empty() {
        let vars: Vec<String> = c.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        line.push_str(&format!("; env {}", vars.join(" ")));
    }
    if c.negative_control {
        line.push_str("; a negative control (declared to lose data)");
    }
    line
}

/// Peak data above which `plan` and `run` say what a workload makes (10 GiB).
pub const LARGE_DATA: u64 = 10 << 30;
/// Peak files and directories above which they say it (one million).
pub const LARGE_INODES: u64 = 1_000_000;

/// One line per workload whose size is large (fdtree grows exponentially with
/// `levels`), so a run that writes terabytes or makes millions of files is seen
/// before it starts.
pub fn size_warnings(spec: &Spec) -> Vec<String> {
    use crate::units::format_size;
    spec.workloads
        .iter()
        .filter(|w| w.engine.peak_data_bytes() > LARGE_DATA || w.engine.peak_inodes() > LARGE_INODES)
        .map(|w| {
            let trials = spec.configs.len() as u64 * u64::from(spec.repetitions);
            format!(
                "workload `{}` is large: each trial makes {} files and directories and writes {} of data ({} of it); check its parameters ({})",
                w.name,
                w.engine.peak_inodes(),
                format_size(w.engine.peak_data_bytes().div_ceil(1 << 20) << 20),
                crate::units::count(trials, "trial"),
                param_words(&w.engine.params())
            )
        })
        .collect()
}

/// A workload's parameters as the spec writes them, `key = value` on one line; a text
/// of several lines (a fio job, a script) is named by its length only.
pub fn param_words(params: &serde_json::Value) -> String {
    use serde_json::Value;
    fn value(v: &Value) -> String {
        match v {
            Value::String(s) if s.contains('\n') => format!("({} lines)", s.lines().count()),
            Value::String(s) => format!("{s:?}"),
            Value::Array(items) => {
                format!(
                    "[{}]",
                    items.iter().map(value).collect::<Vec<_>>().join(", ")
                )
            }
            Value::Object(m) => format!(
                "{{{}}}",
                m.iter()
                    .map(|(k, v)| format!("{k} = {}", value(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Null => "none".into(),
            other => other.to_string(),
        }
    }
    match params {
        Value::Object(m) => m
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k} = {}", value(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => value(other),
    }
}

/// A human-readable listing for `jbench plan`.
pub fn describe(spec: &Spec, trials: &[Trial]) -> String {
    use crate::units::count;
    use std::fmt::Write;
    let mut out = String::new();
    let recordings = trials.iter().filter(|t| t.recording).count() as u64;
    let timed = trials.len() as u64 - recordings;
    let matrix = format!(
        "{} x {}",
        count(spec.configs.len() as u64, "configuration"),
        count(spec.workloads.len() as u64, "workload"),
    );
    // Every trial the run executes is counted, recordings included, and the product
    // is the timed trials alone, so the arithmetic on the line holds.
    let what = match (timed, recordings) {
        (_, 0) => format!(
            "{matrix} x {} = {}",
            count(spec.repetitions, "repetition"),
            count(timed, "trial")
        ),
        (0, r) => format!("{matrix} = {}", count(r, "crash recording")),
        (t, r) => format!(
            "{matrix} x {} = {} + {} = {}",
            count(spec.repetitions, "repetition"),
            count(t, "timed trial"),
            count(r, "crash recording"),
            count(t + r, "trial")
        ),
    };
    let _ = writeln!(
        out,
        "experiment `{}`{}: {what}, {} order (seed {})",
        spec.name,
        if timed == 0 && recordings > 0 {
            " as `jbench crash` runs it"
        } else {
            ""
        },
        spec.order.as_str(),
        spec.seed
    );
    if recordings > 0 {
        let strategies = spec
            .crash
            .strategies
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "crash lab{}: one crash recording per configuration x workload{} (write log on, kept out of the speed figures), each then cut into up to {} crash states ({strategies})",
            if timed > 0 { " ([crash])" } else { "" },
            if timed > 0 {
                ", after the timed trials"
            } else {
                ""
            },
            spec.crash.states,
        );
    }
    if let Some(a) = spec.adaptive {
        let _ = writeln!(
            out,
            "adaptive repetitions: {}..{} per configuration and workload; after {} rounds a trial is added while a phase's rate CV > {:.1}% or a comparison with the baseline is undecided against the {:.1}% noise band (the trials below are the first {} rounds)",
            a.min,
            a.max,
            a.min,
            a.target_cv * 100.0,
            spec.noise_band * 100.0,
            a.min
        );
    }
    let _ = writeln!(out, "\nconfigurations:");
    for c in &spec.configs {
        let _ = writeln!(out, "  {:<24} {}", c.label, describe_config(c));
    }
    let _ = writeln!(out, "\nworkloads:");
    for w in &spec.workloads {
        let _ = writeln!(
            out,
            "  {:<24} {} {}  ({}, {} of data at peak)",
            w.name,
            w.engine.kind(),
            param_words(&w.engine.params()),
            count(w.engine.peak_inodes(), "inode"),
            crate::units::format_size(w.engine.peak_data_bytes().div_ceil(1 << 20) << 20)
        );
    }
    let _ = writeln!(out, "\ntrials:");
    for t in trials {
        let what = if t.recording {
            "crash rec".to_string()
        } else {
            format!("rep {:>3}", t.rep)
        };
        let _ = writeln!(
            out,
            "  {:>5}  {what:<9}  {:<24} {}",
            t.index, spec.configs[t.config].label, spec.workloads[t.workload].name
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(order: &str, seed: u64) -> Spec {
        let text = format!(
            r#"repetitions = 3
order = "{order}"
seed = {seed}
[filesystem]
size = "1G"
[journal]
placement = ["internal", "same-disk", "second-disk", "ramdisk"]
[[workload]]
kind = "fdtree"
name = "a"
dirs = 2
levels = 2
[[workload]]
kind = "fdtree"
name = "b"
dirs = 3
levels = 2
"#
        );
        crate::experiment::spec::parse(&text, "t.toml").unwrap()
    }

    #[test]
    fn sequential_runs_every_repetition_of_a_pair_together() {
        let s = spec("sequential", 1);
        let p = plan(&s);
        assert_eq!(p.len(), 4 * 2 * 3);
        let first: Vec<(usize, usize, u32)> = p[..4]
            .iter()
            .map(|t| (t.config, t.workload, t.rep))
            .collect();
        assert_eq!(first, [(0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 1, 1)]);
        assert!(p.iter().enumerate().all(|(i, t)| t.index == i));
    }

    #[test]
    fn interleaved_rounds_hold_every_pair_once_in_a_seeded_order() {
        let s = spec("interleaved", 42);
        let p = plan(&s);
        assert_eq!(p.len(), 24);
        for (round, chunk) in p.chunks(8).enumerate() {
            let mut pairs: Vec<(usize, usize)> =
                chunk.iter().map(|t| (t.config, t.workload)).collect();
            assert!(chunk.iter().all(|t| t.rep == round as u32 + 1));
            pairs.sort();
            pairs.dedup();
            assert_eq!(pairs.len(), 8, "round {round} has every pair once");
        }
        assert_eq!(plan(&s), p, "same seed, same order");
        let other = plan(&spec("interleaved", 43));
        assert_ne!(other, p, "another seed shuffles differently");
        let rounds_differ = p[..8]
            .iter()
            .zip(&p[8..16])
            .any(|(a, b)| a.config != b.config || a.workload != b.workload);
        assert!(rounds_differ, "each round is shuffled anew");
    }

    #[test]
    fn describe_lists_configurations_and_trials() {
        let s = spec("sequential", 1);
        let text = describe(&s, &plan(&s));
        assert!(text.contains("4 configurations x 2 workloads x 3 repetitions = 24 trials"));
        assert!(text.contains("on a RAM disk in /dev/shm"), "{text}");
        assert_eq!(text.lines().filter(|l| l.contains(" rep ")).count(), 24);
        assert!(!text.contains("adaptive"), "{text}");
        let mut s = s;
        s.adaptive = Some(crate::experiment::spec::Adaptive {
            min: 3,
            max: 10,
            target_cv: 0.03,
        });
        let text = describe(&s, &plan(&s));
        assert!(
            text.contains("adaptive repetitions: 3..10 per configuration and workload; after 3 rounds a trial is added while a phase's rate CV > 3.0%"),
            "{text}"
        );
        assert!(text.contains("2.0% noise band"), "{text}");
    }

    /// The first line counts every trial the run executes, and its product is the
    /// timed trials alone.
    #[test]
    fn the_count_of_trials_names_the_crash_recordings_apart() {
        let text = crate::experiment::presets::find("quick").unwrap();
        let s = crate::experiment::spec::parse(text, "quick").unwrap();
        let trials = plan(&s);
        assert_eq!(trials.len(), 40);
        let listing = describe(&s, &trials);
        let first = listing.lines().next().unwrap();
        assert!(
            first.contains(
                ": 4 configurations x 2 workloads x 4 repetitions = 32 timed trials + 8 crash recordings = 40 trials, interleaved order"
            ),
            "{first}"
        );
        assert!(
            listing.contains("crash lab ([crash]): one crash recording per configuration x workload, after the timed trials"),
            "{listing}"
        );

        let (crash, recordings) = crash_plan(&s);
        assert_eq!(recordings.len(), 8);
        assert!(recordings.iter().all(|t| t.recording && t.rep == 1));
        assert!(crash.emulation.write_log && !crash.crash.requested);
        let listing = describe(&crash, &recordings);
        assert!(
            listing.starts_with(
                "experiment `quick` as `jbench crash` runs it: 4 configurations x 2 workloads = 8 crash recordings, interleaved order"
            ),
            "{listing}"
        );
        assert!(
            listing.contains(
                "crash lab: one crash recording per configuration x workload (write log on"
            ),
            "{listing}"
        );
    }

    #[test]
    fn a_configuration_line_names_its_mount_options() {
        let s = spec("sequential", 1);
        let mut c = s.configs[0].clone();
        assert!(!describe_config(&c).contains("mount -o"));
        c.mount_options = vec!["barrier=0".into(), "noatime".into()];
        assert!(describe_config(&c).contains(", mount -o barrier=0,noatime"));
    }

    #[test]
    fn a_large_workload_is_announced_with_its_size() {
        let s = spec("sequential", 1);
        assert!(size_warnings(&s).is_empty());
        let text = "[filesystem]\nsize = \"16T\"\n[[workload]]\nkind = \"fdtree\"\nname = \"huge\"\ndirs = 10\nfiles = 10\nblocks = 1\nlevels = 6\n";
        let s = crate::experiment::spec::parse(text, "t.toml").unwrap();
        let w = size_warnings(&s);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("`huge` is large: each trial makes 12222221 files and directories"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("dirs = 10, files = 10"), "{}", w[0]);
        // The listing goes to stdout; warnings go to stderr apart from it.
        let listing = describe(&s, &plan(&s));
        assert!(!listing.contains("warning"), "{listing}");
        assert!(
            listing.contains(
                "1 configuration x 1 workload x 3 repetitions = 3 trials, interleaved order"
            ),
            "{listing}"
        );
    }
}
