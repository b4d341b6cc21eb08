//! The workload itself, independent of the file system: the file pool, the
//! transactions and their counts, driven through [`FileOps`] so that a simulation
//! ([`simulate`]) and the real run make the same choices.

use super::*;

/// One entry of PostMark's file table; `size == 0` marks a free slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    pub size: u32,
    /// The file's name: the value of the creation counter when it was made.
    pub number: u32,
    /// Index into the configured locations (0 without any).
    pub location: u32,
    /// `s<n>` subdirectory, or `None` with fewer than two subdirectories.
    pub subdir: Option<u32>,
}

/// What PostMark counts. The `f32` sums copy its `float` counters, whose rounding
/// shows in the "megabytes" it prints once the totals pass 2^24 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub created: u64,
    pub deleted: u64,
    pub read: u64,
    pub appended: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub bytes_read_f32: f32,
    pub bytes_written_f32: f32,
}

impl Counts {
    pub(super) fn add_written(&mut self, n: u32) {
        self.bytes_written += u64::from(n);
        self.bytes_written_f32 += n as f32;
    }

    pub(super) fn add_read(&mut self, n: u32) {
        self.bytes_read += u64::from(n);
        self.bytes_read_f32 += n as f32;
    }
}

/// The file-system side of the workload: the engine calls these in PostMark's
/// order; the real implementation issues the system calls, tests just record.
pub trait FileOps {
    /// Creates `slot`'s file with `slot.size` bytes of `source`.
    fn create(&mut self, source: &[u8], slot: &Slot) -> anyhow::Result<()>;
    /// Reads `slot`'s file whole.
    fn read(&mut self, slot: &Slot) -> anyhow::Result<()>;
    /// Appends `block` bytes of `source` to `slot`'s file.
    fn append(&mut self, source: &[u8], slot: &Slot, block: u32) -> anyhow::Result<()>;
    fn delete(&mut self, slot: &Slot) -> anyhow::Result<()>;
}

/// Does nothing: for computing counts without a file system.
pub struct NoFiles;

impl FileOps for NoFiles {
    fn create(&mut self, _: &[u8], _: &Slot) -> anyhow::Result<()> {
        Ok(())
    }
    fn read(&mut self, _: &Slot) -> anyhow::Result<()> {
        Ok(())
    }
    fn append(&mut self, _: &[u8], _: &Slot, _: u32) -> anyhow::Result<()> {
        Ok(())
    }
    fn delete(&mut self, _: &Slot) -> anyhow::Result<()> {
        Ok(())
    }
}

/// PostMark's state during a run: random stream, data buffer, file table, counters.
pub struct Engine {
    pub(super) cfg: Postmark,
    pub(super) rng: Mt19937,
    /// `2 * high` printable bytes; every write takes a prefix of it.
    pub(super) source: Vec<u8>,
    pub(super) table: Vec<Slot>,
    /// Where the search for a free slot starts (`file_allocated`).
    pub(super) allocated: usize,
    /// Running sums of the locations' weights: draw `r` picks the first location
    /// whose sum exceeds it, as PostMark's index of `weight` copies per location
    /// would, without holding up to 2^31 entries.
    pub(super) location_bounds: Vec<u64>,
    pub counts: Counts,
}

impl Engine {
    /// `sgenrand(seed)`, then the data buffer: the first `2 * high` draws.
    pub fn new(cfg: &Postmark) -> Self {
        let mut rng = Mt19937::sgenrand(cfg.seed);
        let source = (0..2 * cfg.size_high as usize)
            .map(|_| 32 + rng.rnd(95) as u8)
            .collect();
        let location_bounds = cfg
            .locations
            .iter()
            .scan(0u64, |sum, l| {
                *sum += u64::from(l.weight);
                Some(*sum)
            })
            .collect();
        Engine {
            cfg: cfg.clone(),
            rng,
            source,
            table: vec![Slot::default(); 2 * cfg.number as usize],
            allocated: 0,
            location_bounds,
            counts: Counts::default(),
        }
    }

    pub fn source(&self) -> &[u8] {
        &self.source
    }

    /// `find_free_file`: the next slot if free, else the first free one.
    pub(super) fn find_free(&mut self) -> Option<usize> {
        let at = self.allocated;
        let slot = if at < self.table.len() && self.table[at].size == 0 {
            at
        } else {
            self.table.iter().position(|s| s.size == 0)?
        };
        self.allocated = slot + 1;
        Some(slot)
    }

    /// `find_used_file`: redraws until it hits a used slot. Only called while
    /// files exist (the transaction loop stops when none are left).
    #[inline]
    pub(super) fn find_used(&mut self) -> usize {
        let slots = self.table.len() as u32;
        loop {
            let i = self.rng.rnd(slots) as usize;
            if self.table[i].size != 0 {
                return i;
            }
        }
    }

    /// `create_file`: location, subdirectory, name, then size, in that order.
    pub(super) fn create(&mut self, fs: &mut impl FileOps) -> anyhow::Result<()> {
        let Some(free) = self.find_free() else {
            return Ok(()); // A full table: PostMark silently creates nothing.
        };
        let location = match self.location_bounds.last() {
            _ if self.cfg.locations.len() <= 1 => 0,
            // validate() keeps the total within a C int.
            Some(&total) => {
                let r = u64::from(self.rng.rnd(total as u32));
                self.location_bounds.partition_point(|&b| b <= r) as u32
            }
            None => 0,
        };
        let subdir = (self.cfg.subdirectories > 1).then(|| self.rng.rnd(self.cfg.subdirectories));
        self.counts.created += 1;
        let size = self.cfg.size_low + self.rng.rnd(self.cfg.size_high - self.cfg.size_low);
        let slot = Slot {
            size,
            number: self.counts.created as u32,
            location,
            subdir,
        };
        self.table[free] = slot;
        fs.create(&self.source, &slot)?;
        self.counts.add_written(size);
        Ok(())
    }

