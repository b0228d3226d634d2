//! Steady state by SNIA's Solid State Storage Performance Test Specification (PTS): a
//! device is steady when, over a measurement window of [`STEADY_WINDOW`] rounds, the tracked
//! figure's range (max - min) is within 20% of its mean, and the excursion of its best-fit
//! line across the window (|slope| x (rounds - 1)) within 10% of the mean.
//!
//! Both rules are over the whole window: fio's `steadystate` checks one criterion at a time
//! and its slope per sample interval, which is why PTS cannot be written with it directly.
//! A pure function of stored trials (each round is one), so any report rebuilds the answer.

use serde::{Deserialize, Serialize};

use crate::sample::TrialSample;
use crate::spec::{STEADY_WINDOW, SteadyFigure};

/// PTS's range limit: max - min within this share of the window's mean.
pub const RANGE_LIMIT: f64 = 0.20;
/// PTS's slope limit: the best-fit line's excursion across the window within this share.
pub const EXCURSION_LIMIT: f64 = 0.10;

/// One measurement window judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyWindow {
    /// First round of the window (from 1).
    pub first_round: u32,
    /// Last round of the window.
    pub last_round: u32,
    /// Mean of the figure over the window.
    pub mean: f64,
    /// max - min over the window, as a share of the mean.
    pub range: f64,
    /// Slope of the least-squares line, figure per round.
    pub slope: f64,
    /// |slope| x (rounds - 1), as a share of the mean.
    pub excursion: f64,
}

impl SteadyWindow {
    /// Both of PTS's rules hold.
    pub fn steady(&self) -> bool {
        self.range <= RANGE_LIMIT && self.excursion <= EXCURSION_LIMIT
    }
}

/// What the rounds of a steady-state run say.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Steadiness {
    /// The figure judged.
    pub figure: SteadyFigure,
    /// The figure per round, in order (IOPS, bytes/s, or mean latency in ns).
    pub rounds: Vec<f64>,
    /// The round whose window first met both rules (`None`: never).
    pub steady_at: Option<u32>,
    /// The window that met them, or else the last full window (`None` under
    /// [`STEADY_WINDOW`] rounds).
    pub window: Option<SteadyWindow>,
}

impl Steadiness {
    /// One line: "steady at round 7 (rounds 3-7: mean 2,950 IOPS, range 4.1% <= 20%, slope
    /// excursion 1.2% <= 10%)", or "NOT steady after 25 rounds (last window ...)".
    pub fn describe(&self) -> String {
        let window = self.window.as_ref().map(|w| {
            format!(
                "rounds {}-{}: mean {}, range {:.1}% {} 20%, slope excursion {:.1}% {} 10%",
                w.first_round,
                w.last_round,
                self.format(w.mean),
                w.range * 100.0,
                if w.range <= RANGE_LIMIT { "<=" } else { ">" },
                w.excursion * 100.0,
                if w.excursion <= EXCURSION_LIMIT {
                    "<="
                } else {
                    ">"
                },
            )
        });
        match (self.steady_at, window) {
            (Some(n), Some(w)) => format!("steady at round {n} ({w})"),
            (_, Some(w)) => format!(
                "NOT steady after {} rounds (last window {w}): no figure of this run is steady",
                self.rounds.len()
            ),
            (_, None) => format!(
                "NOT steady: {} of the {STEADY_WINDOW} rounds a window needs",
                self.rounds.len()
            ),
        }
    }

    /// A value of the figure with its unit.
    pub fn format(&self, v: f64) -> String {
        match self.figure {
            SteadyFigure::Iops => format!("{v:.0} IOPS"),
            SteadyFigure::Bw => format!("{:.1} MB/s", v / 1e6),
            SteadyFigure::Lat => format!("{:.1} us mean latency", v / 1e3),
        }
    }

    /// The steady window's mean (`None` when not steady): the figure to report as steady.
    pub fn steady_mean(&self) -> Option<f64> {
        self.steady_at.and(self.window.as_ref()).map(|w| w.mean)
    }
}

