//! Block IO traces: what a real server did, IO by IO, in one compact versioned file.
//!
//! A trace is made by `iolab capture` (the kernel's block tracepoints), or
//! imported from a blktrace capture ([`blktrace`]) or a fio iolog ([`iolog`]). It holds per IO
//! only what replay and the workload model need — issue time, completion time, operation and
//! flags, offset, length, the issuing process's name — never data contents. The file format is
//! in [`mod@format`] (and `docs/capture.md`): a magic, a version, a JSON header with the setup
//! (device, model, size, kernel, filesystem, duration, a hash of the records), then fixed-size
//! little-endian records in issue order. [`read`] refuses a truncated, corrupt or newer file
//! with one line; [`mod@write`] never leaves a half-written file under the asked name.
//!
//! [`model`] turns a trace into the numbers a person reads (mix, sizes, sequentiality, skew,
//! burstiness, in flight) and [`to_spec`] into an iolab workload that runs anywhere a spec runs.
//! This stage sits after `spec` (the model speaks its vocabulary) and before `runner` (replay
//! reads traces).

pub mod blktrace;
pub mod format;
pub mod iolog;
pub mod model;
pub mod read;
pub mod to_spec;
pub mod write;

use serde::{Deserialize, Serialize};

pub use format::{MAGIC, RECORD_BYTES, VERSION};
pub use read::{read_trace, read_trace_bytes};
pub use write::TraceWriter;

/// What an IO did at the block layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Data read from the device.
    Read,
    /// Data written to the device.
    Write,
    /// A cache flush (no data; fsync and journal commits send these).
    Flush,
    /// A discard (TRIM/UNMAP) of a range.
    Discard,
    /// Anything else the block layer carries (write-zeroes, secure erase, zone commands).
    Other,
}

impl Op {
    /// Every operation, in record-code order.
    pub const ALL: [Op; 5] = [Op::Read, Op::Write, Op::Flush, Op::Discard, Op::Other];

    /// The byte stored in a record.
    pub fn code(self) -> u8 {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Flush => 2,
            Op::Discard => 3,
            Op::Other => 4,
        }
    }

    /// The operation of a record byte (`None`: not one this version knows).
    pub fn from_code(c: u8) -> Option<Op> {
        Op::ALL.get(usize::from(c)).copied()
    }

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
            Op::Other => "other",
        }
    }

    /// Whether the IO moves data (a read or a write).
    pub fn is_data(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }
}

/// Request flags kept per IO (a bit set, as stored in a record).
pub mod flags {
    /// Forced unit access: the write is durable when it completes.
    pub const FUA: u8 = 1;
    /// Synchronous request (someone waits for it: O_SYNC, O_DIRECT, fsync paths).
    pub const SYNC: u8 = 2;
    /// A cache flush before the request (REQ_PREFLUSH: journal commits).
    pub const PREFLUSH: u8 = 4;
    /// Filesystem metadata.
    pub const META: u8 = 8;
    /// Read-ahead.
    pub const READAHEAD: u8 = 16;
    /// Every bit this version defines.
    pub const KNOWN: u8 = FUA | SYNC | PREFLUSH | META | READAHEAD;

    /// The flags as blktrace prints them after the op letter (`F` FUA, `S`, `M`, `A`), with a
    /// leading `F` for a preflush.
    pub fn describe(f: u8) -> String {
        let mut s = String::new();
        for (bit, name) in [
            (PREFLUSH, "preflush"),
            (FUA, "fua"),
            (SYNC, "sync"),
            (META, "meta"),
            (READAHEAD, "readahead"),
        ] {
            if f & bit != 0 {
                if !s.is_empty() {
                    s.push(',');
                }
                s.push_str(name);
            }
        }
        s
    }
}

/// No completion was seen for this IO (the capture ended first, or the event was lost).
pub const NO_COMPLETION: u64 = u64::MAX;
/// The process of an IO is not known.
pub const NO_PROCESS: u16 = u16::MAX;

/// One IO of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceIo {
    /// When it was issued to the device, ns since the trace's start.
    pub issue_ns: u64,
    /// Byte offset on the device (or the traced partition).
    pub offset: u64,
    /// Issue to completion, ns ([`NO_COMPLETION`] when none was seen).
    pub latency_ns: u64,
    /// Bytes (0 for a flush).
    pub len: u32,
    /// What it did.
    pub op: Op,
    /// [`flags`] bits.
    pub flags: u8,
    /// Index into [`TraceHeader::processes`] ([`NO_PROCESS`] when unknown).
    pub process: u16,
}

