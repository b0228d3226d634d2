//! Disks with a volatile write cache, for the power-cut lab: every write a virtual
//! disk completes is logged, in order, by qemu's `blklogwrites` driver (the dm-log-writes log
//! format) next to its disk file; after the cut the host rolls each disk back to a point of its
//! own that its cache model allows, from a copy of the disk taken before the boot.
//!
//! Why in qemu and not dm-log-writes in the guest: qemu writes a log entry before it tells the
//! guest the write completed, so every write the guest saw complete is in the log when the VM
//! is killed (dm-log-writes logs from a kernel thread after completion: a cut could lose the
//! log of a flushed write and the lab would blame the layout). A flush the guest sends is
//! logged after every write that completed before it (qemu logs a request when it completes,
//! and the guest sends a flush only for writes it saw complete), so "everything up to the last
//! flush" is what a disk that honours flushes must keep. virtio-blk has no FUA: the guest's
//! kernel turns a FUA write into a write and a flush, which the log shows as such.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use super::VmError;
use crate::sample::power::DiskRollback;
use crate::spec::lab::CacheModel;

/// The log's magic (`log_write_super.magic` of dm-log-writes and qemu's blklogwrites).
const MAGIC: u64 = 0x006a_7366_7773_6872;
/// Entry flags.
const FLUSH: u64 = 1;
const FUA: u64 = 2;
const DISCARD: u64 = 4;
const MARK: u64 = 8;
/// The log's sector (qemu's default `log-sector-size`), and the disks' (entries count in it).
const SECTOR: u64 = 512;
/// How many of its last flushes a disk that ignores flushes may have faked.
const FAKED_FLUSHES: usize = 8;

/// One logged request, in completion order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// First sector written (512 bytes).
    pub sector: u64,
    /// Sectors written (0 for a flush).
    pub sectors: u64,
    /// dm-log-writes flags: 1 flush, 2 FUA, 4 discard, 8 mark.
    pub flags: u64,
    /// Where the written data is in the log (a discard has none).
    pub data_at: u64,
}

impl Entry {
    /// A flush (a FUA write is one too: it is durable once it completed).
    pub fn is_barrier(&self) -> bool {
        self.flags & (FLUSH | FUA) != 0
    }

    /// A request that changed the disk's contents.
    pub fn writes(&self) -> bool {
        self.sectors > 0 && self.flags & MARK == 0
    }
}

/// Reads a disk's write log. It ends at the first entry not (or not wholly) written: qemu
/// writes each entry before it completes the guest's request, so what follows a hole was in
/// flight when the power went, not acknowledged.
pub fn read_log(path: &Path) -> Result<Vec<Entry>, VmError> {
    let mut f = File::open(path).map_err(|e| VmError::io("cannot open", path, e))?;
    let len = f
        .metadata()
        .map_err(|e| VmError::io("cannot stat", path, e))?
        .len();
    let mut head = [0u8; 32];
    let mut out = Vec::new();
    if len < SECTOR {
        return Ok(out);
    }
    f.read_exact(&mut head)
        .map_err(|e| VmError::io("cannot read", path, e))?;
    let magic = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
    if magic != 0 && magic != MAGIC {
        return Err(VmError::Tool(format!(
            "{} is not a write log (magic {magic:#x})",
            path.display()
        )));
    }
    let mut at = SECTOR;
    while at + SECTOR <= len {
        f.seek(SeekFrom::Start(at))
            .and_then(|_| f.read_exact(&mut head))
            .map_err(|e| VmError::io("cannot read", path, e))?;
        let word =
            |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        let (sector, sectors, flags) = (word(0), word(1), word(2));
        if flags & !(FLUSH | FUA | DISCARD | MARK) != 0 || (sectors == 0 && flags == 0) {
            break;
        }
        let data = if flags & DISCARD == 0 {
            sectors * SECTOR
        } else {
            0
        };
        if at + SECTOR + data > len {
            break;
        }
        out.push(Entry {
            sector,
            sectors,
            flags,
            data_at: at + SECTOR,
        });
        at += SECTOR + data;
    }
    Ok(out)
}

/// How many of `log`'s entries a disk under `model` keeps when the power goes (a prefix: the
/// disk's own point in time), drawn with `rng`.
pub fn keep(model: CacheModel, log: &[Entry], rng: &mut Xoshiro256PlusPlus) -> usize {
    let n = log.len();
    let pick = |rng: &mut Xoshiro256PlusPlus, lo: usize, hi: usize| {
        lo + ((u128::from(rng.next_u64()) * (hi - lo + 1) as u128) >> 64) as usize
    };
    match model {
        CacheModel::None => n,
        CacheModel::Volatile => {
            let after_barrier = log.iter().rposition(Entry::is_barrier).map_or(0, |i| i + 1);
            pick(rng, after_barrier, n)
        }
        CacheModel::IgnoresFlush => {
            let flushes: Vec<usize> = log
                .iter()
                .enumerate()
                .filter(|(_, e)| e.is_barrier())
                .map(|(i, _)| i)
                .collect();
            let last = &flushes[flushes.len().saturating_sub(FAKED_FLUSHES)..];
            if last.is_empty() {
                pick(rng, 0, n)
            } else {
                last[pick(rng, 0, last.len() - 1)]
            }
        }
    }
}

