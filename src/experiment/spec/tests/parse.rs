//! Parsing: defaults, the matrix and its labels, round trips through the resolved spec, main_phase.

use super::*;

#[test]
fn the_issue_example_parses_with_defaults() {
    let s = parse(BASE, "x.toml").unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.repetitions, 2);
    assert_eq!(s.order, Order::Interleaved);
    assert_eq!(s.seed, 1);
    assert_eq!(s.suspect_below, Duration::from_secs(60));
    let labels: Vec<&str> = s.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["same-disk", "second-disk", "ramdisk"]);
    let c = &s.configs[0];
    assert_eq!(c.fs_size, 8 << 30);
    assert_eq!(c.journal_size, 16 << 20);
    assert_eq!(c.mode, DataMode::Ordered);
    assert_eq!(c.ramdisk_dir, PathBuf::from("/dev/shm"));
    assert_eq!(s.workloads[0].engine.params()["levels"], 10);
}

#[test]
fn lists_expand_into_the_matrix_with_labels_of_what_varies() {
    let text = BASE
        .replace(
            r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
            r#"placement = ["second-disk", "ramdisk"]"#,
        )
        .replace(r#"size = "16M""#, r#"size = ["16M", "64M", "256M", "1G"]"#);
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(s.configs.len(), 8);
    let labels: Vec<&str> = s.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "second-disk,16M",
            "second-disk,64M",
            "second-disk,256M",
            "second-disk,1G",
            "ramdisk,16M",
            "ramdisk,64M",
            "ramdisk,256M",
            "ramdisk,1G"
        ]
    );
    let text = BASE.replace(r#"mode = "ordered""#, r#"mode = ["ordered", "writeback"]"#);
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(s.configs.len(), 6);
    assert_eq!(s.configs[1].label, "same-disk,writeback");
    let text = BASE.replace(
        r#"size = "8G""#,
        "size = \"8G\"\nmount_options = [[], [\"noatime\"]]",
    );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(s.configs.len(), 6);
    // File-system factors vary slowest: all placements without, then with noatime.
    assert_eq!(s.configs[3].mount_options, ["noatime"]);
    assert_eq!(s.configs[3].label, "same-disk,mount[noatime]");
    assert_eq!(s.configs[0].label, "same-disk,mount[]");
}

#[test]
fn the_resolved_spec_parses_back_to_the_same_experiment() {
    let text = BASE.replace(r#"size = "16M""#, r#"size = ["16M", "64M"]"#);
    let s = parse(&text, "x.toml").unwrap();
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.resolved, s.resolved);
    assert_eq!(again.configs, s.configs);
}

#[test]
fn adaptive_repetitions_and_the_noise_band_parse_and_round_trip() {
    let s = parse(BASE, "x.toml").unwrap();
    assert_eq!((s.adaptive, s.noise_band), (None, DEFAULT_NOISE_BAND));
    let text = BASE.replace(
        "repetitions = 2",
        "repetitions = { min = 3, max = 10, target_cv = 0.03 }\nnoise_band = 0.05",
    );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(s.repetitions, 3);
    assert_eq!(
        s.adaptive,
        Some(Adaptive {
            min: 3,
            max: 10,
            target_cv: 0.03
        })
    );
    assert_eq!(s.noise_band, 0.05);
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.adaptive, s.adaptive);
    assert_eq!(again.noise_band, 0.05);
    assert_eq!(again.resolved, s.resolved);
    let fixed = parse(&parse(BASE, "x").unwrap().resolved, "r").unwrap();
    assert_eq!((fixed.repetitions, fixed.adaptive), (2, None));
    for (value, msg) in [
        ("{ min = 3, max = 10 }", "missing `target_cv`"),
        ("{ min = 1, max = 10, target_cv = 0.03 }", "at least 2"),
        ("{ min = 5, max = 4, target_cv = 0.03 }", "max (4)"),
        ("{ min = 3, max = 4, target_cv = 1.5 }", "between 0 and 1"),
        ("{ min = 3, max = 4, target_cv = 0.0 }", "between 0 and 1"),
        (
            "{ min = 3, max = 4, target_cv = 0.1, cv = 1 }",
            "unknown key `cv`",
        ),
        ("\"many\"", "whole number"),
    ] {
        let text = BASE.replace("repetitions = 2", &format!("repetitions = {value}"));
        let e = err_of(&text);
        assert_eq!(e.key, "repetitions", "{value}: {e}");
        assert!(e.message.contains(msg), "{value}: {e}");
        assert_eq!(e.line, Some(2), "{e}");
    }
    let e = err_of(&BASE.replace("repetitions = 2", "repetitions = 2\nnoise_band = 2.0"));
    assert_eq!((e.key.as_str(), e.line), ("noise_band", Some(3)), "{e}");
}

