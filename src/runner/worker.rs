//! One IO worker thread: opens its own descriptor, sets up its engine, waits for the others at
//! the start line, then keeps the queue full until the window closes.
//!
//! The loop is three steps over one [`Slots`] table: [`Worker::fill`] queues IOs into free
//! slots, [`Worker::sync_if_due`] sends a flush once every write before it has completed, and
//! [`Worker::reap`] submits, waits for completions and books them. What is booked follows the
//! measurement window of `docs/accuracy.md`: an IO counts when it completes inside
//! `[start + ramp, deadline)`; IOs still in flight at the deadline are drained (waited for, so
//! nothing is left in the kernel) and not counted in the rate, but their latency is recorded;
//! the window ends at the deadline.

use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

use crate::engine::{AnyEngine, Completion, Engine, EngineConfig, EngineError, IoOp, WaitCounts};
use crate::progress::Counters;
use crate::sample::{IoAccounting, OpSample, OpenLoopSample, SeriesPoint};
use crate::spec::{EngineKind, IoWorkload, Pattern};
use crate::system::sched::ThreadSched;

use super::data::DataGen;
use super::interval::{Piece, Pool};
use super::offsets::{Offsets, Region};
use super::pace::Pace;
use super::replay::ReplayOp;
use super::trial::{IoFile, IoRunError, StartGate};
use super::verify::{Mismatch, MismatchKind, VerifySummary, VerifyTable};
use slots::{InFlight, SlotOp, Slots};

mod slots;

/// What one worker needs to know about its share of a trial.
pub(super) struct WorkerParams<'a> {
    pub w: &'a IoWorkload,
    pub file: &'a IoFile,
    pub region: Region,
    pub quota: u64,
    pub seed: u64,
    /// Every worker waits here once its engine is ready, so setup is outside the window.
    pub start_line: &'a Barrier,
    /// The trial's time zero: the first submission, shared by all workers.
    pub start: &'a OnceLock<Instant>,
    pub ramp_ns: u64,
    pub deadline_ns: u64,
    pub direct: bool,
    pub stop: &'a AtomicBool,
    pub abort: &'a AtomicBool,
    pub counters: &'a Counters,
    /// When the trial's clock may start (see [`StartGate`]).
    pub gate: &'a StartGate,
    /// This worker's index (in its pieces).
    pub index: usize,
    /// Where finished seconds go (the trial's collector, [`super::interval`]).
    pub intervals: std::sync::mpsc::Sender<Piece>,
    /// Fresh histograms for the next second.
    pub pool: &'a Pool,
    /// A trace replay's schedule (`None`: the workload makes its own IOs).
    pub replay: Option<&'a super::replay::ReplayPlan>,
    /// Where a sequential stream starts (a block of the region; see `Offsets::resume`).
    pub resume: u64,
}

/// What one worker measured.
pub(super) struct WorkerOut {
    pub read: OpSample,
    pub write: OpSample,
    pub sync: OpSample,
    pub series: Vec<SeriesPoint>,
    pub acct: IoAccounting,
    /// Where this worker's window ended (ns since the trial's start).
    pub end_ns: u64,
    /// The engine that ran (`None` when none could be set up).
    pub engine: Option<EngineKind>,
    pub error: Option<IoRunError>,
    pub verify: VerifySummary,
    /// How the engine's waits for completions went (spun or slept).
    pub waits: WaitCounts,
    /// An open loop's schedule and how it was kept.
    pub open_loop: Option<OpenLoopSample>,
    /// How much the worker was kept from its CPU from its start to its end.
    pub sched: ThreadSched,
    /// The block its sequential stream would have given next (the next round's start).
    pub cursor: u64,
}

impl WorkerOut {
    fn empty(engine: Option<EngineKind>) -> WorkerOut {
        WorkerOut {
            read: OpSample::new("read"),
            write: OpSample::new("write"),
            sync: OpSample::new("sync"),
            series: Vec::new(),
            acct: IoAccounting::default(),
            end_ns: 0,
            engine,
            error: None,
            verify: VerifySummary::default(),
            waits: WaitCounts::default(),
            open_loop: None,
            sched: ThreadSched::default(),
            cursor: 0,
        }
    }

    fn failed(e: IoRunError) -> WorkerOut {
        let mut o = WorkerOut::empty(None);
        o.error = Some(e);
        o
    }
}

