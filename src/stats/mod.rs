//! What many trials say together: medians, spread, confidence intervals, cliffs and ratios.
//!
//! Everything here is a pure function of samples, so it is tested against values worked out by
//! hand. Intervals are Student's t (named `t` wherever they are printed); ratios carry a
//! delta-method interval (`delta-log-t`). See `docs/store.md` for the reasoning.

pub mod cliff;
pub mod compare;
pub mod ratio;
pub mod slo;
pub mod steady;
pub mod summary;
pub mod sweep;
pub mod tdist;

use serde::{Deserialize, Serialize};

pub use cliff::{Cliff, SeriesFigure, detect_cliffs};
pub use ratio::{Ratio, ratio};
pub use summary::{
    CONFIDENCE, CiMethod, HIGH_CV, Interval, MIN_STABLE_TRIALS, Summary, is_stable, median,
};

use crate::sample::{TrialSample, Unit};

/// One named figure summarized over the trials of a workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    /// `<op>.<figure>`, as [`TrialSample::metrics`] names it.
    pub name: String,
    /// What the values count.
    pub unit: Unit,
    /// The statistics over trials.
    pub summary: Summary,
    /// The per-trial values, in trial order (what the summary was computed from).
    pub values: Vec<f64>,
}

/// Summarizes every metric over a workload's trials, in the order the metrics first appear.
///
/// A metric missing from some trials (an op that did not happen) is summarized over the trials
/// that have it.
pub fn summarize_trials(trials: &[TrialSample]) -> Vec<MetricSummary> {
    let mut order: Vec<(String, Unit, Vec<f64>)> = Vec::new();
    for t in trials {
        for m in t.metrics() {
            match order.iter_mut().find(|(n, _, _)| *n == m.name) {
                Some((_, _, v)) => v.push(m.value),
                None => order.push((m.name, m.unit, vec![m.value])),
            }
        }
    }
    order
        .into_iter()
        .filter_map(|(name, unit, values)| {
            Summary::of(&values).map(|summary| MetricSummary {
                name,
                unit,
                summary,
                values,
            })
        })
        .collect()
}

/// The least precisely known throughput figure of a workload's trials: what `--until-stable`
/// waits on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// The throughput metric with the widest interval relative to its median (`read.iops`).
    pub metric: String,
    /// Its CI half-width as a percentage of its median; `None` with fewer than two trials.
    pub precision_pct: Option<f64>,
    /// Trials so far.
    pub n: usize,
}

/// The throughput figure (IOPS, MB/s, ops/s; latencies are left out, their tails are noisy by
/// nature, and so is an open loop's sustained share, which is not a throughput) whose interval
/// is widest relative to its median; `None` without any.
pub fn stability(trials: &[TrialSample]) -> Option<Stability> {
    let mut worst: Option<Stability> = None;
    for m in summarize_trials(trials) {
        if matches!(m.unit, Unit::Micros | Unit::Fraction) || m.summary.median == 0.0 {
            continue;
        }
        let p = m.summary.precision_pct();
        let worse = match &worst {
            None => true,
            Some(w) => match (p, w.precision_pct) {
                (None, _) => w.precision_pct.is_some(),
                (Some(_), None) => false,
                (Some(a), Some(b)) => a > b,
            },
        };
        if worse {
            worst = Some(Stability {
                metric: m.name,
                precision_pct: p,
                n: m.summary.n,
            });
        }
    }
    worst
}

/// Whether `--until-stable PCT` may stop repeating a workload: at least
/// [`MIN_STABLE_TRIALS`] trials and every throughput figure's 95% interval within `pct`
/// percent of its median.
pub fn trials_stable(trials: &[TrialSample], pct: f64) -> bool {
    trials.len() >= MIN_STABLE_TRIALS
        && stability(trials).is_some_and(|s| s.precision_pct.is_some_and(|p| p <= pct))
}

/// The cliffs of each trial, paired with the trial number; trials without cliffs are left out.
pub fn trial_cliffs(trials: &[TrialSample]) -> Vec<(u32, Vec<Cliff>)> {
    trials
        .iter()
        .map(|t| (t.trial, detect_cliffs(&t.series)))
        .filter(|(_, c)| !c.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{IoAccounting, OpSample, TrialSample};

    fn trial(n: u32, count: u64) -> TrialSample {
        let mut o = OpSample::new("read");
        o.count = count;
        o.bytes = count * 4096;
        o.elapsed_ns = 1_000_000_000;
        o.latency.record(100_000);
        TrialSample {
            workload: "w".into(),
            trial: n,
            started_unix_ms: 0,
            elapsed_ns: 1_000_000_000,
            ops: vec![o],
            series: Vec::new(),
            accounting: IoAccounting::default(),
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            notes: Vec::new(),
            verify: None,
            open_loop: None,
        }
    }

    #[test]
    fn until_stable_waits_on_the_least_precise_throughput() {
        // read.iops 1000 1100 900: sd 100, t(0.975,2) 4.3027 -> half-width 248.4 = 24.8%.
        let t = [trial(1, 1000), trial(2, 1100), trial(3, 900)];
        let s = stability(&t).unwrap();
        assert_eq!(s.n, 3);
        assert!(
            (s.precision_pct.unwrap() - 24.841_377).abs() < 1e-4,
            "{s:?}"
        );
        assert!(trials_stable(&t, 25.0));
        assert!(!trials_stable(&t, 20.0));
        assert!(!trials_stable(&t[..2], 99.0), "needs three trials");
        let one = stability(&t[..1]).unwrap();
        assert!(one.precision_pct.is_none());
    }

    #[test]
    fn metrics_are_summarized_across_trials_in_order() {
        let ms = summarize_trials(&[trial(1, 1000), trial(2, 1100), trial(3, 900)]);
        assert_eq!(ms[0].name, "read.iops");
        assert_eq!(ms[0].unit, Unit::Iops);
        assert_eq!(ms[0].values, vec![1000.0, 1100.0, 900.0]);
        assert_eq!(ms[0].summary.median, 1000.0);
        assert_eq!(ms[1].name, "read.mbps");
        assert!((ms[1].summary.mean - 4.096).abs() < 1e-9);
        assert!(ms.iter().any(|m| m.name == "read.lat_p99_us"));
    }
}