#[test]
fn monitor_interval_defaults_parses_turns_off_and_round_trips() {
    let s = parse(BASE, "x.toml").unwrap();
    assert_eq!(s.monitor_interval, Some(Duration::from_secs(1)));
    assert!(
        s.resolved.contains("monitor_interval = \"1s\""),
        "{}",
        s.resolved
    );
    for (value, want) in [
        ("\"250ms\"", Some(Duration::from_millis(250))),
        ("\"2s\"", Some(Duration::from_secs(2))),
        ("\"0s\"", None),
        ("\"off\"", None),
    ] {
        let text = BASE.replace(
            "repetitions = 2",
            &format!("repetitions = 2\nmonitor_interval = {value}"),
        );
        let s = parse(&text, "x.toml").unwrap();
        assert_eq!(s.monitor_interval, want, "{value}");
        let again = parse(&s.resolved, "resolved.toml").unwrap();
        assert_eq!(again.monitor_interval, want, "{value} after resolving");
        assert_eq!(again.resolved, s.resolved);
    }
    for (value, why) in [("\"often\"", "not a duration"), ("\"1ms\"", "below 10ms")] {
        let text = BASE.replace(
            "repetitions = 2",
            &format!("repetitions = 2\nmonitor_interval = {value}"),
        );
        let e = err_of(&text);
        assert_eq!(e.line, Some(line_of(&text, "monitor_interval")), "{e}");
        let shown = e.to_string();
        assert!(
            shown.contains("monitor_interval") && shown.contains(why),
            "{shown}"
        );
    }
}

#[test]
fn unknown_keys_are_named_with_their_line() {
    let text = BASE.replace(
        "mode = \"ordered\"",
        "mode = \"ordered\"\njournal_sise = \"1G\"",
    );
    let e = err_of(&text);
    assert_eq!(e.line, Some(line_of(&text, "journal_sise")));
    assert!(e.to_string().contains("journal_sise"), "{e}");
    let text = BASE.replace("levels = 10", "levels = 10\ndepth = 3");
    let e = err_of(&text);
    assert!(e.to_string().contains("depth"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "depth")));
}

#[test]
fn bad_values_name_key_and_line() {
    let cases = [
        (
            r#"size = "16M""#,
            r#"size = "16Q""#,
            "journal.size",
            "unknown unit",
        ),
        (
            r#"size = "16M""#,
            r#"size = "1M""#,
            "journal.size",
            "too small",
        ),
        (
            r#"size = "8G""#,
            r#"size = "lots""#,
            "filesystem.size",
            "not a size",
        ),
        (
            r#"mode = "ordered""#,
            r#"mode = "fast""#,
            "journal.mode",
            "unknown journal mode",
        ),
        (
            r#"type = "ext4""#,
            r#"type = "ntfs""#,
            "filesystem.type",
            "unknown file system",
        ),
        (
            r#"type = "ext4""#,
            r#"type = "btrfs""#,
            "filesystem.type",
            "not supported",
        ),
        (
            "repetitions = 2",
            "repetitions = 0",
            "repetitions",
            "at least 1",
        ),
        (
            r#"name = "t""#,
            r#"name = "a/b""#,
            "name",
            "must not contain",
        ),
        (
            r#"work_dir = "/var/tmp/jbench""#,
            r#"work_dir = "tmp""#,
            "work_dir",
            "absolute",
        ),
        (
            "repetitions = 2",
            "repetitions = 2\norder = \"random\"",
            "order",
            "unknown order",
        ),
        (
            "repetitions = 2",
            "repetitions = 2\nsuspect_below = \"soon\"",
            "suspect_below",
            "not a duration",
        ),
        (
            "repetitions = 2",
            "repetitions = 2\nbaseline = \"nvram\"",
            "baseline",
            "no configuration",
        ),
        (
            r#"kind = "fdtree""#,
            r#"kind = "bonnie""#,
            "workload[0].kind",
            "unknown workload kind",
        ),
    ];
    for (from, to, key, msg) in cases {
        let text = BASE.replace(from, to);
        assert_ne!(text, BASE, "{from}");
        let e = err_of(&text);
        assert_eq!(e.key, key, "{to}: {e}");
        assert!(e.message.contains(msg), "{to}: {e}");
        let first_line_of_to = to.lines().last().unwrap();
        assert_eq!(e.line, Some(line_of(&text, first_line_of_to)), "{to}: {e}");
    }
}