/// Runs one worker thread's share of a trial.
pub(super) fn worker_main(p: &WorkerParams<'_>) -> WorkerOut {
    let out = open_and_run(p);
    if out.error.is_some() {
        p.abort.store(true, Ordering::Relaxed);
    }
    // Done, whatever happened: the collector closes no second before every worker left it.
    let _ = p.intervals.send(Piece {
        worker: p.index,
        t: 0,
        next: u32::MAX,
        ops: 0,
        bytes: 0,
        latency: Vec::new(),
    });
    out
}

fn open_and_run(p: &WorkerParams<'_>) -> WorkerOut {
    let w = p.w;
    let file = if w.engine == EngineKind::Null {
        None
    } else {
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(w.pattern.writes());
        o.custom_flags(libc::O_CLOEXEC | if p.direct { libc::O_DIRECT } else { 0 });
        match o.open(&p.file.path) {
            Ok(f) => Some(f),
            Err(source) => {
                // The others wait at the start line for this one: let them go, then stop them.
                p.abort.store(true, Ordering::Relaxed);
                p.start_line.wait();
                return WorkerOut::failed(IoRunError::Open {
                    path: p.file.path.clone(),
                    source,
                });
            }
        }
    };
    let mut data = new_data(p);
    // Writes come straight from the pool, which the engine then owns, except in verify mode
    // (each block owns its bytes, copied from the pool into the slot).
    let pooled = p.file.verify.is_none() && w.pattern.writes();
    let fd = file.as_ref().map_or(-1, rustix::fd::AsRawFd::as_raw_fd);
    // The engine stage picks the engine (io_uring falls back to psync there) and its depth
    // (psync: 1). Each attempt gets a pool of its own: a failed ring took the first one down
    // with it.
    let mut attempts = 0u32;
    let opened = crate::engine::open(w.engine, w.queue_depth, |depth| {
        attempts += 1;
        if attempts > 1 {
            data = new_data(p);
        }
        let pool = if pooled { data.take_pool() } else { None };
        // A write-only workload issued from the pool never reads into or writes from a slot's
        // own buffer: one page per slot instead of a block (1 MiB x QD 128 held twice was
        // 257 MiB per thread). Zero data has no pool and writes from the slots.
        let block_size = if pool.is_some() && !w.pattern.reads() {
            crate::engine::BUFFER_ALIGN
        } else {
            w.block_size as usize
        };
        EngineConfig {
            fd,
            depth,
            block_size,
            pool,
            spin: w.wait.spins(w.threads, w.queue_depth),
            learn: w.wait == crate::spec::WaitMode::Auto,
        }
    });
    // One match, then a loop monomorphic in the engine: no dispatch per IO.
    let out = opened.map(|o| match o.engine {
        AnyEngine::IoUring(e) => Worker::new(e, p, o.depth, &mut data).run(),
        AnyEngine::Psync(e) => Worker::new(e, p, o.depth, &mut data).run(),
        AnyEngine::Null(e) => Worker::new(e, p, o.depth, &mut data).run(),
    });
    drop(data);
    drop(file);
    out.unwrap_or_else(|e| {
        p.abort.store(true, Ordering::Relaxed);
        p.start_line.wait();
        WorkerOut::failed(e.into())
    })
}

/// The data generator of a worker. A read-only workload never writes a block: no random pool
/// for it (4 MiB per thread).
fn new_data(p: &WorkerParams<'_>) -> DataGen {
    let w = p.w;
    DataGen::new(
        p.seed,
        w.data == crate::spec::DataKind::Zero || !w.pattern.writes(),
        w.block_size as usize,
        w.queue_depth as usize,
    )
}

