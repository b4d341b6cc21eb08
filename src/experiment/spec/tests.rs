//! Tests of the experiment file: parsing, errors with key and line, the matrix, labels,
//! the resolved spec, and hostile inputs (proptest).

use super::*;

const BASE: &str = r#"name = "t"
repetitions = 2
work_dir = "/var/tmp/jbench"

[filesystem]
type = "ext4"
size = "8G"

[journal]
placement = ["same-disk", "second-disk", "ramdisk"]
size = "16M"
mode = "ordered"

[[workload]]
kind = "fdtree"
name = "small-deep"
dirs = 3
files = 4
blocks = 1
levels = 10
"#;

fn err_of(text: &str) -> SpecError {
    parse(text, "x.toml").expect_err("must be rejected")
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

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
fn placement_errors() {
    let e = err_of(&BASE.replace(r#""ramdisk"]"#, r#""floppy"]"#));
    assert_eq!(e.key, "journal.placement");
    assert!(
        e.message.contains("floppy") && e.message.contains("same-disk"),
        "{e}"
    );
    let e = err_of(&BASE.replace(
        r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
        r#"placement = "device""#,
    ));
    assert!(e.message.contains("needs journal.device"), "{e}");
    let e = err_of(&BASE.replace(
        r#"mode = "ordered""#,
        "mode = \"ordered\"\ndevice = \"/dev/sdc1\"",
    ));
    assert_eq!(e.key, "journal.device");
    assert!(
        e.message.contains("only goes with placement \"device\""),
        "{e}"
    );
    let e = err_of(&BASE.replace(
        r#"mode = "ordered""#,
        "mode = \"ordered\"\ndevice = \"sdc1\"",
    ));
    assert!(e.message.contains("not a device path"), "{e}");
    let e = err_of(&BASE.replace(
        r#"type = "ext4""#,
        "type = \"ext4\"\ndevice = \"/dev/sdb1\"",
    ));
    assert_eq!(e.key, "filesystem.device");
    assert!(e.message.contains("same-disk"), "{e}");
    let e = err_of(&BASE.replace(
        r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
        "placement = []",
    ));
    assert!(e.message.contains("empty"), "{e}");
}

#[test]
fn impossible_combinations_are_refused() {
    let internal = BASE.replace(
        r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
        r#"placement = "internal""#,
    );
    let e = err_of(&internal.replace(r#"size = "16M""#, r#"size = "5G""#));
    assert!(e.message.contains("bigger than half"), "{e}");
    let e = err_of(&BASE.replace(r#"size = "16M""#, r#"size = "64G""#));
    assert!(e.message.contains("larger than mke2fs allows"), "{e}");
    let with_mount = |opts: &str, mode: &str| {
        BASE.replace(
            r#"size = "8G""#,
            &format!("size = \"8G\"\nmount_options = {opts}"),
        )
        .replace(r#"mode = "ordered""#, &format!("mode = \"{mode}\""))
    };
    for (opts, mode, msg) in [
        (r#"["data=journal"]"#, "ordered", "journal.mode"),
        (
            r#"["journal_async_commit"]"#,
            "ordered",
            "journal_async_commit",
        ),
        (r#"["delalloc"]"#, "journal", "delalloc"),
        (r#"["dax"]"#, "journal", "dax"),
        (r#"["noload"]"#, "ordered", "noload"),
        (r#"["journal_path=/dev/x"]"#, "ordered", "journal_path"),
    ] {
        let text = with_mount(opts, mode);
        let e = err_of(&text);
        assert_eq!(e.key, "filesystem.mount_options", "{opts}");
        assert!(e.message.contains(msg), "{opts}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "mount_options")));
    }
    let e = err_of(&BASE.replace(
        r#"size = "8G""#,
        "size = \"8G\"\nmkfs_options = [\"-J\", \"size=64\"]",
    ));
    assert_eq!(e.key, "filesystem.mkfs_options");
    assert!(with_mount(r#"["journal_async_commit"]"#, "writeback")
        .parse::<toml::Table>()
        .is_ok());
    assert!(parse(&with_mount(r#"["journal_async_commit"]"#, "writeback"), "x").is_ok());
}

#[test]
fn config_tables_make_a_union_with_their_own_labels() {
    let text = BASE
        .replace(
            r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
            r#"placement = "internal""#,
        )
        .replace(r#"size = "16M""#, r#"size = "64M""#)
        + r#"
[[config]]
label = "no-journal"
journal.placement = "none"

[[config]]
journal.mode = ["ordered", "journal"]

[[config]]
label = "xfs"
filesystem.type = "xfs"
"#;
    let s = parse(&text, "x.toml").unwrap();
    let labels: Vec<&str> = s.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "no-journal",
            "internal,ordered,ext4",
            "internal,journal,ext4",
            "xfs"
        ]
    );
    assert_eq!(s.configs[0].mode_label(), "none");
    assert_eq!(s.configs[0].journal_bytes(), 0);
    assert_eq!(s.configs[2].mode, DataMode::Journal);
    assert_eq!(s.configs[3].fs_type, FsType::Xfs);
    assert_eq!(s.configs[3].mode_label(), "metadata");
    assert_eq!(
        s.configs[3].journal_size,
        64 << 20,
        "the base section fills what a table leaves out"
    );
    let again = parse(&s.resolved, "resolved.toml").unwrap();
    assert_eq!(
        again.configs, s.configs,
        "the resolved spec lists the same configurations"
    );
    let e = err_of(&(text.clone() + "\n[[config]]\nlabel = \"xfs\"\nfilesystem.type = \"xfs\"\n"));
    assert!(e.message.contains("both be labelled"), "{e}");
    let e = err_of(&(text + "\n[[config]]\nflavour = 1\n"));
    assert!(e.message.contains("flavour"), "{e}");
}

#[test]
fn type_and_journal_rules_are_checked_at_spec_time() {
    let one = |fs: &str, journal: &str| {
        format!(
                "[filesystem]\nsize = \"1G\"\n{fs}\n[journal]\n{journal}\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n"
            )
    };
    let cases = [
        (
            "type = \"xfs\"",
            "size = \"16M\"",
            "journal.size",
            "XFS log must be 64M to 2G",
        ),
        (
            "type = \"xfs\"",
            "size = \"64M\"\nmode = \"journal\"",
            "journal.mode",
            "no data= modes",
        ),
        (
            "type = \"xfs\"",
            "size = \"64M\"\nplacement = \"none\"",
            "journal.placement",
            "ext4 only",
        ),
        (
            "type = \"xfs\"",
            "size = \"64M\"\ncommit = \"10s\"",
            "journal.commit",
            "XFS has none",
        ),
        (
            "type = \"ext3\"",
            "placement = \"none\"",
            "journal.placement",
            "ext2",
        ),
        (
            "type = \"ext3\"",
            "fast_commit = true",
            "journal.fast_commit",
            "ext4 feature",
        ),
        (
            "",
            "fast_commit = true\nmode = \"journal\"",
            "journal.fast_commit",
            "turns fast_commit off",
        ),
        (
            "",
            "placement = \"none\"\nmode = \"writeback\"",
            "journal.placement",
            "do not apply",
        ),
        (
            "",
            "ramdisk_size = \"128M\"",
            "journal.ramdisk_size",
            "ramdisk",
        ),
        (
            "",
            "placement = \"ramdisk\"\nsize = \"64M\"\nramdisk_size = \"32M\"",
            "journal.ramdisk_size",
            "cannot hold",
        ),
        (
            "",
            "commit = \"1.5s\"",
            "journal.commit",
            "whole number of seconds",
        ),
        (
            "",
            "placement = \"ramdisk\"\nsize = \"4M\"",
            "journal.size",
            "too short for jbd2",
        ),
    ];
    for (fs, journal, key, msg) in cases {
        let e = err_of(&one(fs, journal));
        assert_eq!(e.key, key, "{fs} {journal}: {e}");
        assert!(e.message.contains(msg), "{fs} {journal}: {e}");
        assert!(e.line.is_some(), "{e}");
    }
    let e = err_of(
        &one("type = \"xfs\"\nsize = \"200M\"", "size = \"64M\"").replace("size = \"1G\"\n", ""),
    );
    assert!(e.message.contains("at least 300M"), "{e}");
    let e = err_of(&format!("memory_limit = \"1M\"\n{}", one("", "")));
    assert_eq!(e.key, "memory_limit");
    let ok = parse(
        &one(
            "type = \"xfs\"",
            "size = \"64M\"\nplacement = [\"internal\", \"zram\"]",
        ),
        "x",
    )
    .unwrap();
    assert_eq!(ok.configs.len(), 2);
    let ok = parse(
        &format!(
            "memory_limit = [\"512M\", \"2G\"]\n{}",
            one("", "fast_commit = [false, true]\ncommit = \"30s\"")
        ),
        "x",
    )
    .unwrap();
    let labels: Vec<&str> = ok.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "no-fast_commit,mem512M",
            "fast_commit,mem512M",
            "no-fast_commit,mem2G",
            "fast_commit,mem2G"
        ]
    );
    assert_eq!(ok.configs[0].commit_seconds, Some(30));
    assert_eq!(ok.configs[3].memory_limit, Some(2 << 30));
}

#[test]
fn a_file_system_too_small_for_the_workload_is_refused() {
    // Study 1's medium-deep tree holds 16,376,000 KiB of data.
    let text = BASE
        .replace("blocks = 1", "blocks = 1000")
        .replace("dirs = 3", "dirs = 2")
        .replace("files = 4", "files = 2");
    let e = err_of(&text);
    assert_eq!(e.key, "filesystem.size");
    assert!(
        e.message.contains("too small for workload `small-deep`"),
        "{e}"
    );
    assert_eq!(e.line, Some(line_of(&text, r#"size = "8G""#)));
    assert!(parse(&text.replace(r#"size = "8G""#, r#"size = "20G""#), "x").is_ok());
    // Inodes run out before space: 88,573 directories + 354,292 files in 1G.
    let e = err_of(&BASE.replace(r#"size = "8G""#, r#"size = "1G""#));
    assert!(e.message.contains("inodes"), "{e}");
}

#[test]
fn workloads_need_a_kind_a_unique_name_and_a_countable_tree() {
    let text = format!("{BASE}\n[[workload]]\nkind = \"fdtree\"\nname = \"small-deep\"\n");
    let e = err_of(&text);
    assert!(e.message.contains("two workloads are named"), "{e}");
    let e = err_of(&BASE.replace("kind = \"fdtree\"\n", ""));
    assert_eq!(e.key, "workload[0].kind");
    let e = err_of(&BASE.replace("levels = 10", "levels = 4000000"));
    assert!(e.message.contains("too large"), "{e}");
    let no_workload = BASE.split("[[workload]]").next().unwrap();
    let e = err_of(no_workload);
    assert!(e.message.contains("no [[workload]]"), "{e}");
    let unnamed = BASE.replace("name = \"small-deep\"\n", "");
    let s = parse(&unnamed, "x").unwrap();
    assert_eq!(s.workloads[0].name, "fdtree-d3-f4-s1-l10");
}

#[test]
fn a_stray_control_character_gets_a_message() {
    // The TOML reader gives an empty message for this one.
    let e = err_of("\r");
    assert!(e.message.contains("invalid TOML here"), "{e:?}");
    assert_eq!(e.line, Some(1));
}

#[test]
fn toml_syntax_errors_carry_the_line() {
    let text = BASE.replace("levels = 10", "levels = = 10");
    let e = err_of(&text);
    assert_eq!(e.line, Some(line_of(&text, "levels = = 10")));
    let e = err_of(&BASE.replace("levels = 10", "levels = \"ten\""));
    assert!(e.line.is_some(), "{e}");
}

/// A small experiment with the given `[filesystem]` and `[journal]` lines and more
/// text (tables) after them.
fn emulated(fs: &str, journal: &str, more: &str) -> String {
    format!(
            "[filesystem]\nsize = \"1G\"\n{fs}\n\n[journal]\n{journal}\n\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n{more}"
        )
}

fn labels_of(s: &Spec) -> Vec<&str> {
    s.configs.iter().map(|c| c.label.as_str()).collect()
}

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
    let r = c.record();
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
    let json = serde_json::to_string(&plain.configs[0].record()).unwrap();
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
            &["unknown device model `tape-drive`", "hdd-7200, ssd-sata"],
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
        "\n[emulation]\nwrite_log = true\nwatchdog = \"2m\"\npin_cpus = false\n",
    );
    let s = parse(&text, "x").unwrap();
    assert_eq!(
        s.emulation,
        EmulationOptions {
            write_log: true,
            watchdog: Duration::from_secs(120),
            pin_cpus: false
        }
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
    let doc = include_str!("../../../docs/experiment.md");
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
/// Replaces `from` in BASE by `to`, checking it was there.
fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    BASE.replace(from, to)
}

#[test]
fn out_of_range_values_are_refused_with_key_line_and_range() {
    let j = r#"mode = "ordered""#;
    let top = "repetitions = 2";
    // (replace, with, key, line to blame, message parts)
    let cases: &[(&str, &str, &str, &str, &[&str])] = &[
        // Was planned as commit=0: the kernel's commit= is seconds in a u32.
        (
            j,
            "mode = \"ordered\"\ncommit = \"4294967296s\"",
            "journal.commit",
            "commit =",
            &["allowed 1s to 2147483s"],
        ),
        (
            j,
            "mode = \"ordered\"\ncommit = \"2147484s\"",
            "journal.commit",
            "commit =",
            &["out of range", "allowed 1s to 2147483s"],
        ),
        (
            j,
            "mode = \"ordered\"\ncommit = \"99999999999999999999s\"",
            "journal.commit",
            "commit =",
            &["too long", "allowed 1s to 2147483s"],
        ),
        (
            j,
            "mode = \"ordered\"\ncommit = \"1.5s\"",
            "journal.commit",
            "commit =",
            &["whole number of seconds"],
        ),
        (
            top,
            "repetitions = 2\nsuspect_below = \"25h\"",
            "suspect_below",
            "suspect_below",
            &["allowed 0s to 86400s"],
        ),
        (
            top,
            "repetitions = 2\nsuspect_below = \"99999999999999999999\"",
            "suspect_below",
            "suspect_below",
            &["too long"],
        ),
        (
            top,
            "repetitions = 2\nmonitor_interval = \"2h\"",
            "monitor_interval",
            "monitor_interval",
            &["allowed 10ms to 3600s"],
        ),
        (
            "levels = 10",
            "levels = 10\n[emulation]\nwatchdog = \"99999999999999999999\"",
            "emulation.watchdog",
            "watchdog",
            &["too long"],
        ),
        (
            "levels = 10",
            "levels = 10\n[emulation]\nwatchdog = \"2d\"",
            "emulation.watchdog",
            "watchdog",
            &["unknown unit"],
        ),
        (
            "levels = 10",
            "levels = 10\n[emulation]\nwatchdog = \"25h\"",
            "emulation.watchdog",
            "watchdog",
            &["allowed 1s to 86400s"],
        ),
        (
            top,
            "repetitions = 1001",
            "repetitions",
            "repetitions",
            &["allowed 1 to 1000"],
        ),
        (
            top,
            "repetitions = 4294967296",
            "repetitions",
            "repetitions",
            &["allowed 1 to 1000"],
        ),
        (
            top,
            "repetitions = -1",
            "repetitions",
            "repetitions",
            &["allowed 1 to 1000"],
        ),
        (
            top,
            "repetitions = { min = 3, max = 5000, target_cv = 0.03 }",
            "repetitions",
            "repetitions",
            &["max 5000 is out of range"],
        ),
        (
            top,
            "repetitions = { min = 3, max = 5, target_cv = nan }",
            "repetitions",
            "repetitions",
            &["target_cv must be between 0 and 1"],
        ),
        (
            top,
            "repetitions = 2\nnoise_band = inf",
            "noise_band",
            "noise_band",
            &["from 0 to below 1"],
        ),
        (
            top,
            "repetitions = 2\nnoise_band = nan",
            "noise_band",
            "noise_band",
            &["from 0 to below 1"],
        ),
        (
            top,
            "repetitions = 2\nmemory_limit = \"32T\"",
            "memory_limit",
            "memory_limit",
            &["allowed 32M to 16T"],
        ),
        (
            top,
            "repetitions = 2\nmemory_limit = -1",
            "memory_limit",
            "memory_limit",
            &["negative"],
        ),
        (
            r#"size = "8G""#,
            r#"size = "17T""#,
            "filesystem.size",
            "size = \"17T\"",
            &["allowed 32M to 16T"],
        ),
        (
            r#"size = "8G""#,
            "size = -5",
            "filesystem.size",
            "size = -5",
            &["negative"],
        ),
        (
            r#"size = "8G""#,
            r#"size = "18446744073709551616""#,
            "filesystem.size",
            "size = \"1844",
            &["too large"],
        ),
        (
            r#"size = "16M""#,
            "size = 9223372036854775807",
            "journal.size",
            "size = 9223",
            &["larger than mke2fs allows", "allowed 4M to"],
        ),
        (
            r#"placement = ["same-disk", "second-disk", "ramdisk"]"#,
            "placement = \"ramdisk\"\nramdisk_size = \"64T\"",
            "journal.ramdisk_size",
            "ramdisk_size",
            &["allowed 4M to 16T"],
        ),
        (top, "repetitions = 2\nseed = -1", "seed", "seed", &["-1"]),
    ];
    for (from, to, key, blamed, parts) in cases {
        let text = base_with(from, to);
        let e = err_of(&text);
        assert_eq!(e.key, *key, "{to}: {e}");
        for part in *parts {
            assert!(e.message.contains(part), "{part:?} not in {to}: {e}");
        }
        assert_eq!(e.line, Some(line_of(&text, blamed)), "{to}: {e}");
    }
    // The largest values allowed are taken exactly.
    let s = parse(
        &base_with(j, "mode = \"ordered\"\ncommit = \"2147483s\""),
        "x",
    )
    .unwrap();
    assert_eq!(s.configs[0].commit_seconds, Some(2_147_483));
    let s = parse(&base_with(top, "repetitions = 1000"), "x").unwrap();
    assert_eq!(s.repetitions, 1000);
}

#[test]
fn wrongly_typed_values_name_the_key_and_the_expected_type() {
    let j = r#"mode = "ordered""#;
    let cases: &[(&str, &str, &str, &str, &str)] = &[
            (r#"size = "16M""#, "size = true", "journal.size", "size = true",
             "expected a size such as \"16M\" or a number of bytes, or a list of them; found a boolean"),
            (r#"size = "16M""#, "size = [\"16M\", 1.5]", "journal.size", "size = [",
             "expected a size such as \"16M\" or a number of bytes, or a list of them; found a float"),
            (r#"placement = ["same-disk", "second-disk", "ramdisk"]"#, "placement = 5", "journal.placement", "placement = 5",
             "expected a string, or a list of them; found an integer"),
            (j, "mode = \"ordered\"\nfast_commit = \"yes\"", "journal.fast_commit", "fast_commit",
             "expected true or false, or a list of them; found a string"),
            (r#"type = "ext4""#, "type = \"ext4\"\nmkfs_options = [1]", "filesystem.mkfs_options", "mkfs_options",
             "expected a list of option strings"),
            (r#"type = "ext4""#, "type = \"ext4\"\nmount_options = \"noatime\"", "filesystem.mount_options", "mount_options",
             "found a string"),
            ("repetitions = 2", "repetitions = true", "repetitions", "repetitions",
             "expected a whole number such as 5, or a table { min = 3, max = 10, target_cv = 0.03 }; found a boolean"),
            ("repetitions = 2", "repetitions = 2\nmemory_limit = { a = 1 }", "memory_limit", "memory_limit",
             "found a table"),
            ("repetitions = 2", "repetitions = 2\nseed = \"x\"", "seed", "seed = \"x\"", "u64"),
        ];
    for (from, to, key, blamed, message) in cases {
        let text = base_with(from, to);
        let e = err_of(&text);
        assert_eq!(e.key, *key, "{to}: {e}");
        assert!(e.message.contains(message), "{to}: {e}");
        assert!(!e.message.contains("untagged"), "{to}: {e}");
        assert_eq!(e.line, Some(line_of(&text, blamed)), "{to}: {e}");
    }
    // In a [[workload]] table, the table's index.
    let text = format!("{BASE}\n[[workload]]\nkind = \"fdtree\"\nname = \"b\"\nlevels = \"ten\"\n");
    let e = err_of(&text);
    assert_eq!(e.key, "workload[1].levels", "{e}");
    assert!(e.message.contains("whole number"), "{e}");
}

#[test]
fn the_matrix_and_the_trial_count_are_bounded() {
    let sets: Vec<String> = (0..40)
        .map(|i| format!("[\"-E\", \"stride={i}\"]"))
        .collect();
    let mounts: Vec<String> = (0..40).map(|i| format!("[\"commit_x{i}\"]")).collect();
    let text = base_with(
        r#"type = "ext4""#,
        &format!(
            "type = \"ext4\"\nmkfs_options = [{}]\nmount_options = [{}]",
            sets.join(", "),
            mounts.join(", ")
        ),
    );
    let e = err_of(&text);
    assert!(e.message.contains("40 x 40 x 3 configurations"), "{e}");
    assert!(e.message.contains("at most 1000"), "{e}");
    // 3 x 40 configurations, 2 workloads, 1000 repetitions: 240,000 trials.
    let text = base_with(
        r#"type = "ext4""#,
        &format!("type = \"ext4\"\nmkfs_options = [{}]", sets.join(", ")),
    )
    .replace("repetitions = 2", "repetitions = 1000")
        + "\n[[workload]]\nkind = \"fdtree\"\nname = \"b\"\ndirs = 2\nlevels = 2\n";
    let e = err_of(&text);
    assert_eq!(e.key, "repetitions");
    assert!(e.message.contains("make 240000 trials"), "{e}");
    assert!(e.message.contains("at most 100000"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "repetitions = 1000")));
    // Many [[config]] tables count together.
    let mut text = base_with(
        r#"type = "ext4""#,
        &format!("type = \"ext4\"\nmkfs_options = [{}]", sets.join(", ")),
    );
    for i in 0..30 {
        text.push_str(&format!("\n[[config]]\nlabel = \"c{i}\"\n"));
    }
    let e = err_of(&text);
    assert_eq!(e.key, "config", "{e}");
    assert!(e.message.contains("more than 1000"), "{e}");
}

#[test]
fn an_experiment_file_is_read_up_to_a_limit() {
    let e = load(Path::new("/dev/zero")).unwrap_err();
    assert!(e.message.contains("larger than 1M"), "{e}");
    let e = load(Path::new("/")).unwrap_err();
    assert!(e.message.contains("is a directory"), "{e}");
    let dir = std::env::temp_dir().join(format!("jbench-spec-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.toml");
    std::fs::write(&big, "#".repeat((MAX_SPEC_BYTES + 1) as usize)).unwrap();
    assert!(load(&big).unwrap_err().message.contains("larger than 1M"));
    let binary = dir.join("binary.toml");
    std::fs::write(&binary, b"name = \"\xff\"").unwrap();
    assert!(load(&binary).unwrap_err().message.contains("not UTF-8"));
    let ok = dir.join("ok.toml");
    std::fs::write(&ok, BASE).unwrap();
    assert!(load(&ok).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

mod hostile {
    //! Property tests: whatever the text, `parse` returns Ok or an Err that reads
    //! well; it never panics.
    use super::super::*;
    use proptest::prelude::*;

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: 300,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// The invariants every outcome keeps.
    fn check(text: &str) -> Result<(), TestCaseError> {
        match parse(text, "fuzz.toml") {
            Ok(spec) => {
                prop_assert!(!spec.configs.is_empty() && spec.configs.len() <= MAX_CONFIGS);
                prop_assert!(!spec.workloads.is_empty());
                // The resolved spec is itself a valid experiment.
                let again = parse(&spec.resolved, "resolved.toml");
                prop_assert!(again.is_ok(), "{:?}\n{}", again.err(), spec.resolved);
            }
            Err(e) => {
                prop_assert!(!e.message.trim().is_empty(), "{e:?}");
                prop_assert!(!e.message.contains("untagged"), "{e}");
                prop_assert!(!e.message.contains("did not match any variant"), "{e}");
                if let Some(line) = e.line {
                    prop_assert!(line >= 1 && line <= text.lines().count() + 1, "{e}");
                }
                // A value the TOML reader refused names its key and line.
                if e.message.starts_with("expected ") || e.message.starts_with("invalid type") {
                    prop_assert!(e.line.is_some(), "{e}");
                }
            }
        }
        Ok(())
    }

    const KEYS: &[&str] = &[
        "name",
        "repetitions",
        "noise_band",
        "order",
        "seed",
        "suspect_below",
        "monitor_interval",
        "work_dir",
        "baseline",
        "memory_limit",
        "type",
        "size",
        "device",
        "mkfs_options",
        "mount_options",
        "device_model",
        "placement",
        "mode",
        "second_disk_dir",
        "ramdisk_dir",
        "ramdisk_size",
        "fast_commit",
        "commit",
        "kind",
        "dirs",
        "files",
        "blocks",
        "levels",
        "number",
        "transactions",
        "record",
        "threads",
        "durable",
        "main_phase",
        "label",
        "write_log",
        "watchdog",
        "pin_cpus",
        "min",
        "max",
        "target_cv",
        "bogus",
    ];

    const SECTIONS: &[&str] = &[
        "",
        "[filesystem]",
        "[journal]",
        "[[workload]]\nkind = \"fdtree\"",
        "[[workload]]\nkind = \"postmark\"",
        "[[workload]]\nkind = \"iozone\"",
        "[[workload]]\nkind = \"fsync\"",
        "[[config]]",
        "[emulation]",
        "[models.m]\nmodel = \"hdd-7200\"",
    ];

    const WORDS: &[&str] = &[
        "16M",
        "4294967296s",
        "99999999999999999999",
        "1e400",
        "-1",
        "0",
        "0s",
        "nan",
        "inf",
        "1.5s",
        "500ms",
        "ext4",
        "xfs",
        "ramdisk",
        "second-disk",
        "internal",
        "none",
        "zram",
        "device",
        "/dev/sdz",
        "/dev/shm",
        "/",
        "journal",
        "ordered",
        "hdd-7200",
        "ram",
        "off",
        "",
        "fdtree",
        "postmark",
        "16T",
        "1G",
        "2147483s",
    ];

    fn scalar() -> impl Strategy<Value = toml::Value> {
        prop_oneof![
            any::<i64>().prop_map(toml::Value::Integer),
            (0i64..100).prop_map(toml::Value::Integer),
            any::<f64>().prop_map(toml::Value::Float),
            any::<bool>().prop_map(toml::Value::Boolean),
            prop::sample::select(WORDS).prop_map(|w| toml::Value::String(w.to_string())),
            ".{0,12}".prop_map(toml::Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = toml::Value> {
        scalar().prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(toml::Value::Array),
                prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                    .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
            ]
        })
    }

    fn line() -> impl Strategy<Value = String> {
        (
            prop::sample::select(SECTIONS),
            prop::collection::vec((prop::sample::select(KEYS), value()), 0..5),
        )
            .prop_map(|(section, pairs)| {
                let body: Vec<String> = pairs
                    .into_iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect();
                format!("{section}\n{}\n", body.join("\n"))
            })
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            check(&String::from_utf8_lossy(&bytes))?;
        }

        #[test]
        fn random_keys_and_values_never_panic(parts in prop::collection::vec(line(), 1..6)) {
            check(&parts.concat())?;
        }

        #[test]
        fn mutated_presets_never_panic(
            which in 0usize..100,
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..40, ".{0,10}"), 1..4),
        ) {
            let names = crate::experiment::presets::names();
            let mut text = crate::experiment::presets::find(names[which % names.len()]).unwrap().as_bytes().to_vec();
            for (at, cut, insert) in edits {
                let start = at.index(text.len() + 1);
                let end = (start + cut).min(text.len());
                text.splice(start..end, insert.bytes());
            }
            check(&String::from_utf8_lossy(&text))?;
        }
    }

    #[test]
    fn every_preset_parses_and_its_resolved_form_too() {
        for name in crate::experiment::presets::names() {
            check(crate::experiment::presets::find(name).unwrap()).unwrap();
            parse(crate::experiment::presets::find(name).unwrap(), name).unwrap();
        }
    }
}

/// The factor table drives the matrix, the stored spec and the docs' key lists.
mod factor_table {
    use super::*;

    const DOCS: &str = include_str!("../../../docs/experiment.md");

    /// The keys in the table under the docs heading `heading` (`| \`size\` | ...`), up to
    /// the next heading.
    fn documented_keys(heading: &str) -> Vec<String> {
        let start = DOCS.find(heading).expect("the docs have this section");
        let section = &DOCS[start + heading.len()..];
        let section = &section[..section.find("\n#").unwrap_or(section.len())];
        section
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split_once("` |"))
            .map(|(key, _)| key.to_string())
            .collect()
    }

    #[test]
    fn every_factor_is_documented_and_every_documented_section_key_is_a_factor() {
        let mut in_docs: Vec<String> = Vec::new();
        for (heading, table) in [
            ("## `[filesystem]`", "filesystem"),
            ("## `[journal]`", "journal"),
        ] {
            in_docs.extend(
                documented_keys(heading)
                    .into_iter()
                    .map(|k| format!("{table}.{k}")),
            );
        }
        let top = documented_keys("## Top level");
        for f in &FACTORS {
            let documented = if f.key.contains('.') {
                in_docs.contains(&f.key.to_string())
            } else {
                top.contains(&f.key.to_string())
            };
            assert!(
                documented,
                "{} is not in docs/experiment.md's key lists",
                f.key
            );
        }
        for key in &in_docs {
            assert!(
                FACTORS.iter().any(|f| f.key == key),
                "docs/experiment.md documents {key}, which is no factor of the matrix"
            );
        }
        let mut ranks: Vec<u8> = FACTORS.iter().map(|f| f.label_rank).collect();
        ranks.sort();
        ranks.dedup();
        assert_eq!(ranks.len(), FACTORS.len(), "two factors share a label rank");
    }

    const WORKLOAD: &str =
        "\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nfiles = 2\nblocks = 1\nlevels = 2\n";

    #[test]
    fn every_factor_is_written_to_the_resolved_spec() {
        let text = format!(
            r#"name = "all-keys"
repetitions = 1
[filesystem]
type = "ext4"
size = "1G"
[journal]
size = "16M"

[[config]]
label = "devices"
memory_limit = "512M"
filesystem.device = "/dev/fake-fs"
filesystem.mkfs_options = ["-O", "^metadata_csum"]
filesystem.mount_options = ["noatime"]
journal.placement = "device"
journal.device = "/dev/fake-journal"
journal.mode = "writeback"
journal.fast_commit = true
journal.commit = "30s"

[[config]]
label = "emulated"
filesystem.device_model = "ssd-sata"
journal.placement = "second-disk"
journal.second_disk_dir = "/var/tmp"
journal.device_model = "nvme"

[[config]]
label = "ram"
journal.placement = "ramdisk"
journal.ramdisk_dir = "/dev/shm"
journal.ramdisk_size = "64M"
{WORKLOAD}"#
        );
        let s = parse(&text, "x.toml").unwrap();
        let resolved: toml::Table = toml::from_str(&s.resolved).unwrap();
        let configs = resolved["config"].as_array().unwrap();
        assert_eq!(configs.len(), 3);
        for f in &FACTORS {
            let stored = configs.iter().any(|c| match f.key.split_once('.') {
                Some((table, name)) => c[table].get(name).is_some(),
                None => c.get(f.key).is_some(),
            });
            assert!(stored, "{} is in no [[config]] of the resolved spec", f.key);
        }
        let again = parse(&s.resolved, "resolved.toml").unwrap();
        assert_eq!(again.configs, s.configs);
    }

    /// How many values `key` lists in `spec` (1 when absent or a single value).
    fn listed(spec: &toml::Table, key: &str) -> usize {
        let value = match key.split_once('.') {
            Some((table, name)) => spec.get(table).and_then(|t| t.get(name)),
            None => spec.get(key),
        };
        match value {
            // An option set is a list of strings; only a list of lists makes several.
            Some(toml::Value::Array(items))
                if key.ends_with("_options")
                    && (items.is_empty() || !items.iter().all(toml::Value::is_array)) =>
            {
                1
            }
            Some(toml::Value::Array(items)) => items.len(),
            _ => 1,
        }
    }

    #[test]
    fn the_matrix_is_every_combination_of_the_factor_lists_in_table_order() {
        let text = format!(
            r#"name = "matrix"
repetitions = 1
memory_limit = ["512M", "1G"]
[filesystem]
size = ["8G", "9G"]
mkfs_options = [[], ["-O", "^metadata_csum"]]
mount_options = [["noatime"], []]
[journal]
placement = ["internal", "second-disk", "ramdisk"]
size = ["16M", "32M"]
mode = ["ordered", "writeback"]
fast_commit = [false, true]
commit = ["5s", "30s"]
{WORKLOAD}"#
        );
        let raw: toml::Table = toml::from_str(&text).unwrap();
        let lengths: Vec<usize> = FACTORS.iter().map(|f| listed(&raw, f.key)).collect();
        let product: usize = lengths.iter().product();
        assert_eq!(product, 768, "the test lists what it means to");
        let s = parse(&text, "x.toml").unwrap();
        assert_eq!(s.configs.len(), product);
        let stored = |c: &Config| {
            let mut t = resolved::config_table(c);
            t.remove("label");
            t
        };
        let distinct: Vec<toml::Table> = s.configs.iter().map(stored).collect();
        for (i, t) in distinct.iter().enumerate() {
            assert!(
                !distinct[..i].contains(t),
                "configuration {i} repeats an earlier one"
            );
        }
        // The last listed factor of the table varies fastest, the first slowest.
        let varies = |a: &Config, b: &Config| -> Vec<&str> {
            FACTORS
                .iter()
                .filter(|f| (f.store)(a) != (f.store)(b))
                .map(|f| f.key)
                .collect()
        };
        let listed_keys: Vec<&str> = FACTORS
            .iter()
            .zip(&lengths)
            .filter(|(_, &n)| n > 1)
            .map(|(f, _)| f.key)
            .collect();
        assert_eq!(
            varies(&s.configs[0], &s.configs[1]),
            [*listed_keys.last().unwrap()]
        );
        let slowest = product / lengths.iter().find(|&&n| n > 1).unwrap();
        assert_eq!(
            varies(&s.configs[slowest - 1], &s.configs[slowest])[0],
            listed_keys[0]
        );
    }

    #[test]
    fn of_several_bad_keys_the_sections_are_named_before_the_top_level() {
        let bad_memory = BASE.replace("repetitions = 2", "repetitions = 2\nmemory_limit = \"1M\"");
        assert_eq!(err_of(&bad_memory).key, "memory_limit");
        // memory_limit comes before journal.size in the matrix, but is read after it.
        let both = bad_memory.replace("size = \"16M\"", "size = \"1M\"");
        let e = err_of(&both);
        assert_eq!(e.key, "journal.size", "{e}");
        assert_eq!(e.line, Some(line_of(&both, "size = \"1M\"")));
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