#[test]
fn main_phase_names_a_phase_of_the_engine_and_round_trips() {
    let with = |v: &str| BASE.replace("levels = 10", &format!("levels = 10\n{v}"));
    let s = parse(&with("main_phase = \"dir_remove\""), "x").unwrap();
    assert_eq!(s.workloads[0].main_phase.as_deref(), Some("dir_remove"));
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.workloads[0].main_phase.as_deref(), Some("dir_remove"));
    assert_eq!(parse(BASE, "x").unwrap().workloads[0].main_phase, None);
    let text = with("main_phase = \"file_creat\"");
    let e = err_of(&text);
    assert_eq!(e.key, "workload[0].main_phase");
    assert_eq!(e.line, Some(line_of(&text, "main_phase")));
    assert!(
        e.message.contains("unknown phase `file_creat`") && e.message.contains("file_create"),
        "{e}"
    );
    // The `+syncfs` variants exist only with durable = true.
    let e = err_of(&with("main_phase = \"file_create+syncfs\""));
    assert!(e.message.contains("durable = true"), "{e}");
    let s = parse(
        &with("durable = true\nmain_phase = \"file_create+syncfs\""),
        "x",
    )
    .unwrap();
    assert_eq!(
        s.workloads[0].main_phase.as_deref(),
        Some("file_create+syncfs")
    );
    let e = err_of(&with("main_phase = 3"));
    assert!(e.message.contains("must be a string"), "{e}");
}

#[test]
fn a_config_tables_env_and_negative_control_reach_its_configurations_and_the_resolved_spec() {
    let text = base_with(
        "[[workload]]",
        "[[config]]\nlabel = \"safe\"\njournal.placement = \"same-disk\"\nenv = { SYNC = \"full\" }\n\n[[config]]\nlabel = \"unsafe\"\njournal.placement = \"same-disk\"\nenv = { SYNC = \"off\" }\nnegative_control = true\n\n[[workload]]",
    );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(labels_of(&s), ["safe", "unsafe"]);
    assert_eq!(s.configs[0].env["SYNC"], "full");
    assert!(!s.configs[0].negative_control);
    assert_eq!(s.configs[1].env["SYNC"], "off");
    assert!(s.configs[1].negative_control);
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.configs, s.configs);
    // Without a label the setting could not tell configurations apart; jbench's own
    // variables are not the experiment's to set.
    let unlabelled = base_with(
        "[[workload]]",
        "[[config]]\nenv = { SYNC = \"off\" }\n\n[[workload]]",
    );
    assert_eq!(err_of(&unlabelled).key, "config.label");
    let reserved = base_with(
        "[[workload]]",
        "[[config]]\nlabel = \"x\"\nenv = { JBENCH_DURABLE = \"/tmp/x\" }\n\n[[workload]]",
    );
    assert_eq!(err_of(&reserved).key, "config.env");
}

#[test]
fn a_torn_page_control_is_a_negative_control_and_round_trips_through_the_resolved_spec() {
    let text = base_with(
        "[[workload]]",
        "[[config]]\nlabel = \"fpw-on\"\n\n[[config]]\nlabel = \"fpw-off\"\ntorn_page_control = true\n\n[[workload]]",
    );
    let s = parse(&text, "x.toml").unwrap();
    let of = |l: &str| {
        s.configs
            .iter()
            .find(|c| c.label.starts_with(l))
            .unwrap_or_else(|| panic!("{l} in {:?}", labels_of(&s)))
    };
    assert!(!of("fpw-on").torn_page_control && !of("fpw-on").negative_control);
    assert!(
        of("fpw-off").torn_page_control && of("fpw-off").negative_control,
        "{:?}",
        s.configs
    );
    assert!(
        s.resolved.contains("torn_page_control = true"),
        "{}",
        s.resolved
    );
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.configs, s.configs);
    let unlabelled = base_with(
        "[[workload]]",
        "[[config]]\ntorn_page_control = true\n\n[[workload]]",
    );
    assert_eq!(err_of(&unlabelled).key, "config.label");
}

