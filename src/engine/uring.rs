//! The io_uring engine: one ring per worker thread, batched submission and reaping, the file
//! and the slot buffers registered with the ring where the kernel allows (saves a file lookup
//! and a page pin per IO). This file holds all of iolab's io_uring code.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use io_uring::{IoUring, opcode, squeue, types};

use super::learn::Learner;
use super::{
    BufferPool, Completion, Engine, EngineConfig, EngineError, IoOp, SlotStates, WaitCounts,
    pool_range,
};
use crate::spec::{EngineKind, SyncKind};

/// io_uring with registered file and buffers.
pub struct UringEngine {
    // Field order matters: the ring (which holds the buffer registration) drops before the
    // buffers it points into.
    ring: IoUring,
    bufs: BufferPool,
    /// The data pool writes are issued from (registered after the slots when it can be).
    pool: Option<BufferPool>,
    slots: SlotStates,
    fd: RawFd,
    fixed_file: bool,
    fixed_bufs: bool,
    /// Buffer index of the registered extra region (the data pool), when registered.
    extra_index: Option<u16>,
    /// Ring setup flags that were accepted, for the record.
    pub setup: &'static str,
    spin: Spin,
    batch: Batch,
    /// `--wait auto`: whether to spin, learned while running; `None` for `spin` and `block`.
    learner: Option<Learner>,
}

/// How many completions a sleeping wait asks for: with many IOs in flight on a fast device,
/// waking once per completion costs a context switch per IO on both sides (measured at QD 32 on
/// a RAM-backed loop device: 0.87-0.93x fio with one completion per wake, 1.04-1.07x asking for
/// 8). A wait asks for more than one only when the completions have lately come so fast that
/// the batch fills within [`BATCH_HOLD`]: a slow device (a disk, a throttled target) is woken
/// per completion, so no completed IO waits for others and leaves its slot idle.
#[derive(Debug)]
struct Batch {
    /// When the last sleeping wait returned.
    last: Option<Instant>,
    /// Moving average of the time between completions (over ~8 waits), in ns; `None` until
    /// two waits have been timed.
    gap_ns: Option<u64>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            last: None,
            gap_ns: None,
        }
    }

    /// The completions to wait for, with `in_flight` IOs out.
    fn want(&self, in_flight: u32) -> u32 {
        let Some(gap) = self.gap_ns.filter(|_| in_flight > BATCH_IN_FLIGHT) else {
            return 1;
        };
        let fill = (BATCH_HOLD.as_nanos() as u64 / gap.max(1)).min(u64::from(BATCH_MAX));
        (fill as u32).min(in_flight / 4).max(1)
    }

    /// Books a sleeping wait that returned at `now` with `reaped` completions.
    fn booked(&mut self, now: Instant, reaped: usize) {
        if let (Some(last), true) = (self.last, reaped > 0) {
            let gap = (now - last).as_nanos() as u64 / reaped as u64;
            self.gap_ns = Some(self.gap_ns.map_or(gap, |g| g - g / 8 + gap / 8));
        }
        self.last = Some(now);
    }
}

/// Spin-then-sleep waiting: user-space hybrid polling.
///
/// A wait first spins on the completion queue (and on the ring's "task work pending" flag,
/// which says a completion waits for us to enter the kernel and post it) for up to
/// [`SPIN_BUDGET`]; only then does it sleep. A device whose IOs mostly take longer than the
/// budget would burn it on every IO for nothing, so the share of spins that found a completion
/// is kept (a moving average over ~16 waits): below [`MIN_HIT_SHARE`] the waits sleep at once,
/// and one in [`PROBE_EVERY`] spins again to notice when the device got faster. A device that
/// is fast most of the time and now and then slow (a token-bucket throttle, a cache) keeps
/// spinning: its fast IOs are the ones a sleep would slow down.
#[derive(Debug)]
struct Spin {
    on: bool,
    /// Share of recent spins that found a completion, in 1/1024ths.
    hit_share: u32,
    /// Waits since the last probe while spinning is off.
    since_probe: u32,
    counts: WaitCounts,
}

impl Spin {
    fn new(on: bool) -> Spin {
        Spin {
            on,
            hit_share: 1024,
            since_probe: 0,
            counts: WaitCounts::default(),
        }
    }

