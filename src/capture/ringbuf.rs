//! The kernel's ftrace ring-buffer pages, as `per_cpu/cpuN/trace_pipe_raw` hands them out.
//!
//! Reading the binary pages costs the capture nothing per event in the kernel (the text of
//! `trace_pipe` is formatted by the kernel at read time) and is independent of how a kernel
//! version prints events. Layout (`events/header_page`, `events/header_event`):
//!
//! ```text
//! page:   u64 timestamp | u64 commit (low 27 bits: bytes of data) | data...
//! event:  u32 (type_len:5 low bits, time_delta:27 high bits) | payload
//!   type_len 1..=28  payload of type_len*4 bytes
//!   type_len 0       u32 length (counting itself) then the payload
//!   type_len 29      padding: time_delta 0 ends the page, else u32 length to skip
//!   type_len 30      time extend: u32 high bits of a delta (delta = high << 27 | time_delta)
//!   type_len 31      absolute time stamp: u32 high bits, as above
//! ```
//!
//! Timestamps are in the instance's clock (`mono`: CLOCK_MONOTONIC, the same on every CPU).
//! The parser never panics on a damaged page: it stops at the first thing that does not fit.

/// One event from a page: its timestamp and payload (starting with the common fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent<'a> {
    /// Timestamp in the trace clock, ns.
    pub ts: u64,
    /// The payload: `common_type` (u16) first.
    pub data: &'a [u8],
}

const COMMIT_MASK: u64 = (1 << 27) - 1;
/// Bit 31 of `commit`: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
const PAGE_HEADER: usize = 16;

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    let s = b.get(i..i + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// What a page held: its events, and whether the kernel said events were lost before it.
#[derive(Debug, Default)]
pub struct Page<'a> {
    /// The events, in order.
    pub events: Vec<RawEvent<'a>>,
    /// The kernel dropped events before this page (its buffer was full).
    pub missed: bool,
}

/// Parses one page (`page` is what one read of `trace_pipe_raw` returned).
pub fn parse_page(page: &[u8]) -> Page<'_> {
    let mut out = Page::default();
    let (Some(mut ts), Some(commit)) = (u64_at(page, 0), u64_at(page, 8)) else {
        return out;
    };
    out.missed = commit & MISSED_EVENTS != 0;
    let size = (commit & COMMIT_MASK) as usize;
    let end = (PAGE_HEADER + size).min(page.len());
    let mut i = PAGE_HEADER;
    while i + 4 <= end {
        let Some(h) = u32_at(page, i) else { break };
        let type_len = h & 0x1f;
        let delta = u64::from(h >> 5);
        let body = i + 4;
        match type_len {
            0 => {
                let Some(len) = u32_at(page, body) else { break };
                let len = len as usize;
                if len < 4 || body + len > end {
                    break;
                }
                ts = ts.wrapping_add(delta);
                out.events.push(RawEvent {
                    ts,
                    data: &page[body + 4..body + len],
                });
                i = body + ((len + 3) & !3);
            }
            1..=28 => {
                let len = type_len as usize * 4;
                if body + len > end {
                    break;
                }
                ts = ts.wrapping_add(delta);
                out.events.push(RawEvent {
                    ts,
                    data: &page[body..body + len],
                });
                i = body + len;
            }
            29 => {
                if delta == 0 {
                    break;
                }
                let Some(len) = u32_at(page, body) else { break };
                // A discarded event keeps its place in the time chain (libtraceevent adds it).
                ts = ts.wrapping_add(delta);
                i = body + (len as usize).max(4);
            }
            30 => {
                let Some(hi) = u32_at(page, body) else { break };
                ts = ts.wrapping_add((u64::from(hi) << 27) | delta);
                i = body + 4;
            }
            _ => {
                let Some(hi) = u32_at(page, body) else { break };
                // Absolute: 59 bits stored, the top bits from the page's own stamp.
                let abs = (u64::from(hi) << 27) | delta;
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                i = body + 4;
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a page: a start stamp and events of (delta, payload) written the way the kernel
    /// writes them (small ones inline, large ones with a length word, big deltas extended).
    pub(crate) fn page(start: u64, events: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (delta, payload) in events {
            let mut delta = *delta;
            if delta >= 1 << 27 {
                let h: u32 = 0x1e | (((delta & ((1 << 27) - 1)) as u32) << 5);
                data.extend_from_slice(&h.to_le_bytes());
                data.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
                delta = 0;
            }
            let mut p = payload.clone();
            while p.len() % 4 != 0 {
                p.push(0);
            }
            if p.len() <= 28 * 4 {
                let h: u32 = (p.len() / 4) as u32 | ((delta as u32) << 5);
                data.extend_from_slice(&h.to_le_bytes());
            } else {
                let h: u32 = (delta as u32) << 5;
                data.extend_from_slice(&h.to_le_bytes());
                data.extend_from_slice(&((p.len() + 4) as u32).to_le_bytes());
            }
            data.extend_from_slice(&p);
        }
        let mut pg = Vec::new();
        pg.extend_from_slice(&start.to_le_bytes());
        pg.extend_from_slice(&(data.len() as u64).to_le_bytes());
        pg.extend_from_slice(&data);
        pg.resize(4096, 0);
        pg
    }

    #[test]
    fn events_small_large_and_extended_deltas_are_read_with_their_times() {
        let big = vec![7u8; 200];
        let pg = page(
            1_000,
            &[
                (5, vec![1, 2, 3, 4]),
                (1 << 30, big.clone()),
                (3, vec![9; 8]),
            ],
        );
        let p = parse_page(&pg);
        assert!(!p.missed);
        assert_eq!(p.events.len(), 3);
        assert_eq!(p.events[0].ts, 1_005);
        assert_eq!(p.events[0].data, &[1, 2, 3, 4]);
        assert_eq!(p.events[1].ts, 1_005 + (1 << 30));
        assert_eq!(p.events[1].data, &big[..]);
        assert_eq!(p.events[2].ts, 1_008 + (1 << 30));
    }

    #[test]
    fn padding_ends_or_skips_and_damage_stops_the_parse() {
        let mut pg = page(0, &[(1, vec![1; 4])]);
        // A discarded event (padding with a delta and a length) after the first one.
        let extra: [u32; 3] = [0x1d | (2 << 5), 8, 0];
        let at = 16 + 8;
        for (k, w) in extra.iter().enumerate() {
            pg[at + 4 * k..at + 4 * k + 4].copy_from_slice(&w.to_le_bytes());
        }
        pg[at + 12..at + 16].copy_from_slice(&(1u32 | (4 << 5)).to_le_bytes());
        pg[at + 16..at + 20].copy_from_slice(&[5, 5, 5, 5]);
        pg[8..16].copy_from_slice(&((8 + 20) as u64).to_le_bytes());
        let p = parse_page(&pg);
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.events[1].ts, 7);
        // A length past the end and a short page: no panic, nothing made up.
        let mut bad = page(0, &[(1, vec![1; 200])]);
        bad[20..24].copy_from_slice(&10_000u32.to_le_bytes());
        assert!(parse_page(&bad).events.is_empty());
        assert!(parse_page(&[1, 2, 3]).events.is_empty());
        let mut missed = page(0, &[]);
        missed[8..16].copy_from_slice(&(1u64 << 31).to_le_bytes());
        assert!(parse_page(&missed).missed);
    }
}
