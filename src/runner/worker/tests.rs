use super::*;
use crate::engine::BufferPool;

/// Completes IOs like the null engine, but fails or shortens the n-th one.
struct Faulty {
    bufs: BufferPool,
    done: Vec<Completion>,
    n: u64,
    fail_at: u64,
    result: i32,
}

impl Engine for Faulty {
    fn kind(&self) -> EngineKind {
        EngineKind::Null
    }
    fn buffer_mut(&mut self, slot: u32) -> Option<&mut [u8]> {
        Some(self.bufs.slot_mut(slot as usize))
    }
    fn queue(&mut self, slot: u32, op: IoOp, _o: u64, len: u32) -> Result<(), EngineError> {
        self.n += 1;
        let ok = if matches!(op, IoOp::Sync(_)) {
            0
        } else {
            len as i32
        };
        let result = if self.n == self.fail_at {
            self.result
        } else {
            ok
        };
        self.done.push(Completion { slot, result });
        Ok(())
    }
    fn pool_mut(&mut self) -> Option<&mut [u8]> {
        None
    }
    fn queue_write_pooled(
        &mut self,
        slot: u32,
        _at: usize,
        o: u64,
        len: u32,
    ) -> Result<(), EngineError> {
        self.queue(slot, IoOp::Write, o, len)
    }
    fn submit_and_reap(&mut self, _m: u32, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        out.append(&mut self.done);
        Ok(())
    }
}

fn run_faulty(w: &IoWorkload, fail_at: u64, result: i32) -> WorkerOut {
    let file = IoFile {
        path: "/x".into(),
        offset: 0,
        size: 1 << 20,
        direct_ok: true,
        verify: None,
    };
    let stop = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let counters = Counters::default();
    let p = WorkerParams {
        w,
        file: &file,
        region: Region {
            start: 0,
            len: 1 << 20,
        },
        quota: 1 << 20,
        seed: 1,
        start_line: &Barrier::new(1),
        start: &OnceLock::new(),
        gate: &StartGate::default(),
        ramp_ns: 0,
        deadline_ns: u64::MAX,
        direct: true,
        stop: &stop,
        abort: &abort,
        counters: &counters,
        index: 0,
        intervals: std::sync::mpsc::channel().0,
        pool: &crate::runner::interval::Pool::default(),
        replay: None,
        resume: 0,
    };
    let eng = Faulty {
        bufs: BufferPool::new(4096, 9).unwrap(),
        done: Vec::new(),
        n: 0,
        fail_at,
        result,
    };
    let mut data = DataGen::new(1, !w.pattern.writes(), 4096, w.queue_depth as usize);
    Worker::new(eng, &p, w.queue_depth, &mut data).run()
}

fn wl(pattern: Pattern) -> IoWorkload {
    IoWorkload {
        pattern,
        queue_depth: 8,
        ..IoWorkload::default()
    }
}

#[test]
fn clean_run_counts_every_io_once() {
    let o = run_faulty(&wl(Pattern::RandRead), 0, 0);
    assert!(o.error.is_none());
    assert_eq!(o.acct.submitted, 256);
    assert_eq!(o.acct.completed, 256);
    assert_eq!(o.read.count, 256);
    assert_eq!(o.read.latency.len(), 256);
    assert_eq!(o.read.bytes, 1 << 20);
    assert_eq!(o.series.iter().map(|p| p.ops).sum::<u64>(), 256);
}

#[test]
fn eio_is_an_error_not_a_completed_io() {
    let o = run_faulty(&wl(Pattern::RandRead), 10, -libc::EIO);
    let e = o.error.expect("error reported");
    assert!(e.to_string().contains("Input/output error"), "{e}");
    assert_eq!(o.acct.errors, 1);
    assert_eq!(
        o.acct.submitted, o.acct.completed,
        "drained before stopping"
    );
    assert_eq!(
        o.read.count,
        o.acct.completed - 1,
        "the failed IO is not counted as done"
    );
}

#[test]
fn enospc_says_disk_full() {
    let o = run_faulty(&wl(Pattern::Write), 5, -libc::ENOSPC);
    let e = o.error.expect("error reported");
    assert!(e.is_disk_full());
    assert!(e.to_string().contains("disk full"), "{e}");
}

#[test]
fn short_read_is_reported() {
    let o = run_faulty(&wl(Pattern::Read), 3, 512);
    let e = o.error.expect("short read reported");
    assert!(e.to_string().contains("short read"), "{e}");
    assert_eq!(o.acct.short, 1);
    assert_eq!(o.read.count, o.acct.completed - 1);
}

#[test]
fn fsync_every_n_writes_drains_then_syncs() {
    let w = IoWorkload {
        fsync_every: 4,
        ..wl(Pattern::RandWrite)
    };
    let o = run_faulty(&w, 0, 0);
    assert!(o.error.is_none());
    assert_eq!(o.write.count, 256);
    assert_eq!(o.acct.syncs, 64);
    assert_eq!(o.sync.count, 64);
}