/// The disk files of one boot and their write logs: the copy each disk started the boot from
/// and the log of everything written to it since.
#[derive(Debug, Clone)]
pub struct Logged {
    /// The disk files qemu writes (`dN.img`).
    pub disks: Vec<PathBuf>,
}

impl Logged {
    /// The log of disk `i` (`dN.wlog`), which qemu's blklogwrites writes.
    pub fn log(&self, i: usize) -> PathBuf {
        self.disks[i].with_extension("wlog")
    }

    /// The copy of disk `i` taken before the boot (`dN.base`).
    pub fn base(&self, i: usize) -> PathBuf {
        self.disks[i].with_extension("base")
    }

    /// Before a boot: each disk's starting copy taken, its log emptied.
    pub fn before_boot(&self) -> Result<(), VmError> {
        for (i, d) in self.disks.iter().enumerate() {
            sparse_copy(d, &self.base(i))?;
            let log = self.log(i);
            File::create(&log).map_err(|e| VmError::io("cannot create", &log, e))?;
        }
        Ok(())
    }

    /// After a cut: each disk rebuilt from its starting copy and the part of its log its cache
    /// kept, drawn from `seed` (each disk its own point).
    pub fn roll_back(
        &self,
        model: CacheModel,
        seed: u64,
        names: &[String],
    ) -> Result<Vec<DiskRollback>, VmError> {
        let mut out = Vec::new();
        for (i, disk) in self.disks.iter().enumerate() {
            let log = read_log(&self.log(i))?;
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(
                seed ^ (i as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
            );
            let keep = keep(model, &log, &mut rng);
            let last_barrier = log.iter().rposition(Entry::is_barrier);
            let mut r = DiskRollback {
                disk: names.get(i).cloned().unwrap_or_else(|| format!("d{i}")),
                logged: log.len() as u64,
                flushes: log.iter().filter(|e| e.is_barrier()).count() as u64,
                after_last_flush: (log.len() - last_barrier.map_or(0, |b| b + 1)) as u64,
                ..DiskRollback::default()
            };
            for (j, e) in log.iter().enumerate().skip(keep) {
                if e.writes() {
                    r.dropped += 1;
                    if last_barrier.is_some_and(|b| j < b) {
                        r.dropped_flushed += 1;
                    }
                }
            }
            if keep < log.len() {
                let tmp = disk.with_extension("rolled");
                sparse_copy(&self.base(i), &tmp)?;
                apply(&self.log(i), &log[..keep], &tmp)?;
                std::fs::rename(&tmp, disk).map_err(|e| VmError::io("cannot replace", disk, e))?;
            }
            if r.logged > 0 {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Removes the starting copies and logs.
    pub fn remove(&self) {
        for i in 0..self.disks.len() {
            let _ = std::fs::remove_file(self.base(i));
            let _ = std::fs::remove_file(self.log(i));
        }
    }
}

/// Writes the logged requests onto `disk`, in order (a discard reads back as zeros).
fn apply(log_path: &Path, entries: &[Entry], disk: &Path) -> Result<(), VmError> {
    let log = File::open(log_path).map_err(|e| VmError::io("cannot open", log_path, e))?;
    let out = std::fs::OpenOptions::new()
        .write(true)
        .open(disk)
        .map_err(|e| VmError::io("cannot open", disk, e))?;
    let mut buf = Vec::new();
    for e in entries.iter().filter(|e| e.writes()) {
        let len = (e.sectors * SECTOR) as usize;
        buf.resize(len, 0);
        if e.flags & DISCARD == 0 {
            log.read_exact_at(&mut buf, e.data_at)
                .map_err(|err| VmError::io("cannot read", log_path, err))?;
        } else {
            buf.fill(0);
        }
        out.write_all_at(&buf, e.sector * SECTOR)
            .map_err(|err| VmError::io("cannot write", disk, err))?;
    }
    out.sync_data()
        .map_err(|e| VmError::io("cannot sync", disk, e))
}

/// Copies a file keeping its holes (the lab's disks are sparse: copying their zeros would
/// fill the host's disk).
pub fn sparse_copy(from: &Path, to: &Path) -> Result<(), VmError> {
    let src = File::open(from).map_err(|e| VmError::io("cannot open", from, e))?;
    let len = src
        .metadata()
        .map_err(|e| VmError::io("cannot stat", from, e))?
        .len();
    let dst = File::create(to).map_err(|e| VmError::io("cannot create", to, e))?;
    dst.set_len(len)
        .map_err(|e| VmError::io("cannot size", to, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0;
    while let Some((mut at, end)) = crate::sys::next_data(&src, pos).filter(|_| pos < len) {
        while at < end {
            let n = buf.len().min((end - at) as usize);
            src.read_exact_at(&mut buf[..n], at)
                .map_err(|e| VmError::io("cannot read", from, e))?;
            dst.write_all_at(&buf[..n], at)
                .map_err(|e| VmError::io("cannot write", to, e))?;
            at += n as u64;
        }
        pos = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sector: u64, sectors: u64, flags: u64) -> Entry {
        Entry {
            sector,
            sectors,
            flags,
            data_at: 0,
        }
    }

    /// A volatile cache never drops what a flush covered; one that ignores flushes does.
    #[test]
    fn the_cache_models_keep_what_they_promise() {
        let log = vec![
            entry(0, 8, 0),
            entry(8, 8, 0),
            entry(0, 0, FLUSH),
            entry(16, 8, 0),
            entry(24, 8, 0),
            entry(0, 0, FLUSH),
            entry(32, 8, 0),
            entry(40, 8, 0),
        ];
        for seed in 0..200 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let k = keep(CacheModel::Volatile, &log, &mut rng);
            assert!((6..=8).contains(&k), "seed {seed}: kept {k}");
            let k = keep(CacheModel::IgnoresFlush, &log, &mut rng);
            assert!(k == 2 || k == 5, "seed {seed}: kept {k}");
            assert_eq!(keep(CacheModel::None, &log, &mut rng), 8);
        }
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            seen.insert(keep(CacheModel::Volatile, &log, &mut rng));
        }
        assert_eq!(
            seen.len(),
            3,
            "every point after the flush is drawn: {seen:?}"
        );
    }

    /// A log written the way qemu's blklogwrites writes it reads back entry by entry, stops at
    /// the first entry not wholly there, and rolls a disk back to exactly its kept prefix.
    #[test]
    fn a_log_rolls_a_disk_back_to_its_prefix() {
        let d = tempfile::tempdir().unwrap();
        let disk = d.path().join("d0.img");
        std::fs::write(&disk, vec![0u8; 64 * 1024]).unwrap();
        let logged = Logged {
            disks: vec![disk.clone()],
        };
        logged.before_boot().unwrap();
        let mut log = vec![0u8; 512];
        log[..8].copy_from_slice(&MAGIC.to_le_bytes());
        let push = |log: &mut Vec<u8>, sector: u64, sectors: u64, flags: u64, byte: u8| {
            let mut h = vec![0u8; 512];
            for (i, v) in [sector, sectors, flags, 0].iter().enumerate() {
                h[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            log.extend_from_slice(&h);
            if flags & DISCARD == 0 {
                log.extend(std::iter::repeat_n(byte, (sectors * 512) as usize));
            }
        };
        push(&mut log, 0, 8, 0, 0xaa);
        push(&mut log, 0, 0, FLUSH, 0);
        push(&mut log, 8, 8, 0, 0xbb);
        push(&mut log, 0, 2, DISCARD, 0);
        let whole = log.len();
        push(&mut log, 16, 8, 0, 0xcc);
        log.truncate(whole + 512 + 100); // the last entry's data only partly written
        std::fs::write(logged.log(0), &log).unwrap();
        // What qemu wrote through: everything, the torn one included.
        let mut now = vec![0u8; 64 * 1024];
        now[..4096].fill(0xaa);
        now[4096..8192].fill(0xbb);
        now[..1024].fill(0);
        now[8192..12288].fill(0xcc);
        std::fs::write(&disk, &now).unwrap();
        let entries = read_log(&logged.log(0)).unwrap();
        assert_eq!(entries.len(), 4, "{entries:?}");
        // Keep up to the flush: the 0xbb write and the discard go, and so does the torn one.
        let r = logged
            .roll_back(CacheModel::IgnoresFlush, 1, &["/dev/vda".into()])
            .unwrap();
        assert_eq!(
            (
                r[0].logged,
                r[0].flushes,
                r[0].dropped,
                r[0].after_last_flush
            ),
            (4, 1, 2, 2)
        );
        let back = std::fs::read(&disk).unwrap();
        assert!(back[..4096].iter().all(|&b| b == 0xaa));
        assert!(
            back[4096..].iter().all(|&b| b == 0),
            "dropped writes are gone"
        );
        logged.remove();
        assert!(!logged.base(0).exists() && !logged.log(0).exists());
    }

    /// A sparse disk copies as sparse, with its data where it was.
    #[test]
    fn a_sparse_copy_keeps_data_and_holes() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        let f = File::create(&a).unwrap();
        f.set_len(64 << 20).unwrap();
        f.write_all_at(&[7u8; 4096], 32 << 20).unwrap();
        drop(f);
        sparse_copy(&a, &b).unwrap();
        let m = std::fs::metadata(&b).unwrap();
        assert_eq!(m.len(), 64 << 20);
        use std::os::unix::fs::MetadataExt;
        assert!(
            m.blocks() * 512 < 4 << 20,
            "copied as sparse: {} blocks",
            m.blocks()
        );
        let mut buf = [0u8; 4096];
        File::open(&b)
            .unwrap()
            .read_exact_at(&mut buf, 32 << 20)
            .unwrap();
        assert_eq!(buf, [7u8; 4096]);
    }
}
