//! Comparing what a workload promised with a recovered tree: the kernel's mount
//! (`oracle`) or the user-space path's view of the replayed image (`user_verdict`),
//! through one comparison so both paths judge a promise alike.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::oracle::{Expect, Promises};

/// Every promise (its path and what it expects) and whether removal had started, into
/// `h`: states with the same digest were handed the same promises.
pub fn digest_promises(h: &mut Sha256, p: &Promises) {
    h.update([u8::from(p.removal_started)]);
    for promise in &p.items {
        h.update(promise.path.as_bytes());
        match &promise.expect {
            Expect::Exists => h.update(b"\0exists"),
            Expect::NonEmpty => h.update(b"\0nonempty"),
            Expect::Bytes(b) => h.update(b),
            Expect::Sha256(x) => h.update(x.as_bytes()),
            Expect::Range { offset, len, bytes } => {
                h.update(offset.to_le_bytes());
                h.update(len.to_le_bytes());
                h.update(bytes.as_deref().unwrap_or_default());
            }
        }
    }
}

/// A tree the promises are compared with: the mounted state, or the user-space path's
/// view of it (`user_verdict`). Paths are relative to the file system's root.
pub trait PromisedTree {
    fn read(&self, rel: &str) -> std::io::Result<Vec<u8>>;
    /// Whether the entry exists, without following a symbolic link.
    fn exists(&self, rel: &str) -> std::io::Result<()>;
    fn size(&self, rel: &str) -> std::io::Result<u64>;
    /// Exactly `len` bytes at `offset`.
    fn read_at(&self, rel: &str, offset: u64, len: u64) -> std::io::Result<Vec<u8>>;
}

/// The state as the kernel mounted it.
struct Mounted<'a>(&'a Path);

impl PromisedTree for Mounted<'_> {
    fn read(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(rel))
    }
    fn exists(&self, rel: &str) -> std::io::Result<()> {
        std::fs::symlink_metadata(self.0.join(rel)).map(|_| ())
    }
    fn size(&self, rel: &str) -> std::io::Result<u64> {
        std::fs::metadata(self.0.join(rel)).map(|m| m.len())
    }
    fn read_at(&self, rel: &str, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut got = vec![0u8; len as usize];
        std::fs::File::open(self.0.join(rel))?.read_exact_at(&mut got, offset)?;
        Ok(got)
    }
}

/// Compares the promises with the mounted file system: `(missing, different)` with
/// every broken promise named.
pub fn check_files(mount: &Path, p: &Promises) -> (Vec<String>, Vec<String>) {
    check_promises(&Mounted(mount), p)
}

/// Compares the promises with `tree`: `(missing, different)`, every broken one named.
pub fn check_promises(tree: &dyn PromisedTree, p: &Promises) -> (Vec<String>, Vec<String>) {
    let mut missing = Vec::new();
    let mut different = Vec::new();
    for promise in &p.items {
        let rel = promise.path.as_str();
        let outcome = match &promise.expect {
            Expect::Range { offset, len, bytes } => {
                check_range(tree, rel, *offset, *len, bytes.as_deref())
            }
            Expect::Exists => tree.exists(rel).map(|_| None),
            Expect::NonEmpty => tree
                .size(rel)
                .map(|n| (n == 0).then(|| "empty, promised never empty".to_string())),
            Expect::Bytes(want) => tree.read(rel).map(|data| {
                (data[..] != want[..]).then(|| {
                    format!(
                        "{} bytes, {} expected{}",
                        data.len(),
                        want.len(),
                        if data.len() == want.len() {
                            format!(
                                ", content differs from byte {}",
                                first_difference(&data, want)
                            )
                        } else {
                            String::new()
                        }
                    )
                })
            }),
            Expect::Sha256(hex) => tree.read(rel).map(|data| {
                let got = format!("{:x}", sha2::Sha256::digest(&data));
                (got != *hex)
                    .then(|| format!("sha256 {got}, {hex} promised ({} bytes)", data.len()))
            }),
        };
        match outcome {
            Ok(None) => {}
            Ok(Some(why)) => different.push(format!("{rel}: {why}")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !p.removal_started {
                    missing.push(format!("{rel}: missing"));
                }
            }
            Err(e) => different.push(format!("{rel}: unreadable: {e}")),
        }
    }
    (missing, different)
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

/// A durable range: the file reaches past it, and holds `want` there when known.
fn check_range(
    tree: &dyn PromisedTree,
    rel: &str,
    offset: u64,
    len: u64,
    want: Option<&[u8]>,
) -> std::io::Result<Option<String>> {
    let size = tree.size(rel)?;
    if size < offset + len {
        return Ok(Some(format!(
            "{size} bytes, but bytes {offset}..{} were made durable",
            offset + len
        )));
    }
    let Some(want) = want else {
        return Ok(None);
    };
    let got = tree.read_at(rel, offset, len)?;
    Ok((got[..] != want[..]).then(|| {
        let at = offset + first_difference(&got, want) as u64;
        format!(
            "bytes {offset}..{} differ from what was made durable, from byte {at}",
            offset + len
        )
    }))
}
