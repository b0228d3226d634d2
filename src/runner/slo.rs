//! The SLO search (`--slo 'p99<=2ms'`): the highest open-loop rate at which every latency
//! target holds, found by trials.
//!
//! 1. One closed-loop trial finds the device's peak (what it delivers with the queue full).
//! 2. A rate well below it (a tenth, then a hundredth) that meets the targets, and the peak
//!    itself, which usually does not (an open loop at the peak rate queues without bound),
//!    bracket the answer.
//! 3. Bisection on a log scale narrows the bracket until it is within the precision asked
//!    (5% by default): ~6 trials from a tenth of the peak.
//! 4. The two rates that bracket the answer get repeated trials (3 each by default), so the
//!    answer carries an interval; when a repeat flips a rate's verdict, the search goes on from
//!    there.
//!
//! Every trial is stored like any other (its open-loop record names its rate); the answer is
//! [`crate::stats::slo::capacity`] of them, so any report rebuilds it from the store. A
//! budget (`--budget`) stops the search early with what it has.

use std::time::{Duration, Instant};

use crate::sample::TrialSample;
use crate::spec::{IoWorkload, OpenLoop, Rate, Slo};
use crate::stats::slo::{SloCapacity, capacity};

/// The lowest rate the search tries, IOPS.
const MIN_RATE: f64 = 1.0;
/// The longest a search trial is made to resolve a tail percentile at a low rate.
const MAX_TRIAL: Duration = Duration::from_secs(30);
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

/// The search over one IO workload; `run` runs (and stores) one trial of the workload it is
/// given and returns what it measured.
pub(super) fn search<E>(
    io: &IoWorkload,
    slo: &Slo,
    mut run: impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
) -> Result<SloCapacity, E> {
    let in_flight = u64::from(io.queue_depth) * u64::from(io.threads);
    let per_trial = super::io::expected_duration(io)
        + super::io::QUIET_BEFORE_TRIAL
        + Duration::from_millis(300);
    let started = Instant::now();
    let room = |n: u32| {
        slo.budget
            .is_none_or(|b| started.elapsed() + per_trial * n <= b)
    };
    let mut s = Search {
        io,
        slo,
        in_flight,
        trials: Vec::new(),
    };
    let closed = IoWorkload {
        open_loop: None,
        slo: None,
        ..io.clone()
    };
    s.trials.push(run(&closed)?);
    let peak = s.analysis().peak.unwrap_or(0.0).max(MIN_RATE);
    // The lower end: a rate that meets the targets.
    let mut lo = None;
    let mut r = (peak / 10.0).max(MIN_RATE);
    while room(1) {
        s.trials.push(run(&s.at(r))?);
        if s.meets(r) {
            lo = Some(r);
            break;
        }
        if r <= MIN_RATE {
            break;
        }
        r = (r / 10.0).max(MIN_RATE);
    }
    let Some(mut lo) = lo else {
        return Ok(s.analysis());
    };
    // The upper end: the peak itself.
    let mut hi = peak;
    if room(1) {
        s.trials.push(run(&s.at(hi))?);
    }
    if s.meets(hi) {
        s.repeat(hi, &room, &mut run)?;
        return Ok(s.analysis());
    }
    for _ in 0..MAX_ROUNDS {
        // Room for the edge repeats is kept while the bracket is narrow; a bracket still wider
        // than 2x is narrowed first (an answer within 2x beats a repeated 10x one).
        while (hi - lo) / lo > slo.precision
            && (room(1 + 2 * slo.edge_trials) || (hi / lo > 2.0 && room(1)))
        {
            let mid = (lo * hi).sqrt();
            s.trials.push(run(&s.at(mid))?);
            if s.meets(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        s.repeat(lo, &room, &mut run)?;
        s.repeat(hi, &room, &mut run)?;
        // A repeat can flip a verdict: go on from the rates the trials now say meet and fail.
        let a = s.analysis();
        let Some(ok) = a.curve.iter().rposition(|p| p.meets) else {
            break;
        };
        let (new_lo, new_hi) = (
            a.curve[ok].rate,
            a.curve.get(ok + 1).map_or(peak, |p| p.rate),
        );
        if (new_lo - lo).abs() < 1e-9 && (new_hi - hi).abs() < 1e-9 {
            break;
        }
        lo = new_lo;
        hi = new_hi;
        if !room(1) {
            break;
        }
    }
    Ok(s.analysis())
}

/// The trials of one search so far.
struct Search<'a> {
    io: &'a IoWorkload,
    slo: &'a Slo,
    in_flight: u64,
    trials: Vec<TrialSample>,
}

impl Search<'_> {
    fn analysis(&self) -> SloCapacity {
        capacity(&self.trials, self.slo, self.in_flight)
    }

    /// The workload at an open-loop rate (IOPS, all threads together), its trial long enough
    /// to resolve the finest percentile asked (ten IOs beyond it), up to [`MAX_TRIAL`].
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
            Duration::from_secs_f64((need / rate.max(MIN_RATE)).min(MAX_TRIAL.as_secs_f64()));
        IoWorkload {
            runtime: self.io.runtime.map(|r| r.max(long_enough)),
            open_loop: Some(OpenLoop {
                rate: Rate::Iops(rate),
                arrivals: self.slo.arrivals,
                per_thread: false,
            }),
            slo: None,
            ..self.io.clone()
        }
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

    /// Trials at `rate` until it has the edge count.
    fn repeat<E>(
        &mut self,
        rate: f64,
        room: &impl Fn(u32) -> bool,
        run: &mut impl FnMut(&IoWorkload) -> Result<TrialSample, E>,
    ) -> Result<(), E> {
        while self.point(rate).map_or(0, |p| p.trials) < self.slo.edge_trials as usize && room(1) {
            let w = self.at(rate);
            self.trials.push(run(&w)?);
        }
        Ok(())
    }
}
