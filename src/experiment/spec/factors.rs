//! The factors of the experiment matrix, each declared once in [`FACTORS`]: its key,
//! its default, how its values are read and checked, how a value sets a
//! [`Config`], how it shows in labels and how it is written to the resolved spec.
//! The matrix (`matrix.rs`), the labels and the stored spec are all derived from
//! this table, so a new factor is one entry here (plus its `Config` field, the raw
//! key in `raw.rs`, the rig code that uses it, and its line in docs/experiment.md).

use super::*;

/// One factor of the matrix: a `[filesystem]`, `[journal]` or top-level key that
/// takes one value or a list of them.
pub(super) struct Factor {
    /// The key as errors and the docs spell it: `journal.size`, `memory_limit`. The
    /// part before the dot is the table it is written in, in the experiment file and
    /// in the resolved spec.
    pub key: &'static str,
    /// Reads the key's values (or its default when the key is absent) into a column.
    pub read: fn(&Env<'_>, &Layers<'_>) -> Result<Column, SpecError>,
    /// Where this factor goes in a label, lower first: the journal's factors lead,
    /// because they are what the studies vary.
    pub label_rank: u8,
    /// Its part of a label, used when it varies; empty where it does not apply.
    pub label: fn(&Config) -> String,
    /// Its value in the resolved spec's `[[config]]` table; `None` leaves the key out.
    pub store: fn(&Config) -> Option<toml::Value>,
}

