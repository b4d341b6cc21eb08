//! The one place that names what is inside a results directory. Writers (the store,
//! the executor, the monitor, the CLI) and readers (report, compare, adaptive, the
//! HTML page) take every file and folder name from here, so a rename is one edit.
//!
//! ```text
//! <results>/
//!   spec.toml            the resolved experiment (what ran)
//!   spec.original.toml   the experiment file as given
//!   env.json             the machine, kernel and tools
//!   trials.jsonl         one record per trial, appended and fsync'ed
//!   crash.jsonl          `jbench crash`: one record per crash state checked
//!   summary.csv          the report in CSV, rewritten after a run
//!   report.html          the self-contained HTML report
//!   monitor/trial-N.jsonl     per-interval device and CPU series of trial N
//!   write-logs/trial-N.wlog   the emulated disks' write log of trial N
//!   outputs/trial-N/          what trial N's workload printed (fio's JSON, a command's
//!                             stdout and stderr)
//!   merge.json           `jbench merge`: the shard attempts merged, machines, gaps
//! ```

use std::path::{Path, PathBuf};

pub const TRIALS: &str = "trials.jsonl";
pub const CRASH: &str = "crash.jsonl";
pub const SPEC: &str = "spec.toml";
pub const ORIGINAL: &str = "spec.original.toml";
pub const ENV: &str = "env.json";
pub const SUMMARY: &str = "summary.csv";
pub const REPORT_HTML: &str = "report.html";
pub const MONITOR_DIR: &str = "monitor";
pub const WRITE_LOG_DIR: &str = "write-logs";
pub const OUTPUT_DIR: &str = "outputs";
/// `jbench merge`: which shard attempts a merged directory is made of (`scale::merge`).
pub const MERGE: &str = "merge.json";

/// `trial-N.jsonl`: a trial's monitor series, inside [`MONITOR_DIR`].
pub fn monitor_file_name(trial: usize) -> String {
    format!("trial-{trial}.jsonl")
}

/// `trial-N.wlog`: a trial's write log, inside [`WRITE_LOG_DIR`].
pub fn write_log_file_name(trial: usize) -> String {
    format!("trial-{trial}.wlog")
}

/// `<results>/outputs`: one folder per trial whose workload printed something.
pub fn output_dir(results: &Path) -> PathBuf {
    results.join(OUTPUT_DIR)
}

/// `trial-N`: a trial's folder inside [`OUTPUT_DIR`].
pub fn output_dir_name(trial: usize) -> String {
    format!("trial-{trial}")
}

/// `<results>/monitor`.
pub fn monitor_dir(results: &Path) -> PathBuf {
    results.join(MONITOR_DIR)
}

/// `<results>/write-logs`.
pub fn write_log_dir(results: &Path) -> PathBuf {
    results.join(WRITE_LOG_DIR)
}

/// `<results>/monitor/trial-N.jsonl`.
pub fn monitor_file(results: &Path, trial: usize) -> PathBuf {
    monitor_dir(results).join(monitor_file_name(trial))
}

/// `<results>/crash.jsonl`.
pub fn crash_file(results: &Path) -> PathBuf {
    results.join(CRASH)
}

/// `<results>/report.html`.
pub fn report_html(results: &Path) -> PathBuf {
    results.join(REPORT_HTML)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_files_are_named_by_index_inside_their_folders() {
        let r = Path::new("/r");
        assert_eq!(monitor_file(r, 7), Path::new("/r/monitor/trial-7.jsonl"));
        assert_eq!(
            write_log_dir(r).join(write_log_file_name(3)),
            Path::new("/r/write-logs/trial-3.wlog")
        );
        assert_eq!(report_html(r), Path::new("/r/report.html"));
        assert_eq!(crash_file(r), Path::new("/r/crash.jsonl"));
    }
}
