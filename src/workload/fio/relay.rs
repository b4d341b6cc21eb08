//! Turns strace's account of fio's system calls into `durable-range` promises, in
//! real time, for the crash lab.
//!
//! fio runs under `strace -f --seccomp-bpf -qq -y -s 16 -o /dev/fd/3`: one line per
//! call of the traced set, written when strace handles the call's exit, i.e. after
//! the kernel finished it. strace handles the stops of all fio's processes one at a
//! time, and a call whose line another process's output interrupts is printed in two
//! parts: `PID name(args <unfinished ...>` when it enters and `PID <... name
//! resumed>rest) = RET` when it returns. So the order of the lines is the order in
//! which strace handled entries and exits, and a tracee only runs on after strace
//! handled its stop. Hence, when a write's exit line comes before an fsync's entry
//! (the fsync's whole line if it is not split, its `unfinished` part if it is), the
//! write had completed before the fsync began, and the fsync covers it. A write whose
//! exit comes later is left for the next fsync, even if it did complete in time: that
//! only makes a promise later, never early.
//!
//! A promise is emitted when the line that proves it is read, which is after the call
//! returned: the requests it waited for were acknowledged before the marker reaches
//! the write log.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::promises::{Pattern, Rule};

/// The calls strace must show (a call left out would make the relay blind to it).
/// `read`, `readv` and `lseek` move the file offset that `write` and `writev` use.
pub const TRACED_CALLS: &str = "open,openat,creat,close,read,readv,lseek,write,writev,\
                                pwrite64,pwritev,pwritev2,fsync,fdatasync";

/// Bytes of each written buffer strace prints (`-s`): the pattern's 16-byte unit.
pub const DATA_PREFIX: usize = 16;

/// One durable range: bytes `[offset, offset + len)` of the file at `path`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Durable {
    pub path: String,
    pub offset: u64,
    pub len: u64,
}

/// What the relay knows of one open descriptor.
#[derive(Debug, Clone)]
struct Fd {
    /// Opened `O_SYNC` or `O_DSYNC`: a write is durable when it returns.
    sync: bool,
    /// The file offset `write` uses; `None` once it cannot be followed.
    pos: Option<u64>,
}

/// One completed write not yet made durable.
#[derive(Debug, Clone, Copy)]
struct Pending {
    id: u64,
    offset: u64,
    len: u64,
}

/// The relay's state across lines.
pub struct Relay {
    /// fio's directory, as strace prints paths: others are not fio's files.
    root: String,
    rule: Box<dyn Fn(&str) -> Rule + Send>,
    fds: HashMap<(u32, i64), Fd>,
    pending: HashMap<String, Vec<Pending>>,
    next_id: u64,
    /// An fsync that entered: its file and the last write it covers.
    entered: HashMap<u32, (String, u64)>,
    /// The first part of a call split by another process's line.
    partial: HashMap<u32, String>,
    /// Files with at least one write of the expected pattern.
    patterned: HashSet<String>,
    /// Files whose writes stopped matching their pattern after some did: no more
    /// promises for them. Said in the trial's output.
    pub tainted: BTreeSet<String>,
}

impl Relay {
    /// `root`: fio's directory; `rule`: what to do with a file, by its path relative
    /// to `root`.
    pub fn new(root: &str, rule: impl Fn(&str) -> Rule + Send + 'static) -> Self {
        Relay {
            root: root.trim_end_matches('/').to_string(),
            rule: Box::new(rule),
            fds: HashMap::new(),
            pending: HashMap::new(),
            next_id: 0,
            entered: HashMap::new(),
            partial: HashMap::new(),
            patterned: HashSet::new(),
            tainted: BTreeSet::new(),
        }
    }

    fn rule_of(&self, path: &str) -> Rule {
        match path
            .strip_prefix(&self.root)
            .and_then(|r| r.strip_prefix('/'))
        {
            Some(rel) if !rel.is_empty() => (self.rule)(rel),
            _ => Rule::Ignore,
        }
    }

