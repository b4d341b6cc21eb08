//! What a `durable-range` promise must hold after recovery, per workload kind.

/// The bytes a durable range must hold after recovery, for a workload of `kind` with
/// the trial's recorded `params`; `None` when this workload's content cannot be
/// determined (the oracle then checks only that the range exists).
pub fn range_content(
    _kind: &str,
    _params: &serde_json::Value,
    _rel_path: &str,
    _offset: u64,
    _len: u64,
) -> Option<Vec<u8>> {
    None
}

/// Whether a workload of `kind` with these `params` makes promises at all.
pub fn promises_of(_kind: &str, _params: &serde_json::Value) -> bool {
    false
}
