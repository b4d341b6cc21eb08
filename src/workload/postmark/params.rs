//! The `[[workload]] kind = "postmark"` table and the engine's [`Workload`] face
//! (parameters as recorded, names, peak use).

use super::*;

/// Keys of a `kind = "postmark"` table.
pub const KEYS: [&str; 11] = [
    "size",
    "number",
    "transactions",
    "subdirectories",
    "read",
    "write",
    "buffering",
    "bias_read",
    "bias_create",
    "seed",
    "locations",
];

/// Simulating this many transactions up front costs well under a second; larger
/// runs are checked for "out of files" when they happen.
pub(super) const PRECHECK_LIMIT: u64 = 5_000_000;

pub fn from_table(t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    Ok(Arc::new(parse_table(t)?))
}

/// A configuration from a `[[workload]]` table; PostMark's defaults for absent keys.
pub fn parse_table(t: &toml::Table) -> Result<Postmark, ParamError> {
    reject_unknown(t, &KEYS)?;
    let d = Postmark::default();
    let u32_key = |key: &str, default: u32| -> Result<u32, ParamError> {
        let v = table_u64(t, key, u64::from(default))?;
        u32::try_from(v).map_err(|_| ParamError::new(key, format!("{v} is too large")))
    };
    let (size_low, size_high) = parse_size(t.get("size"), (d.size_low, d.size_high))?;
    let cfg = Postmark {
        size_low,
        size_high,
        number: u32_key("number", d.number)?,
        transactions: u32_key("transactions", d.transactions)?,
        subdirectories: u32_key("subdirectories", d.subdirectories)?,
        read_block: u32_key("read", d.read_block)?,
        write_block: u32_key("write", d.write_block)?,
        buffering: crate::workload::table_bool(t, "buffering", d.buffering)?,
        bias_read: parse_bias(t, "bias_read", d.bias_read)?,
        bias_create: parse_bias(t, "bias_create", d.bias_create)?,
        seed: u32_key("seed", d.seed)?,
        locations: parse_locations(t.get("locations"))?,
        terse: false,
    };
    cfg.validate()?;
    if u64::from(cfg.transactions) + u64::from(cfg.number) <= PRECHECK_LIMIT {
        let tally = simulate(&cfg);
        if tally.out_of_files(&cfg) {
            return Err(ParamError::new(
                "transactions",
                out_of_files_message(&cfg, tally.transactions_done),
            ));
        }
    }
    Ok(cfg)
}

pub(super) fn out_of_files_message(cfg: &Postmark, done: u32) -> String {
    format!(
        "PostMark runs out of files after {done} of {} transactions (every file deleted); \
         increase `number` or decrease `transactions`",
        cfg.transactions
    )
}

pub(super) fn parse_size(
    v: Option<&toml::Value>,
    default: (u32, u32),
) -> Result<(u32, u32), ParamError> {
    let bad = |v: &dyn std::fmt::Display| {
        ParamError::new(
            "size",
            format!("expected [low, high] or one size in bytes, found {v}"),
        )
    };
    let int = |v: &toml::Value| match v {
        toml::Value::Integer(i) if *i >= 0 && *i <= i64::from(u32::MAX) => Ok(*i as u32),
        other => Err(bad(other)),
    };
    match v {
        None => Ok(default),
        Some(toml::Value::Array(a)) if a.len() == 2 => Ok((int(&a[0])?, int(&a[1])?)),
        Some(toml::Value::Array(a)) if a.len() == 1 => Ok((int(&a[0])?, int(&a[0])?)),
        Some(one @ toml::Value::Integer(_)) => int(one).map(|s| (s, s)),
        Some(other) => Err(bad(other)),
    }
}

pub(super) fn parse_bias(t: &toml::Table, key: &str, default: i32) -> Result<i32, ParamError> {
    match t.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(i)) if (-1..=10).contains(i) => Ok(*i as i32),
        Some(v) => Err(ParamError::new(
            key,
            format!("expected -1 (disabled) or 0 to 10, found {v}"),
        )),
    }
}

