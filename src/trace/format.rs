//! The trace file format, version 1. All integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "IOLABTRC"
//! 8       2     version (1)
//! 10      2     record size in bytes (32)
//! 12      4     header length H in bytes
//! 16      H     header: UTF-8 JSON (TraceHeader: source, device, kernel, filesystem,
//!               duration_ns, ios, records_xxh3, processes, ...)
//! 16+H    32*N  N = header.ios records, in issue order (issue_ns never decreases):
//!   +0  u64  issue_ns    ns since the trace's start
//!   +8  u64  offset      bytes from the start of the device (or traced partition)
//!   +16 u64  latency_ns  issue to completion; u64::MAX: no completion seen
//!   +24 u32  len         bytes (0 for a flush)
//!   +28 u8   op          0 read, 1 write, 2 flush, 3 discard, 4 other
//!   +29 u8   flags       1 FUA, 2 sync, 4 preflush, 8 meta, 16 read-ahead
//!   +30 u16  process     index into header.processes; 0xFFFF: unknown
//! ```
//!
//! The file ends right after the last record: a longer or shorter file is refused, and so is
//! one whose records do not hash to `records_xxh3`. Readers accept unknown JSON fields (a
//! newer writer may add some within a version); a change to the record layout is a new
//! version, which older readers refuse by number.

use super::{Op, TraceIo};

/// The first eight bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"IOLABTRC";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// Bytes per record.
pub const RECORD_BYTES: usize = 32;
/// Bytes before the JSON header.
pub const PREAMBLE_BYTES: usize = 16;
/// Largest header accepted (a header is a few KiB; a huge one is damage, not data).
pub const MAX_HEADER_BYTES: u32 = 64 << 20;

/// The 16 bytes in front of a header of `header_len` bytes.
pub fn preamble(header_len: u32) -> [u8; PREAMBLE_BYTES] {
    let mut b = [0u8; PREAMBLE_BYTES];
    b[..8].copy_from_slice(MAGIC);
    b[8..10].copy_from_slice(&VERSION.to_le_bytes());
    b[10..12].copy_from_slice(&(RECORD_BYTES as u16).to_le_bytes());
    b[12..16].copy_from_slice(&header_len.to_le_bytes());
    b
}

/// One record's bytes.
pub fn encode(io: &TraceIo) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..8].copy_from_slice(&io.issue_ns.to_le_bytes());
    b[8..16].copy_from_slice(&io.offset.to_le_bytes());
    b[16..24].copy_from_slice(&io.latency_ns.to_le_bytes());
    b[24..28].copy_from_slice(&io.len.to_le_bytes());
    b[28] = io.op.code();
    b[29] = io.flags;
    b[30..32].copy_from_slice(&io.process.to_le_bytes());
    b
}

/// A record from its bytes; `Err` names what is wrong with it.
pub fn decode(b: &[u8; RECORD_BYTES]) -> Result<TraceIo, String> {
    let u64_at = |i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(a)
    };
    let op = Op::from_code(b[28]).ok_or_else(|| format!("unknown op code {}", b[28]))?;
    let flags = b[29];
    if flags & !super::flags::KNOWN != 0 {
        return Err(format!("unknown flag bits {flags:#04x}"));
    }
    Ok(TraceIo {
        issue_ns: u64_at(0),
        offset: u64_at(8),
        latency_ns: u64_at(16),
        len: u32::from_le_bytes([b[24], b[25], b[26], b[27]]),
        op,
        flags,
        process: u16::from_le_bytes([b[30], b[31]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::flags;

    #[test]
    fn a_record_round_trips_and_has_the_documented_layout() {
        let io = TraceIo {
            issue_ns: 0x0102_0304_0506_0708,
            offset: 4096,
            latency_ns: 250_000,
            len: 8192,
            op: Op::Write,
            flags: flags::FUA | flags::SYNC,
            process: 3,
        };
        let b = encode(&io);
        assert_eq!(b[0], 0x08, "issue_ns little-endian at 0");
        assert_eq!(&b[8..16], &4096u64.to_le_bytes());
        assert_eq!(&b[24..28], &8192u32.to_le_bytes());
        assert_eq!((b[28], b[29], b[30]), (1, 3, 3));
        assert_eq!(decode(&b).unwrap(), io);
        let mut bad = b;
        bad[28] = 9;
        assert!(decode(&bad).unwrap_err().contains("op code 9"));
        bad = b;
        bad[29] = 0x80;
        assert!(decode(&bad).unwrap_err().contains("flag bits"));
    }

    #[test]
    fn the_preamble_carries_magic_version_and_sizes() {
        let p = preamble(300);
        assert_eq!(&p[..8], b"IOLABTRC");
        assert_eq!(u16::from_le_bytes([p[8], p[9]]), VERSION);
        assert_eq!(u16::from_le_bytes([p[10], p[11]]), 32);
        assert_eq!(u32::from_le_bytes([p[12], p[13], p[14], p[15]]), 300);
    }
}
