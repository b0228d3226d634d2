//! Axes: mapping values to pixels on linear, logarithmic and "nines" scales, and choosing
//! round tick values a reader can take in at a glance.

/// How values are spread along an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Even steps; starts at zero for rates, so bar lengths and line heights compare honestly.
    Linear,
    /// Decades: latencies spanning 50us to 200ms stay readable on one chart.
    Log,
    /// Percentiles by their nines, `-log10(1 - p/100)`: p50, p90, p99, p99.9, p99.99 are
    /// evenly spaced, as latency tails are read.
    Nines,
}

/// The position of a percentile on the nines scale: p90 -> 1, p99 -> 2, p99.9 -> 3.
pub fn nines(p: f64) -> f64 {
    let q = (1.0 - p / 100.0).max(1e-9);
    -q.log10()
}

/// A resolved axis: value range in scale units and the pixel range it maps to.
#[derive(Clone, Debug)]
pub struct Mapped {
    /// Scale.
    pub scale: Scale,
    /// Low end, in scale units (log10 of the value on a log axis, nines on a nines axis).
    pub lo: f64,
    /// High end, in scale units.
    pub hi: f64,
    /// Pixel of `lo`.
    pub p0: f64,
    /// Pixel of `hi`.
    pub p1: f64,
    /// Tick values (in data units) with their labels.
    pub ticks: Vec<(f64, String)>,
}

impl Mapped {
    /// Pixel position of a data value (clamped into the axis).
    pub fn px(&self, v: f64) -> f64 {
        let u = match self.scale {
            Scale::Linear => v,
            Scale::Log => v.max(f64::MIN_POSITIVE).log10(),
            Scale::Nines => nines(v),
        };
        let span = self.hi - self.lo;
        let f = if span > 0.0 {
            ((u - self.lo) / span).clamp(-0.02, 1.02)
        } else {
            0.5
        };
        self.p0 + f * (self.p1 - self.p0)
    }
}

/// A step of 1, 2 or 5 times a power of ten giving about `target` steps over `span`.
pub fn nice_step(span: f64, target: usize) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// A linear axis from zero (or `min` when negative) to a round value at or above `max`, with
/// about five ticks labelled by `label`.
pub fn linear(min: f64, max: f64, p0: f64, p1: f64, label: &dyn Fn(f64) -> String) -> Mapped {
    let lo0 = min.min(0.0);
    let hi0 = if max > lo0 { max } else { lo0 + 1.0 };
    let step = nice_step(hi0 - lo0, 5);
    let lo = (lo0 / step).floor() * step;
    let hi = (hi0 / step).ceil() * step;
    let mut ticks = Vec::new();
    let mut k = 0.0;
    loop {
        let v = lo + k * step;
        if v > hi + step * 1e-9 {
            break;
        }
        // Clean the float noise of repeated addition (0.30000000000000004).
        let v = (v / step).round() * step;
        ticks.push((v, label(v)));
        k += 1.0;
    }
    Mapped {
        scale: Scale::Linear,
        lo,
        hi,
        p0,
        p1,
        ticks,
    }
}

/// A log axis over whole decades around `[min, max]` (both positive), ticked at 1, and also 2
/// and 5 when the range spans few decades.
pub fn log(min: f64, max: f64, p0: f64, p1: f64, label: &dyn Fn(f64) -> String) -> Mapped {
    let min = if min > 0.0 && min.is_finite() {
        min
    } else {
        1.0
    };
    let max = if max > min && max.is_finite() {
        max
    } else {
        min * 10.0
    };
    let lo = min.log10().floor();
    let mut hi = max.log10().ceil();
    if hi <= lo {
        hi = lo + 1.0;
    }
    let decades = (hi - lo) as i64;
    let mults: &[f64] = if decades <= 2 {
        &[1.0, 2.0, 5.0]
    } else if decades <= 4 {
        &[1.0, 3.0]
    } else {
        &[1.0]
    };
    let mut ticks = Vec::new();
    for d in (lo as i64)..=(hi as i64) {
        for m in mults {
            let v = m * 10f64.powi(d as i32);
            if v.log10() <= hi + 1e-9 {
                ticks.push((v, label(v)));
            }
        }
    }
    Mapped {
        scale: Scale::Log,
        lo,
        hi,
        p0,
        p1,
        ticks,
    }
}

/// A nines axis from p50 to the highest percentile drawn (at least p99), ticked at p50, p90,
/// p99, p99.9... and at that highest percentile.
pub fn nines_axis(max_pct: f64, p0: f64, p1: f64) -> Mapped {
    let max_pct = if max_pct.is_finite() {
        max_pct.clamp(99.0, 99.9999)
    } else {
        99.0
    };
    let hi = nines(max_pct);
    let mut ticks = vec![(50.0, "p50".to_string())];
    let mut p = 90.0;
    while nines(p) <= hi + 1e-9 {
        ticks.push((p, format!("p{}", trim_pct(p))));
        p = 100.0 - (100.0 - p) / 10.0;
    }
    if ticks.last().is_some_and(|t| hi - nines(t.0) > 0.2) {
        ticks.push((max_pct, format!("p{}", trim_pct(max_pct))));
    }
    Mapped {
        scale: Scale::Nines,
        lo: nines(50.0),
        hi,
        p0,
        p1,
        ticks,
    }
}

/// `99.9` rather than `99.90000000000001`.
pub fn trim_pct(p: f64) -> String {
    let s = format!("{p:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_five() {
        assert_eq!(nice_step(100.0, 5), 20.0);
        assert_eq!(nice_step(7.0, 5), 2.0);
        assert_eq!(nice_step(0.3, 5), 0.1);
        assert_eq!(nice_step(23_000.0, 5), 5000.0);
    }

    #[test]
    fn linear_axes_start_at_zero_and_end_round() {
        let a = linear(120.0, 523.0, 0.0, 100.0, &|v| format!("{v}"));
        assert_eq!(a.lo, 0.0);
        assert_eq!(a.hi, 600.0);
        assert_eq!(a.ticks.first().unwrap().0, 0.0);
        assert_eq!(a.ticks.last().unwrap().0, 600.0);
        assert!((a.px(300.0) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn log_axes_cover_whole_decades() {
        let a = log(42_000.0, 3_100_000.0, 100.0, 0.0, &|v| format!("{v}"));
        assert_eq!((a.lo, a.hi), (4.0, 7.0));
        assert!((a.px(1e4) - 100.0).abs() < 1e-9);
        assert!((a.px(1e7) - 0.0).abs() < 1e-9);
        assert!(a.ticks.iter().any(|t| t.0 == 1e5));
    }

    #[test]
    fn nines_space_the_tail_evenly() {
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.9) - 3.0).abs() < 1e-6);
        let a = nines_axis(99.99, 0.0, 400.0);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["p50", "p90", "p99", "p99.9", "p99.99"]);
        assert!((a.px(99.99) - 400.0).abs() < 1e-6);
        // The axis ends at the last percentile drawn, which gets its own tick.
        let a = nines_axis(99.95, 0.0, 400.0);
        assert_eq!(a.ticks.last().unwrap().1, "p99.95");
        assert!((a.px(99.95) - 400.0).abs() < 1e-6);
        assert_eq!(
            nines_axis(90.0, 0.0, 1.0).ticks.len(),
            3,
            "never shorter than p99"
        );
    }
}
