//! IO engines: the seam between the runner and the kernel.
//!
//! Modelled on fio's small engine interface: the runner queues IOs into numbered slots and asks
//! the engine to submit and reap; the engine owns the slot buffers. `uring` holds the only
//! io_uring code, `psync` does one pread/pwrite at a time, and `null` completes every IO at once
//! so the rest of iolab can be tested deterministically and its own cost per IO measured.

mod buffer;
mod null;
mod psync;
mod uring;

pub use buffer::{BUFFER_ALIGN, BufferPool};
pub use null::NullEngine;
pub use psync::PsyncEngine;
pub use uring::UringEngine;

use std::os::fd::RawFd;

use crate::spec::{EngineKind, SyncKind};

/// What one queued IO does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Read `len` bytes at `offset` into the slot buffer.
    Read,
    /// Write `len` bytes of the slot buffer at `offset`.
    Write,
    /// Flush the file (offset and len ignored).
    Sync(SyncKind),
}

/// One finished IO: its slot and the kernel's result (bytes moved, or `-errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The slot the IO was queued in.
    pub slot: u32,
    /// Bytes transferred, or a negated errno.
    pub result: i32,
}

/// An engine failed as a whole (not one IO: those come back as negative results).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine could not be set up.
    #[error("cannot set up the {engine} engine: {source}")]
    Setup {
        /// Which engine.
        engine: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// Submitting or waiting failed.
    #[error("{engine} submit failed: {source}")]
    Submit {
        /// Which engine.
        engine: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// Buffers could not be allocated.
    #[error(transparent)]
    Alloc(#[from] buffer::AllocError),
}

/// The engine interface the runner drives.
///
/// The runner keeps at most `depth` IOs in flight and never queues into a busy slot; in return
/// an engine may assume both.
pub trait Engine {
    /// Which engine this is (for notes when a fallback ran instead of the one asked for).
    fn kind(&self) -> EngineKind;
    /// Slot buffer, to fill before a write or inspect after a read.
    fn buffer_mut(&mut self, slot: u32) -> &mut [u8];
    /// Queues one IO; it is not started before [`Engine::submit_and_reap`].
    fn queue(&mut self, slot: u32, op: IoOp, offset: u64, len: u32) -> Result<(), EngineError>;
    /// Queues a write of `len` bytes from `data` instead of the slot's buffer (the slot still
    /// names the IO in its completion).
    ///
    /// # Safety
    /// `data` must point at `len` readable bytes, aligned as O_DIRECT needs, inside the
    /// `extra` region of the [`EngineConfig`] when one was given, and stay valid until the
    /// IO has completed.
    unsafe fn queue_write_from(
        &mut self,
        slot: u32,
        data: *const u8,
        offset: u64,
        len: u32,
    ) -> Result<(), EngineError>;
    /// Starts everything queued and waits until at least `min` IOs have completed, appending
    /// every completion available to `out`.
    fn submit_and_reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError>;
}

/// Settings shared by every engine.
#[derive(Debug, Clone, Copy)]
pub struct EngineConfig {
    /// File descriptor to do IO on (owned by the caller, open for the engine's lifetime).
    pub fd: RawFd,
    /// IOs in flight at most (slots 0..depth; one more slot is reserved for flushes).
    pub depth: u32,
    /// Bytes per slot buffer.
    pub block_size: usize,
    /// Memory writes may come from besides the slots (the data pool), registered with the
    /// ring when the kernel allows; it must outlive the engine.
    pub extra: Option<(*mut u8, usize)>,
}
