//! Data the lab writes itself: a seeded, incompressible fill file written before degrading and
//! read back after degrading and after rebuilding — a lab that says "rebuilt in 4 s" has also
//! checked that every byte survived — and the small write/read smoke workload `iolab lab` runs
//! on each layout.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Name of the fill file in the layout's root.
pub const FILL_NAME: &str = ".iolab-fill";

const CHUNK: usize = 1 << 20;

/// A file of known content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fill {
    /// Where.
    pub path: PathBuf,
    /// How many bytes.
    pub bytes: u64,
    /// Seed of its content.
    pub seed: u64,
}

/// splitmix64: fast, and every 8 bytes differ (nothing for btrfs compression or dedup to fold).
fn fill_chunk(buf: &mut [u8], seed: u64, chunk_index: u64) {
    let mut x = seed ^ chunk_index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for w in buf.chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let b = z.to_le_bytes();
        w.copy_from_slice(&b[..w.len()]);
    }
}

/// Writes `bytes` of seeded data to `dir/name` and syncs it to the disks.
pub fn write_file(dir: &Path, name: &str, bytes: u64, seed: u64) -> std::io::Result<Fill> {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path)?;
    let mut buf = vec![0u8; CHUNK];
    let mut done = 0u64;
    let mut i = 0u64;
    while done < bytes {
        if crate::signals::stop_requested() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted",
            ));
        }
        let n = (bytes - done).min(CHUNK as u64) as usize;
        fill_chunk(&mut buf[..n], seed, i);
        f.write_all(&buf[..n])?;
        done += n as u64;
        i += 1;
    }
    f.sync_all()?;
    Ok(Fill { path, bytes, seed })
}

/// Drops the file's (clean, synced) pages from the page cache so reading it back reads the
/// disks — for this file only, without disturbing anyone else's cache.
fn evict(f: &std::fs::File) {
    use std::os::fd::AsRawFd;
    let _ = f.sync_all();
    // SAFETY: the descriptor is open for the duration of the call; fadvise only drops cache.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Reads a fill back and compares every byte; the error names the first bad offset.
pub fn verify(fill: &Fill) -> Result<(), String> {
    let mut f = std::fs::File::open(&fill.path)
        .map_err(|e| format!("cannot open {}: {e}", fill.path.display()))?;
    evict(&f);
    let mut want = vec![0u8; CHUNK];
    let mut got = vec![0u8; CHUNK];
    let mut done = 0u64;
    let mut i = 0u64;
    while done < fill.bytes {
        let n = (fill.bytes - done).min(CHUNK as u64) as usize;
        fill_chunk(&mut want[..n], fill.seed, i);
        f.read_exact(&mut got[..n])
            .map_err(|e| format!("cannot read {} at {done}: {e}", fill.path.display()))?;
        if want[..n] != got[..n] {
            let off = want[..n]
                .iter()
                .zip(&got[..n])
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(format!(
                "{} differs at byte {}",
                fill.path.display(),
                done + off as u64
            ));
        }
        done += n as u64;
        i += 1;
    }
    Ok(())
}

/// The smoke workload: write `bytes` of data, sync, read it back from the disks, compare,
/// delete. Proves the layout stores and returns data; the time it takes is the layout's
/// placeholder figure until the full workloads run here.
pub fn smoke(dir: &Path, bytes: u64) -> Result<(), String> {
    let f = write_file(dir, ".iolab-smoke", bytes, 0x5eed)
        .map_err(|e| format!("cannot write smoke file in {}: {e}", dir.display()))?;
    let r = verify(&f);
    let _ = std::fs::remove_file(&f.path);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_reads_back_and_corruption_is_found() {
        let d = tempfile::tempdir().unwrap();
        let f = write_file(d.path(), FILL_NAME, 3 * CHUNK as u64 + 123, 7).unwrap();
        assert_eq!(std::fs::metadata(&f.path).unwrap().len(), f.bytes);
        verify(&f).unwrap();
        // Flip one byte in the second chunk.
        let mut data = std::fs::read(&f.path).unwrap();
        data[CHUNK + 5] ^= 1;
        std::fs::write(&f.path, &data).unwrap();
        let e = verify(&f).unwrap_err();
        assert!(e.contains(&format!("byte {}", CHUNK + 5)), "{e}");
        smoke(d.path(), 100_000).unwrap();
        assert!(!d.path().join(".iolab-smoke").exists());
    }

    #[test]
    fn content_differs_by_seed_and_chunk() {
        let mut a = vec![0u8; 64];
        let mut b = vec![0u8; 64];
        fill_chunk(&mut a, 1, 0);
        fill_chunk(&mut b, 1, 1);
        assert_ne!(a, b);
        fill_chunk(&mut b, 2, 0);
        assert_ne!(a, b);
    }
}
