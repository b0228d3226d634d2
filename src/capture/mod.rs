//! `iolab capture`: record every IO that reaches a block device, through the kernel's block
//! tracepoints, into a trace file (`crate::trace`).
//!
//! Why tracepoints and not blktrace: blktrace's relay files live in debugfs, which a kernel in
//! lockdown (Secure Boot servers) refuses, while the tracepoints under tracefs keep working
//! (facts.md). The capture:
//!
//! - mounts tracefs at `/sys/kernel/tracing` when it is mounted nowhere, and unmounts it after
//!   once nothing else needs it ([`mount`]: a tracefs someone else mounted stays);
//! - makes a private tracefs instance (`instances/iolab-PID`, [`tracefs`]): its own buffers,
//!   clock and enabled events, so another user's tracing is never touched, and one rmdir
//!   undoes it (also for a capture killed with SIGKILL: `iolab run --cleanup`);
//! - enables the issue and completion events with a filter on the device number, evaluated in
//!   the kernel, so other devices' IOs cost nothing and never reach the buffer;
//! - reads the binary ring-buffer pages ([`ringbuf`]) every 50 ms, decodes the events by their
//!   `format` files ([`events`]) and pairs issues with completions ([`pair`]);
//! - streams the IOs, in issue order, into the trace writer: memory holds only what is in
//!   flight, whatever the length of the capture.
//!
//! It never opens the device (let alone for writing): everything comes from tracefs.

pub mod device;
pub mod events;
pub mod mount;
pub mod pair;
pub mod ringbuf;
pub mod tracefs;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::progress::Counters;
use crate::trace::{TraceDevice, TraceError, TraceHeader, TraceWriter};

pub use device::{Traced, resolve};

/// Why a capture could not be made. Each is one line saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The target is not something that can be traced.
    #[error("{0}")]
    Target(String),
    /// tracefs refused something (not mounted, not root, lockdown).
    #[error("{0}")]
    Tracefs(String),
    /// The trace file could not be written.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

impl CaptureError {
    /// True when the user can fix it by asking differently (exit 2), false when the machine
    /// failed (a write error: exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            CaptureError::Target(_) | CaptureError::Tracefs(_) => true,
            CaptureError::Trace(e) => !matches!(e, TraceError::Write { .. }),
        }
    }
}

/// What to capture and where to put it.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// Stop after this long (`None`: at the stop flag only).
    pub time: Option<Duration>,
    /// The trace file to write.
    pub output: PathBuf,
    /// Per-CPU buffer, KiB (`None`: 64 MiB in all, 1-16 MiB per CPU).
    pub buffer_kb: Option<u64>,
    /// Set by Ctrl-C: stop, keep what was captured.
    pub stop: Arc<AtomicBool>,
    /// Bumped with the IOs written (for a progress line).
    pub counters: Option<Arc<Counters>>,
}

/// What a capture did.
#[derive(Debug, Clone)]
pub struct CaptureOutcome {
    /// The header written.
    pub header: TraceHeader,
    /// What was traced, in words.
    pub said: String,
    /// Completions of IOs issued before the capture began (not in the trace).
    pub orphan_completions: u64,
    /// Pages the kernel marked as following lost events.
    pub missed_pages: u64,
    /// Whether this capture mounted tracefs, and whether it is unmounted again.
    pub tracefs: mount::Release,
}

/// How far behind "now" events wait before they are paired: events of different CPUs come out
/// of their buffers at different times, and the wait lets them be put in time order first.
const HOLD_NS: u64 = 200_000_000;
/// How often the buffers are read.
const POLL: Duration = Duration::from_millis(50);
/// How long after the end the completions of IOs still in flight are waited for.
const DRAIN: Duration = Duration::from_secs(2);

