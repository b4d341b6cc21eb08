//! Qualifying the user's own device.

mod qualify;
