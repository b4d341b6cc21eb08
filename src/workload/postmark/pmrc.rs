//! PostMark's command language: `set`, `load`, `run` and the rest, read from a pmrc
//! file as the original reads it, with its limits.

use super::*;

/// C's `atoi`: leading blanks, a sign, digits; 0 when there are none; wraps like
/// the `int` it returns would on glibc for the values that matter here.
pub(super) fn atoi(s: &str) -> i64 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + i64::from(b - b'0')).min(i64::from(i32::MAX) + 1);
    }
    if neg {
        -v
    } else {
        v
    }
}

/// One configuration file's effect: the configurations of its `run` commands.
#[derive(Debug, Default)]
pub struct Script {
    pub runs: Vec<Postmark>,
    /// The state after the last line, for a file without `run`.
    pub last: Postmark,
}

/// PostMark's commands, longest-prefix first where one is a prefix of another
/// would not matter: PostMark tries them in its table order, and so do we.
pub(super) const COMMANDS: [&str; 17] = [
    "set size",
    "set number",
    "set seed",
    "set transactions",
    "set location",
    "set subdirectories",
    "set read",
    "set write",
    "set buffering",
    "set bias read",
    "set bias create",
    "set report",
    "run",
    "load",
    "show",
    "help",
    "quit",
];

/// Reads a PostMark configuration file into `script`, following `load`. Unlike
/// PostMark, a line it would answer with an error message stops here with the file
/// and line, since a silently ignored setting would give a different benchmark.
pub fn parse_pmrc(path: &Path, script: &mut Script, depth: u32) -> anyhow::Result<bool> {
    if depth > MAX_LOAD_DEPTH {
        return Err(LoadTooDeep(path.display().to_string()).into());
    }
    let text = read_pmrc(path)?;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let keep_going = apply_line(line, script, path, depth).map_err(|e| {
            // One line of context, not one per level of a `load` loop.
            if e.is::<LoadTooDeep>() {
                e
            } else {
                e.context(format!("{}:{}: `{line}`", path.display(), n + 1))
            }
        })?;
        if !keep_going {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `load` nested deeper than this is a file loading itself.
pub(super) const MAX_LOAD_DEPTH: u32 = 16;

/// Configuration files are a few lines; reading stops here (a `--pmrc /dev/zero`
/// must not fill memory).
pub(super) const MAX_PMRC_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
#[error("{0}: `load` nested more than 16 deep (does a file load itself?)")]
pub(super) struct LoadTooDeep(String);

pub(super) fn read_pmrc(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let cannot = || format!("cannot read PostMark configuration {}", path.display());
    let file = std::fs::File::open(path).with_context(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_PMRC_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() as u64 > MAX_PMRC_BYTES {
        bail!(
            "{} is larger than {} bytes; a PostMark configuration is a few lines",
            path.display(),
            MAX_PMRC_BYTES
        );
    }
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", path.display()))
}

/// Applies one command; `Ok(false)` on `quit`.
pub(super) fn apply_line(
    line: &str,
    script: &mut Script,
    file: &Path,
    depth: u32,
) -> anyhow::Result<bool> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(true);
    }
    if line.starts_with('!') {
        bail!("shell escapes (`!`) are not run");
    }
    let line = match line {
        "exit" => "quit",
        "?" => "help",
        other => other,
    };
    let Some(cmd) = COMMANDS.iter().find(|c| line.starts_with(**c)) else {
        bail!("unknown PostMark command");
    };
    // PostMark passes what follows the command and one separator character.
    let param = line.get(cmd.len() + 1..).filter(|_| line.len() > cmd.len());
    let cfg = &mut script.last;
    match *cmd {
        "quit" => return Ok(false),
        "show" | "help" => {}
        "run" => {
            if param.is_some() {
                crate::events::emit(crate::events::Event::CommandWarning {
                    text: "postmark: `run FILE`: the report goes to stdout, not to the file".into(),
                });
            }
            script.runs.push(cfg.clone());
        }
        "load" => {
            let target = param.context("load needs a file name")?;
            let target = file.parent().unwrap_or(Path::new(".")).join(target);
            return parse_pmrc(&target, script, depth + 1);
        }
        "set location" => set_location(cfg, param.context("no directory name specified")?)?,
        "set buffering" => {
            cfg.buffering = match param {
                Some("true") => true,
                Some("false") => false,
                _ => bail!("no buffering mode (true/false) specified"),
            }
        }
        "set report" => {
            cfg.terse = match param {
                Some("verbose") => false,
                Some("terse") => true,
                _ => bail!("either 'verbose' or 'terse' required"),
            }
        }
        "set size" => set_size(cfg, param.unwrap_or(""))?,
        "set bias read" | "set bias create" => {
            let v = atoi(param.unwrap_or(""));
            if !(-1..=10).contains(&v) {
                bail!("no bias specified (0-10 for greater chance,-1 to disable)");
            }
            if *cmd == "set bias read" {
                cfg.bias_read = v as i32;
            } else {
                cfg.bias_create = v as i32;
            }
        }
        _ => {
            let v = atoi(param.unwrap_or(""));
            if v <= 0 || v > INT_MAX as i64 {
                bail!("expected a positive number");
            }
            let v = v as u32;
            match *cmd {
                "set number" => cfg.number = v,
                "set seed" => cfg.seed = v,
                "set transactions" => cfg.transactions = v,
                "set subdirectories" => cfg.subdirectories = v,
                "set read" => cfg.read_block = v,
                "set write" => cfg.write_block = v,
                _ => unreachable!("every command is handled"),
            }
        }
    }
    Ok(true)
}

/// `set size low [high]`: one value sets both.
pub(super) fn set_size(cfg: &mut Postmark, param: &str) -> anyhow::Result<()> {
    let low = atoi(param);
    if low <= 0 || low > INT_MAX as i64 {
        bail!("no file size low or high bounds specified");
    }
    cfg.size_low = low as u32;
    let high = param.find(' ').map_or(0, |i| atoi(&param[i..]));
    cfg.size_high = if high > 0 && high >= low && high <= INT_MAX as i64 {
        high as u32
    } else {
        low as u32
    };
    Ok(())
}

/// `set location path [weight]`, `+path [weight]` adds, `-path` removes; the
/// weight is what follows the last space, as PostMark splits it.
pub(super) fn set_location(cfg: &mut Postmark, param: &str) -> anyhow::Result<()> {
    let split_weight = |p: &str| -> anyhow::Result<(String, u32)> {
        match p.rfind(' ') {
            None => Ok((p.to_string(), 1)),
            Some(i) => {
                let w = atoi(&p[i + 1..]);
                if w <= 0 || w > INT_MAX as i64 {
                    bail!("invalid weight '{}'", &p[i + 1..]);
                }
                Ok((p[..i].to_string(), w as u32))
            }
        }
    };
    if let Some(rest) = param.strip_prefix('+') {
        let (path, weight) = split_weight(rest)?;
        check_location(&path).map_err(anyhow::Error::msg)?;
        cfg.locations.push(Location { path, weight });
    } else if let Some(rest) = param.strip_prefix('-') {
        let at = cfg.locations.iter().position(|l| l.path == rest);
        let at = at.with_context(|| format!("cannot find location '{rest}'"))?;
        cfg.locations.remove(at);
    } else {
        let (path, weight) = split_weight(param)?;
        check_location(&path).map_err(anyhow::Error::msg)?;
        cfg.locations = vec![Location { path, weight }];
    }
    Ok(())
}