/// `locations = [{ path = "a", weight = 2 }, "b"]`: relative paths that stay
/// inside the workload directory, so the run never writes outside the file system
/// the rig prepared.
pub(super) fn parse_locations(v: Option<&toml::Value>) -> Result<Vec<Location>, ParamError> {
    let err = |m: String| ParamError::new("locations", m);
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let toml::Value::Array(items) = v else {
        return Err(err(format!(
            "expected an array of {{ path, weight }}, found {v}"
        )));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let (path, weight) = match item {
            toml::Value::String(s) => (s.clone(), 1),
            toml::Value::Table(t) => {
                if let Some(k) = t.keys().find(|k| *k != "path" && *k != "weight") {
                    return Err(err(format!(
                        "unknown key `{k}` in a location (known: path, weight)"
                    )));
                }
                let Some(toml::Value::String(path)) = t.get("path") else {
                    return Err(err(format!("a location needs `path = \"...\"`: {item}")));
                };
                let weight = match t.get("weight") {
                    None => 1,
                    Some(toml::Value::Integer(w)) if *w >= 1 && *w <= INT_MAX as i64 => *w as u32,
                    Some(w) => return Err(err(format!("weight must be >= 1, found {w}"))),
                };
                (path.clone(), weight)
            }
            other => return Err(err(format!("expected {{ path, weight }}, found {other}"))),
        };
        check_location(&path).map_err(err)?;
        out.push(Location { path, weight });
    }
    Ok(out)
}

impl Workload for Postmark {
    fn kind(&self) -> &'static str {
        "postmark"
    }

    fn params(&self) -> serde_json::Value {
        let mut p = serde_json::json!({
            "size": [self.size_low, self.size_high],
            "number": self.number,
            "transactions": self.transactions,
            "subdirectories": self.subdirectories,
            "read": self.read_block,
            "write": self.write_block,
            "buffering": self.buffering,
            "bias_read": self.bias_read,
            "bias_create": self.bias_create,
            "seed": self.seed,
        });
        if !self.locations.is_empty() {
            p["locations"] = self
                .locations
                .iter()
                .map(|l| serde_json::json!({"path": l.path, "weight": l.weight}))
                .collect();
        }
        p
    }

    fn default_name(&self) -> String {
        format!(
            "postmark-s{}-{}-n{}-t{}",
            self.size_low, self.size_high, self.number, self.transactions
        )
    }

    fn phase_names(&self) -> Vec<String> {
        ["create", "transactions", "delete"]
            .map(String::from)
            .to_vec()
    }

    /// Every file alive at once at its largest (`high`); a bound, not a forecast.
    fn peak_data_bytes(&self) -> u64 {
        self.peak_files().saturating_mul(u64::from(self.size_high))
    }

    fn peak_inodes(&self) -> u64 {
        self.peak_files() + self.subdir_count() + self.locations.len() as u64
    }

    /// The initial files, then transactions that each create or delete a file and
    /// read or append to one, at the mean file size; nothing is synced.
    fn work(&self) -> crate::workload::work::Work {
        let mean = (u64::from(self.size_low) + u64::from(self.size_high)) / 2;
        let t = u64::from(self.transactions);
        let files = u64::from(self.number).saturating_add(t / 2);
        crate::workload::work::Work {
            bytes_written: files.saturating_mul(mean),
            metadata_ops: files.saturating_mul(2).saturating_add(t),
            scattered_writeback: true,
            ..Default::default()
        }
    }

    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        let outcome = run_in(self, dir, ctl)?;
        if outcome.tally.out_of_files(self) {
            bail!(
                "postmark ({}): {}",
                self.describe(),
                out_of_files_message(self, outcome.tally.transactions_done)
            );
        }
        Ok(outcome.phases)
    }
}
