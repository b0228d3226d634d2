//! The writer's 4 KiB blocks describe themselves: a header naming the cut, the file, the block's
//! place in it and its version, a payload drawn from those, and a checksum of it all. Reading a
//! block back tells at once whether it is this block (and which version), zeros, another
//! block's data, or garbage — no list of every write is needed to judge it.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// Bytes per block.
pub const BLOCK: usize = 4096;
const MAGIC: &[u8; 8] = b"IOLABPC1";
const SUM_AT: usize = BLOCK - 8;

/// What a block says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The cut it was written for (tells data of an earlier layout on the same disks apart).
    pub tag: u64,
    /// The file's number.
    pub file: u64,
    /// The block's index in the file.
    pub block: u64,
    /// Its version: 0 in the data set written before the writer starts.
    pub version: u64,
}

/// A block read back, as judged by its contents alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// All zeros.
    Zero,
    /// Intact, with this header.
    Block(Header),
    /// Neither: torn, mixed or corrupt.
    Garbage,
}

fn put(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Fills `buf` (one block) with the block `h`; returns its checksum (the last 8 bytes).
pub fn fill(buf: &mut [u8], h: Header) -> u64 {
    buf[..8].copy_from_slice(MAGIC);
    put(buf, 8, h.tag);
    put(buf, 16, h.file);
    put(buf, 24, h.block);
    put(buf, 32, h.version);
    let seed = xxhash_rust::xxh3::xxh3_64(&buf[..40]);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    rng.fill_bytes(&mut buf[40..SUM_AT]);
    let sum = xxhash_rust::xxh3::xxh3_64(&buf[..SUM_AT]);
    put(buf, SUM_AT, sum);
    sum
}

/// The checksum a block carries (its last 8 bytes).
pub fn checksum(buf: &[u8]) -> u64 {
    get(buf, SUM_AT)
}

/// What `buf` (one block) holds.
pub fn see(buf: &[u8]) -> Seen {
    if buf.iter().all(|&b| b == 0) {
        return Seen::Zero;
    }
    if &buf[..8] != MAGIC || xxhash_rust::xxh3::xxh3_64(&buf[..SUM_AT]) != get(buf, SUM_AT) {
        return Seen::Garbage;
    }
    Seen::Block(Header {
        tag: get(buf, 8),
        file: get(buf, 16),
        block: get(buf, 24),
        version: get(buf, 32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_knows_itself_and_a_torn_one_does_not() {
        let h = Header {
            tag: 7,
            file: 3,
            block: 11,
            version: 42,
        };
        let mut b = vec![0u8; BLOCK];
        assert_eq!(see(&b), Seen::Zero);
        let sum = fill(&mut b, h);
        assert_eq!(checksum(&b), sum);
        assert_eq!(see(&b), Seen::Block(h));
        let mut other = vec![0u8; BLOCK];
        fill(&mut other, Header { version: 43, ..h });
        assert_ne!(b, other, "versions differ in their payload");
        // Half old, half new: what a torn write leaves.
        b[2048..].copy_from_slice(&other[2048..]);
        assert_eq!(see(&b), Seen::Garbage);
        // What parity rebuilt from stale data gives: a mix of blocks.
        let mut x = vec![0u8; BLOCK];
        for (i, v) in x.iter_mut().enumerate() {
            *v = other[i] ^ 0x5a;
        }
        assert_eq!(see(&x), Seen::Garbage);
    }
}
