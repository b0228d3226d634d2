//! The first half of every run on one target: the target resolved under the write-safety rules,
//! the suite checked against it, replays fitted to it, the preflight passed. Everything here can
//! refuse a run, and does so before one byte of the suite is written or a run is stored.
//!
//! `iolab run`, the lab (once per layout and phase) and the `--hosts` agent all start a run
//! through [`prepare`] (or [`prepare_fitting_replays`]); see [`super::run`] for the whole run.

use crate::runner::replay::ReplayError;
use crate::runner::suite::{SuiteOptions, preflight, working_set};
use crate::spec::{Suite, WorkloadKind};
use crate::target::{Target, TargetError, TargetKind, TargetRequest};
use crate::trace::TraceError;

/// Why a run could not start. Nothing was written and nothing stored.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The target cannot be used as asked (missing, holds data without `--destroy`, too small,
    /// block size against its O_DIRECT alignment, no room for the working set).
    /// [`TargetError::is_usage`] says whether the user can fix it by asking differently.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// A small-file workload was given a block device: it needs a filesystem to make files in.
    #[error("the small-file workload needs a directory on a filesystem, not a block device")]
    SmallFilesOnDevice,
    /// A replay's trace could not be read.
    #[error("replay: {0}")]
    Trace(#[from] TraceError),
    /// A replay cannot be fitted to the target (it reaches past it without a mapping).
    #[error("replay: {0}")]
    Replay(#[from] ReplayError),
}

/// How one replay was fitted to the target, for the caller to show before the run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayFit {
    /// The replay workload's name.
    pub workload: String,
    /// IOs one pass of the replay issues.
    pub ios: usize,
    /// How the trace's offsets land on the target (`exact`, `wrap`, `scale`, with the sizes).
    pub mapping: String,
}

/// Resolves and checks the target for `suite`, leaving replays as they are (the runner plans
/// them per trial on the working set the options give).
///
/// The lab and the `--hosts` agent start here: the lab's target is the layout's mount point
/// with its working set fixed by the lab, and the agent's suite comes from a controller that
/// fitted nothing.
///
/// # Errors
/// [`PrepareError`]: the target refused, a small-file workload on a device, a failed preflight.
pub fn prepare(
    suite: &Suite,
    opts: &SuiteOptions,
    request: &TargetRequest,
) -> Result<Target, PrepareError> {
    let target = resolve_checked(suite, request)?;
    preflight(suite, &target, opts)?;
    Ok(target)
}

/// [`prepare`], with every replay fitted to the target between the checks and the preflight:
/// on a file or directory target a replay without a size is made as large as its trace reaches;
/// a trace reaching past the target without a mapping is refused now, not mid-run. `fitted`
/// hears how each replay was fitted, as it is (`iolab run` prints it).
///
/// # Errors
/// As [`prepare`], and [`PrepareError::Trace`]/[`PrepareError::Replay`] for a replay that
/// cannot be read or fitted.
pub fn prepare_fitting_replays(
    suite: &mut Suite,
    opts: &SuiteOptions,
    request: &TargetRequest,
    fitted: &mut dyn FnMut(&ReplayFit),
) -> Result<Target, PrepareError> {
    let target = resolve_checked(suite, request)?;
    fit_replays(suite, &target, opts, fitted)?;
    preflight(suite, &target, opts)?;
    Ok(target)
}

/// Whether `suite` writes to its target, so that a block device needs `--destroy`: a write
/// pattern on a real engine, or small files. A cached read only reads.
pub fn suite_writes(suite: &Suite) -> bool {
    suite.workloads.iter().any(|w| match &w.kind {
        WorkloadKind::Io(io) => io.pattern.writes() && io.engine != crate::spec::EngineKind::Null,
        WorkloadKind::SmallFiles(_) => true,
        WorkloadKind::CachedRead(_) => false,
    })
}

/// The target resolved, and refused for a small-file workload when it is a block device.
fn resolve_checked(suite: &Suite, request: &TargetRequest) -> Result<Target, PrepareError> {
    let target = Target::resolve(request)?;
    if target.info.kind == TargetKind::BlockDevice
        && suite
            .workloads
            .iter()
            .any(|w| matches!(w.kind, WorkloadKind::SmallFiles(_)))
    {
        return Err(PrepareError::SmallFilesOnDevice);
    }
    Ok(target)
}

/// Fits each replay to the target (see [`prepare_fitting_replays`]).
fn fit_replays(
    suite: &mut Suite,
    target: &Target,
    opts: &SuiteOptions,
    fitted: &mut dyn FnMut(&ReplayFit),
) -> Result<(), PrepareError> {
    for w in &mut suite.workloads {
        let WorkloadKind::Io(io) = &mut w.kind else {
            continue;
        };
        let Some(r) = io.replay.clone() else {
            continue;
        };
        let t = crate::runner::replay::load(&r)?;
        let n = crate::runner::replay::needs(&t);
        if target.info.kind != TargetKind::BlockDevice && io.size.is_none() {
            io.size = Some(n.max_end.div_ceil(io.block_size).max(1) * io.block_size);
        }
        let laid_out = std::fs::metadata(target.path()).map_or(0, |m| m.len());
        let ws = working_set(io, target, laid_out, opts.default_size)?;
        let plan = crate::runner::replay::plan(&r, io.loops, ws)?;
        fitted(&ReplayFit {
            workload: w.name.clone(),
            ios: plan.ios.len(),
            mapping: plan.sample.mapping.clone(),
        });
    }
    Ok(())
}
