//! The verification data set: files of mixed sizes (4KiB to 4MiB, some not a multiple of a
//! block, spread over a few directories) with seeded, incompressible content, each with its
//! xxh3 checksum recorded when written — in memory and in a manifest outside the layout.
//!
//! A lab writes it before degrading a layout and reads every file back after each step that
//! could lose data (degraded, rebuilt, a second failure): a layout that says "rebuilt in 4 s"
//! has also shown that every file came back. Reads go to the disks (the page cache is dropped
//! first), so a copy that only survived in RAM does not count.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

pub use crate::sample::integrity::{BadFile, MAX_LISTED, Problem, Verification};

/// The data set's directory in the layout's root.
pub const DATA_DIR: &str = ".iolab-data";
/// Smallest file.
pub const MIN_FILE: u64 = 4 << 10;
/// Largest file.
pub const MAX_FILE: u64 = 4 << 20;
/// Directories the files are spread over.
const DIRS: usize = 8;
/// Generation and IO unit.
const CHUNK: usize = 1 << 20;

/// One file of the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFile {
    /// Path relative to the layout's root (`.iolab-data/d3/f00042`).
    pub path: String,
    /// Size, bytes.
    pub bytes: u64,
    /// Seed of its content.
    pub seed: u64,
    /// xxh3-64 of its content.
    pub xxh3: u64,
}

/// A data set written on a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSet {
    /// The layout's root (the mount point).
    pub root: PathBuf,
    /// Every file, in the order written.
    pub files: Vec<DataFile>,
    /// Total bytes.
    pub bytes: u64,
}

/// splitmix64 stream: fast, and every 8 bytes differ (nothing for btrfs compression or dedup
/// to fold). `chunk` is the 1MiB chunk of the file the buffer starts at.
pub fn fill_chunk(buf: &mut [u8], seed: u64, chunk: u64) {
    let mut x = seed ^ chunk.wrapping_mul(0x9E37_79B9_7F4A_7C15);
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

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The files of a set of `total` bytes: sizes spread evenly on a log scale from 4KiB to 4MiB
/// (as many small files as large ones, which is what filesystems find hard), a quarter of them
/// not a multiple of 4KiB; the last file takes the remainder so the set is exactly `total`
/// bytes (at least one 4KiB file). Paths are `DIR/dN/fNNNNN` under `dir`.
pub fn plan(total: u64, seed: u64, dir: &str) -> Vec<DataFile> {
    let total = total.max(MIN_FILE);
    let mut out = Vec::new();
    let mut left = total;
    let mut i = 0u64;
    let span = (MAX_FILE as f64 / MIN_FILE as f64).log2();
    while left > 0 {
        let r = mix(seed ^ i.wrapping_mul(0xA24B_AED4_963E_E407));
        let u = (r >> 11) as f64 / (1u64 << 53) as f64;
        let mut size = (MIN_FILE as f64 * (u * span).exp2()) as u64 & !4095;
        if r.trailing_zeros() >= 2 {
            size += (r >> 2) % 4096;
        }
        size = size.clamp(MIN_FILE, MAX_FILE);
        if left < size + MIN_FILE {
            size = left;
        }
        left -= size;
        out.push(DataFile {
            path: format!("{dir}/d{}/f{i:05}", i as usize % DIRS),
            bytes: size,
            seed: mix(seed.rotate_left(17) ^ i),
            xxh3: 0,
        });
        i += 1;
    }
    out
}

fn interrupted() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted")
}

impl DataSet {
    /// Writes a set of `total` bytes under `root/.iolab-data`, checksumming as it goes, then
    /// flushes the filesystem (syncfs) so the data is on the disks. The error names the file.
    pub fn write(root: &Path, total: u64, seed: u64) -> Result<DataSet, String> {
        let mut set = DataSet {
            root: root.to_path_buf(),
            files: Vec::new(),
            bytes: 0,
        };
        let (_, _, err) = set.append(total, seed, DATA_DIR, false);
        match err {
            Some(e) => Err(e),
            None => Ok(set),
        }
    }

