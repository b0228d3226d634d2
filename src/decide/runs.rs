//! A decision straight from a lab's runs: their facts, optionally the layouts built again at
//! the real disk size for their usable bytes, then [`super::decide`]. One step for the lab's
//! own decision at its end, `iolab decide` and `iolab report`.

use super::{DecideError, Decision, DiskMeasured, from_runs};
use crate::sample::RunRecord;
use crate::spec::decide::DecideSpec;

/// Whether a decision may build layouts again at the real disk size for their usable bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtRealSize {
    /// Build each layout this host can build on sparse files of that size (`iolab decide`,
    /// the decision at the end of a lab).
    Build,
    /// Build nothing: the planner's model of each layer's overhead, which meets what the
    /// layouts report within 1% (a report reads the store and touches no disk).
    Model,
}

/// Why a decision from runs was not made.
#[derive(Debug, thiserror::Error)]
pub enum RunsDecideError {
    /// A need the lab cannot answer (bad input: exit 2 at the command line).
    #[error(transparent)]
    Needs(#[from] DecideError),
    /// Ctrl-C while the layouts were built at the real disk size (they are torn down).
    #[error("interrupted while building layouts at the real disk size")]
    Interrupted,
}

/// Decides between a lab's runs by `spec`. With a real disk size and [`AtRealSize::Build`],
/// each layout this host can build is first built again on sparse files of that size for its
/// usable bytes (seconds each; Ctrl-C tears it down and stops).
///
/// # Errors
/// A need the runs cannot answer, or Ctrl-C during the builds at the real size.
pub fn decide_runs(
    lab_id: &str,
    runs: &[RunRecord],
    spec: &DecideSpec,
    disk: Option<&DiskMeasured>,
    at_size: AtRealSize,
) -> Result<Decision, RunsDecideError> {
    let mut facts = from_runs(lab_id, runs);
    let mut notes = Vec::new();
    if let Some(d) = spec.disk_bytes.filter(|_| at_size == AtRealSize::Build) {
        crate::signals::install();
        notes = super::measure::at_real_size(&mut facts, d, &crate::layout::state::state_dir());
        if crate::signals::stop_requested() {
            return Err(RunsDecideError::Interrupted);
        }
    }
    let mut decision = super::decide(&facts, spec, disk)?;
    decision.notes.extend(notes);
    let steady = super::steady::notes(&decision, runs);
    decision.notes.extend(steady);
    Ok(decision)
}
