//! Shared by the engines' tests: a run control that records every promise a run
//! marks, with the bytes the file held the moment it was marked.

use super::RunControl;

/// Every `durable-range` label the run marks, with what the file held right then.
pub(crate) type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, u64, u64, Vec<u8>)>>>;

pub(crate) fn recording_ctl() -> (RunControl, Seen) {
    let seen: Seen = Default::default();
    let s = seen.clone();
    let ctl =
        RunControl::new().with_mark_hook(Some(crate::workload::MarkHook::new(move |label| {
            if let Some((path, off, len)) = crate::workload::parse_durable_range(label) {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; len as usize];
                let f = std::fs::File::open(path).expect("a promised file exists");
                f.read_exact_at(&mut buf, off)
                    .expect("a promised range exists");
                s.lock().unwrap().push((path.to_string(), off, len, buf));
            }
        })));
    (ctl, seen)
}