    /// Writes `total` more bytes of files under `root/dir` (a directory of its own inside
    /// [`DATA_DIR`], `.iolab-data/degraded`) and adds them to the set: data written while a
    /// layout is degraded, to check that it survives the rebuild. With `sync_each` every file
    /// is fsynced before the next, so a write the layout fails is seen by the file it hit (a
    /// degraded btrfs raid5 takes `write` and fails the flush with EIO). Stops at the first
    /// file that cannot be written and keeps the files written before it: only data the
    /// layout acknowledged joins the set. Returns the files and bytes added, and why it
    /// stopped early.
    pub fn append(
        &mut self,
        total: u64,
        seed: u64,
        dir: &str,
        sync_each: bool,
    ) -> (u64, u64, Option<String>) {
        let planned = plan(total, seed, dir);
        let mut buf = vec![0u8; CHUNK];
        let (mut files, mut bytes) = (0u64, 0u64);
        for d in 0..DIRS.min(planned.len()) {
            let p = self.root.join(dir).join(format!("d{d}"));
            if let Err(e) = std::fs::create_dir_all(&p) {
                return (0, 0, Some(format!("cannot create {}: {e}", p.display())));
            }
        }
        for mut f in planned {
            if crate::signals::stop_requested() {
                return (files, bytes, Some("interrupted".into()));
            }
            let p = self.root.join(&f.path);
            match write_one(&p, &f, &mut buf, sync_each) {
                Ok(h) => f.xxh3 = h,
                Err(e) => {
                    let _ = std::fs::remove_file(&p);
                    return (
                        files,
                        bytes,
                        Some(format!("cannot write {}: {e}", p.display())),
                    );
                }
            }
            files += 1;
            bytes += f.bytes;
            self.bytes += f.bytes;
            self.files.push(f);
        }
        let flush = std::fs::File::open(self.root.join(dir)).and_then(|d| {
            rustix::fs::syncfs(&d)?;
            Ok(())
        });
        let err = flush
            .err()
            .map(|e| format!("cannot flush {}: {e}", self.root.display()));
        (files, bytes, err)
    }

    /// The bytes file `index` should hold at `offset..offset + len` (a test that damages a
    /// disk on purpose looks for them in the disk's backing file).
    pub fn expected(&self, index: usize, offset: u64, len: usize) -> Vec<u8> {
        let Some(f) = self.files.get(index) else {
            return Vec::new();
        };
        let end = (offset + len as u64).min(f.bytes);
        let mut out = Vec::with_capacity(len);
        let mut buf = vec![0u8; CHUNK];
        let mut pos = offset;
        while pos < end {
            let chunk = pos / CHUNK as u64;
            let start = chunk * CHUNK as u64;
            let n = (f.bytes - start).min(CHUNK as u64) as usize;
            fill_chunk(&mut buf[..n], f.seed, chunk);
            let from = (pos - start) as usize;
            let to = ((end - start) as usize).min(n);
            out.extend_from_slice(&buf[from..to]);
            pos = start + to as u64;
        }
        out
    }

    /// Where file `index`'s bytes are on the filesystem's device (the filesystem's extent map,
    /// FIEMAP): the lab maps them through md's layout to place a fault under data and to say
    /// what a struck range held. Extents past the file's end are cut at it.
    pub fn extents(&self, index: usize) -> std::io::Result<Vec<crate::sys::FileExtent>> {
        let f = self.files.get(index).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file in the data set")
        })?;
        let file = std::fs::File::open(self.root.join(&f.path))?;
        let mut out = crate::sys::fiemap(&file)?;
        out.retain(|e| e.logical < f.bytes);
        for e in &mut out {
            e.length = e.length.min(f.bytes - e.logical);
        }
        Ok(out)
    }

    /// The index of the file at `path` (relative to the layout's root, `./` allowed).
    pub fn index_of(&self, path: &str) -> Option<usize> {
        let p = path.trim_start_matches("./").trim_start_matches('/');
        self.files.iter().position(|f| f.path == p)
    }

    /// Reads file `index` back alone (its cached pages dropped first): `Ok` when intact, else
    /// what was wrong — what became of each file a fault's range held.
    pub fn check_one(&self, index: usize) -> Result<(), (Problem, String)> {
        let Some(f) = self.files.get(index) else {
            return Err((Problem::Missing, "not in the data set".into()));
        };
        let mut buf = vec![0u8; CHUNK];
        check_file(&self.root.join(&f.path), f, &mut buf)
    }

    /// The manifest: one line per file, `XXH3-HEX  BYTES  PATH` (path relative to the layout's
    /// root), after a comment saying so.
    pub fn manifest(&self) -> String {
        let mut s = format!(
            "# iolab data set: {} files, {} bytes; xxh3-64 (hex), size, path under the layout's root\n",
            self.files.len(),
            self.bytes
        );
        for f in &self.files {
            s.push_str(&format!("{:016x}  {}  {}\n", f.xxh3, f.bytes, f.path));
        }
        s
    }

    /// Writes the manifest to `path`.
    pub fn write_manifest(&self, path: &Path) -> std::io::Result<()> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(path, self.manifest())
    }

    /// Reads every file back and compares its size and checksum. Each file's pages are dropped
    /// from the cache before it is read (the caller drops the whole cache first as well).
    pub fn verify(&self) -> Verification {
        let t = Instant::now();
        let mut v = Verification::default();
        let mut buf = vec![0u8; CHUNK];
        for f in &self.files {
            if crate::signals::stop_requested() {
                break;
            }
            match check_file(&self.root.join(&f.path), f, &mut buf) {
                Ok(()) => {
                    v.files += 1;
                    v.bytes += f.bytes;
                }
                Err((problem, detail)) => {
                    match problem {
                        Problem::Mismatch => v.mismatched += 1,
                        Problem::ReadError => v.read_errors += 1,
                        Problem::Missing => v.missing += 1,
                    }
                    if v.bad_files.len() < MAX_LISTED {
                        v.bad_files.push(BadFile {
                            path: f.path.clone(),
                            problem,
                            detail,
                        });
                    }
                    v.bad_paths.push(f.path.clone());
                }
            }
        }
        v.seconds = t.elapsed().as_secs_f64();
        v
    }
}

