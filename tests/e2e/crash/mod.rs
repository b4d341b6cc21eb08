//! The crash lab: recordings, crash states, recovery and the bugs it must find.

mod apps;
mod crash_bugs;
mod crash_fio;
mod fast_path_bugs;
mod lab;
mod removed_files;
mod run_crash;
mod second_fs;
mod torn_pages;
mod user_verdict;
mod verdict_cache;
