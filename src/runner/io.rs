//! The IO runner: worker threads, each with its own engine and file descriptor, keep the queue
//! full, time every IO into HDR histograms, and bucket throughput per second.
//!
//! Timing is per batch: one clock read before a batch is submitted, one after it is reaped.
//! That costs two clock reads per batch instead of two per IO, and is exact at QD 1.
//!
//! The measurement window (`docs/accuracy.md`) is defined here and in `runner::worker`: the
//! clock starts when every worker's engine is ready (a start line all of them wait at), IOs
//! count when they complete before the deadline, and the device has been left quiet for
//! [`QUIET_BEFORE_TRIAL`] before the trial starts so a rate limiter's state from earlier IO
//! does not leak into it.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::progress::Counters;
use crate::sample::{
    IoAccounting, Note, NoteKind, OpSample, OpenLoopSample, SeriesPoint, TrialSample,
};
use crate::spec::{EngineKind, IoWorkload};

use super::interval::{IntervalListener, Pool, SecondPercentiles};
use super::offsets::{Region, regions, thread_seed};
use super::verify::VerifySummary;
use super::worker::{WorkerOut, WorkerParams, worker_main};

pub use super::trial::{IoFile, IoRunError, StartGate};

/// How long the target is left without IO from iolab before a trial starts.
///
/// Rate limiters keep state between IOs: Linux's blk-throttle accounts in slices of 100 ms
/// that stay open while IO keeps coming, and a trial started inside the previous trial's slice
/// inherits its credit or debt (measured: +10% or -20% on a 1 s trial at 2000 IOPS). Leaving
/// the device idle for longer than a slice (and its extension) makes every trial start a fresh
/// one, as a first run does. Cloud volumes' burst buckets have longer memories: those show as
/// the bursts they are.
pub const QUIET_BEFORE_TRIAL: Duration = Duration::from_millis(250);

/// When this process last finished IO on a target (None before the first trial).
static LAST_IO_END: Mutex<Option<Instant>> = Mutex::new(None);

/// Sleeps until the target has been quiet for [`QUIET_BEFORE_TRIAL`] (the whole of it before
/// the first trial of the process, which cannot know what ran before it).
fn wait_for_quiet() {
    let last = LAST_IO_END.lock().map_or(None, |g| *g);
    let waited = last.map_or(Duration::ZERO, |t| t.elapsed());
    if let Some(rest) = QUIET_BEFORE_TRIAL.checked_sub(waited) {
        std::thread::sleep(rest);
    }
}

fn note_io_end() {
    if let Ok(mut g) = LAST_IO_END.lock() {
        *g = Some(Instant::now());
    }
}

/// Shared controls of a trial.
#[derive(Clone)]
pub struct Control {
    /// Set by Ctrl-C/SIGTERM: stop issuing, drain, keep what was measured.
    pub stop: Arc<AtomicBool>,
    /// Progress counters bumped once per batch.
    pub counters: Arc<Counters>,
    /// When the next trial's clock may start (`iolab run --hosts` starts every host at one
    /// instant), and when it did.
    pub gate: Arc<StartGate>,
    /// Told each second of an IO trial's window once every worker has left it (`iolab agent`
    /// streams them); `None`: only the series' per-second percentiles are kept.
    pub intervals: Option<IntervalListener>,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            stop: Arc::new(AtomicBool::new(false)),
            counters: Arc::new(Counters::default()),
            gate: Arc::new(StartGate::default()),
            intervals: None,
        }
    }
}

/// Runs one trial of an IO workload and returns what it measured.
pub fn run_io_trial(
    w: &IoWorkload,
    file: &IoFile,
    ctl: &Control,
    name: &str,
    trial: u32,
) -> Result<TrialSample, IoRunError> {
    run_io_round(w, file, ctl, name, trial, None).map(|(sample, _)| sample)
}

