//! The words of the environment that decides journaling figures (`env.json`'s
//! writeback settings, the work_dir's disk and mount, the CPU governor, the disks'
//! caches), for the header of the text and Markdown reports and the HTML page.

use super::grid::Style;
use super::Format;
use crate::analysis::Analysis;
use crate::results::envinfo::{DiskSettings, Environment, ImageLocation, Writeback};
use crate::results::Results;

/// [`super::render_with_crash`] of a results directory, with its `env.json` in the
/// header of the table and Markdown formats (CSV and JSON are unchanged: `env.json`
/// sits beside them).
pub fn render_results(results: &Results, opts: &super::ReportOptions, format: Format) -> String {
    let mut a = super::analyse(&results.records, opts).with_crash(&results.crash);
    a.environment = results.environment();
    format.exporter().render(&a)
}

/// The header lines of `a`'s environment, empty without one. They follow the summary
/// (or answer), which opens every report.
pub(crate) fn header_block(a: &Analysis, style: Style) -> String {
    let Some(env) = &a.environment else {
        return String::new();
    };
    let lines = header_lines(env);
    if lines.is_empty() {
        return String::new();
    }
    match style {
        Style::Plain => format!("{}\n\n", lines.join("\n")),
        // Two trailing spaces: a Markdown line break inside one paragraph.
        Style::Markdown => format!("{}\n\n", lines.join("  \n")),
    }
}

/// At most three compact lines: writeback and governor; the work_dir's disk and mount;
/// the disks of the configurations, when any is emulated or a real device.
pub fn header_lines(env: &Environment) -> Vec<String> {
    if !recorded(env) {
        return Vec::new();
    }
    let mut out = vec![format!("{}; governor: {}", writeback(env), governor(env))];
    if let Some(w) = env.image_locations.first() {
        out.push(format!("work_dir on {}", storage(w)));
    }
    if !env.disks.is_empty() {
        out.push(format!("disks: {}", disks(&env.disks)));
    }
    out
}

/// The HTML page's table: one row per setting.
pub fn html_rows(env: &Environment) -> Vec<(String, String)> {
    if !recorded(env) {
        return Vec::new();
    }
    let mut rows = vec![
        ("Writeback".to_string(), writeback(env)),
        ("CPU governor".to_string(), governor(env)),
    ];
    if let Some(w) = env.image_locations.first() {
        rows.push(("work_dir".to_string(), storage(w)));
    }
    for d in &env.disks {
        rows.push((format!("{} disk of {}", d.role, d.config), disk(d)));
    }
    rows
}

/// Whether `env` is of a jbench that records these settings: an older `env.json`
/// loads with defaults, which would read as "unknown" everywhere.
fn recorded(env: &Environment) -> bool {
    env.writeback != Writeback::default()
}

/// `writeback: dirty_ratio 20, background_ratio 10, expire 30 s, writeback 5 s`; a byte
/// limit replaces its ratio when set (the kernel uses one of the two).
fn writeback(env: &Environment) -> String {
    let w = &env.writeback;
    let limit = |bytes: Option<u64>, ratio: Option<u64>, name: &str| match (bytes, ratio) {
        (Some(b), _) if b > 0 => format!("{name}_bytes {}", crate::units::format_size(b)),
        (_, Some(r)) => format!("{name}_ratio {r}"),
        _ => format!("{name}_ratio unknown"),
    };
    let secs =
        |cs: Option<u64>| cs.map_or("unknown".to_string(), |c| format!("{} s", c as f64 / 100.0));
    let control = match env.writeback_control {
        None => String::new(),
        Some(c) => {
            let mut parts = Vec::new();
            if c.pins() {
                parts.push("pinned");
            }
            if c.sync_at_start {
                parts.push("synced before each workload");
            }
            if parts.is_empty() {
                String::new()
            } else {
                format!(" ({})", parts.join(", "))
            }
        }
    };
    format!(
        "writeback: {}, {}, expire {}, writeback {}{control}",
        limit(w.dirty_bytes, w.dirty_ratio, "dirty"),
        limit(
            w.dirty_background_bytes,
            w.dirty_background_ratio,
            "background"
        ),
        secs(w.dirty_expire_centisecs),
        secs(w.dirty_writeback_centisecs)
    )
}

fn governor(env: &Environment) -> String {
    if env.cpu_governors.is_empty() {
        "none (no cpufreq)".to_string()
    } else {
        env.cpu_governors.join(", ")
    }
}

