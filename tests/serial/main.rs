//! Integration tests that must have the machine to themselves, one at a time
//! ([`alone`]): they time the emulated disk's answers (`emu_stall`,
//! `emulated_timing`, `qualify_fit`), scan every jbench session on the machine
//! (`trust`), race the kernel's loop devices (`swap_race`), or re-run this binary
//! with another environment (`require`), or change the kernel's writeback settings,
//! which are the whole host's (`writeback`). Cargo runs test binaries one after another,
//! so nothing of `tests/e2e` runs beside them either.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod emu_stall;
mod emulated_timing;
mod qualify_fit;
mod require;
mod shared_host;
mod swap_race;
mod trust;
mod writeback;

/// Held by every test of this binary for its whole run.
pub fn alone() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
