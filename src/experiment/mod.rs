//! What to measure: the experiment file (`spec`), the configurations it expands to
//! (`config`), the built-in presets and the ordered plan of trials. Nothing here
//! touches a device.

pub mod config;
pub mod estimate;
pub mod footprint;
pub mod plan;
pub mod presets;
pub mod spec;