/// The factors in matrix order: the last one varies fastest across the configurations.
pub(super) static FACTORS: [Factor; 19] = [
    Factor {
        key: "filesystem.type",
        read: |e, l| {
            let parse = |t: &String| FsType::parse(t);
            e.list(
                l.get(|s| &s.filesystem.fs_type),
                vec![FsType::Ext4],
                parse,
                |c, v| c.fs_type = v,
            )
        },
        label_rank: 5,
        label: |c| c.fs_type.to_string(),
        store: |c| Some(text(c.fs_type.as_str())),
    },
    Factor {
        key: "filesystem.size",
        read: |e, l| {
            e.list(
                l.get(|s| &s.filesystem.size),
                vec![8 << 30],
                fs_size,
                |c, v| c.fs_size = v,
            )
        },
        label_rank: 9,
        label: |c| format!("fs{}", format_size(c.fs_size)),
        store: |c| Some(text(&format_size(c.fs_size))),
    },
    Factor {
        key: "filesystem.device",
        read: |e, l| {
            let parse = |d: &String| device_path(d).map(Some);
            e.list(
                l.get(|s| &s.filesystem.device),
                vec![None],
                parse,
                |c, v| c.fs_device = v,
            )
        },
        label_rank: 10,
        label: |c| opt_path(&c.fs_device),
        store: |c| c.fs_device.as_ref().map(|d| text(&d.display().to_string())),
    },
    Factor {
        key: "filesystem.mkfs_options",
        read: |_, l| {
            Ok(option_sets(
                l.get(|s| &s.filesystem.mkfs_options),
                |c, v| c.mkfs_options = v,
            ))
        },
        label_rank: 11,
        label: |c| format!("mkfs[{}]", c.mkfs_options.join(" ")),
        store: |c| Some(texts(&c.mkfs_options)),
    },
    Factor {
        key: "filesystem.mount_options",
        read: |_, l| {
            Ok(option_sets(
                l.get(|s| &s.filesystem.mount_options),
                |c, v| c.mount_options = v,
            ))
        },
        label_rank: 12,
        label: |c| format!("mount[{}]", c.mount_options.join(",")),
        store: |c| Some(texts(&c.mount_options)),
    },
    Factor {
        key: "filesystem.device_model",
        read: |e, l| {
            let parse = |n: &String| model_of(e.models, n).map(Some);
            e.list(
                l.get(|s| &s.filesystem.device_model),
                vec![None],
                parse,
                |c, v| c.fs_model = v,
            )
        },
        label_rank: 2,
        label: |c| {
            format!(
                "fs={}",
                c.fs_model.as_ref().map_or(UNEMULATED, |m| m.name.as_str())
            )
        },
        store: |c| c.fs_model.as_ref().map(|m| text(&m.name)),
    },
    Factor {
        key: "filesystem.second_size",
        read: |e, l| {
            let parse = |v: &SizeValue| fs_size(v).map(Some);
            e.list(
                l.get(|s| &s.filesystem.second_size),
                vec![None],
                parse,
                |c, v| c.second_fs_size = v,
            )
        },
        label_rank: 17,
        label: |c| match c.second_fs_size {
            Some(s) => format!("second-fs{}", format_size(s)),
            None => "one-fs".into(),
        },
        store: |c| c.second_fs_size.map(|s| text(&format_size(s))),
    },
    Factor {
        key: "filesystem.second_device_model",
        // What was asked for; `matrix::settle_second_fs_model` gives a second file
        // system the file system's model when none was named.
        read: |e, l| {
            let parse = |n: &String| model_of(e.models, n).map(Some);
            e.list(
                l.get(|s| &s.filesystem.second_device_model),
                vec![None],
                parse,
                |c, v| c.second_fs_model = v,
            )
        },
        label_rank: 18,
        label: |c| match (c.second_fs_size, &c.second_fs_model) {
            (Some(_), m) => format!(
                "second={}",
                m.as_ref().map_or(UNEMULATED, |m| m.name.as_str())
            ),
            (None, _) => String::new(),
        },
        store: |c| c.second_fs_model.as_ref().map(|m| text(&m.name)),
    },
    Factor {
        key: "memory_limit",
        read: |e, l| {
            let parse = |v: &SizeValue| memory_limit(v).map(Some);
            e.list(l.get(|s| s.memory_limit), vec![None], parse, |c, v| {
                c.memory_limit = v
            })
        },
        label_rank: 13,
        label: |c| {
            c.memory_limit
                .map(|m| format!("mem{}", format_size(m)))
                .unwrap_or_else(|| "mem-unlimited".into())
        },
        store: |c| c.memory_limit.map(|m| text(&format_size(m))),
    },
    Factor {
        key: "journal.placement",
        read: |e, l| {
            // A journal device given without a placement means that device.
            let default = if l.get(|s| &s.journal.device).is_some() {
                Placement::Device
            } else {
                Placement::Internal
            };
            let parse = |p: &String| Placement::parse(p);
            e.list(
                l.get(|s| &s.journal.placement),
                vec![default],
                parse,
                |c, v| c.placement = v,
            )
        },
        label_rank: 0,
        label: |c| c.placement.to_string(),
        store: |c| Some(text(c.placement.as_str())),
    },
    Factor {
        key: "journal.device_model",
        // What was asked for: which disk the journal then gets depends on the placement
        // (`matrix::settle_journal_model`), and `None` means "not given".
        read: |e, l| {
            let parse = |n: &String| model_of(e.models, n).map(Some);
            e.list(
                l.get(|s| &s.journal.device_model),
                vec![None],
                parse,
                |c, v| c.journal_model = v,
            )
        },
        label_rank: 1,
        label: |c| match c.placement {
            Placement::SecondDisk | Placement::Ramdisk => format!(
                "journal={}",
                c.journal_model
                    .as_ref()
                    .map_or(UNEMULATED, |m| m.name.as_str())
            ),
            _ => String::new(),
        },
        // Only where the journal has a disk of its own: an internal or same-disk journal
        // is on the file system's (emulated) disk.
        store: |c| c.journal_model.as_ref().map(|m| text(&m.name)),
    },
    Factor {
        key: "journal.size",
        read: |e, l| {
            e.list(
                l.get(|s| &s.journal.size),
                vec![16 << 20],
                journal_size,
                |c, v| c.journal_size = v,
            )
        },
        label_rank: 3,
        label: |c| format_size(c.journal_size),
        store: |c| Some(text(&format_size(c.journal_size))),
    },
    Factor {
        key: "journal.mode",
        read: |e, l| {
            let parse = |m: &String| DataMode::parse(m);
            e.list(
                l.get(|s| &s.journal.mode),
                vec![DataMode::Ordered],
                parse,
                |c, v| c.mode = v,
            )
        },
        label_rank: 4,
        label: |c| c.mode_label().to_string(),
        store: |c| Some(text(c.mode.as_str())),
    },
    Factor {
        key: "journal.device",
        read: |e, l| {
            let parse = |d: &String| device_path(d).map(Some);
            e.list(l.get(|s| &s.journal.device), vec![None], parse, |c, v| {
                c.journal_device = v
            })
        },
        label_rank: 8,
        label: |c| opt_path(&c.journal_device),
        store: |c| {
            c.journal_device
                .as_ref()
                .map(|d| text(&d.display().to_string()))
        },
    },
    Factor {
        key: "journal.second_disk_dir",
        read: |e, l| {
            let parse = |d: &String| absolute_dir(d).map(Some);
            e.list(
                l.get(|s| &s.journal.second_disk_dir),
                vec![None],
                parse,
                |c, v| c.second_disk_dir = v,
            )
        },
        label_rank: 14,
        label: |c| opt_path(&c.second_disk_dir),
        store: |c| {
            c.second_disk_dir
                .as_ref()
                .map(|d| text(&d.display().to_string()))
        },
    },
    Factor {
        key: "journal.ramdisk_dir",
        read: |e, l| {
            let default = vec![PathBuf::from("/dev/shm")];
            e.list(
                l.get(|s| &s.journal.ramdisk_dir),
                default,
                absolute_dir,
                |c, v| c.ramdisk_dir = v,
            )
        },
        label_rank: 15,
        label: |c| c.ramdisk_dir.display().to_string(),
        store: |c| Some(text(&c.ramdisk_dir.display().to_string())),
    },
    Factor {
        key: "journal.ramdisk_size",
        read: |e, l| {
            let parse = |v: &SizeValue| size_in(v, MIN_JOURNAL_SIZE, MAX_MEMORY).map(Some);
            e.list(
                l.get(|s| &s.journal.ramdisk_size),
                vec![None],
                parse,
                |c, v| c.ramdisk_size = v,
            )
        },
        label_rank: 16,
        label: |c| match (c.placement, c.ramdisk_size) {
            (Placement::Ramdisk, Some(s)) => format!("ramdisk{}", format_size(s)),
            (Placement::Ramdisk, None) => "ramdisk-journal-sized".into(),
            _ => String::new(),
        },
        store: |c| c.ramdisk_size.map(|r| text(&format_size(r))),
    },
    Factor {
        key: "journal.fast_commit",
        read: |e, l| {
            let parse = |b: &bool| Ok(*b);
            e.list(
                l.get(|s| &s.journal.fast_commit),
                vec![false],
                parse,
                |c, v| c.fast_commit = v,
            )
        },
        label_rank: 6,
        label: |c| {
            if c.fast_commit {
                "fast_commit".into()
            } else {
                "no-fast_commit".into()
            }
        },
        store: |c| Some(toml::Value::Boolean(c.fast_commit)),
    },
    Factor {
        key: "journal.commit",
        read: |e, l| {
            let parse = |v: &String| commit_seconds(v).map(Some);
            e.list(l.get(|s| &s.journal.commit), vec![None], parse, |c, v| {
                c.commit_seconds = v
            })
        },
        label_rank: 7,
        label: |c| {
            c.commit_seconds
                .map(|s| format!("commit={s}"))
                .unwrap_or_else(|| "commit=default".into())
        },
        store: |c| c.commit_seconds.map(|secs| text(&format!("{secs}s"))),
    },
];

