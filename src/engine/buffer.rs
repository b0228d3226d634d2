//! IO buffers: one page-aligned allocation cut into equal slots, one slot per IO in flight.
//!
//! O_DIRECT needs aligned memory; io_uring's registered buffers want a stable address for the
//! ring's lifetime. One allocation serves both and is freed exactly once.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// Alignment of every slot: a page, enough for any logical block size in use.
pub const BUFFER_ALIGN: usize = 4096;

/// A pool of `count` aligned slots of `slot_size` bytes each.
pub struct BufferPool {
    ptr: NonNull<u8>,
    layout: Layout,
    slot_size: usize,
    count: usize,
}

// SAFETY: the pool owns its allocation exclusively; moving it to another thread moves ownership.
unsafe impl Send for BufferPool {}

/// The pool could not be allocated.
#[derive(Debug, thiserror::Error)]
#[error("cannot allocate {0} bytes of IO buffers; lower the queue depth or block size")]
pub struct AllocError(pub usize);

impl BufferPool {
    /// Allocates zeroed slots; each slot is `slot_size` rounded up to the alignment.
    pub fn new(slot_size: usize, count: usize) -> Result<BufferPool, AllocError> {
        let slot = slot_size.max(1).div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN;
        let total = slot
            .checked_mul(count.max(1))
            .ok_or(AllocError(usize::MAX))?;
        let layout = Layout::from_size_align(total, BUFFER_ALIGN).map_err(|_| AllocError(total))?;
        // SAFETY: the layout has a non-zero size (slot >= BUFFER_ALIGN, count >= 1).
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(AllocError(total))?;
        Ok(BufferPool {
            ptr,
            layout,
            slot_size: slot,
            count: count.max(1),
        })
    }

    /// Bytes per slot (aligned).
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Number of slots.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Start address of a slot, for handing to the kernel.
    pub fn slot_ptr(&self, i: usize) -> *mut u8 {
        assert!(i < self.count, "buffer slot {i} out of range");
        // SAFETY: i < count, so the offset stays inside the allocation.
        unsafe { self.ptr.as_ptr().add(i * self.slot_size) }
    }

    /// A slot as a mutable slice.
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        let p = self.slot_ptr(i);
        // SAFETY: p points at slot_size initialized (zeroed) bytes owned by self, and the
        // &mut self borrow prevents aliasing through this API.
        unsafe { std::slice::from_raw_parts_mut(p, self.slot_size) }
    }

    /// A slot as a slice.
    pub fn slot(&self, i: usize) -> &[u8] {
        let p = self.slot_ptr(i);
        // SAFETY: as in slot_mut, shared borrow.
        unsafe { std::slice::from_raw_parts(p, self.slot_size) }
    }

    /// iovecs of every slot, for io_uring buffer registration.
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        (0..self.count)
            .map(|i| libc::iovec {
                iov_base: self.slot_ptr(i).cast(),
                iov_len: self.slot_size,
            })
            .collect()
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with exactly this layout and is freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_and_disjoint() {
        let mut p = BufferPool::new(5000, 3).unwrap();
        assert_eq!(p.slot_size(), 8192);
        for i in 0..3 {
            assert_eq!(p.slot_ptr(i) as usize % BUFFER_ALIGN, 0);
            p.slot_mut(i).fill(i as u8 + 1);
        }
        assert!(p.slot(1).iter().all(|b| *b == 2));
        assert_eq!(p.iovecs().len(), 3);
    }
}
