//! The SLO search (`--slo 'p99<=2ms'`): the highest open-loop rate at which every latency
//! target holds, found by trials.
//!
//! 1. One closed-loop trial finds the device's peak (what it delivers with the queue full).
//! 2. A rate well below it (a tenth, then a hundredth) that meets the targets, and the peak
//!    itself bracket the answer. When the peak meets (and keeps meeting on its repeats), the
//!    answer is the peak.
//! 3. Bisection on a log scale narrows the bracket until it is within the precision asked
//!    (5% by default): ~6 trials from a tenth of the peak.
//! 4. The two rates that bracket the answer get repeated trials (3 each by default), so the
//!    answer carries an interval; when a repeat flips a rate's verdict, the search goes on from
//!    there.
//!
//! Every trial is timed: the workload's `time`, or [`TRIAL`] (shorter when a budget is short;
//! a byte count does not bound a search trial, since one pass over a large working set at a
//! low rate takes many minutes). Open-loop trials at low rates are lengthened so the asked
//! percentile is resolved, up to `MAX_TRIAL` and a share of the budget.
//!
//! Every trial is stored like any other (its open-loop record names its rate); the answer is
//! [`crate::stats::slo::capacity`] of them, so any report rebuilds it from the store. A
//! budget (`--budget`) bounds the search: a trial starts only when its expected length (its
//! window plus the per-trial cost measured on the trials before it) ends inside the budget, so
//! the search ends within the budget unless a trial runs longer than expected, and then by at
//! most that trial.

use std::time::{Duration, Instant};

use crate::sample::TrialSample;
use crate::spec::{IoWorkload, OpenLoop, Rate, Slo};
use crate::stats::slo::{SloCapacity, capacity};

/// The lowest rate the search tries, IOPS.
const MIN_RATE: f64 = 1.0;
/// A search trial's measured window when the workload sets no `time` and no budget is short.
pub const TRIAL: Duration = Duration::from_secs(5);
/// The shortest window a short budget cuts [`TRIAL`] to.
const MIN_TRIAL: Duration = Duration::from_secs(1);
/// The longest a search trial is made to resolve a tail percentile at a low rate.
const MAX_TRIAL: Duration = Duration::from_secs(30);
/// What a trial costs beyond its window before one has been measured: the quiet time before
/// it, and opening, setting up and storing it.
const FIRST_OVERHEAD: Duration =
    super::io::QUIET_BEFORE_TRIAL.saturating_add(Duration::from_millis(300));
/// Rounds of bisection and repeats after a repeat flipped a verdict.
const MAX_ROUNDS: usize = 4;

/// How many trials a search takes when nothing surprises it (for the progress line's ETA).
pub fn planned_trials(slo: &Slo) -> u32 {
    let steps = (10f64.ln() / (1.0 + slo.precision).ln())
        .log2()
        .ceil()
        .max(1.0) as u32;
    3 + steps + 2 * slo.edge_trials.saturating_sub(1)
}

/// The measured window of a search trial: the workload's `time`, or [`TRIAL`] cut so that the
/// planned trials (and one more), each with its overhead, fit the budget (not below
/// `MIN_TRIAL`).
pub fn trial_window(io: &IoWorkload, slo: &Slo) -> Duration {
    io.runtime.unwrap_or_else(|| {
        slo.budget.map_or(TRIAL, |b| {
            (b / (planned_trials(slo) + 1))
                .saturating_sub(FIRST_OVERHEAD)
                .clamp(MIN_TRIAL, TRIAL)
        })
    })
}

/// The search over one IO workload; `run` runs (and stores) one trial of the workload it is
/// given and returns what it measured.
pub(super) fn search<E>(
    io: &IoWorkload,
    slo: &Slo,
    run: impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
) -> Result<SloCapacity, E> {
    let started = Instant::now();
    search_timed(io, slo, &|| started.elapsed(), run)
}

