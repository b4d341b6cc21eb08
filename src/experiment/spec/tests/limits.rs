//! Ranges and limits: out-of-range and wrongly typed values, the size of the matrix and of the file.

use super::*;

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
