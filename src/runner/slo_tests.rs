//! The search against simulated devices of known capacity, on a simulated clock: the bracket,
//! the bisection, the edge repeats and the budget, each checked against the answer the model
//! gives in closed form.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::time::Duration;

use super::*;
use crate::sample::{IoAccounting, LatencyHistogram, OpSample, OpenLoopSample};
use crate::spec::Arrivals;
use crate::stats::slo::SloVerdict;

/// ln(1 / (1 - 0.99)): the p99 of an exponential of mean 1.
const P99_TAIL: f64 = 4.605_170_185_988_09;

/// A simulated device of known capacity. An open loop below the capacity is served with a
/// queueing delay that grows as the rate nears it (an exponential tail, as in an M/M/1 queue:
/// the q-quantile of latency is `service × (1 + ρ/(1-ρ) × ln(1/(1-q)))`, ρ = rate/capacity);
/// at or above the capacity a backlog grows through the trial and latency from the schedule
/// with it (not sustained). A closed loop delivers `closed` (at most the capacity: a shallow
/// queue may get less).
struct Device {
    capacity: f64,
    closed: f64,
    service_ns: f64,
    /// What a trial takes beyond its window (quiet time, setup, storing).
    overhead: Duration,
    /// Latency factor of the n-th trial at one rate (n from 0): 1 for a steady device.
    noise: fn(usize) -> f64,
}

/// A token bucket like blk-throttle at 3000 IOPS over a RAM-backed loop device: service
/// 50 us, so latency stays far under 50 ms until the rate nearly reaches the throttle; a
/// closed loop at QD 1 gets a few % less than the throttle (as measured: 2893 of 3000).
fn throttle() -> Device {
    Device {
        capacity: 3000.0,
        closed: 2893.0,
        service_ns: 50_000.0,
        overhead: Duration::from_millis(400),
        noise: |_| 1.0,
    }
}

/// A device whose latency crosses the target well below its peak: 10,000 IOPS, 1 ms service;
/// against `p99<=5ms` the crossing is at 46.5% of the capacity.
fn slow_tail() -> Device {
    Device {
        capacity: 10_000.0,
        closed: 10_000.0,
        service_ns: 1_000_000.0,
        overhead: Duration::from_millis(400),
        noise: |_| 1.0,
    }
}

impl Device {
    /// The highest rate whose p99 is at most `limit_ns`, in closed form (the truth).
    fn p99_capacity(&self, limit_ns: f64) -> f64 {
        let k = (limit_ns / self.service_ns - 1.0) / P99_TAIL;
        (k / (1.0 + k) * self.capacity).min(self.capacity)
    }

    /// Latency at quantile `q` of an open loop at `rate` over a window of `secs`, ns.
    fn latency(&self, rate: f64, q: f64, secs: f64) -> f64 {
        if rate >= self.capacity {
            // The IO due at q of the window waits behind the backlog grown until then.
            let behind = (rate - self.capacity) * q * secs + 0.01 * rate;
            return self.service_ns + behind / self.capacity * 1e9;
        }
        let rho = rate / self.capacity;
        self.service_ns * (1.0 + rho / (1.0 - rho) * (1.0 / (1.0 - q)).ln())
    }
}

/// A histogram of `n` IOs whose quantiles follow `f` (up to 2000 distinct values).
fn histogram(n: u64, f: impl Fn(f64) -> f64) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    let k = n.clamp(1, 2000);
    for i in 0..k {
        let q = (i as f64 + 0.5) / k as f64;
        let weight = n / k + u64::from(i < n % k);
        h.0.saturating_record_n((f(q) as u64).max(1), weight.max(1));
    }
    h
}

/// One trial the search asked for, as the simulation ran it.
#[derive(Debug, Clone)]
struct Ran {
    /// The open-loop rate (`None`: the closed loop).
    rate: Option<f64>,
    /// How long it took on the simulated clock.
    took: Duration,
    window: Duration,
}

/// The device, the simulated clock and the trials run on it.
struct Sim {
    dev: Device,
    now: Cell<Duration>,
    ran: RefCell<Vec<Ran>>,
}

