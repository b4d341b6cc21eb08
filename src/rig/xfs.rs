//! Making XFS file systems with an internal or external log, and reading the log's
//! place and size back with xfs_info.

use std::path::Path;

use anyhow::{Context, Result};

use crate::rig::cmd;

/// Logical sector size of a block device; zram and 4Kn disks report 4096.
pub fn sector_size(dev: &Path) -> u64 {
    let real = std::fs::canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::read_to_string(format!("/sys/class/block/{name}/queue/logical_block_size"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(512)
}

/// `mkfs.xfs -f -l [logdev=LOG,]size=BYTES [extra] DEV`. `-f` because jbench's own
/// device checks decide what may be overwritten; `-s size=4096` when either device has
/// 4 KiB sectors, which XFS requires of an external log on such a device.
pub fn make_xfs(dev: &Path, log: Option<&Path>, log_bytes: u64, extra: &[String]) -> Result<()> {
    let dev_s = dev.to_string_lossy();
    let log_opt = match log {
        Some(l) => format!("logdev={},size={log_bytes}", l.display()),
        None => format!("size={log_bytes}"),
    };
    let big_sectors = sector_size(dev) == 4096 || log.is_some_and(|l| sector_size(l) == 4096);
    let mut args: Vec<&str> = vec!["-f", "-q"];
    if big_sectors {
        args.extend(["-s", "size=4096"]);
    }
    args.extend(["-l", log_opt.as_str()]);
    args.extend(extra.iter().map(String::as_str));
    args.push(&dev_s);
    cmd::run("mkfs.xfs", &args).with_context(|| {
        format!(
            "cannot make XFS on {} (is xfsprogs installed? apt-get install xfsprogs)",
            dev.display()
        )
    })?;
    Ok(())
}

/// Where the log of a mounted XFS is and how big, from `xfs_info MOUNTPOINT`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogInfo {
    /// `None` for an internal log, else the log device path.
    pub device: Option<String>,
    pub bytes: u64,
}

pub fn log_info(mount_point: &Path) -> Result<LogInfo> {
    let out = cmd::run("xfs_info", &[&mount_point.to_string_lossy()])?;
    parse_log_info(&out).with_context(|| {
        format!(
            "xfs_info {} printed no log line:\n{out}",
            mount_point.display()
        )
    })
}

/// Parses `log      =internal log           bsize=4096   blocks=16384, version=2`.
pub fn parse_log_info(text: &str) -> Option<LogInfo> {
    let line = text.lines().find(|l| l.starts_with("log"))?;
    let rest = line.split_once('=')?.1;
    let place = rest.split("bsize=").next()?.trim();
    let field = |name: &str| -> Option<u64> {
        rest.split(|c: char| c.is_whitespace() || c == ',')
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse().ok())
    };
    let bytes = field("bsize=")? * field("blocks=")?;
    let device = (place != "internal log" && place != "internal").then(|| place.to_string());
    Some(LogInfo { device, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_internal_and_external_logs() {
        let internal = "data     =                       bsize=4096   blocks=131072, imaxpct=25\nlog      =internal log           bsize=4096   blocks=16384, version=2\n";
        assert_eq!(
            parse_log_info(internal),
            Some(LogInfo {
                device: None,
                bytes: 64 << 20
            })
        );
        let external = "log      =/dev/loop1             bsize=4096   blocks=16384, version=2\n";
        assert_eq!(
            parse_log_info(external),
            Some(LogInfo {
                device: Some("/dev/loop1".into()),
                bytes: 64 << 20
            })
        );
        assert_eq!(parse_log_info("naming   =version 2\n"), None);
    }
}