/// The factor named `key`; a key that is not in [`FACTORS`] is a bug in the caller.
pub(super) fn position(key: &str) -> usize {
    FACTORS
        .iter()
        .position(|f| f.key == key)
        .unwrap_or_else(|| panic!("`{key}` is not a factor of spec::factors::FACTORS"))
}

/// The factors in the order they are read. Top-level keys come after the sections'
/// keys, so that of several bad keys the same one is reported first whatever the
/// matrix order is.
pub(super) fn read_order() -> impl Iterator<Item = usize> {
    let sectioned = |i: &usize| FACTORS[*i].key.contains('.');
    (0..FACTORS.len())
        .filter(sectioned)
        .chain((0..FACTORS.len()).filter(move |i| !sectioned(i)))
}

/// The factors in label order.
pub(super) fn label_order() -> Vec<&'static Factor> {
    let mut order: Vec<&Factor> = FACTORS.iter().collect();
    order.sort_by_key(|f| f.label_rank);
    order
}

/// The sections one matrix is read from: the base `[filesystem]`, `[journal]` and
/// top-level keys, and a `[[config]]` table's own, which override them key by key.
pub(super) struct Layers<'a> {
    pub over: Option<Sections<'a>>,
    pub base: Sections<'a>,
}

/// The factor keys of one layer.
#[derive(Clone, Copy)]
pub(super) struct Sections<'a> {
    pub filesystem: &'a RawFilesystem,
    pub journal: &'a RawJournal,
    pub memory_limit: &'a Key<OneOrMany<SizeValue>>,
}

