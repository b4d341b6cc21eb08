//! `--fit`: a `[models.NAME]` entry fitted to a qualification, for an experiment
//! file's `device_model`: a rotating-disk model (`hdd-7200`'s parameters) when the
//! random reads seek, a fixed-latency flash model (`ssd-sata`'s) otherwise.

use serde::{Deserialize, Serialize};

use super::{FlushShape, Qualification, WRITE_FLUSH_SIZES};

/// A fitted model and how each parameter was read off the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub name: String,
    /// The built-in model the entry overrides.
    pub model: String,
    pub params: toml::Table,
    /// Per parameter, the figure it came from.
    pub basis: Vec<(String, String)>,
}

/// Rotation speeds drives are sold at: a fitted speed within 8% of one is that one.
const RPMS: [f64; 6] = [4200.0, 5400.0, 5900.0, 7200.0, 10000.0, 15000.0];

pub fn fit(q: &Qualification, name: &str) -> Fit {
    let mut f = if q.looks_rotational {
        fit_hdd(q, name)
    } else {
        fit_flash(q, name)
    };
    if q.through_loop_image {
        f.basis.insert(
            0,
            (
                "every figure".into(),
                format!(
                    "measured through a loop device over an image in {}, as a trial's file system there sees it: a flush is the host file system's fdatasync of the image",
                    q.target
                ),
            ),
        );
        if !q.looks_rotational {
            // The image was just written: its blocks are in the host's page cache.
            f.basis.push((
                "read_latency_us".into(),
                "reads of an image just written come from the host's page cache: a study whose files outgrow the host's free memory reads slower than this copy".into(),
            ));
        }
    }
    if q.memory {
        f.basis.push((
            "every figure".into(),
            format!(
                "measured on {}: memory's, not a disk's (a device as fast as RAM)",
                q.filesystem
            ),
        ));
    }
    f
}

fn fit_hdd(q: &Qualification, name: &str) -> Fit {
    let mut basis = Vec::new();
    let mut params = toml::Table::new();
    // A sector rewritten in place has just passed under the head: each rewrite and
    // its flush wait about one revolution.
    let period_us = q.rewrite_flush.p50_us.max(1.0);
    let raw = 60e6 / period_us;
    let rpm = RPMS
        .into_iter()
        .find(|r| (r - raw).abs() <= r * 0.08)
        .unwrap_or(raw.round());
    basis.push((
        "rpm".into(),
        format!(
            "one revolution per 4 KiB block rewritten in place and flushed: p50 {:.2} ms ({raw:.0} rpm)",
            period_us / 1e3
        ),
    ));
    let period_ms = 60e3 / rpm;
    let outer = q.sequential_read_1m.mb_per_s;
    let inner = q.sequential_read_1m_end.mb_per_s.min(outer);
    basis.push((
        "rate_outer_mb_per_s".into(),
        "sequential 1 MiB reads at the start".into(),
    ));
    basis.push((
        "rate_inner_mb_per_s".into(),
        "sequential 1 MiB reads over the last 5%".into(),
    ));
    // A random read: the average seek, half a revolution, the transfer.
    let transfer_ms = 4096.0 / (outer.max(1.0) * 1e3);
    let seek = (q.random_read_4k.latency.mean_us / 1e3 - period_ms / 2.0 - transfer_ms).max(0.1);
    basis.push((
        "seek_avg_ms".into(),
        format!(
            "random 4 KiB reads, mean {:.2} ms, less half a revolution",
            q.random_read_4k.latency.mean_us / 1e3
        ),
    ));
    let cache = q.flush_shape == Some(FlushShape::DrainsCache);
    basis.push((
        "write_cache".into(),
        if cache {
            "a flush drains what the writes left".into()
        } else {
            "a flush costs what a write does (write-through)".into()
        },
    ));
    params.insert("rpm".into(), rpm.into());
    params.insert("seek_avg_ms".into(), round3(seek).into());
    params.insert("rate_outer_mb_per_s".into(), round3(outer).into());
    params.insert("rate_inner_mb_per_s".into(), round3(inner).into());
    params.insert("write_cache".into(), cache.into());
    params.insert("capacity_bytes".into(), (q.size as i64).into());
    Fit {
        name: name.into(),
        model: "hdd-7200".into(),
        params,
        basis,
    }
}

