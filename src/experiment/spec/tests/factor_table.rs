use super::*;

const DOCS: &str = include_str!("../../../../docs/experiment.md");

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
filesystem.second_size = "256M"
filesystem.second_device_model = "nvme"
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
