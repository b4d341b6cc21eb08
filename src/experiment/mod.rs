//! What to measure: the experiment file (`spec`), the configurations it expands to
//! (`config`), its `[crash]` table (`crash_options`) and its `[writeback]` table
//! (`writeback_options`), the built-in presets, the
//! ordered plan of trials and what a plan costs in time and space, one trial at a time
//! or several at once (`slots`, `schedule`). Nothing here
//! touches a device.

pub mod config;
pub mod crash_options;
pub mod estimate;
pub mod footprint;
pub mod plan;
pub mod presets;
pub mod schedule;
pub mod slots;
pub mod spec;
pub mod writeback_options;
