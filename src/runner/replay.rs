//! Replaying a trace: the schedule of the recorded IOs (their due times at the asked speed,
//! their offsets mapped onto the target), which the worker issues open loop
//! ([`super::pace`]), and the fidelity the replay reports of itself.
//!
//! Reads, writes and flushes are replayed; discards and other ops have no engine op and are
//! skipped (counted). Writes carry fresh incompressible data like every iolab write.

use std::path::Path;

use crate::sample::{OpenLoopSample, ReplaySample};
use crate::spec::{IoWorkload, OffsetMap, Pattern, Replay};
use crate::trace::{Op, Trace, TraceError};

/// The most IOs a replay keeps in flight (its queue depth): more than a trace's own peak is
/// never needed.
pub const MAX_REPLAY_DEPTH: u32 = 4096;

/// What one replayed IO does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayOp {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A cache flush.
    Flush,
}

/// One IO of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedIo {
    /// When it is due, ns after the start (at the asked speed).
    pub due_ns: u64,
    /// Its offset on the target (mapped).
    pub offset: u64,
    /// Bytes (0 for a flush).
    pub len: u32,
    /// What it does.
    pub op: ReplayOp,
    /// IOs in flight in the recording when it was issued, itself included: in an
    /// as-fast-as-possible replay it goes out only while fewer are in flight.
    pub depth: u32,
}

/// The whole schedule of a replay, and what it says of itself.
#[derive(Debug, Clone)]
pub struct ReplayPlan {
    /// The IOs, in issue order.
    pub ios: Vec<PlannedIo>,
    /// Ignore `due_ns`: issue in order, bounded by each IO's `depth`.
    pub as_fast_as_possible: bool,
    /// The fidelity figures known before it runs (filled in as it runs).
    pub sample: ReplaySample,
}

/// What a trace asks of a replay workload: its pattern (whether it writes), the largest IO
/// (the buffers), the most IOs in flight (the queue depth).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceNeeds {
    /// The trace has writes.
    pub writes: bool,
    /// The trace has reads.
    pub reads: bool,
    /// The largest IO, bytes.
    pub max_len: u32,
    /// The most IOs in flight at once in the recording.
    pub max_depth: u32,
    /// One past the highest byte touched.
    pub max_end: u64,
}

/// In flight at each IO's issue (itself included), from the recorded completions. An IO
/// without one (a fio iolog has none) counts as done at once: without completion times an
/// as-fast-as-possible replay goes one IO at a time.
fn depths(t: &Trace) -> Vec<u32> {
    let mut ends: std::collections::BinaryHeap<std::cmp::Reverse<u64>> =
        std::collections::BinaryHeap::new();
    t.ios
        .iter()
        .map(|io| {
            while ends.peek().is_some_and(|e| e.0 <= io.issue_ns) {
                ends.pop();
            }
            match io.complete_ns() {
                Some(c) if c > io.issue_ns => {
                    ends.push(std::cmp::Reverse(c));
                    ends.len() as u32
                }
                _ => ends.len() as u32 + 1,
            }
        })
        .collect()
}

/// What a trace needs of the workload that replays it.
pub fn needs(t: &Trace) -> TraceNeeds {
    let data = || t.ios.iter().filter(|i| i.op.is_data());
    TraceNeeds {
        writes: t.ios.iter().any(|i| i.op == Op::Write),
        reads: t.ios.iter().any(|i| i.op == Op::Read),
        max_len: data().map(|i| i.len).max().unwrap_or(4096),
        max_depth: depths(t).into_iter().max().unwrap_or(1),
        max_end: data().map(crate::trace::TraceIo::end).max().unwrap_or(0),
    }
}

/// Reads a replay's trace.
pub fn load(r: &Replay) -> Result<Trace, TraceError> {
    crate::trace::read_trace(Path::new(&r.trace))
}

