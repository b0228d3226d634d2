//! Performance cliffs within a trial: an SSD's fast cache filling up, a drive throttling when
//! hot, the page cache running out of room for dirty data. An average over the trial hides
//! them; the per-second series shows them.
//!
//! A cliff is throughput that falls by more than [`CLIFF_DROP`] (30%) below the level of the
//! seconds before it and stays down for at least [`CLIFF_MIN_SECS`] (3) seconds. The level
//! before is the median of up to [`CLIFF_WINDOW`] (5) seconds preceding the fall, all since the
//! previous cliff, so one noisy second neither makes nor hides a cliff.

use serde::{Deserialize, Serialize};

use super::summary::median;
use crate::sample::SeriesPoint;

/// The fraction throughput must fall by to count as a cliff.
pub const CLIFF_DROP: f64 = 0.30;
/// The seconds it must stay down.
pub const CLIFF_MIN_SECS: u32 = 3;
/// The seconds before a fall whose median is the level it fell from.
pub const CLIFF_WINDOW: usize = 5;

/// Which figure of the series a cliff was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesFigure {
    /// Bytes per second (data workloads).
    Bytes,
    /// Operations per second (metadata workloads, which move no bytes).
    Ops,
}

/// One sustained fall in throughput.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cliff {
    /// Second of the measured window where throughput fell.
    pub at_s: u32,
    /// How long it stayed down, seconds (to the end of the trial when it never recovered).
    pub duration_s: u32,
    /// The level before: median of the preceding seconds, per second.
    pub before: f64,
    /// The level after: median of the seconds it stayed down, per second.
    pub after: f64,
    /// `1 - after / before`, as a fraction (0.45 = fell by 45%).
    pub drop: f64,
    /// Whether throughput came back above the threshold before the trial ended (false when it
    /// stayed down to the end or fell further).
    pub recovered: bool,
    /// Bytes or operations per second.
    pub figure: SeriesFigure,
    /// What the trial had done in its measured window before the fall (bytes, or operations):
    /// where an SSD cache filled, the size of the cache the workload saw.
    #[serde(default)]
    pub done_before: f64,
}

impl Cliff {
    /// One line for tables and notes:
    /// "throughput fell 45% at 12s for 18s (from 520.0 to 286.0 MB/s), then recovered".
    pub fn describe(&self) -> String {
        let (b, a, unit) = match self.figure {
            SeriesFigure::Bytes => (self.before / 1e6, self.after / 1e6, "MB/s"),
            SeriesFigure::Ops => (self.before, self.after, "ops/s"),
        };
        let done = match self.figure {
            SeriesFigure::Bytes => crate::units::format_bytes_si(self.done_before as u64),
            SeriesFigure::Ops => format!("{:.0} ops", self.done_before),
        };
        format!(
            "throughput fell {:.0}% at {}s for {}s (from {b:.1} to {a:.1} {unit}) after {done}{}",
            self.drop * 100.0,
            self.at_s,
            self.duration_s,
            if self.recovered {
                ", then recovered"
            } else {
                ""
            },
        )
    }
}