/// The trace clock's "now", from a CPU's `stats` (`now ts: 12564.355423`), ns.
fn trace_now(inst: &tracefs::Instance) -> Result<u64, CaptureError> {
    let p = inst.dir().join("per_cpu/cpu0/stats");
    let text = std::fs::read_to_string(&p)
        .map_err(|e| CaptureError::Tracefs(format!("cannot read {}: {e}", p.display())))?;
    text.lines()
        .find_map(|l| l.strip_prefix("now ts:"))
        .and_then(|v| {
            let (s, us) = v.trim().split_once('.')?;
            let s: u64 = s.parse().ok()?;
            let frac = format!("{us:0<9}");
            Some(s * 1_000_000_000 + frac.get(..9)?.parse::<u64>().ok()?)
        })
        .ok_or_else(|| CaptureError::Tracefs(format!("{}: no 'now ts' line", p.display())))
}

fn default_buffer_kb() -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as u64;
    (64 * 1024 / cpus).clamp(1024, 16 * 1024)
}

fn header_for(t: &Traced, target: &Path) -> TraceHeader {
    let d = &t.device;
    let sys = crate::system::SystemInfo::collect();
    TraceHeader {
        source: if t.request_based {
            "tracepoints:block_rq".into()
        } else {
            "tracepoints:block_bio".into()
        },
        target: target.display().to_string(),
        device: Some(TraceDevice {
            name: d.name.clone(),
            model: d.model.clone(),
            size_bytes: d.size_bytes,
            logical_block_size: d.logical_block_size,
            rotational: d.rotational,
            devnum: d.devnum.clone(),
        }),
        filesystem: t.filesystem.clone(),
        mount_point: t.mount_point.clone(),
        kernel: Some(sys.kernel),
        hostname: Some(sys.hostname),
        started_unix_ns: crate::sample::now_unix_ns(),
        ..Default::default()
    }
}

/// The decoder of the issue and completion events' records, from their format files in the
/// tracefs instance (an error if the kernel's layout is not one iolab reads).
fn decoder_for(
    inst: &tracefs::Instance,
    issue_ev: &str,
    complete_ev: &str,
) -> Result<events::Decoder, CaptureError> {
    let bad_format =
        |e: String| CaptureError::Tracefs(format!("unexpected tracepoint layout: {e}"));
    let fmt = |name: &str| -> Result<events::EventFormat, CaptureError> {
        events::parse_format(&inst.format(name)?)
            .ok_or_else(|| bad_format(format!("{name}: unreadable format file")))
    };
    events::Decoder::new(fmt(issue_ev)?, fmt(complete_ev)?).map_err(bad_format)
}

/// Writes the IOs the pairer has paired so far to the trace, counting them in the progress
/// counters; the first write error stops the writing and is returned.
fn write_paired(
    pairer: &mut pair::Pairer,
    writer: &mut TraceWriter,
    counters: Option<&Counters>,
) -> Result<(), TraceError> {
    let mut write_err: Option<TraceError> = None;
    pairer.drain(&mut |io| {
        if write_err.is_none() {
            if let Err(e) = writer.push(&io) {
                write_err = Some(e);
            }
            if let Some(c) = counters {
                c.add(u64::from(io.len), 1);
            }
        }
    });
    write_err.map_or(Ok(()), Err)
}

/// The notes a capture's header ends with: the passthrough requests left out, the events the
/// kernel dropped (`header.lost_events`, or whole pages missed), and what was traced.
fn closing_notes(header: &mut TraceHeader, passthrough: u64, missed_pages: u64, said: &str) {
    if passthrough > 0 {
        header.notes.push(format!(
            "{passthrough} passthrough requests (driver commands without a data range, such as reading the disk's serial) left out, as blktrace's pc requests"
        ));
    }
    if header.lost_events > 0 || missed_pages > 0 {
        header.notes.push(format!(
            "the kernel dropped {} events (its trace buffer was full): some IOs are missing; capture with a larger --buffer-kb",
            header.lost_events.max(missed_pages)
        ));
    }
    header.notes.push(format!("traced {said}"));
}

