//! The small-file workload: bonnie++ `-n` phases, each timed on its own with per-operation
//! latency, over many threads that each own their directories.
//!
//! Phases, in order: `create` (create + write + optional fsync, by name order), `stat`,
//! `read_file` (open, read whole, close), `delete`; then `rand_create`, `rand_stat`,
//! `rand_delete` over random permutations. Every phase must touch every file exactly once;
//! anything else is an error, and every file and directory made is removed whatever happens.
//!
//! With `fsync`, each file is fsynced after it is written (bonnie++ `-b`); with `fsync_dir` as
//! well, its directory is fsynced after each create and each delete, which is what makes a new
//! or removed name durable (what a careful mail server does).
//!
//! Syscalls go through directory file descriptors (`openat`, `fstatat`, `unlinkat`) with
//! names built once, so the measured cost is the filesystem's, not path walking.

use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::sample::{IoAccounting, OpSample, SeriesPoint, TrialSample};
use crate::spec::SmallFileWorkload;

use super::data::DataGen;
use super::io::Control;
use super::offsets::thread_seed;

/// The phases, in the order they run.
pub const PHASES: [&str; 7] = [
    "create",
    "stat",
    "read_file",
    "delete",
    "rand_create",
    "rand_stat",
    "rand_delete",
];

/// Why the small-file workload failed.
#[derive(Debug, thiserror::Error)]
pub enum SmallFileError {
    /// A system call failed on a file.
    #[error("{phase}: {call} {path}: {source}{}", hint(.source))]
    Io {
        /// The phase.
        phase: &'static str,
        /// The call (`create`, `write`, `fsync`, `stat`, `read`, `unlink`, `mkdir`).
        call: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A read returned fewer bytes than the file holds.
    #[error("{phase}: short read of {path}: {got} of {want} bytes")]
    Short {
        /// The phase.
        phase: &'static str,
        /// The file.
        path: PathBuf,
        /// Bytes read.
        got: u64,
        /// Bytes expected.
        want: u64,
    },
    /// A phase did not touch every file exactly once (a bug, reported rather than hidden).
    #[error("{phase}: counted {got} operations for {want} files")]
    Count {
        /// The phase.
        phase: &'static str,
        /// Operations counted.
        got: u64,
        /// Files.
        want: u64,
    },
}

fn hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => " (disk full: lower the file count or sizes)",
        Some(libc::EMFILE | libc::ENFILE) => " (too many open files: raise ulimit -n)",
        Some(libc::EACCES | libc::EPERM) => " (no permission in the target directory)",
        Some(libc::EDQUOT) => " (quota exceeded)",
        _ => "",
    }
}

/// The size of file `i`: uniform in [min, max], a pure function of the seed and the index.
pub fn file_size(w: &SmallFileWorkload, i: u64) -> u64 {
    let span = w.max_size - w.min_size + 1;
    let mut x = w.seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64 finalizer: a well-mixed hash of (seed, i).
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    w.min_size + ((u128::from(x) * u128::from(span)) >> 64) as u64
}

