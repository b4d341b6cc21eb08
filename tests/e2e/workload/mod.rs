//! The workload engines against real file systems and the real tools.

mod command_workload;
mod fio_workload;
mod iozone_fio;
mod postmark_real;
