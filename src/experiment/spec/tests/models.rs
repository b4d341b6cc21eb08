//! Emulated disks: device models, [models] and [emulation] tables, and what the resolved spec keeps of them.

use super::*;

#[test]
fn device_models_come_from_built_ins_and_the_models_table() {
    let text = emulated(
            "device_model = \"hdd-7200\"",
            "placement = \"second-disk\"\ndevice_model = \"slow-journal\"",
            "\n[models.slow-journal]\nmodel = \"hdd-7200\"\nwrite_cache = false\nseed = 7\n\n[models.unused]\nmodel = \"nvme\"\nread_latency_us = 60.0\n",
        );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(s.configs.len(), 1);
    let c = &s.configs[0];
    assert_eq!(c.fs_model, Some(DeviceModelSpec::builtin("hdd-7200")));
    let j = c.journal_model.as_ref().unwrap();
    assert_eq!(j.name, "slow-journal");
    assert_eq!(j.model, "hdd-7200");
    assert_eq!(
        j.params.len(),
        2,
        "`model` is not a parameter: {:?}",
        j.params
    );
    assert_eq!(j.params["write_cache"], toml::Value::Boolean(false));
    assert_eq!(j.params["seed"], toml::Value::Integer(7));
    let r = crate::results::record::ConfigRecord::of(c);
    assert_eq!(r.fs_device_model.as_deref(), Some("hdd-7200"));
    assert_eq!(r.journal_device_model.as_deref(), Some("slow-journal"));
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        json.contains("\"journal_device_model\":\"slow-journal\""),
        "{json}"
    );
    // Without models the record has no such keys, as before.
    let plain = parse(&emulated("", "", ""), "x").unwrap();
    assert_eq!(plain.configs[0].fs_model, None);
    let json = serde_json::to_string(&crate::results::record::ConfigRecord::of(&plain.configs[0]))
        .unwrap();
    assert!(!json.contains("device_model"), "{json}");
    // Every built-in name works directly.
    for name in crate::emu::MODEL_NAMES {
        let s = parse(
            &emulated(&format!("device_model = \"{name}\""), "", ""),
            "x",
        )
        .unwrap();
        assert_eq!(s.configs[0].fs_model.as_ref().unwrap().model, *name);
        assert_eq!(s.configs[0].journal_model, None, "internal journal");
    }
}

#[test]
fn a_list_of_models_is_a_factor_with_distinct_labels() {
    let text = emulated(
        "device_model = \"hdd-7200\"",
        "placement = [\"second-disk\", \"ramdisk\"]\ndevice_model = [\"hdd-7200\", \"ram\"]",
        "",
    );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(
        labels_of(&s),
        [
            "second-disk,journal=hdd-7200",
            "second-disk,journal=ram",
            "ramdisk,journal=hdd-7200",
            "ramdisk,journal=ram"
        ]
    );
    assert_eq!(s.configs[1].journal_model.as_ref().unwrap().name, "ram");
    assert!(s
        .configs
        .iter()
        .all(|c| c.fs_model.as_ref().unwrap().name == "hdd-7200"));
    let text = emulated(
        "device_model = [\"hdd-7200\", \"ssd-sata\"]",
        "placement = [\"internal\", \"second-disk\"]",
        "",
    );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(
        labels_of(&s),
        [
            "internal,fs=hdd-7200",
            "second-disk,journal=hdd-7200,fs=hdd-7200",
            "internal,fs=ssd-sata",
            "second-disk,journal=ssd-sata,fs=ssd-sata"
        ]
    );
    // [[config]] tables: with and without a model, the unemulated one is named so.
    let text = emulated("", "placement = \"second-disk\"", "")
            + "\n[[config]]\n\n[[config]]\nfilesystem.device_model = \"hdd-7200\"\njournal.device_model = \"ram\"\n";
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(
        labels_of(&s),
        [
            "journal=unemulated,fs=unemulated",
            "journal=ram,fs=hdd-7200"
        ]
    );
}

#[test]
fn a_second_disk_journal_gets_the_file_systems_model_unless_told() {
    let text = emulated(
        "device_model = \"hdd-7200\"",
        "placement = [\"internal\", \"same-disk\", \"second-disk\", \"ramdisk\"]",
        "",
    );
    let s = parse(&text, "x.toml").unwrap();
    let journal: Vec<Option<&str>> = s
        .configs
        .iter()
        .map(|c| c.journal_model.as_ref().map(|m| m.name.as_str()))
        .collect();
    assert_eq!(journal, [None, None, Some("hdd-7200"), None]);
    assert_eq!(
        labels_of(&s),
        [
            "internal",
            "same-disk",
            "second-disk,journal=hdd-7200",
            "ramdisk,journal=unemulated"
        ]
    );
    // Naming the file system's own model for a journal on its disk is harmless.
    let s = parse(
            &emulated(
                "device_model = \"ssd-sata\"",
                "placement = [\"internal\", \"same-disk\", \"none\", \"second-disk\"]\ndevice_model = \"ssd-sata\"",
                "",
            ),
            "x",
        )
        .unwrap();
    let journal: Vec<Option<&str>> = s
        .configs
        .iter()
        .map(|c| c.journal_model.as_ref().map(|m| m.name.as_str()))
        .collect();
    assert_eq!(journal, [None, None, None, Some("ssd-sata")]);
    // A ramdisk journal with its own model and a fixed RAM-disk size is fine.
    let s = parse(
        &emulated(
            "",
            "placement = \"ramdisk\"\nramdisk_size = \"256M\"\ndevice_model = \"ram\"",
            "",
        ),
        "x",
    )
    .unwrap();
    assert_eq!(s.configs[0].journal_model.as_ref().unwrap().name, "ram");
    assert_eq!(s.configs[0].fs_model, None);
}