#[test]
fn a_second_file_system_is_a_factor_with_the_first_ones_disk_unless_named() {
    let text = base_with(
        "[[workload]]",
        "[models.slow]\nmodel = \"hdd-7200\"\n\n[[config]]\nlabel = \"one\"\njournal.placement = \"internal\"\nfilesystem.device_model = \"hdd-7200\"\n\n[[config]]\nlabel = \"two\"\njournal.placement = \"internal\"\nfilesystem.device_model = \"hdd-7200\"\nfilesystem.second_size = \"256M\"\n\n[[config]]\nlabel = \"two-slow\"\njournal.placement = \"internal\"\nfilesystem.device_model = \"hdd-7200\"\nfilesystem.second_size = \"256M\"\nfilesystem.second_device_model = \"slow\"\n\n[[workload]]",
    );
    let s = parse(&text, "x.toml").unwrap();
    assert_eq!(labels_of(&s), ["one", "two", "two-slow"]);
    assert_eq!(s.configs[0].second_fs_size, None);
    assert_eq!(s.configs[0].second_fs_model, None);
    assert_eq!(s.configs[1].second_fs_size, Some(256 << 20));
    // Two spindles of the same kind unless told otherwise.
    assert_eq!(s.configs[1].second_fs_model, s.configs[1].fs_model);
    assert_eq!(s.configs[2].second_fs_model.as_ref().unwrap().name, "slow");
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(again.configs, s.configs);
}

#[test]
fn a_second_file_system_is_refused_where_it_cannot_be_made_or_recorded() {
    let with = |extra: &str| {
        base_with(
            "[[workload]]",
            &format!("[[config]]\nlabel = \"x\"\njournal.placement = \"internal\"\n{extra}\n\n[[workload]]"),
        )
    };
    // A model for a file system that is not there.
    let e = err_of(&with("filesystem.second_device_model = \"hdd-7200\""));
    assert_eq!(e.key, "filesystem.second_device_model", "{e}");
    // Beside a real device.
    let e = err_of(&with(
        "filesystem.device = \"/dev/vdz\"\nfilesystem.second_size = \"256M\"",
    ));
    assert_eq!(e.key, "filesystem.second_size", "{e}");
    // One disk emulated, the other not: the write log would miss one.
    let e = err_of(&with(
        "filesystem.second_size = \"256M\"\nfilesystem.second_device_model = \"hdd-7200\"",
    ));
    assert_eq!(e.key, "filesystem.second_device_model", "{e}");
    assert!(e.message.contains("both device models or neither"), "{e}");
    // No room for its journal of journal.size.
    let e = err_of(&with(
        "journal.size = \"200M\"\nfilesystem.second_size = \"256M\"",
    ));
    assert_eq!(e.key, "filesystem.second_size", "{e}");
    assert!(e.message.contains("at least"), "{e}");
}

#[test]
fn a_neighbour_rate_list_makes_one_workload_per_rate_and_a_bad_rate_is_refused() {
    let s = parse(
        &base_with("levels = 10\n", "levels = 10\nneighbour_rate = \"8M\"\n"),
        "x.toml",
    )
    .unwrap();
    assert_eq!(s.workloads.len(), 1);
    assert_eq!(s.workloads[0].name, "small-deep");
    assert_eq!(s.workloads[0].neighbour_rate, Some(8 << 20));
    let s = parse(
        &base_with(
            "levels = 10\n",
            "levels = 10\nneighbour_rate = [\"0\", \"2M\"]\n",
        ),
        "x.toml",
    )
    .unwrap();
    let got: Vec<(&str, Option<u64>)> = s
        .workloads
        .iter()
        .map(|w| (w.name.as_str(), w.neighbour_rate))
        .collect();
    assert_eq!(
        got,
        [("small-deep@nb0", None), ("small-deep@nb2M", Some(2 << 20))]
    );
    for bad in ["\"fast\"", "\"10K\"", "[]", "true"] {
        let e = err_of(&base_with(
            "levels = 10\n",
            &format!("levels = 10\nneighbour_rate = {bad}\n"),
        ));
        assert!(e.to_string().contains("neighbour_rate"), "{bad}: {e}");
    }
    let s = parse(
        &base_with("name = \"t\"\n", "name = \"t\"\ntail_band = 0.2\n"),
        "x.toml",
    )
    .unwrap();
    assert_eq!(s.tail_band, 0.2);
    assert!(err_of(&base_with(
        "name = \"t\"\n",
        "name = \"t\"\ntail_band = 1.5\n"
    ))
    .to_string()
    .contains("tail_band"));
}
