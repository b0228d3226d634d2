//! Pairing issue and completion events into IOs, written out in issue order.
//!
//! An issue opens an IO under its key (start sector and operation); the next completion with
//! that key closes the oldest IO open under it (by dev and sector, in order). A partial
//! completion (the kernel completes a request in pieces) moves the key past the completed part.
//! IOs leave in issue order once they and every IO issued before them are closed, so the trace
//! is ordered and memory holds only what is in flight; an IO open for longer than
//! [`STALE_NS`] (its completion was lost) leaves without one.
//!
//! Requests without a data range are keyed at sector 0 on both sides: the kernel's issue
//! event says 0 for them (`blk_rq_trace_sector`) while its completion event gives the
//! request's raw position, which for a flush is `(sector_t)-1` — so flushes paired with
//! nothing and every one was left "without a completion" until blktrace in the VM showed
//! them completing. Passthrough requests (`N` with no sectors: a driver command
//! such as virtio-blk reading its serial, an SG_IO or NVMe admin command) are left out and
//! counted, as blktrace marks them `pc` and its importer leaves them out too.

use std::collections::{HashMap, VecDeque};

use super::events::{BlockEvent, Phase, parse_rwbs};
use crate::trace::{NO_COMPLETION, Op, TraceIo};

/// An IO still open this long after the newest event leaves without a completion.
pub const STALE_NS: u64 = 60_000_000_000;

/// What a capture keeps of the device: its dev_t and, for a partition, its sector range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFilter {
    /// Kernel dev_t of the (whole) device the requests go to.
    pub dev: u32,
    /// First sector of the traced partition (0 for a whole device).
    pub start: u64,
    /// Sectors in it (`u64::MAX` for a whole device).
    pub sectors: u64,
}

impl DeviceFilter {
    fn keeps(&self, e: &BlockEvent) -> bool {
        if e.dev != self.dev {
            return false;
        }
        // Flushes have no sector: a partition's trace keeps its disk's flushes.
        e.nr_sector == 0 || (e.sector >= self.start && e.sector - self.start < self.sectors)
    }
}

struct Open {
    io: TraceIo,
    done: bool,
    /// Sectors not yet completed.
    left: u32,
}

/// Turns a time-ordered stream of events into IOs.
pub struct Pairer {
    filter: DeviceFilter,
    /// Trace-clock time of the capture's start: issue times count from here.
    t0: u64,
    open: VecDeque<Open>,
    /// Sequence number of `open[0]`.
    base: u64,
    by_key: HashMap<(u64, Op), VecDeque<u64>>,
    /// Completions that matched no open IO (issued before the capture began, or lost).
    pub orphan_completions: u64,
    /// IOs that left without a completion.
    pub unmatched: u64,
    /// Passthrough requests left out (issues counted).
    pub passthrough: u64,
    newest: u64,
    /// Issues after this trace-clock time are not recorded (the capture's end).
    issue_until: u64,
}

impl Pairer {
    /// A pairer for one device; `t0` is the trace-clock time issue times count from.
    pub fn new(filter: DeviceFilter, t0: u64) -> Pairer {
        Pairer {
            filter,
            t0,
            open: VecDeque::new(),
            base: 0,
            by_key: HashMap::new(),
            orphan_completions: 0,
            unmatched: 0,
            passthrough: 0,
            newest: t0,
            issue_until: u64::MAX,
        }
    }

    /// Records no issue after `ts` (trace clock): the capture's end. Completions of IOs
    /// issued before still count.
    pub fn issue_until(&mut self, ts: u64) {
        self.issue_until = ts;
    }

    /// IOs issued and not yet written out.
    pub fn in_flight(&self) -> usize {
        self.open.len()
    }

    /// Takes one event (events must come in time order); `process` gives the record index
    /// of a process name.
    pub fn push(&mut self, e: &BlockEvent, process: &mut impl FnMut(&str) -> u16) {
        if !self.filter.keeps(e) || e.ts < self.t0 {
            return;
        }
        self.newest = self.newest.max(e.ts);
        let (op, flags) = parse_rwbs(&e.rwbs);
        if op == Op::Other && e.nr_sector == 0 {
            // Passthrough: no data range, and its completion's sector is not its issue's.
            if e.phase == Phase::Issue && e.ts <= self.issue_until {
                self.passthrough += 1;
            }
            return;
        }
        let sector = if e.nr_sector == 0 {
            0
        } else {
            e.sector.saturating_sub(self.filter.start)
        };
        match e.phase {
            Phase::Issue => {
                if e.ts > self.issue_until {
                    return;
                }
                let seq = self.base + self.open.len() as u64;
                let len = if e.nr_sector == 0 {
                    0
                } else {
                    e.bytes.max(e.nr_sector * 512)
                };
                self.open.push_back(Open {
                    io: TraceIo {
                        issue_ns: e.ts - self.t0,
                        offset: sector * 512,
                        latency_ns: NO_COMPLETION,
                        len,
                        op,
                        flags,
                        process: process(&e.comm),
                    },
                    done: false,
                    left: e.nr_sector,
                });
                self.by_key.entry((sector, op)).or_default().push_back(seq);
            }
            Phase::Complete => self.complete(sector, op, e),
        }
    }