/// [`search`] on a given clock (time since the search started): the budget is kept by it, so
/// a test drives the search with simulated trials on a simulated clock.
fn search_timed<E>(
    io: &IoWorkload,
    slo: &Slo,
    clock: &dyn Fn() -> Duration,
    mut run: impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
) -> Result<SloCapacity, E> {
    let mut s = Search::new(io, slo, clock);
    let closed = s.closed();
    s.run_trial(&closed, &mut run)?;
    let peak = s.analysis().peak.unwrap_or(0.0).max(MIN_RATE);
    let Some((lo, failed)) = s.lower_end(peak, &mut run)? else {
        return Ok(s.analysis());
    };
    if let Some(hi) = failed {
        // A tenth of the peak (or a lower rate) failed and a lower one met: that is the
        // bracket, and the peak, above a rate that failed, need not be tried.
        s.narrow(lo, hi, &mut run)?;
        return Ok(s.analysis());
    }
    // The upper end: the peak itself. Met there, and on its repeats, the answer is the peak.
    if !s.try_rate(peak, &mut run)? {
        return Ok(s.analysis());
    }
    if s.meets(peak) {
        s.repeat(peak, &mut run)?;
        if s.meets(peak) {
            return Ok(s.analysis());
        }
    }
    s.narrow(lo, peak, &mut run)?;
    Ok(s.analysis())
}

/// The trials of one search so far, and what it knows of their cost.
struct Search<'a> {
    io: &'a IoWorkload,
    slo: &'a Slo,
    in_flight: u64,
    trials: Vec<TrialSample>,
    /// Time since the search started.
    clock: &'a dyn Fn() -> Duration,
    /// A trial's measured window ([`trial_window`]).
    window: Duration,
    /// The longest an open-loop trial is lengthened to.
    longest: Duration,
    /// The most a trial has taken beyond its window (`None` before the first).
    overhead: Option<Duration>,
}

