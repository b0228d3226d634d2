//! The writer that runs when the power goes. First a data set is written and made durable
//! (every file fsync'd, the directory too, then `sync`). Then threads overwrite random blocks
//! of it in place with `O_DIRECT | O_DSYNC` (a database's pattern: each write is durable when
//! it returns, and in RAID5 each is a read-modify-write of one stripe), create files (most
//! fsync'd with their directory, some not) and delete old ones. Every operation that returned
//! durable is logged at once, with the block's checksum, to a file on the host's share: the cut
//! kills the VM, not the host, so the log holds exactly what was acknowledged before the cut.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use super::block::{self, BLOCK, Header};

/// What one cut's writer does and where.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The directory on the layout the files go in.
    pub data: PathBuf,
    /// The directory on the host's share the durable log goes in.
    pub logs: PathBuf,
    /// Names this cut's log files: `PREFIX-tN.log`.
    pub prefix: String,
    /// Written into every block: tells this cut's data from an earlier layout's.
    pub tag: u64,
    /// Seeds the threads' choices.
    pub seed: u64,
    /// Files of the data set written before the writer starts.
    pub files: u64,
    /// Blocks per file of that data set.
    pub blocks: u64,
    /// Writer threads (each owns the files whose number modulo this is its own).
    pub threads: u64,
}

/// The path of file number `id` in `data`.
pub fn file_path(data: &Path, id: u64) -> PathBuf {
    data.join(format!("f{id}"))
}

/// The file number of a name the writer gives (`f12` -> 12).
pub fn file_id(name: &str) -> Option<u64> {
    name.strip_prefix('f')?.parse().ok()
}

fn fsync_dir(d: &Path) -> std::io::Result<()> {
    File::open(d)?.sync_all()
}

/// Writes the data set (version 0 of every block) and makes it durable: each file fsync'd,
/// the directory fsync'd, then everything synced.
pub fn write_base(p: &Plan) -> std::io::Result<()> {
    std::fs::create_dir_all(&p.data)?;
    let mut buf = vec![0u8; p.blocks as usize * BLOCK];
    for f in 0..p.files {
        for (b, chunk) in buf.chunks_mut(BLOCK).enumerate() {
            block::fill(
                chunk,
                Header {
                    tag: p.tag,
                    file: f,
                    block: b as u64,
                    version: 0,
                },
            );
        }
        let mut file = File::create(file_path(&p.data, f))?;
        file.write_all(&buf)?;
        file.sync_all()?;
    }
    fsync_dir(&p.data)?;
    rustix::fs::sync();
    Ok(())
}

/// The writer threads, running until stopped (or until the power goes).
pub struct Running {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<u64, String>>>,
}

/// Starts the writer threads.
pub fn start(p: &Plan) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let threads = (0..p.threads)
        .map(|t| {
            let p = p.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut th = Thread::new(&p, t).map_err(|e| format!("writer thread {t}: {e}"))?;
                th.run(&stop).map_err(|e| {
                    // The host learns of it with the log: a writer that stopped early makes
                    // the cut a weaker test, and the judge says so.
                    let _ = th.log(&format!("E {e}\n"));
                    format!("writer thread {t}: {e}")
                })
            })
        })
        .collect();
    Running { stop, threads }
}

impl Running {
    /// Stops the threads; returns the durable operations they logged, or the first error.
    pub fn stop(self) -> Result<u64, String> {
        self.stop.store(true, Ordering::Relaxed);
        let mut n = 0;
        let mut err = None;
        for t in self.threads {
            match t.join() {
                Ok(Ok(k)) => n += k,
                Ok(Err(e)) => err = err.or(Some(e)),
                Err(_) => err = err.or(Some("a writer thread panicked".to_string())),
            }
        }
        err.map_or(Ok(n), Err)
    }
}

/// One writer thread's state.
struct Thread {
    p: Plan,
    t: u64,
    rng: Xoshiro256PlusPlus,
    log: File,
    /// Open base files this thread owns, by position in `own`.
    open: Vec<Option<File>>,
    /// Base files this thread owns.
    own: Vec<u64>,
    /// Files it created, oldest first.
    created: std::collections::VecDeque<u64>,
    next_id: u64,
    seq: u64,
    raw: Vec<u8>,
}