/// `t(len) = latency + len / rate` (bytes per µs = MB/s) through two sizes' times
/// (µs): the latency, at least `min_latency`, and the rate.
fn two_sizes(small: f64, t_small: f64, big: f64, t_big: f64, min_latency: f64) -> (f64, f64) {
    let rate = ((big - small) / (t_big - t_small).max(1e-3)).clamp(1.0, 1e5);
    ((t_small - small / rate).max(min_latency), rate)
}

fn fit_flash(q: &Qualification, name: &str) -> Fit {
    let mut basis = Vec::new();
    let small = 4096.0;
    let big = *WRITE_FLUSH_SIZES.last().expect("sizes") as f64;
    let line = |t_small: f64, t_big: f64| two_sizes(small, t_small, big, t_big, 0.5);
    // Medians, not means: a host's hiccups (a preempted thread, a busy neighbour) add a
    // tail no device parameter stands for.
    let (read_lat, read_rate) = line(
        q.random_read_4k.latency.p50_us,
        q.sequential_read_1m.latency.p50_us,
    );
    basis.push((
        "read_latency_us, read_mb_per_s".into(),
        format!(
            "random 4 KiB reads (p50 {:.0} µs) and sequential 1 MiB reads (p50 {:.0} µs)",
            q.random_read_4k.latency.p50_us, q.sequential_read_1m.latency.p50_us
        ),
    ));
    // The 4 KiB writes sent back to back: one right after a flush's wait also pays
    // for waking an idle path, which is no part of the device.
    let w_small = &q.random_write_4k.latency;
    let w_big = &q.write_flush[q.write_flush.len() - 1].write;
    let (write_lat, write_rate) = line(w_small.p50_us, w_big.p50_us);
    basis.push((
        "write_latency_us, write_mb_per_s".into(),
        format!(
            "random 4 KiB writes (p50 {:.0} µs) and 1 MiB writes before a flush (p50 {:.0} µs)",
            w_small.p50_us, w_big.p50_us
        ),
    ));
    // A flush after a small write and after a big one: where the second costs clearly
    // more, the flush writes back what is dirty (a loop image's fdatasync on the
    // host's file system), at the rate the difference gives. Through a loop image the
    // writes to never-written blocks are the ones fitted: a trial's image is sparse.
    let fresh = q.fresh_write_flush.len() >= 2;
    let pairs = if fresh {
        &q.fresh_write_flush
    } else {
        &q.write_flush
    };
    let (first, last) = (&pairs[0], &pairs[pairs.len() - 1]);
    let (f_small, f_big) = (first.flush.p50_us, last.flush.p50_us);
    let (b_small, b_big) = (first.bytes as f64, last.bytes as f64);
    let grows = f_big > f_small * 1.2 && f_big - f_small > 20.0;
    let (flush, flush_rate) = if grows {
        two_sizes(b_small, f_small, b_big, f_big, 0.0)
    } else {
        (f_small, 0.0)
    };
    let on = if fresh {
        " to never-written blocks"
    } else {
        ""
    };
    let (small_name, big_name) = (
        crate::units::format_size(first.bytes),
        crate::units::format_size(last.bytes),
    );
    basis.push((
        if grows {
            "flush_latency_us, flush_mb_per_s"
        } else {
            "flush_latency_us"
        }
        .into(),
        if grows {
            format!("a flush after a {small_name} write{on} (p50 {f_small:.0} µs) and after a {big_name} one (p50 {f_big:.0} µs): it writes back what was written since the last flush")
        } else {
            format!("a flush after a {small_name} write{on}, p50 {f_small:.0} µs (after a {big_name} one {f_big:.0} µs: the same cost)")
        },
    ));
    // A cheap flush is power-loss protection or a disk that ignores flushes: the same
    // speed, opposite fates at a power cut, and only the drive's data sheet tells.
    if q.flush_shape == Some(FlushShape::Cheap) {
        basis.push((
            "power_loss_protection".into(),
            "not measurable: a flush this cheap is power-loss protection or a drive that ignores flushes; set true only if its data sheet says it has protection (the crash lab then keeps its acknowledged writes)".into(),
        ));
    }
    basis.extend(at_path_limits(q, w_small.p50_us, w_big.p50_us, f_small));
    let mut params = toml::Table::new();
    params.insert("read_latency_us".into(), round3(read_lat).into());
    params.insert("write_latency_us".into(), round3(write_lat).into());
    params.insert("flush_latency_us".into(), round3(flush).into());
    params.insert("read_mb_per_s".into(), round3(read_rate).into());
    params.insert("write_mb_per_s".into(), round3(write_rate).into());
    if grows {
        params.insert("flush_mb_per_s".into(), round3(flush_rate).into());
    }
    Fit {
        name: name.into(),
        model: "ssd-sata".into(),
        params,
        basis,
    }
}