/// The figure of one round: reads and writes together.
pub fn figure_of(t: &TrialSample, figure: SteadyFigure) -> f64 {
    let data = t.ops.iter().filter(|o| o.op == "read" || o.op == "write");
    match figure {
        SteadyFigure::Iops => data.map(crate::sample::OpSample::ops_per_sec).sum(),
        SteadyFigure::Bw => data.map(|o| o.mb_per_sec() * 1e6).sum(),
        SteadyFigure::Lat => {
            let (n, sum) = data.fold((0u64, 0f64), |(n, s), o| {
                let l = o.latency.summary();
                (n + l.count, s + l.mean_ns * l.count as f64)
            });
            if n == 0 { 0.0 } else { sum / n as f64 }
        }
    }
}

/// Whether a stored workload is a run's preconditioning (`--precondition`, `[workloads]
/// precondition`): the target written twice over before the workloads — preparation, not a
/// figure to choose a layout by.
pub fn is_precondition(wr: &crate::sample::WorkloadRecord) -> bool {
    wr.workload.name == "precondition"
        && wr
            .workload
            .io()
            .is_some_and(|io| io.loops == 2 && io.queue_depth == 32)
}

/// The rounds of a stored workload judged, when it ran as a steady-state run.
pub fn of_workload(wr: &crate::sample::WorkloadRecord) -> Option<Steadiness> {
    let st = wr.workload.io()?.steady?;
    Some(judge_trials(st.figure, &wr.trials))
}

/// The trials a workload's figures come from: a steady-state run's judged window (the steady
/// one, or else the last), every trial otherwise. The rounds before the window are the device
/// settling; a median over them would quote a state it left.
pub fn figure_trials(wr: &crate::sample::WorkloadRecord) -> &[TrialSample] {
    of_workload(wr)
        .and_then(|s| s.window)
        .and_then(|w| {
            wr.trials
                .get(w.first_round as usize - 1..w.last_round as usize)
        })
        .unwrap_or(&wr.trials)
}

/// Judges the rounds of a steady-state run (one trial each).
pub fn judge_trials(figure: SteadyFigure, trials: &[TrialSample]) -> Steadiness {
    let values: Vec<f64> = trials.iter().map(|t| figure_of(t, figure)).collect();
    judge(figure, &values)
}

/// Judges a series of round values: the first window of [`STEADY_WINDOW`] rounds that meets
/// both rules, or the last window.
pub fn judge(figure: SteadyFigure, values: &[f64]) -> Steadiness {
    let mut last = None;
    for end in STEADY_WINDOW..=values.len() {
        let w = window(&values[end - STEADY_WINDOW..end], end);
        if w.steady() {
            return Steadiness {
                figure,
                rounds: values.to_vec(),
                steady_at: Some(w.last_round),
                window: Some(w),
            };
        }
        last = Some(w);
    }
    Steadiness {
        figure,
        rounds: values.to_vec(),
        steady_at: None,
        window: last,
    }
}

