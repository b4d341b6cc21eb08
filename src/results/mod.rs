//! What a run leaves behind: the results directory (its [`layout`], the [`store`] that
//! writes it, the one reader [`open`]), its trial records, crash states and merge
//! record, and the description of the machine that ran them.

pub mod compare;
pub mod crash;
pub mod envinfo;
pub mod fingerprint;
pub mod layout;
pub mod merged;
mod open;
pub mod record;
pub mod store;

#[cfg(test)]
pub(crate) use open::mark_recordings;
pub use open::{open, read_spec, read_trials, Results, Trials};
