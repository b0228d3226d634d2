//! blktrace's binary output (`blktrace -d DEV -o NAME`: one `NAME.blktrace.N` file per CPU,
//! or one merged `blkparse -d` dump), parsed here from the documented record layout:
//!
//! ```text
//! struct blk_io_trace {            (48 bytes, the recording machine's byte order)
//!     u32 magic;     0x65617400 | version (7)
//!     u32 sequence;
//!     u64 time;      ns
//!     u64 sector;
//!     u32 bytes;
//!     u32 action;    low 16 bits: what (1 queue ... 7 issue, 8 complete); bit 8: a cgroup id
//!                    leads the payload; high 16 bits: category (read 1<<0, write 1<<1,
//!                    flush 1<<2, sync 1<<3, fs 1<<8, pc 1<<9, notify 1<<10, ahead 1<<11,
//!                    meta 1<<12, discard 1<<13, fua 1<<15)
//!     u32 pid;
//!     u32 device;    kernel dev_t (major << 20 | minor)
//!     u32 cpu;
//!     u16 error;
//!     u16 pdu_len;   payload bytes after the record (a notify's process name)
//! };
//! ```
//!
//! An IO is a `D` (issue, what 7) paired with the next `C` (complete, what 8) at its sector,
//! as blkparse pairs them; process names come from the `notify` records (what 0 with the
//! notify category), which map pids to names.

use std::collections::{HashMap, VecDeque};

use super::{NO_COMPLETION, NO_PROCESS, Op, Trace, TraceError, TraceHeader, TraceIo, flags};

/// The magic of every record, without its version byte.
pub const MAGIC: u32 = 0x6561_7400;
/// The record version this parser reads.
pub const VERSION: u32 = 7;
/// Bytes per record, before its payload.
pub const RECORD: usize = 48;

const TA_ISSUE: u32 = 7;
const TA_COMPLETE: u32 = 8;
const TA_CGROUP: u32 = 1 << 8;
const TN_PROCESS: u32 = 0;
const TC_READ: u32 = 1 << 0;
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_SYNC: u32 = 1 << 3;
const TC_PC: u32 = 1 << 9;
const TC_NOTIFY: u32 = 1 << 10;
const TC_AHEAD: u32 = 1 << 11;
const TC_META: u32 = 1 << 12;
const TC_DISCARD: u32 = 1 << 13;
const TC_FUA: u32 = 1 << 15;

/// One record, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// ns, on the recording machine's clock.
    pub time: u64,
    /// 512-byte sector.
    pub sector: u64,
    /// Bytes.
    pub bytes: u32,
    /// What happened and its category bits.
    pub action: u32,
    /// Process id.
    pub pid: u32,
    /// Kernel dev_t.
    pub device: u32,
    /// The payload.
    pub pdu: Vec<u8>,
}

/// Encodes a record the way the kernel writes it (little-endian), for tests and fixtures.
pub fn encode(r: &Record) -> Vec<u8> {
    let mut b = Vec::with_capacity(RECORD + r.pdu.len());
    b.extend_from_slice(&(MAGIC | VERSION).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&r.time.to_le_bytes());
    b.extend_from_slice(&r.sector.to_le_bytes());
    b.extend_from_slice(&r.bytes.to_le_bytes());
    b.extend_from_slice(&r.action.to_le_bytes());
    b.extend_from_slice(&r.pid.to_le_bytes());
    b.extend_from_slice(&r.device.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(r.pdu.len() as u16).to_le_bytes());
    b.extend_from_slice(&r.pdu);
    b
}

