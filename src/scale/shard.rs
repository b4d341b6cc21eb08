//! Which trials a shard runs. The assignment depends on the spec and the number of
//! shards alone, never on the machine or the time, so every task of an array job
//! computes the same partition independently, and a trial keeps the number (and so the
//! seed and the place in the order) it has in the unsharded plan.

use std::fmt;
use std::str::FromStr;

use anyhow::{bail, Result};

use crate::experiment::estimate::Estimator;
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;

/// `--shard I/N` or `--shard auto/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardArg {
    /// `None`: taken from the scheduler's environment ([`resolve_index`]).
    pub index: Option<usize>,
    pub count: usize,
}

impl FromStr for ShardArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not I/N or auto/N (e.g. 0/4, auto/4)"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("`{n}` is not a number of shards"))?;
        if count == 0 {
            return Err("the number of shards must be at least 1".into());
        }
        let index = match i.trim() {
            "auto" => None,
            i => {
                let index: usize = i
                    .parse()
                    .map_err(|_| format!("`{i}` is not a shard index (0-based) or `auto`"))?;
                if index >= count {
                    return Err(format!(
                        "shard index {index} is not below {count} shards (indices are 0-based)"
                    ));
                }
                Some(index)
            }
        };
        Ok(Self { index, count })
    }
}

impl fmt::Display for ShardArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{i}/{}", self.count),
            None => write!(f, "auto/{}", self.count),
        }
    }
}

/// clap's value parser for `--shard`.
pub fn parse_shard_arg(s: &str) -> Result<ShardArg, String> {
    s.parse()
}

/// Slurm array task id; minus [`SLURM_MIN`] it is the shard index, so `--array=1-4`
/// works as well as `--array=0-3`.
pub const SLURM_TASK: &str = "SLURM_ARRAY_TASK_ID";
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// Kubernetes Indexed Job: the pod's completion index, 0-based.
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";

/// The shard index and where it came from (said on stderr and kept in the seal).
/// `env` is the environment lookup, a parameter so that tests need not change the
/// process environment.
pub fn resolve_index(
    arg: &ShardArg,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(usize, String)> {
    let number = |name: &str, v: &str| -> Result<usize> {
        v.trim()
            .parse::<usize>()
            .map_err(|_| anyhow::anyhow!("{name}=`{v}` is not a non-negative integer"))
    };
    let (index, source) = match arg.index {
        Some(i) => (i, format!("--shard {i}/{}", arg.count)),
        None => {
            if let Some(task) = env(SLURM_TASK) {
                let task = number(SLURM_TASK, &task)?;
                let min = match env(SLURM_MIN) {
                    Some(m) => number(SLURM_MIN, &m)?,
                    None => 0,
                };
                let Some(i) = task.checked_sub(min) else {
                    bail!("{SLURM_TASK}={task} is below {SLURM_MIN}={min}");
                };
                (i, format!("{SLURM_TASK}={task} minus {SLURM_MIN}={min}"))
            } else if let Some(k) = env(K8S_INDEX) {
                let i = number(K8S_INDEX, &k)?;
                (i, format!("{K8S_INDEX}={i}"))
            } else {
                bail!(
                    "--shard auto/{} needs the shard index from the scheduler, but neither {SLURM_TASK} (Slurm array job) nor {K8S_INDEX} (Kubernetes Indexed Job) is set; give it as --shard I/{}",
                    arg.count,
                    arg.count
                );
            }
        }
    };
    if index >= arg.count {
        bail!(
            "shard index {index} (from {source}) is not below {} shards",
            arg.count
        );
    }
    Ok((index, source))
}

/// The unit a shard keeps together on one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ShardBy {
    /// Every configuration of one repetition round of a workload: each round runs on
    /// one machine, while rounds may run on different machines. The analysis pools
    /// rounds (unpaired comparisons), so machines must match to be merged.
    #[default]
    Round,
    /// Every configuration and repetition of a workload: all comparisons of a
    /// workload come from one machine, at the price of coarser balance.
    Workload,
}

