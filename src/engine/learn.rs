//! `--wait auto`: whether spinning for completions beats sleeping for them, learned while the
//! trial runs, on this machine and this device.
//!
//! Where spinning stops paying depends on the machine more than on the queue depth: spinning
//! takes a CPU from the thread that completes the IO (a loop device's worker, the softirq), so
//! on two idle cores it won at 32 IOs in flight on one machine and lost there on another
//! (0.81-0.96x fio), and with one core busy it can lose at any depth. No constant is right
//! everywhere, so the engine measures both.
//!
//! Time since the trial's start is cut into periods of [`PERIOD`]. Each period opens with two
//! probe windows of [`WINDOW`], one spinning and one sleeping (which goes first alternates
//! between periods, so a drift in the device does not favour one), then the rest of the
//! period waits the way that has completed IOs faster. The windows are aligned on the trial's
//! start, so the workers of a trial probe together and each measures the machine as it will
//! be when all of them use the mode (a thread sleeping while the others spin measures
//! something else). A window's rate is the completions reaped by waits that began in it over
//! the time from its first wait to the first wait of the next phase: in a closed loop the
//! rate is the IOPS, and (Little's law, the depth fixed) the inverse of the mean latency.
//!
//! The evidence is a moving average of ln(spin rate / sleep rate); spinning is kept only while
//! it is ahead by more than [`SPIN_MARGIN`], since it costs CPU time a sleep does not. Before
//! the first pair of windows the engine uses the prior it was given (spinning up to
//! [`crate::spec::WaitMode::SPIN_MAX_IN_FLIGHT`] in flight). A pair with too few completions
//! (a slow device: a disk, a throttle) says nothing and leaves the choice as it was; there the
//! spin's own hit share (in `uring.rs`) already stops spinning that finds nothing.

use std::time::{Duration, Instant};

/// One probe-and-use cycle.
pub(super) const PERIOD: Duration = Duration::from_millis(250);
/// One probe window; two per period, so a tenth of the time is spent probing and a
/// twentieth in the mode that loses.
pub(super) const WINDOW: Duration = Duration::from_micros(12_500);
/// A window with fewer completions than this is too short to compare.
const MIN_COMPLETIONS: u64 = 24;
/// Spinning must complete IOs this much faster than sleeping (as a log ratio: 2%) to be
/// kept: it costs a CPU.
const SPIN_MARGIN: f64 = 0.02;
/// Weight of the newest pair of windows in the moving average.
const NEW_WEIGHT: f64 = 0.35;

/// Which part of a period a wait falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The first probe window of period `k`.
    First(u64),
    /// The second probe window of period `k`.
    Second(u64),
    /// The rest of period `k`: the learned mode.
    Use(u64),
}

/// A probe window being measured.
#[derive(Debug, Clone, Copy)]
struct Window {
    phase: Phase,
    spin: bool,
    began: Instant,
    completions: u64,
}

/// The learner of one engine (one worker thread).
#[derive(Debug)]
pub(super) struct Learner {
    /// The trial's start: the windows are aligned on it. `None` until the worker starts.
    epoch: Option<Instant>,
    /// What the engine does without evidence.
    prior: bool,
    /// Moving average of ln(spin rate / sleep rate); `None` before the first usable pair.
    evidence: Option<f64>,
    /// The window being measured.
    open: Option<Window>,
    /// The first window of the current period, finished, as (spin, rate).
    first_rate: Option<(bool, f64)>,
    /// Pairs compared, and how many of them spinning won: for the record.
    pub(super) pairs: u32,
    pub(super) spin_won: u32,
}

impl Learner {
    /// A learner that waits as `prior` says until it has measured both ways.
    pub(super) fn new(prior: bool) -> Learner {
        Learner {
            epoch: None,
            prior,
            evidence: None,
            open: None,
            first_rate: None,
            pairs: 0,
            spin_won: 0,
        }
    }

    /// The trial started at `epoch`: probing begins.
    pub(super) fn start(&mut self, epoch: Instant) {
        self.epoch = Some(epoch);
        self.open = None;
        self.first_rate = None;
    }

    /// The mode learned so far (what the waits outside the probe windows do).
    pub(super) fn learned(&self) -> bool {
        self.evidence.map_or(self.prior, |e| e > SPIN_MARGIN)
    }

    fn phase(epoch: Instant, now: Instant) -> Phase {
        // u64 nanoseconds (584 years): a u128 division per wait would cost more than the rest.
        let t = now.saturating_duration_since(epoch).as_nanos() as u64;
        let period = PERIOD.as_nanos() as u64;
        let k = t / period;
        let at = t % period;
        let w = WINDOW.as_nanos() as u64;
        if at < w {
            Phase::First(k)
        } else if at < 2 * w {
            Phase::Second(k)
        } else {
            Phase::Use(k)
        }
    }

    /// Whether a wait that begins at `now` should spin.
    pub(super) fn spin_now(&mut self, now: Instant) -> bool {
        let Some(epoch) = self.epoch else {
            return self.prior;
        };
        let phase = Self::phase(epoch, now);
        if let Some(w) = self.open
            && w.phase != phase
        {
            self.close(w, now);
        }
        let spin = match phase {
            // Odd periods sleep first, even ones spin first.
            Phase::First(k) => k % 2 == 0,
            Phase::Second(k) => k % 2 == 1,
            Phase::Use(_) => return self.learned(),
        };
        if self.open.is_none() {
            self.open = Some(Window {
                phase,
                spin,
                began: now,
                completions: 0,
            });
        }
        spin
    }

