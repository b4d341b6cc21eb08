//! Whole runs through the CLI: the runner, monitors, the environment record, first contact and output.

mod cli_output;
mod cli_scripted;
mod env_record;
mod first_contact;
mod jobs_scripted;
mod monitor;
mod neighbour;
mod tiny_runs;