/// The window of `v` ending at round `end` (from 1).
fn window(v: &[f64], end: usize) -> SteadyWindow {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let xm = (n - 1.0) / 2.0;
    let (sxy, sxx) = v
        .iter()
        .enumerate()
        .fold((0.0, 0.0), |(sxy, sxx), (i, &y)| {
            let dx = i as f64 - xm;
            (sxy + dx * (y - mean), sxx + dx * dx)
        });
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let share = |d: f64| if mean > 0.0 { d / mean } else { f64::INFINITY };
    SteadyWindow {
        first_round: (end - v.len() + 1) as u32,
        last_round: end as u32,
        mean,
        range: share(hi - lo),
        slope,
        excursion: share(slope.abs() * (n - 1.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iops(v: &[f64]) -> Steadiness {
        judge(SteadyFigure::Iops, v)
    }

    /// A device that gives the same figure every round is steady in the least rounds PTS
    /// allows: the first full window.
    #[test]
    fn a_flat_series_is_steady_at_the_fifth_round() {
        let s = iops(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]);
        assert_eq!(s.steady_at, Some(5));
        let w = s.window.unwrap();
        assert_eq!((w.first_round, w.last_round), (1, 5));
        assert!((w.mean - 1000.0).abs() < 1e-9);
        assert!((w.range - 0.02).abs() < 1e-9, "{w:?}");
    }

    /// PTS's worked shape: a fresh drive fast at first, falling as its spare area fills, then
    /// level: steady only once the window holds no part of the fall.
    #[test]
    fn the_fall_of_a_fresh_drive_is_left_out_of_the_steady_window() {
        let v = [
            90_000.0, 70_000.0, 45_000.0, 30_000.0, 24_000.0, 22_000.0, 21_500.0, 22_300.0,
            21_800.0, 22_100.0, 21_900.0,
        ];
        let s = iops(&v);
        assert_eq!(s.steady_at, Some(9), "{s:?}");
        assert_eq!(s.window.as_ref().map(|w| w.first_round), Some(5));
        // Rounds 4-8 hold 30 k: range (30000-21500)/mean is over 20%.
        assert!(!iops(&v[..8]).window.unwrap().steady());
        assert!(
            s.describe()
                .starts_with("steady at round 9 (rounds 5-9: mean 22"),
            "{}",
            s.describe()
        );
    }

    /// A figure swinging by more than 20% of its mean is never steady, however many rounds.
    #[test]
    fn an_oscillating_series_is_never_steady_and_says_so() {
        let v: Vec<f64> = (0..25)
            .map(|i| if i % 2 == 0 { 3000.0 } else { 2200.0 })
            .collect();
        let s = iops(&v);
        assert_eq!(s.steady_at, None);
        let w = s.window.as_ref().unwrap();
        assert_eq!((w.first_round, w.last_round), (21, 25));
        assert!(w.range > RANGE_LIMIT);
        assert!(
            w.excursion <= EXCURSION_LIMIT,
            "alternation has almost no trend: {w:?}"
        );
        assert!(s.steady_mean().is_none());
        assert!(
            s.describe()
                .starts_with("NOT steady after 25 rounds (last window rounds 21-25"),
            "{}",
            s.describe()
        );
    }

    /// A slow drift within the range rule still fails the slope rule: 4% a round over a
    /// window is 16% of the mean from end to end.
    #[test]
    fn a_steady_drift_fails_the_slope_rule_alone() {
        let v = [1000.0, 1040.0, 1080.0, 1120.0, 1160.0];
        let w = iops(&v).window.unwrap();
        assert!(w.range <= RANGE_LIMIT, "{w:?}");
        assert!((w.slope - 40.0).abs() < 1e-9);
        assert!((w.excursion - 160.0 / 1080.0).abs() < 1e-9);
        assert!(!w.steady());
    }

    /// Fewer rounds than a window: no verdict but "not steady", never a figure called steady.
    #[test]
    fn fewer_rounds_than_a_window_are_not_steady() {
        let s = iops(&[1000.0, 1000.0, 1000.0]);
        assert_eq!((s.steady_at, s.window.is_none()), (None, true));
        assert_eq!(s.describe(), "NOT steady: 3 of the 5 rounds a window needs");
    }

    /// A stored steady-state workload's figures come from its window only: a fast start
    /// (9000 then 5000 IOPS) before five rounds at 1000 is left out; a workload without
    /// steady state keeps every trial.
    #[test]
    fn the_figures_of_a_steady_run_are_its_windows_rounds() {
        use crate::sample::{OpSample, TrialSample, WorkloadRecord};
        use crate::spec::{IoWorkload, SteadyState, Workload, WorkloadKind};
        let trial = |n: u32, iops: u64| {
            let mut o = OpSample::new("read");
            o.count = iops;
            o.elapsed_ns = 1_000_000_000;
            TrialSample {
                trial: n,
                ops: vec![o],
                ..TrialSample::default()
            }
        };
        let rounds = [9000, 5000, 1000, 1010, 990, 1000, 1005];
        let mut wr = WorkloadRecord {
            workload: Workload {
                name: "w".into(),
                drop_caches: false,
                kind: WorkloadKind::Io(IoWorkload {
                    steady: Some(SteadyState {
                        figure: SteadyFigure::Iops,
                        round: std::time::Duration::from_secs(1),
                        max_rounds: 25,
                    }),
                    ..IoWorkload::default()
                }),
            },
            trials: (1..).zip(rounds).map(|(n, v)| trial(n, v)).collect(),
        };
        let kept: Vec<u32> = figure_trials(&wr).iter().map(|t| t.trial).collect();
        assert_eq!(kept, [3, 4, 5, 6, 7]);
        if let WorkloadKind::Io(io) = &mut wr.workload.kind {
            io.steady = None;
        }
        assert_eq!(figure_trials(&wr).len(), 7);
    }

    /// A round that moved nothing (a stalled device) cannot make a window steady.
    #[test]
    fn zero_rounds_are_not_steady() {
        let s = iops(&[0.0; 6]);
        assert_eq!(s.steady_at, None);
    }
}