/// Decodes every record of one file (either byte order).
pub fn parse_records(bytes: &[u8], name: &str) -> Result<Vec<Record>, TraceError> {
    let err = |at: usize, why: String| TraceError::Import {
        at: format!("{name} byte {at}"),
        why,
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(r) = bytes.get(i..i + RECORD) else {
            return Err(err(
                i,
                format!(
                    "a record cut off after {} of {RECORD} bytes (the file is truncated)",
                    bytes.len() - i
                ),
            ));
        };
        let le = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
        let be = u32::from_be_bytes([r[0], r[1], r[2], r[3]]);
        let big = if le & 0xffff_ff00 == MAGIC {
            false
        } else if be & 0xffff_ff00 == MAGIC {
            true
        } else {
            return Err(err(
                i,
                "no blktrace magic: not a blktrace file (give the NAME.blktrace.N files blktrace wrote)"
                    .into(),
            ));
        };
        let u32_at = |k: usize| {
            let a = [r[k], r[k + 1], r[k + 2], r[k + 3]];
            if big {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let u64_at = |k: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&r[k..k + 8]);
            if big {
                u64::from_be_bytes(a)
            } else {
                u64::from_le_bytes(a)
            }
        };
        let version = (if big { be } else { le }) & 0xff;
        if version != VERSION {
            return Err(err(
                i,
                format!("blktrace record version {version}; iolab reads version {VERSION}"),
            ));
        }
        let pdu_len = usize::from(if big {
            u16::from_be_bytes([r[46], r[47]])
        } else {
            u16::from_le_bytes([r[46], r[47]])
        });
        let pdu = bytes.get(i + RECORD..i + RECORD + pdu_len).ok_or_else(|| {
            err(
                i,
                format!("a {pdu_len}-byte payload runs past the end (the file is truncated)"),
            )
        })?;
        out.push(Record {
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            pdu: pdu.to_vec(),
        });
        i += RECORD + pdu_len;
    }
    Ok(out)
}

fn op_and_flags(category: u32, bytes: u32) -> (Op, u8) {
    let mut f = 0u8;
    for (bit, flag) in [
        (TC_SYNC, flags::SYNC),
        (TC_FUA, flags::FUA),
        (TC_META, flags::META),
        (TC_AHEAD, flags::READAHEAD),
    ] {
        if category & bit != 0 {
            f |= flag;
        }
    }
    let op = if category & TC_DISCARD != 0 {
        Op::Discard
    } else if category & TC_FLUSH != 0 && bytes == 0 {
        Op::Flush
    } else if category & TC_WRITE != 0 {
        if category & TC_FLUSH != 0 {
            f |= flags::PREFLUSH;
        }
        Op::Write
    } else if category & TC_READ != 0 || bytes > 0 {
        Op::Read
    } else {
        Op::Other
    };
    (op, f)
}

