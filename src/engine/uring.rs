//! The io_uring engine: one ring per worker thread, batched submission and reaping, the file
//! and the slot buffers registered with the ring where the kernel allows (saves a file lookup
//! and a page pin per IO). This file holds all of iolab's io_uring code.

use std::os::fd::RawFd;

use io_uring::{IoUring, opcode, squeue, types};

use super::{
    BufferPool, Completion, Engine, EngineConfig, EngineError, IoOp, SlotStates, pool_range,
};
use crate::spec::{EngineKind, SyncKind};

/// io_uring with registered file and buffers.
pub struct UringEngine {
    // Field order matters: the ring (which holds the buffer registration) drops before the
    // buffers it points into.
    ring: IoUring,
    bufs: BufferPool,
    /// The data pool writes are issued from (registered after the slots when it can be).
    pool: Option<BufferPool>,
    slots: SlotStates,
    fd: RawFd,
    fixed_file: bool,
    fixed_bufs: bool,
    /// Buffer index of the registered extra region (the data pool), when registered.
    extra_index: Option<u16>,
    /// Ring setup flags that were accepted, for the record.
    pub setup: &'static str,
}

/// A way to configure a ring builder, tried in order until the kernel accepts one.
type SetupTry = (&'static str, fn(&mut io_uring::Builder));

fn build_ring(entries: u32) -> std::io::Result<(IoUring, &'static str)> {
    // Newest flags first: one submitter thread, task work deferred to our own waits.
    let tries: [SetupTry; 3] = [
        ("single_issuer+defer_taskrun", |b| {
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_coop_taskrun();
        }),
        ("coop_taskrun", |b| {
            b.setup_coop_taskrun();
        }),
        ("plain", |_| {}),
    ];
    let mut last = None;
    for (name, f) in tries {
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2);
        f(&mut b);
        match b.build(entries) {
            Ok(r) => return Ok((r, name)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("io_uring setup failed")))
}

impl UringEngine {
    /// Sets up a ring for `cfg.depth` IOs plus one flush, registering what the kernel accepts.
    pub fn new(cfg: EngineConfig) -> Result<UringEngine, EngineError> {
        let slots = cfg.depth as usize + 1;
        let entries = (slots as u32).next_power_of_two().max(8);
        let (ring, setup) = build_ring(entries).map_err(|source| EngineError::Setup {
            engine: "io_uring",
            source,
        })?;
        let bufs = BufferPool::new(cfg.block_size, slots)?;
        let fixed_file = ring.submitter().register_files(&[cfg.fd]).is_ok();
        let mut iovecs = bufs.iovecs();
        if let Some(p) = &cfg.pool {
            iovecs.extend(p.iovecs());
        }
        // SAFETY: the iovecs point into `bufs` and `pool`, which live in the same struct as the
        // ring and are dropped after it (field order), so they stay valid while registered.
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        let extra_index = (fixed_bufs && cfg.pool.is_some()).then_some(slots as u16);
        Ok(UringEngine {
            ring,
            bufs,
            pool: cfg.pool,
            slots: SlotStates::new(slots),
            fd: cfg.fd,
            fixed_file,
            fixed_bufs,
            extra_index,
            setup,
        })
    }

    /// Puts an entry on the submission queue, handing the queue to the kernel first when full.
    ///
    /// # Safety
    /// The memory the entry points at must stay valid until its completion is reaped.
    unsafe fn push(&mut self, e: &squeue::Entry) -> Result<(), EngineError> {
        loop {
            // SAFETY: forwarded from the caller.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return Ok(());
            }
            self.ring.submit().map_err(|source| EngineError::Submit {
                engine: "io_uring",
                source,
            })?;
        }
    }

    /// Whether the file and buffers are registered (for notes).
    pub fn registered(&self) -> (bool, bool) {
        (self.fixed_file, self.fixed_bufs)
    }

    fn entry(&self, slot: u32, op: IoOp, offset: u64, len: u32) -> squeue::Entry {
        let p = self.bufs.slot_ptr(slot as usize);
        let bi = slot as u16;
        macro_rules! with_fd {
            ($fd:expr) => {
                match op {
                    IoOp::Read if self.fixed_bufs => opcode::ReadFixed::new($fd, p, len, bi)
                        .offset(offset)
                        .build(),
                    IoOp::Read => opcode::Read::new($fd, p, len).offset(offset).build(),
                    IoOp::Write if self.fixed_bufs => opcode::WriteFixed::new($fd, p, len, bi)
                        .offset(offset)
                        .build(),
                    IoOp::Write => opcode::Write::new($fd, p, len).offset(offset).build(),
                    IoOp::Sync(SyncKind::Fdatasync) => opcode::Fsync::new($fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build(),
                    IoOp::Sync(SyncKind::Fsync) => opcode::Fsync::new($fd).build(),
                }
            };
        }
        let e = if self.fixed_file {
            with_fd!(types::Fixed(0))
        } else {
            with_fd!(types::Fd(self.fd))
        };
        e.user_data(u64::from(slot))
    }
}

impl Engine for UringEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::IoUring
    }

    fn buffer_mut(&mut self, slot: u32) -> Option<&mut [u8]> {
        self.slots
            .is_free(slot)
            .then(|| self.bufs.slot_mut(slot as usize))
    }

    #[inline]
    fn queue(&mut self, slot: u32, op: IoOp, offset: u64, len: u32) -> Result<(), EngineError> {
        self.slots.take(slot)?;
        let len = len.min(self.bufs.slot_size() as u32);
        let e = self.entry(slot, op, offset, len);
        // SAFETY: the entry's buffer is a slot of self.bufs, busy (no other IO, no slice handed
        // out) until its completion is reaped; the buffers outlive the ring (field order).
        unsafe { self.push(&e) }
    }

    fn pool_mut(&mut self) -> Option<&mut [u8]> {
        self.pool.as_mut().map(|p| p.slot_mut(0))
    }

    #[inline]
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
        let data = pool.slot(0)[at..].as_ptr();
        let e = match (self.fixed_file, self.extra_index) {
            (true, Some(bi)) => opcode::WriteFixed::new(types::Fixed(0), data, len, bi)
                .offset(offset)
                .build(),
            (true, None) => opcode::Write::new(types::Fixed(0), data, len)
                .offset(offset)
                .build(),
            (false, Some(bi)) => opcode::WriteFixed::new(types::Fd(self.fd), data, len, bi)
                .offset(offset)
                .build(),
            (false, None) => opcode::Write::new(types::Fd(self.fd), data, len)
                .offset(offset)
                .build(),
        }
        .user_data(u64::from(slot));
        // SAFETY: `data` points at `len` bytes inside the pool this engine owns, which outlives
        // the ring (field order); the kernel only reads them.
        unsafe { self.push(&e) }
    }

    #[inline]
    fn submit_and_reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        loop {
            match self.ring.submit_and_wait(min as usize) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                // The completion queue is full: reap, and the caller comes back to submit.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(source) => {
                    return Err(EngineError::Submit {
                        engine: "io_uring",
                        source,
                    });
                }
            }
        }
        for c in self.ring.completion() {
            let slot = c.user_data() as u32;
            self.slots.done(slot);
            out.push(Completion {
                slot,
                result: c.result(),
            });
        }
        Ok(())
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Closing a ring tears it down asynchronously in the kernel, and until then a registered
        // file keeps the filesystem busy (umount fails with EBUSY right after a run). Dropping
        // the registrations first releases the file now.
        if self.fixed_file {
            let _ = self.ring.submitter().unregister_files();
        }
        if self.fixed_bufs {
            let _ = self.ring.submitter().unregister_buffers();
        }
    }
}
