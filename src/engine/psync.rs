//! The psync engine: pread/pwrite/fdatasync, one IO at a time; the portable fallback and the
//! reference io_uring is compared with.

use super::{BufferPool, Completion, Engine, EngineConfig, EngineError, IoOp};
use crate::spec::{EngineKind, SyncKind};

/// Synchronous IO with pread(2)/pwrite(2).
pub struct PsyncEngine {
    fd: std::os::fd::RawFd,
    bufs: BufferPool,
    done: Vec<Completion>,
}

impl PsyncEngine {
    /// A psync engine on an open file descriptor.
    pub fn new(cfg: &EngineConfig) -> Result<PsyncEngine, EngineError> {
        Ok(PsyncEngine {
            fd: cfg.fd,
            bufs: BufferPool::new(cfg.block_size, cfg.depth as usize + 1)?,
            done: Vec::with_capacity(cfg.depth as usize + 1),
        })
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl Engine for PsyncEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Psync
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.bufs.slot_mut(slot as usize)
    }

    fn queue(&mut self, slot: u32, op: IoOp, offset: u64, len: u32) -> Result<(), EngineError> {
        let p = self.bufs.slot_ptr(slot as usize);
        let len = (len as usize).min(self.bufs.slot_size());
        let r: isize = match op {
            // SAFETY: p points at a slot of at least len bytes owned by self.bufs; fd is open.
            IoOp::Read => unsafe { libc::pread(self.fd, p.cast(), len, offset as libc::off_t) },
            // SAFETY: as above; the kernel only reads the buffer.
            IoOp::Write => unsafe { libc::pwrite(self.fd, p.cast(), len, offset as libc::off_t) },
            // SAFETY: fd is an open descriptor.
            IoOp::Sync(SyncKind::Fdatasync) => unsafe { libc::fdatasync(self.fd) as isize },
            // SAFETY: fd is an open descriptor.
            IoOp::Sync(SyncKind::Fsync) => unsafe { libc::fsync(self.fd) as isize },
        };
        let result = if r < 0 { -errno() } else { r as i32 };
        self.done.push(Completion { slot, result });
        Ok(())
    }

    unsafe fn queue_write_from(
        &mut self,
        slot: u32,
        data: *const u8,
        offset: u64,
        len: u32,
    ) -> Result<(), EngineError> {
        // SAFETY: the caller guarantees `data` holds `len` readable bytes; fd is open.
        let r = unsafe { libc::pwrite(self.fd, data.cast(), len as usize, offset as libc::off_t) };
        let result = if r < 0 { -errno() } else { r as i32 };
        self.done.push(Completion { slot, result });
        Ok(())
    }

    fn submit_and_reap(&mut self, _min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        out.append(&mut self.done);
        Ok(())
    }
}
