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
    "poll",
    "states",
    "strategies",
    "recovery_timing",
    "lose_journal",
    "mount_timeout",
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
    "[crash]",
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
    "prefix",
    "subset",
    "torn",
    "auto",
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
