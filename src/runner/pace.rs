//! Open-loop pacing: when each IO of one worker is due, and how late it went out.
//!
//! A closed loop (keep the queue full) issues the next IO when an earlier one completes, so a
//! device that stalls is simply asked for less: the stall never shows in the latencies
//! (coordinated omission). An open loop issues at scheduled times whatever the device does;
//! an IO that could not go out on time (every slot busy) waits in iolab, and its latency is
//! counted from its scheduled time (`docs/slo.md`). This file holds the schedule of one worker
//! thread and what it observed: how late each IO went out, the IOs shed when the backlog grew
//! past [`MAX_LAG_NS`], and the backlog left when the window closed.
//!
//! The schedule comes from a rate (fixed or Poisson arrivals) or from a trace being replayed
//! ([`super::replay`]): then each due time is a recorded IO's, nothing is shed (a replay
//! issues every IO, late if it must), and `Pace::current` says which IO is due.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::sample::{AskedByOp, OpenLoopSample};
use crate::spec::{Arrivals, OpenLoop};

use super::replay::{PlannedIo, ReplayOp, ReplayPlan};

/// An IO more than this far behind its schedule is shed (dropped, counted) instead of queued
/// further: by then the rate is long known to be unsustainable, and a backlog without a bound
/// would keep a trial issuing for minutes after its deadline.
pub const MAX_LAG_NS: u64 = 1_000_000_000;

/// An IO that went out more than this after its scheduled time is counted as late.
pub const LATE_NS: u64 = 1_000_000;

/// The schedule of one worker thread.
pub(super) struct Pace<'p> {
    arrivals: Arrivals,
    /// Mean gap between this thread's IOs, ns.
    gap_ns: f64,
    /// Due time of the next IO, ns since the trial's start (exact, not accumulated in u64).
    next_due: f64,
    /// IOs taken from the schedule so far (fixed arrivals: due = phase + n * gap).
    taken: u64,
    phase_ns: f64,
    rng: Xoshiro256PlusPlus,
    ramp_ns: u64,
    deadline_ns: u64,
    out: OpenLoopSample,
    /// A replay's IOs (`None`: the rate's schedule).
    plan: Option<&'p ReplayPlan>,
    /// The replayed IO last taken off the schedule.
    current: Option<PlannedIo>,
    /// Reads and writes that went out due inside the window (a rate draws each IO's kind as
    /// it goes out): what the asked rate is shared out by.
    drawn: [u64; 2],
    /// A rate's read share, percent: how IOs that never went out are shared when none did.
    read_pct: u32,
    /// Due time of the last IO taken off a rate's schedule, ns.
    last_due: u64,
}

