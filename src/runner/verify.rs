//! Data verification (`--verify`): every block written carries a header — a magic, its own
//! offset, a generation number, the run's seed — and an xxh3 checksum of the whole block; every
//! block read is checked against it and against the last generation written there.
//!
//! A mismatch is classified, because each points at a different culprit:
//! - `corrupt`: the checksum does not match (bits changed on the way or at rest);
//! - `misdirected`: the checksum matches but the block says it belongs elsewhere (a write
//!   landed at the wrong offset);
//! - `lost_write`: a valid block of an older generation (or another run) where a newer one was
//!   written (the device acknowledged a write it did not keep);
//! - `read_error`: the read itself failed (EIO).

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

pub use crate::sample::{Mismatch, MismatchKind, VerifySummary};

/// Bytes at the start of each block holding the header.
pub const HEADER_BYTES: usize = 40;
/// The smallest block size verify mode accepts.
pub const MIN_VERIFY_BLOCK: u64 = 512;
const MAGIC: &[u8; 8] = b"IOLABv01";

/// The last generation written to every block of a working set, shared by the worker threads
/// (each thread writes only its own blocks, so relaxed atomics suffice).
#[derive(Debug)]
pub struct VerifyTable {
    /// Seed written into every header: tells this run's blocks from another's.
    pub seed: u64,
    /// Block size the table is kept in.
    pub block_size: u64,
    /// First byte of the working set.
    pub offset: u64,
    generations: Vec<AtomicU32>,
}

/// What the state file holds besides the generations.
#[derive(Serialize, Deserialize)]
struct StateHeader {
    seed: u64,
    block_size: u64,
    offset: u64,
    blocks: u64,
}

impl VerifyTable {
    /// A table for `size` bytes from `offset`, nothing written yet.
    pub fn new(seed: u64, block_size: u64, offset: u64, size: u64) -> VerifyTable {
        let n = (size / block_size) as usize;
        VerifyTable {
            seed,
            block_size,
            offset,
            generations: (0..n).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Blocks covered.
    pub fn blocks(&self) -> u64 {
        self.generations.len() as u64
    }

    fn index(&self, offset: u64) -> Option<usize> {
        let rel = offset.checked_sub(self.offset)?;
        let i = (rel / self.block_size) as usize;
        (i < self.generations.len()).then_some(i)
    }

    /// The last generation written at `offset` (0: never).
    pub fn generation(&self, offset: u64) -> u32 {
        self.index(offset)
            .map_or(0, |i| self.generations[i].load(Ordering::Relaxed))
    }

    /// Takes the next generation for a write at `offset`.
    pub fn next_generation(&self, offset: u64) -> u32 {
        self.index(offset).map_or(0, |i| {
            self.generations[i].fetch_add(1, Ordering::Relaxed) + 1
        })
    }

    /// Writes the header and checksum into a block about to be written at `offset`.
    pub fn stamp(&self, buf: &mut [u8], offset: u64, generation: u32) {
        buf[0..8].copy_from_slice(MAGIC);
        buf[8..16].copy_from_slice(&offset.to_le_bytes());
        buf[16..24].copy_from_slice(&u64::from(generation).to_le_bytes());
        buf[24..32].copy_from_slice(&self.seed.to_le_bytes());
        let sum = checksum(buf);
        buf[32..40].copy_from_slice(&sum.to_le_bytes());
    }

    /// Checks a block read at `offset`; `None` when it is what was last written.
    pub fn check(&self, buf: &[u8], offset: u64) -> Option<Mismatch> {
        let expected = self.generation(offset);
        let mk = |kind, found_generation, found_offset| {
            Some(Mismatch {
                offset,
                kind,
                expected_generation: expected,
                found_generation,
                found_offset,
            })
        };
        let field =
            |r: std::ops::Range<usize>| u64::from_le_bytes(buf[r].try_into().unwrap_or([0; 8]));
        if buf.len() < HEADER_BYTES {
            return mk(MismatchKind::Corrupt, None, None);
        }
        let stored = field(32..40);
        let magic_ok = &buf[0..8] == MAGIC;
        if !magic_ok || checksum(buf) != stored {
            if expected == 0 && !magic_ok {
                // Never written by this run and not ours: nothing to check against.
                return None;
            }
            return mk(MismatchKind::Corrupt, None, None);
        }
        let (found_off, found_gen, found_seed) = (field(8..16), field(16..24), field(24..32));
        if found_off != offset {
            return mk(MismatchKind::Misdirected, Some(found_gen), Some(found_off));
        }
        if expected == 0 {
            return None;
        }
        if found_seed != self.seed || found_gen < u64::from(expected) {
            return mk(MismatchKind::LostWrite, Some(found_gen), None);
        }
        None
    }

    /// Saves the table next to a target so a later run can verify what this one wrote.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let h = StateHeader {
            seed: self.seed,
            block_size: self.block_size,
            offset: self.offset,
            blocks: self.blocks(),
        };
        let mut out = serde_json::to_vec(&h).map_err(std::io::Error::other)?;
        out.push(b'\n');
        for g in &self.generations {
            out.extend_from_slice(&g.load(Ordering::Relaxed).to_le_bytes());
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, out)?;
        std::fs::rename(tmp, path)
    }

