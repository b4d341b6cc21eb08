//! Building rigs: devices, file systems, journals, the refusal to touch real devices.

mod provision;
mod real_devices;
