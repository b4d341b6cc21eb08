//! Experiments built into the binary, so `jbench run` works from anywhere with no file.

/// (name, experiment file text). The first is the default of `jbench run`.
pub const PRESETS: [(&str, &str); 20] = [
    ("quick", include_str!("../../presets/quick.toml")),
    ("quick-host", include_str!("../../presets/quick-host.toml")),
    (
        "study1-journal-device",
        include_str!("../../presets/study1-journal-device.toml"),
    ),
    (
        "study2-journal-size",
        include_str!("../../presets/study2-journal-size.toml"),
    ),
    (
        "study3-nvram-postmark",
        include_str!("../../presets/study3-nvram-postmark.toml"),
    ),
    (
        "study4-journaling-modes-iozone",
        include_str!("../../presets/study4-journaling-modes-iozone.toml"),
    ),
    ("study1-hdd", include_str!("../../presets/study1-hdd.toml")),
    ("study2-hdd", include_str!("../../presets/study2-hdd.toml")),
    ("study3-hdd", include_str!("../../presets/study3-hdd.toml")),
    (
        "study3-hdd-modern",
        include_str!("../../presets/study3-hdd-modern.toml"),
    ),
    ("study4-hdd", include_str!("../../presets/study4-hdd.toml")),
    (
        "crash-placement",
        include_str!("../../presets/crash-placement.toml"),
    ),
    (
        "crash-modes",
        include_str!("../../presets/crash-modes.toml"),
    ),
    ("fio-db", include_str!("../../presets/fio-db.toml")),
    ("tradeoff", include_str!("../../presets/tradeoff.toml")),
    (
        "own-hardware",
        include_str!("../../presets/own-hardware.toml"),
    ),
    ("sqlite", include_str!("../../presets/sqlite.toml")),
    ("redis", include_str!("../../presets/redis.toml")),
    ("postgres", include_str!("../../presets/postgres.toml")),
    ("etcd", include_str!("../../presets/etcd.toml")),
];

pub fn find(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// The preset `name`, or the one error every command gives for a name that is none:
/// the nearest preset's name when the name looks like a slip, then every preset's.
pub fn lookup(name: &str) -> Result<&'static str, String> {
    find(name).ok_or_else(|| {
        let guess = nearest(name).map_or(String::new(), |n| format!("; did you mean `{n}`?"));
        format!(
            "no preset `{name}`{guess} (the presets: {}; `jbench preset list` says what each asks)",
            names().join(", ")
        )
    })
}

/// The preset whose name is closest to `name`, when it is close enough to be the one
/// meant: a few letters apart, or `name` a part of it.
fn nearest(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    names()
        .into_iter()
        .map(|n| (strsim::levenshtein(&lower, n), n))
        .filter(|&(d, n)| d <= 2.max(n.len() / 4) || (lower.len() >= 3 && n.contains(&lower)))
        .min()
        .map(|(_, n)| n)
}

/// What a preset's file says its run took where it was measured: its `# Run time:`
/// comment line.
pub fn measured_run_time(text: &str) -> Option<&str> {
    text.lines()
        .map_while(|l| l.strip_prefix('#'))
        .find_map(|l| l.trim().strip_prefix("Run time:"))
        .map(str::trim)
}