impl Thread {
    fn new(p: &Plan, t: u64) -> std::io::Result<Thread> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(p.logs.join(format!("{}-t{t}.log", p.prefix)))?;
        let own: Vec<u64> = (0..p.files).filter(|f| f % p.threads == t).collect();
        Ok(Thread {
            rng: Xoshiro256PlusPlus::seed_from_u64(
                p.seed ^ p.tag.rotate_left(17) ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            log,
            open: (0..own.len()).map(|_| None).collect(),
            own,
            created: std::collections::VecDeque::new(),
            next_id: p.files + t,
            seq: 0,
            raw: vec![0u8; 2 * BLOCK],
            p: p.clone(),
            t,
        })
    }

    /// One line to the host; a write the guest cannot log is an error (the judge would be
    /// blind to it).
    fn log(&mut self, line: &str) -> std::io::Result<()> {
        self.log.write_all(line.as_bytes())
    }

    fn version(&self) -> u64 {
        ((self.t + 1) << 40) | self.seq
    }

    fn pick(&mut self, n: u64) -> u64 {
        ((u128::from(self.rng.next_u64()) * u128::from(n)) >> 64) as u64
    }

    fn run(&mut self, stop: &AtomicBool) -> std::io::Result<u64> {
        let mut logged = 0;
        while !stop.load(Ordering::Relaxed) {
            self.seq += 1;
            let r = self.pick(100);
            logged += if r < 90 || self.own.is_empty() {
                self.overwrite()?
            } else if r < 97 {
                self.create()?
            } else {
                self.delete()?
            };
        }
        Ok(logged)
    }

    /// Base file `i` of `own`, opened for direct, synchronous writes (buffered and
    /// synchronous where the filesystem refuses O_DIRECT).
    fn base_file(&mut self, i: usize) -> std::io::Result<&File> {
        if self.open[i].is_none() {
            let path = file_path(&self.p.data, self.own[i]);
            let f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
                .open(&path)
                .or_else(|_| {
                    OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_DSYNC)
                        .open(&path)
                })?;
            self.open[i] = Some(f);
        }
        self.open[i]
            .as_ref()
            .ok_or_else(|| std::io::Error::other("no file"))
    }

    /// Overwrites one block of a base file in place; logged once the write returned.
    fn overwrite(&mut self) -> std::io::Result<u64> {
        if self.own.is_empty() {
            return Ok(0);
        }
        let i = self.pick(self.own.len() as u64) as usize;
        let b = self.pick(self.p.blocks);
        let h = Header {
            tag: self.p.tag,
            file: self.own[i],
            block: b,
            version: self.version(),
        };
        let off = self.raw.as_ptr().align_offset(BLOCK);
        let mut raw = std::mem::take(&mut self.raw);
        let buf = &mut raw[off..off + BLOCK];
        let sum = block::fill(buf, h);
        let r = self
            .base_file(i)
            .and_then(|f| f.write_all_at(buf, b * BLOCK as u64));
        self.raw = raw;
        r?;
        self.log(&format!("W {} {b} {} {sum:016x}\n", h.file, h.version))?;
        Ok(1)
    }

    /// Creates a file of 4 to 32 blocks; two times in three fsync'd with its directory and
    /// logged, else left to the page cache.
    fn create(&mut self) -> std::io::Result<u64> {
        let id = self.next_id;
        self.next_id += self.p.threads;
        let n = 4 + self.pick(29);
        let v = self.version();
        let mut buf = vec![0u8; n as usize * BLOCK];
        for (b, chunk) in buf.chunks_mut(BLOCK).enumerate() {
            block::fill(
                chunk,
                Header {
                    tag: self.p.tag,
                    file: id,
                    block: b as u64,
                    version: v,
                },
            );
        }
        let mut f = File::create(file_path(&self.p.data, id))?;
        f.write_all(&buf)?;
        self.created.push_back(id);
        if self.pick(3) == 0 {
            return Ok(0);
        }
        f.sync_all()?;
        fsync_dir(&self.p.data)?;
        self.log(&format!("C {id} {n} {v}\n"))?;
        Ok(1)
    }

    /// Deletes the oldest file this thread created (once it has a few), directory fsync'd;
    /// the intent is logged first (`d ID`), the durable deletion after (`D ID`).
    fn delete(&mut self) -> std::io::Result<u64> {
        if self.created.len() < 3 {
            return self.overwrite();
        }
        let Some(id) = self.created.pop_front() else {
            return Ok(0);
        };
        // Said before the unlink: a cut between the unlink and its log line may leave the
        // file gone, and the judge must not call a file being deleted a durable file lost.
        self.log(&format!("d {id}\n"))?;
        std::fs::remove_file(file_path(&self.p.data, id))?;
        fsync_dir(&self.p.data)?;
        self.log(&format!("D {id}\n"))?;
        Ok(1)
    }
}
