//! The null engine: every IO completes at once with its full length and touches nothing.
//!
//! It drives deterministic tests of everything downstream and measures iolab's own overhead
//! per IO (compare with fio's `--ioengine=null`).

use super::{BufferPool, Completion, Engine, EngineConfig, EngineError, IoOp};
use crate::spec::EngineKind;

/// Completes IOs without doing them.
pub struct NullEngine {
    bufs: BufferPool,
    done: Vec<Completion>,
}

impl NullEngine {
    /// A null engine with small buffers (nothing is ever copied into them).
    pub fn new(cfg: &EngineConfig) -> Result<NullEngine, EngineError> {
        Ok(NullEngine {
            bufs: BufferPool::new(cfg.block_size, cfg.depth as usize + 1)?,
            done: Vec::with_capacity(cfg.depth as usize + 1),
        })
    }
}

impl Engine for NullEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Null
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.bufs.slot_mut(slot as usize)
    }

    #[inline]
    fn queue(&mut self, slot: u32, op: IoOp, _offset: u64, len: u32) -> Result<(), EngineError> {
        let result = if matches!(op, IoOp::Sync(_)) {
            0
        } else {
            len as i32
        };
        self.done.push(Completion { slot, result });
        Ok(())
    }

    #[inline]
    unsafe fn queue_write_from(
        &mut self,
        slot: u32,
        _data: *const u8,
        _offset: u64,
        len: u32,
    ) -> Result<(), EngineError> {
        self.done.push(Completion {
            slot,
            result: len as i32,
        });
        Ok(())
    }

    #[inline]
    fn submit_and_reap(&mut self, _min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        out.append(&mut self.done);
        Ok(())
    }
}
