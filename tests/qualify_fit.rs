//! `jbench device qualify --model NAME --fit` recovers the parameters of the model it
//! measured through the whole emulation path (issue 26: each within 15%). In a binary
//! of its own, one test at a time, so that nothing else disturbs the timing.

mod common;

use std::sync::Mutex;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The fit of `model` measured on an emulated disk of `size` for `seconds`.
fn fitted(test: &str, model: &str, size: &str, seconds: &str) -> Option<Value> {
    if !(need_root(test) && need_fuse(test)) {
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = scratch("qualify-fit-");
    let out = run_ok(
        jbench()
            .args(["device", "qualify", "--model", model, "--size", size])
            .args(["--seconds", seconds, "--fit", "--json", "--work-dir"])
            .arg(tmp.path()),
    );
    let q: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(q["model"]["base_model"], model, "{q}");
    assert_no_leaks(tmp.path());
    Some(q)
}

fn within(q: &Value, key: &str, want: f64, tolerance: f64) {
    let got = q["fit"]["params"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("no fitted {key}: {}", q["fit"]));
    assert!(
        (got / want - 1.0).abs() <= tolerance,
        "{key}: fitted {got}, the model's {want} (more than {:.0}% off); fit {}",
        tolerance * 100.0,
        q["fit"]
    );
}

#[test]
fn an_emulated_sata_ssd_is_fitted_back_to_its_parameters() {
    let test = "an_emulated_sata_ssd_is_fitted_back_to_its_parameters";
    let Some(q) = fitted(test, "ssd-sata", "256M", "8") else {
        return;
    };
    assert_eq!(
        q["fit"]["model"], "ssd-sata",
        "flash, not rotating: {}",
        q["fit"]
    );
    assert_eq!(q["looks_rotational"], false);
    assert_eq!(q["flush_shape"], "drains-cache", "its flush is 1.5 ms: {q}");
    for (key, want) in [
        ("read_latency_us", 100.0),
        ("write_latency_us", 60.0),
        ("flush_latency_us", 1500.0),
        ("read_mb_per_s", 500.0),
        ("write_mb_per_s", 500.0),
    ] {
        within(&q, key, want, 0.15);
    }
}

#[test]
fn an_emulated_7200_rpm_disk_is_fitted_back_to_its_parameters() {
    let test = "an_emulated_7200_rpm_disk_is_fitted_back_to_its_parameters";
    let Some(q) = fitted(test, "hdd-7200", "512M", "20") else {
        return;
    };
    assert_eq!(q["fit"]["model"], "hdd-7200", "rotating: {}", q["fit"]);
    assert_eq!(q["looks_rotational"], true);
    assert_eq!(q["fit"]["params"]["write_cache"], true, "{}", q["fit"]);
    for (key, want) in [
        ("rpm", 7200.0),
        ("seek_avg_ms", 6.3),
        ("rate_outer_mb_per_s", 200.0),
        ("rate_inner_mb_per_s", 100.0),
    ] {
        within(&q, key, want, 0.15);
    }
}
