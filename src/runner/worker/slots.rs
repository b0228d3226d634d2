//! The slot table of one worker: which IO each slot holds while it is in flight, which slots
//! are free, and the one kept for flushes (which go out alone).

/// What the IO in a slot does (for booking its completion).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotOp {
    Read,
    Write,
    Sync,
}

impl SlotOp {
    /// Index into the worker's per-second counters (`Worker::second`).
    #[inline]
    pub(super) fn idx(self) -> usize {
        match self {
            SlotOp::Read => 0,
            SlotOp::Write => 1,
            SlotOp::Sync => 2,
        }
    }

    #[inline]
    pub(super) fn name(self) -> &'static str {
        match self {
            SlotOp::Read => "read",
            SlotOp::Write => "write",
            SlotOp::Sync => "sync",
        }
    }
}

/// One IO in flight: when it was due and submitted, what it does and where.
#[derive(Clone, Copy)]
pub(super) struct InFlight {
    /// When it was due: its submission in a closed loop, its scheduled time in an open one.
    pub(super) due_ns: u64,
    pub(super) submitted_ns: u64,
    pub(super) op: SlotOp,
    pub(super) offset: u64,
    /// Bytes (0 for a flush).
    pub(super) len: u32,
}

/// The slot table: which slots are free, and what each busy one holds. Slot `depth` is kept
/// for flushes, which go out alone.
pub(super) struct Slots {
    pub(super) busy: Vec<Option<InFlight>>,
    pub(super) free: Vec<u32>,
    pub(super) inflight: u32,
    pub(super) sync_slot: u32,
}

impl Slots {
    pub(super) fn new(depth: u32) -> Slots {
        Slots {
            busy: vec![None; depth as usize + 1],
            free: (0..depth).rev().collect(),
            inflight: 0,
            sync_slot: depth,
        }
    }

    /// Marks a slot (from [`Slots::free`] or the sync slot) busy.
    #[inline]
    pub(super) fn occupy(&mut self, slot: u32, io: InFlight) {
        self.busy[slot as usize] = Some(io);
        self.inflight += 1;
    }

    /// Frees the slot of a completion and says what it held (`None`: an unknown slot, which
    /// an engine must never return).
    #[inline]
    pub(super) fn release(&mut self, slot: u32) -> Option<InFlight> {
        let io = self.busy.get_mut(slot as usize)?.take()?;
        self.inflight -= 1;
        if slot != self.sync_slot {
            self.free.push(slot);
        }
        Some(io)
    }

    #[inline]
    pub(super) fn sync_busy(&self) -> bool {
        self.busy[self.sync_slot as usize].is_some()
    }

    /// Whether an IO is in flight on the block at `offset` (verify mode never overlaps two).
    #[inline]
    pub(super) fn offset_busy(&self, offset: u64) -> bool {
        self.busy
            .iter()
            .any(|b| matches!(b, Some(io) if io.op != SlotOp::Sync && io.offset == offset))
    }
}