    fn complete(&mut self, sector: u64, op: Op, e: &BlockEvent) {
        let Some(q) = self.by_key.get_mut(&(sector, op)) else {
            self.orphan_completions += 1;
            return;
        };
        // Two requests in flight at one sector (an 8k and a 128k read) complete in either
        // order: the completion closes the oldest whose remaining size is its own, and only
        // when none is, the oldest (a partial completion). Oldest-first alone took the 8k's
        // completion as a piece of the 128k, which then never completed.
        let exact = if e.nr_sector > 0 {
            q.iter().position(|&s| {
                usize::try_from(s - self.base)
                    .ok()
                    .and_then(|k| self.open.get(k))
                    .is_some_and(|o| o.left == e.nr_sector)
            })
        } else {
            None
        };
        let Some(seq) = q.remove(exact.unwrap_or(0)) else {
            self.orphan_completions += 1;
            return;
        };
        if q.is_empty() {
            self.by_key.remove(&(sector, op));
        }
        let Some(o) = self.open.get_mut((seq - self.base) as usize) else {
            return;
        };
        if e.nr_sector > 0 && e.nr_sector < o.left {
            // Part of it: the rest completes at the sector after this piece.
            o.left -= e.nr_sector;
            self.by_key
                .entry((sector + u64::from(e.nr_sector), op))
                .or_default()
                .push_front(seq);
            return;
        }
        o.done = true;
        o.io.latency_ns = (e.ts - self.t0).saturating_sub(o.io.issue_ns);
    }

    /// Hands out the IOs that are ready (closed, with everything before them closed, or
    /// stale), in issue order.
    pub fn drain(&mut self, out: &mut impl FnMut(TraceIo)) {
        let stale_before = self.newest.saturating_sub(self.t0).saturating_sub(STALE_NS);
        while let Some(front) = self.open.front() {
            if !front.done && front.io.issue_ns >= stale_before {
                break;
            }
            let o = self.open.pop_front().expect("front exists");
            if !o.done {
                self.unmatched += 1;
                self.forget(self.base);
            }
            self.base += 1;
            out(o.io);
        }
    }

    /// Drops a stale IO's key, so a later completion at its sector does not close another.
    fn forget(&mut self, seq: u64) {
        self.by_key.retain(|_, q| {
            q.retain(|s| *s != seq);
            !q.is_empty()
        });
    }

