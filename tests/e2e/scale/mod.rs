//! Scale-out: merging shards and the schedulers that run them.

mod scale_merge;
mod scale_schedulers;