/// Fills a replay workload's pattern, block size (the largest IO, so every buffer holds it)
/// and queue depth (room for four times the trace's peak in flight) from its trace; one thread. Called before the
/// target is opened, so a trace with writes needs `--destroy` on a device like any writer.
pub fn prepare(w: &mut IoWorkload) -> Result<Option<TraceNeeds>, TraceError> {
    let Some(r) = &w.replay else {
        return Ok(None);
    };
    let t = load(r)?;
    let n = needs(&t);
    w.pattern = match (n.reads, n.writes) {
        (_, true) => Pattern::RandRw,
        _ => Pattern::RandRead,
    };
    w.block_size = u64::from(n.max_len.max(512)).div_ceil(4096) * 4096;
    // Slots are iolab's own queue, not the device's: an open loop on a slower target has
    // more IOs in flight than the recording had, and a slot short would make IOs late. Room
    // for four times the recorded peak (at least 64), within 256 MiB of buffers.
    let by_memory = ((256u64 << 20) / w.block_size).max(1) as u32;
    w.queue_depth = (n.max_depth.saturating_mul(4).max(64))
        .min(by_memory.max(n.max_depth))
        .clamp(1, MAX_REPLAY_DEPTH);
    w.threads = 1;
    w.open_loop = None;
    Ok(Some(n))
}

/// Why a replay cannot be planned on this target.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace file.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The trace reaches past the target and no mapping was chosen.
    #[error(
        "{trace} reaches {reach} but the target holds {size}: choose how to fit it, --replay-map wrap (offsets past the end wrap around) or scale (offsets scaled down)"
    )]
    TooSmall {
        /// The trace file.
        trace: String,
        /// Its highest byte, formatted.
        reach: String,
        /// The target's size, formatted.
        size: String,
    },
}

/// Where an IO of `len` bytes at `offset` goes on a target of `size` bytes; `align` is the
/// alignment kept (4096 when the offset had it, else 512).
fn map_offset(map: OffsetMap, offset: u64, len: u64, size: u64, reach: u64) -> u64 {
    let align = if offset % 4096 == 0 { 4096 } else { 512 };
    let room = size.saturating_sub(len);
    let o = match map {
        OffsetMap::Exact => offset,
        OffsetMap::Wrap => offset % size.max(1),
        OffsetMap::Scale => {
            (u128::from(offset) * u128::from(size) / u128::from(reach.max(1))) as u64
        }
    };
    o.min(room) / align * align
}

/// The schedule of a replay on a target of `size` bytes.
pub fn plan(r: &Replay, loops: u32, size: u64) -> Result<ReplayPlan, ReplayError> {
    let t = load(r)?;
    let n = needs(&t);
    let fits = n.max_end <= size;
    if !fits && r.map == OffsetMap::Exact {
        return Err(ReplayError::TooSmall {
            trace: r.trace.clone(),
            reach: crate::units::format_bytes(n.max_end),
            size: crate::units::format_bytes(size),
        });
    }
    let map = if fits { OffsetMap::Exact } else { r.map };
    let depth = depths(&t);
    let duration = t
        .header
        .duration_ns
        .max(t.ios.last().map_or(0, |i| i.issue_ns));
    let speed = if r.as_fast_as_possible { 1.0 } else { r.speed };
    // The recording's own length: first issue to last completion (or issue).
    let span = t
        .ios
        .iter()
        .map(|i| i.complete_ns().unwrap_or(i.issue_ns))
        .max()
        .unwrap_or(0);
    let mut ios = Vec::with_capacity(t.ios.len() * loops as usize);
    let mut skipped = 0u64;
    for k in 0..u64::from(loops.max(1)) {
        for (io, d) in t.ios.iter().zip(&depth) {
            let op = match io.op {
                Op::Read => ReplayOp::Read,
                Op::Write => ReplayOp::Write,
                Op::Flush => ReplayOp::Flush,
                Op::Discard | Op::Other => {
                    skipped += 1;
                    continue;
                }
            };
            let recorded = k * duration + io.issue_ns;
            ios.push(PlannedIo {
                due_ns: (recorded as f64 / speed) as u64,
                offset: if op == ReplayOp::Flush {
                    0
                } else {
                    map_offset(map, io.offset, u64::from(io.len), size, n.max_end)
                },
                len: if op == ReplayOp::Flush { 0 } else { io.len },
                op,
                depth: *d,
            });
        }
    }
    let said = match (fits, map) {
        (true, _) => format!(
            "offsets as recorded (the trace reaches {}, the target holds {})",
            crate::units::format_bytes(n.max_end),
            crate::units::format_bytes(size)
        ),
        (false, m) => format!(
            "offsets {} into the target's {} (the trace reaches {})",
            if m == OffsetMap::Wrap {
                "wrapped"
            } else {
                "scaled"
            },
            crate::units::format_bytes(size),
            crate::units::format_bytes(n.max_end)
        ),
    };
    let sample = ReplaySample {
        trace: r.trace.clone(),
        records_xxh3: t.header.records_xxh3.clone(),
        trace_ios: t.ios.len() as u64,
        planned: ios.len() as u64,
        skipped,
        speed,
        as_fast_as_possible: r.as_fast_as_possible,
        loops: loops.max(1),
        map: map.name().to_string(),
        mapping: said,
        recorded_ns: (u64::from(loops.max(1) - 1) * duration + span) as f64 / speed,
        ..ReplaySample::default()
    };
    Ok(ReplayPlan {
        ios,
        as_fast_as_possible: r.as_fast_as_possible,
        sample,
    })
}