    /// The end of the capture: every IO still open leaves, without a completion.
    pub fn finish(mut self, out: &mut impl FnMut(TraceIo)) -> (u64, u64) {
        while let Some(o) = self.open.pop_front() {
            if !o.done {
                self.unmatched += 1;
            }
            out(o.io);
        }
        (self.unmatched, self.orphan_completions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: u32 = (7 << 20) | 1;

    fn ev(ts: u64, phase: Phase, sector: u64, nr: u32, rwbs: &str) -> BlockEvent {
        BlockEvent {
            ts,
            phase,
            dev: DEV,
            sector,
            nr_sector: nr,
            bytes: nr * 512,
            rwbs: rwbs.into(),
            comm: "fio".into(),
            error: 0,
        }
    }

    fn run(filter: DeviceFilter, events: &[BlockEvent]) -> (Vec<TraceIo>, u64, u64) {
        let mut p = Pairer::new(filter, 100);
        let mut out = Vec::new();
        let mut procs = |_: &str| 0u16;
        for e in events {
            p.push(e, &mut procs);
            p.drain(&mut |io| out.push(io));
        }
        let (u, o) = p.finish(&mut |io| out.push(io));
        (out, u, o)
    }

    fn whole() -> DeviceFilter {
        DeviceFilter {
            dev: DEV,
            start: 0,
            sectors: u64::MAX,
        }
    }

    #[test]
    fn issues_pair_with_completions_and_leave_in_issue_order() {
        use Phase::{Complete as C, Issue as I};
        let (ios, unmatched, orphans) = run(
            whole(),
            &[
                ev(50, C, 8, 8, "R"), // completes an IO issued before the capture
                ev(110, I, 0, 16, "R"),
                ev(120, I, 64, 8, "W"),
                ev(130, C, 64, 8, "W"), // the write finishes first
                ev(140, I, 0, 16, "R"), // the same sector again, still in flight
                ev(150, C, 0, 16, "R"),
                ev(160, C, 0, 16, "R"),
                ev(170, I, 0, 0, "FF"),
                ev(172, I, 0, 0, "N"), // passthrough (virtio-blk's serial): left out
                ev(175, C, u64::MAX, 0, "N"),
                ev(180, C, u64::MAX, 0, "FF"), // a flush completes at (sector_t)-1
                ev(185, C, u64::MAX, 0, "N"),
                ev(190, I, 128, 8, "W"), // never completes
            ],
        );
        assert_eq!(orphans, 0, "the completion before t0 is ignored");
        assert_eq!(unmatched, 1);
        let got: Vec<(u64, u64, u32, Op, u64)> = ios
            .iter()
            .map(|i| (i.issue_ns, i.offset, i.len, i.op, i.latency_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (10, 0, 8192, Op::Read, 40),
                (20, 32768, 4096, Op::Write, 10),
                (40, 0, 8192, Op::Read, 20),
                (70, 0, 0, Op::Flush, 10),
                (90, 65536, 4096, Op::Write, NO_COMPLETION),
            ]
        );
        assert_eq!(ios[3].flags, 0, "a flush is not preflushed");
    }

    /// Checked against blktrace in the VM: a 128k and an 8k read at one sector,
    /// in flight together, the 8k done first — each gets its own completion, and the 128k is
    /// not left open as if the 8k had been a piece of it.
    #[test]
    fn two_requests_at_one_sector_complete_in_either_order() {
        use Phase::{Complete as C, Issue as I};
        let (ios, unmatched, orphans) = run(
            whole(),
            &[
                ev(110, I, 64, 256, "R"),
                ev(120, I, 64, 16, "R"),
                ev(130, C, 64, 16, "R"),
                ev(190, C, 64, 256, "R"),
            ],
        );
        assert_eq!((unmatched, orphans), (0, 0));
        let got: Vec<(u32, u64)> = ios.iter().map(|i| (i.len, i.latency_ns)).collect();
        assert_eq!(got, vec![(128 << 10, 80), (8 << 10, 10)]);
    }

    /// Checked against blktrace in the VM: a passthrough request is counted and
    /// left out, its completion neither closes another IO nor counts as an orphan.
    #[test]
    fn passthrough_requests_are_counted_and_left_out() {
        use Phase::{Complete as C, Issue as I};
        let mut p = Pairer::new(whole(), 100);
        let mut procs = |_: &str| 0u16;
        for e in [
            ev(110, I, 0, 0, "N"),
            ev(115, I, 8, 8, "R"),
            ev(120, C, u64::MAX, 0, "N"),
            ev(125, C, 8, 8, "R"),
        ] {
            p.push(&e, &mut procs);
        }
        assert_eq!(p.passthrough, 1);
        let mut out = Vec::new();
        let (u, o) = p.finish(&mut |io| out.push(io));
        assert_eq!((out.len(), u, o), (1, 0, 0));
        assert_eq!((out[0].op, out[0].latency_ns), (Op::Read, 10));
    }

    #[test]
    fn partial_completions_close_the_io_at_the_last_piece() {
        use Phase::{Complete as C, Issue as I};
        let (ios, u, o) = run(
            whole(),
            &[
                ev(110, I, 0, 16, "W"),
                ev(120, C, 0, 8, "W"),
                ev(135, C, 8, 8, "W"),
            ],
        );
        assert_eq!((u, o), (0, 0));
        assert_eq!(ios.len(), 1);
        assert_eq!(ios[0].latency_ns, 25);
    }

    #[test]
    fn a_partition_keeps_its_range_and_counts_from_its_start() {
        use Phase::{Complete as C, Issue as I};
        let part = DeviceFilter {
            dev: DEV,
            start: 2048,
            sectors: 1000,
        };
        let mut other = ev(115, I, 100, 8, "R");
        other.dev = DEV + 1;
        let (ios, _, _) = run(
            part,
            &[
                other,
                ev(110, I, 100, 8, "R"),
                ev(120, I, 2048 + 8, 8, "R"),
                ev(125, C, 2048 + 8, 8, "R"),
                ev(130, I, 2048 + 1000, 8, "R"),
            ],
        );
        assert_eq!(ios.len(), 1);
        assert_eq!(ios[0].offset, 4096);
    }
}