#[test]
fn device_model_errors_name_key_and_line() {
    let models = "\n[models.slow]\nmodel = \"hdd-7200\"\nwrite_cache = false\n";
    /// fs lines, journal lines, more text, key, message parts, line to blame.
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a [&'a str], &'a str);
    let cases: &[Case] = &[
        (
            "device_model = \"hdd-5400\"",
            "",
            models,
            "filesystem.device_model",
            &[
                "unknown device model `hdd-5400`",
                "ssd-sata",
                "nvram",
                "slow",
            ],
            "device_model = \"hdd-5400\"",
        ),
        (
            "",
            "placement = \"second-disk\"\ndevice_model = [\"ram\", \"floppy\"]",
            "",
            "journal.device_model",
            &["`floppy`", "hdd-7200", "(none)"],
            "device_model = [",
        ),
        (
            "",
            "",
            "\n[models.tape]\nmodel = \"tape-drive\"\n",
            "models.tape",
            &[
                "unknown device model `tape-drive`",
                "hdd-7200, raid6, ssd-sata",
            ],
            "[models.tape]",
        ),
        (
            "",
            "",
            "\n[models.tape]\nrpm = 5400.0\n",
            "models.tape",
            &["missing `model`", "hdd-7200"],
            "[models.tape]",
        ),
        (
            "",
            "",
            "\n[models.big]\nmodel = \"hdd-7200\"\nseed = 3\nbogus = 1\n",
            "models.big",
            &["unknown parameter `bogus`", "rpm"],
            "[models.big]",
        ),
        (
            "",
            "",
            "\n[models.big]\nmodel = \"hdd-7200\"\ncylinders = \"many\"\n",
            "models.big",
            &["cylinders"],
            "[models.big]",
        ),
        (
            "",
            "",
            "\n[models.quick]\nmodel = \"nvme\"\nread_mb_per_s = 0.0\n",
            "models.quick",
            &["read_mb_per_s must be a positive number"],
            "[models.quick]",
        ),
        (
            "",
            "",
            "\n[models.hdd-7200]\nmodel = \"hdd-7200\"\nwrite_cache = false\n",
            "models.hdd-7200",
            &["is a built-in model"],
            "[models.hdd-7200]",
        ),
        (
            "",
            "placement = \"zram\"\ndevice_model = \"ram\"",
            "",
            "journal.device_model",
            &["zram device is timed by itself", "placement = \"ramdisk\""],
            "device_model = \"ram\"",
        ),
        (
            "",
            "placement = \"device\"\ndevice = \"/dev/sdc1\"\ndevice_model = \"ssd-sata\"",
            "",
            "journal.device_model",
            &["real device", "timed by itself"],
            "device_model = \"ssd-sata\"",
        ),
        (
            "device_model = \"hdd-7200\"",
            "placement = \"internal\"\ndevice_model = \"ram\"",
            "",
            "journal.device_model",
            &[
                "an internal journal shares the file system's emulated disk (`hdd-7200`)",
                "only filesystem.device_model applies",
            ],
            "device_model = \"ram\"",
        ),
        (
            "",
            "placement = [\"second-disk\", \"same-disk\"]\ndevice_model = \"slow\"",
            models,
            "journal.device_model",
            &[
                "a same-disk journal",
                "none is set",
                "filesystem.device_model = \"slow\"",
            ],
            "device_model = \"slow\"",
        ),
        (
            "device_model = \"hdd-7200\"",
            "placement = \"none\"\ndevice_model = \"ram\"",
            "",
            "journal.device_model",
            &["without a journal", "[[config]]"],
            "device_model = \"ram\"",
        ),
        (
            "device = \"/dev/sdb1\"\ndevice_model = \"hdd-7200\"",
            "",
            "",
            "filesystem.device_model",
            &["real device /dev/sdb1", "timed by itself"],
            "device_model = \"hdd-7200\"",
        ),
    ];
    for (fs, journal, more, key, parts, blamed) in cases {
        let text = emulated(fs, journal, more);
        let e = err_of(&text);
        assert_eq!(e.key, *key, "{fs} {journal} {more}: {e}");
        for part in *parts {
            assert!(e.message.contains(part), "{part:?} not in: {e}");
        }
        assert_eq!(
            e.line,
            Some(line_of(&text, blamed)),
            "{fs} {journal} {more}: {e}"
        );
    }
    // In a [[config]] table, the key's own line.
    let text = emulated("", "", "")
            + "\n[[config]]\nlabel = \"a\"\n\n[[config]]\nlabel = \"b\"\njournal.device_model = \"nvram\"\n";
    let e = err_of(&text);
    assert_eq!(e.key, "journal.device_model");
    assert_eq!(e.line, Some(line_of(&text, "journal.device_model")));
}

