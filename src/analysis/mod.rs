//! From trial records to figures: summaries, confidence intervals, significance tests
//! and the comparison of two result sets.

pub mod compare;
pub mod stats;
