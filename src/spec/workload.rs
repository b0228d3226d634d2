//! Validated workload types: what the runners execute.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The access pattern of an IO workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Uniform random reads.
    RandRead,
    /// Uniform random writes.
    RandWrite,
    /// Uniform random mix of reads and writes (`read_pct` reads).
    RandRw,
}

impl Pattern {
    /// Parses fio's names (`read`, `write`, `randread`, `randwrite`, `randrw`).
    pub fn parse(s: &str) -> Option<Pattern> {
        Some(match s.to_ascii_lowercase().as_str() {
            "read" | "seqread" => Pattern::Read,
            "write" | "seqwrite" => Pattern::Write,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "randrw" | "rw" | "mixed" => Pattern::RandRw,
            _ => return None,
        })
    }
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::RandRw => "randrw",
        }
    }
    /// True when the pattern writes anything.
    pub fn writes(self) -> bool {
        matches!(self, Pattern::Write | Pattern::RandWrite | Pattern::RandRw)
    }
    /// True when the pattern reads anything.
    pub fn reads(self) -> bool {
        matches!(self, Pattern::Read | Pattern::RandRead | Pattern::RandRw)
    }
    /// True for random offsets.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw
        )
    }
}

/// Which IO engine carries the IOs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum EngineKind {
    /// io_uring with registered files and buffers: the default on Linux.
    #[default]
    #[serde(rename = "io_uring")]
    IoUring,
    /// pread/pwrite, one IO at a time per thread.
    #[serde(rename = "psync")]
    Psync,
    /// Completes every IO at once without touching a device: measures iolab itself.
    #[serde(rename = "null")]
    Null,
}

impl EngineKind {
    /// Parses `io_uring`, `uring`, `psync`, `sync`, `null`.
    pub fn parse(s: &str) -> Option<EngineKind> {
        Some(match s.to_ascii_lowercase().as_str() {
            "io_uring" | "iouring" | "uring" => EngineKind::IoUring,
            "psync" | "sync" | "pread" => EngineKind::Psync,
            "null" => EngineKind::Null,
            _ => return None,
        })
    }
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
            EngineKind::Null => "null",
        }
    }
}

/// How a worker waits for its next completion (io_uring).
///
/// Sleeping in the kernel until an IO completes costs a wake-up per wait: on a virtual
/// machine, or when the device completes on another CPU, that wake-up is as long as a fast
/// device's whole IO (measured: 4k QD1 reads on a RAM-backed loop device take ~35 us with a
/// sleep, ~19 us with a spin). Spinning costs CPU time instead; blocking lets completions
/// batch and leaves the CPU to the kernel, which wins when many IOs are in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Spin when few IOs are in flight in all threads together (at most
    /// [`WaitMode::SPIN_MAX_IN_FLIGHT`]), block otherwise; a device slower than the spin
    /// budget stops the spinning by itself.
    #[default]
    Auto,
    /// Poll for completions for up to the spin budget before sleeping.
    Spin,
    /// Always sleep in the kernel until a completion arrives.
    Block,
}

impl WaitMode {
    /// Above this many IOs in flight (threads x queue depth), `auto` blocks: completions then
    /// arrive in batches and the CPU is better left to the kernel (measured in
    /// `bench/vs-fio.sh`: spinning loses ~10% at QD 128, gains ~2x at QD 1-8).
    pub const SPIN_MAX_IN_FLIGHT: u32 = 32;

    /// Parses `auto`, `spin`, `block`.
    pub fn parse(s: &str) -> Option<WaitMode> {
        Some(match s.to_ascii_lowercase().as_str() {
            "auto" => WaitMode::Auto,
            "spin" | "poll" => WaitMode::Spin,
            "block" | "sleep" => WaitMode::Block,
            _ => return None,
        })
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            WaitMode::Auto => "auto",
            WaitMode::Spin => "spin",
            WaitMode::Block => "block",
        }
    }

    /// Whether a worker spins before sleeping, for `threads` workers of `depth` IOs each.
    pub fn spins(self, threads: u32, depth: u32) -> bool {
        match self {
            WaitMode::Auto => threads.saturating_mul(depth) <= Self::SPIN_MAX_IN_FLIGHT,
            WaitMode::Spin => true,
            WaitMode::Block => false,
        }
    }
}

/// What written blocks contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DataKind {
    /// Incompressible pseudo-random bytes, different in every block written.
    #[default]
    Random,
    /// All zeros, to reproduce `dd if=/dev/zero` on purpose.
    Zero,
}

/// Which flush call makes writes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SyncKind {
    /// fdatasync(2): data and the metadata needed to read it back.
    #[default]
    Fdatasync,
    /// fsync(2): data and all metadata.
    Fsync,
}

/// An IO workload over one file or device: the fio-shaped part of iolab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoWorkload {
    /// Access pattern.
    pub pattern: Pattern,
    /// Bytes per IO.
    pub block_size: u64,
    /// IOs in flight per thread.
    pub queue_depth: u32,
    /// Worker threads, each with its own ring.
    pub threads: u32,
    /// Working set in bytes; `None` means the target's default (file: `--size`, device: all of it).
    pub size: Option<u64>,
    /// Stop after this long (measured window, ramp excluded).
    pub runtime: Option<Duration>,
    /// Stop after this many bytes in all threads together.
    pub total_bytes: Option<u64>,
    /// Time at the start whose IOs are not counted.
    pub ramp: Duration,
    /// O_DIRECT (bypass the page cache).
    pub direct: bool,
    /// Share of reads in a `randrw` mix, percent.
    pub read_pct: u8,
    /// Flush after every N writes (0: never).
    pub fsync_every: u32,
    /// Flush once at the end, inside the measured window (`dd conv=fdatasync`).
    pub fsync_at_end: bool,
    /// Which flush call.
    pub sync_kind: SyncKind,
    /// Content of written blocks.
    pub data: DataKind,
    /// Seed for offsets and data: the same seed gives the same IO sequence.
    pub seed: u64,
    /// IO engine.
    pub engine: EngineKind,
    /// How completions are waited for (io_uring only).
    #[serde(default)]
    pub wait: WaitMode,
}

