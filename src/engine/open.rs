//! Which engine a worker runs with: the one its workload asks for, or psync when io_uring
//! cannot be set up on this machine (an old kernel, a seccomp filter, `io_uring_disabled`, a
//! ring larger than the kernel allows). Decided here, once per worker and before its window
//! opens; the runner then matches on [`AnyEngine`] once and runs a loop monomorphic in the
//! engine, so no IO pays for the choice.

use super::{Engine, EngineConfig, EngineError, NullEngine, PsyncEngine, UringEngine};
use crate::spec::EngineKind;

/// One set-up engine of any kind. An enum, not a trait object: the runner matches once and
/// hands the engine inside to code generic over [`Engine`] (no dynamic dispatch per IO).
// It lives only from `open` to that match, and the engine moves into the worker by value
// either way: boxing the ring would add an allocation and a copy for nothing.
#[allow(clippy::large_enum_variant)]
pub enum AnyEngine {
    /// io_uring, as asked.
    IoUring(UringEngine),
    /// psync: asked for, or io_uring could not be set up.
    Psync(PsyncEngine),
    /// The null engine.
    Null(NullEngine),
}

/// What [`open`] set up: the engine, and the depth its slots were made for.
pub struct Opened {
    /// The engine that could be set up.
    pub engine: AnyEngine,
    /// IOs in flight at most: the depth asked for, or 1 with psync, which completes each IO
    /// inside `queue` (one slot keeps its per-IO timing exact).
    pub depth: u32,
}

impl Opened {
    /// The engine actually used, which the trial records (a note says when it is not the one
    /// the workload asked for).
    pub fn kind(&self) -> EngineKind {
        match &self.engine {
            AnyEngine::IoUring(e) => e.kind(),
            AnyEngine::Psync(e) => e.kind(),
            AnyEngine::Null(e) => e.kind(),
        }
    }
}

/// Sets up the engine `kind` for up to `depth` IOs in flight, falling back from io_uring to
/// psync (depth 1) when the ring cannot be set up.
///
/// `config(depth)` makes the settings of one attempt. It is called once per engine tried, so
/// twice when io_uring falls back, and must hand over a fresh data pool each time: the failed
/// ring took the first one down with it.
///
/// # Errors
/// The engine (or the psync fallback) could not be set up: buffers not allocated, or a setup
/// error of psync or null. A failed io_uring setup is not an error; it is the fallback.
pub fn open(
    kind: EngineKind,
    depth: u32,
    mut config: impl FnMut(u32) -> EngineConfig,
) -> Result<Opened, EngineError> {
    let psync = |config: &mut dyn FnMut(u32) -> EngineConfig| {
        PsyncEngine::new(config(1)).map(|e| Opened {
            engine: AnyEngine::Psync(e),
            depth: 1,
        })
    };
    match kind {
        EngineKind::Null => NullEngine::new(config(depth)).map(|e| Opened {
            engine: AnyEngine::Null(e),
            depth,
        }),
        EngineKind::Psync => psync(&mut config),
        EngineKind::IoUring => match UringEngine::new(config(depth)) {
            Ok(e) => Ok(Opened {
                engine: AnyEngine::IoUring(e),
                depth,
            }),
            Err(EngineError::Setup { .. }) => psync(&mut config),
            Err(e) => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd as _;

    fn config(fd: i32, calls: &mut Vec<u32>) -> impl FnMut(u32) -> EngineConfig + '_ {
        move |depth| {
            calls.push(depth);
            EngineConfig {
                fd,
                depth,
                block_size: 4096,
                pool: None,
                spin: false,
                learn: false,
            }
        }
    }

    /// The io_uring -> psync fallback is decided in the engine stage. A ring of
    /// 32768 IOs plus the flush slot needs 65536 entries, past the kernel's 32768: its setup
    /// fails on every kernel, and psync at depth 1 runs instead, saying so in its kind.
    #[test]
    fn a_ring_the_kernel_refuses_falls_back_to_psync_at_depth_one() {
        let f = tempfile::tempfile().expect("temp file");
        let mut calls = Vec::new();
        let o = open(
            EngineKind::IoUring,
            32768,
            config(f.as_raw_fd(), &mut calls),
        )
        .expect("psync sets up");
        assert_eq!(o.kind(), EngineKind::Psync);
        assert_eq!(o.depth, 1);
        assert!(matches!(o.engine, AnyEngine::Psync(_)));
        assert_eq!(
            calls,
            [32768, 1],
            "one io_uring attempt, then psync at depth 1"
        );
    }

    /// psync asked for runs at depth 1 with one attempt; null keeps the depth asked for.
    #[test]
    fn psync_runs_at_depth_one_and_null_at_the_depth_asked() {
        let f = tempfile::tempfile().expect("temp file");
        let mut calls = Vec::new();
        let p = open(EngineKind::Psync, 32, config(f.as_raw_fd(), &mut calls)).expect("psync");
        assert_eq!((p.kind(), p.depth), (EngineKind::Psync, 1));
        let n = open(EngineKind::Null, 32, config(-1, &mut calls)).expect("null");
        assert_eq!((n.kind(), n.depth), (EngineKind::Null, 32));
        assert_eq!(calls, [1, 32]);
    }
}
