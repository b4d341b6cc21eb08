//! Emulated disks: the device daemon, its models and write log, through the library and the CLI.

mod emulated;
mod emulated_cli;
mod emulated_raid;
