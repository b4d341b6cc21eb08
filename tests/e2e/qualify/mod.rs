//! Qualifying the user's own device.

mod measure_dir;