/// Removes the workload's tree on drop, whatever happened.
struct Tree {
    root: PathBuf,
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

struct ThreadFiles {
    dir_fds: Vec<OwnedFd>,
    dir_paths: Vec<PathBuf>,
    /// (dir index in dir_fds, name, size, global index)
    files: Vec<(usize, CString, u64)>,
}

fn open_dir(p: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    Ok(rustix::fs::open(
        p,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Per-thread measurements of one phase.
struct PhaseOut {
    sample: OpSample,
    end_ns: u64,
    series: Vec<SeriesPoint>,
}

impl PhaseOut {
    /// Counts one finished operation of `bytes` that took `lat_ns`, in the second of the phase
    /// it finished in (`rel_ns` after the phase started).
    fn record(&mut self, bytes: u64, lat_ns: u64, rel_ns: u64) {
        self.sample.count += 1;
        self.sample.bytes += bytes;
        self.sample.latency.record(lat_ns);
        let sec = (rel_ns / 1_000_000_000) as usize;
        if self.series.len() <= sec {
            self.series.resize(sec + 1, SeriesPoint::default());
        }
        self.series[sec].ops += 1;
        self.series[sec].bytes += bytes;
    }
}

/// Makes the trial's directory tree (`dirs` directories, each owned by one thread) and names
/// every file, spread over the directories as bonnie++ does.
fn lay_out_tree(
    w: &SmallFileWorkload,
    dir: &Path,
    trial: u32,
) -> Result<(Tree, Vec<ThreadFiles>), SmallFileError> {
    let root = dir.join(format!("iolab-smallfile-{}-{trial}", std::process::id()));
    let mkdir_err = |p: &Path, source| SmallFileError::Io {
        phase: "setup",
        call: "mkdir",
        path: p.to_path_buf(),
        source,
    };
    std::fs::create_dir(&root).map_err(|e| mkdir_err(&root, e))?;
    let tree = Tree { root: root.clone() };
    let threads = w.threads as usize;
    let mut per: Vec<ThreadFiles> = (0..threads)
        .map(|_| ThreadFiles {
            dir_fds: Vec::new(),
            dir_paths: Vec::new(),
            files: Vec::new(),
        })
        .collect();
    // Directory d belongs to thread d % threads: (thread, index among that thread's dirs).
    let mut dir_slot = Vec::with_capacity(w.dirs as usize);
    for d in 0..w.dirs as usize {
        let p = root.join(format!("d{d:04}"));
        std::fs::create_dir(&p).map_err(|e| mkdir_err(&p, e))?;
        let t = d % threads;
        let fd = open_dir(&p).map_err(|e| mkdir_err(&p, e))?;
        dir_slot.push((t, per[t].dir_fds.len()));
        per[t].dir_fds.push(fd);
        per[t].dir_paths.push(p);
    }
    for i in 0..w.files {
        // Consecutive files share a directory (as bonnie++ lays them out): file i of n goes to
        // directory i * dirs / n.
        let d = (u128::from(i) * u128::from(w.dirs) / u128::from(w.files)) as usize;
        let (t, local) = dir_slot[d];
        // Sequential names sort in creation order, like bonnie++'s numbered names.
        let name = CString::new(format!("{i:010}")).expect("digits have no NUL");
        per[t].files.push((local, name, file_size(w, i)));
    }
    Ok((tree, per))
}

/// Runs one trial of the small-file workload in `dir`.
pub fn run_smallfile_trial(
    w: &SmallFileWorkload,
    dir: &Path,
    ctl: &Control,
    name: &str,
    trial: u32,
) -> Result<TrialSample, SmallFileError> {
    let (tree, per) = lay_out_tree(w, dir, trial)?;
    let threads = per.len();
    let max_size = w.max_size as usize;
    let barrier = Barrier::new(threads);
    let abort = AtomicBool::new(false);
    let syncs = AtomicU64::new(0);
    let phase_start: Vec<AtomicU64> = PHASES.iter().map(|_| AtomicU64::new(0)).collect();
    let started_unix_ms = crate::sample::now_unix_ms();
    let ru0 = crate::sys::rusage_self();
    let origin = Instant::now();
    let results: Vec<Result<Vec<PhaseOut>, SmallFileError>> = std::thread::scope(|s| {
        let handles: Vec<_> = per
            .iter()
            .enumerate()
            .map(|(ti, tf)| {
                let (barrier, abort, syncs, phase_start) = (&barrier, &abort, &syncs, &phase_start);
                s.spawn(move || {
                    let r = thread_main(
                        w,
                        tf,
                        ti as u32,
                        max_size,
                        barrier,
                        abort,
                        syncs,
                        phase_start,
                        origin,
                        ctl,
                    );
                    if r.is_err() {
                        abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| panic!("a small-file worker panicked"))
            })
            .collect()
    });
    let ru1 = crate::sys::rusage_self();
    let mut outs = Vec::new();
    for r in results {
        outs.push(r?);
    }
    drop(tree);
    let (ops, series, total_ns) = merge_phases(w, &outs, &phase_start)?;
    let n_ops = w.files * PHASES.len() as u64;
    Ok(TrialSample {
        workload: name.to_string(),
        trial,
        started_unix_ms,
        elapsed_ns: total_ns,
        ops,
        series,
        accounting: IoAccounting {
            submitted: n_ops,
            completed: n_ops,
            short: 0,
            errors: 0,
            syncs: syncs.load(Ordering::Relaxed),
            after_window: 0,
        },
        cpu_user_ns: ru1.0.saturating_sub(ru0.0),
        cpu_sys_ns: ru1.1.saturating_sub(ru0.1),
        notes: Vec::new(),
        verify: None,
        open_loop: None,
    })
}

/// Merges the worker threads' phases into the trial's: one op sample per phase (its window
/// from the phase's start to the last thread's end), the per-second series on the trial's
/// timeline, and where the last phase ended (ns since the trial's origin). Fails when a phase
/// did not do every file.
fn merge_phases(
    w: &SmallFileWorkload,
    outs: &[Vec<PhaseOut>],
    phase_start: &[AtomicU64],
) -> Result<(Vec<OpSample>, Vec<SeriesPoint>, u64), SmallFileError> {
    let mut ops = Vec::new();
    let mut series: Vec<SeriesPoint> = Vec::new();
    let mut total_ns = 0u64;
    for (pi, phase) in PHASES.iter().enumerate() {
        let mut s = OpSample::new(phase);
        let start = phase_start[pi].load(Ordering::Relaxed);
        let mut end = start;
        for o in outs {
            let p = &o[pi];
            s.count += p.sample.count;
            s.bytes += p.sample.bytes;
            s.latency.merge(&p.sample.latency);
            end = end.max(p.end_ns);
            // Phase-relative seconds land on the trial's timeline at the phase's start second.
            let base = (start / 1_000_000_000) as usize;
            for (i, pt) in p.series.iter().enumerate() {
                let idx = base + i;
                if series.len() <= idx {
                    series.resize(idx + 1, SeriesPoint::default());
                }
                series[idx].ops += pt.ops;
                series[idx].bytes += pt.bytes;
            }
        }
        s.elapsed_ns = end.saturating_sub(start).max(1);
        total_ns = total_ns.max(end);
        if s.count != w.files {
            return Err(SmallFileError::Count {
                phase,
                got: s.count,
                want: w.files,
            });
        }
        ops.push(s);
    }
    for (i, p) in series.iter_mut().enumerate() {
        p.t = i as u32;
    }
    Ok((ops, series, total_ns))
}

fn cstr_path(tf: &ThreadFiles, d: usize, name: &CString) -> PathBuf {
    tf.dir_paths[d].join(name.to_string_lossy().as_ref())
}

#[allow(clippy::too_many_arguments)]
fn thread_main(
    w: &SmallFileWorkload,
    tf: &ThreadFiles,
    ti: u32,
    max_size: usize,
    barrier: &Barrier,
    abort: &AtomicBool,
    syncs: &AtomicU64,
    phase_start: &[AtomicU64],
    origin: Instant,
    ctl: &Control,
) -> Result<Vec<PhaseOut>, SmallFileError> {
    let seed = thread_seed(w.seed, ti);
    let mut data = DataGen::new(seed, false, max_size.max(1), 1);
    let mut buf = vec![0u8; max_size.max(1)];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5EED);
    let n = tf.files.len();
    let seq: Vec<usize> = (0..n).collect();
    let mut outs = Vec::with_capacity(PHASES.len());
    let mut first_err: Option<SmallFileError> = None;
    for (pi, phase) in PHASES.iter().enumerate() {
        let order: Vec<usize> = if phase.starts_with("rand_") {
            permutation(n, &mut rng)
        } else {
            seq.clone()
        };
        barrier.wait();
        let t0 = origin.elapsed().as_nanos() as u64;
        // The first thread through sets the phase start; all threads start within the barrier.
        let _ = phase_start[pi].compare_exchange(0, t0, Ordering::Relaxed, Ordering::Relaxed);
        let mut out = PhaseOut {
            sample: OpSample::new(phase),
            end_ns: t0,
            series: Vec::new(),
        };
        if first_err.is_none() && !abort.load(Ordering::Relaxed) {
            let mut last = Instant::now();
            for &k in &order {
                if abort.load(Ordering::Relaxed) || ctl.stop.load(Ordering::Relaxed) {
                    break;
                }
                let r = file_op(phase, w, tf, k, &mut data, &mut buf, syncs);
                let now = Instant::now();
                let lat = now.duration_since(last).as_nanos() as u64;
                last = now;
                match r {
                    Ok(bytes) => {
                        let rel = (now.duration_since(origin).as_nanos() as u64).saturating_sub(t0);
                        out.record(bytes as u64, lat, rel);
                    }
                    Err(e) => {
                        first_err = Some(file_error(tf, k, phase, e));
                        abort.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
            out.end_ns = origin.elapsed().as_nanos() as u64;
            ctl.counters.add(out.sample.bytes, out.sample.count);
        }
        outs.push(out);
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(outs),
    }
}

enum FileErr {
    Os(&'static str, std::io::Error),
    Short(u64),
}

/// One operation of `phase` on the thread's file `k`: the bytes it moved. A read that returns
/// fewer bytes than the file was made with is short.
fn file_op(
    phase: &str,
    w: &SmallFileWorkload,
    tf: &ThreadFiles,
    k: usize,
    data: &mut DataGen,
    buf: &mut [u8],
    syncs: &AtomicU64,
) -> Result<usize, FileErr> {
    let (d, name, size) = &tf.files[k];
    let dfd = tf.dir_fds[*d].as_fd();
    match phase {
        "create" | "rand_create" => create_file(
            dfd,
            name,
            *size as usize,
            w.fsync,
            w.fsync_dir,
            data,
            buf,
            syncs,
        ),
        "stat" | "rand_stat" => stat_file(dfd, name),
        "read_file" => read_file(dfd, name, buf).and_then(|got| {
            if got as u64 == *size {
                Ok(got)
            } else {
                Err(FileErr::Short(got as u64))
            }
        }),
        _ => unlink_file(dfd, name, w.fsync_dir, syncs),
    }
}

/// A failed operation on the thread's file `k` as the trial's error, naming phase and path.
fn file_error(tf: &ThreadFiles, k: usize, phase: &'static str, e: FileErr) -> SmallFileError {
    let (d, name, size) = &tf.files[k];
    let path = cstr_path(tf, *d, name);
    match e {
        FileErr::Os(call, source) => SmallFileError::Io {
            phase,
            call,
            path,
            source,
        },
        FileErr::Short(got) => SmallFileError::Short {
            phase,
            path,
            got,
            want: *size,
        },
    }
}

/// A failed call as the error of the operation that made it.
fn os(call: &'static str) -> impl Fn(rustix::io::Errno) -> FileErr {
    move |e| FileErr::Os(call, e.into())
}

fn permutation(n: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = ((u128::from(rng.next_u64()) * (i as u128 + 1)) >> 64) as usize;
        v.swap(i, j);
    }
    v
}

#[allow(clippy::too_many_arguments)]
fn create_file(
    dfd: BorrowedFd<'_>,
    name: &CString,
    size: usize,
    fsync: bool,
    fsync_dir: bool,
    data: &mut DataGen,
    buf: &mut [u8],
    syncs: &AtomicU64,
) -> Result<usize, FileErr> {
    use rustix::fs::{Mode, OFlags};
    let file = rustix::fs::openat(
        dfd,
        name.as_c_str(),
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(os("create"))?;
    let mut done = 0;
    if size > 0 {
        data.refresh(buf, size);
        while done < size {
            let r = rustix::io::write(&file, &buf[done..size]).map_err(os("write"))?;
            if r == 0 {
                return Err(FileErr::Os(
                    "write",
                    std::io::Error::from_raw_os_error(libc::ENOSPC),
                ));
            }
            done += r;
        }
    }
    if fsync {
        rustix::fs::fsync(&file).map_err(os("fsync"))?;
        syncs.fetch_add(1, Ordering::Relaxed);
    }
    if fsync_dir {
        // The new name is durable only once its directory is.
        rustix::fs::fsync(dfd).map_err(os("fsync"))?;
        syncs.fetch_add(1, Ordering::Relaxed);
    }
    drop(file);
    Ok(done)
}

fn stat_file(dfd: BorrowedFd<'_>, name: &CString) -> Result<usize, FileErr> {
    rustix::fs::statat(dfd, name.as_c_str(), rustix::fs::AtFlags::empty()).map_err(os("stat"))?;
    Ok(0)
}

fn read_file(dfd: BorrowedFd<'_>, name: &CString, buf: &mut [u8]) -> Result<usize, FileErr> {
    use rustix::fs::{Mode, OFlags};
    let file = rustix::fs::openat(
        dfd,
        name.as_c_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os("open"))?;
    let mut total = 0;
    loop {
        let r = rustix::io::read(&file, &mut *buf).map_err(os("read"))?;
        if r == 0 {
            break;
        }
        total += r;
    }
    Ok(total)
}

fn unlink_file(
    dfd: BorrowedFd<'_>,
    name: &CString,
    fsync: bool,
    syncs: &AtomicU64,
) -> Result<usize, FileErr> {
    rustix::fs::unlinkat(dfd, name.as_c_str(), rustix::fs::AtFlags::empty())
        .map_err(os("unlink"))?;
    if fsync {
        rustix::fs::fsync(dfd).map_err(os("fsync"))?;
        syncs.fetch_add(1, Ordering::Relaxed);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl(files: u64, dirs: u32, threads: u32) -> SmallFileWorkload {
        SmallFileWorkload {
            files,
            dirs,
            min_size: 500,
            max_size: 25000,
            fsync: true,
            fsync_dir: true,
            threads,
            seed: 3,
        }
    }

    #[test]
    fn sizes_are_uniform_in_range_and_deterministic() {
        let w = wl(0, 1, 1);
        let v: Vec<u64> = (0..20_000).map(|i| file_size(&w, i)).collect();
        assert!(v.iter().all(|s| (500..=25000).contains(s)));
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        assert!((mean - 12750.0).abs() < 200.0, "{mean}");
        assert_eq!(file_size(&w, 77), file_size(&w, 77));
        let w2 = SmallFileWorkload {
            seed: 4,
            ..w.clone()
        };
        assert_ne!(
            (0..10).map(|i| file_size(&w, i)).collect::<Vec<_>>(),
            (0..10).map(|i| file_size(&w2, i)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn permutation_visits_everything_once() {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(1);
        let p = permutation(1000, &mut r);
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_ne!(p, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn every_phase_counts_every_file_and_nothing_is_left() {
        let d = tempfile::tempdir().unwrap();
        let w = wl(300, 6, 3);
        let t = run_smallfile_trial(&w, d.path(), &Control::default(), "t", 1).unwrap();
        assert_eq!(t.ops.len(), 7);
        for o in &t.ops {
            assert_eq!(o.count, 300, "{}", o.op);
            assert_eq!(o.latency.len(), 300);
        }
        let written: u64 = (0..300).map(|i| file_size(&w, i)).sum();
        assert_eq!(t.op("create").unwrap().bytes, written);
        assert_eq!(t.op("read_file").unwrap().bytes, written);
        assert_eq!(
            t.accounting.syncs, 1800,
            "file + directory on each create, directory on each delete"
        );
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