/// Finds the cliffs in a per-second series, in time order.
///
/// Data workloads are judged by bytes per second, metadata workloads (no bytes at all) by
/// operations per second. Points must be in time order; gaps in `t` count as time passing.
/// A cliff ends when throughput climbs back above its threshold (`recovered`), when a further
/// cliff starts from the lower level, or with the trial.
pub fn detect_cliffs(series: &[SeriesPoint]) -> Vec<Cliff> {
    let figure = if series.iter().any(|p| p.bytes > 0) {
        SeriesFigure::Bytes
    } else {
        SeriesFigure::Ops
    };
    let v: Vec<f64> = series
        .iter()
        .map(|p| match figure {
            SeriesFigure::Bytes => p.bytes as f64,
            SeriesFigure::Ops => p.ops as f64,
        })
        .collect();
    let n = v.len();
    let min = CLIFF_MIN_SECS as usize;
    let mut out = Vec::new();
    // The cliff under way: start index, threshold, level before.
    let mut open: Option<(usize, f64, f64)> = None;
    let close = |out: &mut Vec<Cliff>, (s, _, before): (usize, f64, f64), end: usize, rec| {
        let duration_s = if end < n {
            series[end].t - series[s].t
        } else {
            series[n - 1].t + 1 - series[s].t
        };
        let after = median(&v[s..end]).unwrap_or(0.0);
        out.push(Cliff {
            at_s: series[s].t,
            duration_s,
            before,
            after,
            drop: 1.0 - after / before,
            recovered: rec,
            figure,
            done_before: v[..s].iter().sum(),
        });
    };
    // Start of the current regime: the level before a fall never reaches back past a cliff
    // or a recovery.
    let mut regime = 0;
    for i in 1..n {
        if let Some(c) = open {
            if v[i] >= c.1 {
                close(&mut out, c, i, true);
                open = None;
                regime = i;
                continue;
            }
        }
        let from = regime.max(i.saturating_sub(CLIFF_WINDOW));
        if from >= i {
            continue;
        }
        let before = median(&v[from..i]).unwrap_or(0.0);
        let threshold = before * (1.0 - CLIFF_DROP);
        let sustained = i + min <= n
            && v[i..i + min].iter().all(|&x| x < threshold)
            && series[i + min - 1].t + 1 - series[i].t >= CLIFF_MIN_SECS;
        if before > 0.0 && sustained {
            if let Some(c) = open.take() {
                close(&mut out, c, i, false);
            }
            open = Some((i, threshold, before));
            regime = i;
        }
    }
    if let Some(c) = open {
        close(&mut out, c, n, false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(mbps: &[u64]) -> Vec<SeriesPoint> {
        mbps.iter()
            .enumerate()
            .map(|(t, &m)| SeriesPoint {
                t: t as u32,
                bytes: m * 1_000_000,
                ops: m * 10,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn an_ssd_cache_filling_is_one_cliff_to_the_end() {
        // 500 MB/s for 6 s, then 200 MB/s: a 60% fall at 6 s, 4 s long, never recovered.
        let s = series(&[500, 510, 490, 505, 495, 500, 200, 210, 190, 200]);
        let c = detect_cliffs(&s);
        assert_eq!(c.len(), 1, "{c:?}");
        let c = &c[0];
        assert_eq!(c.at_s, 6);
        assert_eq!(c.duration_s, 4);
        assert!((c.before - 500e6).abs() < 1.0);
        assert!((c.after - 200e6).abs() < 1.0);
        assert!((c.drop - 0.6).abs() < 1e-9);
        assert!(!c.recovered);
        assert_eq!(c.figure, SeriesFigure::Bytes);
        // Six seconds at ~500 MB/s were done before the fall: the cache held 3 GB.
        assert!((c.done_before - 3000e6).abs() < 1.0, "{}", c.done_before);
        assert!(
            c.describe()
                .contains("fell 60% at 6s for 4s (from 500.0 to 200.0 MB/s) after 3.00GB"),
            "{}",
            c.describe()
        );
    }

    #[test]
    fn short_dips_and_small_falls_are_not_cliffs() {
        // A 2-second dip, then a 25% fall that lasts.
        let s = series(&[500, 500, 500, 100, 100, 500, 500, 375, 375, 375, 375, 375]);
        assert!(detect_cliffs(&s).is_empty());
        // Exactly 30% is not "more than 30%".
        let s = series(&[100, 100, 70, 70, 70, 70]);
        assert!(detect_cliffs(&s).is_empty());
    }

    #[test]
    fn a_three_second_throttle_that_recovers_counts() {
        let s = series(&[400, 400, 400, 400, 100, 120, 110, 400, 400, 400]);
        let c = detect_cliffs(&s);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].at_s, c[0].duration_s), (4, 3));
        assert!(c[0].recovered);
        assert!((c[0].after - 110e6).abs() < 1.0);
    }

    #[test]
    fn two_steps_down_are_two_cliffs_and_metadata_uses_ops() {
        let s: Vec<SeriesPoint> = [1000u64, 1000, 1000, 500, 500, 500, 200, 200, 200]
            .iter()
            .enumerate()
            .map(|(t, &o)| SeriesPoint {
                t: t as u32,
                bytes: 0,
                ops: o,
                ..Default::default()
            })
            .collect();
        let c = detect_cliffs(&s);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].figure, SeriesFigure::Ops);
        assert_eq!((c[0].at_s, c[0].before, c[0].after), (3, 1000.0, 500.0));
        assert!(!c[0].recovered);
        assert_eq!(c[0].duration_s, 3);
        assert_eq!((c[1].at_s, c[1].before, c[1].after), (6, 500.0, 200.0));
        assert!(detect_cliffs(&[]).is_empty());
    }

    #[test]
    fn periodic_throttling_is_found_each_time() {
        // Two 3-second throttles separated by a recovery: the second is judged against the
        // recovered level, not the dip before it.
        let s = series(&[300, 300, 300, 90, 90, 90, 300, 300, 300, 80, 80, 80, 80]);
        let c = detect_cliffs(&s);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].at_s, c[0].duration_s, c[0].recovered), (3, 3, true));
        assert_eq!((c[1].at_s, c[1].duration_s, c[1].recovered), (9, 4, false));
        assert!((c[1].before - 300e6).abs() < 1.0);
    }
}