impl Sim {
    fn new(dev: Device) -> Sim {
        Sim {
            dev,
            now: Cell::new(Duration::ZERO),
            ran: RefCell::new(Vec::new()),
        }
    }

    /// One trial of `w` on the device; the clock moves on by its window and the overhead.
    fn trial(&self, w: &IoWorkload) -> TrialSample {
        // Every search trial is timed: a byte count or one pass over the working set at a
        // low rate would run for minutes.
        let window = w.runtime.expect("a search trial has a run time");
        assert!(
            w.total_bytes.is_none(),
            "a search trial is not bounded by bytes"
        );
        assert!(w.slo.is_none(), "a trial runs at one setting");
        let secs = window.as_secs_f64();
        let rate = w.open_loop.as_ref().map(|o| match o.rate {
            Rate::Iops(r) => r,
            Rate::BytesPerSec(_) => panic!("the search asks for IOPS"),
        });
        let d = &self.dev;
        let nth = self
            .ran
            .borrow()
            .iter()
            .filter(|r| {
                r.rate
                    .is_some_and(|x| rate.is_some_and(|y| (x - y).abs() < 1e-9))
            })
            .count();
        let noise = (d.noise)(nth);
        let (achieved, latency) = match rate {
            None => (
                d.closed,
                histogram((d.closed * secs) as u64, |_| d.service_ns),
            ),
            Some(r) => (
                r.min(d.capacity),
                histogram((r.min(d.capacity) * secs) as u64, |q| {
                    d.latency(r, q, secs) * noise
                }),
            ),
        };
        let count = (achieved * secs) as u64;
        let start = self.now.get();
        let took = window + w.ramp + d.overhead;
        self.now.set(start + took);
        self.ran.borrow_mut().push(Ran { rate, took, window });
        TrialSample {
            workload: "sim".into(),
            trial: self.ran.borrow().len() as u32,
            started_unix_ms: 0,
            elapsed_ns: window.as_nanos() as u64,
            ops: vec![OpSample {
                op: "read".into(),
                count,
                bytes: count * 4096,
                elapsed_ns: window.as_nanos() as u64,
                latency,
                service: rate.map(|_| histogram(count, |_| d.service_ns)),
            }],
            series: Vec::new(),
            accounting: IoAccounting::default(),
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            notes: Vec::new(),
            verify: None,
            open_loop: rate.map(|r| {
                let scheduled = (r * secs) as u64;
                OpenLoopSample {
                    asked_iops: r,
                    arrivals: "fixed".into(),
                    scheduled,
                    issued: count,
                    backlog_at_end: if r >= d.capacity {
                        scheduled - count.min(scheduled) + scheduled / 50
                    } else {
                        0
                    },
                    ..OpenLoopSample::default()
                }
            }),
        }
    }

    /// The search of `io` under `slo` on this device.
    fn search(&self, io: &IoWorkload, slo: &Slo) -> SloCapacity {
        let clock = || self.now.get();
        search_timed(io, slo, &clock, |w| Ok::<_, Infallible>(self.trial(w)))
            .unwrap_or_else(|e| match e {})
    }

    fn rates(&self) -> Vec<Option<f64>> {
        self.ran.borrow().iter().map(|r| r.rate).collect()
    }

    /// The longest any one trial took.
    fn longest(&self) -> Duration {
        self.ran
            .borrow()
            .iter()
            .map(|r| r.took)
            .max()
            .unwrap_or_default()
    }
}

fn slo(text: &str, budget: Option<Duration>) -> Slo {
    Slo {
        targets: Slo::parse_targets(text).expect("targets"),
        budget,
        precision: 0.05,
        edge_trials: 3,
        arrivals: Arrivals::Fixed,
    }
}

/// 4k random reads at QD 1 with no run time, as `iolab run DEV --slo ...` gives them.
fn randread() -> IoWorkload {
    IoWorkload::default()
}

fn within(x: f64, truth: f64, tol: f64) -> bool {
    (x - truth).abs() <= tol * truth
}

