//! Support for the `jbench` command line: checked output, one-line errors and exit
//! statuses.

pub mod exit;
