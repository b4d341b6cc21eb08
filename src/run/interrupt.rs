//! Ctrl-C and SIGTERM: the first asks the current phase to stop so the rig can tear
//! down cleanly; a second one (an impatient Ctrl-C, or `timeout` and the terminal both
//! signalling) is acknowledged and does not abandon the cleanup; a third exits at once,
//! naming what is still mounted or attached and `jbench cleanup`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Result;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::workload::RunControl;

/// The process's stop flag: one signal thread per process, however many commands
/// install it.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handler (once per process) and returns the control the runner and
/// engines poll.
pub fn install() -> Result<RunControl> {
    if let Some(flag) = STOP.get() {
        return Ok(RunControl::from_flag(Arc::clone(flag)));
    }
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let stop = Arc::clone(&flag);
    std::thread::Builder::new()
        .name("jbench-signals".into())
        .spawn(move || {
            let mut seen = 0;
            for _ in signals.forever() {
                seen += 1;
                match seen {
                    1 => stop.store(true, Ordering::SeqCst),
                    2 => crate::events::emit(crate::events::Event::Stopping),
                    _ => forced_exit(),
                }
            }
        })?;
    let _ = STOP.set(Arc::clone(&flag));
    Ok(RunControl::from_flag(flag))
}

/// Exits with 130 before the cleanup is done; the last line says what is left.
fn forced_exit() -> ! {
    crate::events::emit(crate::events::Event::ForcedExit {
        left: crate::run::cleanup::held_by_live_sessions(),
    });
    std::process::exit(130)
}