#[test]
fn a_throttle_met_at_its_peak_answers_the_peak_after_five_trials() {
    let sim = Sim::new(throttle());
    let c = sim.search(&randread(), &slo("p99<=50ms", None));
    assert_eq!(c.verdict, SloVerdict::MetAtPeak, "{c:?}");
    // The peak itself, not the tenth of it the bracket started from.
    assert_eq!(c.capacity, Some(2893.0));
    assert!(within(2893.0, 3000.0, 0.05), "the truth is the throttle");
    let r = sim.rates();
    assert_eq!(
        r,
        vec![None, Some(289.3), Some(2893.0), Some(2893.0), Some(2893.0)],
        "the peak, a tenth of it, then the peak and its repeats"
    );
    assert_eq!(c.curve.len(), 2);
    assert!(c.curve.iter().all(|p| p.meets));
    assert_eq!(c.curve[1].trials, 3, "the answer repeated");
    // Trials are timed (no --time: the default window), whatever the working set.
    for t in sim.ran.borrow().iter() {
        assert_eq!(t.window, TRIAL, "{t:?}");
    }
}

#[test]
fn the_bisection_finds_a_crossing_below_the_peak_within_the_precision() {
    let dev = slow_tail();
    let truth = dev.p99_capacity(5e6);
    assert!((4600.0..4700.0).contains(&truth), "{truth}");
    let sim = Sim::new(dev);
    let s = slo("p99<=5ms", None);
    let c = sim.search(&randread(), &s);
    assert_eq!(c.verdict, SloVerdict::Capacity, "{c:?}");
    let cap = c.capacity.unwrap();
    assert!(within(cap, truth, 0.01), "capacity {cap}, truth {truth}");
    // The bracket: a tenth of the peak meets, the peak does not (not sustained).
    let r = sim.rates();
    assert_eq!(&r[..3], &[None, Some(1000.0), Some(10_000.0)]);
    // Each step of the bisection is the geometric mean of the bracket it narrows.
    let (mut lo, mut hi) = (1000.0_f64, 10_000.0_f64);
    let bisected: Vec<f64> = r[3..].iter().map(|x| x.unwrap()).collect();
    let mut steps = 0;
    for &mid in &bisected {
        if (mid - lo).abs() < 1e-9 || (mid - hi).abs() < 1e-9 {
            break; // the edge repeats
        }
        assert!(
            (mid - (lo * hi).sqrt()).abs() < 1e-6,
            "{mid} is not between {lo} and {hi}"
        );
        if mid <= truth {
            lo = mid;
        } else {
            hi = mid;
        }
        steps += 1;
    }
    assert_eq!(steps, 6, "log2(ln 10 / ln 1.05) steps: {r:?}");
    assert!((hi - lo) / lo <= s.precision, "{lo}-{hi}");
    assert!(lo <= truth && truth <= hi, "{lo} {truth} {hi}");
    // The edges got their repeats, and the answer says its bracket and interval.
    let edge = |rate: f64| {
        c.curve
            .iter()
            .find(|p| (p.rate - rate).abs() < 1e-6)
            .unwrap()
    };
    assert_eq!(edge(lo).trials, 3);
    assert_eq!(edge(hi).trials, 3);
    assert!(edge(lo).meets && !edge(hi).meets);
    assert!(c.bracket.unwrap() <= s.precision);
    let (ilo, ihi) = c.interval.unwrap();
    assert!(ilo <= cap && cap <= ihi, "{ilo} {cap} {ihi}");
    assert_eq!(
        sim.ran.borrow().len(),
        3 + steps + 4,
        "no trial beyond the plan"
    );
}