impl<'a> Layers<'a> {
    /// The key as the `[[config]]` table gives it, else as the base sections do.
    pub fn get<T>(&self, pick: impl Fn(Sections<'a>) -> &'a Key<T>) -> &'a Key<T> {
        match self.over.map(&pick) {
            Some(over @ Some(_)) => over,
            _ => pick(self.base),
        }
    }
}

/// What reading a factor needs besides its key's value.
pub(super) struct Env<'a> {
    pub ctx: &'a Ctx<'a>,
    pub models: &'a BTreeMap<String, DeviceModelSpec>,
    /// The factor's key, to blame in errors.
    pub key: &'static str,
}

/// One factor's values in a matrix: how many there are, where the key was written
/// (to blame in errors about combinations), and how the i-th value sets a configuration.
pub(super) struct Column {
    pub span: Option<Range<usize>>,
    pub len: usize,
    pub set: SetValue,
}

/// Sets the i-th value of a column in a configuration.
pub(super) type SetValue = Box<dyn Fn(&mut Config, usize)>;

impl Column {
    fn new<T: Clone + 'static>(
        span: Option<Range<usize>>,
        values: Vec<T>,
        set: fn(&mut Config, T),
    ) -> Column {
        Column {
            span,
            len: values.len(),
            set: Box::new(move |c, i| set(c, values[i].clone())),
        }
    }
}

impl Env<'_> {
    /// A list-valued key: each value converted (an error names the key and its line),
    /// or `default` when the key is absent.
    fn list<R: Clone, T: Clone + 'static>(
        &self,
        raw: &Key<OneOrMany<R>>,
        default: Vec<T>,
        mut convert: impl FnMut(&R) -> Result<T, String>,
        set: fn(&mut Config, T),
    ) -> Result<Column, SpecError> {
        let Some(s) = raw else {
            return Ok(Column::new(None, default, set));
        };
        let items = s.get_ref().to_vec();
        if items.is_empty() {
            return Err(self
                .ctx
                .at(s, self.key, "the list is empty; give at least one value"));
        }
        let values = items
            .iter()
            .map(|v| convert(v).map_err(|m| self.ctx.at(s, self.key, m)))
            .collect::<Result<Vec<T>, _>>()?;
        Ok(Column::new(Some(s.span()), values, set))
    }
}

/// `mkfs_options`/`mount_options`: one option set, or a list of them.
fn option_sets(raw: &Key<OptionSets>, set: fn(&mut Config, Vec<String>)) -> Column {
    match raw {
        None => Column::new(None, vec![Vec::new()], set),
        Some(s) => Column::new(Some(s.span()), s.get_ref().to_sets(), set),
    }
}

fn text(x: &str) -> toml::Value {
    toml::Value::String(x.to_string())
}

fn texts(v: &[String]) -> toml::Value {
    toml::Value::Array(v.iter().map(|x| text(x)).collect())
}

/// The label value of a disk that is not emulated (a plain loop device, tmpfs or a real
/// device), when configurations with and without a model are compared.
const UNEMULATED: &str = "unemulated";

