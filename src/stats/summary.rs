//! The summary of one figure over repeated trials: centre, spread, and a confidence interval.

use serde::{Deserialize, Serialize};

use super::tdist::t_critical;

/// Confidence level of every interval iolab prints.
pub const CONFIDENCE: f64 = 0.95;

/// Above this coefficient of variation (5%) a figure is flagged as noisy: the trials disagree
/// more than a storage benchmark on a quiet machine should.
pub const HIGH_CV: f64 = 0.05;

/// How an interval was computed, so every printed interval can say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CiMethod {
    /// Student's t interval of the mean: `mean ± t(0.975, n-1) · sd / √n`.
    #[serde(rename = "t")]
    StudentT,
    /// Ratio interval by the delta method on the log scale with Welch's degrees of freedom:
    /// `exp(ln r ± t(0.975, df) · √(cv_a²/n_a + cv_b²/n_b))`.
    #[serde(rename = "delta-log-t")]
    DeltaLogT,
    /// A capacity under a latency target: where the bounds of the latency/limit ratio's
    /// t interval cross 1 (`stats::slo`); its ratio between runs by the delta method on the
    /// log scale, each side's interval read as ±1.96 standard errors.
    #[serde(rename = "slo-search")]
    SloSearch,
}

impl CiMethod {
    /// The short name printed next to intervals (`t`, `delta-log-t`).
    pub fn name(self) -> &'static str {
        match self {
            CiMethod::StudentT => "t",
            CiMethod::DeltaLogT => "delta-log-t",
            CiMethod::SloSearch => "slo-search",
        }
    }
}

/// A confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Confidence level (0.95).
    pub level: f64,
    /// How it was computed.
    pub method: CiMethod,
}

impl Interval {
    /// Half the width: the `±` figure.
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }
    /// True when `x` lies inside (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// One figure (say `read.iops`) over the trials of a workload.
///
/// The median is the headline (one disturbed trial moves it least); the interval is Student's t
/// interval of the mean, the honest statement of how well `n` trials pin the figure down; its
/// half-width is printed next to the median as `median ± half-width`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of trials (finite values) summarized.
    pub n: usize,
    /// Middle value (mean of the two middle values for even `n`).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divides by `n - 1`); 0 for a single trial.
    pub sd: f64,
    /// Coefficient of variation, `sd / |mean|` (0 when the mean is 0).
    pub cv: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 95% interval of the mean; `None` with a single trial (one value has no spread).
    pub ci: Option<Interval>,
}

/// The median of `values`: the middle value, or the mean of the middle two for an even count;
/// `None` for none. Trials, cliffs, disks, hosts and the planner take it here; it is
/// [`crate::quantile::median`], which `trace` and `hosts` use too.
pub fn median(values: &[f64]) -> Option<f64> {
    crate::quantile::median(values)
}

impl Summary {
    /// Summarizes a sample. Non-finite values (NaN, inf) are left out; `None` when nothing is
    /// left.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = crate::quantile::median_of_sorted(&v)?;
        let nf = n as f64;
        let mean = v.iter().sum::<f64>() / nf;
        let sd = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0)).sqrt()
        } else {
            0.0
        };
        let cv = if mean == 0.0 { 0.0 } else { sd / mean.abs() };
        let ci = (n > 1).then(|| {
            let h = t_critical(CONFIDENCE, nf - 1.0) * sd / nf.sqrt();
            Interval {
                lo: mean - h,
                hi: mean + h,
                level: CONFIDENCE,
                method: CiMethod::StudentT,
            }
        });
        Some(Summary {
            n,
            median,
            mean,
            sd,
            cv,
            min: v[0],
            max: v[n - 1],
            ci,
        })
    }

    /// The `±` figure: half the interval's width; `None` with one trial.
    pub fn half_width(&self) -> Option<f64> {
        self.ci.map(|c| c.half_width())
    }

    /// True when the trials disagree by more than [`HIGH_CV`].
    pub fn high_cv(&self) -> bool {
        self.cv > HIGH_CV
    }

    /// The half-width as a percentage of the median: how precisely the figure is known.
    /// `None` with one trial or a zero median.
    pub fn precision_pct(&self) -> Option<f64> {
        let h = self.half_width()?;
        (self.median != 0.0).then(|| h / self.median.abs() * 100.0)
    }
}

/// The fewest trials `--until-stable` accepts: two trials can agree by luck.
pub const MIN_STABLE_TRIALS: usize = 3;

/// Whether `--until-stable PCT` may stop: at least [`MIN_STABLE_TRIALS`] values and the 95%
/// interval's half-width within `pct` percent of the median.
pub fn is_stable(values: &[f64], pct: f64) -> bool {
    Summary::of(values)
        .is_some_and(|s| s.n >= MIN_STABLE_TRIALS && s.precision_pct().is_some_and(|p| p <= pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_of_a_hand_computed_sample() {
        // 2 4 4 4 5 5 7 9: mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32;
        // sd = sqrt(32/7) = 2.138089935; median (4+5)/2 = 4.5; cv = 0.427617987.
        // t(0.975, 7) = 2.364624252; half-width = 2.364624252 * 2.138089935 / sqrt(8)
        //             = 1.787487919.
        let s = Summary::of(&[5.0, 2.0, 4.0, 9.0, 4.0, 4.0, 7.0, 5.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0, 1e-12));
        assert!(close(s.median, 4.5, 1e-12));
        assert!(close(s.sd, 2.138_089_935, 1e-9));
        assert!(close(s.cv, 0.427_617_987, 1e-9));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        let ci = s.ci.unwrap();
        assert_eq!(ci.method, CiMethod::StudentT);
        assert!(close(ci.half_width(), 1.787_487_919, 1e-8));
        assert!(close(ci.lo, 5.0 - 1.787_487_919, 1e-8));
        assert!(s.high_cv());
    }

    #[test]
    fn three_trials_like_our_users_ran() {
        // 510 500 490 MB/s: mean 500, sd 10, median 500; t(0.975, 2) = 4.302652730;
        // half-width = 4.302652730 * 10 / sqrt(3) = 24.841377; cv = 2% (not flagged).
        let s = Summary::of(&[510.0, 500.0, 490.0]).unwrap();
        assert!(close(s.sd, 10.0, 1e-12));
        assert!(close(s.half_width().unwrap(), 24.841_377, 1e-5));
        assert!(!s.high_cv());
        assert!(close(s.precision_pct().unwrap(), 4.968_275, 1e-5));
    }

    #[test]
    fn one_value_has_no_interval_and_nothing_has_no_summary() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!(s.sd, 0.0);
        assert!(s.ci.is_none());
        assert!(s.precision_pct().is_none());
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
        assert_eq!(Summary::of(&[1.0, f64::NAN, 3.0]).unwrap().n, 2);
    }

    #[test]
    fn stability_needs_three_trials_and_a_tight_interval() {
        // 500±24.8 is 4.97% of the median: stable at 5%, not at 4%.
        assert!(is_stable(&[510.0, 500.0, 490.0], 5.0));
        assert!(!is_stable(&[510.0, 500.0, 490.0], 4.0));
        // Two identical trials are not enough.
        assert!(!is_stable(&[500.0, 500.0], 5.0));
        assert!(!is_stable(&[], 5.0));
    }
}
