//! The block tracepoints' binary layout, read from their `format` files, and the decoding of
//! one event into a [`BlockEvent`].
//!
//! Field offsets move between kernel versions (6.x added `ioprio`, `rwbs` grew from 8 to 10
//! bytes), so nothing here is hard-coded: each event's `format` file says where its fields are.

use std::collections::HashMap;

/// Where one field of an event sits in its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the payload.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// An event's id and fields, from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// The event's name (`block_rq_issue`).
    pub name: String,
    /// `common_type` of its records.
    pub id: u16,
    /// Fields by name.
    pub fields: HashMap<String, Field>,
}

/// Parses a tracefs `format` file; `None` when it lacks the ID or a field line is malformed.
pub fn parse_format(text: &str) -> Option<EventFormat> {
    let mut name = String::new();
    let mut id = None;
    let mut fields = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("name:") {
            name = n.trim().to_string();
        } else if let Some(i) = line.strip_prefix("ID:") {
            id = i.trim().parse::<u16>().ok();
        } else if let Some(rest) = line.strip_prefix("field:") {
            let mut decl = "";
            let mut offset = None;
            let mut size = None;
            for part in rest.split(';') {
                let part = part.trim();
                if let Some(o) = part.strip_prefix("offset:") {
                    offset = o.trim().parse::<usize>().ok();
                } else if let Some(s) = part.strip_prefix("size:") {
                    size = s.trim().parse::<usize>().ok();
                } else if decl.is_empty() && !part.starts_with("signed:") {
                    decl = part;
                }
            }
            // `char rwbs[10]` -> rwbs; `__data_loc char[] cmd` -> cmd.
            let fname = decl
                .split_whitespace()
                .last()?
                .split('[')
                .next()?
                .to_string();
            fields.insert(
                fname,
                Field {
                    offset: offset?,
                    size: size?,
                },
            );
        }
    }
    Some(EventFormat {
        name,
        id: id?,
        fields,
    })
}

/// Issue or completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Sent to the driver (`block_rq_issue`) or queued to a bio-based device
    /// (`block_bio_queue`).
    Issue,
    /// Completed.
    Complete,
}

/// One decoded block event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEvent {
    /// Trace clock, ns.
    pub ts: u64,
    /// Issue or completion.
    pub phase: Phase,
    /// Kernel dev_t (major << 20 | minor).
    pub dev: u32,
    /// First 512-byte sector.
    pub sector: u64,
    /// Sectors (0 for a flush).
    pub nr_sector: u32,
    /// Bytes, when the event says (`block_rq_issue`); otherwise `nr_sector * 512`.
    pub bytes: u32,
    /// The `rwbs` letters (`W`, `RA`, `FWFS`, `FF`).
    pub rwbs: String,
    /// Issuing process name (issue events only).
    pub comm: String,
    /// Completion error (negative errno), 0 when fine.
    pub error: i32,
}

/// The layout of the two events a capture reads (issue and completion).
#[derive(Debug, Clone)]
pub struct Decoder {
    issue: EventFormat,
    complete: EventFormat,
}

fn get<'a>(f: &EventFormat, data: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let fd = f.fields.get(name)?;
    data.get(fd.offset..fd.offset + fd.size)
}

fn uint(f: &EventFormat, data: &[u8], name: &str) -> Option<u64> {
    let b = get(f, data, name)?;
    Some(match b.len() {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        8 => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        }
        _ => return None,
    })
}

fn text(f: &EventFormat, data: &[u8], name: &str) -> String {
    get(f, data, name).map_or_else(String::new, |b| {
        let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    })
}

impl Decoder {
    /// A decoder for an issue and a completion event; `Err` names a field the kernel's
    /// format lacks.
    pub fn new(issue: EventFormat, complete: EventFormat) -> Result<Decoder, String> {
        for (f, need) in [
            (&issue, &["dev", "sector", "nr_sector", "rwbs"][..]),
            (&complete, &["dev", "sector", "nr_sector", "rwbs"][..]),
        ] {
            for n in need {
                if !f.fields.contains_key(*n) {
                    return Err(format!("{} has no field '{n}'", f.name));
                }
            }
        }
        Ok(Decoder { issue, complete })
    }