/// The figures of an emulated disk that are the emulation path's, not the model's:
/// a latency at the path's floor, a transfer rate at its ceiling. `write_small` and
/// `write_big` are the 4 KiB and 1 MiB writes' medians, `flush` the small flush's.
fn at_path_limits(
    q: &Qualification,
    write_small: f64,
    write_big: f64,
    flush: f64,
) -> Vec<(String, String)> {
    let mut limits = Vec::new();
    // An emulated disk answers no faster than the path to it: a figure at that floor
    // is the path's, and the model's own may be lower.
    if let Some(floor) = q
        .model
        .as_ref()
        .map(|m| m.path_floor_4k_us)
        .filter(|&f| f > 0.0)
    {
        for (key, p50) in [
            ("read_latency_us", q.random_read_4k.latency.p50_us),
            ("write_latency_us", write_small),
            ("flush_latency_us", flush),
        ] {
            if p50 < floor * 1.3 {
                limits.push((
                    key.into(),
                    format!("at the emulation path's floor ({floor:.0} µs per 4 KiB request, p50 {p50:.0} µs): the path's figure; the model's own may be lower"),
                ));
            }
        }
    }
    // The same for a transfer rate: 1 MiB requests that come back within 30% of what
    // the path itself takes for them (the model answering at once) show the path's
    // rate, and the model's may be higher.
    if let Some(m) = q.model.as_ref() {
        for (key, p50, floor) in [
            (
                "read_mb_per_s",
                q.sequential_read_1m.latency.p50_us,
                m.path_floor_1m_read_us,
            ),
            ("write_mb_per_s", write_big, m.path_floor_1m_write_us),
        ] {
            if floor > 0.0 && p50 < floor * 1.3 {
                limits.push((
                    key.into(),
                    format!("at the emulation path's ceiling (1 MiB requests p50 {floor:.0} µs with the model answering at once, {p50:.0} µs timed): the path's figure; the model's own may be higher"),
                ));
            }
        }
    }
    limits
}

fn round3(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return 0.0;
    }
    let mag = 10f64.powi(2 - v.abs().log10().floor() as i32);
    (v * mag).round() / mag
}