impl Default for IoWorkload {
    fn default() -> Self {
        IoWorkload {
            pattern: Pattern::RandRead,
            block_size: 4096,
            queue_depth: 1,
            threads: 1,
            size: None,
            runtime: None,
            total_bytes: None,
            ramp: Duration::ZERO,
            direct: true,
            read_pct: 70,
            fsync_every: 0,
            fsync_at_end: false,
            sync_kind: SyncKind::Fdatasync,
            data: DataKind::Random,
            seed: 0x10_1ab,
            engine: EngineKind::IoUring,
            wait: WaitMode::Auto,
        }
    }
}

impl IoWorkload {
    /// Whether the headline figure is throughput (MB/s) rather than IOPS.
    pub fn headline_is_bandwidth(&self) -> bool {
        !self.pattern.is_random() || self.block_size >= 256 * 1024
    }
}

/// The small-file workload: bonnie++ `-n` phases, done with timing per phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmallFileWorkload {
    /// Files in all, across all directories and threads.
    pub files: u64,
    /// Directories the files are spread over.
    pub dirs: u32,
    /// Smallest file, bytes.
    pub min_size: u64,
    /// Largest file, bytes (sizes are uniform between min and max).
    pub max_size: u64,
    /// fsync each file after writing it (bonnie++ `-b`).
    pub fsync: bool,
    /// Also fsync the directory after each create and delete (durable names, as Maildir does).
    #[serde(default)]
    pub fsync_dir: bool,
    /// Worker threads; each owns its own directories.
    pub threads: u32,
    /// Seed for sizes, random order and content.
    pub seed: u64,
}

/// Reads of the same small region again and again from the page cache (`hdparm -T`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedReadWorkload {
    /// Bytes read per call, from the same offset every time.
    pub block_size: u64,
    /// How long to keep reading.
    pub runtime: Duration,
}

/// What a workload does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Block IO on one file or device.
    Io(IoWorkload),
    /// Create/stat/read/delete of many small files in a directory.
    SmallFiles(SmallFileWorkload),
    /// Page-cache reads (`hdparm -T`).
    CachedRead(CachedReadWorkload),
}

/// One named workload of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Name shown in tables and used to match workloads across runs.
    pub name: String,
    /// Drop the page cache before this workload (root only; a note otherwise).
    pub drop_caches: bool,
    /// What it does.
    pub kind: WorkloadKind,
}

impl Workload {
    /// The IO parameters, when this is an IO workload.
    pub fn io(&self) -> Option<&IoWorkload> {
        match &self.kind {
            WorkloadKind::Io(w) => Some(w),
            _ => None,
        }
    }
    /// One line of the parameters, as `iolab profiles` shows them.
    pub fn describe(&self) -> String {
        match &self.kind {
            WorkloadKind::Io(w) => {
                let mut s = format!(
                    "{} bs={} qd={} threads={}",
                    w.pattern.name(),
                    crate::units::format_bytes(w.block_size),
                    w.queue_depth,
                    w.threads
                );
                if w.pattern == Pattern::RandRw {
                    s.push_str(&format!(" read={}%", w.read_pct));
                }
                if let Some(t) = w.runtime {
                    s.push_str(&format!(" time={}", crate::units::format_duration(t)));
                }
                if let Some(b) = w.total_bytes {
                    s.push_str(&format!(" io_size={}", crate::units::format_bytes(b)));
                }
                if let Some(b) = w.size {
                    s.push_str(&format!(" size={}", crate::units::format_bytes(b)));
                }
                if w.fsync_every > 0 {
                    s.push_str(
                        &format!(" {:?}_every={}", w.sync_kind, w.fsync_every).to_lowercase(),
                    );
                }
                if w.fsync_at_end {
                    s.push_str(&format!(" {:?}_at_end", w.sync_kind).to_lowercase());
                }
                if !w.direct {
                    s.push_str(" buffered");
                }
                if w.data == DataKind::Zero {
                    s.push_str(" data=zero");
                }
                s
            }
            WorkloadKind::SmallFiles(w) => format!(
                "smallfile files={} dirs={} size={}..{} fsync={}{} threads={}",
                w.files,
                w.dirs,
                w.min_size,
                w.max_size,
                w.fsync,
                if w.fsync_dir { " fsync_dir=true" } else { "" },
                w.threads
            ),
            WorkloadKind::CachedRead(w) => format!(
                "cached-read bs={} time={}",
                crate::units::format_bytes(w.block_size),
                crate::units::format_duration(w.runtime)
            ),
        }
    }
}

/// An ordered list of workloads run one after another on the same target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Suite {
    /// Suite name (profile name or spec file stem).
    pub name: String,
    /// The workloads in order.
    pub workloads: Vec<Workload>,
}