#[inline]
fn now_ns(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

/// Waits until `at_ns` after `start`: a sleep for all but the last 150 us, then a spin (a
/// sleep alone wakes tens of microseconds late on a VM, the open loop's issue-time error).
/// At most 50 ms at a time, so the caller sees a stop request soon.
fn wait_until(start: Instant, at_ns: u64) {
    const SPIN: u64 = 150_000;
    let now = now_ns(start);
    let at_ns = at_ns.min(now + 50_000_000);
    if at_ns > now + 2 * SPIN {
        std::thread::sleep(std::time::Duration::from_nanos(at_ns - now - SPIN));
    }
    while now_ns(start) < at_ns {
        std::hint::spin_loop();
    }
}

/// The state of one worker's loop.
struct Worker<'p, 'd, E: Engine> {
    eng: E,
    p: &'p WorkerParams<'p>,
    data: &'d mut DataGen,
    verify: Option<&'p VerifyTable>,
    slots: Slots,
    offsets: Offsets,
    comps: Vec<Completion>,
    out: WorkerOut,
    bs: u32,
    read_pct: u32,
    /// Bytes issued so far (against the quota).
    issued: u64,
    writes_since_sync: u32,
    need_sync: bool,
    final_sync_done: bool,
    /// The last counted completion, ns since the start.
    last_counted_ns: u64,
    start: Instant,
    /// Latencies of the second in progress (read, write, sync), handed to the collector when
    /// the worker moves on ([`super::interval`]); the trial's histograms get them then.
    second: [crate::sample::LatencyHistogram; 3],
    /// The second in progress (`None` before the first counted IO).
    second_t: Option<u32>,
    /// An open loop's schedule (`None`: closed loop, keep the queue full).
    pace: Option<Pace<'p>>,
    /// Think time after each completion, ns (0: none).
    think_ns: u64,
    /// No IO goes out before this (ns since the start): the think time after a completion.
    think_until: u64,
}

impl<'p, 'd, E: Engine> Worker<'p, 'd, E> {
    fn new(
        eng: E,
        p: &'p WorkerParams<'p>,
        depth: u32,
        data: &'d mut DataGen,
    ) -> Worker<'p, 'd, E> {
        let w = p.w;
        let mut out = WorkerOut::empty(Some(eng.kind()));
        let read_pct = match w.pattern {
            Pattern::Read | Pattern::RandRead => 100,
            Pattern::Write | Pattern::RandWrite => 0,
            Pattern::RandRw | Pattern::Rw => u32::from(w.read_pct),
        };
        let pace = match p.replay {
            Some(plan) => Some(Pace::replay(plan, p.seed, p.ramp_ns, p.deadline_ns)),
            None => w.open_loop.map(|o| {
                Pace::new(
                    &o,
                    w.block_size,
                    w.threads,
                    p.index,
                    p.seed,
                    p.ramp_ns,
                    p.deadline_ns,
                )
                .with_read_pct(read_pct)
            }),
        };
        if pace.is_some() {
            // Timed sleeps wake up to the thread's timer slack (50 us by default) late.
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
            out.read.service = Some(crate::sample::LatencyHistogram::new());
            out.write.service = Some(crate::sample::LatencyHistogram::new());
        }
        Worker {
            eng,
            p,
            data,
            verify: p.file.verify.as_deref(),
            slots: Slots::new(depth),
            offsets: Offsets::with_access(
                p.region,
                w.block_size,
                w.pattern.is_random(),
                p.seed,
                &w.distribution,
                w.bssplit.as_deref(),
            )
            .with_skip(w.skip)
            .resume(p.resume),
            comps: Vec::with_capacity(depth as usize + 1),
            out,
            bs: w.block_size as u32,
            read_pct,
            issued: 0,
            writes_since_sync: 0,
            need_sync: false,
            final_sync_done: !w.fsync_at_end,
            last_counted_ns: 0,
            start: Instant::now(),
            second: [p.pool.take(), p.pool.take(), p.pool.take()],
            second_t: None,
            pace,
            think_ns: w.think_time.map_or(0, |d| d.as_nanos() as u64),
            think_until: 0,
        }
    }

    /// Leaves the second in progress for `next` (`u32::MAX`: the end): its histograms go into
    /// the trial's and, with its counts, to the collector. Once a second, not per IO.
    fn next_second(&mut self, next: u32) {
        if let Some(t) = self.second_t {
            let pt = self.out.series.get(t as usize).copied().unwrap_or_default();
            let mut latency = Vec::new();
            for op in [SlotOp::Read, SlotOp::Write, SlotOp::Sync] {
                if self.second[op.idx()].is_empty() {
                    continue;
                }
                let fresh = if next == u32::MAX {
                    crate::sample::LatencyHistogram::default()
                } else {
                    self.p.pool.take()
                };
                let h = std::mem::replace(&mut self.second[op.idx()], fresh);
                self.op_sample(op).latency.merge(&h);
                latency.push((op.name(), h));
            }
            let _ = self.p.intervals.send(Piece {
                worker: self.p.index,
                t,
                next,
                ops: pt.ops,
                bytes: pt.bytes,
                latency,
            });
        }
        self.second_t = (next != u32::MAX).then_some(next);
    }

    fn fail(&mut self, e: IoRunError) {
        if self.out.error.is_none() {
            self.out.error = Some(e);
        }
        self.p.abort.store(true, Ordering::Relaxed);
    }

    fn run(mut self) -> WorkerOut {
        let p = self.p;
        p.start_line.wait();
        self.start = *p.start.get_or_init(|| p.gate.open(p.stop));
        // A closed loop's waits learn whether spinning pays; an open loop's rate is the
        // schedule's, so it says nothing of that, and the prior stands.
        if self.pace.is_none() {
            self.eng.start(self.start);
        }
        let sched0 = ThreadSched::now();
        let mut reached_deadline = false;
        loop {
            let t = now_ns(self.start);
            reached_deadline |= t >= p.deadline_ns;
            let stopping = reached_deadline
                || self.issued >= p.quota
                || self.pace.as_ref().is_some_and(Pace::exhausted)
                || p.stop.load(Ordering::Relaxed)
                || p.abort.load(Ordering::Relaxed);
            if !stopping {
                self.fill(t);
            }
            self.sync_if_due(stopping);
            if self.slots.inflight == 0 {
                if stopping || self.out.error.is_some() {
                    break;
                }
                if let Some(due) = self.pace.as_ref().map(Pace::next_due) {
                    wait_until(self.start, due.min(p.deadline_ns));
                } else if self.think_until > t {
                    wait_until(self.start, self.think_until.min(p.deadline_ns));
                }
                continue;
            }
            if let Err(e) = self.reap() {
                self.fail(e.into());
                break;
            }
        }
        for (i, pt) in self.out.series.iter_mut().enumerate() {
            pt.t = i as u32;
        }
        self.next_second(u32::MAX);
        self.out.waits = self.eng.waits();
        self.out.sched = ThreadSched::now().since(sched0);
        self.out.open_loop = self.pace.take().map(Pace::finish);
        self.out.cursor = self.offsets.cursor();
        // A time-limited window ends at the deadline (later completions were not counted),
        // unless a final flush was due: `--fsync-at-end` makes the writes durable inside it.
        self.out.end_ns = if reached_deadline && !p.w.fsync_at_end {
            p.deadline_ns
        } else {
            self.last_counted_ns.max(p.ramp_ns)
        };
        self.out
    }

    /// Queues IOs into every free slot until the quota, a due flush or a busy block stops it.
    fn fill(&mut self, t: u64) {
        let w = self.p.w;
        while !self.need_sync && t >= self.think_until {
            if self.pace.as_ref().is_some_and(|pc| {
                pc.next_due() > t || pc.depth_limit().is_some_and(|d| self.slots.inflight >= d)
            }) {
                break;
            }
            let Some(slot) = self.slots.free.pop() else {
                if let Some(pc) = &mut self.pace {
                    pc.behind(t);
                }
                break;
            };
            let due = match &mut self.pace {
                None => None,
                Some(pc) => {
                    let Some(d) = pc.take_due(t) else {
                        self.slots.free.push(slot);
                        break;
                    };
                    Some(pc.issued(d, t))
                }
            };
            let Some((op, offset, len)) = self.next_io() else {
                self.slots.free.push(slot);
                break;
            };
            if let (Some(pc), Some(d)) = (&mut self.pace, due) {
                pc.drew(d, op == SlotOp::Read);
            }
            if let Err(e) = self.queue_one(slot, op, offset, len) {
                self.slots.free.push(slot);
                self.fail(e.into());
                break;
            }
            self.slots.occupy(
                slot,
                InFlight {
                    due_ns: due.unwrap_or(t),
                    submitted_ns: t,
                    op,
                    offset,
                    len,
                },
            );
            self.issued += u64::from(len);
            self.out.acct.submitted += 1;
            self.out.acct.syncs += u64::from(op == SlotOp::Sync);
            if op == SlotOp::Write && w.fsync_every > 0 {
                self.writes_since_sync += 1;
                if self.writes_since_sync >= w.fsync_every {
                    self.writes_since_sync = 0;
                    self.need_sync = true;
                }
            }
            if self.issued >= self.p.quota {
                break;
            }
        }
    }

    /// The next IO — read or write, offset, length: the one place the workload's shape
    /// (pattern, read share, size mix, access distribution) becomes an IO. `None`: wait (in
    /// verify mode the next block has an IO in flight).
    /// A replay's IO is the one its schedule just handed out.
    #[inline]
    fn next_io(&mut self) -> Option<(SlotOp, u64, u32)> {
        if let Some(io) = self.pace.as_ref().and_then(Pace::current) {
            let op = match io.op {
                ReplayOp::Read => SlotOp::Read,
                ReplayOp::Write => SlotOp::Write,
                ReplayOp::Flush => SlotOp::Sync,
            };
            return Some((op, io.offset, io.len));
        }
        let is_read =
            self.read_pct == 100 || (self.read_pct > 0 && self.offsets.percent() < self.read_pct);
        let op = if is_read { SlotOp::Read } else { SlotOp::Write };
        if self.verify.is_some() {
            // Never two IOs on one block at once: their order would be undefined.
            return self.next_free_offset().map(|o| (op, o, self.bs));
        }
        let (offset, len) = self.offsets.next_io(is_read);
        Some((op, offset, len))
    }

    #[inline]
    fn queue_one(
        &mut self,
        slot: u32,
        op: SlotOp,
        offset: u64,
        bs: u32,
    ) -> Result<(), EngineError> {
        match op {
            SlotOp::Read => return self.eng.queue(slot, IoOp::Read, offset, bs),
            SlotOp::Sync => return self.eng.queue(slot, IoOp::Sync(self.p.w.sync_kind), 0, 0),
            SlotOp::Write => {}
        }
        if let Some(pool) = self.eng.pool_mut() {
            let lanes = self.p.w.queue_depth as usize;
            let at = self
                .data
                .fresh_block(pool, bs as usize, slot as usize, lanes);
            return self.eng.queue_write_pooled(slot, at, offset, bs);
        }
        let Some(buf) = self.eng.buffer_mut(slot) else {
            return Err(EngineError::Slot {
                slot,
                why: "a free slot's buffer was refused",
            });
        };
        self.data.refresh(buf, bs as usize);
        if let Some(v) = self.verify {
            v.stamp(&mut buf[..bs as usize], offset, v.next_generation(offset));
            self.out.verify.blocks_written += 1;
        }
        self.eng.queue(slot, IoOp::Write, offset, bs)
    }

    /// The next offset with no IO in flight on its block (verify mode), or `None` to wait.
    fn next_free_offset(&mut self) -> Option<u64> {
        if self.p.w.pattern.is_random() {
            (0..16)
                .map(|_| self.offsets.next_offset())
                .find(|o| !self.slots.offset_busy(*o))
        } else if self.slots.offset_busy(self.offsets.peek_sequential()) {
            None
        } else {
            Some(self.offsets.next_offset())
        }
    }

    /// A flush goes out alone, once every write before it has completed: every
    /// `--fsync-every` writes, and once at the end with `--fsync-at-end`.
    fn sync_if_due(&mut self, stopping: bool) {
        let want_final = stopping && !self.final_sync_done && self.out.error.is_none();
        if !(self.need_sync || want_final) || self.slots.inflight > 0 || self.slots.sync_busy() {
            return;
        }
        let slot = self.slots.sync_slot;
        let t = now_ns(self.start);
        if let Err(e) = self.eng.queue(slot, IoOp::Sync(self.p.w.sync_kind), 0, 0) {
            self.fail(e.into());
            return;
        }
        self.slots.occupy(
            slot,
            InFlight {
                due_ns: t,
                submitted_ns: t,
                op: SlotOp::Sync,
                offset: 0,
                len: 0,
            },
        );
        self.out.acct.submitted += 1;
        self.out.acct.syncs += 1;
        if want_final {
            self.final_sync_done = true;
        }
    }

    /// Submits what is queued, waits for at least one completion and books every one reaped.
    fn reap(&mut self) -> Result<(), EngineError> {
        let mut comps = std::mem::take(&mut self.comps);
        comps.clear();
        // An open loop wakes for its next due IO as well as for a completion, unless no slot
        // is free or the IO is due already: then only a completion lets it go out.
        let until = self.pace.as_ref().map(Pace::next_due).and_then(|due| {
            let t = now_ns(self.start);
            (due > t && due != u64::MAX && !self.slots.free.is_empty())
                .then(|| self.start + std::time::Duration::from_nanos(due.min(self.p.deadline_ns)))
        });
        let r = match until {
            Some(u) => self.eng.submit_and_reap_until(&mut comps, u),
            None => self.eng.submit_and_reap(1, &mut comps),
        };
        let done = now_ns(self.start);
        let p = self.p;
        // A final flush is part of the window it closes; everything else counts only inside it.
        let in_window = done >= p.ramp_ns && done < p.deadline_ns;
        if in_window {
            let sec = ((done - p.ramp_ns) / 1_000_000_000) as u32;
            if self.second_t != Some(sec) {
                self.next_second(sec);
            }
        }
        let mut batch_bytes = 0u64;
        let mut counted = 0u64;
        for c in &comps {
            let Some(io) = self.slots.release(c.slot) else {
                continue;
            };
            self.out.acct.completed += 1;
            if io.op == SlotOp::Sync {
                self.need_sync = false;
            }
            if !self.check(c, io) {
                continue;
            }
            let final_sync = io.op == SlotOp::Sync && p.w.fsync_at_end && done >= p.deadline_ns;
            if !(in_window || final_sync && done >= p.ramp_ns) {
                if done >= p.deadline_ns {
                    self.out.acct.after_window += 1;
                    // Not in the rate, but its latency is real: on a rate limiter the IO in
                    // flight at the deadline is the one waiting for the next refill, and
                    // leaving it out would flatter the mean (docs/accuracy.md).
                    if io.submitted_ns >= p.ramp_ns {
                        self.op_sample(io.op).latency.record(done - io.due_ns);
                        self.book_service(io, done);
                    }
                }
                continue;
            }
            let bytes = u64::from(io.len);
            // In the window a latency goes to its second (and with it to the trial); a final
            // flush after the deadline straight to the trial.
            if in_window {
                self.second[io.op.idx()].record(done - io.due_ns);
            } else {
                self.op_sample(io.op).latency.record(done - io.due_ns);
            }
            self.book_service(io, done);
            let o = self.op_sample(io.op);
            o.count += 1;
            o.bytes += bytes;
            batch_bytes += bytes;
            counted += 1;
        }
        if self.think_ns > 0 && !comps.is_empty() {
            self.think_until = done + self.think_ns;
        }
        self.comps = comps;
        if counted > 0 {
            let sec = ((done - p.ramp_ns) / 1_000_000_000) as usize;
            if self.out.series.len() <= sec {
                self.out.series.resize(sec + 1, SeriesPoint::default());
            }
            self.out.series[sec].bytes += batch_bytes;
            self.out.series[sec].ops += counted;
            self.last_counted_ns = done;
        }
        p.counters.add(batch_bytes, counted);
        r
    }

    /// An open loop's service time: submission to completion (the latency proper is counted
    /// from the IO's scheduled time).
    #[inline]
    fn book_service(&mut self, io: InFlight, done: u64) {
        if let Some(h) = &mut self.op_sample(io.op).service {
            h.record(done - io.submitted_ns);
        }
    }

    fn op_sample(&mut self, op: SlotOp) -> &mut OpSample {
        match op {
            SlotOp::Read => &mut self.out.read,
            SlotOp::Write => &mut self.out.write,
            SlotOp::Sync => &mut self.out.sync,
        }
    }

    /// Checks a completion's result; false when it is not a good IO to count (an error,
    /// a short transfer, or a failed read in verify mode, which is a finding).
    #[inline]
    fn check(&mut self, c: &Completion, io: InFlight) -> bool {
        let bs = io.len;
        if c.result < 0 && io.op == SlotOp::Read && self.verify.is_some() {
            // In verify mode a failed read is a finding about the layout, not the end.
            self.out.acct.errors += 1;
            self.out.verify.blocks_checked += 1;
            self.out.verify.add(Mismatch {
                offset: io.offset,
                kind: MismatchKind::ReadError,
                expected_generation: self.verify.map_or(0, |v| v.generation(io.offset)),
                found_generation: None,
                found_offset: None,
            });
            return false;
        }
        if c.result < 0 {
            self.out.acct.errors += 1;
            self.fail(IoRunError::Errno {
                op: io.op.name(),
                offset: io.offset,
                len: bs,
                errno: -c.result,
                path: self.p.file.path.clone(),
            });
            return false;
        }
        if io.op != SlotOp::Sync && c.result as u32 != bs {
            self.out.acct.short += 1;
            self.fail(IoRunError::Short {
                op: io.op.name(),
                offset: io.offset,
                got: c.result as u32,
                want: bs,
                path: self.p.file.path.clone(),
            });
            return false;
        }
        if let (Some(v), SlotOp::Read) = (self.verify, io.op)
            && let Some(buf) = self.eng.buffer_mut(c.slot)
        {
            if let Some(m) = v.check(&buf[..bs as usize], io.offset) {
                self.out.verify.add(m);
            }
            self.out.verify.blocks_checked += 1;
            self.out.verify.bytes_checked += u64::from(bs);
        }
        true
    }
}

#[cfg(test)]
mod tests;
