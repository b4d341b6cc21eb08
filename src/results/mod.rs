//! What a run leaves behind: the results directory, its trial records and the
//! description of the machine that ran them.

pub mod crash;
pub mod envinfo;
pub mod layout;
pub mod monitor_series;
pub mod record;
pub mod store;
