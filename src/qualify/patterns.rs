//! Which of qualify's patterns to run (`--only`), and the share of `--seconds` each
//! gets.

use serde::{Deserialize, Serialize};

/// One of qualify's patterns, as `--only` names it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Sequential 1 MiB writes over the scratch file, then reads at its start and end.
    Sequential,
    /// Random 4 KiB reads, then random 4 KiB writes and the flush after them.
    Random,
    /// Writes of 4 KiB to 1 MiB, each followed by a flush (`diskinfo -wS`).
    WriteFlush,
    /// One 4 KiB block rewritten in place, each time followed by a flush.
    Rewrite,
    /// 2300-byte appends, each followed by `fdatasync` (etcd's fio recipe).
    Fdatasync,
}

impl Pattern {
    pub const ALL: [Pattern; 5] = [
        Pattern::Sequential,
        Pattern::Random,
        Pattern::WriteFlush,
        Pattern::Rewrite,
        Pattern::Fdatasync,
    ];

    /// Its share of `--seconds` when every pattern runs.
    fn share(self) -> f64 {
        match self {
            Pattern::Sequential => 0.10,
            Pattern::Random => 0.30,
            Pattern::WriteFlush => 0.25,
            Pattern::Rewrite => 0.05,
            Pattern::Fdatasync => 0.20,
        }
    }

    /// Whether it works in the scratch data file (which is then written whole first:
    /// a read of a block never written measures no device).
    pub fn uses_data(self) -> bool {
        self != Pattern::Fdatasync
    }
}

/// The patterns to run; every one unless `--only` says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patterns(Vec<Pattern>);

impl Default for Patterns {
    fn default() -> Self {
        Patterns(Pattern::ALL.to_vec())
    }
}

impl Patterns {
    /// `only`, or every pattern when it is empty.
    pub fn only(only: &[Pattern]) -> Self {
        if only.is_empty() {
            return Self::default();
        }
        let mut v = only.to_vec();
        v.sort();
        v.dedup();
        Patterns(v)
    }

    pub fn has(&self, p: Pattern) -> bool {
        self.0.contains(&p)
    }

    /// Whether the scratch data file is needed (and written whole first).
    pub fn uses_data(&self) -> bool {
        self.0.iter().any(|p| p.uses_data())
    }

    /// The fraction of `--seconds` pattern `p` gets: its share when all run, scaled so
    /// that the ones chosen fill about the same time (the prefill aside).
    pub fn share(&self, p: Pattern) -> f64 {
        let total: f64 = self.0.iter().map(|q| q.share()).sum();
        let all: f64 = Pattern::ALL.iter().map(|q| q.share()).sum();
        p.share() * all / total.max(1e-9)
    }

    pub fn list(&self) -> Vec<Pattern> {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_patterns_fill_the_time_all_of_them_would() {
        let all = Patterns::default();
        assert!(all.list() == Pattern::ALL && all.uses_data());
        let sum = |ps: &Patterns| ps.list().iter().map(|&p| ps.share(p)).sum::<f64>();
        let one = Patterns::only(&[Pattern::Fdatasync, Pattern::Fdatasync]);
        assert_eq!(one.list(), vec![Pattern::Fdatasync]);
        assert!(!one.uses_data() && one.list().len() < Pattern::ALL.len());
        assert!((sum(&one) - sum(&all)).abs() < 1e-9, "{}", sum(&one));
        assert!((all.share(Pattern::Fdatasync) - 0.20).abs() < 1e-9);
        assert_eq!(Patterns::only(&[]), all);
    }
}
