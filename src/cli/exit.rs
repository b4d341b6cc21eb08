//! How the command line ends: standard output written with its errors checked, one
//! line for an error or a bug, and the exit status a shell expects (141 for a closed
//! pipe, 130 for an interrupt).

use std::io::Write;
use std::process::ExitCode;

/// Reports `e` on one line. A closed standard output (`jbench ... | head -1`) ends
/// jbench quietly, with the status of a process killed by SIGPIPE, as other Unix
/// tools do; jbench ignores SIGPIPE so that a closed pipe cannot kill it mid-run.
pub fn fail(e: anyhow::Error) -> ExitCode {
    if is_broken_pipe(&e) {
        return ExitCode::from(128 + libc::SIGPIPE as u8);
    }
    // An interrupted workload run from the command line ends as a shell expects of
    // Ctrl-C; the engine has already said what it removed.
    if e.chain().any(|c| c.is::<crate::workload::Interrupted>()) {
        let _ = writeln!(std::io::stderr(), "jbench: {e:#}");
        return ExitCode::from(130);
    }
    let _ = writeln!(std::io::stderr(), "jbench: error: {e:#}");
    ExitCode::FAILURE
}

pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<StdoutError>())
        .any(|s| s.0.kind() == std::io::ErrorKind::BrokenPipe)
}

/// The last guard: a bug shows as one line naming where it happened, not as a
/// backtrace, unless RUST_BACKTRACE asks for one.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let place = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_else(|| "an unknown place".to_string());
        let mut err = std::io::stderr().lock();
        // `print!` in code not yet on a checked write panics with this message: say
        // what a checked write says (nothing, for a closed pipe), not "internal error".
        if let Some(reason) = message.strip_prefix("failed printing to stdout: ") {
            if !reason.starts_with("Broken pipe") {
                let reason = without_os_error(reason);
                let _ = writeln!(
                    err,
                    "jbench: error: cannot write to standard output: {reason}"
                );
            }
            return;
        }
        let _ = writeln!(
            err,
            "jbench: internal error: {message} at {place}; please report it"
        );
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| !v.is_empty() && v != "0") {
            let _ = writeln!(err, "{}", std::backtrace::Backtrace::force_capture());
        }
    }));
}

/// The system's words without Rust's " (os error N)" suffix.
fn without_os_error(text: &str) -> &str {
    text.split(" (os error").next().unwrap_or(text)
}

/// A failed write to standard output (closed pipe, full disk).
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.to_string();
        write!(
            f,
            "cannot write to standard output: {}",
            without_os_error(&text)
        )
    }
}

impl std::error::Error for StdoutError {}

pub fn write_out(args: std::fmt::Arguments) -> std::result::Result<(), StdoutError> {
    std::io::stdout()
        .lock()
        .write_fmt(args)
        .map_err(StdoutError)
}
