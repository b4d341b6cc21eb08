//! Where a directory lives: its mount (from `/proc/self/mountinfo`, the longest mount
//! point that is a prefix of it) and the block queue under that mount, whose
//! scheduler, write cache and rotational flag decide how fast a flush returns.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A directory that holds images, with the file system and disk it lives on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImageLocation {
    pub role: String,
    pub path: String,
    pub filesystem: String,
    /// The mount's source, e.g. `/dev/vda1`.
    pub device: String,
    /// The mount point the path is under.
    pub mount_point: String,
    /// Per-mount options (mountinfo's sixth field), e.g. `rw,relatime`.
    pub mount_options: String,
    /// The file system's own options (mountinfo's last field), e.g. `rw,discard`.
    pub superblock_options: String,
    /// When the mount's device is a loop device: the file behind it. `queue` is then
    /// the queue of the disk that file lives on, when it can be found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_backing_file: Option<String>,
    /// The block queue of the disk under the mount; `None` without one (tmpfs,
    /// overlay, a network file system).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<BlockQueue>,
}

/// A disk's request queue settings, from `/sys/block/<disk>/queue`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlockQueue {
    /// Kernel name of the whole disk (`vda` for a mount of `/dev/vda1`).
    pub disk: String,
    /// The I/O scheduler in use (the bracketed name of `queue/scheduler`).
    pub scheduler: String,
    /// `queue/write_cache`: `write back` (flushes are sent) or `write through`.
    pub write_cache: String,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
}

impl BlockQueue {
    /// The queue of kernel block device `name` (a disk or a partition, whose settings
    /// are its disk's); `None` when sysfs has no such device.
    pub fn of(name: &str) -> Option<BlockQueue> {
        Self::at(&Path::new("/sys/class/block").join(name))
    }

    /// The queue of the block device with device number `major:minor`.
    fn of_devno(devno: &str) -> Option<BlockQueue> {
        Self::at(&Path::new("/sys/dev/block").join(devno))
    }

    fn at(sys: &Path) -> Option<BlockQueue> {
        let sys = std::fs::canonicalize(sys).ok()?;
        // A partition has no queue of its own: its parent directory is the disk.
        let disk = if sys.join("partition").exists() {
            sys.parent()?.to_path_buf()
        } else {
            sys
        };
        let queue = disk.join("queue");
        if !queue.is_dir() {
            return None;
        }
        let read = |f: &str| {
            std::fs::read_to_string(queue.join(f))
                .map(|t| t.trim().to_string())
                .unwrap_or_default()
        };
        Some(BlockQueue {
            disk: disk.file_name()?.to_string_lossy().into_owned(),
            scheduler: selected_scheduler(&read("scheduler")),
            write_cache: read("write_cache"),
            rotational: match read("rotational").as_str() {
                "0" => Some(false),
                "1" => Some(true),
                _ => None,
            },
        })
    }
}

/// The bracketed name of a `queue/scheduler` line (`none [mq-deadline] kyber`); a line
/// with one name and no brackets is that name.
pub fn selected_scheduler(line: &str) -> String {
    if let Some(start) = line.find('[') {
        if let Some(len) = line[start + 1..].find(']') {
            return line[start + 1..start + 1 + len].to_string();
        }
    }
    match line.split_whitespace().collect::<Vec<_>>()[..] {
        [one] => one.to_string(),
        _ => String::new(),
    }
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq)]
pub struct MountInfo {
    /// `major:minor` of the mounted device.
    pub devno: String,
    pub mount_point: PathBuf,
    pub mount_options: String,
    pub fstype: String,
    pub source: String,
    pub superblock_options: String,
}

pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let h: Vec<&str> = head.split(' ').collect();
            let mut t = tail.split(' ');
            Some(MountInfo {
                devno: h.get(2)?.to_string(),
                mount_point: PathBuf::from(crate::rig::mounts::unescape(h.get(4)?)),
                mount_options: h.get(5)?.to_string(),
                fstype: t.next()?.to_string(),
                source: crate::rig::mounts::unescape(t.next()?),
                superblock_options: t.next().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// The mount `path` is under (the longest mount point that is a prefix of its nearest
/// existing ancestor), from `/proc/self/mountinfo`. Of mounts stacked on one point,
/// the last one listed is the one visible.
pub fn mount_of(path: &Path) -> Option<MountInfo> {
    let probe = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let real = std::fs::canonicalize(probe).unwrap_or_else(|_| probe.to_path_buf());
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<MountInfo> = None;
    for m in parse_mountinfo(&text) {
        if !real.starts_with(&m.mount_point) {
            continue;
        }
        let depth = m.mount_point.components().count();
        if best
            .as_ref()
            .is_none_or(|b| depth >= b.mount_point.components().count())
        {
            best = Some(m);
        }
    }
    best
}

/// The file system and disk `path` lives on. A loop device is followed to the disk
/// of its backing file (one level: a loop device on a loop device keeps the inner
/// loop device's own queue).
pub fn location(role: &str, path: &Path) -> ImageLocation {
    let Some(m) = mount_of(path) else {
        return ImageLocation {
            role: role.to_string(),
            path: path.display().to_string(),
            ..Default::default()
        };
    };
    let mut queue = BlockQueue::of_devno(&m.devno);
    let mut loop_backing_file = None;
    if let Some(q) = queue.as_ref().filter(|q| q.disk.starts_with("loop")) {
        let dev = Path::new("/dev").join(&q.disk);
        if let Some(file) = crate::rig::loopdev::backing_file(&dev) {
            if let Some(under) = mount_of(&file).and_then(|b| BlockQueue::of_devno(&b.devno)) {
                queue = Some(under);
            }
            loop_backing_file = Some(file.display().to_string());
        }
    }
    ImageLocation {
        role: role.to_string(),
        path: path.display().to_string(),
        filesystem: m.fstype,
        device: m.source,
        mount_point: m.mount_point.display().to_string(),
        mount_options: m.mount_options,
        superblock_options: m.superblock_options,
        loop_backing_file,
        queue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_is_the_bracketed_name() {
        assert_eq!(
            selected_scheduler("none [mq-deadline] kyber bfq"),
            "mq-deadline"
        );
        assert_eq!(selected_scheduler("[none] mq-deadline"), "none");
        assert_eq!(selected_scheduler("none"), "none");
        assert_eq!(selected_scheduler(""), "");
    }

    #[test]
    fn mountinfo_lines_with_optional_fields_and_escapes() {
        let text = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n\
                    40 27 7:3 / /mnt/a\\040b rw,noatime - xfs /dev/loop3 rw,attr2\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].devno, "254:0");
        assert_eq!(m[0].mount_options, "rw,relatime");
        assert_eq!(m[0].superblock_options, "rw,discard");
        assert_eq!(m[1].mount_point, PathBuf::from("/mnt/a b"));
        assert_eq!(
            (m[1].fstype.as_str(), m[1].source.as_str()),
            ("xfs", "/dev/loop3")
        );
    }

    #[test]
    fn root_location_matches_mountinfo_and_sysfs() {
        let loc = location("work_dir", Path::new("/var/tmp/jbench-does-not-exist/x"));
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let line = parse_mountinfo(&text)
            .into_iter()
            .filter(|m| Path::new("/var/tmp").starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.components().count())
            .unwrap();
        assert_eq!(loc.mount_options, line.mount_options);
        assert_eq!(loc.filesystem, line.fstype);
        if let Some(q) = &loc.queue {
            let listed =
                std::fs::read_to_string(format!("/sys/block/{}/queue/scheduler", q.disk)).unwrap();
            assert!(
                listed
                    .split_whitespace()
                    .any(|s| s.trim_matches(['[', ']']) == q.scheduler),
                "{} not in {listed}",
                q.scheduler
            );
        }
    }
}
