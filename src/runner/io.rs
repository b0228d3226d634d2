//! The IO runner: worker threads, each with its own engine and file descriptor, keep the queue
//! full, time every IO into HDR histograms, and bucket throughput per second.
//!
//! Timing is per batch: one clock read before a batch is submitted, one after it is reaped.
//! That costs two clock reads per batch instead of two per IO, and is exact at QD 1.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{
    Completion, Engine, EngineConfig, EngineError, IoOp, NullEngine, PsyncEngine, UringEngine,
};
use crate::progress::Counters;
use crate::sample::{IoAccounting, OpSample, SeriesPoint, TrialSample};
use crate::spec::{EngineKind, IoWorkload, Pattern};

use super::data::DataGen;
use super::offsets::{Offsets, Region, regions, thread_seed};
use super::verify::{Mismatch, MismatchKind, VerifySummary, VerifyTable};

/// The file or device IO goes to, already laid out to the working set.
#[derive(Debug, Clone)]
pub struct IoFile {
    /// Path to open (each thread opens its own descriptor).
    pub path: PathBuf,
    /// Where the working set starts, bytes (a device region: `iolab disks` reads the start,
    /// middle and end of a disk). Must be a multiple of the block size.
    pub offset: u64,
    /// Working set: IOs stay within `[offset, offset + size)`.
    pub size: u64,
    /// O_DIRECT is possible here (false on tmpfs).
    pub direct_ok: bool,
    /// With `--verify`: the generations written, shared by all threads; writes carry headers
    /// and reads are checked.
    pub verify: Option<Arc<VerifyTable>>,
}

/// Why an IO trial failed. Messages are one line and say what to do.
#[derive(Debug, thiserror::Error)]
pub enum IoRunError {
    /// Opening the file failed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An IO returned an errno.
    #[error("{}", errno_message(op, *.offset, *.len, *.errno, path))]
    Errno {
        /// `read`, `write` or `sync`.
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes asked.
        len: u32,
        /// The errno.
        errno: i32,
        /// The file.
        path: PathBuf,
    },
    /// An IO moved fewer bytes than asked.
    #[error(
        "short {op} at offset {offset} of {path}: {got} of {want} bytes (file shrank or device error)"
    )]
    Short {
        /// `read` or `write`.
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes moved.
        got: u32,
        /// Bytes asked.
        want: u32,
        /// The file.
        path: PathBuf,
    },
    /// The engine failed as a whole.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl IoRunError {
    /// True when the device or filesystem is full (the run cannot go on; say so plainly).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, IoRunError::Errno { errno, .. } if *errno == libc::ENOSPC)
    }
}

fn errno_message(op: &str, offset: u64, len: u32, errno: i32, path: &std::path::Path) -> String {
    let e = std::io::Error::from_raw_os_error(errno);
    match errno {
        libc::ENOSPC => format!(
            "disk full (ENOSPC) during {op} of {len} bytes at offset {offset} of {}; free space or lower --size",
            path.display()
        ),
        libc::EINVAL => format!(
            "the kernel refused a {op} of {len} bytes at offset {offset} of {} (EINVAL): with O_DIRECT the block size must be a multiple of the device's logical block size; use e.g. --bs 4k, or --buffered",
            path.display()
        ),
        _ => format!(
            "{op} of {len} bytes at offset {offset} of {} failed: {e}",
            path.display()
        ),
    }
}

/// Shared controls of a trial.
#[derive(Clone)]
pub struct Control {
    /// Set by Ctrl-C/SIGTERM: stop issuing, drain, keep what was measured.
    pub stop: Arc<AtomicBool>,
    /// Progress counters bumped once per batch.
    pub counters: Arc<Counters>,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            stop: Arc::new(AtomicBool::new(false)),
            counters: Arc::new(Counters::default()),
        }
    }
}

struct WorkerParams<'a> {
    w: &'a IoWorkload,
    file: &'a IoFile,
    region: Region,
    quota: u64,
    seed: u64,
    start: Instant,
    ramp_ns: u64,
    deadline_ns: u64,
    direct: bool,
    stop: &'a AtomicBool,
    abort: &'a AtomicBool,
    counters: &'a Counters,
}

struct WorkerOut {
    read: OpSample,
    write: OpSample,
    sync: OpSample,
    series: Vec<SeriesPoint>,
    acct: IoAccounting,
    last_done_ns: u64,
    engine: &'static str,
    notes: Vec<String>,
    error: Option<IoRunError>,
    verify: VerifySummary,
}

