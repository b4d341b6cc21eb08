//! zram RAM disks, added with `hot_add` and removed with `hot_remove`. jbench never
//! touches a zram index it did not add itself.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

const CONTROL: &str = "/sys/class/zram-control";

#[derive(Debug)]
pub struct ZramDevice {
    index: u32,
    device: PathBuf,
    released: bool,
}

impl ZramDevice {
    /// Adds a zram device of `size` bytes. `note` runs right after the index is known,
    /// so a crash before teardown still leaves a record for `jbench cleanup`.
    pub fn add(size: u64, note: impl FnOnce(u32) -> Result<()>) -> Result<Self> {
        if !Path::new(CONTROL).exists() {
            let _ = crate::rig::cmd::run("modprobe", &["zram", "num_devices=0"]);
        }
        let text = fs::read_to_string(format!("{CONTROL}/hot_add")).with_context(|| {
            format!("cannot add a zram device ({CONTROL}/hot_add); is the zram module available?")
        })?;
        let index: u32 = text
            .trim()
            .parse()
            .with_context(|| format!("hot_add returned `{}`", text.trim()))?;
        let dev = Self {
            index,
            device: PathBuf::from(format!("/dev/zram{index}")),
            released: false,
        };
        note(index)?;
        fs::write(dev.sys("disksize"), size.to_string())
            .with_context(|| format!("cannot size zram{index} to {size} bytes"))?;
        wait_for_node(&dev.device)?;
        Ok(dev)
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn path(&self) -> &Path {
        &self.device
    }

    fn sys(&self, attr: &str) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}/{attr}", self.index))
    }

    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        remove(self.index)?;
        self.released = true;
        Ok(())
    }
}

impl Drop for ZramDevice {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
    }
}

/// Resets and removes zram device `index` (one that jbench added).
pub fn remove(index: u32) -> Result<()> {
    let sys = format!("/sys/block/zram{index}");
    if !Path::new(&sys).exists() {
        return Ok(());
    }
    let mut last = None;
    for attempt in 0..10 {
        let reset = fs::write(format!("{sys}/reset"), "1");
        let removed = fs::write(format!("{CONTROL}/hot_remove"), index.to_string());
        match (reset, removed) {
            (_, Ok(())) => return Ok(()),
            (_, Err(e)) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(50 * (attempt + 1)));
    }
    anyhow::bail!(
        "cannot remove zram{index}: {}",
        last.map(|e| e.to_string()).unwrap_or_default()
    )
}

fn wait_for_node(dev: &Path) -> Result<()> {
    for _ in 0..100 {
        if dev.exists() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    anyhow::bail!("{} did not appear", dev.display())
}
