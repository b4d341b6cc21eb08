//! What an application can read of a recovered crash state, as one digest: every
//! entry of the recovered file systems (path, type, permissions, owner, size, a
//! symlink's target, a file's bytes), after the file system's own recovery. Two states
//! with the same digest and the same promises hand the application's recovery and
//! check the same input, so they get the same verdict (see `verdict_cache`).
//!
//! Left out on purpose: times (atime, mtime, ctime) and inode numbers, which a power
//! cut changes without changing a byte an application reads as data; an application
//! whose recovery branches on a file's mtime would need them.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// The digest of the trees under `roots`, each walked in name order.
pub fn of(roots: &[&Path]) -> Result<[u8; 32]> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    for (i, root) in roots.iter().enumerate() {
        h.update(format!("root {i}\0").as_bytes());
        walk(root, Path::new(""), &mut h, &mut buf)
            .with_context(|| format!("cannot read the recovered tree {}", root.display()))?;
    }
    Ok(h.finalize().into())
}

fn walk(root: &Path, rel: &Path, h: &mut Sha256, buf: &mut [u8]) -> Result<()> {
    let dir = root.join(rel);
    let mut names: Vec<_> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    for name in names {
        let rel = rel.join(&name);
        let path = root.join(&rel);
        let md = std::fs::symlink_metadata(&path)?;
        let ft = md.file_type();
        let kind = if ft.is_dir() {
            'd'
        } else if ft.is_file() {
            'f'
        } else if ft.is_symlink() {
            'l'
        } else {
            'o'
        };
        // A directory's size is its blocks, which a power cut changes without
        // changing a name a reader lists.
        let len = if ft.is_dir() { 0 } else { md.len() };
        h.update(
            format!(
                "{}\0{kind} {:o} {}:{} {len} {}\0",
                rel.display(),
                md.permissions().mode(),
                md.uid(),
                md.gid(),
                md.rdev()
            )
            .as_bytes(),
        );
        if ft.is_dir() {
            walk(root, &rel, h, buf)?;
        } else if ft.is_symlink() {
            h.update(std::fs::read_link(&path)?.as_os_str().as_encoded_bytes());
            h.update(b"\0");
        } else if ft.is_file() {
            let mut f = std::fs::File::open(&path)?;
            let mut left = md.len();
            while left > 0 {
                let n = f.read(buf)?;
                if n == 0 {
                    // Shorter than its size said: the length line already differs
                    // from a whole file's, and the short read is part of the input.
                    h.update(b"\0short");
                    break;
                }
                h.update(&buf[..n]);
                left = left.saturating_sub(n as u64);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/a"), b"alpha").unwrap();
        std::fs::write(d.path().join("b"), b"beta").unwrap();
        std::os::unix::fs::symlink("sub/a", d.path().join("link")).unwrap();
        d
    }

    #[test]
    fn the_same_content_gives_the_same_key_and_any_change_a_reader_sees_another() {
        let (x, y) = (tree(), tree());
        let key = |d: &tempfile::TempDir| of(&[d.path()]).unwrap();
        assert_eq!(key(&x), key(&y), "times and inode numbers are left out");
        let base = key(&x);
        std::fs::write(y.path().join("sub/a"), b"alphA").unwrap();
        assert_ne!(key(&y), base, "a byte");
        std::fs::write(y.path().join("sub/a"), b"alpha").unwrap();
        assert_eq!(key(&y), base);
        std::fs::set_permissions(y.path().join("b"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        assert_ne!(key(&y), base, "permissions");
        let z = tree();
        std::fs::rename(z.path().join("b"), z.path().join("c")).unwrap();
        assert_ne!(key(&z), base, "a name");
        let w = tree();
        std::fs::remove_file(w.path().join("link")).unwrap();
        std::os::unix::fs::symlink("b", w.path().join("link")).unwrap();
        assert_ne!(key(&w), base, "a symlink's target");
        // The same trees as two roots differ from one root holding both.
        assert_ne!(of(&[x.path(), y.path()]).unwrap(), base);
    }
}