/// Runs one trial of an IO workload and returns what it measured.
pub fn run_io_trial(
    w: &IoWorkload,
    file: &IoFile,
    ctl: &Control,
    name: &str,
    trial: u32,
) -> Result<TrialSample, IoRunError> {
    let direct = w.direct && file.direct_ok;
    let seq = !w.pattern.is_random();
    let size = file.size;
    // Verify mode gives each thread its own blocks, so no two writes race for one block.
    let regs: Vec<Region> = regions(size, w.block_size, w.threads, seq || file.verify.is_some())
        .into_iter()
        .map(|r| Region {
            start: r.start + file.offset,
            len: r.len,
        })
        .collect();
    let per_thread_quota = |i: usize| -> u64 {
        let t = u64::from(w.threads);
        match (w.total_bytes, w.runtime) {
            (Some(b), _) => {
                let share = b / t + u64::from((i as u64) < b % t);
                share.div_ceil(w.block_size) * w.block_size
            }
            (None, Some(_)) => u64::MAX,
            // Neither: one pass over the working set in all.
            (None, None) => {
                if seq {
                    regs[i].len
                } else {
                    (size / w.block_size / t).max(1) * w.block_size
                }
            }
        }
    };
    let ramp_ns = w.ramp.as_nanos() as u64;
    let deadline_ns = w
        .runtime
        .map_or(u64::MAX, |r| ramp_ns.saturating_add(r.as_nanos() as u64));
    let abort = AtomicBool::new(false);
    let started_unix_ms = crate::sample::now_unix_ms();
    let ru0 = rusage();
    let start = Instant::now();
    let outs: Vec<WorkerOut> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..w.threads as usize)
            .map(|i| {
                let p = WorkerParams {
                    w,
                    file,
                    region: regs[i],
                    quota: per_thread_quota(i),
                    seed: thread_seed(w.seed, i as u32),
                    start,
                    ramp_ns,
                    deadline_ns,
                    direct,
                    stop: &ctl.stop,
                    abort: &abort,
                    counters: &ctl.counters,
                };
                s.spawn(move || worker_main(&p))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| panic!("an IO worker thread panicked"))
            })
            .collect()
    });
    let ru1 = rusage();
    merge(
        outs,
        w,
        name,
        trial,
        started_unix_ms,
        ramp_ns,
        direct,
        file,
        (ru0, ru1),
    )
}