impl<'p> Pace<'p> {
    /// The schedule of thread `index` of `threads`; fixed arrivals of the threads interleave
    /// (thread i starts i/threads of a gap later), Poisson ones are independent.
    pub(super) fn new(
        o: &OpenLoop,
        block: u64,
        threads: u32,
        index: usize,
        seed: u64,
        ramp_ns: u64,
        deadline_ns: u64,
    ) -> Pace<'p> {
        let iops = o.thread_iops(threads, block).max(1e-9);
        let gap_ns = 1e9 / iops;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0A7E_5EED);
        let phase_ns = match o.arrivals {
            Arrivals::Fixed => gap_ns * index as f64 / f64::from(threads.max(1)),
            Arrivals::Poisson => exponential(&mut rng, gap_ns),
        };
        Pace {
            arrivals: o.arrivals,
            gap_ns,
            next_due: phase_ns,
            taken: 0,
            phase_ns,
            rng,
            ramp_ns,
            deadline_ns,
            out: OpenLoopSample {
                asked_iops: iops,
                arrivals: o.arrivals.name().to_string(),
                ..OpenLoopSample::default()
            },
            plan: None,
            current: None,
            drawn: [0, 0],
            read_pct: 100,
            last_due: 0,
        }
    }

    /// The share of a rate's IOs that are reads, percent (100 unless set): what the IOs it
    /// never issued are counted as when none went out to count by.
    pub(super) fn with_read_pct(mut self, pct: u32) -> Self {
        self.read_pct = pct.min(100);
        self
    }

    /// The schedule of a replay: the plan's IOs at their due times (an as-fast-as-possible
    /// replay has every IO due at once, bounded by its recorded depth instead). The window is
    /// the worker's, `[ramp_ns, deadline_ns)`: a replay cut short by `--time` leaves the IOs
    /// due before the deadline it never issued as its backlog.
    pub(super) fn replay(
        plan: &'p ReplayPlan,
        seed: u64,
        ramp_ns: u64,
        deadline_ns: u64,
    ) -> Pace<'p> {
        let first = plan
            .ios
            .first()
            .map_or(f64::INFINITY, |io| due_of(plan, io));
        let span = plan.sample.recorded_ns.max(1.0);
        Pace {
            arrivals: Arrivals::Fixed,
            gap_ns: 0.0,
            next_due: first,
            taken: 0,
            phase_ns: 0.0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            ramp_ns,
            deadline_ns,
            out: OpenLoopSample {
                asked_iops: plan.ios.len() as f64 * 1e9 / span,
                arrivals: "replay".into(),
                scheduled: plan.ios.len() as u64,
                replay: Some(Box::new(plan.sample.clone())),
                asked_by_op: (!plan.as_fast_as_possible)
                    .then(|| Box::new(replay_asked(plan, ramp_ns, deadline_ns))),
                ..OpenLoopSample::default()
            },
            plan: Some(plan),
            current: None,
            drawn: [0, 0],
            read_pct: 100,
            last_due: 0,
        }
    }

    /// The replayed IO last taken off the schedule (`None` outside a replay).
    #[inline]
    pub(super) fn current(&self) -> Option<PlannedIo> {
        self.current
    }

    /// A replay whose every IO has been taken.
    #[inline]
    pub(super) fn exhausted(&self) -> bool {
        self.plan
            .is_some_and(|p| self.taken as usize >= p.ios.len())
    }

    /// In an as-fast-as-possible replay, the most IOs in flight the next IO may go out with
    /// (its recorded depth, itself included); `None` otherwise.
    #[inline]
    pub(super) fn depth_limit(&self) -> Option<u32> {
        let p = self.plan.filter(|p| p.as_fast_as_possible)?;
        p.ios.get(self.taken as usize).map(|io| io.depth)
    }

    /// Due time of the next IO, ns since the start.
    #[inline]
    pub(super) fn next_due(&self) -> u64 {
        self.next_due as u64
    }

    /// Takes the next IO off the schedule and returns its due time; counts it when it falls
    /// inside the measured window.
    #[inline]
    fn advance(&mut self) -> u64 {
        let due = self.next_due as u64;
        if let Some(plan) = self.plan {
            self.current = plan.ios.get(self.taken as usize).copied();
            self.taken += 1;
            self.next_due = plan
                .ios
                .get(self.taken as usize)
                .map_or(f64::INFINITY, |io| due_of(plan, io));
            return due;
        }
        if due >= self.ramp_ns && due < self.deadline_ns {
            self.out.scheduled += 1;
        }
        self.last_due = due;
        self.taken += 1;
        self.next_due = match self.arrivals {
            Arrivals::Fixed => self.phase_ns + self.taken as f64 * self.gap_ns,
            Arrivals::Poisson => self.next_due + exponential(&mut self.rng, self.gap_ns),
        };
        due
    }

    /// The IO due at or before `t`, taken off the schedule, or `None` when the next one is not
    /// due yet. IOs further behind than [`MAX_LAG_NS`] are shed first.
    #[inline]
    pub(super) fn take_due(&mut self, t: u64) -> Option<u64> {
        while self.plan.is_none() && self.next_due().saturating_add(MAX_LAG_NS) < t {
            self.advance();
            self.out.shed += 1;
        }
        (self.next_due() <= t).then(|| self.advance())
    }

    /// Books an IO due at `due` that went out at `t`, and returns the time its latency counts
    /// from: its due time, or its submission in an as-fast-as-possible replay (which has no
    /// schedule to be late for).
    #[inline]
    pub(super) fn issued(&mut self, due: u64, t: u64) -> u64 {
        let due = if self.plan.is_some_and(|p| p.as_fast_as_possible) {
            t
        } else {
            due
        };
        let late = t.saturating_sub(due);
        self.out.issued += 1;
        self.out.issue_error.record(late);
        if late > LATE_NS {
            self.out.late += 1;
        }
        due
    }

    /// Books the kind of a rate's IO that went out, due at `due`: a read or a write.
    #[inline]
    pub(super) fn drew(&mut self, due: u64, read: bool) {
        if self.plan.is_none() && due >= self.ramp_ns && due < self.deadline_ns {
            self.drawn[usize::from(!read)] += 1;
        }
    }

    /// Notes that at `t` an IO was due but every slot was busy.
    #[inline]
    pub(super) fn behind(&mut self, t: u64) {
        self.out.max_lag_ns = self.out.max_lag_ns.max(t.saturating_sub(self.next_due()));
    }

    /// What the schedule observed; the IOs due inside the window that never went out are the
    /// backlog at its end.
    pub(super) fn finish(mut self) -> OpenLoopSample {
        while self.next_due() < self.deadline_ns && self.deadline_ns != u64::MAX {
            if self.next_due() >= self.ramp_ns {
                self.out.backlog_at_end += 1;
            }
            self.advance();
        }
        if self.plan.is_none() {
            self.out.asked_by_op = Some(Box::new(self.rate_asked()));
        }
        self.out
    }

    /// A rate's asked reads and writes per second over the window: the IOs due inside it,
    /// those that went out by the kind they drew, those that never did (shed, or waiting at
    /// the end) shared out as the issued ones were.
    fn rate_asked(&self) -> AskedByOp {
        let [r, w] = self.drawn;
        let unissued = self.out.scheduled.saturating_sub(r + w) as f64;
        let read_share = if r + w > 0 {
            r as f64 / (r + w) as f64
        } else {
            f64::from(self.read_pct) / 100.0
        };
        // The window: up to the deadline, or to the last IO due when the run had none.
        let end = if self.deadline_ns == u64::MAX {
            self.last_due
        } else {
            self.deadline_ns
        };
        let secs = end.saturating_sub(self.ramp_ns).max(1) as f64 / 1e9;
        AskedByOp {
            read_iops: (r as f64 + unissued * read_share) / secs,
            write_iops: (w as f64 + unissued * (1.0 - read_share)) / secs,
        }
    }
}

