//! Real-time priorities for the daemon's threads.
//!
//! A request's answer waits for the daemon's threads to run. At normal priority they
//! compete with whatever else the host runs on their CPU (kernel workers, the
//! benchmark's own threads, a compiler): on a loaded two-CPU VM that more than doubled
//! the mean time of a 4 KiB request through FUSE (docs/devices.md, "What the floor is
//! made of"). The threads that receive requests run at `SCHED_FIFO` [`SERVE`]; the
//! completion thread, which sends answers at their deadlines, one above
//! ([`ANSWERS`]), so a due answer still preempts a burst of writes being copied into
//! the image. None of them runs long: each waits for a request or a deadline.

/// The threads that receive requests (the FUSE session's).
pub(super) const SERVE: i32 = 1;
/// The completion thread.
pub(super) const ANSWERS: i32 = 2;

/// Puts the calling thread (and the threads it starts afterwards) at `SCHED_FIFO`
/// [`SERVE`]; without the privilege it stays as it was, and the answer is `false`.
pub(super) fn serve_realtime() -> bool {
    let param = libc::sched_param {
        sched_priority: SERVE,
    };
    // SAFETY: plain syscall on the calling thread with a valid parameter block.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}