    /// Reads one line of strace's output; appends the ranges it proves durable.
    pub fn line(&mut self, line: &str, out: &mut Vec<Durable>) {
        let line = line.trim_end();
        let Some((pid, rest)) = line.trim_start().split_once(char::is_whitespace) else {
            return;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            return;
        };
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            let head = head.trim_end().to_string();
            if let Some(call) = parse_head(&head) {
                if matches!(call.0, "fsync" | "fdatasync") {
                    if let Some((_, path)) = call.1.first().and_then(|a| fd_arg(a)) {
                        let last = self.next_id;
                        self.entered.insert(pid, (path, last));
                    }
                }
            }
            self.partial.insert(pid, head);
            return;
        }
        if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some((_, tail)) = resumed.split_once(" resumed>") else {
                return;
            };
            // No head: strace started within the call; nothing is known of it.
            let Some(head) = self.partial.remove(&pid) else {
                return;
            };
            let whole = format!("{head}{tail}");
            let entered = self.entered.remove(&pid);
            self.complete(pid, &whole, entered, out);
            return;
        }
        // A whole line: nothing was handled between its entry and its exit.
        self.complete(pid, rest, None, out);
    }

    fn complete(
        &mut self,
        pid: u32,
        text: &str,
        entered: Option<(String, u64)>,
        out: &mut Vec<Durable>,
    ) {
        let Some(c) = parse_call(text) else {
            return;
        };
        let arg_fd = c.args.first().and_then(|a| fd_arg(a));
        match c.name {
            "open" | "openat" | "creat" => {
                let Some((fd, _)) = c.ret_fd() else {
                    return;
                };
                let flags = match c.name {
                    "openat" => c.args.get(2),
                    "open" => c.args.get(1),
                    _ => None,
                }
                .copied()
                .unwrap_or("");
                let has = |f: &str| flags.split('|').any(|x| x.trim() == f);
                self.fds.insert(
                    (pid, fd),
                    Fd {
                        sync: has("O_SYNC") || has("O_DSYNC"),
                        pos: (!has("O_APPEND")).then_some(0),
                    },
                );
            }
            "close" => {
                if let Some((fd, _)) = arg_fd {
                    self.fds.remove(&(pid, fd));
                }
            }
            "lseek" => {
                if let Some((fd, _)) = arg_fd {
                    let new = c.ret.and_then(|r| u64::try_from(r).ok());
                    if let Some(f) = self.fds.get_mut(&(pid, fd)) {
                        f.pos = new;
                    }
                }
            }
            "read" | "readv" => {
                if let (Some((fd, _)), Some(r)) = (arg_fd, c.ret) {
                    if let Some(f) = self.fds.get_mut(&(pid, fd)) {
                        f.pos = if r >= 0 {
                            f.pos.map(|p| p + r as u64)
                        } else {
                            f.pos
                        };
                    }
                }
            }
            "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" => {
                let Some((fd, path)) = arg_fd else {
                    return;
                };
                self.wrote(pid, fd, path, &c, out);
            }
            "fsync" | "fdatasync" => {
                let Some((_, path)) = arg_fd else {
                    return;
                };
                if c.ret != Some(0) {
                    return;
                }
                // Split: the writes completed before it entered; whole: all so far.
                let covers = match entered {
                    Some((p, last)) if p == path => last,
                    Some(_) => return,
                    None => self.next_id,
                };
                let Some(list) = self.pending.get_mut(&path) else {
                    return;
                };
                let (done, keep): (Vec<Pending>, Vec<Pending>) =
                    list.iter().partition(|w| w.id < covers);
                *list = keep;
                let ranges = coalesce(done.iter().map(|w| (w.offset, w.len)).collect());
                out.extend(ranges.into_iter().map(|(offset, len)| Durable {
                    path: path.clone(),
                    offset,
                    len,
                }));
            }
            _ => {}
        }
    }

    fn wrote(&mut self, pid: u32, fd: i64, path: String, c: &Call<'_>, out: &mut Vec<Durable>) {
        let ret = c.ret.unwrap_or(-1);
        let state = self.fds.get(&(pid, fd)).cloned();
        let explicit = match c.name {
            "pwrite64" | "pwritev" | "pwritev2" => {
                c.args.get(3).and_then(|a| a.parse::<i64>().ok())
            }
            _ => None,
        };
        // pwritev2 with offset -1 writes at the file offset, as write does.
        let positional = explicit.is_none_or(|o| o < 0);
        let offset = match explicit {
            Some(o) if o >= 0 => Some(o as u64),
            _ => state.as_ref().and_then(|s| s.pos),
        };
        if positional {
            if let Some(f) = self.fds.get_mut(&(pid, fd)) {
                f.pos = match (f.pos, ret >= 0) {
                    (Some(p), true) => Some(p + ret as u64),
                    (p, false) => p,
                    (None, true) => None,
                };
            }
        }
        let (Some(offset), true) = (offset, ret > 0) else {
            return;
        };
        let len = ret as u64;
        let rule = self.rule_of(&path);
        match rule {
            Rule::Ignore => return,
            Rule::Exists => {}
            Rule::Pattern(p) => {
                if self.tainted.contains(&path) {
                    return;
                }
                if !self.matches(p, c, offset, len) {
                    // fio lays files out with other bytes before any job writes; a
                    // mismatch after pattern writes means the model is wrong here.
                    if self.patterned.contains(&path) {
                        self.tainted.insert(path.clone());
                        self.pending.remove(&path);
                    }
                    return;
                }
                self.patterned.insert(path.clone());
            }
        }
        let flags_sync = c.name == "pwritev2"
            && c.args.get(4).is_some_and(|f| {
                f.split('|')
                    .any(|x| matches!(x.trim(), "RWF_SYNC" | "RWF_DSYNC"))
            });
        if flags_sync || state.is_some_and(|s| s.sync) {
            out.push(Durable { path, offset, len });
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.pending
            .entry(path)
            .or_default()
            .push(Pending { id, offset, len });
    }

    /// Whether the buffer's first bytes are the pattern's at `offset`.
    fn matches(&self, p: Pattern, c: &Call<'_>, offset: u64, len: u64) -> bool {
        let data = match c.name {
            "write" | "pwrite64" => c.args.get(1).and_then(|a| quoted(a)),
            _ => c.args.get(1).and_then(|a| {
                let i = a.find("iov_base=\"")?;
                quoted(&a[i + "iov_base=".len()..])
            }),
        };
        let Some(data) = data else {
            return false;
        };
        let n = data.len().min(DATA_PREFIX).min(len as usize);
        n > 0 && data[..n] == p.content(offset, n as u64)[..]
    }
}