/// Runs one trial, or with `after` (each worker's cursor from the round before) one
/// steady-state round that continues the last: sequential streams go on where they stopped.
/// PTS's rounds are one workload measured in slices; a restart at the first block would
/// rewrite what a cache in front of the device still holds and flatter every round after the
/// first. (The quiet pause before a trial stays: without it a throttle's open slice credits
/// the idle time between rounds, measured +9% on 1 s rounds; with it a cache writes back
/// during the pause, see docs/steady-state.md.) Returns the sample and each worker's cursor.
pub fn run_io_round(
    w: &IoWorkload,
    file: &IoFile,
    ctl: &Control,
    name: &str,
    trial: u32,
    after: Option<&[u64]>,
) -> Result<(TrialSample, Vec<u64>), IoRunError> {
    let direct = w.direct && file.direct_ok;
    let size = file.size;
    let regs = thread_regions(w, file);
    // A replay's schedule: the trace's IOs mapped onto this file (read once per trial).
    let plan = w
        .replay
        .as_ref()
        .map(|r| super::replay::plan(r, w.loops, size))
        .transpose()?;
    let per_thread_quota = |i: usize| thread_quota(w, regs[i], size, plan.is_some(), i);
    let ramp_ns = w.ramp.as_nanos() as u64;
    let deadline_ns = w
        .runtime
        .map_or(u64::MAX, |r| ramp_ns.saturating_add(r.as_nanos() as u64));
    let abort = AtomicBool::new(false);
    let start_line = Barrier::new(w.threads as usize);
    let start = OnceLock::new();
    if w.engine != EngineKind::Null {
        wait_for_quiet();
    }
    let started_unix_ms = crate::sample::now_unix_ms();
    let ru0 = crate::sys::rusage_self();
    let pool = Pool::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let (outs, seconds): (Vec<WorkerOut>, SecondPercentiles) = std::thread::scope(|s| {
        let listener = ctl.intervals.as_ref();
        let pool = &pool;
        let collector =
            s.spawn(move || super::interval::collect(&rx, w.threads as usize, pool, listener));
        let handles: Vec<_> = (0..w.threads as usize)
            .map(|i| {
                let p = WorkerParams {
                    w,
                    file,
                    region: regs[i],
                    quota: per_thread_quota(i),
                    seed: thread_seed(w.seed, i as u32),
                    start_line: &start_line,
                    start: &start,
                    ramp_ns,
                    deadline_ns,
                    direct,
                    stop: &ctl.stop,
                    abort: &abort,
                    counters: &ctl.counters,
                    gate: &ctl.gate,
                    index: i,
                    intervals: tx.clone(),
                    pool,
                    replay: plan.as_ref(),
                    resume: after.and_then(|c| c.get(i)).copied().unwrap_or(0),
                };
                s.spawn(move || worker_main(&p))
            })
            .collect();
        drop(tx);
        let outs = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| panic!("an IO worker thread panicked"))
            })
            .collect();
        let seconds = collector
            .join()
            .unwrap_or_else(|_| panic!("the interval collector panicked"));
        (outs, seconds)
    });
    let ru1 = crate::sys::rusage_self();
    if w.engine != EngineKind::Null {
        note_io_end();
    }
    let cursors: Vec<u64> = outs.iter().map(|o: &WorkerOut| o.cursor).collect();
    let mut sample = merge(
        outs,
        w,
        name,
        trial,
        started_unix_ms,
        ramp_ns,
        direct,
        file,
        (ru0, ru1),
    )?;
    for (t, p50, p99) in seconds {
        if let Some(pt) = sample.series.get_mut(t as usize) {
            pt.p50_ns = Some(p50);
            pt.p99_ns = Some(p99);
        }
    }
    Ok((sample, cursors))
}

/// The part of the file each worker thread works in, placed at the file's offset on the target.
///
/// Sequential workloads, and verify mode (so no two writes race for one block), give each
/// thread its own blocks.
fn thread_regions(w: &IoWorkload, file: &IoFile) -> Vec<Region> {
    let seq = !w.pattern.is_random();
    regions(
        file.size,
        w.block_size,
        w.threads,
        seq || file.verify.is_some(),
    )
    .into_iter()
    .map(|r| Region {
        start: r.start + file.offset,
        len: r.len,
    })
    .collect()
}