/// Writes one file of the set; returns its checksum.
fn write_one(path: &Path, f: &DataFile, buf: &mut [u8], sync: bool) -> std::io::Result<u64> {
    let mut h = Xxh3::new();
    let mut out = std::fs::File::create(path)?;
    let mut done = 0u64;
    let mut chunk = 0u64;
    while done < f.bytes {
        if crate::signals::stop_requested() {
            return Err(interrupted());
        }
        let n = (f.bytes - done).min(CHUNK as u64) as usize;
        fill_chunk(&mut buf[..n], f.seed, chunk);
        h.update(&buf[..n]);
        out.write_all(&buf[..n])?;
        done += n as u64;
        chunk += 1;
    }
    if sync {
        out.sync_all()?;
    }
    Ok(h.digest())
}

fn check_file(path: &Path, f: &DataFile, buf: &mut [u8]) -> Result<(), (Problem, String)> {
    let mut file = match std::fs::File::open(path) {
        Ok(x) => x,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err((Problem::Missing, e.to_string()));
        }
        Err(e) => return Err((Problem::ReadError, format!("cannot open: {e}"))),
    };
    // Drop the file's clean cached pages so it is read from the disks (best effort: a failure
    // only means a cached read).
    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
    let mut h = Xxh3::new();
    let mut done = 0u64;
    loop {
        let n = match file.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((Problem::ReadError, format!("{e} at byte {done}"))),
        };
        h.update(&buf[..n]);
        done += n as u64;
    }
    if done != f.bytes {
        return Err((
            Problem::Mismatch,
            format!("{done} bytes, {} expected", f.bytes),
        ));
    }
    let got = h.digest();
    if got != f.xxh3 {
        return Err((
            Problem::Mismatch,
            format!("xxh3 {got:016x}, {:016x} expected", f.xxh3),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_is_exact_seeded_and_mixed() {
        let p = plan(100 << 20, 7, DATA_DIR);
        assert_eq!(p.iter().map(|f| f.bytes).sum::<u64>(), 100 << 20);
        assert_eq!(p, plan(100 << 20, 7, DATA_DIR));
        assert_ne!(p, plan(100 << 20, 8, DATA_DIR));
        assert!(p.iter().all(|f| (MIN_FILE..=MAX_FILE).contains(&f.bytes)));
        let small = p.iter().filter(|f| f.bytes < 64 << 10).count();
        let large = p.iter().filter(|f| f.bytes >= 1 << 20).count();
        assert!(small >= 10 && large >= 10, "{small} small, {large} large");
        assert!(p.iter().any(|f| f.bytes % 4096 != 0));
        let dirs: std::collections::BTreeSet<&str> = p
            .iter()
            .map(|f| &f.path[..f.path.rfind('/').unwrap()])
            .collect();
        assert_eq!(dirs.len(), DIRS);
        assert_eq!(plan(1000, 1, "x").len(), 1);
        assert_eq!(plan(1000, 1, "x")[0].bytes, MIN_FILE);
        assert!(plan(1000, 1, "x/y")[0].path.starts_with("x/y/d0/"));
    }

    #[test]
    fn writes_verifies_and_classifies_damage() {
        let d = tempfile::tempdir().unwrap();
        let set = DataSet::write(d.path(), 12 << 20, 42).unwrap();
        assert_eq!(set.bytes, 12 << 20);
        let v = set.verify();
        assert_eq!(
            (v.files, v.bytes, v.bad()),
            (set.files.len() as u64, 12 << 20, 0)
        );
        // What `expected` says is what is on disk, across a chunk boundary too.
        let big = set
            .files
            .iter()
            .position(|f| f.bytes > CHUNK as u64 + 100)
            .unwrap();
        let on_disk = std::fs::read(d.path().join(&set.files[big].path)).unwrap();
        assert_eq!(set.expected(big, 4096, 64), on_disk[4096..4160]);
        let at = CHUNK as u64 - 10;
        assert_eq!(
            set.expected(big, at, 20),
            on_disk[at as usize..at as usize + 20]
        );
        // One byte flipped, one file cut short, one removed.
        let mut data = on_disk.clone();
        data[5000] ^= 1;
        std::fs::write(d.path().join(&set.files[big].path), &data).unwrap();
        let short = &set.files[(big + 1) % set.files.len()];
        std::fs::write(d.path().join(&short.path), b"abc").unwrap();
        let gone = &set.files[(big + 2) % set.files.len()];
        std::fs::remove_file(d.path().join(&gone.path)).unwrap();
        let v = set.verify();
        assert_eq!((v.mismatched, v.missing, v.read_errors), (2, 1, 0), "{v:?}");
        assert_eq!(v.files, set.files.len() as u64 - 3);
        assert!(
            v.bad_files.iter().any(|b| b.detail.contains("3 bytes")),
            "{v:?}"
        );
        assert_eq!(v.bad_paths.len(), 3);
        // More files in a directory of their own join the set.
        let mut set = set;
        let before = set.files.len();
        let (n, b, err) = set.append(3 << 20, 43, &format!("{DATA_DIR}/degraded"), true);
        assert!(err.is_none(), "{err:?}");
        assert_eq!((set.files.len() - before) as u64, n);
        assert_eq!((b, set.bytes), (3 << 20, 15 << 20));
        assert!(
            set.files[before]
                .path
                .starts_with(".iolab-data/degraded/d0/")
        );
        assert_eq!(set.verify().bad(), 3);
        let m = set.manifest();
        assert_eq!(m.lines().count(), set.files.len() + 1);
        let f = &set.files[0];
        assert!(m.contains(&format!("{:016x}  {}  {}\n", f.xxh3, f.bytes, f.path)));
        assert_eq!(
            f.xxh3,
            xxhash_rust::xxh3::xxh3_64(&std::fs::read(d.path().join(&f.path)).unwrap())
        );
    }

    /// The extent map that places a fault under data covers every byte of a file
    /// once, from its first byte on, and a file read back alone says what is wrong with it.
    #[test]
    fn extents_cover_each_file_and_one_file_reads_back_alone() {
        let d = tempfile::tempdir().unwrap();
        let set = DataSet::write(d.path(), 6 << 20, 9).unwrap();
        let big = set.files.iter().position(|f| f.bytes > 1 << 20).unwrap();
        match set.extents(big) {
            Ok(ext) => {
                assert!(!ext.is_empty());
                assert_eq!(ext[0].logical, 0, "{ext:?}");
                let total: u64 = ext.iter().map(|e| e.length).sum();
                assert_eq!(total, set.files[big].bytes, "{ext:?}");
                for w in ext.windows(2) {
                    assert_eq!(w[0].logical + w[0].length, w[1].logical, "{ext:?}");
                }
                assert!(ext.iter().all(|e| e.physical > 0), "{ext:?}");
            }
            // A filesystem without FIEMAP (tmpfs) says so; the lab then cannot place a fault.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}"),
        }
        assert_eq!(
            set.index_of(&format!("./{}", set.files[big].path)),
            Some(big)
        );
        assert_eq!(set.index_of("nope"), None);
        assert!(set.check_one(big).is_ok());
        std::fs::write(d.path().join(&set.files[big].path), b"x").unwrap();
        assert_eq!(set.check_one(big).unwrap_err().0, Problem::Mismatch);
        assert!(set.extents(set.files.len()).is_err());
    }
}