    pub(super) fn read(&mut self, i: usize, fs: &mut impl FileOps) -> anyhow::Result<()> {
        let slot = self.table[i];
        fs.read(&slot)?;
        self.counts.add_read(slot.size);
        self.counts.read += 1;
        Ok(())
    }

    /// `append_file`: a file already at `high` is left alone, without a draw.
    pub(super) fn append(&mut self, i: usize, fs: &mut impl FileOps) -> anyhow::Result<()> {
        let slot = self.table[i];
        let high = self.cfg.size_high;
        if slot.size >= high {
            return Ok(());
        }
        let block = self.rng.rnd(high - slot.size) + 1;
        fs.append(&self.source, &slot, block)?;
        self.table[i].size += block;
        self.counts.add_written(block);
        self.counts.appended += 1;
        Ok(())
    }

    pub(super) fn delete(&mut self, i: usize, fs: &mut impl FileOps) -> anyhow::Result<()> {
        let slot = self.table[i];
        if slot.size == 0 {
            return Ok(());
        }
        fs.delete(&slot)?;
        self.table[i].size = 0;
        self.counts.deleted += 1;
        Ok(())
    }

    /// The pool: `number` creates.
    pub fn create_pool(&mut self, fs: &mut impl FileOps, ctl: &RunControl) -> anyhow::Result<()> {
        for _ in 0..self.cfg.number {
            stop_check(ctl)?;
            self.create(fs)?;
        }
        Ok(())
    }

    /// One transaction: a read or append, then a create or delete, each pair
    /// skipped when its bias is -1.
    pub(super) fn transaction(&mut self, fs: &mut impl FileOps) -> anyhow::Result<()> {
        if self.cfg.bias_read != -1 {
            // RND() is unsigned in C; biases 0..=10 compare the same either way.
            if (self.rng.rnd(10) as i32) < self.cfg.bias_read {
                let i = self.find_used();
                self.read(i, fs)?;
            } else {
                let i = self.find_used();
                self.append(i, fs)?;
            }
        }
        if self.cfg.bias_create != -1 {
            if (self.rng.rnd(10) as i32) < self.cfg.bias_create {
                self.create(fs)?;
            } else {
                let i = self.find_used();
                self.delete(i, fs)?;
            }
        }
        Ok(())
    }

    /// Runs the transactions; returns how many ran. Fewer than configured means
    /// PostMark's "out of files!": every file was deleted.
    pub fn run_transactions(
        &mut self,
        fs: &mut impl FileOps,
        ctl: &RunControl,
    ) -> anyhow::Result<u32> {
        for done in 0..self.cfg.transactions {
            stop_check(ctl)?;
            if self.counts.created == self.counts.deleted {
                return Ok(done);
            }
            self.transaction(fs)?;
        }
        Ok(self.cfg.transactions)
    }

    /// After a failure: unlinks every file the table says may exist (a create that
    /// failed half-way included), ignoring ones already gone. Tries them all; the
    /// error counts what was left.
    pub(super) fn remove_all(&mut self, fs: &mut SysFiles) -> anyhow::Result<()> {
        let mut left = 0u64;
        let mut first = None;
        for slot in self.table.iter_mut().filter(|s| s.size != 0) {
            match fs.remove_quietly(slot) {
                Ok(()) => slot.size = 0,
                Err(e) => {
                    left += 1;
                    first.get_or_insert(e);
                }
            }
        }
        match first {
            None => Ok(()),
            Some(e) => bail!("{left} file(s) left, the first: {e}"),
        }
    }

    /// Deletes what remains, in slot order; returns how many.
    pub fn delete_rest(&mut self, fs: &mut impl FileOps, ctl: &RunControl) -> anyhow::Result<u64> {
        let before = self.counts.deleted;
        for i in 0..self.table.len() {
            if self.table[i].size != 0 {
                stop_check(ctl)?;
                self.delete(i, fs)?;
            }
        }
        Ok(self.counts.deleted - before)
    }
}

#[inline]
pub(super) fn stop_check(ctl: &RunControl) -> anyhow::Result<()> {
    if ctl.stop_requested() {
        Err(Interrupted.into())
    } else {
        Ok(())
    }
}

/// The counts of a whole run, as PostMark reports them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    pub counts: Counts,
    /// Files created before the transactions (PostMark prints `number`).
    pub creation_alone: u64,
    pub deletion_alone: u64,
    pub transactions_done: u32,
}

impl Tally {
    pub fn out_of_files(&self, cfg: &Postmark) -> bool {
        self.transactions_done < cfg.transactions
    }
}

/// The run's counts without touching a file system.
pub fn simulate(cfg: &Postmark) -> Tally {
    let ctl = RunControl::new();
    let mut engine = Engine::new(cfg);
    let never = "NoFiles cannot fail";
    engine.create_pool(&mut NoFiles, &ctl).expect(never);
    let creation_alone = engine.counts.created;
    let transactions_done = engine.run_transactions(&mut NoFiles, &ctl).expect(never);
    let deletion_alone = engine.delete_rest(&mut NoFiles, &ctl).expect(never);
    Tally {
        counts: engine.counts,
        creation_alone,
        deletion_alone,
        transactions_done,
    }
}
