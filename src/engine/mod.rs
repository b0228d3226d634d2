//! IO engines: the seam between the runner and the kernel.
//!
//! Modelled on fio's small engine interface: the runner queues IOs into numbered slots and asks
//! the engine to submit and reap; the engine owns the slot buffers. `uring` holds the only
//! io_uring code, `psync` does one pread/pwrite at a time, and `null` completes every IO at once
//! so the rest of iolab can be tested deterministically and its own cost per IO measured.
//! `open` decides which of them a worker gets (io_uring falls back to psync here, not in the
//! runner).

mod buffer;
mod learn;
mod null;
mod open;
mod psync;
mod uring;

pub use buffer::{BUFFER_ALIGN, BufferPool};
pub use null::NullEngine;
pub use open::{AnyEngine, Opened, open};
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
    /// The runner asked for something the engine's slots cannot hold: a slot still in flight
    /// (its buffer is the kernel's until it completes), one that does not exist, or a pooled
    /// write outside the pool. A bug in the runner, refused instead of corrupting memory.
    #[error("IO slot {slot}: {why}")]
    Slot {
        /// The slot asked for.
        slot: u32,
        /// What was wrong.
        why: &'static str,
    },
}

/// Which slots have an IO in flight. Every engine keeps one, so a slot's buffer can never be
/// handed out or reused while the kernel may still read or write it: the contract the runner
/// keeps is checked, not assumed.
#[derive(Debug)]
pub(crate) struct SlotStates {
    busy: Vec<bool>,
    in_flight: u32,
}

impl SlotStates {
    /// `count` slots, all free.
    pub(crate) fn new(count: usize) -> SlotStates {
        SlotStates {
            busy: vec![false; count],
            in_flight: 0,
        }
    }

    /// Marks a free slot busy, or says why it cannot be used.
    #[inline]
    pub(crate) fn take(&mut self, slot: u32) -> Result<(), EngineError> {
        match self.busy.get_mut(slot as usize) {
            Some(b) if !*b => {
                *b = true;
                self.in_flight += 1;
                Ok(())
            }
            Some(_) => Err(EngineError::Slot {
                slot,
                why: "already in flight",
            }),
            None => Err(EngineError::Slot {
                slot,
                why: "no such slot",
            }),
        }
    }

    /// Frees a slot whose completion was reaped.
    #[inline]
    pub(crate) fn done(&mut self, slot: u32) {
        if let Some(b) = self.busy.get_mut(slot as usize)
            && *b
        {
            *b = false;
            self.in_flight -= 1;
        }
    }

    /// Whether a slot exists and is free (its buffer may be touched).
    #[inline]
    pub(crate) fn is_free(&self, slot: u32) -> bool {
        self.busy.get(slot as usize) == Some(&false)
    }

    /// How many slots are busy.
    #[inline]
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight
    }
}

/// The engine interface the runner drives.
///
/// IOs are queued into numbered slots (`0..depth` for reads and writes, `depth` for a flush);
/// a slot is busy from `queue` until its completion is reaped, and the engine refuses to reuse
/// or hand out the buffer of a busy slot.
pub trait Engine {
    /// Which engine this is (for notes when a fallback ran instead of the one asked for).
    fn kind(&self) -> EngineKind;
    /// Slot buffer, to fill before a write or inspect after a read; `None` while the slot is
    /// in flight.
    fn buffer_mut(&mut self, slot: u32) -> Option<&mut [u8]>;
    /// Queues one IO from or into the slot's buffer; it is not started before
    /// [`Engine::submit_and_reap`].
    fn queue(&mut self, slot: u32, op: IoOp, offset: u64, len: u32) -> Result<(), EngineError>;
    /// The data pool writes may be issued from (see [`EngineConfig::pool`]), to stamp a block
    /// before writing it; `None` without one.
    fn pool_mut(&mut self) -> Option<&mut [u8]>;
    /// Queues a write of `len` bytes from the data pool at byte `at` instead of the slot's
    /// buffer (the slot still names the IO in its completion).
    fn queue_write_pooled(
        &mut self,
        slot: u32,
        at: usize,
        offset: u64,
        len: u32,
    ) -> Result<(), EngineError>;
    /// Starts everything queued and waits until at least `min` IOs have completed, appending
    /// every completion available to `out`.
    fn submit_and_reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError>;
    /// Starts everything queued and waits until an IO completes or `until` comes (an open
    /// loop's next IO is due then), appending every completion available to `out`. Engines
    /// that complete IOs inside `queue` have them at once.
    fn submit_and_reap_until(
        &mut self,
        out: &mut Vec<Completion>,
        until: std::time::Instant,
    ) -> Result<(), EngineError> {
        let _ = until;
        self.submit_and_reap(0, out)
    }
    /// How the waits for a completion went: (spun and found one, spun in vain then slept,
    /// slept at once). Engines that never wait report zeros.
    fn waits(&self) -> WaitCounts {
        WaitCounts::default()
    }
    /// The trial's clock started at `epoch` (every worker of a trial is given the same
    /// instant): an engine that learns how to wait aligns its probe windows on it.
    fn start(&mut self, epoch: std::time::Instant) {
        let _ = epoch;
    }
}

/// How an engine's waits for completions went, for the record: a trial that spun used CPU
/// time a sleeping one would not have (`docs/accuracy.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitCounts {
    /// Waits that found a completion while spinning.
    pub spun: u64,
    /// Waits that spun for the whole budget, then slept.
    pub spun_then_slept: u64,
    /// Waits that slept at once (blocking mode, or spinning backed off on a slow device).
    pub slept: u64,
    /// `--wait auto`: pairs of probe windows (one spinning, one sleeping) compared, and in
    /// how many spinning completed IOs faster (`engine/learn.rs`).
    pub compared: u32,
    /// Of [`WaitCounts::compared`], the pairs spinning won.
    pub spin_won: u32,
}

impl WaitCounts {
    /// Adds another worker's waits (a trial's workers together).
    pub fn add(&mut self, o: WaitCounts) {
        self.spun += o.spun;
        self.spun_then_slept += o.spun_then_slept;
        self.slept += o.slept;
        self.compared += o.compared;
        self.spin_won += o.spin_won;
    }
}

/// Settings shared by every engine.
#[derive(Debug)]
pub struct EngineConfig {
    /// File descriptor to do IO on (owned by the caller, open for the engine's lifetime).
    pub fd: RawFd,
    /// IOs in flight at most (slots 0..depth; one more slot is reserved for flushes).
    pub depth: u32,
    /// Bytes per slot buffer.
    pub block_size: usize,
    /// Random data writes are issued from without a copy (registered with the ring where the
    /// kernel allows). The engine owns it, so it lives as long as any IO from it.
    pub pool: Option<BufferPool>,
    /// Spin for completions before sleeping ([`crate::spec::WaitMode::spins`]); with `learn`,
    /// only until the engine has measured which way completes IOs faster.
    pub spin: bool,
    /// Learn whether to spin while running (`--wait auto` in a closed loop: `engine/learn.rs`).
    pub learn: bool,
}

/// Checks that `len` bytes at `at` lie inside a pool of `size` bytes.
#[inline]
pub(crate) fn pool_range(slot: u32, at: usize, len: u32, size: usize) -> Result<(), EngineError> {
    if at.checked_add(len as usize).is_some_and(|end| end <= size) {
        Ok(())
    } else {
        Err(EngineError::Slot {
            slot,
            why: "pooled write outside the data pool",
        })
    }
}