fn opt_path(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "image".into())
}

fn size_of(v: &SizeValue) -> Result<u64, String> {
    match v {
        SizeValue::Bytes(b) => {
            u64::try_from(*b).map_err(|_| format!("{b} is not a size: it is negative"))
        }
        SizeValue::Text(t) => parse_size(t),
    }
}

/// A size that must lie in `min..=max`; the error says the allowed range.
fn size_in(v: &SizeValue, min: u64, max: u64) -> Result<u64, String> {
    let s = size_of(v)?;
    crate::units::check_size_range(s, min, max).map_err(|m| {
        let written = match v {
            SizeValue::Bytes(b) => b.to_string(),
            SizeValue::Text(t) => t.trim().to_string(),
        };
        format!("`{written}` {m}")
    })?;
    Ok(s)
}

fn fs_size(v: &SizeValue) -> Result<u64, String> {
    let s = size_of(v)?;
    if s < MIN_FS_SIZE {
        return Err(format!(
            "{} is too small; a file system needs at least {} (allowed {} to {})",
            format_size(s),
            format_size(MIN_FS_SIZE),
            format_size(MIN_FS_SIZE),
            format_size(MAX_FS_SIZE)
        ));
    }
    size_in(v, MIN_FS_SIZE, MAX_FS_SIZE)
}

fn journal_size(v: &SizeValue) -> Result<u64, String> {
    let s = size_of(v)?;
    if s < MIN_JOURNAL_SIZE {
        return Err(format!(
            "{} is too small; a journal needs at least {} (1024 blocks of 4 KiB; allowed {} to {})",
            format_size(s),
            format_size(MIN_JOURNAL_SIZE),
            format_size(MIN_JOURNAL_SIZE),
            crate::units::describe_size(MAX_JOURNAL_SIZE)
        ));
    }
    if s > MAX_JOURNAL_SIZE {
        return Err(format!(
            "{} is larger than mke2fs allows ({} blocks of 4 KiB; allowed {} to {})",
            format_size(s),
            MAX_JOURNAL_SIZE / 4096,
            format_size(MIN_JOURNAL_SIZE),
            crate::units::describe_size(MAX_JOURNAL_SIZE)
        ));
    }
    if s % 4096 != 0 {
        return Err(format!("{s} bytes is not a whole number of 4 KiB blocks"));
    }
    Ok(s)
}

fn memory_limit(v: &SizeValue) -> Result<u64, String> {
    let s = size_of(v)?;
    if s < MIN_MEMORY_LIMIT {
        return Err(format!(
            "{} is too little memory to run a workload in; use at least {} (allowed {} to {})",
            format_size(s),
            format_size(MIN_MEMORY_LIMIT),
            format_size(MIN_MEMORY_LIMIT),
            format_size(MAX_MEMORY)
        ));
    }
    size_in(v, MIN_MEMORY_LIMIT, MAX_MEMORY)
}

/// `commit = "30s"`: whole seconds the kernel accepts.
fn commit_seconds(v: &String) -> Result<u32, String> {
    let range = format!("allowed 1s to {MAX_COMMIT_SECONDS}s, the most the kernel takes");
    let d = parse_duration(v).map_err(|m| format!("{m}; {range}"))?;
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 || secs == 0 {
        return Err(format!(
            "`{v}` must be a whole number of seconds, at least 1s ({range})"
        ));
    }
    if secs > MAX_COMMIT_SECONDS {
        return Err(format!("`{v}` is out of range: {range} (INT_MAX / HZ)"));
    }
    u32::try_from(secs).map_err(|_| format!("`{v}`: {range}"))
}

fn device_path(d: &String) -> Result<PathBuf, String> {
    if !d.starts_with("/dev/") {
        return Err(format!("`{d}` is not a device path (expected /dev/...)"));
    }
    Ok(PathBuf::from(d))
}

fn absolute_dir(d: &String) -> Result<PathBuf, String> {
    if !Path::new(d).is_absolute() {
        return Err(format!("`{d}` must be an absolute path"));
    }
    Ok(PathBuf::from(d))
}
