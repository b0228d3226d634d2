//! The psync engine: pread/pwrite/fdatasync, one IO at a time; the portable fallback and the
//! reference io_uring is compared with.

use super::{
    BufferPool, Completion, Engine, EngineConfig, EngineError, IoOp, SlotStates, pool_range,
};
use crate::spec::{EngineKind, SyncKind};

/// Synchronous IO with pread(2)/pwrite(2).
pub struct PsyncEngine {
    fd: std::os::fd::RawFd,
    bufs: BufferPool,
    pool: Option<BufferPool>,
    slots: SlotStates,
    done: Vec<Completion>,
}

impl PsyncEngine {
    /// A psync engine on an open file descriptor.
    pub fn new(cfg: EngineConfig) -> Result<PsyncEngine, EngineError> {
        let count = cfg.depth as usize + 1;
        Ok(PsyncEngine {
            fd: cfg.fd,
            bufs: BufferPool::new(cfg.block_size, count)?,
            pool: cfg.pool,
            slots: SlotStates::new(count),
            done: Vec::with_capacity(count),
        })
    }

    fn finish(&mut self, slot: u32, r: isize) {
        let result = if r < 0 {
            -std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        } else {
            r as i32
        };
        self.done.push(Completion { slot, result });
    }
}

impl Engine for PsyncEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Psync
    }

    fn buffer_mut(&mut self, slot: u32) -> Option<&mut [u8]> {
        self.slots
            .is_free(slot)
            .then(|| self.bufs.slot_mut(slot as usize))
    }

    fn queue(&mut self, slot: u32, op: IoOp, offset: u64, len: u32) -> Result<(), EngineError> {
        self.slots.take(slot)?;
        let len = (len as usize).min(self.bufs.slot_size());
        let off = offset as libc::off_t;
        let r: isize = match op {
            IoOp::Read => {
                let buf = &mut self.bufs.slot_mut(slot as usize)[..len];
                // SAFETY: buf is `len` writable bytes owned by self.bufs; fd is open.
                unsafe { libc::pread(self.fd, buf.as_mut_ptr().cast(), len, off) }
            }
            IoOp::Write => {
                let buf = &self.bufs.slot(slot as usize)[..len];
                // SAFETY: buf is `len` readable bytes owned by self.bufs; fd is open.
                unsafe { libc::pwrite(self.fd, buf.as_ptr().cast(), len, off) }
            }
            // SAFETY: fdatasync/fsync take only a descriptor.
            IoOp::Sync(SyncKind::Fdatasync) => unsafe { libc::fdatasync(self.fd) as isize },
            // SAFETY: as above.
            IoOp::Sync(SyncKind::Fsync) => unsafe { libc::fsync(self.fd) as isize },
        };
        self.finish(slot, r);
        Ok(())
    }

    fn pool_mut(&mut self) -> Option<&mut [u8]> {
        self.pool.as_mut().map(|p| p.slot_mut(0))
    }

    fn queue_write_pooled(
        &mut self,
        slot: u32,
        at: usize,
        offset: u64,
        len: u32,
    ) -> Result<(), EngineError> {
        let Some(pool) = self.pool.as_ref() else {
            return pool_range(slot, at, len, 0);
        };
        pool_range(slot, at, len, pool.slot_size())?;
        self.slots.take(slot)?;
        let data = &pool.slot(0)[at..at + len as usize];
        // SAFETY: data is `len` readable bytes of the pool this engine owns; fd is open.
        let r = unsafe {
            libc::pwrite(
                self.fd,
                data.as_ptr().cast(),
                data.len(),
                offset as libc::off_t,
            )
        };
        self.finish(slot, r);
        Ok(())
    }

    fn submit_and_reap(&mut self, _min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        for c in &self.done {
            self.slots.done(c.slot);
        }
        out.append(&mut self.done);
        Ok(())
    }
}
