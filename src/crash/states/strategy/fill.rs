//! `fill`: prefix states at the cuts where the ext3/ext4 journal holds the most live
//! blocks, fullest first (ranked by `states/fill.rs`).

use super::{Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::StatePlan;

pub(super) struct Fill;

impl Planner for Fill {
    fn space(&self, s: &Space) -> f64 {
        s.fill_ranked.len() as f64
    }

    fn plan(&self, s: &Space, quota: usize, _all: bool, out: &mut Plans) {
        let before = out.plans.len();
        for &cut in s.fill_ranked {
            if out.plans.len() - before >= quota {
                break;
            }
            let plan = StatePlan {
                strategy: Strategy::Fill,
                ..s.ctx.prefix_state(cut)
            };
            out.add(s.ctx, plan);
        }
    }

    /// Its ranked cuts are distinct states already.
    fn enumerated(&self, _s: &Space, _made: u64) -> Option<f64> {
        None
    }
}