impl ShardBy {
    pub fn as_str(self) -> &'static str {
        match self {
            ShardBy::Round => "round",
            ShardBy::Workload => "workload",
        }
    }

    /// The unit a trial belongs to.
    fn unit(self, t: &Trial) -> (usize, u32) {
        match self {
            // A workload's crash recordings (and so its crash lab) are a round of their
            // own: the lab's time is not a timed round's.
            ShardBy::Round if t.recording => (t.workload, u32::MAX),
            ShardBy::Round => (t.workload, t.rep),
            ShardBy::Workload => (t.workload, 0),
        }
    }
}

impl fmt::Display for ShardBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A trial's expected seconds, as `jbench plan` states them (`experiment::estimate`):
/// deterministic, so every machine of a sharded run computes the same split.
pub fn estimate_seconds(spec: &Spec, trial: &Trial) -> f64 {
    Estimator::new(spec).seconds(trial)
}

/// Trial indices (positions in `trials`, ascending) of each of `shards` shards.
///
/// Trials are grouped into units by `by`; units go, longest estimate first (ties: the
/// unit whose first trial comes first), to the shard with the least estimated load so
/// far (ties: the lowest index), the LPT rule. A shard is empty when there are fewer
/// units than shards.
pub fn assign(spec: &Spec, trials: &[Trial], shards: usize, by: ShardBy) -> Vec<Vec<usize>> {
    assert!(shards >= 1, "at least one shard");
    let mut units: Vec<((usize, u32), Vec<usize>, f64)> = Vec::new();
    let mut position = std::collections::BTreeMap::new();
    let estimator = Estimator::new(spec);
    for (i, t) in trials.iter().enumerate() {
        let key = by.unit(t);
        let u = *position.entry(key).or_insert_with(|| {
            units.push((key, Vec::new(), 0.0));
            units.len() - 1
        });
        units[u].1.push(i);
        units[u].2 += estimator.seconds(t);
    }
    // Units were pushed in order of their first trial, so a stable sort keeps that
    // order among equal estimates.
    units.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut load = vec![0.0f64; shards];
    let mut out = vec![Vec::new(); shards];
    for (_, members, secs) in units {
        let mut best = 0;
        for s in 1..shards {
            if load[s] < load[best] {
                best = s;
            }
        }
        load[best] += secs;
        out[best].extend(members);
    }
    for s in &mut out {
        s.sort_unstable();
    }
    out
}

/// The estimated seconds of the given trials (positions in `trials`).
pub fn estimate_total(spec: &Spec, trials: &[Trial], members: &[usize]) -> f64 {
    let estimator = Estimator::new(spec);
    members
        .iter()
        .map(|&i| estimator.seconds(&trials[i]))
        .fold(0.0, |a, b| a + b)
}

/// `0-3,7,9-10`.
pub fn compact_ranges(indices: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(",")
    }
}

/// What `jbench plan --shards N` prints after the plan.
pub fn describe(spec: &Spec, trials: &[Trial], shards: usize, by: ShardBy) -> String {
    let parts = assign(spec, trials, shards, by);
    let mut s =
        format!("\n{shards} shards, by {by} (each shard's expected wall time, as above):\n");
    for (i, members) in parts.iter().enumerate() {
        let indices: Vec<usize> = members.iter().map(|&m| trials[m].index).collect();
        s.push_str(&format!(
            "  shard {i}/{shards}: {}, ~{}: {}\n",
            crate::units::count(members.len() as u64, "trial"),
            crate::units::human_seconds(estimate_total(spec, trials, members)),
            compact_ranges(&indices)
        ));
    }
    s
}

