//! A made-up strategy that exists in test builds only, to show what adding a strategy
//! takes: this file, its line in `planners!` (`strategy/mod.rs`) and its line in
//! `strategies!` (`experiment/crash_options.rs`). Nothing else names it, and its tests
//! find it in the experiment file, the plan, the coverage line and `crash.jsonl`'s
//! coverage record.
//!
//! `made-up`: the last persistence point of the workload only, whatever the budget.

use super::{Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::StatePlan;

pub(super) struct MadeUp;

impl Planner for MadeUp {
    fn space(&self, s: &Space) -> f64 {
        s.prefix_cuts.len().min(1) as f64
    }

    fn plan(&self, s: &Space, quota: usize, _all: bool, out: &mut Plans) {
        if let (Some(&cut), true) = (s.prefix_cuts.last(), quota > 0) {
            let plan = StatePlan {
                strategy: Strategy::MadeUp,
                ..s.ctx.prefix_state(cut)
            };
            out.add(s.ctx, plan);
        }
    }

    fn enumerated(&self, _s: &Space, _made: u64) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::crash::options::Strategy;
    use crate::crash::states::tests::{opts, workload, CACHED};
    use crate::crash::states::{plan_states, plan_with_coverage, JournalNotes};
    use crate::results::crash::Coverage;

    #[test]
    fn a_made_up_strategy_is_found_by_the_spec_the_planner_the_coverage_and_the_records() {
        // The experiment file names it.
        let spec = crate::experiment::spec::parse(
            r#"name = "t"
[filesystem]
type = "ext4"
size = "1G"
[journal]
placement = "same-disk"
size = "16M"
[[workload]]
kind = "fdtree"
files = 4
levels = 2
[crash]
strategies = ["prefix", "made-up"]
"#,
            "made-up.toml",
        )
        .unwrap();
        assert_eq!(
            spec.crash.strategies,
            [Strategy::Prefix, Strategy::MadeUp]
        );

        // The planner plans its state, and the coverage counts it in its own words.
        let l = workload();
        let (plans, cov) = plan_with_coverage(
            &l.recs,
            &[CACHED, CACHED],
            &opts(10, &[Strategy::MadeUp]),
            1,
            &JournalNotes::default(),
        )
        .unwrap();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].strategy, Strategy::MadeUp);
        // Its one state is the workload's last persistence point.
        let every_prefix = plan_states(
            &l.recs,
            &[CACHED, CACHED],
            &opts(100_000, &[Strategy::Prefix]),
            1,
        )
        .unwrap();
        let last = every_prefix.iter().map(|p| p.cut).max().unwrap();
        assert_eq!((plans[0].cut, plans[0].base), (last, last));
        assert_eq!((cov.space(Strategy::MadeUp), cov.planned(Strategy::MadeUp)), (1.0, 1));
        assert!(
            cov.describe(1).contains("all 1 made-up cuts"),
            "{}",
            cov.describe(1)
        );

        // A state's record and the coverage record keep its name through crash.jsonl.
        assert_eq!(
            serde_json::to_string(&plans[0].strategy).unwrap(),
            "\"made-up\""
        );
        let line = serde_json::to_string(&cov).unwrap();
        assert!(line.contains(r#""made-up":{"space":1.0,"planned":1}"#), "{line}");
        let back: Coverage = serde_json::from_str(&line).unwrap();
        assert_eq!(back.planned(Strategy::MadeUp), 1);
    }
}