impl TraceIo {
    /// The completion time, ns since the start, when one was seen.
    pub fn complete_ns(&self) -> Option<u64> {
        (self.latency_ns != NO_COMPLETION).then(|| self.issue_ns.saturating_add(self.latency_ns))
    }
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(u64::from(self.len))
    }
}

/// The device a trace was recorded on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceDevice {
    /// Kernel name (`sda`, `nvme0n1p2`, `loop3`).
    pub name: String,
    /// Its model, when the kernel knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Size in bytes (of the partition, when a partition was traced).
    pub size_bytes: u64,
    /// Logical block size, bytes.
    #[serde(default)]
    pub logical_block_size: u32,
    /// Spinning disk?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// `major:minor`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub devnum: String,
}

/// The setup and summary of a trace: the JSON header of the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// How it was made: `tracepoints`, `blktrace`, `fio-iolog-v2`, `fio-iolog-v3`.
    pub source: String,
    /// What the user named (a device, a directory, the imported files).
    #[serde(default)]
    pub target: String,
    /// The device, when known (imports of a fio iolog know only a file name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<TraceDevice>,
    /// The filesystem on it and where it was mounted, when the target was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<String>,
    /// The mount point of that filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_point: Option<String>,
    /// `uname -r` of the machine that recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Its host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Wall-clock start, Unix ns (0 when unknown).
    #[serde(default)]
    pub started_unix_ns: u64,
    /// How long it recorded, ns (at least the last issue time).
    pub duration_ns: u64,
    /// Number of records.
    pub ios: u64,
    /// xxh3-64 of the record bytes, 16 hex digits: a changed or damaged record is found.
    pub records_xxh3: String,
    /// Issuing process names, indexed by the records.
    #[serde(default)]
    pub processes: Vec<String>,
    /// Events the kernel dropped (its buffer overran): the trace misses that many IOs' events.
    #[serde(default)]
    pub lost_events: u64,
    /// IOs issued without a completion seen (in flight at the end).
    #[serde(default)]
    pub unmatched: u64,
    /// The capture was stopped early (Ctrl-C): shorter than asked.
    #[serde(default)]
    pub interrupted: bool,
    /// The iolab version that wrote it.
    #[serde(default)]
    pub iolab_version: String,
    /// Anything a reader must know (what was skipped in an import, which device was traced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A whole trace in memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The header.
    pub header: TraceHeader,
    /// The IOs, in issue order.
    pub ios: Vec<TraceIo>,
}

impl Trace {
    /// The process name of an IO (`?` when unknown).
    pub fn process_name(&self, io: &TraceIo) -> &str {
        self.header
            .processes
            .get(usize::from(io.process))
            .map_or("?", String::as_str)
    }

    /// The highest byte any IO touches (the smallest device a replay fits without mapping).
    pub fn max_end(&self) -> u64 {
        self.ios.iter().map(TraceIo::end).max().unwrap_or(0)
    }
}

/// Why a trace could not be read or written. Each is one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {why}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        why: String,
    },
    /// Not a trace at all.
    #[error(
        "{path} is not an iolab trace (no IOLABTRC magic); make one with `iolab capture`, or import blktrace/fio iolog files with `iolab capture --import`"
    )]
    NotATrace {
        /// The file.
        path: String,
    },
    /// Written by a newer iolab.
    #[error(
        "{path} is trace format version {found}; this iolab reads version {VERSION}: upgrade iolab"
    )]
    Version {
        /// The file.
        path: String,
        /// Its version.
        found: u16,
    },
    /// Shorter than its header says.
    #[error("{path} is truncated: {why} (the capture was cut off while writing; capture again)")]
    Truncated {
        /// The file.
        path: String,
        /// What is missing.
        why: String,
    },
    /// The bytes are wrong.
    #[error("{path} is corrupt: {why}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// No IO in it.
    #[error("{path} holds no IO: {why}")]
    Empty {
        /// The file.
        path: String,
        /// Why there was nothing.
        why: String,
    },
    /// Writing failed.
    #[error("cannot write {path}: {why}")]
    Write {
        /// The file.
        path: String,
        /// The OS error.
        why: String,
    },
    /// An imported file is not in the expected format.
    #[error("{at}: {why}")]
    Import {
        /// `FILE` or `FILE:LINE`.
        at: String,
        /// What is wrong and what to do.
        why: String,
    },
}
