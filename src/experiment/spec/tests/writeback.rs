//! The `[writeback]` table: defaults, pins, refusals, and the stored spec.

use super::*;

fn with_table(table: &str) -> String {
    format!("{BASE}\n[writeback]\n{table}\n")
}

#[test]
fn without_the_table_trials_sync_at_start_and_pin_nothing() {
    let s = parse(BASE, "x.toml").unwrap();
    assert_eq!(s.writeback, WritebackOptions::default());
    assert!(s.writeback.sync_at_start);
    // The stored spec says so, so a reader of spec.toml knows what ran.
    let stored: toml::Table = toml::from_str(&s.resolved).unwrap();
    let w = stored["writeback"].as_table().unwrap();
    assert_eq!(w["sync_at_start"].as_bool(), Some(true));
    assert_eq!(w["interval"].as_str(), Some("host"));
    assert_eq!(w["expire"].as_str(), Some("host"));
}

#[test]
fn interval_and_expire_pin_the_kernel_settings_and_round_trip() {
    let s = parse(
        &with_table("sync_at_start = false\ninterval = \"2500ms\"\nexpire = \"30s\""),
        "x.toml",
    )
    .unwrap();
    assert!(!s.writeback.sync_at_start);
    assert_eq!(s.writeback.interval, Some(Duration::from_millis(2500)));
    assert_eq!(s.writeback.expire, Some(Duration::from_secs(30)));
    // The stored spec parses back to the same options (what --resume compares).
    let again = parse(&s.resolved, "spec.toml").unwrap();
    assert_eq!(again.writeback, s.writeback);
    // "host" is the default spelled out.
    let host = parse(&with_table("interval = \"host\""), "x.toml").unwrap();
    assert_eq!(host.writeback.interval, None);
}

#[test]
fn a_value_the_kernel_cannot_hold_is_refused_with_key_and_line() {
    let text = with_table("interval = \"15ms\"");
    let e = err_of(&text);
    assert_eq!(e.key, "writeback.interval");
    assert_eq!(e.line, Some(line_of(&text, "15ms")));
    assert!(e.message.contains("centiseconds"), "{}", e.message);
    let e = err_of(&with_table("expire = \"2h\""));
    assert_eq!(e.key, "writeback.expire");
    assert!(e.message.contains("\"host\""), "{}", e.message);
    let e = err_of(&with_table("period = \"5s\""));
    assert!(e.message.contains("period"), "{}", e.message);
}