/// How the note on a replay's fidelity begins.
pub const NOTE_REPLAY: &str = "replay";

/// The fidelity of a replay in one line: its issue-time error against the recorded
/// schedule, its length against the recording's, the IOs that went out late, the mapping.
pub fn fidelity_note(ol: &OpenLoopSample, rp: &ReplaySample) -> String {
    let lat = |ns: u64| crate::units::format_latency_ns(ns as f64);
    let e = &ol.issue_error;
    let mut s = format!(
        "{NOTE_REPLAY}: {} of {} IOs of {} ({}{})",
        ol.issued,
        rp.planned,
        rp.trace,
        if rp.as_fast_as_possible {
            "as fast as possible".to_string()
        } else {
            format!("speed {}", rp.speed)
        },
        if rp.loops > 1 {
            format!(", {} loops", rp.loops)
        } else {
            String::new()
        }
    );
    if !rp.as_fast_as_possible {
        s.push_str(&format!(
            "; issue-time error p50 {} p99 {} max {}; {} IOs more than 1 ms late",
            lat(e.percentile(50.0)),
            lat(e.percentile(99.0)),
            lat(e.percentile(100.0)),
            ol.late
        ));
    }
    let took = rp.replayed_ns as f64;
    s.push_str(&format!(
        "; took {} against the recorded {} ({:+.2}%)",
        crate::units::format_duration(std::time::Duration::from_nanos(rp.replayed_ns)),
        crate::units::format_duration(std::time::Duration::from_nanos(rp.recorded_ns as u64)),
        100.0 * (took - rp.recorded_ns) / rp.recorded_ns.max(1.0)
    ));
    s.push_str(&format!("; {}", rp.mapping));
    if rp.skipped > 0 {
        s.push_str(&format!("; {} discards and other ops skipped", rp.skipped));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{NO_COMPLETION, TraceHeader, TraceIo};

    fn io(t: u64, op: Op, offset: u64, lat: u64) -> TraceIo {
        TraceIo {
            issue_ns: t,
            offset,
            latency_ns: lat,
            len: if op == Op::Flush { 0 } else { 8192 },
            op,
            flags: 0,
            process: 0,
        }
    }

    #[test]
    fn depths_count_what_was_in_flight_at_each_issue() {
        let t = Trace {
            header: TraceHeader::default(),
            ios: vec![
                io(0, Op::Read, 0, 100),
                io(10, Op::Read, 8192, 100),
                io(100, Op::Write, 0, 5), // the first completed at 100
                io(200, Op::Read, 0, NO_COMPLETION),
                io(300, Op::Read, 0, 1),
            ],
        };
        assert_eq!(
            depths(&t),
            vec![1, 2, 2, 1, 1],
            "no completion: done at once"
        );
        let n = needs(&t);
        assert_eq!(
            (n.reads, n.writes, n.max_len, n.max_depth),
            (true, true, 8192, 2)
        );
        assert_eq!(n.max_end, 16384);
    }

    #[test]
    fn offsets_wrap_or_scale_aligned_and_inside_the_target() {
        let size = 1 << 20;
        let reach = 4 << 20;
        for map in [OffsetMap::Wrap, OffsetMap::Scale] {
            for off in (0..reach).step_by(12_288) {
                let o = map_offset(map, off, 8192, size, reach);
                assert!(o + 8192 <= size, "{map:?} {off} -> {o}");
                assert_eq!(o % 4096, 0);
            }
        }
        assert_eq!(
            map_offset(OffsetMap::Wrap, (1 << 20) + 4096, 4096, size, reach),
            4096
        );
        assert_eq!(
            map_offset(OffsetMap::Scale, 2 << 20, 4096, size, reach),
            512 << 10
        );
        assert_eq!(
            map_offset(OffsetMap::Exact, 512, 512, size, reach),
            512,
            "512-aligned kept"
        );
    }
}
