//! Predicted calibration figures: the request streams `jbench device calibrate` sends,
//! and the rates a model says a QD1 run of them should measure.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{model_by_name, DeviceModel, ModelError, Request, KIB4, MB, MIB1};

/// The request streams `jbench device calibrate` runs, all at queue depth 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// 4 KiB reads at uniformly random aligned offsets.
    RandomRead4k,
    /// 4 KiB writes at random offsets, then one flush (so cached data is paid for).
    RandomWrite4k,
    /// 1 MiB reads, one after another from offset 0.
    SequentialRead1m,
    /// 1 MiB writes from offset 0, then one flush.
    SequentialWrite1m,
    /// 4 KiB appends from offset 0, each followed by a flush (a log's fsync).
    FsyncWrite4k,
}

impl Pattern {
    pub const ALL: [Pattern; 5] = [
        Pattern::RandomRead4k,
        Pattern::RandomWrite4k,
        Pattern::SequentialRead1m,
        Pattern::SequentialWrite1m,
        Pattern::FsyncWrite4k,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Pattern::RandomRead4k => "random read 4K",
            Pattern::RandomWrite4k => "random write 4K",
            Pattern::SequentialRead1m => "sequential read 1M",
            Pattern::SequentialWrite1m => "sequential write 1M",
            Pattern::FsyncWrite4k => "fsync'ed write 4K",
        }
    }

    fn request_len(self) -> u64 {
        match self {
            Pattern::SequentialRead1m | Pattern::SequentialWrite1m => MIB1,
            _ => KIB4,
        }
    }
}

/// One synthetic calibration run: a [`Pattern`]'s request stream over a span, and the
/// host costs around each request. (Not an engine's `workload::Workload`: nothing here
/// touches a file system.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalibrationRun {
    pub pattern: Pattern,
    /// Data requests (flushes not counted).
    pub requests: u64,
    /// Offsets stay below this; sequential runs wrap at it.
    pub span_bytes: u64,
    pub seed: u64,
    /// Host time between one completion and the next request (e.g. the measured FUSE
    /// floor, when the daemon adds the model's delay on top of it). Zero by default.
    pub host_overhead: Duration,
    /// Host time to apply a request to the backing image, which the daemon overlaps
    /// with the model's time: a request takes at least this long. Zero by default.
    pub host_io: Duration,
}

impl CalibrationRun {
    /// Enough requests for a stable figure: random writes fill a 16 MB cache several
    /// times over, so the sustained rate (not the cache's burst) is what is predicted.
    pub fn new(pattern: Pattern, span_bytes: u64) -> Self {
        let requests = match pattern {
            Pattern::RandomWrite4k => 20_000,
            Pattern::SequentialRead1m | Pattern::SequentialWrite1m => 1_000,
            _ => 2_000,
        };
        CalibrationRun {
            pattern,
            requests,
            span_bytes,
            seed: 1,
            host_overhead: Duration::ZERO,
            host_io: Duration::ZERO,
        }
    }
}

/// What a calibration run should measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub requests: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub iops: f64,
    pub mb_per_s: f64,
}

impl CalibrationRun {
    /// The request stream of this run, flushes included: what [`predicted`] feeds
    /// the model and what `jbench device calibrate` sends the emulated device.
    pub fn stream(&self) -> Vec<Request> {
        let w = self;
        let len = w.pattern.request_len();
        let slots = (w.span_bytes / len).max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(w.seed);
        let mut out = Vec::with_capacity(w.requests as usize + 1);
        for i in 0..w.requests {
            out.push(match w.pattern {
                Pattern::RandomRead4k => Request::read(rng.gen_range(0..slots) * len, len),
                Pattern::RandomWrite4k => Request::write(rng.gen_range(0..slots) * len, len),
                Pattern::SequentialRead1m => Request::read((i % slots) * len, len),
                Pattern::SequentialWrite1m | Pattern::FsyncWrite4k => {
                    Request::write((i % slots) * len, len)
                }
            });
            if w.pattern == Pattern::FsyncWrite4k {
                out.push(Request::flush());
            }
        }
        if matches!(
            w.pattern,
            Pattern::RandomWrite4k | Pattern::SequentialWrite1m
        ) {
            out.push(Request::flush());
        }
        out
    }

    /// Bytes of one data request.
    pub fn request_len(&self) -> u64 {
        self.pattern.request_len()
    }
}

/// Run the stream of `run` through `model` (which it changes: pass a fresh one) and
/// report the rates a QD1 run of the same stream would measure.
pub fn predicted(model: &mut dyn DeviceModel, run: &CalibrationRun) -> Prediction {
    let w = run;
    let mut now = Duration::ZERO;
    for req in w.stream() {
        now += model.service(&req, now).duration.max(w.host_io) + w.host_overhead;
    }
    // A model that adds nothing (ram) predicts an unbounded rate: infinity.
    let elapsed_s = now.as_secs_f64();
    let bytes = w.requests.saturating_mul(w.pattern.request_len());
    Prediction {
        requests: w.requests,
        bytes,
        elapsed: now,
        iops: w.requests as f64 / elapsed_s,
        mb_per_s: bytes as f64 / MB / elapsed_s,
    }
}

/// The controller cache `predicted_set` gives a model with a `cache_bytes` parameter
/// for its extra random-write row.
pub const SMALL_CACHE: u64 = 16 << 20;

/// The calibration figures of model `name`: every [`Pattern`] over the whole model
/// (1 GiB for position-free models), for a model with a write cache also random
/// writes with `write_cache = false`, and for one with a controller cache
/// (`cache_bytes`) random writes through a cache of [`SMALL_CACHE`]. Each run uses a
/// fresh model.
pub fn predicted_set(
    name: &str,
    params: Option<&toml::Table>,
) -> Result<Vec<(String, Prediction)>, ModelError> {
    let span = model_by_name(name, params)?
        .capacity_bytes()
        .unwrap_or(1 << 30);
    let mut out = Vec::new();
    for pattern in Pattern::ALL {
        let mut model = model_by_name(name, params)?;
        out.push((
            pattern.label().to_string(),
            predicted(model.as_mut(), &CalibrationRun::new(pattern, span)),
        ));
    }
    // A controller cache of 1 GiB absorbs every random-write stream above whole: a
    // 16 MiB one shows the destage the writes pay once it is full.
    let mut small = params.cloned().unwrap_or_default();
    small.insert(
        "cache_bytes".into(),
        toml::Value::Integer(SMALL_CACHE as i64),
    );
    if let Ok(mut model) = model_by_name(name, Some(&small)) {
        out.push((
            "random write 4K, 16 MiB cache".into(),
            predicted(
                model.as_mut(),
                &CalibrationRun::new(Pattern::RandomWrite4k, span),
            ),
        ));
    }
    let mut no_cache = params.cloned().unwrap_or_default();
    no_cache.insert("write_cache".into(), toml::Value::Boolean(false));
    if let Ok(mut model) = model_by_name(name, Some(&no_cache)) {
        let w = CalibrationRun::new(Pattern::RandomWrite4k, span);
        let w = CalibrationRun {
            requests: 2_000,
            ..w
        };
        out.push((
            "random write 4K, no cache".into(),
            predicted(model.as_mut(), &w),
        ));
    }
    Ok(out)
}
