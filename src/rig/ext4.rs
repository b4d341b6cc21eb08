//! Making ext4 file systems and external journal devices with e2fsprogs, and reading
//! their superblocks back with dumpe2fs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::experiment::config::FsType;
use crate::rig::cmd;

/// Options that keep ext4's background initialisation from writing during a
/// measurement: every inode table and the journal are zeroed by mkfs itself.
pub const NO_LAZY_INIT: &str = "lazy_itable_init=0,lazy_journal_init=0";

/// `mke2fs -O journal_dev -b 4096 DEV BLOCKS`: an external journal of exactly `bytes`
/// (the block count is explicit so a larger real device still gets the size asked for).
pub fn make_journal_device(dev: &Path, bytes: u64) -> Result<()> {
    let blocks = (bytes / 4096).to_string();
    cmd::run(
        "mke2fs",
        &[
            "-q",
            "-O",
            "journal_dev",
            "-b",
            "4096",
            &dev.to_string_lossy(),
            &blocks,
        ],
    )
    .with_context(|| format!("cannot make an external journal on {}", dev.display()))?;
    Ok(())
}

/// Where the new file system's journal goes.
pub enum JournalArg<'a> {
    /// No journal (`-O ^has_journal`).
    None,
    /// Inside the file system, of this many bytes (a whole number of MiB).
    Internal(u64),
    /// On a device already made with [`make_journal_device`].
    External(&'a Path),
}

/// `mke2fs -t ext4|ext3 -b 4096 -E lazy... -J ... [extra] DEV`. The 4 KiB block size
/// is forced because mke2fs picks 1 KiB below 512 MB and journal and file system must
/// match.
pub fn make_ext(fs_type: FsType, dev: &Path, journal: JournalArg, extra: &[String]) -> Result<()> {
    let dev_s = dev.to_string_lossy();
    let mut args: Vec<&str> = vec![
        "-q",
        "-t",
        fs_type.as_str(),
        "-b",
        "4096",
        "-E",
        NO_LAZY_INIT,
    ];
    let journal_opt;
    match journal {
        JournalArg::None => args.extend(["-O", "^has_journal"]),
        JournalArg::Internal(bytes) => {
            journal_opt = format!("size={}", bytes >> 20);
            args.extend(["-J", journal_opt.as_str()]);
        }
        JournalArg::External(j) => {
            journal_opt = format!("device={}", j.display());
            args.extend(["-J", journal_opt.as_str()]);
        }
    }
    args.extend(extra.iter().map(String::as_str));
    args.push(&dev_s);
    cmd::run("mke2fs", &args).with_context(|| format!("cannot make ext4 on {}", dev.display()))?;
    Ok(())
}

/// `dumpe2fs -h` as key/value pairs ("Journal UUID" -> "1f2e...").
pub fn superblock(dev: &Path) -> Result<BTreeMap<String, String>> {
    let out = cmd::run("dumpe2fs", &["-h", &dev.to_string_lossy()])
        .with_context(|| format!("cannot read the superblock of {}", dev.display()))?;
    Ok(parse_header(&out))
}

pub fn parse_header(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Groups whose inode tables are not zeroed yet: work ext4lazyinit would do in the
/// background after mount, polluting a measurement. Without uninit_bg or
/// metadata_csum (ext3) there are no uninitialised groups: mke2fs wrote every table.
pub fn groups_not_zeroed(dev: &Path) -> Result<usize> {
    let f = features(&superblock(dev)?);
    if !f.iter().any(|x| x == "uninit_bg" || x == "metadata_csum") {
        return Ok(0);
    }
    let out = cmd::run("dumpe2fs", &[&dev.to_string_lossy()])
        .with_context(|| format!("cannot read the group descriptors of {}", dev.display()))?;
    Ok(count_not_zeroed(&out))
}

pub fn count_not_zeroed(dumpe2fs: &str) -> usize {
    dumpe2fs
        .lines()
        .filter(|l| l.starts_with("Group ") && l.contains("(Blocks"))
        .filter(|l| !l.contains("ITABLE_ZEROED"))
        .count()
}

/// Journal size in bytes from a dumpe2fs header: journal blocks times block size,
/// without the fast-commit area mke2fs adds on top of the size asked for.
pub fn journal_bytes(sb: &BTreeMap<String, String>) -> Option<u64> {
    let block: u64 = sb.get("Block size")?.parse().ok()?;
    let blocks: u64 = sb
        .get("Total journal blocks")
        .or_else(|| sb.get("Journal length"))?
        .parse()
        .ok()?;
    let fast_commit: u64 = sb
        .get("Fast commit length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Some(blocks.saturating_sub(fast_commit) * block)
}

pub fn features(sb: &BTreeMap<String, String>) -> Vec<String> {
    sb.get("Filesystem features")
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_journal_size_and_features() {
        let sb = parse_header(
            "Filesystem features:      has_journal ext_attr extent\nBlock size:               4096\nJournal UUID:             f889924a-9017\nJournal device:\t          0x0701\nTotal journal blocks:     4096\n",
        );
        assert_eq!(journal_bytes(&sb), Some(16 << 20));
        let with_fc =
            parse_header("Block size: 4096\nTotal journal blocks: 4160\nFast commit length: 64\n");
        assert_eq!(
            journal_bytes(&with_fc),
            Some(16 << 20),
            "the fast-commit area is extra"
        );
        assert_eq!(features(&sb), ["has_journal", "ext_attr", "extent"]);
        assert_eq!(sb["Journal device"], "0x0701");
    }

    #[test]
    fn counts_groups_without_zeroed_tables() {
        let text = "Group 0: (Blocks 0-32767) csum 0xb8bf [ITABLE_ZEROED]\n  Primary superblock\nGroup 1: (Blocks 32768-65535) csum 0x7f [INODE_UNINIT, BLOCK_UNINIT]\nGroup 2: (Blocks 65536-98303) csum 0x9c [INODE_UNINIT, ITABLE_ZEROED]\n";
        assert_eq!(count_not_zeroed(text), 1);
    }
}