/// How many bytes worker thread `i` may issue in a trial: its share of `total_bytes`, or one
/// pass over its part of the working set, times `loops`; unbounded (`u64::MAX`) when the
/// runtime or a replay's trace (`replay`) ends the trial instead.
fn thread_quota(w: &IoWorkload, region: Region, size: u64, replay: bool, i: usize) -> u64 {
    let seq = !w.pattern.is_random();
    let t = u64::from(w.threads);
    if replay {
        // A replay ends with its trace.
        return u64::MAX;
    }
    let one_pass = match (w.total_bytes, w.runtime) {
        (Some(b), _) => {
            let share = b / t + u64::from((i as u64) < b % t);
            share.div_ceil(w.block_size) * w.block_size
        }
        (None, Some(_)) => return u64::MAX,
        // Neither: one pass over the working set in all.
        (None, None) => {
            if seq && w.skip != 0 {
                // With holes, fio's pass may end before `size` bytes (spec::holes::pass_ios).
                crate::spec::holes::pass_ios(region.len, w.block_size, w.skip)
                    .map_or(region.len, |n| (n * w.block_size).min(region.len))
            } else if seq {
                region.len
            } else {
                (size / w.block_size / t).max(1) * w.block_size
            }
        }
    };
    // `loops`: that many passes (fio's loops).
    one_pass.saturating_mul(u64::from(w.loops.max(1)))
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
    let mut per_op = [
        OpSample::new("read"),
        OpSample::new("write"),
        OpSample::new("sync"),
    ];
    let mut acct = IoAccounting::default();
    let mut waits = crate::engine::WaitCounts::default();
    let mut sched: Option<crate::system::sched::ThreadSched> = None;
    let mut open_loop: Option<OpenLoopSample> = None;
    let mut series: Vec<SeriesPoint> = Vec::new();
    let mut end = 0u64;
    // The caveats, as words; the notes with figures are added after.
    let mut notes: Vec<String> = Vec::new();
    let mut first_error = None;
    let mut engine = None;
    let mut verify = VerifySummary::default();
    for o in outs {
        verify.merge(o.verify);
        for (dst, src) in per_op.iter_mut().zip([&o.read, &o.write, &o.sync]) {
            add_op(dst, src);
        }
        add_accounting(&mut acct, &o.acct);
        waits.add(o.waits);
        sched = Some(sched.map_or(o.sched, |s| s.plus(o.sched)));
        if let Some(ol) = &o.open_loop {
            open_loop
                .get_or_insert_with(OpenLoopSample::default)
                .merge(ol);
        }
        add_series(&mut series, &o.series);
        end = end.max(o.end_ns);
        engine = engine.or(o.engine);
        if first_error.is_none() {
            first_error = o.error;
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let elapsed_ns = end.saturating_sub(ramp_ns).max(1);
    let ops = reported_ops(per_op, w, elapsed_ns);
    if w.direct && !direct {
        notes.push(format!(
            "O_DIRECT is not supported on {}: ran buffered (page cache in the figures)",
            file.path.display()
        ));
    }
    if let Some(ran) = engine
        && ran != w.engine
    {
        notes.push(format!(
            "{} engine was not available: ran with {}",
            w.engine.name(),
            ran.name()
        ));
    }
    if w.engine != EngineKind::Null
        && let Some(n) = crate::system::throttle::throttle_note(&file.path)
    {
        notes.push(n);
    }
    if let Some(ol) = open_loop.as_mut() {
        notes.extend(open_loop_trial_notes(ol, &ops, end, elapsed_ns, w));
    }
    if engine == Some(EngineKind::Psync) && w.queue_depth > 1 {
        notes.push(format!(
            "psync does one IO at a time per thread: queue depth {} ran as 1",
            w.queue_depth
        ));
    }
    let mut notes: Vec<Note> = notes.into_iter().map(Note::caveat).collect();
    notes.extend(wait_notes(waits, sched, w, &ops));
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
        open_loop,
    })
}