/// The units a plan splits into: more shards than these leave some empty.
pub fn unit_count(trials: &[Trial], by: ShardBy) -> usize {
    trials
        .iter()
        .map(|t| by.unit(t))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// Refuses more shards than units: an empty shard would run nothing and, on a
/// scheduler, still take a machine and a completion.
pub fn check_shard_count(trials: &[Trial], shards: usize, by: ShardBy) -> anyhow::Result<()> {
    let units = unit_count(trials, by);
    if shards > units {
        anyhow::bail!(
            "{shards} shards of a plan that splits into only {} (by {by}, every unit stays on one machine): {} would run nothing; give --shards {units} or fewer{}",
            crate::units::count(units as u64, "unit"),
            crate::units::count((shards - units) as u64, "shard"),
            if by == ShardBy::Workload {
                ", or --shard-by round for finer units"
            } else {
                ""
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::plan::plan;
    use std::collections::HashMap;

    fn spec(order: &str, reps: u32) -> Spec {
        let text = format!(
            r#"repetitions = {reps}
order = "{order}"
seed = 7
[filesystem]
size = "1G"
[journal]
placement = ["internal", "same-disk", "ramdisk"]
[[workload]]
kind = "fdtree"
name = "a"
dirs = 2
levels = 2
[[workload]]
kind = "fdtree"
name = "b"
dirs = 4
levels = 3
[[workload]]
kind = "fdtree"
name = "c"
dirs = 3
levels = 2
"#
        );
        crate::experiment::spec::parse(&text, "t.toml").unwrap()
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn parses_index_and_auto_and_refuses_bad_ones() {
        assert_eq!(
            "1/4".parse::<ShardArg>().unwrap(),
            ShardArg {
                index: Some(1),
                count: 4
            }
        );
        assert_eq!(
            "auto/4".parse::<ShardArg>().unwrap(),
            ShardArg {
                index: None,
                count: 4
            }
        );
        assert_eq!("0/1".parse::<ShardArg>().unwrap().to_string(), "0/1");
        assert_eq!(
            "3/2".parse::<ShardArg>().unwrap_err(),
            "shard index 3 is not below 2 shards (indices are 0-based)"
        );
        assert!("2/2"
            .parse::<ShardArg>()
            .unwrap_err()
            .contains("not below 2"));
        assert!("0/0"
            .parse::<ShardArg>()
            .unwrap_err()
            .contains("at least 1"));
        assert!("auto/0".parse::<ShardArg>().is_err());
        assert!("3".parse::<ShardArg>().unwrap_err().contains("I/N"));
        assert!("x/3".parse::<ShardArg>().unwrap_err().contains("`x`"));
        assert!("-1/3".parse::<ShardArg>().is_err());
        assert!("1/y".parse::<ShardArg>().unwrap_err().contains("`y`"));
    }

    #[test]
    fn resolves_the_index_from_the_flag_slurm_or_kubernetes() {
        let explicit = ShardArg {
            index: Some(2),
            count: 3,
        };
        let (i, src) = resolve_index(&explicit, env(&[(SLURM_TASK, "0")])).unwrap();
        assert_eq!((i, src.as_str()), (2, "--shard 2/3"));

        let auto = ShardArg {
            index: None,
            count: 3,
        };
        let (i, src) = resolve_index(&auto, env(&[(SLURM_TASK, "2")])).unwrap();
        assert_eq!(i, 2);
        assert!(src.contains(SLURM_TASK) && src.contains("=0"), "{src}");
        let (i, src) = resolve_index(&auto, env(&[(SLURM_TASK, "2"), (SLURM_MIN, "1")])).unwrap();
        assert_eq!(i, 1);
        assert!(src.contains("SLURM_ARRAY_TASK_ID=2") && src.contains("SLURM_ARRAY_TASK_MIN=1"));
        // Slurm wins over Kubernetes when both are set.
        let (i, _) = resolve_index(&auto, env(&[(SLURM_TASK, "1"), (K8S_INDEX, "0")])).unwrap();
        assert_eq!(i, 1);
        let (i, src) = resolve_index(&auto, env(&[(K8S_INDEX, "0")])).unwrap();
        assert_eq!((i, src.as_str()), (0, "JOB_COMPLETION_INDEX=0"));

        let e = resolve_index(&auto, env(&[])).unwrap_err().to_string();
        assert!(e.contains(SLURM_TASK) && e.contains(K8S_INDEX), "{e}");
        let e = resolve_index(&auto, env(&[(K8S_INDEX, "3")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not below 3"), "{e}");
        let e = resolve_index(&auto, env(&[(SLURM_TASK, "1"), (SLURM_MIN, "2")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("below"), "{e}");
        assert!(resolve_index(&auto, env(&[(SLURM_TASK, "one")])).is_err());
    }

    fn check_partition(spec: &Spec, n: usize, by: ShardBy) -> Vec<Vec<usize>> {
        let trials = plan(spec);
        let parts = assign(spec, &trials, n, by);
        assert_eq!(parts.len(), n);
        let mut all: Vec<usize> = parts.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..trials.len()).collect::<Vec<_>>(),
            "each trial exactly once"
        );
        for p in &parts {
            assert!(p.windows(2).all(|w| w[0] < w[1]), "ascending");
        }
        // Units are never split.
        let mut owner = HashMap::new();
        for (s, p) in parts.iter().enumerate() {
            for &i in p {
                let prev = owner.insert(by.unit(&trials[i]), s);
                assert!(
                    prev.is_none() || prev == Some(s),
                    "unit split across shards"
                );
            }
        }
        // LPT: the spread between shards is at most the largest unit.
        let mut unit_secs: HashMap<(usize, u32), f64> = HashMap::new();
        for t in &trials {
            *unit_secs.entry(by.unit(t)).or_default() += estimate_seconds(spec, t);
        }
        let largest = unit_secs.values().copied().fold(0.0, f64::max);
        let loads: Vec<f64> = parts
            .iter()
            .map(|p| estimate_total(spec, &trials, p))
            .collect();
        let max = loads.iter().copied().fold(0.0, f64::max);
        let min = loads.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            max - min <= largest + 1e-9,
            "{loads:?} largest unit {largest}"
        );
        parts
    }

    #[test]
    fn every_trial_is_in_exactly_one_shard_and_units_stay_together() {
        for order in ["sequential", "interleaved"] {
            let s = spec(order, 4);
            for n in 1..=14 {
                check_partition(&s, n, ShardBy::Round);
                check_partition(&s, n, ShardBy::Workload);
            }
        }
    }

    #[test]
    fn the_assignment_depends_on_spec_and_count_alone() {
        let s = spec("interleaved", 4);
        let again = spec("interleaved", 4);
        for n in [1, 2, 3, 5] {
            let a = assign(&s, &plan(&s), n, ShardBy::Round);
            let b = assign(&again, &plan(&again), n, ShardBy::Round);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn fewer_units_than_shards_leaves_shards_empty() {
        let s = spec("sequential", 1);
        // 3 workloads: 3 units by workload.
        let parts = check_partition(&s, 5, ShardBy::Workload);
        assert_eq!(parts.iter().filter(|p| p.is_empty()).count(), 2);
        // The largest unit (workload b) goes first, to shard 0.
        let trials = plan(&s);
        assert!(parts[0].iter().all(|&i| trials[i].workload == 1));
    }

    #[test]
    fn round_units_hold_every_configuration_of_a_round() {
        let s = spec("interleaved", 3);
        let trials = plan(&s);
        let parts = assign(&s, &trials, 4, ShardBy::Round);
        for p in &parts {
            let mut per_unit: HashMap<(usize, u32), usize> = HashMap::new();
            for &i in p {
                *per_unit
                    .entry((trials[i].workload, trials[i].rep))
                    .or_default() += 1;
            }
            assert!(
                per_unit.values().all(|&n| n == s.configs.len()),
                "{per_unit:?}"
            );
        }
    }

    #[test]
    fn emulated_disks_weigh_more() {
        let s = spec("sequential", 1);
        let t = plan(&s)[0];
        let host = estimate_seconds(&s, &t);
        assert!(host > 0.0);
        let mut emu = s.clone();
        emu.configs[t.config].fs_model = crate::experiment::spec::parse(
            "[filesystem]\nsize = \"1G\"\ndevice_model = \"hdd-7200\"\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n",
            "e.toml",
        )
        .unwrap()
        .configs[0]
            .fs_model
            .clone();
        assert!(emu.configs[t.config].fs_model.is_some());
        assert!(
            estimate_seconds(&emu, &t) > host,
            "{} vs {host}",
            estimate_seconds(&emu, &t)
        );
    }

    #[test]
    fn more_shards_than_units_are_refused_with_the_most_that_work() {
        let s = spec("interleaved", 1);
        let trials = plan(&s);
        let units = unit_count(&trials, ShardBy::Round);
        assert!(check_shard_count(&trials, units, ShardBy::Round).is_ok());
        let e = check_shard_count(&trials, units + 3, ShardBy::Round)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("--shards {units} or fewer"))
                && e.contains("3 shards would run nothing"),
            "{e}"
        );
    }

    #[test]
    fn compact_ranges_reads_well() {
        assert_eq!(compact_ranges(&[0, 1, 2, 3, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(compact_ranges(&[5]), "5");
        assert_eq!(compact_ranges(&[]), "none");
    }
}