/// The seconds a preset's `# Run time:` comment gives first ("8 min 21 s on a quiet
/// 2-vCPU VM" is 501), for `plan` to book an unmodified preset by what it measured;
/// `None` for a part of a run ("15 h 27 min for 68 of its 84 trials").
pub fn measured_run_seconds(text: &str) -> Option<f64> {
    let said = measured_run_time(text)?;
    let mut total = 0.0;
    let mut number: Option<f64> = None;
    for word in said.split_whitespace() {
        let word = word.trim_end_matches([',', ';', '.']);
        match (number, word) {
            (None, "for") => return None,
            (None, w) => match w.parse::<f64>() {
                Ok(v) => number = Some(v),
                Err(_) => break,
            },
            (Some(v), "h") => {
                total += v * 3600.0;
                number = None;
            }
            (Some(v), "min") => {
                total += v * 60.0;
                number = None;
            }
            (Some(v), "s") => {
                total += v;
                number = None;
            }
            (Some(_), _) => break,
        }
    }
    (total > 0.0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_run_time_reads_as_seconds_up_to_its_first_words() {
        let secs = |t: &str| measured_run_seconds(&format!("# Run time: {t}\nname = \"a\""));
        assert_eq!(secs("8 min 21 s on a quiet 2-vCPU VM"), Some(501.0));
        assert_eq!(secs("1 h 31 min on a quiet VM"), Some(5460.0));
        assert_eq!(secs("4 min 17 s and 4 min 16 s"), Some(257.0));
        assert_eq!(secs("about an hour"), None);
        assert_eq!(
            secs("15 h 27 min for 68 of its 84 trials"),
            None,
            "a part of a run"
        );
    }

    #[test]
    fn a_mistyped_preset_gets_one_wording_and_a_guess() {
        let err = lookup("quik").unwrap_err();
        assert!(
            err.starts_with("no preset `quik`; did you mean `quick`?"),
            "{err}"
        );
        assert!(lookup("study3")
            .unwrap_err()
            .contains("did you mean `study3-hdd`?"));
        let far = lookup("zzzzzzzz").unwrap_err();
        assert!(!far.contains("did you mean"), "{far}");
        assert!(far.contains("tradeoff"), "{far}");
        assert!(lookup("quick").is_ok());
    }

    #[test]
    fn measured_run_times_come_from_the_preset_comment() {
        assert_eq!(
            measured_run_time("# A.\n# Run time: 5 min (x)\nname = \"a\""),
            Some("5 min (x)")
        );
        assert_eq!(measured_run_time("name = \"a\"\n# Run time: 5 min"), None);
        let s1 = measured_run_time(find("study1-hdd").unwrap()).unwrap();
        assert!(s1.contains(" min on a quiet 2-vCPU VM"), "{s1}");
    }

    #[test]
    fn every_preset_is_a_valid_experiment() {
        for (name, text) in PRESETS {
            let spec = crate::experiment::spec::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.name, name, "a preset's name matches its file");
        }
    }

    #[test]
    fn the_hdd_presets_put_every_disk_on_an_emulated_spindle_or_ram() {
        let name = |m: &Option<crate::experiment::config::DeviceModelSpec>| {
            m.as_ref().map(|m| m.name.clone())
        };
        let s1 = crate::experiment::spec::parse(find("study1-hdd").unwrap(), "s1").unwrap();
        let got: Vec<_> = s1
            .configs
            .iter()
            .map(|c| (c.label.as_str(), name(&c.fs_model), name(&c.journal_model)))
            .collect();
        let hdd = Some("hdd-7200".to_string());
        assert_eq!(
            got,
            [
                ("same-disk", hdd.clone(), None),
                ("second-disk", hdd.clone(), hdd.clone()),
                ("ramdisk", hdd.clone(), Some("ram".to_string())),
            ]
        );
        let s2 = crate::experiment::spec::parse(find("study2-hdd").unwrap(), "s2").unwrap();
        assert_eq!(s2.configs.len(), 8);
        assert_eq!(
            s2.baseline.as_deref(),
            Some("second-disk,journal=hdd-7200,16M")
        );
        for s in [&s1, &s2] {
            assert!(s.configs.iter().all(|c| c.journal_size >= 16 << 20
                && c.memory_limit == Some(2 << 30)
                && c.fs_model.is_some()));
            assert!(
                s.workloads.iter().all(|w| w.durable),
                "fdtree never fsyncs: time to syncfs"
            );
        }
    }

    #[test]
    fn the_default_quick_preset_compares_every_placement_on_emulated_spindles() {
        use crate::experiment::config::Placement;
        assert_eq!(
            PRESETS[0].0, "quick",
            "`jbench run` with no spec runs the first"
        );
        let q = crate::experiment::spec::parse(find("quick").unwrap(), "quick").unwrap();
        let model = |m: &Option<crate::experiment::config::DeviceModelSpec>| {
            m.as_ref().map(|m| m.name.clone())
        };
        let got: Vec<_> = q
            .configs
            .iter()
            .map(|c| (c.placement, model(&c.fs_model), model(&c.journal_model)))
            .collect();
        let hdd = Some("hdd-7200".to_string());
        assert_eq!(
            got,
            [
                (Placement::Internal, hdd.clone(), None),
                (Placement::SameDisk, hdd.clone(), None),
                (Placement::SecondDisk, hdd.clone(), hdd.clone()),
                (Placement::Ramdisk, hdd.clone(), Some("ram".to_string())),
            ]
        );
        let kinds: Vec<_> = q
            .workloads
            .iter()
            .map(|w| (w.engine.kind(), w.durable))
            .collect();
        assert_eq!(kinds, [("fsync", false), ("fdtree", true)]);
        // The fsync phase (seconds per trial) must not be flagged suspect wholesale.
        assert!(q.suspect_below <= std::time::Duration::from_secs(2));
        assert!(
            q.repetitions >= 3,
            "enough trials for a confidence interval"
        );
    }

    #[test]
    fn quick_host_measures_this_machines_own_disk() {
        let h = crate::experiment::spec::parse(find("quick-host").unwrap(), "h").unwrap();
        assert_eq!(h.configs.len(), 4);
        assert!(h
            .configs
            .iter()
            .all(|c| c.fs_model.is_none() && c.journal_model.is_none()));
    }

    #[test]
    fn study3_keeps_the_ram_taken_equal_across_journal_sizes() {
        let s =
            crate::experiment::spec::parse(find("study3-nvram-postmark").unwrap(), "s3").unwrap();
        assert_eq!(s.configs.len(), 7);
        assert_eq!(s.configs[0].label, "internal");
        let ram: Vec<_> = s.configs[1..]
            .iter()
            .map(|c| (c.journal_size >> 20, c.ramdisk_size))
            .collect();
        assert_eq!(ram, [4, 8, 16, 32, 64, 128].map(|m| (m, Some(128 << 20))));
        assert!(s
            .configs
            .iter()
            .all(|c| c.fs_type == crate::experiment::config::FsType::Ext3));
        assert!(s.configs.iter().all(|c| c.memory_limit == Some(384 << 20)));
        let pm: Vec<serde_json::Value> = s.workloads.iter().map(|w| w.engine.params()).collect();
        assert_eq!(pm[0]["number"], 2000);
        assert_eq!(pm[1]["size"], serde_json::json!([1, 1000]));
        assert_eq!(pm[2]["transactions"], 50000);
    }

    #[test]
    fn study3_era_and_modern_differ_only_below_the_file_system() {
        use crate::experiment::config::FsType;
        let era = crate::experiment::spec::parse(find("study3-hdd").unwrap(), "e").unwrap();
        let modern =
            crate::experiment::spec::parse(find("study3-hdd-modern").unwrap(), "m").unwrap();
        let labels = |s: &crate::experiment::spec::Spec| -> Vec<String> {
            s.configs.iter().map(|c| c.label.clone()).collect()
        };
        assert_eq!(labels(&era), labels(&modern), "compare matches labels");
        assert_eq!(labels(&era)[0], "internal");
        assert_eq!(era.configs.len(), 7);
        let named = |s: &crate::experiment::spec::Spec| -> Vec<(String, serde_json::Value)> {
            s.workloads
                .iter()
                .map(|w| (w.name.clone(), w.engine.params()))
                .collect()
        };
        assert_eq!(named(&era), named(&modern));
        assert_eq!(era.writeback, modern.writeback, "the same writeback clock");
        assert!(era.writeback.sync_at_start && era.writeback.pins());
        let study =
            crate::experiment::spec::parse(find("study3-nvram-postmark").unwrap(), "s").unwrap();
        let (unscaled, scaled): (Vec<_>, Vec<_>) = named(&era)
            .into_iter()
            .partition(|(name, _)| !name.ends_with("-scaled"));
        assert_eq!(unscaled, named(&study), "the study's workloads, unscaled");
        assert!(
            !scaled.is_empty(),
            "very-small is scaled past the page cache"
        );
        for (name, mut params) in scaled {
            let of = name.trim_end_matches("-scaled");
            let (_, original) = unscaled
                .iter()
                .find(|(n, _)| n == of)
                .unwrap_or_else(|| panic!("{name} has no unscaled {of} beside it"));
            assert!(params["transactions"].as_u64() > original["transactions"].as_u64());
            params["transactions"] = original["transactions"].clone();
            assert_eq!(&params, original, "{name} scales only transactions");
        }
        for (e, m) in era.configs.iter().zip(&modern.configs) {
            assert_eq!(
                (e.fs_type, e.journal_size, e.ramdisk_size, e.memory_limit),
                (m.fs_type, m.journal_size, m.ramdisk_size, m.memory_limit)
            );
            assert_eq!(e.fs_type, FsType::Ext3);
            assert_eq!(e.memory_limit, Some(384 << 20), "512 MB less the RAM disk");
            assert_eq!(e.mount_options, ["barrier=0"], "2.4 issued no flushes");
            assert!(m.mount_options.is_empty(), "today's default: barriers on");
            let disk = e.fs_model.as_ref().unwrap();
            assert_eq!(disk.name, "atlas-v");
            assert_eq!(
                disk.params.get("write_cache"),
                Some(&toml::Value::Boolean(false))
            );
            assert_eq!(m.fs_model.as_ref().unwrap().name, "hdd-7200");
        }
        let journals: Vec<_> = era.configs[1..]
            .iter()
            .map(|c| c.journal_model.as_ref().map(|m| m.name.as_str()))
            .collect();
        assert!(journals.iter().all(|m| *m == Some("nvram")));
    }

    #[test]
    fn study4_compares_no_journal_metadata_and_data_journaling() {
        let s =
            crate::experiment::spec::parse(find("study4-journaling-modes-iozone").unwrap(), "s4")
                .unwrap();
        let modes: Vec<(&str, &str)> = s
            .configs
            .iter()
            .map(|c| (c.label.as_str(), c.mode_label()))
            .collect();
        assert_eq!(
            modes,
            [
                ("ext4-no-journal", "none"),
                ("ext4-ordered", "ordered"),
                ("ext4-journal", "journal"),
                ("xfs", "metadata")
            ]
        );
        assert_eq!(s.workloads.len(), 6);
        assert_eq!(s.repetitions, 3);
    }

    #[test]
    fn study4_hdd_runs_the_linux_analogue_on_a_battery_backed_raid6() {
        let s = crate::experiment::spec::parse(find("study4-hdd").unwrap(), "s4").unwrap();
        let analogue =
            crate::experiment::spec::parse(find("study4-journaling-modes-iozone").unwrap(), "a")
                .unwrap();
        let labels = |s: &crate::experiment::spec::Spec| -> Vec<String> {
            s.configs.iter().map(|c| c.label.clone()).collect()
        };
        assert_eq!(labels(&s), labels(&analogue));
        for c in &s.configs {
            let m = c.fs_model.as_ref().expect("every file system on the array");
            assert_eq!((m.name.as_str(), m.model.as_str()), ("raid6-bbu", "raid6"));
            assert_eq!(m.params.get("spindles"), Some(&toml::Value::Integer(8)));
            assert_eq!(
                m.params.get("nonvolatile"),
                Some(&toml::Value::Boolean(true))
            );
            assert!(c.journal_model.is_none(), "journals and logs are internal");
            assert_eq!(c.memory_limit, Some(512 << 20));
        }
        let names: Vec<&str> = s.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "large",
                "large-sync",
                "cached",
                "cached-sync",
                "throughput-6",
                "throughput-7"
            ]
        );
        // The large file is 4x memory (the study's far exceeded it); the cached one fits.
        let sizes: Vec<u64> = s
            .workloads
            .iter()
            .map(|w| w.engine.peak_data_bytes())
            .collect();
        assert!(
            sizes[0] >= 4 * (512 << 20) && sizes[2] < 512 << 20,
            "{sizes:?}"
        );
        assert_eq!(s.repetitions, 3);
        crate::emu::model_by_name(
            "raid6",
            Some(&s.configs[0].fs_model.as_ref().unwrap().params),
        )
        .expect("the preset's array builds");
    }

    #[test]
    fn study1_has_the_published_parameters() {
        let s =
            crate::experiment::spec::parse(find("study1-journal-device").unwrap(), "s1").unwrap();
        assert_eq!(s.repetitions, 10);
        let labels: Vec<&str> = s.configs.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["same-disk", "second-disk", "ramdisk"]);
        assert!(s.configs.iter().all(|c| c.journal_size == 16 << 20));
        assert!(s
            .configs
            .iter()
            .all(|c| c.mode == crate::experiment::config::DataMode::Ordered));
        let trees: Vec<(u64, u64)> = s
            .workloads
            .iter()
            .map(|w| (w.engine.peak_inodes(), w.engine.peak_data_bytes() / 1024))
            .collect();
        assert_eq!(
            trees,
            [
                (8_421 + 336_840, 1_347_360),
                (88_573 + 354_292, 1_417_168),
                (307 + 3_070, 12_280_000),
                (2_047 + 4_094, 16_376_000)
            ]
        );
        assert_eq!(s.suspect_below.as_secs(), 60);
    }

    #[test]
    fn the_crash_presets_emulate_every_disk_so_the_write_log_sees_every_write() {
        use crate::experiment::config::{DataMode, FsType};
        let model = |m: &Option<crate::experiment::config::DeviceModelSpec>| {
            m.as_ref().map(|m| m.name.clone())
        };
        let p = crate::experiment::spec::parse(find("crash-placement").unwrap(), "p").unwrap();
        let got: Vec<_> = p
            .configs
            .iter()
            .map(|c| {
                (
                    c.label.as_str(),
                    c.journal_size >> 20,
                    model(&c.journal_model),
                )
            })
            .collect();
        let hdd = Some("hdd-7200".to_string());
        let ram = Some("ram".to_string());
        assert_eq!(
            got,
            [
                ("internal,16M", 16, None),
                ("internal,256M", 256, None),
                ("second-disk,journal=hdd-7200,16M", 16, hdd.clone()),
                ("second-disk,journal=hdd-7200,256M", 256, hdd.clone()),
                ("ramdisk,journal=ram,16M", 16, ram.clone()),
                ("ramdisk,journal=ram,256M", 256, ram.clone()),
            ]
        );
        assert!(p.configs.iter().all(|c| model(&c.fs_model) == hdd
            && c.fs_type == FsType::Ext4
            && c.mode == DataMode::Ordered));
        let kinds: Vec<_> = p.workloads.iter().map(|w| w.engine.kind()).collect();
        assert_eq!(kinds, ["fsync", "fdtree"]);
        assert_eq!(p.workloads[0].engine.params()["fsync_dir"], true);

        let m = crate::experiment::spec::parse(find("crash-modes").unwrap(), "m").unwrap();
        let got: Vec<_> = m
            .configs
            .iter()
            .map(|c| (c.label.as_str(), c.fs_type, c.mode_label()))
            .collect();
        assert_eq!(
            got,
            [
                ("ext3-ordered", FsType::Ext3, "ordered"),
                ("ext4-ordered", FsType::Ext4, "ordered"),
                ("ext4-journal", FsType::Ext4, "journal"),
                ("ext4-writeback", FsType::Ext4, "writeback"),
                ("xfs", FsType::Xfs, "metadata"),
                ("ext4-lying-disk", FsType::Ext4, "ordered"),
                ("ext4-barrier0", FsType::Ext4, "ordered"),
            ]
        );
        // The negative controls: a disk that acknowledges flushes it does not do, and
        // a file system that sends none to a disk with a volatile cache.
        let liar = m.configs[5].fs_model.as_ref().unwrap();
        assert_eq!(liar.model, "hdd-7200");
        assert_eq!(
            liar.params.get("honor_flush"),
            Some(&toml::Value::Boolean(false))
        );
        assert_eq!(m.configs[6].mount_options, ["barrier=0"]);
        assert_eq!(model(&m.configs[6].fs_model), hdd);
        assert!(m.configs[..5].iter().all(|c| model(&c.fs_model) == hdd
            && c.mount_options.is_empty()
            && c.journal_model.is_none()));
        for s in [&p, &m] {
            assert_eq!(s.repetitions, 1);
            assert_eq!(s.crash.states, 200);
        }
    }
}