#[allow(clippy::too_many_arguments)]
fn merge(
    outs: Vec<WorkerOut>,
    w: &IoWorkload,
    name: &str,
    trial: u32,
    started_unix_ms: u64,
    ramp_ns: u64,
    direct: bool,
    file: &IoFile,
    ru: ((u64, u64), (u64, u64)),
) -> Result<TrialSample, IoRunError> {
    let mut read = OpSample::new("read");
    let mut write = OpSample::new("write");
    let mut sync = OpSample::new("sync");
    let mut acct = IoAccounting::default();
    let mut series: Vec<SeriesPoint> = Vec::new();
    let mut last = 0u64;
    let mut notes: Vec<String> = Vec::new();
    let mut first_error = None;
    let mut engine = "";
    let mut verify = VerifySummary::default();
    for o in outs {
        verify.merge(o.verify);
        for (dst, src) in [
            (&mut read, &o.read),
            (&mut write, &o.write),
            (&mut sync, &o.sync),
        ] {
            dst.count += src.count;
            dst.bytes += src.bytes;
            dst.latency.merge(&src.latency);
        }
        acct.submitted += o.acct.submitted;
        acct.completed += o.acct.completed;
        acct.short += o.acct.short;
        acct.errors += o.acct.errors;
        acct.syncs += o.acct.syncs;
        if series.len() < o.series.len() {
            series.resize(o.series.len(), SeriesPoint::default());
        }
        for (i, p) in o.series.iter().enumerate() {
            series[i].t = i as u32;
            series[i].bytes += p.bytes;
            series[i].ops += p.ops;
        }
        last = last.max(o.last_done_ns);
        for n in o.notes {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        engine = o.engine;
        if first_error.is_none() {
            first_error = o.error;
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let elapsed_ns = last.saturating_sub(ramp_ns).max(1);
    let mut ops = Vec::new();
    for mut o in [read, write, sync] {
        o.elapsed_ns = elapsed_ns;
        let wanted = match o.op.as_str() {
            "read" => w.pattern.reads(),
            "write" => w.pattern.writes(),
            _ => w.fsync_every > 0 || w.fsync_at_end,
        };
        if wanted {
            ops.push(o);
        }
    }
    if w.direct && !direct {
        notes.push(format!(
            "O_DIRECT is not supported on {}: ran buffered (page cache in the figures)",
            file.path.display()
        ));
    }
    if engine != w.engine.name() {
        notes.push(format!(
            "{} engine was not available: ran with {engine}",
            w.engine.name()
        ));
    }
    if engine == "psync" && w.queue_depth > 1 {
        notes.push(format!(
            "psync does one IO at a time per thread: queue depth {} ran as 1",
            w.queue_depth
        ));
    }
    let ((u0, s0), (u1, s1)) = ru;
    Ok(TrialSample {
        workload: name.to_string(),
        trial,
        started_unix_ms,
        elapsed_ns,
        ops,
        series,
        accounting: acct,
        cpu_user_ns: u1.saturating_sub(u0),
        cpu_sys_ns: s1.saturating_sub(s0),
        notes,
        verify: file.verify.is_some().then_some(verify),
    })
}

/// (user, system) CPU time of the whole process so far, ns.
pub fn rusage() -> (u64, u64) {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

fn empty_out(engine: &'static str) -> WorkerOut {
    WorkerOut {
        read: OpSample::new("read"),
        write: OpSample::new("write"),
        sync: OpSample::new("sync"),
        series: Vec::new(),
        acct: IoAccounting::default(),
        last_done_ns: 0,
        engine,
        notes: Vec::new(),
        error: None,
        verify: VerifySummary::default(),
    }
}

fn worker_main(p: &WorkerParams<'_>) -> WorkerOut {
    let w = p.w;
    // psync and null complete inside queue(): one slot keeps psync's per-IO timing exact.
    let depth = if w.engine == EngineKind::Psync {
        1
    } else {
        w.queue_depth
    };
    let file = if w.engine == EngineKind::Null {
        None
    } else {
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        if w.pattern.writes() {
            o.write(true);
        }
        let mut flags = libc::O_CLOEXEC;
        if p.direct {
            flags |= libc::O_DIRECT;
        }
        o.custom_flags(flags);
        match o.open(&p.file.path) {
            Ok(f) => Some(f),
            Err(source) => {
                p.abort.store(true, Ordering::Relaxed);
                let mut out = empty_out("none");
                out.error = Some(IoRunError::Open {
                    path: p.file.path.clone(),
                    source,
                });
                return out;
            }
        }
    };
    // A read-only workload never writes a block: no random pool for it (4 MiB per thread).
    let mut data = DataGen::new(
        p.seed,
        w.data == crate::spec::DataKind::Zero || !w.pattern.writes(),
        w.block_size as usize,
    );
    // Writes come straight from the pool, except in verify mode (each block owns its bytes).
    let from_pool = p.file.verify.is_none() && w.pattern.writes();
    let cfg = EngineConfig {
        fd: file.as_ref().map_or(-1, |f| f.as_raw_fd()),
        depth,
        block_size: w.block_size as usize,
        extra: if from_pool { data.pool_region() } else { None },
    };
    // The engine is dropped inside worker_loop, before `data`, whose pool it may have registered.
    let out = match w.engine {
        EngineKind::Null => {
            NullEngine::new(&cfg).map(|e| worker_loop(e, p, depth, &mut data, from_pool))
        }
        EngineKind::Psync => {
            PsyncEngine::new(&cfg).map(|e| worker_loop(e, p, depth, &mut data, from_pool))
        }
        EngineKind::IoUring => match UringEngine::new(&cfg) {
            Ok(e) => Ok(worker_loop(e, p, depth, &mut data, from_pool)),
            Err(EngineError::Setup { .. }) => {
                // io_uring unavailable (old kernel, seccomp): psync, one IO at a time.
                let cfg1 = EngineConfig { depth: 1, ..cfg };
                PsyncEngine::new(&cfg1).map(|e| worker_loop(e, p, 1, &mut data, from_pool))
            }
            Err(e) => Err(e),
        },
    };
    drop(data);
    drop(file);
    out.unwrap_or_else(|e| {
        p.abort.store(true, Ordering::Relaxed);
        let mut o = empty_out("none");
        o.error = Some(e.into());
        o
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotOp {
    Read,
    Write,
    Sync,
}

#[inline]
fn now_ns(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

fn worker_loop<E: Engine>(
    mut eng: E,
    p: &WorkerParams<'_>,
    depth: u32,
    data: &mut DataGen,
    from_pool: bool,
) -> WorkerOut {
    let w = p.w;
    let bs = w.block_size as u32;
    let mut out = empty_out(eng.name());
    let mut offsets = Offsets::new(p.region, w.block_size, w.pattern.is_random(), p.seed);
    let sync_slot = depth;
    let mut slot_ts = vec![0u64; depth as usize + 1];
    let mut slot_op = vec![SlotOp::Read; depth as usize + 1];
    let mut slot_off = vec![0u64; depth as usize + 1];
    let mut free: Vec<u32> = (0..depth).rev().collect();
    let mut comps: Vec<Completion> = Vec::with_capacity(depth as usize + 1);
    let mut inflight: u32 = 0;
    let mut issued: u64 = 0;
    let mut since_sync: u32 = 0;
    let mut need_sync = false;
    let mut sync_inflight = false;
    let read_pct = match w.pattern {
        Pattern::Read | Pattern::RandRead => 100,
        Pattern::Write | Pattern::RandWrite => 0,
        Pattern::RandRw => u32::from(w.read_pct),
    };
    let sync_kind = w.sync_kind;
    let mut last_done = 0u64;
    let mut final_sync_done = !w.fsync_at_end;
    let verify = p.file.verify.as_deref();
    let mut vsum = VerifySummary::default();
    let mut busy = vec![false; depth as usize + 1];
    loop {
        let t = now_ns(p.start);
        let stopping = issued >= p.quota
            || t >= p.deadline_ns
            || p.stop.load(Ordering::Relaxed)
            || p.abort.load(Ordering::Relaxed);
        if !stopping {
            while !need_sync {
                let Some(slot) = free.pop() else { break };
                let is_read = read_pct == 100 || (read_pct > 0 && offsets.percent() < read_pct);
                let off = match verify {
                    None => offsets.next_offset(),
                    // Never two IOs on one block at once: their order would be undefined.
                    Some(_) => match next_free_offset(
                        &mut offsets,
                        &slot_off,
                        &busy,
                        w.pattern.is_random(),
                    ) {
                        Some(o) => o,
                        None => {
                            free.push(slot);
                            break;
                        }
                    },
                };
                let mut pooled = None;
                let op = if is_read {
                    IoOp::Read
                } else if from_pool {
                    pooled = data.fresh_block(bs as usize);
                    IoOp::Write
                } else {
                    let buf = eng.buffer_mut(slot);
                    data.refresh(buf, bs as usize);
                    if let Some(v) = verify {
                        v.stamp(&mut buf[..bs as usize], off, v.next_generation(off));
                        vsum.blocks_written += 1;
                    }
                    IoOp::Write
                };
                let queued = match pooled {
                    // SAFETY: the block lies in the data pool, registered as the engine's extra
                    // region, which outlives the engine (dropped in worker_main after it).
                    Some(ptr) => unsafe { eng.queue_write_from(slot, ptr, off, bs) },
                    None => eng.queue(slot, op, off, bs),
                };
                if let Err(e) = queued {
                    out.error = Some(e.into());
                    p.abort.store(true, Ordering::Relaxed);
                    break;
                }
                let s = slot as usize;
                slot_ts[s] = t;
                slot_op[s] = if is_read { SlotOp::Read } else { SlotOp::Write };
                slot_off[s] = off;
                busy[s] = true;
                inflight += 1;
                issued += u64::from(bs);
                out.acct.submitted += 1;
                if !is_read && w.fsync_every > 0 {
                    since_sync += 1;
                    if since_sync >= w.fsync_every {
                        since_sync = 0;
                        need_sync = true;
                    }
                }
                if issued >= p.quota {
                    break;
                }
            }
        }
        // A flush goes out alone, once every write before it has completed.
        let want_final = stopping && !final_sync_done && inflight == 0 && out.error.is_none();
        if (need_sync || want_final) && inflight == 0 && !sync_inflight {
            if let Err(e) = eng.queue(sync_slot, IoOp::Sync(sync_kind), 0, 0) {
                out.error = Some(e.into());
                p.abort.store(true, Ordering::Relaxed);
            } else {
                slot_ts[sync_slot as usize] = now_ns(p.start);
                slot_op[sync_slot as usize] = SlotOp::Sync;
                sync_inflight = true;
                inflight += 1;
                out.acct.submitted += 1;
                out.acct.syncs += 1;
                if want_final {
                    final_sync_done = true;
                }
            }
        }
        if inflight == 0 {
            if stopping || out.error.is_some() {
                break;
            }
            continue;
        }
        comps.clear();
        if let Err(e) = eng.submit_and_reap(1, &mut comps) {
            out.error = Some(e.into());
            p.abort.store(true, Ordering::Relaxed);
            break;
        }
        let done = now_ns(p.start);
        let measured = done >= p.ramp_ns;
        let mut batch_bytes = 0u64;
        for c in &comps {
            let s = c.slot as usize;
            inflight -= 1;
            out.acct.completed += 1;
            let op = slot_op[s];
            if c.slot == sync_slot {
                sync_inflight = false;
                need_sync = false;
            } else {
                free.push(c.slot);
                busy[s] = false;
            }
            let opname = match op {
                SlotOp::Read => "read",
                SlotOp::Write => "write",
                SlotOp::Sync => "sync",
            };
            if c.result < 0 && op == SlotOp::Read && verify.is_some() {
                // In verify mode a failed read is a finding about the layout, not the end.
                out.acct.errors += 1;
                vsum.blocks_checked += 1;
                vsum.add(Mismatch {
                    offset: slot_off[s],
                    kind: MismatchKind::ReadError,
                    expected_generation: verify.map_or(0, |v| v.generation(slot_off[s])),
                    found_generation: None,
                    found_offset: None,
                });
                continue;
            }
            if c.result < 0 {
                out.acct.errors += 1;
                if out.error.is_none() {
                    out.error = Some(IoRunError::Errno {
                        op: opname,
                        offset: slot_off[s],
                        len: if op == SlotOp::Sync { 0 } else { bs },
                        errno: -c.result,
                        path: p.file.path.clone(),
                    });
                }
                p.abort.store(true, Ordering::Relaxed);
                continue;
            }
            if op != SlotOp::Sync && c.result as u32 != bs {
                out.acct.short += 1;
                if out.error.is_none() {
                    out.error = Some(IoRunError::Short {
                        op: opname,
                        offset: slot_off[s],
                        got: c.result as u32,
                        want: bs,
                        path: p.file.path.clone(),
                    });
                }
                p.abort.store(true, Ordering::Relaxed);
                continue;
            }
            if let (Some(v), SlotOp::Read) = (verify, op) {
                let buf = eng.buffer_mut(c.slot);
                if let Some(m) = v.check(&buf[..bs as usize], slot_off[s]) {
                    vsum.add(m);
                }
                vsum.blocks_checked += 1;
                vsum.bytes_checked += u64::from(bs);
            }
            if measured {
                let lat = done - slot_ts[s];
                let bytes = if op == SlotOp::Sync { 0 } else { u64::from(bs) };
                let o = match op {
                    SlotOp::Read => &mut out.read,
                    SlotOp::Write => &mut out.write,
                    SlotOp::Sync => &mut out.sync,
                };
                o.count += 1;
                o.bytes += bytes;
                o.latency.record(lat);
                batch_bytes += bytes;
            }
        }
        if measured {
            let sec = ((done - p.ramp_ns) / 1_000_000_000) as usize;
            if out.series.len() <= sec {
                out.series.resize(sec + 1, SeriesPoint::default());
            }
            let n = comps.len() as u64;
            out.series[sec].bytes += batch_bytes;
            out.series[sec].ops += n;
            last_done = done;
        }
        p.counters.add(batch_bytes, comps.len() as u64);
    }
    for (i, pt) in out.series.iter_mut().enumerate() {
        pt.t = i as u32;
    }
    out.last_done_ns = last_done.max(p.ramp_ns);
    out.verify = vsum;
    out
}

/// The next offset with no IO in flight on its block (verify mode), or `None` to wait for one.
fn next_free_offset(
    offsets: &mut Offsets,
    slot_off: &[u64],
    busy: &[bool],
    random: bool,
) -> Option<u64> {
    let taken = |o: u64| busy.iter().zip(slot_off).any(|(b, so)| *b && *so == o);
    if random {
        (0..16).map(|_| offsets.next_offset()).find(|o| !taken(*o))
    } else if taken(offsets.peek_sequential()) {
        None
    } else {
        Some(offsets.next_offset())
    }
}

/// How long a trial of `w` should take at most (for ETAs): ramp plus run time, or a guess.
pub fn expected_duration(w: &IoWorkload) -> Duration {
    w.ramp + w.runtime.unwrap_or(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::BufferPool;

    /// Completes IOs like the null engine, but fails or shortens the n-th one.
    struct Faulty {
        bufs: BufferPool,
        done: Vec<Completion>,
        n: u64,
        fail_at: u64,
        result: i32,
    }

    impl Engine for Faulty {
        fn name(&self) -> &'static str {
            "faulty"
        }
        fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
            self.bufs.slot_mut(slot as usize)
        }
        fn queue(&mut self, slot: u32, op: IoOp, _o: u64, len: u32) -> Result<(), EngineError> {
            self.n += 1;
            let ok = if matches!(op, IoOp::Sync(_)) {
                0
            } else {
                len as i32
            };
            let result = if self.n == self.fail_at {
                self.result
            } else {
                ok
            };
            self.done.push(Completion { slot, result });
            Ok(())
        }
        unsafe fn queue_write_from(
            &mut self,
            slot: u32,
            _d: *const u8,
            o: u64,
            len: u32,
        ) -> Result<(), EngineError> {
            self.queue(slot, IoOp::Write, o, len)
        }
        fn submit_and_reap(
            &mut self,
            _m: u32,
            out: &mut Vec<Completion>,
        ) -> Result<(), EngineError> {
            out.append(&mut self.done);
            Ok(())
        }
    }

    fn run_faulty(w: &IoWorkload, fail_at: u64, result: i32) -> WorkerOut {
        let file = IoFile {
            path: "/x".into(),
            offset: 0,
            size: 1 << 20,
            direct_ok: true,
            verify: None,
        };
        let stop = AtomicBool::new(false);
        let abort = AtomicBool::new(false);
        let counters = Counters::default();
        let p = WorkerParams {
            w,
            file: &file,
            region: Region {
                start: 0,
                len: 1 << 20,
            },
            quota: 1 << 20,
            seed: 1,
            start: Instant::now(),
            ramp_ns: 0,
            deadline_ns: u64::MAX,
            direct: true,
            stop: &stop,
            abort: &abort,
            counters: &counters,
        };
        let eng = Faulty {
            bufs: BufferPool::new(4096, 9).unwrap(),
            done: Vec::new(),
            n: 0,
            fail_at,
            result,
        };
        let mut data = DataGen::new(1, !w.pattern.writes(), 4096);
        worker_loop(eng, &p, w.queue_depth, &mut data, w.pattern.writes())
    }

    fn wl(pattern: Pattern) -> IoWorkload {
        IoWorkload {
            pattern,
            queue_depth: 8,
            ..IoWorkload::default()
        }
    }

    #[test]
    fn clean_run_counts_every_io_once() {
        let o = run_faulty(&wl(Pattern::RandRead), 0, 0);
        assert!(o.error.is_none());
        assert_eq!(o.acct.submitted, 256);
        assert_eq!(o.acct.completed, 256);
        assert_eq!(o.read.count, 256);
        assert_eq!(o.read.latency.len(), 256);
        assert_eq!(o.read.bytes, 1 << 20);
        assert_eq!(o.series.iter().map(|p| p.ops).sum::<u64>(), 256);
    }

    #[test]
    fn eio_is_an_error_not_a_completed_io() {
        let o = run_faulty(&wl(Pattern::RandRead), 10, -libc::EIO);
        let e = o.error.expect("error reported");
        assert!(e.to_string().contains("Input/output error"), "{e}");
        assert_eq!(o.acct.errors, 1);
        assert_eq!(
            o.acct.submitted, o.acct.completed,
            "drained before stopping"
        );
        assert_eq!(
            o.read.count,
            o.acct.completed - 1,
            "the failed IO is not counted as done"
        );
    }

    #[test]
    fn enospc_says_disk_full() {
        let o = run_faulty(&wl(Pattern::Write), 5, -libc::ENOSPC);
        let e = o.error.expect("error reported");
        assert!(e.is_disk_full());
        assert!(e.to_string().contains("disk full"), "{e}");
    }

    #[test]
    fn short_read_is_reported() {
        let o = run_faulty(&wl(Pattern::Read), 3, 512);
        let e = o.error.expect("short read reported");
        assert!(e.to_string().contains("short read"), "{e}");
        assert_eq!(o.acct.short, 1);
        assert_eq!(o.read.count, o.acct.completed - 1);
    }

    #[test]
    fn fsync_every_n_writes_drains_then_syncs() {
        let w = IoWorkload {
            fsync_every: 4,
            ..wl(Pattern::RandWrite)
        };
        let o = run_faulty(&w, 0, 0);
        assert!(o.error.is_none());
        assert_eq!(o.write.count, 256);
        assert_eq!(o.acct.syncs, 64);
        assert_eq!(o.sync.count, 64);
    }
}