/// The entry as TOML to paste into an experiment file, with where each figure came
/// from.
pub fn render_fit(f: &Fit) -> String {
    let mut s = String::from("# fitted by jbench device qualify --fit; each figure from:\n");
    for (k, why) in &f.basis {
        s.push_str(&format!("#   {k}: {why}\n"));
    }
    let mut entry = toml::Table::new();
    entry.insert("model".into(), f.model.clone().into());
    for (k, v) in &f.params {
        entry.insert(k.clone(), v.clone());
    }
    let mut models = toml::Table::new();
    models.insert(f.name.clone(), entry.into());
    let mut top = toml::Table::new();
    top.insert("models".into(), models.into());
    s.push_str(&toml::to_string(&top).unwrap_or_default());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_rounded_to_three_significant_digits() {
        assert_eq!(round3(1234.5), 1230.0);
        assert_eq!(round3(0.012345), 0.0123);
        assert_eq!(round3(68.04), 68.0);
        assert_eq!(round3(f64::NAN), 0.0);
    }

    fn write_flush(bytes: u64, flush_p50: f64) -> crate::qualify::WriteFlush {
        use crate::qualify::words::tests::lat;
        crate::qualify::WriteFlush {
            bytes,
            write: lat(50.0, 100.0),
            flush: lat(flush_p50, flush_p50 * 2.0),
            write_flush: lat(50.0 + flush_p50, 100.0 + flush_p50 * 2.0),
        }
    }

    #[test]
    fn a_flush_that_grows_with_the_write_before_it_writes_back_at_a_rate() {
        let mut q = crate::qualify::words::tests::q(200.0, 400.0, 50.0, 150.0);
        q.through_loop_image = true;
        // 4 KiB then 64 KiB to never-written blocks: 200 and 500 µs, so 61440 bytes
        // cost 300 µs more (204.8 MB/s) and the flush itself 200 - 4096/204.8 = 180.
        q.fresh_write_flush = vec![write_flush(4096, 200.0), write_flush(65536, 500.0)];
        let f = fit(&q, "d");
        assert_eq!(f.params["flush_latency_us"].as_float(), Some(180.0));
        assert_eq!(f.params["flush_mb_per_s"].as_float(), Some(205.0));
        let (key, why) = f
            .basis
            .iter()
            .find(|(k, _)| k.starts_with("flush_latency_us"))
            .unwrap();
        assert_eq!(key, "flush_latency_us, flush_mb_per_s");
        assert!(why.contains("never-written"), "{why}");

        // The same cost after both sizes: a flush is its latency alone.
        q.fresh_write_flush = vec![write_flush(4096, 200.0), write_flush(65536, 210.0)];
        let f = fit(&q, "d");
        assert_eq!(f.params["flush_latency_us"].as_float(), Some(200.0));
        assert!(!f.params.contains_key("flush_mb_per_s"));
        assert!(f.basis.iter().any(|(k, _)| k == "flush_latency_us"));

        // Without the never-written writes (not through a loop image): the write+flush
        // pairs, here one 4 KiB pair.
        q.fresh_write_flush.clear();
        q.through_loop_image = false;
        let f = fit(&q, "d");
        assert_eq!(f.params["flush_latency_us"].as_float(), Some(150.0));
        assert!(!f.params.contains_key("flush_mb_per_s"));
    }

    #[test]
    fn a_rate_at_the_emulation_paths_ceiling_is_said_to_be_the_paths() {
        use crate::qualify::words::tests::lat;
        use crate::qualify::ModelRef;
        let mut q = crate::qualify::words::tests::q(200.0, 400.0, 50.0, 150.0);
        q.random_read_4k.latency = lat(80.0, 160.0);
        q.sequential_read_1m.latency = lat(600.0, 1200.0);
        let model = |read_us: f64| ModelRef {
            name: "nvme".into(),
            base_model: "ssd-sata".into(),
            params: toml::Table::new(),
            path_floor_4k_us: 30.0,
            path_floor_1m_read_us: read_us,
            path_floor_1m_write_us: 10.0,
        };
        let ceiling = |f: &Fit, key: &str| {
            f.basis
                .iter()
                .any(|(k, why)| k == key && why.starts_with("at the emulation path's ceiling"))
        };
        // MiB reads in 600 µs through a path that takes 500 µs itself: the path's.
        q.model = Some(model(500.0));
        let f = fit(&q, "d");
        assert!(ceiling(&f, "read_mb_per_s"), "{:?}", f.basis);
        assert!(!ceiling(&f, "write_mb_per_s"), "{:?}", f.basis);
        // The same read through a path four times faster: the model's.
        q.model = Some(model(150.0));
        assert!(!ceiling(&fit(&q, "d"), "read_mb_per_s"));
        // Not emulated: nothing to compare with.
        q.model = None;
        assert!(!ceiling(&fit(&q, "d"), "read_mb_per_s"));
    }
}