    /// Whether this wait should spin.
    fn wanted(&mut self) -> bool {
        if self.hit_share >= MIN_HIT_SHARE {
            return true;
        }
        self.since_probe += 1;
        if self.since_probe >= PROBE_EVERY {
            self.since_probe = 0;
            return true;
        }
        false
    }

    /// Books a spin that found a completion (`hit`) or ran out of budget.
    fn booked(&mut self, hit: bool) {
        self.hit_share = self.hit_share - self.hit_share / 16 + if hit { 64 } else { 0 };
        if hit {
            self.counts.spun += 1;
        } else {
            self.counts.spun_then_slept += 1;
        }
    }
}

/// How long a wait spins before it sleeps: longer than a RAM-backed loop device's or a fast
/// NVMe drive's 4k read (10-40 us), far shorter than a disk's.
const SPIN_BUDGET: Duration = Duration::from_micros(200);
/// With more IOs than this in flight, a completion's flush waits [`BATCH_WINDOW`] for others
/// to join it: one `io_uring_enter` per ~2 IOs at QD 32 became one per ~5, +5-9% IOPS on a
/// RAM-backed loop device. The IOs it holds are booked up to that much later (docs/accuracy.md).
const BATCH_IN_FLIGHT: u32 = 8;
/// How long a flush waits for more completions when many IOs are in flight.
const BATCH_WINDOW: Duration = Duration::from_micros(1);
/// A sleeping wait asks for at most this many completions ([`Batch`]).
const BATCH_MAX: u32 = 8;
/// A sleeping wait asks for as many completions as have lately arrived in this long.
const BATCH_HOLD: Duration = Duration::from_micros(40);
/// An open loop's wait for its next due time sleeps only when the time is further away than
/// this, and wakes [`SPIN_TAIL`] early to spin the rest: a timed sleep wakes 20-60 us late here.
const SLEEP_AT_LEAST: Duration = Duration::from_micros(300);
/// How long before a due time a sleeping open-loop wait wakes to spin.
const SPIN_TAIL: Duration = Duration::from_micros(150);
/// Below this share of spins finding a completion (in 1/1024ths: 1/8), waits sleep at once.
const MIN_HIT_SHARE: u32 = 128;
/// While spinning is off, one wait in this many spins anyway.
const PROBE_EVERY: u32 = 32;
/// `IORING_ENTER_GETEVENTS`: run pending task work (post completions) while in the kernel.
const ENTER_GETEVENTS: u32 = 1;