/// A replay's asked reads and writes per second: the planned IOs of each kind due inside the
/// window over its length, the recording's (at its speed) or up to the deadline when that
/// comes first.
fn replay_asked(plan: &ReplayPlan, ramp_ns: u64, deadline_ns: u64) -> AskedByOp {
    let mut n = [0u64; 2];
    for io in plan
        .ios
        .iter()
        .filter(|io| io.due_ns >= ramp_ns && io.due_ns < deadline_ns)
    {
        match io.op {
            ReplayOp::Read => n[0] += 1,
            ReplayOp::Write => n[1] += 1,
            ReplayOp::Flush => {}
        }
    }
    let end = (plan.sample.recorded_ns as u64).min(deadline_ns);
    let secs = end.saturating_sub(ramp_ns).max(1) as f64 / 1e9;
    AskedByOp {
        read_iops: n[0] as f64 / secs,
        write_iops: n[1] as f64 / secs,
    }
}

/// A replayed IO's due time: its recorded one, or at once when as fast as possible.
fn due_of(plan: &ReplayPlan, io: &PlannedIo) -> f64 {
    if plan.as_fast_as_possible {
        0.0
    } else {
        io.due_ns as f64
    }
}

/// An exponential gap of mean `mean` (a Poisson process's inter-arrival time).
fn exponential(rng: &mut Xoshiro256PlusPlus, mean: f64) -> f64 {
    // 53 random bits as a uniform in (0, 1]: never 0, so ln never sees it.
    let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    -u.ln() * mean
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Rate;

    fn open(rate: f64, arrivals: Arrivals) -> OpenLoop {
        OpenLoop {
            rate: Rate::Iops(rate),
            arrivals,
            per_thread: false,
        }
    }

    #[test]
    fn fixed_arrivals_are_exact_and_threads_interleave() {
        let o = open(1000.0, Arrivals::Fixed);
        let mut a = Pace::new(&o, 4096, 2, 0, 1, 0, 1_000_000_000);
        let mut b = Pace::new(&o, 4096, 2, 1, 1, 0, 1_000_000_000);
        assert_eq!(a.take_due(0), Some(0));
        assert_eq!(b.take_due(0), None, "thread 1 starts half a gap later");
        assert_eq!(b.take_due(1_000_000), Some(1_000_000));
        assert_eq!(a.take_due(1_999_999), None);
        assert_eq!(a.take_due(2_000_000), Some(2_000_000));
        // A whole second: exactly 500 IOs each, 1000 in all.
        let (mut na, mut nb) = (2, 1);
        for t in (0..1_000_000_000).step_by(10_000) {
            while a.take_due(t).is_some() {
                na += 1;
            }
            while b.take_due(t).is_some() {
                nb += 1;
            }
        }
        assert_eq!(na + nb, 1000);
        assert_eq!(a.finish().scheduled + b.finish().scheduled, 1000);
    }

    #[test]
    fn poisson_arrivals_have_the_asked_mean_and_dispersion_one() {
        let o = open(10_000.0, Arrivals::Poisson);
        let mut p = Pace::new(&o, 4096, 1, 0, 7, 0, u64::MAX);
        let mut per_ms = vec![0u64; 10_000];
        for _ in 0..100_000 {
            let due = p.take_due(p.next_due()).expect("due");
            if let Some(c) = per_ms.get_mut((due / 1_000_000) as usize) {
                *c += 1;
            }
        }
        let n = per_ms.len() as f64;
        let mean = per_ms.iter().sum::<u64>() as f64 / n;
        let var = per_ms
            .iter()
            .map(|c| (*c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!((mean - 10.0).abs() < 0.2, "mean per ms {mean}");
        assert!(
            (var / mean - 1.0).abs() < 0.1,
            "index of dispersion {}",
            var / mean
        );
    }

    #[test]
    fn a_backlog_past_the_bound_is_shed_and_the_rest_counted_at_the_end() {
        let o = open(1000.0, Arrivals::Fixed);
        let mut p = Pace::new(&o, 4096, 1, 0, 1, 0, 3_000_000_000);
        // Nothing went out for 2.5 s: the IOs more than 1 s behind are shed.
        let due = p.take_due(2_500_000_000).expect("due");
        p.issued(due, 2_500_000_000);
        let s = p.finish();
        assert_eq!(s.shed, 1500, "0 .. 1.5 s");
        assert_eq!(s.issued, 1);
        assert_eq!(s.late, 1);
        assert_eq!(s.scheduled, 3000);
        assert_eq!(s.backlog_at_end, 3000 - 1500 - 1);
    }

    /// The asked rate per op: a rate's IOs by the kind they drew as they went out, the ones
    /// never issued shared out alike; over the window, so a device that kept up reads 1.
    #[test]
    fn a_rate_asks_reads_and_writes_by_what_its_ios_drew() {
        let o = open(1000.0, Arrivals::Fixed);
        let mut p = Pace::new(&o, 4096, 1, 0, 1, 0, 1_000_000_000).with_read_pct(70);
        // 500 IOs go out in the first half second, 4 reads to every write; the rest wait.
        for k in 0..500u64 {
            let t = k * 1_000_000;
            let due = p.take_due(t).expect("due");
            let due = p.issued(due, t);
            p.drew(due, k % 5 != 0);
        }
        let a = p
            .finish()
            .asked_by_op
            .expect("a rate keeps its asked rate per op");
        assert!((a.read_iops - 800.0).abs() < 1e-9, "{a:?}");
        assert!((a.write_iops - 200.0).abs() < 1e-9, "{a:?}");
        // Nothing went out: the read share of the workload shares the schedule out.
        let p = Pace::new(&o, 4096, 1, 0, 1, 0, 1_000_000_000).with_read_pct(70);
        let a = p.finish().asked_by_op.unwrap();
        assert!((a.read_iops - 700.0).abs() < 1e-9 && (a.write_iops - 300.0).abs() < 1e-9);
    }

    /// A replay asks what its trace holds: each kind counted from the plan over the
    /// recording's length, or up to the deadline when `--time` cuts it — and the IOs due
    /// before that deadline it never issued are its backlog.
    #[test]
    fn a_replay_asks_what_its_trace_holds_up_to_the_deadline() {
        use super::super::replay::PlannedIo;
        let io = |due_ns: u64, op: ReplayOp| PlannedIo {
            due_ns,
            offset: 0,
            len: 4096,
            op,
            depth: 1,
        };
        // 2 s recorded: 3 reads and a write a second, and a flush.
        let mut ios = Vec::new();
        for s in 0..2u64 {
            for k in 0..4u64 {
                let op = if k == 3 {
                    ReplayOp::Write
                } else {
                    ReplayOp::Read
                };
                ios.push(io(s * 1_000_000_000 + k * 250_000_000, op));
            }
        }
        ios.push(io(1_900_000_000, ReplayOp::Flush));
        let plan = ReplayPlan {
            ios,
            as_fast_as_possible: false,
            sample: crate::sample::ReplaySample {
                recorded_ns: 2e9,
                ..Default::default()
            },
        };
        let a = Pace::replay(&plan, 1, 0, u64::MAX).finish();
        let by = a.asked_by_op.unwrap();
        assert_eq!((by.read_iops, by.write_iops), (3.0, 1.0));
        assert_eq!(a.backlog_at_end, 0);
        // Cut at 1 s, nothing issued: the first second's 4 IOs are asked and left waiting.
        let a = Pace::replay(&plan, 1, 0, 1_000_000_000).finish();
        let by = a.asked_by_op.unwrap();
        assert_eq!((by.read_iops, by.write_iops), (3.0, 1.0));
        assert_eq!(a.backlog_at_end, 4);
    }
}
