//! "3.01x faster", with the uncertainty of both runs carried into the ratio.
//!
//! The ratio is of medians (what the table shows, so a reader can check it by dividing two
//! cells). Its interval comes from the delta method on the log scale: the variance of the log
//! of a mean is about `cv² / n`, the two runs are independent, so
//! `se(ln r) = √(cv_a²/n_a + cv_b²/n_b)`, and the interval is `r · exp(± t · se)` with Welch's
//! degrees of freedom. Working in logs keeps the interval positive and makes `A/B` and `B/A`
//! mirror images. The difference is called significant when that interval excludes 1.

use serde::{Deserialize, Serialize};

use super::summary::{CONFIDENCE, CiMethod, Interval, Summary};
use super::tdist::t_critical;

/// The ratio of a run's figure to the baseline's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// `median(run) / median(baseline)`.
    pub value: f64,
    /// 95% interval of the ratio; `None` when either side has a single trial or a figure is 0.
    pub ci: Option<Interval>,
    /// Whether the interval excludes 1; `None` when there is no interval.
    pub significant: Option<bool>,
}

/// The ratio of `run` to `baseline` with its propagated interval; `None` when the baseline's
/// median is not positive (nothing to divide by).
pub fn ratio(run: &Summary, baseline: &Summary) -> Option<Ratio> {
    if !baseline.median.is_finite()
        || baseline.median <= 0.0
        || !run.median.is_finite()
        || run.median < 0.0
    {
        return None;
    }
    let value = run.median / baseline.median;
    let no_ci = Ratio {
        value,
        ci: None,
        significant: None,
    };
    if run.n < 2 || baseline.n < 2 || run.mean <= 0.0 || baseline.mean <= 0.0 || value == 0.0 {
        return Some(no_ci);
    }
    let va = baseline.cv.powi(2) / baseline.n as f64;
    let vb = run.cv.powi(2) / run.n as f64;
    let var = va + vb;
    let ci = if var == 0.0 {
        // Both runs repeated to the last digit: the ratio is exact.
        Interval {
            lo: value,
            hi: value,
            level: CONFIDENCE,
            method: CiMethod::DeltaLogT,
        }
    } else {
        let df = var.powi(2)
            / (va.powi(2) / (baseline.n as f64 - 1.0) + vb.powi(2) / (run.n as f64 - 1.0));
        let h = t_critical(CONFIDENCE, df) * var.sqrt();
        Interval {
            lo: value * (-h).exp(),
            hi: value * h.exp(),
            level: CONFIDENCE,
            method: CiMethod::DeltaLogT,
        }
    };
    Some(Ratio {
        value,
        ci: Some(ci),
        significant: Some(!ci.contains(1.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn three_times_faster_with_two_percent_noise_is_significant() {
        // Baseline 100 102 98 (mean 100, sd 2, cv 0.02); run 300 306 294 (mean 300, sd 6,
        // cv 0.02). va = vb = 0.0004/3; se = sqrt(0.0008/3) = 0.016329932;
        // Welch df = (2v)^2 / (2 v^2 / 2) = 4; t(0.975, 4) = 2.776445105;
        // h = 0.045339159; CI = 3 * exp(±h) = [2.867020, 3.139148].
        let a = Summary::of(&[100.0, 102.0, 98.0]).unwrap();
        let b = Summary::of(&[300.0, 306.0, 294.0]).unwrap();
        let r = ratio(&b, &a).unwrap();
        assert!(close(r.value, 3.0, 1e-12));
        let ci = r.ci.unwrap();
        assert_eq!(ci.method, CiMethod::DeltaLogT);
        assert!(close(ci.lo, 2.867_020, 1e-5), "{}", ci.lo);
        assert!(close(ci.hi, 3.139_148, 1e-5), "{}", ci.hi);
        assert_eq!(r.significant, Some(true));
        // The other way round mirrors it.
        let back = ratio(&a, &b).unwrap();
        assert!(close(back.ci.unwrap().hi, 1.0 / ci.lo, 1e-12));
    }

    #[test]
    fn four_percent_apart_with_ten_percent_noise_is_not_significant() {
        // 104 114 94 (cv 0.0962) against 100 102 98: ratio 1.04, interval about [0.82, 1.32].
        let a = Summary::of(&[100.0, 102.0, 98.0]).unwrap();
        let b = Summary::of(&[104.0, 114.0, 94.0]).unwrap();
        let r = ratio(&b, &a).unwrap();
        assert!(close(r.value, 1.04, 1e-12));
        let ci = r.ci.unwrap();
        assert!(ci.lo < 1.0 && ci.hi > 1.0);
        assert!(ci.lo > 0.75 && ci.hi < 1.45);
        assert_eq!(r.significant, Some(false));
    }

    #[test]
    fn single_trials_and_zeros_give_no_interval() {
        let one = Summary::of(&[100.0]).unwrap();
        let three = Summary::of(&[100.0, 102.0, 98.0]).unwrap();
        let r = ratio(&three, &one).unwrap();
        assert!(r.ci.is_none() && r.significant.is_none());
        let zero = Summary::of(&[0.0, 0.0]).unwrap();
        assert!(ratio(&three, &zero).is_none());
        let r = ratio(&zero, &three).unwrap();
        assert_eq!(r.value, 0.0);
        assert!(r.significant.is_none());
        // Identical repeats: exact ratio, significant unless it is 1.
        let e1 = Summary::of(&[10.0, 10.0]).unwrap();
        let e2 = Summary::of(&[20.0, 20.0]).unwrap();
        assert_eq!(ratio(&e2, &e1).unwrap().significant, Some(true));
        assert_eq!(ratio(&e1, &e1).unwrap().significant, Some(false));
    }
}
