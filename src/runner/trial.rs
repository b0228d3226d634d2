//! What an IO trial hands each of its workers besides the workload: the file or device, the
//! start gate all of them wait at, and how IO on the file fails. Kept apart from the trial
//! driver ([`super::io`]) and the workers (`worker.rs`) so that both read it and neither
//! imports the other.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::engine::EngineError;

use super::verify::VerifyTable;

/// The file or device IO goes to, already laid out to the working set.
#[derive(Debug, Clone)]
pub struct IoFile {
    /// Path to open (each thread opens its own descriptor).
    pub path: PathBuf,
    /// Where the working set starts, bytes (a device region: `iolab disks` reads the start,
    /// middle and end of a disk). Must be a multiple of the block size.
    pub offset: u64,
    /// Working set: IOs stay within `[offset, offset + size)`.
    pub size: u64,
    /// O_DIRECT is possible here (false on tmpfs).
    pub direct_ok: bool,
    /// With `--verify`: the generations written, shared by all threads; writes carry headers
    /// and reads are checked.
    pub verify: Option<Arc<VerifyTable>>,
}

/// Why an IO trial failed. Messages are one line and say what to do.
#[derive(Debug, thiserror::Error)]
pub enum IoRunError {
    /// Opening the file failed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An IO returned an errno.
    #[error("{}", errno_message(op, *.offset, *.len, *.errno, path))]
    Errno {
        /// `read`, `write` or `sync`.
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes asked.
        len: u32,
        /// The errno.
        errno: i32,
        /// The file.
        path: PathBuf,
    },
    /// An IO moved fewer bytes than asked.
    #[error(
        "short {op} at offset {offset} of {path}: {got} of {want} bytes (file shrank or device error)"
    )]
    Short {
        /// `read` or `write`.
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes moved.
        got: u32,
        /// Bytes asked.
        want: u32,
        /// The file.
        path: PathBuf,
    },
    /// The engine failed as a whole.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A replay's trace could not be planned (changed since the run began, or too large).
    #[error(transparent)]
    Replay(#[from] super::replay::ReplayError),
}

impl IoRunError {
    /// True when the device or filesystem is full (the run cannot go on; say so plainly).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, IoRunError::Errno { errno, .. } if *errno == libc::ENOSPC)
    }
}

fn errno_message(op: &str, offset: u64, len: u32, errno: i32, path: &std::path::Path) -> String {
    let e = std::io::Error::from_raw_os_error(errno);
    match errno {
        libc::ENOSPC => format!(
            "disk full (ENOSPC) during {op} of {len} bytes at offset {offset} of {}; free space or lower --size",
            path.display()
        ),
        libc::EINVAL => format!(
            "the kernel refused a {op} of {len} bytes at offset {offset} of {} (EINVAL): with O_DIRECT the block size must be a multiple of the device's logical block size; use e.g. --bs 4k, or --buffered",
            path.display()
        ),
        _ => format!(
            "{op} of {len} bytes at offset {offset} of {} failed: {e}",
            path.display()
        ),
    }
}

/// The instant a trial's clock starts, on this machine's wall clock (Unix ns).
///
/// Many hosts start one trial together: each agent is told an instant on its own clock, and the
/// workers, once their engines are ready at the start line, wait for it there, so setup time
/// never shifts the start. The instant the clock really started is kept for the skew report.
#[derive(Debug, Default)]
pub struct StartGate {
    /// Do not start before this Unix time, ns (0: start at once).
    pub not_before_unix_ns: AtomicU64,
    /// When the last trial's clock started, Unix ns (0 before the first).
    pub started_unix_ns: AtomicU64,
}

impl StartGate {
    /// Waits for the start instant (sleeping, then spinning the last 2 ms for precision),
    /// records when the clock started and returns that instant.
    /// A stop request (Ctrl-C, the controller gone) ends the wait at once.
    pub fn open(&self, stop: &AtomicBool) -> Instant {
        let at = self.not_before_unix_ns.load(Ordering::Acquire);
        if at > 0 {
            while !stop.load(Ordering::Relaxed) {
                let now = crate::sample::now_unix_ns();
                if now >= at {
                    break;
                }
                let left = at - now;
                if left > 2_000_000 {
                    // Short naps, so a stop request is seen within 50 ms.
                    let nap = (left - 2_000_000).min(50_000_000);
                    std::thread::sleep(Duration::from_nanos(nap));
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        let t = Instant::now();
        self.started_unix_ns
            .store(crate::sample::now_unix_ns(), Ordering::Release);
        t
    }
}
