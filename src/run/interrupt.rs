//! Ctrl-C and SIGTERM: the first asks the current phase to stop so the rig can tear
//! down cleanly; a second one exits at once (then `jbench cleanup` releases leftovers).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::workload::RunControl;

/// Installs the handlers and returns the control the runner and engines poll.
pub fn install() -> Result<RunControl> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // Order matters: the conditional shutdown sees the flag from the first signal.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(RunControl::from_flag(flag))
}