    /// The ids of the two events.
    pub fn ids(&self) -> (u16, u16) {
        (self.issue.id, self.complete.id)
    }

    /// Decodes a payload; `None` for another event or one too short for its fields.
    pub fn decode(&self, ts: u64, data: &[u8]) -> Option<BlockEvent> {
        let ty = u16::from_le_bytes([*data.first()?, *data.get(1)?]);
        let (f, phase) = if ty == self.issue.id {
            (&self.issue, Phase::Issue)
        } else if ty == self.complete.id {
            (&self.complete, Phase::Complete)
        } else {
            return None;
        };
        let nr_sector = uint(f, data, "nr_sector")? as u32;
        Some(BlockEvent {
            ts,
            phase,
            dev: uint(f, data, "dev")? as u32,
            sector: uint(f, data, "sector")?,
            nr_sector,
            bytes: uint(f, data, "bytes").map_or(nr_sector.saturating_mul(512), |b| b as u32),
            rwbs: text(f, data, "rwbs"),
            comm: text(f, data, "comm"),
            error: uint(f, data, "error").map_or(0, |e| e as u32 as i32),
        })
    }
}

/// The operation and flags an `rwbs` string spells (the kernel's `blk_fill_rwbs`: an optional
/// `F` for a preflush, the op letter — `W`, `R`, `D` (discard, `DE` secure erase), `F` (a
/// flush), `N` (other) — then `F` FUA, `A` read-ahead, `S` sync, `M` meta).
///
/// A flush request is `FF` (the kernel sends `REQ_OP_FLUSH | REQ_PREFLUSH`): its preflush is
/// the flush itself, so a flush carries no preflush flag — as blktrace, whose one flush bit
/// cannot tell the two apart, records it (checked against blktrace in the VM).
pub fn parse_rwbs(rwbs: &str) -> (crate::trace::Op, u8) {
    use crate::trace::{Op, flags};
    let b = rwbs.as_bytes();
    let mut i = 0;
    let mut f = 0u8;
    // A leading F is a preflush unless it is the op itself (a lone "F", or "FF"/"FS" where
    // the second letter is no op letter... the kernel writes the preflush F first, then the
    // op letter, so "FW", "FR", "FD", "FN" and "FF" have a preflush).
    if b.len() >= 2 && b[0] == b'F' && matches!(b[1], b'W' | b'R' | b'D' | b'N' | b'F') {
        f |= flags::PREFLUSH;
        i = 1;
    }
    let op = match b.get(i) {
        Some(b'W') => Op::Write,
        Some(b'R') => Op::Read,
        Some(b'D') => {
            if b.get(i + 1) == Some(&b'E') {
                i += 1;
                Op::Other
            } else {
                Op::Discard
            }
        }
        Some(b'F') => Op::Flush,
        _ => Op::Other,
    };
    if op == Op::Flush {
        f &= !flags::PREFLUSH;
    }
    for c in b.iter().skip(i + 1) {
        f |= match c {
            b'F' => flags::FUA,
            b'A' => flags::READAHEAD,
            b'S' => flags::SYNC,
            b'M' => flags::META,
            _ => 0,
        };
    }
    (op, f)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::trace::{Op, flags};

    /// The `format` file of `block_rq_issue` on the 6.18 kernel these tests were written on.
    pub(crate) const RQ_ISSUE: &str = "name: block_rq_issue\nID: 2104\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\nprint fmt: \"%d,%d\"\n";
    /// `block_rq_complete`, same kernel.
    pub(crate) const RQ_COMPLETE: &str = "name: block_rq_complete\nID: 2107\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;\n";

    /// An issue payload as the kernel lays it out (the format above).
    pub(crate) fn issue_payload(
        dev: u32,
        sector: u64,
        bytes: u32,
        rwbs: &str,
        comm: &str,
    ) -> Vec<u8> {
        let mut p = vec![0u8; 64];
        p[0..2].copy_from_slice(&2104u16.to_le_bytes());
        p[8..12].copy_from_slice(&dev.to_le_bytes());
        p[16..24].copy_from_slice(&sector.to_le_bytes());
        p[24..28].copy_from_slice(&(bytes / 512).to_le_bytes());
        p[28..32].copy_from_slice(&bytes.to_le_bytes());
        p[34..34 + rwbs.len()].copy_from_slice(rwbs.as_bytes());
        p[44..44 + comm.len()].copy_from_slice(comm.as_bytes());
        p
    }

    /// A completion payload.
    pub(crate) fn complete_payload(dev: u32, sector: u64, bytes: u32, rwbs: &str) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0..2].copy_from_slice(&2107u16.to_le_bytes());
        p[8..12].copy_from_slice(&dev.to_le_bytes());
        p[16..24].copy_from_slice(&sector.to_le_bytes());
        p[24..28].copy_from_slice(&(bytes / 512).to_le_bytes());
        p[34..34 + rwbs.len()].copy_from_slice(rwbs.as_bytes());
        p
    }

    pub(crate) fn decoder() -> Decoder {
        Decoder::new(
            parse_format(RQ_ISSUE).unwrap(),
            parse_format(RQ_COMPLETE).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn format_files_give_ids_and_offsets() {
        let f = parse_format(RQ_ISSUE).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("block_rq_issue", 2104));
        assert_eq!(
            f.fields["rwbs"],
            Field {
                offset: 34,
                size: 10
            }
        );
        assert_eq!(
            f.fields["cmd"],
            Field {
                offset: 60,
                size: 4
            }
        );
        assert_eq!(f.fields["comm"].size, 16);
        assert!(parse_format("name: x\n").is_none());
    }

    #[test]
    fn events_decode_into_block_events() {
        let d = decoder();
        let dev = (7 << 20) | 3;
        let e = d
            .decode(5, &issue_payload(dev, 2048, 8192, "WS", "fio"))
            .unwrap();
        assert_eq!(
            (e.phase, e.dev, e.sector, e.nr_sector, e.bytes),
            (Phase::Issue, dev, 2048, 16, 8192)
        );
        assert_eq!((e.rwbs.as_str(), e.comm.as_str()), ("WS", "fio"));
        let c = d
            .decode(9, &complete_payload(dev, 2048, 8192, "WS"))
            .unwrap();
        assert_eq!((c.phase, c.bytes), (Phase::Complete, 8192));
        let mut other = issue_payload(dev, 0, 0, "R", "x");
        other[0] = 1;
        assert!(d.decode(0, &other).is_none());
        assert!(d.decode(0, &[0x38]).is_none());
        assert!(
            d.decode(0, &issue_payload(dev, 0, 0, "R", "x")[..20])
                .is_none()
        );
    }

    #[test]
    fn rwbs_letters_give_op_and_flags() {
        assert_eq!(parse_rwbs("R"), (Op::Read, 0));
        assert_eq!(parse_rwbs("RA"), (Op::Read, flags::READAHEAD));
        assert_eq!(parse_rwbs("WS"), (Op::Write, flags::SYNC));
        assert_eq!(
            parse_rwbs("FWFS"),
            (Op::Write, flags::PREFLUSH | flags::FUA | flags::SYNC)
        );
        assert_eq!(parse_rwbs("WFS"), (Op::Write, flags::FUA | flags::SYNC));
        assert_eq!(parse_rwbs("F"), (Op::Flush, 0));
        assert_eq!(
            parse_rwbs("FF"),
            (Op::Flush, 0),
            "a flush is not preflushed"
        );
        assert_eq!(parse_rwbs("D"), (Op::Discard, 0));
        assert_eq!(parse_rwbs("DE"), (Op::Other, 0));
        assert_eq!(parse_rwbs("N"), (Op::Other, 0));
        assert_eq!(parse_rwbs("WM"), (Op::Write, flags::META));
    }
}