#[test]
fn the_emulation_table_is_read_and_checked() {
    let s = parse(&emulated("", "", ""), "x").unwrap();
    assert_eq!(s.emulation, EmulationOptions::default());
    let text = emulated(
        "",
        "",
        "\n[emulation]\nwrite_log = true\nwatchdog = \"2m\"\npin_cpus = false\nimage_dir = \"/var/tmp/images\"\npoll = false\n",
    );
    let s = parse(&text, "x").unwrap();
    assert_eq!(
        s.emulation,
        EmulationOptions {
            write_log: true,
            watchdog: Duration::from_secs(120),
            pin_cpus: false,
            image_dir: "/var/tmp/images".into(),
            poll: false,
        }
    );
    let relative = emulated("", "", "\n[emulation]\nimage_dir = \"images\"\n");
    let e = parse(&relative, "x").unwrap_err().to_string();
    assert!(
        e.contains("emulation.image_dir") && e.contains("not an absolute path"),
        "{e}"
    );
    for (value, msg) in [
        ("\"soon\"", "not a duration"),
        ("\"500ms\"", "at least 1s"),
        ("\"0s\"", "at least 1s"),
    ] {
        let text = emulated(
            "",
            "",
            &format!("\n[emulation]\nwrite_log = true\nwatchdog = {value}\n"),
        );
        let e = err_of(&text);
        assert_eq!(e.key, "emulation.watchdog", "{value}: {e}");
        assert!(e.message.contains(msg), "{value}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "watchdog =")), "{e}");
    }
    let text = emulated(
        "",
        "",
        "\n[emulation]\npin_cpus = true\nlog_writes = true\n",
    );
    let e = err_of(&text);
    assert!(e.message.contains("log_writes"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "log_writes")));
    let e = err_of(&emulated("", "", "\n[emulation]\nwrite_log = \"yes\"\n"));
    assert!(e.line.is_some(), "{e}");
}

#[test]
fn the_resolved_spec_keeps_models_and_emulation() {
    let text = emulated(
            "device_model = [\"hdd-7200\", \"fast-ssd\"]",
            "placement = [\"internal\", \"second-disk\", \"ramdisk\"]\nsize = \"16M\"",
            "\n[[config]]\n\n[[config]]\nlabel = \"ram-journal\"\nfilesystem.device_model = \"hdd-7200\"\njournal.placement = \"ramdisk\"\njournal.device_model = \"slow-ram\"\n",
        ) + "\n[models.fast-ssd]\nmodel = \"ssd-sata\"\nflush_latency_us = 50.0\nread_mb_per_s = 550\n\n[models.slow-ram]\nmodel = \"nvram\"\nwrite_latency_us = 10.0\n\n[models.unused]\nmodel = \"ram\"\n\n[emulation]\nwrite_log = true\nwatchdog = \"90s\"\n";
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(s.configs.len(), 7, "{:?}", labels_of(&s));
    assert!(s.resolved.contains("[models.fast-ssd]"), "{}", s.resolved);
    assert!(s.resolved.contains("[models.slow-ram]"), "{}", s.resolved);
    assert!(
        !s.resolved.contains("unused"),
        "only the models in use: {}",
        s.resolved
    );
    assert!(
        !s.resolved.contains("[models.hdd-7200]"),
        "built-ins are used by name: {}",
        s.resolved
    );
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.configs, s.configs);
    assert_eq!(again.emulation, s.emulation);
    assert_eq!(again.emulation.watchdog, Duration::from_secs(90));
    assert!(again.emulation.write_log && again.emulation.pin_cpus);
    assert_eq!(again.resolved, s.resolved);
    let ram = s.configs.iter().find(|c| c.label == "ram-journal").unwrap();
    assert_eq!(ram.journal_model.as_ref().unwrap().model, "nvram");
}

#[test]
fn the_documented_emulation_example_parses_as_described() {
    let doc = include_str!("../../../../docs/experiment.md");
    let section = doc
        .split("### Example: where the journal of a 7200 rpm disk goes")
        .nth(1)
        .expect("the example section is in docs/experiment.md");
    let example = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let s = parse(example, "experiment.md").unwrap();
    assert_eq!(
        labels_of(&s),
        [
            "internal",
            "second-disk,journal=hdd-7200",
            "ramdisk,journal=unemulated",
            "second-disk-ram",
            "ramdisk-emulated"
        ]
    );
    assert!(s
        .configs
        .iter()
        .all(|c| c.fs_model == Some(DeviceModelSpec::builtin("hdd-7200"))));
    assert_eq!(s.emulation.watchdog, Duration::from_secs(60));
}