#[test]
fn a_repeat_that_fails_the_edge_moves_the_search_below_it() {
    // At any rate, the first trial is 4% faster than the ones after it: a rate just above
    // the (steady) crossing meets once, then fails its repeats.
    let dev = Device {
        noise: |n| if n == 0 { 0.96 } else { 1.0 },
        ..slow_tail()
    };
    let truth = dev.p99_capacity(5e6);
    let sim = Sim::new(dev);
    let s = slo("p99<=5ms", None);
    let c = sim.search(&randread(), &s);
    assert_eq!(c.verdict, SloVerdict::Capacity, "{c:?}");
    // Some rate met on its first trial and failed on its repeats: the search went on below.
    let flipped = c
        .curve
        .iter()
        .find(|p| p.rate > truth && p.trials >= 3 && !p.meets);
    assert!(flipped.is_some(), "{:?}", sim.rates());
    let ok = c.curve.iter().rposition(|p| p.meets).unwrap();
    let (lo, hi) = (&c.curve[ok], &c.curve[ok + 1]);
    assert!(lo.trials >= 3 && hi.trials >= 3, "{lo:?} {hi:?}");
    assert!(
        lo.rate <= truth && truth <= hi.rate,
        "{} {truth} {}",
        lo.rate,
        hi.rate
    );
    let cap = c.capacity.unwrap();
    assert!(within(cap, truth, 0.05), "capacity {cap}, truth {truth}");
}

#[test]
fn a_tenth_of_the_peak_that_fails_brackets_from_below_without_the_peak() {
    // p99 <= 1.2 ms at 1 ms service: the crossing is at 4.2% of the capacity.
    let dev = slow_tail();
    let truth = dev.p99_capacity(1.2e6);
    let sim = Sim::new(dev);
    let c = sim.search(&randread(), &slo("p99<=1.2ms", None));
    let r = sim.rates();
    assert_eq!(&r[..3], &[None, Some(1000.0), Some(100.0)], "{r:?}");
    assert!(
        !r.contains(&Some(10_000.0)),
        "the peak is above a rate that failed: not tried: {r:?}"
    );
    let cap = c.capacity.unwrap();
    assert!(within(cap, truth, 0.05), "capacity {cap}, truth {truth}");
    // Lengthened to resolve the p99 (1000 IOs at 100 IOPS: 10 s).
    let at_100 = sim.ran.borrow()[2].window;
    assert_eq!(at_100, Duration::from_secs(10));
}