/// The device numbers the IO records (not the tracer's notify records) are of: at most one,
/// since a trace is one device (`first`, the first file's name, is where an error points).
fn device_of(recs: &[Record], first: &str) -> Result<Vec<u32>, TraceError> {
    let mut devices: Vec<u32> = recs
        .iter()
        .filter(|r| (r.action >> 16) & TC_NOTIFY == 0)
        .map(|r| r.device)
        .collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.len() > 1 {
        return Err(TraceError::Import {
            at: first.to_string(),
            why: format!(
                "IOs of {} devices ({}); a trace is one device: give the files of one blktrace -d",
                devices.len(),
                devices
                    .iter()
                    .map(|d| format!("{}:{}", d >> 20, d & 0xfffff))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(devices)
}

/// The index in `processes` of the process `pid` is named in the notify records (added on
/// first sight), or [`NO_PROCESS`] when it is unnamed or the table is full.
fn process_index(names: &HashMap<u32, String>, processes: &mut Vec<String>, pid: u32) -> u16 {
    match names.get(&pid) {
        Some(n) => match processes.iter().position(|p| p == n) {
            Some(i) => i as u16,
            None if processes.len() < usize::from(NO_PROCESS) => {
                processes.push(n.clone());
                (processes.len() - 1) as u16
            }
            None => NO_PROCESS,
        },
        None => NO_PROCESS,
    }
}

/// Imports blktrace files (one per CPU) of one device into a trace.
pub fn import(files: &[(String, Vec<u8>)]) -> Result<Trace, TraceError> {
    let mut recs = Vec::new();
    for (name, bytes) in files {
        recs.extend(parse_records(bytes, name)?);
    }
    let first = files.first().map_or_else(String::new, |f| f.0.clone());
    recs.sort_by_key(|r| r.time);
    let devices = device_of(&recs, &first)?;
    // Time zero is the first IO event (notify records carry the tracer's own times).
    let t0 = recs
        .iter()
        .find(|r| (r.action >> 16) & TC_NOTIFY == 0)
        .map_or(0, |r| r.time);
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut processes: Vec<String> = Vec::new();
    let mut ios: Vec<TraceIo> = Vec::new();
    let mut open: HashMap<(u64, Op), VecDeque<usize>> = HashMap::new();
    let mut orphans = 0u64;
    for r in &recs {
        let what = r.action & 0xffff & !TA_CGROUP;
        let category = r.action >> 16;
        let pdu = if r.action & TA_CGROUP != 0 {
            r.pdu.get(8..).unwrap_or(&[])
        } else {
            &r.pdu[..]
        };
        if category & TC_NOTIFY != 0 {
            if what == TN_PROCESS {
                let end = pdu.iter().position(|c| *c == 0).unwrap_or(pdu.len());
                names.insert(r.pid, String::from_utf8_lossy(&pdu[..end]).into_owned());
            }
            continue;
        }
        if category & TC_PC != 0 || !(what == TA_ISSUE || what == TA_COMPLETE) {
            continue;
        }
        let (op, f) = op_and_flags(category, r.bytes);
        let t = r.time.saturating_sub(t0);
        if what == TA_ISSUE {
            let process = process_index(&names, &mut processes, r.pid);
            open.entry((r.sector, op)).or_default().push_back(ios.len());
            ios.push(TraceIo {
                issue_ns: t,
                offset: r.sector.saturating_mul(512),
                latency_ns: NO_COMPLETION,
                len: r.bytes,
                op,
                flags: f,
                process,
            });
        } else if let Some(i) = open.get_mut(&(r.sector, op)).and_then(|q| {
            // Two requests in flight at one sector complete in either order: the one of
            // this completion's size first, else the oldest.
            let k = q.iter().position(|&i| ios[i].len == r.bytes).unwrap_or(0);
            q.remove(k)
        }) {
            ios[i].latency_ns = t.saturating_sub(ios[i].issue_ns);
        } else {
            orphans += 1;
        }
    }
    let unmatched = ios.iter().filter(|i| i.latency_ns == NO_COMPLETION).count() as u64;
    let last = recs.last().map_or(0, |r| r.time.saturating_sub(t0));
    let mut notes = Vec::new();
    if orphans > 0 {
        notes.push(format!(
            "{orphans} completions of IOs issued before the trace began were left out"
        ));
    }
    let dev = devices
        .first()
        .map(|d| format!("{}:{}", d >> 20, d & 0xfffff));
    Ok(Trace {
        header: TraceHeader {
            source: "blktrace".into(),
            target: first,
            device: dev.map(|devnum| super::TraceDevice {
                name: devnum.clone(),
                devnum,
                ..Default::default()
            }),
            duration_ns: last,
            ios: ios.len() as u64,
            processes,
            unmatched,
            notes,
            ..Default::default()
        },
        ios,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const DEV: u32 = (8 << 20) | 16;

    pub(crate) fn rec(time: u64, what: u32, cat: u32, sector: u64, bytes: u32, pid: u32) -> Record {
        Record {
            time,
            sector,
            bytes,
            action: what | (cat << 16),
            pid,
            device: DEV,
            pdu: Vec::new(),
        }
    }

    pub(crate) fn notify(pid: u32, name: &str) -> Record {
        let mut pdu = name.as_bytes().to_vec();
        pdu.push(0);
        Record {
            time: 0,
            sector: 0,
            bytes: 0,
            action: TN_PROCESS | (TC_NOTIFY << 16),
            pid,
            device: DEV,
            pdu,
        }
    }

    /// Two per-CPU files of a small blktrace: a process name, a queue (ignored), a read and a
    /// FUA write issued and completed, a flush, a discard, an issue never completed.
    pub(crate) fn two_cpu_files() -> Vec<(String, Vec<u8>)> {
        let fs = 1 << 8;
        let cpu0 = [
            notify(42, "postgres"),
            rec(1_000, 1, TC_READ | fs, 2048, 8192, 42),
            rec(1_100, TA_ISSUE, TC_READ | fs, 2048, 8192, 42),
            rec(
                2_000,
                TA_ISSUE,
                TC_WRITE | TC_SYNC | TC_FUA | fs,
                4096,
                4096,
                42,
            ),
            rec(5_000, TA_ISSUE, TC_FLUSH | fs, 0, 0, 42),
            rec(9_000, TA_ISSUE, TC_WRITE | fs, 100, 512, 42),
        ];
        let cpu1 = [
            rec(1_600, TA_COMPLETE, TC_READ | fs, 2048, 8192, 0),
            rec(
                2_300,
                TA_COMPLETE,
                TC_WRITE | TC_SYNC | TC_FUA | fs,
                4096,
                4096,
                0,
            ),
            rec(5_400, TA_COMPLETE, TC_FLUSH | fs, 0, 0, 0),
            rec(
                6_000,
                TA_ISSUE,
                TC_DISCARD | TC_WRITE | fs,
                8192,
                1 << 20,
                42,
            ),
            rec(
                7_000,
                TA_COMPLETE,
                TC_DISCARD | TC_WRITE | fs,
                8192,
                1 << 20,
                0,
            ),
        ];
        [("t.blktrace.0", &cpu0[..]), ("t.blktrace.1", &cpu1[..])]
            .iter()
            .map(|(n, rs)| (n.to_string(), rs.iter().flat_map(encode).collect()))
            .collect()
    }

    #[test]
    fn per_cpu_files_merge_into_paired_ios() {
        let t = import(&two_cpu_files()).unwrap();
        let got: Vec<(u64, Op, u64, u32, u64)> = t
            .ios
            .iter()
            .map(|i| (i.issue_ns, i.op, i.offset, i.len, i.latency_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (100, Op::Read, 2048 * 512, 8192, 500),
                (1_000, Op::Write, 4096 * 512, 4096, 300),
                (4_000, Op::Flush, 0, 0, 400),
                (5_000, Op::Discard, 8192 * 512, 1 << 20, 1_000),
                (8_000, Op::Write, 100 * 512, 512, NO_COMPLETION),
            ]
        );
        assert_eq!(t.ios[1].flags, flags::SYNC | flags::FUA);
        assert_eq!(t.header.processes, vec!["postgres"]);
        assert_eq!(t.ios[0].process, 0);
        assert_eq!(t.header.unmatched, 1);
        assert_eq!(t.header.device.unwrap().devnum, "8:16");
    }

    /// A 128k and an 8k read in flight at one sector, the 8k done first: each IO
    /// gets its own completion time.
    #[test]
    fn requests_at_one_sector_pair_by_size() {
        let fs = 1 << 8;
        let recs = [
            rec(100, TA_ISSUE, TC_READ | fs, 64, 128 << 10, 1),
            rec(110, TA_ISSUE, TC_READ | fs, 64, 8 << 10, 1),
            rec(120, TA_COMPLETE, TC_READ | fs, 64, 8 << 10, 0),
            rec(200, TA_COMPLETE, TC_READ | fs, 64, 128 << 10, 0),
        ];
        let t = import(&[(
            "t.blktrace.0".into(),
            recs.iter().flat_map(encode).collect(),
        )])
        .unwrap();
        let got: Vec<(u32, u64)> = t.ios.iter().map(|i| (i.len, i.latency_ns)).collect();
        assert_eq!(got, vec![(128 << 10, 100), (8 << 10, 10)]);
    }

    #[test]
    fn big_endian_files_read_the_same() {
        let r = rec(10, TA_ISSUE, TC_READ, 8, 4096, 1);
        let le = encode(&r);
        let mut be = Vec::new();
        for (k, w) in [
            (0, 4),
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 4),
            (28, 4),
            (32, 4),
            (36, 4),
            (40, 4),
            (44, 2),
            (46, 2),
        ] {
            let mut f = le[k..k + w].to_vec();
            f.reverse();
            be.extend(f);
        }
        assert_eq!(
            parse_records(&be, "b").unwrap(),
            parse_records(&le, "l").unwrap()
        );
    }

    #[test]
    fn damaged_files_are_refused_with_where() {
        let mut f = two_cpu_files().remove(0).1;
        f.truncate(f.len() - 10);
        let e = import(&[("t.blktrace.0".into(), f)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.blktrace.0 byte") && e.contains("truncated"),
            "{e}"
        );
        let e = parse_records(&[0u8; 48], "z").unwrap_err().to_string();
        assert!(e.contains("no blktrace magic"), "{e}");
        let mut v = encode(&rec(0, 7, 1, 0, 0, 0));
        v[0] = 6;
        assert!(
            parse_records(&v, "v")
                .unwrap_err()
                .to_string()
                .contains("version 6")
        );
        let mut two = two_cpu_files();
        let mut other = rec(1, TA_ISSUE, TC_READ, 0, 512, 1);
        other.device = 1 << 20;
        two[1].1.extend(encode(&other));
        assert!(import(&two).unwrap_err().to_string().contains("2 devices"));
    }
}