/// `vda (mq-deadline, write cache: write back, rotational: no), mount rw,relatime`.
fn storage(w: &ImageLocation) -> String {
    let dev = match &w.queue {
        Some(q) => format!(
            "{} ({}, write cache: {}, rotational: {})",
            q.disk,
            if q.scheduler.is_empty() {
                "scheduler unknown"
            } else {
                &q.scheduler
            },
            if q.write_cache.is_empty() {
                "unknown"
            } else {
                &q.write_cache
            },
            match q.rotational {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unknown",
            }
        ),
        None if w.device.is_empty() => "an unknown device".to_string(),
        None => format!("{} (no block queue)", w.device),
    };
    let via = w
        .loop_backing_file
        .as_ref()
        .map(|f| format!(" through loop file {f}"))
        .unwrap_or_default();
    format!("{dev}{via}, mount {}", w.mount_options)
}

/// Each distinct disk once: `hdd-7200 (write back 32 MiB, flush drains the cache)`.
fn disks(all: &[DiskSettings]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for d in all {
        let s = disk(d);
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    seen.join("; ")
}

fn disk(d: &DiskSettings) -> String {
    let mut parts = Vec::new();
    let cache = match d.cache_bytes {
        Some(b) => format!("cache {} {}", d.cache, crate::units::format_size(b)),
        None if d.cache.is_empty() => "cache unknown".to_string(),
        None => format!("cache {}", d.cache),
    };
    parts.push(cache);
    if !d.flush.is_empty() {
        match d.flush_latency_us {
            Some(us) => parts.push(format!("flush {} ({us} µs)", d.flush)),
            None => parts.push(format!("flush {}", d.flush)),
        }
    }
    if let Some(r) = d.rotational {
        parts.push(format!("rotational: {}", if r { "yes" } else { "no" }));
    }
    format!("{} {} ({})", d.kind, d.name, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::envinfo::BlockQueue;

    fn env() -> Environment {
        Environment {
            image_locations: vec![ImageLocation {
                device: "/dev/vda".into(),
                mount_options: "rw,relatime".into(),
                queue: Some(BlockQueue {
                    disk: "vda".into(),
                    scheduler: "mq-deadline".into(),
                    write_cache: "write back".into(),
                    rotational: Some(false),
                }),
                ..Default::default()
            }],
            writeback: Writeback {
                dirty_ratio: Some(20),
                dirty_background_ratio: Some(10),
                dirty_bytes: Some(0),
                dirty_background_bytes: Some(0),
                dirty_expire_centisecs: Some(3000),
                dirty_writeback_centisecs: Some(500),
            },
            ..Default::default()
        }
    }

    #[test]
    fn compact_lines_name_every_setting() {
        let lines = header_lines(&env());
        assert_eq!(
            lines,
            [
                "writeback: dirty_ratio 20, background_ratio 10, expire 30 s, writeback 5 s; governor: none (no cpufreq)",
                "work_dir on vda (mq-deadline, write cache: write back, rotational: no), mount rw,relatime",
            ]
        );
        let mut e = env();
        e.writeback.dirty_bytes = Some(64 << 20);
        e.cpu_governors = vec!["performance".into()];
        e.disks = vec![
            DiskSettings {
                config: "a".into(),
                role: "fs".into(),
                kind: "emulated".into(),
                name: "hdd-7200".into(),
                cache: "write back".into(),
                cache_bytes: Some(32 << 20),
                flush: "drains the cache".into(),
                ..Default::default()
            };
            2
        ];
        let lines = header_lines(&e);
        assert!(
            lines[0].starts_with("writeback: dirty_bytes 64"),
            "{lines:?}"
        );
        assert!(lines[0].ends_with("governor: performance"), "{lines:?}");
        // The same disk in two configurations is named once.
        assert_eq!(lines[2].matches("hdd-7200").count(), 1, "{lines:?}");
        assert!(lines[2].contains("flush drains the cache"), "{lines:?}");
        assert_eq!(html_rows(&e).len(), 3 + 2);
        // An env.json of an older jbench has none of it: nothing rather than "unknown".
        assert!(header_lines(&Environment::default()).is_empty());
        assert!(html_rows(&Environment::default()).is_empty());
    }

    #[test]
    fn the_writeback_line_says_what_the_run_controlled() {
        use crate::experiment::writeback_options::WritebackOptions;
        let mut e = env();
        e.writeback_control = Some(WritebackOptions::default());
        assert!(
            header_lines(&e)[0]
                .starts_with("writeback: dirty_ratio 20, background_ratio 10, expire 30 s, writeback 5 s (synced before each workload);"),
            "{:?}",
            header_lines(&e)
        );
        e.writeback_control = Some(WritebackOptions {
            sync_at_start: false,
            interval: Some(std::time::Duration::from_secs(5)),
            expire: None,
        });
        assert!(
            header_lines(&e)[0].contains("writeback 5 s (pinned);"),
            "{:?}",
            header_lines(&e)
        );
        e.writeback_control = Some(WritebackOptions {
            sync_at_start: false,
            ..WritebackOptions::default()
        });
        assert!(header_lines(&e)[0].contains("writeback 5 s;"));
    }
}