impl<'a> Search<'a> {
    fn new(io: &'a IoWorkload, slo: &'a Slo, clock: &'a dyn Fn() -> Duration) -> Search<'a> {
        let window = trial_window(io, slo);
        Search {
            io,
            slo,
            in_flight: u64::from(io.queue_depth) * u64::from(io.threads),
            trials: Vec::new(),
            clock,
            window,
            longest: slo
                .budget
                .map_or(MAX_TRIAL, |b| (b / planned_trials(slo)).min(MAX_TRIAL))
                .max(window),
            overhead: None,
        }
    }

    fn analysis(&self) -> SloCapacity {
        capacity(&self.trials, self.slo, self.in_flight)
    }

    /// The closed-loop trial that finds the peak: the workload, timed.
    fn closed(&self) -> IoWorkload {
        IoWorkload {
            runtime: Some(self.window),
            total_bytes: None,
            open_loop: None,
            slo: None,
            ..self.io.clone()
        }
    }

    /// The workload at an open-loop rate (IOPS, all threads together), its trial long enough
    /// to resolve the finest percentile asked (ten IOs beyond it), up to the longest allowed.
    fn at(&self, rate: f64) -> IoWorkload {
        let need = self
            .slo
            .targets
            .iter()
            .map(|t| match t.stat {
                crate::spec::SloStat::Mean => 100.0,
                crate::spec::SloStat::Percentile(p) => 10.0 / (1.0 - p / 100.0),
            })
            .fold(0.0, f64::max);
        let long_enough =
            Duration::from_secs_f64((need / rate.max(MIN_RATE)).min(self.longest.as_secs_f64()));
        IoWorkload {
            runtime: Some(self.window.max(long_enough)),
            total_bytes: None,
            open_loop: Some(OpenLoop {
                rate: Rate::Iops(rate),
                arrivals: self.slo.arrivals,
                per_thread: false,
            }),
            slo: None,
            ..self.io.clone()
        }
    }

    /// How long a trial of `w` is expected to take, start to stored.
    fn cost(&self, w: &IoWorkload) -> Duration {
        super::io::expected_duration(w) + self.overhead.unwrap_or(FIRST_OVERHEAD)
    }

    /// Whether `cost` more still ends inside the budget.
    fn fits(&self, cost: Duration) -> bool {
        self.slo.budget.is_none_or(|b| (self.clock)() + cost <= b)
    }

    /// Runs one trial of `w` and learns what a trial costs beyond its window.
    fn run_trial<E>(
        &mut self,
        w: &IoWorkload,
        run: &mut impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
    ) -> Result<(), E> {
        let t0 = (self.clock)();
        let sample = run(w)?;
        let beyond =
            ((self.clock)().saturating_sub(t0)).saturating_sub(super::io::expected_duration(w));
        self.overhead = Some(self.overhead.map_or(beyond, |o| o.max(beyond)));
        self.trials.push(sample);
        Ok(())
    }

    /// A trial at `rate` when it fits the budget; whether it ran.
    fn try_rate<E>(
        &mut self,
        rate: f64,
        run: &mut impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
    ) -> Result<bool, E> {
        let w = self.at(rate);
        if !self.fits(self.cost(&w)) {
            return Ok(false);
        }
        self.run_trial(&w, run)?;
        Ok(true)
    }

    /// The lower end of the bracket: a tenth of the peak, a hundredth, ... down to
    /// [`MIN_RATE`], the first that meets the targets, with the rate tried before it that
    /// failed (`None`: none met, or the budget ended first).
    fn lower_end<E>(
        &mut self,
        peak: f64,
        run: &mut impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
    ) -> Result<Option<(f64, Option<f64>)>, E> {
        let mut r = (peak / 10.0).max(MIN_RATE);
        let mut failed = None;
        while self.try_rate(r, run)? {
            if self.meets(r) {
                return Ok(Some((r, failed)));
            }
            if r <= MIN_RATE {
                break;
            }
            failed = Some(r);
            r = (r / 10.0).max(MIN_RATE);
        }
        Ok(None)
    }

    /// Bisection between a rate that meets (`lo`) and one that does not (`hi`), the edges
    /// repeated, and again from where the repeats moved the edges.
    fn narrow<E>(
        &mut self,
        mut lo: f64,
        mut hi: f64,
        run: &mut impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
    ) -> Result<(), E> {
        let top = hi;
        let repeats = 2 * self.slo.edge_trials.saturating_sub(1);
        // Two bisection steps from the precision asked.
        let near = (1.0 + self.slo.precision).powi(4);
        for _ in 0..MAX_ROUNDS {
            // Room for the edge repeats is kept while the bracket is near the precision; a
            // wider one is narrowed first (an answer within 20% beats a repeated 33% one).
            while (hi - lo) / lo > self.slo.precision {
                let mid = (lo * hi).sqrt();
                let w = self.at(mid);
                let one = self.cost(&w);
                if !(self.fits(one * (1 + repeats)) || (hi / lo > near && self.fits(one))) {
                    break;
                }
                self.run_trial(&w, run)?;
                if self.meets(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            self.repeat(lo, run)?;
            self.repeat(hi, run)?;
            // A repeat can flip a verdict: go on from the rates the trials now say meet and fail.
            let a = self.analysis();
            let Some(ok) = a.curve.iter().rposition(|p| p.meets) else {
                break;
            };
            let (new_lo, new_hi) = (
                a.curve[ok].rate,
                a.curve.get(ok + 1).map_or(top, |p| p.rate),
            );
            if (new_lo - lo).abs() < 1e-9 && (new_hi - hi).abs() < 1e-9 {
                break;
            }
            lo = new_lo;
            hi = new_hi;
        }
        Ok(())
    }

    fn point(&self, rate: f64) -> Option<crate::stats::slo::SloPoint> {
        self.analysis()
            .curve
            .into_iter()
            .find(|p| (p.rate - rate).abs() <= 1e-6 * rate.max(1.0))
    }

    fn meets(&self, rate: f64) -> bool {
        self.point(rate).is_some_and(|p| p.meets)
    }

    /// Trials at `rate` until it has the edge count (or the budget ends).
    fn repeat<E>(
        &mut self,
        rate: f64,
        run: &mut impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
    ) -> Result<(), E> {
        while self.point(rate).map_or(0, |p| p.trials) < self.slo.edge_trials as usize
            && self.try_rate(rate, run)?
        {}
        Ok(())
    }
}

#[cfg(test)]
#[path = "slo_tests.rs"]
mod tests;