/// Adds one worker's figures for an op (counts, bytes, latency and service histograms) to the
/// trial's.
fn add_op(dst: &mut OpSample, src: &OpSample) {
    dst.count += src.count;
    dst.bytes += src.bytes;
    dst.latency.merge(&src.latency);
    if let Some(h) = &src.service {
        dst.service
            .get_or_insert_with(crate::sample::LatencyHistogram::new)
            .merge(h);
    }
}

/// Adds one worker's IO accounting to the trial's.
fn add_accounting(acct: &mut IoAccounting, o: &IoAccounting) {
    acct.submitted += o.submitted;
    acct.completed += o.completed;
    acct.short += o.short;
    acct.errors += o.errors;
    acct.syncs += o.syncs;
    acct.after_window += o.after_window;
}

/// Adds one worker's per-second throughput to the trial's series (second by second).
fn add_series(series: &mut Vec<SeriesPoint>, o: &[SeriesPoint]) {
    if series.len() < o.len() {
        series.resize(o.len(), SeriesPoint::default());
    }
    for (i, p) in o.iter().enumerate() {
        series[i].t = i as u32;
        series[i].bytes += p.bytes;
        series[i].ops += p.ops;
    }
}

/// The ops a trial reports, given the window's length: reads and writes when the pattern does
/// them, syncs when the workload asks for them (or a replay's trace had flushes).
fn reported_ops(per_op: [OpSample; 3], w: &IoWorkload, elapsed_ns: u64) -> Vec<OpSample> {
    let mut ops = Vec::new();
    for mut o in per_op {
        o.elapsed_ns = elapsed_ns;
        let wanted = match o.op.as_str() {
            "read" => w.pattern.reads(),
            "write" => w.pattern.writes(),
            // A replay's flushes are the trace's.
            _ => w.fsync_every > 0 || w.fsync_at_end || (w.replay.is_some() && o.count > 0),
        };
        if wanted {
            ops.push(o);
        }
    }
    ops
}

/// How the note on an open-loop rate the device could not keep up with begins.
pub const NOTE_NOT_SUSTAINED: &str = "rate not sustained";
/// How the note on IOs issued late begins.
pub const NOTE_LATE: &str = "late IOs";

/// Whether a trial note says how one point of an SLO search went (a rate not sustained, IOs
/// late): the search's curve says it for every point, so the run does not repeat it per trial.
pub fn is_search_point_note(n: &Note) -> bool {
    n.kind == NoteKind::Caveat
        && [NOTE_NOT_SUSTAINED, NOTE_LATE]
            .iter()
            .any(|p| n.text.starts_with(p))
}

/// An open-loop trial's notes: a replay's fidelity (its length is the workers' end, `end`),
/// or what the schedule could not keep to.
fn open_loop_trial_notes(
    ol: &mut OpenLoopSample,
    ops: &[OpSample],
    end: u64,
    elapsed_ns: u64,
    w: &IoWorkload,
) -> Vec<String> {
    if let Some(rp) = ol.replay.as_mut() {
        rp.replayed_ns = end;
    }
    if let Some(rp) = &ol.replay {
        return vec![super::replay::fidelity_note(ol, rp)];
    }
    let done: u64 = ops.iter().filter(|o| o.op != "sync").map(|o| o.count).sum();
    open_loop_notes(ol, done, elapsed_ns, w)
}

/// What a reader must know of an open-loop trial: a rate the device could not sustain, IOs
/// shed or issued late.
fn open_loop_notes(ol: &OpenLoopSample, done: u64, elapsed_ns: u64, w: &IoWorkload) -> Vec<String> {
    let mut notes = Vec::new();
    let achieved = done as f64 * 1e9 / elapsed_ns.max(1) as f64;
    let in_flight = u64::from(w.queue_depth) * u64::from(w.threads);
    if !ol.sustained(in_flight) {
        notes.push(format!(
            "{NOTE_NOT_SUSTAINED}: asked {} IOPS, the device completed {} ({:.2} of it); {} IOs \
             were still waiting when the window closed{}: latency (from schedule) grows with \
             that backlog",
            crate::units::format_rate(ol.asked_iops),
            crate::units::format_rate(achieved),
            achieved / ol.asked_iops.max(1e-9),
            ol.backlog_at_end,
            if ol.shed > 0 {
                format!(", {} more were shed (over 1 s behind)", ol.shed)
            } else {
                String::new()
            }
        ));
    } else if ol.late > 0 {
        notes.push(format!(
            "{NOTE_LATE}: {} of {} IOs went out more than 1 ms after their scheduled time (every \
             slot busy, queue depth {}): their latency counts from the schedule",
            ol.late, ol.issued, w.queue_depth
        ));
    }
    notes
}