/// Records the IOs of `traced` until the time is up or the stop flag is set, and writes the
/// trace. `on_start` is called once the events are on (a test or the CLI starts its workload
/// then).
pub fn capture(
    traced: &Traced,
    target: &Path,
    opts: &CaptureOptions,
    on_start: impl FnOnce(),
) -> Result<CaptureOutcome, CaptureError> {
    let mut inst = tracefs::Instance::create(opts.buffer_kb.unwrap_or_else(default_buffer_kb))?;
    let (issue_ev, complete_ev) = traced.events();
    let decoder = decoder_for(&inst, issue_ev, complete_ev)?;
    let mut writer = TraceWriter::create(&opts.output)?;
    let mut header = header_for(traced, target);
    inst.open_readers()?;
    let t0 = trace_now(&inst)?;
    let filter = format!("dev == {}", traced.filter.dev);
    inst.enable(issue_ev, &filter)?;
    inst.enable(complete_ev, &filter)?;
    let started = Instant::now();
    on_start();
    let mut pairer = pair::Pairer::new(traced.filter, t0);
    let mut pending: Vec<events::BlockEvent> = Vec::new();
    let mut missed_pages = 0u64;
    let mut end: Option<(u64, Instant)> = None;
    loop {
        let stop_asked = opts.stop.load(Ordering::Relaxed);
        if end.is_none() && (stop_asked || opts.time.is_some_and(|t| started.elapsed() >= t)) {
            // No issue after this instant counts; completions of earlier ones still do.
            let now = trace_now(&inst)?;
            header.interrupted = stop_asked && opts.time.is_some();
            header.duration_ns = now.saturating_sub(t0);
            pairer.issue_until(now);
            end = Some((now, Instant::now()));
        }
        // Done once every event up to the end has been read and paired (the hold has passed
        // it) and no IO issued before the end is still open — or after DRAIN at most.
        let draining_done = end.is_some_and(|(end_ts, at)| {
            at.elapsed() >= DRAIN
                || (at.elapsed() >= Duration::from_nanos(HOLD_NS + 50_000_000)
                    && pairer.in_flight() == 0
                    && pending.iter().all(|e| e.ts > end_ts))
        });
        if draining_done {
            inst.stop();
        }
        let nap = match (opts.time, end) {
            (Some(t), None) => t.saturating_sub(started.elapsed()).min(POLL),
            _ => POLL,
        };
        if !draining_done {
            std::thread::sleep(nap.max(Duration::from_millis(1)));
        }
        inst.read_pages(&mut |page| {
            let p = ringbuf::parse_page(page);
            missed_pages += u64::from(p.missed);
            pending.extend(p.events.iter().filter_map(|e| decoder.decode(e.ts, e.data)));
        })?;
        pending.sort_by_key(|e| e.ts);
        let horizon = if draining_done {
            u64::MAX
        } else {
            trace_now(&inst)?.saturating_sub(HOLD_NS)
        };
        let ready = pending.partition_point(|e| e.ts < horizon);
        let mut procs = |name: &str| writer.process_index(name);
        for e in pending.drain(..ready) {
            pairer.push(&e, &mut procs);
        }
        write_paired(&mut pairer, &mut writer, opts.counters.as_deref())?;
        if draining_done {
            break;
        }
    }
    header.lost_events = inst.lost_events();
    let tracefs = inst.close();
    let passthrough = pairer.passthrough;
    let mut write_err: Option<TraceError> = None;
    let (unmatched, orphans) = pairer.finish(&mut |io| {
        if write_err.is_none() {
            if let Err(e) = writer.push(&io) {
                write_err = Some(e);
            }
        }
    });
    if let Some(e) = write_err {
        return Err(e.into());
    }
    header.unmatched = unmatched;
    closing_notes(&mut header, passthrough, missed_pages, &traced.said);
    let header = writer.finish(header)?;
    Ok(CaptureOutcome {
        header,
        said: traced.said.clone(),
        orphan_completions: orphans,
        missed_pages,
        tracefs,
    })
}
