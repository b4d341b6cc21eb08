//! What waits for its answer: the deadline-ordered queue of answers the completion
//! thread sends, each with its write-log entry, and the stalls a test may inject. The
//! FUSE threads (`state`) fill it and the completion thread (`completion`) empties it.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fuser::{ReplyData, ReplyEmpty, ReplyWrite};

use crate::emu::writelog::RecordKind;

/// A stall armed by the control command `inject stall io|answer MS` (a testing aid,
/// docs/devices.md "Stalls"): the next disk request's FUSE thread sleeps MS before its
/// image I/O (`io`), or the completion thread sleeps MS before sending the next answer
/// it sends (`answer`). One daemon per process, so one per process.
pub(super) struct InjectedStalls {
    io_ms: AtomicU64,
    answer_ms: AtomicU64,
}

pub(super) static INJECTED: InjectedStalls = InjectedStalls {
    io_ms: AtomicU64::new(0),
    answer_ms: AtomicU64::new(0),
};

impl InjectedStalls {
    /// Arms a stall of `ms` at `at` (`io` or `answer`).
    pub(super) fn arm(&self, at: &str, ms: u64) -> anyhow::Result<()> {
        match at {
            "io" => self.io_ms.store(ms, Ordering::SeqCst),
            "answer" => self.answer_ms.store(ms, Ordering::SeqCst),
            _ => anyhow::bail!("a stall is injected at `io` or `answer`, not `{at}`"),
        }
        Ok(())
    }

    /// Sleeps out an armed `io` stall, once.
    pub(super) fn io(&self) {
        Self::take(&self.io_ms);
    }

    /// Sleeps out an armed `answer` stall, once.
    pub(super) fn answer(&self) {
        Self::take(&self.answer_ms);
    }

    fn take(slot: &AtomicU64) {
        // A load first: the common case (nothing armed) stays a plain read.
        if slot.load(Ordering::Relaxed) != 0 {
            let ms = slot.swap(0, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

pub(super) enum Answer {
    Write(ReplyWrite, u32),
    Data(ReplyData, Vec<u8>),
    Empty(ReplyEmpty),
}

impl Answer {
    pub(super) fn send(self) {
        match self {
            Answer::Write(r, n) => r.written(n),
            Answer::Data(r, d) => r.data(&d),
            Answer::Empty(r) => r.ok(),
        }
    }
}

pub(super) struct LogEntry {
    pub(super) kind: RecordKind,
    pub(super) disk: u8,
    pub(super) offset: u64,
    pub(super) len: u64,
    /// The event-clock tick of the request's arrival; `None` for a marker, which
    /// arrives when it is written.
    pub(super) issued: Option<u64>,
    pub(super) payload: Vec<u8>,
}

pub(super) struct Pending {
    pub(super) at: Instant,
    pub(super) seq: u64,
    pub(super) disk: Option<usize>,
    pub(super) answer: Answer,
    pub(super) log: Option<LogEntry>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // Reversed: BinaryHeap is a max-heap and the earliest deadline must come first.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) heap: BinaryHeap<Pending>,
    pub(super) closed: bool,
}
