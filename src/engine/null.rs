//! The null engine: every IO completes at once with its full length and touches nothing.
//!
//! It drives deterministic tests of everything downstream and measures iolab's own overhead
//! per IO (compare with fio's `--ioengine=null`).

use super::{
    BufferPool, Completion, Engine, EngineConfig, EngineError, IoOp, SlotStates, pool_range,
};
use crate::spec::EngineKind;

/// Completes IOs without doing them.
pub struct NullEngine {
    bufs: BufferPool,
    pool: Option<BufferPool>,
    slots: SlotStates,
    done: Vec<Completion>,
}

impl NullEngine {
    /// A null engine with small buffers (nothing is ever copied into them).
    pub fn new(cfg: EngineConfig) -> Result<NullEngine, EngineError> {
        let count = cfg.depth as usize + 1;
        Ok(NullEngine {
            bufs: BufferPool::new(cfg.block_size, count)?,
            pool: cfg.pool,
            slots: SlotStates::new(count),
            done: Vec::with_capacity(count),
        })
    }
}

impl Engine for NullEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Null
    }

    fn buffer_mut(&mut self, slot: u32) -> Option<&mut [u8]> {
        self.slots
            .is_free(slot)
            .then(|| self.bufs.slot_mut(slot as usize))
    }

    #[inline]
    fn queue(&mut self, slot: u32, op: IoOp, _offset: u64, len: u32) -> Result<(), EngineError> {
        self.slots.take(slot)?;
        let result = if matches!(op, IoOp::Sync(_)) {
            0
        } else {
            len as i32
        };
        self.done.push(Completion { slot, result });
        Ok(())
    }

    fn pool_mut(&mut self) -> Option<&mut [u8]> {
        self.pool.as_mut().map(|p| p.slot_mut(0))
    }

    #[inline]
    fn queue_write_pooled(
        &mut self,
        slot: u32,
        at: usize,
        _offset: u64,
        len: u32,
    ) -> Result<(), EngineError> {
        let size = self.pool.as_ref().map_or(0, BufferPool::slot_size);
        pool_range(slot, at, len, size)?;
        self.slots.take(slot)?;
        self.done.push(Completion {
            slot,
            result: len as i32,
        });
        Ok(())
    }

    #[inline]
    fn submit_and_reap(&mut self, _min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        for c in &self.done {
            self.slots.done(c.slot);
        }
        out.append(&mut self.done);
        Ok(())
    }
}
