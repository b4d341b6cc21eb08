//! A deterministic stand-in for the real executor, behind the hidden option
//! `jbench run --executor scripted`: every trial "runs" instantly and reports the
//! phases its workload would, with times derived from the configuration, the phase
//! and the trial index through the spec's seed. Nothing is provisioned, so the whole
//! command-line path (run -> store -> report -> summary.csv -> report.html) can be
//! tested without root or devices (tests/e2e/run/cli_scripted.rs), as hyperfine tests its
//! command line with a mock executor. The figures mean nothing about any file system.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::run::executor::{Executor, TrialError, TrialOutcome};
use crate::workload::{PhaseResult, RunControl};

/// Operations every scripted phase reports.
const OPS: u64 = 1000;

/// Spread of the scripted times around their configuration's mean: ±2%, under the
/// default adaptive target CV, so an adaptive run settles at its minimum.
const JITTER: f64 = 0.02;

#[derive(Debug, Default)]
pub struct ScriptedExecutor;

impl Executor for ScriptedExecutor {
    fn run_trial(
        &mut self,
        spec: &Spec,
        trial: &Trial,
        ctl: &RunControl,
    ) -> Result<TrialOutcome, TrialError> {
        if ctl.stop_requested() {
            return Err(TrialError::Interrupted);
        }
        let workload = &spec.workloads[trial.workload];
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ (trial.index as u64).rotate_left(17));
        let phases = workload
            .engine
            .phase_names()
            .into_iter()
            .enumerate()
            .map(|(i, name)| PhaseResult {
                name: name.to_string(),
                seconds: scripted_seconds(trial.config, i, rng.gen_range(-JITTER..JITTER)),
                ops: OPS,
                op_unit: "operations".to_string(),
                ..PhaseResult::default()
            })
            .collect();
        Ok(TrialOutcome {
            layout: serde_json::json!({ "executor": "scripted" }),
            phases,
            ..TrialOutcome::default()
        })
    }
}

/// Each configuration takes 15% longer than the first one per step down the list, and
/// each phase 0.05 s longer than the one before it, so a report has differences to find.
fn scripted_seconds(config: usize, phase: usize, jitter: f64) -> f64 {
    (0.5 + 0.05 * phase as f64) * (1.0 + 0.15 * config as f64) * (1.0 + jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_trial_gets_the_same_phases_and_configurations_differ() {
        let text = "repetitions = 2\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = [\"internal\", \"ramdisk\"]\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "t.toml").unwrap();
        let trials = crate::experiment::plan::plan(&spec);
        let run = |t: &Trial| {
            ScriptedExecutor
                .run_trial(&spec, t, &RunControl::new())
                .unwrap()
                .phases
        };
        let a = run(&trials[0]);
        assert_eq!(a.len(), 4, "fdtree's four phases");
        assert_eq!(a, run(&trials[0]));
        let other = trials
            .iter()
            .find(|t| t.config != trials[0].config)
            .unwrap();
        let b = run(other);
        assert!(a[0].seconds > 0.0 && b[0].seconds > 0.0);
        let (slow, fast) = if other.config > trials[0].config {
            (&b, &a)
        } else {
            (&a, &b)
        };
        assert!(slow[0].seconds > fast[0].seconds * 1.08, "{a:?} {b:?}");
    }

    #[test]
    fn a_stop_request_interrupts_the_trial() {
        let text =
            "[filesystem]\nsize = \"1G\"\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "t.toml").unwrap();
        let trials = crate::experiment::plan::plan(&spec);
        let ctl = RunControl::new();
        ctl.request_stop();
        let r = ScriptedExecutor.run_trial(&spec, &trials[0], &ctl);
        assert!(matches!(r, Err(TrialError::Interrupted)));
    }
}
