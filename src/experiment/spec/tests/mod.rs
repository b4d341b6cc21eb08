//! Tests of the experiment file: parsing, errors with key and line, the matrix, labels,
//! the resolved spec, and hostile inputs (proptest).

/// The factor table drives the matrix, the stored spec and the docs' key lists.
mod crash;
mod factor_table;
mod hostile;
mod limits;
mod models;
mod parse;
mod refusals;
mod writeback;

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

/// Replaces `from` in BASE by `to`, checking it was there.
fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    BASE.replace(from, to)
}
