//! iozone's size units, the `[[workload]] kind = "iozone"` table and the engine's
//! [`Workload`] face (parameters as recorded, names, peak use).

use super::*;

/// iozone's `-s`/`-r` units: a bare number is KiB; `k`, `m`, `g` suffixes (any case)
/// are KiB, MiB, GiB. `4m` = 4 MiB, `75m`, `1g`, `512` = 512 KiB.
pub fn parse_iozone_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_lowercase() {
                'k' => 10,
                'm' => 20,
                'g' => 30,
                _ => {
                    return Err(format!(
                        "`{text}`: unknown unit `{c}` (iozone takes k, m or g)"
                    ))
                }
            };
            (&t[..i], shift)
        }
        _ => (t, 10),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (use e.g. 512, 4k, 75m, 1g)"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// A byte count in iozone's own units, as its command line takes it.
pub fn iozone_size(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{}g", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}m", bytes >> 20)
    } else if bytes.is_multiple_of(1 << 10) {
        format!("{}k", bytes >> 10)
    } else {
        // iozone cannot express it; the KiB figure it would round to, marked.
        format!("{}k(+{}B)", bytes >> 10, bytes % 1024)
    }
}

/// A size for `params()`: the compact string when it parses back exactly, else bytes.
pub(super) fn size_param(bytes: u64) -> serde_json::Value {
    let s = format_size(bytes);
    if parse_size(&s) == Ok(bytes) {
        serde_json::Value::String(s)
    } else {
        serde_json::Value::from(bytes)
    }
}

/// `tests = ["write", "read"]`: iozone's `-i 0` and `-i 1`.
pub(super) fn table_tests(t: &toml::Table) -> Result<(bool, bool), ParamError> {
    let Some(v) = t.get("tests") else {
        return Ok((true, true));
    };
    let bad = || {
        ParamError::new(
            "tests",
            format!("expected a list of \"write\" and \"read\", found {v}"),
        )
    };
    let list = v.as_array().ok_or_else(bad)?;
    let (mut write, mut read) = (false, false);
    for item in list {
        let slot = match item.as_str() {
            Some("write") => &mut write,
            Some("read") => &mut read,
            _ => return Err(bad()),
        };
        if *slot {
            return Err(ParamError::new("tests", format!("{item} is listed twice")));
        }
        *slot = true;
    }
    Ok((write, read))
}

/// Keys of a `kind = "iozone"` table.
pub const KEYS: [&str; 7] = [
    "record",
    "size",
    "tests",
    "osync",
    "flush",
    "threads",
    "stonewall",
];

impl Iozone {
    pub fn from_table(t: &toml::Table) -> Result<Self, ParamError> {
        crate::workload::reject_unknown(t, &KEYS)?;
        let d = Iozone::default();
        let (write, read) = table_tests(t)?;
        let threads = crate::workload::table_u64(t, "threads", u64::from(d.threads))?;
        let io = Iozone {
            record: table_size(t, "record", d.record)?,
            size: table_size(t, "size", d.size)?,
            write,
            read,
            osync: table_bool(t, "osync", d.osync)?,
            flush: table_bool(t, "flush", d.flush)?,
            threads: u32::try_from(threads)
                .map_err(|_| ParamError::new("threads", format!("{threads} is too large")))?,
            stonewall: table_bool(t, "stonewall", d.stonewall)?,
        };
        io.validate()?;
        Ok(io)
    }
}

pub fn from_table(t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    Ok(Arc::new(Iozone::from_table(t)?))
}

impl Workload for Iozone {
    fn kind(&self) -> &'static str {
        "iozone"
    }

    fn params(&self) -> serde_json::Value {
        let tests: Vec<&str> = [(self.write, "write"), (self.read, "read")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        serde_json::json!({
            "record": size_param(self.record),
            "size": size_param(self.size),
            "tests": tests,
            "osync": self.osync,
            "flush": self.flush,
            "threads": self.threads,
            "stonewall": self.stonewall,
        })
    }

    fn default_name(&self) -> String {
        let mut s = format!(
            "iozone-r{}-s{}",
            format_size(self.record),
            format_size(self.size)
        );
        if self.osync {
            s.push_str("-o");
        }
        if self.flush {
            s.push_str("-e");
        }
        if self.throughput_mode() {
            let _ = write!(s, "-t{}", self.threads);
        }
        s
    }

    fn phase_names(&self) -> Vec<String> {
        self.phases()
            .into_iter()
            .map(|p| p.name().to_string())
            .collect()
    }

    fn peak_data_bytes(&self) -> u64 {
        u64::from(self.threads).saturating_mul(self.size)
    }

    fn peak_inodes(&self) -> u64 {
        u64::from(self.threads)
    }

    /// Write and rewrite put the file on the disk twice; read and re-read read it
    /// twice, from the page cache when it fits. `-o` makes every record a commit, `-e`
    /// adds one fsync per pass.
    fn work(&self) -> crate::workload::work::Work {
        let data = self.peak_data_bytes();
        let records = data.div_ceil(self.record.max(1));
        let mut w = crate::workload::work::Work {
            metadata_ops: 2 * u64::from(self.threads),
            ..Default::default()
        };
        if self.write {
            w.bytes_written = data.saturating_mul(2);
            if self.osync {
                w.syncs = records.saturating_mul(2);
            } else if self.flush {
                w.syncs = 2 * u64::from(self.threads);
            }
        }
        if self.read {
            w.bytes_read_back = data.saturating_mul(2);
        }
        w
    }

    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        self.run_in(dir, ctl, false)
    }
}