/// A way to configure a ring builder, tried in order until the kernel accepts one.
type SetupTry = (&'static str, fn(&mut io_uring::Builder));

fn build_ring(entries: u32) -> std::io::Result<(IoUring, &'static str)> {
    // Newest flags first: one submitter thread, task work deferred to our own waits.
    let tries: [SetupTry; 3] = [
        ("single_issuer+defer_taskrun", |b| {
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_coop_taskrun()
                .setup_taskrun_flag();
        }),
        ("coop_taskrun", |b| {
            b.setup_coop_taskrun().setup_taskrun_flag();
        }),
        ("plain", |_| {}),
    ];
    let mut last = None;
    for (name, f) in tries {
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2);
        f(&mut b);
        match b.build(entries) {
            Ok(r) => return Ok((r, name)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("io_uring setup failed")))
}

impl UringEngine {
    /// Sets up a ring for `cfg.depth` IOs plus one flush, registering what the kernel accepts.
    pub fn new(cfg: EngineConfig) -> Result<UringEngine, EngineError> {
        let slots = cfg.depth as usize + 1;
        let entries = (slots as u32).next_power_of_two().max(8);
        let (ring, setup) = build_ring(entries).map_err(|source| EngineError::Setup {
            engine: "io_uring",
            source,
        })?;
        let bufs = BufferPool::new(cfg.block_size, slots)?;
        let fixed_file = ring.submitter().register_files(&[cfg.fd]).is_ok();
        let mut iovecs = bufs.iovecs();
        if let Some(p) = &cfg.pool {
            iovecs.extend(p.iovecs());
        }
        // SAFETY: the iovecs point into `bufs` and `pool`, which live in the same struct as the
        // ring and are dropped after it (field order), so they stay valid while registered.
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        let extra_index = (fixed_bufs && cfg.pool.is_some()).then_some(slots as u16);
        Ok(UringEngine {
            ring,
            bufs,
            pool: cfg.pool,
            slots: SlotStates::new(slots),
            fd: cfg.fd,
            fixed_file,
            fixed_bufs,
            extra_index,
            setup,
            spin: Spin::new(cfg.spin),
            batch: Batch::new(),
            learner: cfg.learn.then(|| Learner::new(cfg.spin)),
        })
    }

    /// One `io_uring_enter`: submits what is queued and posts the completions whose task work
    /// is pending, without waiting for any.
    fn enter_nowait(&mut self) -> Result<(), EngineError> {
        let to_submit = self.ring.submission().len() as u32;
        // SAFETY: no argument structure is passed (`None`), so there is no pointer for the
        // kernel to read; the queued entries' memory is kept valid by `queue`'s contract.
        let r = unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(to_submit, 0, ENTER_GETEVENTS, None)
        };
        match r {
            Ok(_) => Ok(()),
            // Interrupted, or the completion queue is full: the caller reaps and comes back.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            Err(source) => Err(EngineError::Submit {
                engine: "io_uring",
                source,
            }),
        }
    }

    /// Spins until a completion is on the queue (true) or `deadline` comes (false).
    fn poll(&mut self, deadline: Instant) -> Result<bool, EngineError> {
        let mut turns = 0u32;
        loop {
            if !self.ring.completion().is_empty() {
                return Ok(true);
            }
            if self.ring.submission().taskrun() {
                if self.slots.in_flight() > BATCH_IN_FLIGHT {
                    // More completions are moments away: let them join this one's flush.
                    let t1 = Instant::now();
                    while t1.elapsed() < BATCH_WINDOW {
                        std::hint::spin_loop();
                    }
                }
                self.enter_nowait()?;
                continue;
            }
            turns = turns.wrapping_add(1);
            // The clock is read every 64 turns (~1 us): reading it each turn cost ~6% of the CPU.
            if turns % 64 == 0 {
                if Instant::now() >= deadline {
                    return Ok(false);
                }
                // Give way to a thread that waits for this CPU: the device's own worker (a
                // loop device's kworker) or the softirq that completes our IO. Spinning past
                // them delayed completions by a time slice (p99 3x fio's on a throttled loop).
                rustix::thread::sched_yield();
            }
            std::hint::spin_loop();
        }
    }

    /// Submits what is queued and sleeps until at least `min` completions are there (or the
    /// completion queue is full: the caller reaps and comes back).
    fn sleep_until(&mut self, min: u32) -> Result<(), EngineError> {
        loop {
            match self.ring.submit_and_wait(min as usize) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                // The completion queue is full: reap, and the caller comes back to submit.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(source) => {
                    return Err(EngineError::Submit {
                        engine: "io_uring",
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// Sleeps until a completion arrives or `d` has passed.
    fn sleep_for(&mut self, d: Duration) -> Result<(), EngineError> {
        let ts = types::Timespec::new()
            .sec(d.as_secs())
            .nsec(d.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            Err(source) => Err(EngineError::Submit {
                engine: "io_uring",
                source,
            }),
        }
    }

    /// Waits by spinning first (see [`Spin`]); true when a completion is there, false when
    /// the caller should sleep.
    fn spin_wait(&mut self) -> Result<bool, EngineError> {
        if !self.spin.wanted() {
            self.spin.counts.slept += 1;
            return Ok(false);
        }
        self.enter_nowait()?;
        let hit = self.poll(Instant::now() + SPIN_BUDGET)?;
        self.spin.booked(hit);
        Ok(hit)
    }

    /// Puts an entry on the submission queue, handing the queue to the kernel first when full.
    ///
    /// # Safety
    /// The memory the entry points at must stay valid until its completion is reaped.
    unsafe fn push(&mut self, e: &squeue::Entry) -> Result<(), EngineError> {
        loop {
            // SAFETY: forwarded from the caller.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return Ok(());
            }
            self.ring.submit().map_err(|source| EngineError::Submit {
                engine: "io_uring",
                source,
            })?;
        }
    }

    /// Whether the file and buffers are registered (for notes).
    pub fn registered(&self) -> (bool, bool) {
        (self.fixed_file, self.fixed_bufs)
    }

    fn entry(&self, slot: u32, op: IoOp, offset: u64, len: u32) -> squeue::Entry {
        let p = self.bufs.slot_ptr(slot as usize);
        let bi = slot as u16;
        macro_rules! with_fd {
            ($fd:expr) => {
                match op {
                    IoOp::Read if self.fixed_bufs => opcode::ReadFixed::new($fd, p, len, bi)
                        .offset(offset)
                        .build(),
                    IoOp::Read => opcode::Read::new($fd, p, len).offset(offset).build(),
                    IoOp::Write if self.fixed_bufs => opcode::WriteFixed::new($fd, p, len, bi)
                        .offset(offset)
                        .build(),
                    IoOp::Write => opcode::Write::new($fd, p, len).offset(offset).build(),
                    IoOp::Sync(SyncKind::Fdatasync) => opcode::Fsync::new($fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build(),
                    IoOp::Sync(SyncKind::Fsync) => opcode::Fsync::new($fd).build(),
                }
            };
        }
        let e = if self.fixed_file {
            with_fd!(types::Fixed(0))
        } else {
            with_fd!(types::Fd(self.fd))
        };
        e.user_data(u64::from(slot))
    }
}

impl Engine for UringEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::IoUring
    }

    fn buffer_mut(&mut self, slot: u32) -> Option<&mut [u8]> {
        self.slots
            .is_free(slot)
            .then(|| self.bufs.slot_mut(slot as usize))
    }

    #[inline]
    fn queue(&mut self, slot: u32, op: IoOp, offset: u64, len: u32) -> Result<(), EngineError> {
        self.slots.take(slot)?;
        let len = len.min(self.bufs.slot_size() as u32);
        let e = self.entry(slot, op, offset, len);
        // SAFETY: the entry's buffer is a slot of self.bufs, busy (no other IO, no slice handed
        // out) until its completion is reaped; the buffers outlive the ring (field order).
        unsafe { self.push(&e) }
    }

    fn pool_mut(&mut self) -> Option<&mut [u8]> {
        self.pool.as_mut().map(|p| p.slot_mut(0))
    }

    #[inline]
    fn queue_write_pooled(
        &mut self,
        slot: u32,
        at: usize,
        offset: u64,
        len: u32,
    ) -> Result<(), EngineError> {
        let Some(pool) = self.pool.as_ref() else {
            return pool_range(slot, at, len, 0);
        };
        pool_range(slot, at, len, pool.slot_size())?;
        self.slots.take(slot)?;
        let data = pool.slot(0)[at..].as_ptr();
        let e = match (self.fixed_file, self.extra_index) {
            (true, Some(bi)) => opcode::WriteFixed::new(types::Fixed(0), data, len, bi)
                .offset(offset)
                .build(),
            (true, None) => opcode::Write::new(types::Fixed(0), data, len)
                .offset(offset)
                .build(),
            (false, Some(bi)) => opcode::WriteFixed::new(types::Fd(self.fd), data, len, bi)
                .offset(offset)
                .build(),
            (false, None) => opcode::Write::new(types::Fd(self.fd), data, len)
                .offset(offset)
                .build(),
        }
        .user_data(u64::from(slot));
        // SAFETY: `data` points at `len` bytes inside the pool this engine owns, which outlives
        // the ring (field order); the kernel only reads them.
        unsafe { self.push(&e) }
    }

    #[inline]
    fn submit_and_reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let spin = match &mut self.learner {
            Some(l) if min > 0 => l.spin_now(Instant::now()),
            _ => self.spin.on,
        };
        let found = if min > 0 && spin {
            self.spin_wait()?
        } else {
            if min > 0 {
                self.spin.counts.slept += 1;
            }
            false
        };
        if !found {
            let min = if min == 1 {
                self.batch.want(self.slots.in_flight())
            } else {
                min
            };
            self.sleep_until(min)?;
            let reaped = self.ring.completion().len();
            self.batch.booked(Instant::now(), reaped);
        }
        if let Some(l) = &mut self.learner {
            l.reaped(self.ring.completion().len());
        }
        for c in self.ring.completion() {
            let slot = c.user_data() as u32;
            self.slots.done(slot);
            out.push(Completion {
                slot,
                result: c.result(),
            });
        }
        Ok(())
    }

    fn submit_and_reap_until(
        &mut self,
        out: &mut Vec<Completion>,
        until: Instant,
    ) -> Result<(), EngineError> {
        self.enter_nowait()?;
        while self.ring.completion().is_empty() {
            let now = Instant::now();
            if now >= until {
                break;
            }
            let left = until - now;
            if left > SLEEP_AT_LEAST {
                // Sleep until shortly before the due time (or a completion), then spin: a
                // timed sleep wakes up tens of microseconds late on a VM.
                self.sleep_for(left.saturating_sub(SPIN_TAIL))?;
            } else {
                self.poll(until)?;
            }
        }
        for c in self.ring.completion() {
            let slot = c.user_data() as u32;
            self.slots.done(slot);
            out.push(Completion {
                slot,
                result: c.result(),
            });
        }
        Ok(())
    }

    fn waits(&self) -> WaitCounts {
        let mut w = self.spin.counts;
        if let Some(l) = &self.learner {
            w.compared = l.pairs;
            w.spin_won = l.spin_won;
        }
        w
    }

    fn start(&mut self, epoch: Instant) {
        if let Some(l) = &mut self.learner {
            l.start(epoch);
        }
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Closing a ring tears it down asynchronously in the kernel, and until then a registered
        // file keeps the filesystem busy (umount fails with EBUSY right after a run). Dropping
        // the registrations first releases the file now.
        if self.fixed_file {
            let _ = self.ring.submitter().unregister_files();
        }
        if self.fixed_bufs {
            let _ = self.ring.submitter().unregister_buffers();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_stops_on_a_slow_device_probes_and_comes_back() {
        let mut s = Spin::new(true);
        assert!(s.wanted(), "a new ring spins");
        // A disk: every spin runs out of budget.
        let mut misses = 0;
        while s.wanted() {
            s.booked(false);
            misses += 1;
            assert!(misses < 64, "spinning never stopped");
        }
        assert!(misses > 8, "one slow IO must not stop it: {misses}");
        // Off: one wait in PROBE_EVERY spins.
        let spins = (0..PROBE_EVERY * 4).filter(|_| s.wanted()).count();
        assert_eq!(spins, 4);
        // The device got fast: the probes hit and spinning comes back.
        let mut waits = 0;
        loop {
            waits += 1;
            if s.wanted() {
                s.booked(true);
                if s.hit_share >= MIN_HIT_SHARE {
                    break;
                }
            }
            assert!(waits < 10_000, "spinning never came back");
        }
        assert!(s.wanted());
    }

    #[test]
    fn sleeping_waits_batch_only_when_completions_come_fast() {
        let t0 = Instant::now();
        let mut b = Batch::new();
        assert_eq!(
            b.want(32),
            1,
            "nothing measured yet: one completion per wake"
        );
        // A RAM-backed loop device at QD 32: 8 completions every ~24 us.
        for i in 1..=20u64 {
            b.booked(t0 + Duration::from_micros(24 * i), 8);
        }
        assert_eq!(b.want(32), 8);
        assert_eq!(b.want(16), 4, "at most a quarter of what is in flight");
        assert_eq!(b.want(8), 1, "few IOs in flight: no batching");
        // A disk: one completion per 5 ms.
        let mut d = Batch::new();
        for i in 1..=20u64 {
            d.booked(t0 + Duration::from_millis(5 * i), 1);
        }
        assert_eq!(d.want(32), 1);
        // The fast device stalls once (a throttle's refill): the next wait stops batching.
        b.booked(t0 + Duration::from_millis(100), 8);
        assert_eq!(
            b.want(32),
            1,
            "after a stall a completion is not held for others"
        );
    }

    #[test]
    fn a_mostly_fast_device_keeps_spinning() {
        // A token bucket: 9 of 10 IOs fast, one waits for the refill.
        let mut s = Spin::new(true);
        for i in 0..1000 {
            assert!(s.wanted(), "wait {i}");
            s.booked(i % 10 != 0);
        }
    }
}