    /// Loads a saved table.
    pub fn load(path: &Path) -> std::io::Result<VerifyTable> {
        let bad = |m: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {m}", path.display()),
            )
        };
        let data = std::fs::read(path)?;
        let nl = data
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| bad("not an iolab verify state file"))?;
        let h: StateHeader = serde_json::from_slice(&data[..nl])
            .map_err(|_| bad("not an iolab verify state file"))?;
        let body = &data[nl + 1..];
        if h.block_size == 0 || body.len() as u64 != h.blocks * 4 {
            return Err(bad("truncated verify state file"));
        }
        let generations = body
            .chunks_exact(4)
            .map(|c| AtomicU32::new(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        Ok(VerifyTable {
            seed: h.seed,
            block_size: h.block_size,
            offset: h.offset,
            generations,
        })
    }
}

fn checksum(buf: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&buf[..32]);
    h.update(&buf[40..]);
    h.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_every_kind_of_mismatch() {
        let t = VerifyTable::new(9, 4096, 0, 16 * 4096);
        let mut b = vec![7u8; 4096];
        let g = t.next_generation(4096);
        t.stamp(&mut b, 4096, g);
        assert_eq!(t.check(&b, 4096), None);
        // Corrupt: a flipped byte.
        let mut c = b.clone();
        c[1000] ^= 1;
        assert_eq!(t.check(&c, 4096).unwrap().kind, MismatchKind::Corrupt);
        // Misdirected: a good block read at another offset that was written.
        let g2 = t.next_generation(8192);
        let mut d = vec![1u8; 4096];
        t.stamp(&mut d, 8192, g2);
        let m = t.check(&b, 8192).unwrap();
        assert_eq!(
            (m.kind, m.found_offset),
            (MismatchKind::Misdirected, Some(4096))
        );
        // Lost write: the old copy after a newer generation was written.
        let old = b.clone();
        let g3 = t.next_generation(4096);
        t.stamp(&mut b, 4096, g3);
        assert_eq!(t.check(&b, 4096), None);
        let m = t.check(&old, 4096).unwrap();
        assert_eq!(
            (m.kind, m.expected_generation, m.found_generation),
            (MismatchKind::LostWrite, 2, Some(1))
        );
        // Never written and not ours: nothing to say. Written but zeroed: corrupt.
        assert_eq!(t.check(&[0u8; 4096], 3 * 4096), None);
        assert_eq!(
            t.check(&[0u8; 4096], 4096).unwrap().kind,
            MismatchKind::Corrupt
        );
    }

    #[test]
    fn state_round_trips() {
        let d = tempfile::tempdir().unwrap();
        let t = VerifyTable::new(5, 512, 1024, 10 * 512);
        t.next_generation(1024 + 3 * 512);
        t.next_generation(1024 + 3 * 512);
        let p = d.path().join("s");
        t.save(&p).unwrap();
        let back = VerifyTable::load(&p).unwrap();
        assert_eq!(back.seed, 5);
        assert_eq!(back.generation(1024 + 3 * 512), 2);
        assert_eq!(back.blocks(), 10);
        std::fs::write(&p, b"garbage").unwrap();
        assert!(VerifyTable::load(&p).is_err());
    }
}