/// Sorts ranges and merges those that overlap or touch.
pub fn coalesce(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (o, l) in ranges {
        match out.last_mut() {
            Some((lo, ll)) if o <= *lo + *ll => *ll = (*ll).max(o + l - *lo),
            _ => out.push((o, l)),
        }
    }
    out
}

/// One call as strace printed it.
#[derive(Debug)]
pub struct Call<'a> {
    pub name: &'a str,
    pub args: Vec<&'a str>,
    pub ret: Option<i64>,
    /// What follows the return value (`<path>` of a returned descriptor, an errno).
    pub ret_rest: &'a str,
}

impl Call<'_> {
    fn ret_fd(&self) -> Option<(i64, String)> {
        let r = self.ret.filter(|r| *r >= 0)?;
        let path = self
            .ret_rest
            .strip_prefix('<')
            .map(|p| unescape_until(p, b'>').0);
        Some((r, String::from_utf8_lossy(&path?).into_owned()))
    }
}

/// `name(args` of an unfinished call.
fn parse_head(head: &str) -> Option<(&str, Vec<&str>)> {
    let (name, args) = head.split_once('(')?;
    Some((name, split_args(args).0))
}

/// `name(args) = RET rest`.
pub fn parse_call(text: &str) -> Option<Call<'_>> {
    let (name, args) = text.split_once('(')?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let (args, end) = split_args(args);
    let after = end?.trim_start().strip_prefix('=')?.trim_start();
    let digits = after
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
        .map_or(after.len(), |(i, _)| i);
    Some(Call {
        name,
        args,
        ret: after[..digits].parse().ok(),
        ret_rest: &after[digits..],
    })
}

/// Splits the arguments at top-level commas; returns them and what follows the
/// closing parenthesis (`None`: the line ends inside the arguments).
fn split_args(s: &str) -> (Vec<&str>, Option<&str>) {
    let b = s.as_bytes();
    let (mut depth, mut start, mut i) = (0i32, 0usize, 0usize);
    let mut args = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            // A decoded descriptor: `3</path>`, with `>` escaped inside.
            b'<' => {
                i += 1;
                while i < b.len() && b[i] != b'>' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth -= 1,
            b'(' => depth += 1,
            b')' if depth == 0 => {
                let last = s[start..i].trim();
                if !last.is_empty() {
                    args.push(last);
                }
                return (args, Some(&s[i + 1..]));
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                args.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = s[start.min(s.len())..].trim();
    if !last.is_empty() {
        args.push(last);
    }
    (args, None)
}

/// `3</path/to/file>`: the descriptor and its path.
pub fn fd_arg(a: &str) -> Option<(i64, String)> {
    let (n, rest) = a.split_once('<')?;
    let fd = n.trim().parse().ok()?;
    let (path, _) = unescape_until(rest, b'>');
    Some((fd, String::from_utf8_lossy(&path).into_owned()))
}

/// The bytes of a quoted string argument (`"ab\0"...`).
pub fn quoted(a: &str) -> Option<Vec<u8>> {
    let rest = a.trim_start().strip_prefix('"')?;
    Some(unescape_until(rest, b'"').0)
}

/// strace's C escapes up to an unescaped `end`: the bytes and how many input bytes
/// were read.
pub fn unescape_until(s: &str, end: u8) -> (Vec<u8>, usize) {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() && b[i] != end {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        match b[i] {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(v) = hex {
                    out.push(v);
                    i += 2;
                }
            }
            b'0'..=b'7' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
                continue;
            }
            c => out.push(c),
        }
        i += 1;
    }
    (out, i)
}