/// A note when the workers spun for completions: the CPU time then includes the spinning.
fn spin_note(w: crate::engine::WaitCounts) -> Option<Note> {
    let spun = w.spun + w.spun_then_slept;
    (spun > 0).then(|| Note::spun(w.spun, spun + w.slept, w.compared.into(), w.spin_won.into()))
}

/// What a reader must know of how the workers waited: spinning (CPU time includes it), and
/// being kept from their CPUs (the tail includes it).
fn wait_notes(
    waits: crate::engine::WaitCounts,
    sched: Option<crate::system::sched::ThreadSched>,
    w: &IoWorkload,
    ops: &[OpSample],
) -> Vec<Note> {
    let ios: u64 = ops.iter().map(|o| o.count).sum();
    spin_note(waits)
        .into_iter()
        .chain(sched.and_then(|s| cpu_wait_note(s, w, ios)))
        .collect()
}

/// A note when the workers were kept from their CPUs (another process had them) enough to
/// reach the tail: a completion that came meanwhile waited for its worker, so the latencies
/// from the percentile that share leaves out are the machine's as much as the device's
/// (docs/accuracy.md, "Latency against the kernel's"). The share is the run-queue time over
/// the wall time the counters span (every worker's) where the kernel accounts it, else at most the IOs in flight at each preemption
/// over all the IOs; under 1% it cannot move the p99 and nothing is said.
fn cpu_wait_note(s: crate::system::sched::ThreadSched, w: &IoWorkload, ios: u64) -> Option<Note> {
    // The share of the time the counters span (ramp, window and drain, every worker), not of
    // the window alone: a wait in the ramp over a short window read as 100% and more.
    let (share, how) = match s.wait_ns {
        Some(wait) => (
            wait as f64 / s.wall_ns.max(1) as f64,
            format!(
                "{} in the run queue over the window",
                crate::units::format_latency_ns(wait as f64)
            ),
        ),
        None => (
            (s.preempted * u64::from(w.queue_depth)) as f64 / ios.max(1) as f64,
            format!("preempted {} times during {ios} IOs", s.preempted),
        ),
    };
    (share >= 0.01).then(|| Note::cpu_wait(&how, share))
}

/// How long a trial of `w` should take at most (for ETAs): ramp plus run time, or a guess.
pub fn expected_duration(w: &IoWorkload) -> Duration {
    w.ramp + w.runtime.unwrap_or(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::NoteKind;
    use crate::system::sched::ThreadSched;

    /// The CPU-wait share is of the time the counters span: two workers that each waited
    /// 1 s of their 4 s (ramp, window and drain) waited a quarter, however short the window,
    /// where dividing by the window read 100% and more on a loaded machine.
    #[test]
    fn a_cpu_wait_is_a_share_of_the_time_the_counters_span() {
        let w = IoWorkload {
            threads: 2,
            queue_depth: 1,
            ..IoWorkload::default()
        };
        let one = ThreadSched {
            cpu_ns: 0,
            wait_ns: Some(1_000_000_000),
            preempted: 3,
            wall_ns: 4_000_000_000,
        };
        let n = cpu_wait_note(one.plus(one), &w, 10_000).expect("a quarter is said");
        let NoteKind::CpuWait { share_ppm } = n.kind else {
            panic!("{n:?}");
        };
        assert_eq!(share_ppm, 250_000, "{n:?}");
        let idle = ThreadSched {
            wait_ns: Some(1_000_000),
            ..one
        };
        assert!(
            cpu_wait_note(idle.plus(idle), &w, 10_000).is_none(),
            "under 1%: nothing said"
        );
    }
}