#[test]
fn the_budget_bounds_the_search_and_a_fair_one_finds_the_answer() {
    for (name, dev, target, truth_limit) in [
        ("throttle", throttle as fn() -> Device, "p99<=50ms", 5e7),
        ("slow tail", slow_tail, "p99<=5ms", 5e6),
        ("slow tail, p99.9", slow_tail, "p99.9<=5ms", f64::NAN),
    ] {
        for budget_s in [3u64, 10, 20, 45, 60, 120, 180] {
            for overhead_ms in [100u64, 500, 3000] {
                let budget = Duration::from_secs(budget_s);
                let sim = Sim::new(Device {
                    overhead: Duration::from_millis(overhead_ms),
                    ..dev()
                });
                let c = sim.search(&randread(), &slo(target, Some(budget)));
                let end = sim.now.get();
                let case = format!(
                    "{name}, budget {budget_s}s, overhead {overhead_ms}ms: {:?}",
                    sim.ran.borrow()
                );
                // Inside the budget, but for one trial longer than the search expected (the
                // first, before any was measured, when it alone is longer than the budget).
                assert!(end <= budget + sim.longest(), "ended at {end:?}: {case}");
                let first = sim.ran.borrow()[0].took;
                assert!(
                    end <= budget || first > budget,
                    "ended at {end:?} past the budget: {case}"
                );
                // Never "met at the peak" without the peak tried.
                if c.verdict == SloVerdict::MetAtPeak {
                    assert_eq!(c.capacity, c.peak, "{case}");
                }
                // A budget of a minute is enough to answer within 5% of the truth.
                if budget_s >= 60 && overhead_ms <= 500 && !truth_limit.is_nan() {
                    let truth = sim.dev.p99_capacity(truth_limit);
                    let cap = c.capacity.unwrap_or(0.0);
                    assert!(
                        within(cap, truth, 0.05),
                        "capacity {cap}, truth {truth}: {case}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_budget_that_ends_before_the_peak_says_at_least_not_met_at_the_peak() {
    // 4 s: the closed loop (1 s window, the budget's share) and a tenth of the peak fit,
    // the peak does not.
    let sim = Sim::new(Device {
        overhead: Duration::from_millis(500),
        ..throttle()
    });
    let c = sim.search(&randread(), &slo("p99<=50ms", Some(Duration::from_secs(4))));
    assert_eq!(sim.rates(), vec![None, Some(289.3)]);
    assert_eq!(c.verdict, SloVerdict::AtLeast, "{c:?}");
    assert_eq!(c.capacity, Some(289.3));
    let d = c.describe();
    assert!(d.contains("at least 289"), "{d}");
    assert!(sim.now.get() <= Duration::from_secs(4));
}

#[test]
fn trials_are_timed_whatever_bounds_the_workload() {
    // A byte count (`--io-size`) bounds no search trial; a run time is each trial's window.
    let io = IoWorkload {
        total_bytes: Some(1 << 30),
        ..randread()
    };
    let sim = Sim::new(throttle());
    sim.search(&io, &slo("p99<=50ms", None));
    assert!(sim.ran.borrow().iter().all(|t| t.window == TRIAL));
    let io = IoWorkload {
        runtime: Some(Duration::from_secs(2)),
        ..randread()
    };
    let sim = Sim::new(throttle());
    sim.search(&io, &slo("p99<=50ms", None));
    let ran = sim.ran.borrow();
    assert_eq!(ran[0].window, Duration::from_secs(2), "{ran:?}");
    // A tenth of the peak is lengthened to hold 1000 IOs (the p99 and ten beyond it).
    assert!(
        (ran[1].window.as_secs_f64() - 1000.0 / 289.3).abs() < 1e-3,
        "{ran:?}"
    );
    assert!(ran[2..].iter().all(|t| t.window == Duration::from_secs(2)));
    drop(ran);
    // A short budget shortens the default window so the planned trials (13, and one more)
    // fit with what each costs beyond its window.
    let s = slo("p99<=50ms", Some(Duration::from_secs(28)));
    assert_eq!(planned_trials(&s), 13);
    assert_eq!(
        trial_window(&randread(), &s),
        Duration::from_secs(2).saturating_sub(FIRST_OVERHEAD)
    );
    assert_eq!(
        trial_window(&randread(), &slo("p99<=50ms", Some(Duration::from_secs(3)))),
        MIN_TRIAL
    );
}

#[test]
fn a_closed_loop_below_its_capacity_leaves_nothing_to_search_above_it() {
    // The answer is never above the peak the closed loop found, even where the device
    // could sustain more (a shallow queue): met at the peak is the peak.
    let sim = Sim::new(Device {
        closed: 1500.0,
        ..throttle()
    });
    let c = sim.search(&randread(), &slo("p99<=50ms", None));
    assert_eq!(c.verdict, SloVerdict::MetAtPeak);
    assert_eq!(c.capacity, Some(1500.0));
    assert!(sim.rates().iter().flatten().all(|r| *r <= 1500.0));
}

#[test]
fn a_closed_loop_peak_above_the_throttle_is_narrowed_to_the_throttle_inside_a_short_budget() {
    // As measured at QD 32 against a 3000 IOPS blk-throttle: the closed loop got 3080 (the
    // throttle's first slice lends credit), an open loop at 3080 is not sustained, and a 30 s
    // budget with trials ~0.3 s longer than their window. The bisection must reach the
    // throttle, not stop at a third below it to repeat the edges.
    let dev = Device {
        closed: 3080.0,
        overhead: Duration::from_millis(300),
        ..throttle()
    };
    let truth = dev.p99_capacity(5e8);
    let sim = Sim::new(dev);
    let s = slo("p99<=500ms", Some(Duration::from_secs(30)));
    let c = sim.search(&randread(), &s);
    let cap = c.capacity.unwrap();
    assert!(
        within(cap, truth, 0.05),
        "capacity {cap}, truth {truth}: {:?}",
        sim.rates()
    );
    assert!(c.bracket.unwrap() <= s.precision, "{c:?}");
    assert!(sim.now.get() <= Duration::from_secs(30));
}
