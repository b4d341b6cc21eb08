//! `jbench device qualify --model NAME --fit` recovers the parameters of the model it
//! measured through the whole emulation path (issue 26: each within 15%). In a binary
//! of its own, one test at a time, so that nothing else disturbs the timing.

use crate::common;

use std::sync::Mutex;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The fit of `model` (a `[models]` entry of experiment file `spec` when given)
/// measured on an emulated disk of `size` for `seconds`.
fn fitted_from(
    test: &str,
    model: &str,
    spec: Option<&std::path::Path>,
    size: &str,
    seconds: &str,
) -> Option<Value> {
    if !(need_root(test) && need_fuse(test)) {
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = scratch("qualify-fit-");
    let mut cmd = jbench();
    cmd.args(["device", "qualify", "--model", model, "--size", size]);
    if let Some(spec) = spec {
        cmd.arg("--spec").arg(spec);
    }
    let out = run_ok(
        cmd.args(["--seconds", seconds, "--fit", "--json", "--work-dir"])
            .arg(tmp.path()),
    );
    let q: Value = serde_json::from_slice(&out.stdout).unwrap();
    if spec.is_none() {
        assert_eq!(q["model"]["base_model"], model, "{q}");
    }
    assert_no_leaks(tmp.path());
    Some(q)
}

/// Up to three fits of `model` (from experiment file `spec` when given), until one
/// passes `check` (which lists what it found off); panics with every attempt's misses
/// when none does. A busy host can slow one measurement's path by tens of µs a
/// request (CI once saw a 100 µs read fitted at 120); a fit that is wrong misses
/// every time.
fn fitted_until(
    test: &str,
    model: &str,
    spec: Option<&std::path::Path>,
    size: &str,
    seconds: &str,
    check: impl Fn(&Value) -> Vec<String>,
) {
    let mut misses = Vec::new();
    for attempt in 1..=3 {
        let Some(q) = fitted_from(test, model, spec, size, seconds) else {
            return;
        };
        let off = check(&q);
        if off.is_empty() {
            return;
        }
        eprintln!("{model}, attempt {attempt}: {off:?}");
        misses.push(format!(
            "attempt {attempt}: {}; fit {}",
            off.join("; "),
            q["fit"]
        ));
    }
    panic!(
        "{model} was fitted off in every attempt:\n{}",
        misses.join("\n")
    );
}

/// `got == want`, or what was found instead.
fn same(q: &Value, got: &Value, want: &str, why: &str) -> Option<String> {
    (got != want).then(|| format!("{want} expected ({why}), got {got}; {q}"))
}

/// Whether fitted `key` is within `tolerance` of `want`, or what is off.
fn within(q: &Value, key: &str, want: f64, tolerance: f64) -> Option<String> {
    let Some(got) = q["fit"]["params"][key].as_f64() else {
        return Some(format!("no fitted {key}"));
    };
    ((got / want - 1.0).abs() > tolerance).then(|| {
        format!(
            "{key}: fitted {got}, the model's {want} (more than {:.0}% off)",
            tolerance * 100.0
        )
    })
}

#[test]
fn an_emulated_sata_ssd_is_fitted_back_to_its_parameters() {
    let _alone = crate::alone();
    let test = "an_emulated_sata_ssd_is_fitted_back_to_its_parameters";
    fitted_until(test, "ssd-sata", None, "256M", "8", |q| {
        let mut off: Vec<String> = [
            same(q, &q["fit"]["model"], "ssd-sata", "flash, not rotating"),
            (q["looks_rotational"] != false).then(|| "looks rotational".into()),
            same(q, &q["flush_shape"], "drains-cache", "its flush is 1.5 ms"),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (key, want) in [
            ("read_latency_us", 100.0),
            ("flush_latency_us", 1500.0),
            ("read_mb_per_s", 500.0),
            ("write_mb_per_s", 500.0),
        ] {
            off.extend(within(q, key, want, 0.15));
        }
        off.extend(within_or_at_floor(q, "write_latency_us", 60.0, 0.15));
        off
    });
}

/// Like [`within`], except when the fit says `key` came out at the emulation path's
/// floor: the path then hides the model's own figure (60 µs writes sit just under a
/// loaded machine's floor), and all the fit may claim is the floor itself, which is
/// never under the model's figure.
fn within_or_at_floor(q: &Value, key: &str, want: f64, tolerance: f64) -> Option<String> {
    if !at_path_limit(q, key, "floor") {
        return within(q, key, want, tolerance);
    }
    let got = q["fit"]["params"][key].as_f64().unwrap();
    (got < want * (1.0 - tolerance))
        .then(|| format!("{key}: fitted {got} at the path's floor, below the model's {want}"))
}

/// Whether the fit says `key` came out at the emulation path's `limit` (floor or
/// ceiling).
fn at_path_limit(q: &Value, key: &str, limit: &str) -> bool {
    let said = format!("at the emulation path's {limit}");
    q["fit"]["basis"].as_array().is_some_and(|b| {
        b.iter()
            .any(|e| e[0] == key && e[1].as_str().is_some_and(|t| t.starts_with(&said)))
    })
}

/// Like [`within_or_at_floor`] for a transfer rate: at the path's ceiling the fit may
/// only claim the path's rate, which is never over the model's.
fn within_or_at_ceiling(q: &Value, key: &str, want: f64, tolerance: f64) -> Option<String> {
    if !at_path_limit(q, key, "ceiling") {
        return within(q, key, want, tolerance);
    }
    let got = q["fit"]["params"][key].as_f64().unwrap();
    (got > want * (1.0 + tolerance))
        .then(|| format!("{key}: fitted {got} at the path's ceiling, above the model's {want}"))
}

#[test]
fn an_emulated_7200_rpm_disk_is_fitted_back_to_its_parameters() {
    let _alone = crate::alone();
    let test = "an_emulated_7200_rpm_disk_is_fitted_back_to_its_parameters";
    fitted_until(test, "hdd-7200", None, "512M", "20", |q| {
        let mut off: Vec<String> = [
            same(q, &q["fit"]["model"], "hdd-7200", "rotating"),
            (q["looks_rotational"] != true).then(|| "does not look rotational".into()),
            (q["fit"]["params"]["write_cache"] != true).then(|| "no write cache fitted".into()),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (key, want) in [
            ("rpm", 7200.0),
            ("seek_avg_ms", 6.3),
            ("rate_outer_mb_per_s", 200.0),
            ("rate_inner_mb_per_s", 100.0),
        ] {
            off.extend(within(q, key, want, 0.15));
        }
        off
    });
}

#[test]
fn a_model_defined_only_in_an_experiment_file_is_fitted_back_to_its_parameters() {
    let _alone = crate::alone();
    let test = "a_model_defined_only_in_an_experiment_file_is_fitted_back_to_its_parameters";
    let specs = scratch("qualify-fit-spec-");
    let work = scratch("qualify-fit-work-");
    // Every figure well above this machine's path floor (20-50 µs), none a built-in's.
    let spec = write_spec(
        specs.path(),
        "own",
        &tiny_spec(work.path(), r#""internal""#, 1, "").replace(
            "[filesystem]",
            "[models.slow-ssd]\nmodel = \"ssd-sata\"\nread_latency_us = 250.0\n\
             write_latency_us = 150.0\nflush_latency_us = 900.0\nread_mb_per_s = 300.0\n\
             write_mb_per_s = 250.0\n\n[filesystem]",
        ),
    );
    fitted_until(test, "slow-ssd", Some(&spec), "256M", "8", |q| {
        let mut off: Vec<String> = [
            same(q, &q["model"]["name"], "slow-ssd", "the spec's model"),
            same(
                q,
                &q["model"]["base_model"],
                "ssd-sata",
                "made from ssd-sata",
            ),
            same(q, &q["fit"]["model"], "ssd-sata", "flash"),
            same(q, &q["flush_shape"], "drains-cache", "a 900 µs flush"),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (key, want) in [
            ("read_latency_us", 250.0),
            ("write_latency_us", 150.0),
            ("flush_latency_us", 900.0),
            ("read_mb_per_s", 300.0),
            ("write_mb_per_s", 250.0),
        ] {
            off.extend(within(q, key, want, 0.15));
        }
        off
    });
}

/// The published drives' models (docs/devices.md): what this machine's emulation path
/// can answer as fast as the model is held to 15%; the rest (a consumer NVMe's 15 µs
/// write) is faster than the path and is in the closing note, not here.
#[test]
fn the_published_drives_are_fitted_back_where_the_path_allows() {
    let _alone = crate::alone();
    let test = "the_published_drives_are_fitted_back_where_the_path_allows";
    fitted_until(test, "nvme-consumer", None, "256M", "8", |q| {
        let mut off: Vec<String> = [
            (q["looks_rotational"] != false).then(|| "looks rotational".into()),
            same(q, &q["flush_shape"], "drains-cache", "a 2 ms flush"),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (key, want) in [("read_latency_us", 81.7), ("flush_latency_us", 2067.4)] {
            off.extend(within(q, key, want, 0.15));
        }
        // A MiB at 2.5 GB/s is 420 µs: about what copying it through this path costs,
        // so the path shows its own ceiling as often as the model's rate.
        off.extend(within_or_at_ceiling(q, "read_mb_per_s", 2500.0, 0.15));
        off
    });
    fitted_until(test, "ssd-sata-plp", None, "256M", "8", |q| {
        let mut off: Vec<String> = [same(q, &q["flush_shape"], "cheap", "power-loss protection")]
            .into_iter()
            .flatten()
            .collect();
        let basis = q["fit"]["basis"].to_string();
        if !basis.contains("power_loss_protection") {
            off.push(format!("no power_loss_protection in the basis: {basis}"));
        }
        for (key, want) in [
            ("write_latency_us", 118.7),
            ("read_mb_per_s", 270.0),
            ("write_mb_per_s", 210.0),
        ] {
            off.extend(within(q, key, want, 0.15));
        }
        off
    });
}
