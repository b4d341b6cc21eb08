//! The directories a run works in: checked before anything is made (no links out of
//! `--dir`, no name the run would create and delete), made when missing, and removed
//! again when the run made them.

use std::os::unix::fs::DirBuilderExt;

use super::*;

/// Directories a run uses and the ones it had to make (removed afterwards).
#[derive(Default)]
pub(super) struct Dirs {
    pub(super) locations: Vec<PathBuf>,
    pub(super) made: Vec<PathBuf>,
    pub(super) subdirs: Vec<PathBuf>,
}

impl Dirs {
    /// Resolves the locations below `dir`, makes missing ones, then PostMark's `s0..`
    /// subdirectories (mode 0700, untimed, as it does). Refuses, before making
    /// anything, a location reached through a symbolic link or holding a name the run
    /// would create (and later delete). On error `self` holds what was made so far.
    pub(super) fn prepare(&mut self, cfg: &Postmark, dir: &Path) -> anyhow::Result<()> {
        let locations: Vec<PathBuf> = if cfg.locations.is_empty() {
            vec![dir.to_path_buf()]
        } else {
            cfg.locations.iter().map(|l| dir.join(&l.path)).collect()
        };
        for l in &cfg.locations {
            check_location(&l.path).map_err(|m| anyhow::anyhow!("postmark: locations: {m}"))?;
            refuse_links(dir, Path::new(&l.path))?;
        }
        // The same location listed twice is one directory (PostMark ignores the
        // repeat too); it is checked and made once.
        let mut unique = locations.clone();
        unique.sort();
        unique.dedup();
        for loc in &unique {
            refuse_own_names(cfg, loc)?;
        }
        self.locations = locations;
        for loc in &unique {
            make_missing(dir, loc, &mut self.made)?;
        }
        if cfg.subdirectories > 1 {
            for loc in &unique {
                for i in 0..cfg.subdirectories {
                    let sub = loc.join(format!("s{i}"));
                    match std::fs::DirBuilder::new().mode(0o700).create(&sub) {
                        Ok(()) => self.subdirs.push(sub),
                        // A location nested in another as `s<n>`: made above, by us.
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(e).context(format!("mkdir {}", sub.display())),
                    }
                }
            }
        }
        Ok(())
    }

    /// Removes the subdirectories, then the locations the run made, deepest first.
    /// Tries every one; the error names each directory left and why.
    pub(super) fn remove(&mut self) -> anyhow::Result<()> {
        let mut left = Vec::new();
        for d in self.subdirs.drain(..).chain(self.made.drain(..).rev()) {
            match std::fs::remove_dir(&d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => left.push(format!("{}: {e}", d.display())),
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            bail!("directories left: {}", left.join("; "))
        }
    }
}

/// Refuses a location whose existing part below `dir` passes through a symbolic
/// link (or a non-directory): the run would write wherever the link points.
pub(super) fn refuse_links(dir: &Path, rel: &Path) -> anyhow::Result<()> {
    let mut at = dir.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => bail!(
                "postmark: location {} is a symbolic link; locations must be real \
                 directories inside {} (the run would write where the link points)",
                at.display(),
                dir.display()
            ),
            Ok(m) if !m.is_dir() => bail!(
                "postmark: location {} exists and is not a directory",
                at.display()
            ),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => bail!("postmark: cannot check location {}: {e}", at.display()),
        }
    }
    Ok(())
}

/// PostMark names its files `1, 2, 3, ...` and its subdirectories `s0, s1, ...`,
/// opens them with `O_TRUNC` and deletes them at the end: a location that already
/// holds such a name would lose that file. Refused, naming it.
pub(super) fn refuse_own_names(cfg: &Postmark, loc: &Path) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(loc) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).context(format!("cannot list {}", loc.display())),
    };
    // Every name a run can use: files are numbered up to the creations it makes.
    let last_file = u64::from(cfg.number) + u64::from(cfg.transactions);
    let subdirs = if cfg.subdirectories > 1 {
        u64::from(cfg.subdirectories)
    } else {
        0
    };
    let ours = |name: &str| -> bool {
        let number = |t: &str| {
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && !t.starts_with('0'))
                .then(|| t.parse::<u64>().unwrap_or(u64::MAX))
        };
        if subdirs > 0 {
            name.strip_prefix('s')
                .and_then(|t| if t == "0" { Some(0) } else { number(t) })
                .is_some_and(|n| n < subdirs)
        } else {
            number(name).is_some_and(|n| n <= last_file)
        }
    };
    let mut clashes: Vec<String> = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", loc.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if ours(&name) {
            clashes.push(name);
        }
    }
    if clashes.is_empty() {
        return Ok(());
    }
    clashes.sort();
    let shown: Vec<&str> = clashes.iter().take(5).map(String::as_str).collect();
    let more = clashes.len() - shown.len();
    bail!(
        "postmark: {} already holds {}{}, which this run would create and delete \
         (PostMark names its files 1, 2, ... and its subdirectories s0, s1, ...); nothing \
         was touched: run it in an empty directory",
        loc.display(),
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// `mkdir -p` of `target` below `base` (which exists), remembering each directory
/// it made.
pub(super) fn make_missing(
    base: &Path,
    target: &Path,
    made: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let rel = target.strip_prefix(base).unwrap_or(Path::new(""));
    let mut at = base.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match std::fs::create_dir(&at) {
            Ok(()) => made.push(at.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && at.is_dir() => {}
            Err(e) => return Err(e).context(format!("mkdir {}", at.display())),
        }
    }
    Ok(())
}