    /// Books `n` completions reaped by the wait that began last.
    pub(super) fn reaped(&mut self, n: usize) {
        if let Some(w) = &mut self.open {
            w.completions += n as u64;
        }
    }

    /// Ends window `w` at `now` (the first wait after it).
    fn close(&mut self, w: Window, now: Instant) {
        self.open = None;
        let secs = now.saturating_duration_since(w.began).as_secs_f64();
        let rate =
            (w.completions >= MIN_COMPLETIONS && secs > 0.0).then(|| w.completions as f64 / secs);
        match w.phase {
            Phase::First(_) => self.first_rate = rate.map(|r| (w.spin, r)),
            Phase::Second(_) => {
                if let (Some((first_spin, first)), Some(second)) = (self.first_rate.take(), rate)
                    && first_spin != w.spin
                {
                    let (spin, sleep) = if w.spin {
                        (second, first)
                    } else {
                        (first, second)
                    };
                    self.weigh((spin / sleep).ln());
                }
            }
            Phase::Use(_) => {}
        }
    }

    fn weigh(&mut self, log_ratio: f64) {
        self.pairs += 1;
        if log_ratio > 0.0 {
            self.spin_won += 1;
        }
        self.evidence = Some(match self.evidence {
            None => log_ratio,
            Some(e) => e + NEW_WEIGHT * (log_ratio - e),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device completing `spin_iops` IOs per second while the waits spin and `sleep_iops`
    /// while they sleep, driven through `secs` of a trial in waits of one completion.
    fn drive(l: &mut Learner, spin_iops: f64, sleep_iops: f64, secs: f64) -> (u64, u64) {
        let t0 = Instant::now();
        l.start(t0);
        let mut t = Duration::ZERO;
        let (mut spun, mut slept) = (0, 0);
        while t.as_secs_f64() < secs {
            let spin = l.spin_now(t0 + t);
            let iops = if spin { spin_iops } else { sleep_iops };
            t += Duration::from_secs_f64(1.0 / iops);
            l.reaped(1);
            if spin {
                spun += 1;
            } else {
                slept += 1;
            }
        }
        (spun, slept)
    }

    #[test]
    fn spinning_is_learned_where_it_completes_more() {
        let mut l = Learner::new(false);
        assert!(!l.learned(), "the prior before any evidence");
        let (spun, slept) = drive(&mut l, 130_000.0, 100_000.0, 2.0);
        assert!(l.learned());
        assert_eq!(l.pairs, 8, "two windows in each of 8 periods");
        assert_eq!(l.spin_won, 8);
        // After the first period, only the sleeping probe windows sleep.
        let share = slept as f64 / (spun + slept) as f64;
        assert!(share < 0.06, "slept {slept} of {}", spun + slept);
    }

    #[test]
    fn sleeping_is_learned_where_spinning_loses_even_from_a_spinning_prior() {
        let mut l = Learner::new(true);
        let (spun, slept) = drive(&mut l, 80_000.0, 100_000.0, 2.0);
        assert!(!l.learned());
        assert_eq!(l.spin_won, 0);
        let share = spun as f64 / (spun + slept) as f64;
        assert!(share < 0.07, "spun {spun} of {}", spun + slept);
    }

    #[test]
    fn a_tie_sleeps_because_spinning_costs_a_cpu() {
        let mut l = Learner::new(true);
        drive(&mut l, 100_500.0, 100_000.0, 2.0);
        assert!(!l.learned(), "0.5% ahead is inside the 2% margin");
    }

    #[test]
    fn a_slow_device_gives_no_evidence_and_keeps_the_prior() {
        // 1000 IOPS: ~12 completions per window, too few to compare.
        for prior in [false, true] {
            let mut l = Learner::new(prior);
            drive(&mut l, 1_000.0, 900.0, 2.0);
            assert_eq!(l.pairs, 0);
            assert_eq!(l.learned(), prior);
        }
    }

    #[test]
    fn the_choice_follows_a_machine_that_changes() {
        // One core gets busy half-way: spinning wins, then loses.
        let mut l = Learner::new(false);
        drive(&mut l, 130_000.0, 100_000.0, 1.0);
        assert!(l.learned());
        let t0 = Instant::now() + Duration::from_secs(1);
        // Continue the same trial (same epoch alignment is not needed for the verdict).
        l.start(t0);
        let mut t = Duration::ZERO;
        while t < Duration::from_secs(1) {
            let spin = l.spin_now(t0 + t);
            t += Duration::from_secs_f64(1.0 / if spin { 60_000.0 } else { 100_000.0 });
            l.reaped(1);
        }
        assert!(!l.learned(), "spinning lost for a second and was dropped");
    }

    #[test]
    fn before_the_start_the_prior_rules_and_nothing_is_measured() {
        let mut l = Learner::new(true);
        for _ in 0..10_000 {
            assert!(l.spin_now(Instant::now()));
            l.reaped(1);
        }
        assert_eq!(l.pairs, 0);
    }
}
