//! The whole lab loop as one library step: [`super::run_lab`] walks the layouts, and this
//! module gives it the workloads (each mounted layout's suite as one stored run), then
//! concludes, keeps the completed layout records and decides — so the command line parses the
//! arguments, calls [`conduct`] and renders what comes back.

use super::driver::{LabError, LabEvent, LabOptions, MountedLayout, Phase};
use super::report::{LabReport, LabRun};
use super::spec::LabSpec;
use super::summary::{Conclusion, complete_record, conclude, mounted_record};
use crate::decide::{AtRealSize, Decision, DiskMeasured, RunsDecideError, decide_runs};
use crate::runner::suite::SuiteOptions;
use crate::sample::{LayoutRecord, RunRecord, TrialSample};
use crate::session::RunMeta;
use crate::stats::compare::Comparison;
use crate::store::{Store, StoreError};
use crate::target::TargetRequest;

/// How [`conduct`] runs a lab, beyond how the layouts are walked.
#[derive(Debug, Clone)]
pub struct ConductOptions {
    /// How the layouts are built, degraded and torn down.
    pub lab: LabOptions,
    /// The command line kept with every run (the caller's, secrets redacted).
    pub command_line: Vec<String>,
    /// Draw a progress bar while each layout's workloads run (stderr is a terminal and the
    /// text table follows).
    pub show_progress: bool,
    /// Decide between the layouts at the end when the spec has needs (`[decide]`); off for a
    /// dry run and for the VM's guest, whose host decides once the runs are labelled emulated.
    pub decide: bool,
    /// The real disks' speed (`disk_from`), read by the caller before anything is built.
    pub disk: Option<DiskMeasured>,
}

/// What a lab found, ready to render.
#[derive(Debug)]
pub struct LabOutcome {
    /// The layouts' report, with the degraded ratios and the stored runs filled in.
    pub report: LabReport,
    /// The healthy layouts compared; `None` when no healthy layout produced a result.
    pub comparison: Option<Comparison>,
    /// The decision by the spec's needs; `None` when the lab does not decide.
    pub decision: Option<Result<Decision, RunsDecideError>>,
    /// The runs' notes, merged.
    pub notes: LabNotes,
    /// Whether every completed layout record was kept in the store (no store: `Ok`). The
    /// records are kept before anything is printed, so a failing store does not cost the
    /// lab's results.
    pub saved: Result<(), SaveError>,
}

/// A layout record the store did not keep.
#[derive(Debug, thiserror::Error)]
#[error("saving the layout record of run {run} ({layout}) to {location}")]
pub struct SaveError {
    /// The run the record belongs to.
    pub run: String,
    /// The layout's name (`-` when the record names none).
    pub layout: String,
    /// The store.
    pub location: String,
    /// Why the store refused.
    #[source]
    pub source: Box<StoreError>,
}

/// Runs the lab `spec`: every layout walked by [`super::run_lab`], its workloads run on each
/// mounted phase as one stored run, then the conclusion, the records kept in `store` and the
/// decision. `progress` hears the lab's steps.
///
/// # Errors
/// Only when the lab could not start (see [`super::run_lab`]); what failed later is in the
/// outcome.
pub fn conduct(
    spec: &LabSpec,
    opts: &ConductOptions,
    mut store: Option<&mut Store>,
    progress: &mut dyn FnMut(LabEvent),
) -> Result<LabOutcome, LabError> {
    let mut runs: Vec<(LabRun, RunRecord)> = Vec::new();
    let mut workload = |m: &MountedLayout| -> anyhow::Result<()> {
        let (rec, error, interrupted) = run_layout(spec, m, store.as_deref_mut(), opts)?;
        runs.push((
            LabRun {
                layout: m.layout.name.clone(),
                phase: m.phase,
                run_id: rec.id.clone(),
            },
            rec,
        ));
        if interrupted {
            return Err(crate::error::Interrupted.into());
        }
        error.map_or(Ok(()), Err)
    };
    let mut report = super::run_lab(spec, &opts.lab, &mut workload, progress)?;
    let copies = (spec.decide.is_some() && opts.decide)
        .then(|| runs.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>());
    let notes = LabNotes::of(&runs);
    let Conclusion {
        comparison,
        records,
    } = conclude(spec, &mut report, runs);
    let saved = save_records(store, &records);
    let decision = (copies.zip(spec.decide.as_ref()))
        .map(|(c, d)| decide_lab(&report, c, d, opts.disk.as_ref()));
    Ok(LabOutcome {
        report,
        comparison,
        decision,
        notes,
        saved,
    })
}

/// The decision at the end of a lab: its runs as they ran, each layout record completed with
/// what the lab learned afterwards (rebuild, integrity), as the store keeps them.
fn decide_lab(
    report: &LabReport,
    mut runs: Vec<RunRecord>,
    spec: &crate::spec::decide::DecideSpec,
    disk: Option<&DiskMeasured>,
) -> Result<Decision, RunsDecideError> {
    for r in &mut runs {
        let Some(rec) = r.layout.as_mut() else {
            continue;
        };
        let name = rec.name.clone().unwrap_or_default();
        if let Some(lr) = report.layouts.iter().find(|l| l.name == name) {
            complete_record(rec, lr, false);
        }
    }
    decide_runs(&report.lab_id, &runs, spec, disk, AtRealSize::Build)
}

/// The notes of a lab's runs its screen says, each merged over the trials that wrote it (one
/// line, not one per trial).
#[derive(Debug, Clone, Default)]
pub struct LabNotes {
    /// Workers kept from their CPUs, per run (its label first): the tail may be the machine's,
    /// so the default screen says it.
    pub cpu_wait: Vec<String>,
    /// How the engine waited, over the whole lab: `--verbose` and the JSON.
    pub as_designed: Vec<String>,
    /// Each steady-state workload of each run judged by SNIA PTS's rules (`[workloads]
    /// steady_state`): every screen says whether its figure is steady, since a figure that
    /// is not must never pass for one.
    pub steady: Vec<LabSteady>,
    /// Each run's preconditioning (`[workloads] precondition`): what it wrote and how long
    /// it took, one line per run.
    pub precondition: Vec<String>,
}

/// One steady-state workload of one lab run, judged.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LabSteady {
    /// The run's label (the layout, `NAME-degraded` ...).
    pub label: String,
    /// The workload.
    pub workload: String,
    /// Its rounds judged.
    pub steadiness: crate::stats::steady::Steadiness,
}

impl LabSteady {
    /// `ext4-single rr: steady at round 5 (rounds 1-5: ...)`.
    pub fn line(&self) -> String {
        format!(
            "{} {}: {}",
            self.label,
            self.workload,
            self.steadiness.describe()
        )
    }
}

/// The run's label as the lab's notes say it.
fn run_label(l: &LabRun, r: &RunRecord) -> String {
    r.label.clone().unwrap_or_else(|| l.layout.clone())
}

/// The steady-state workloads of the lab's runs, judged, in the order they ran.
fn steady_of(runs: &[(LabRun, RunRecord)]) -> Vec<LabSteady> {
    runs.iter()
        .flat_map(|(l, r)| {
            r.workloads.iter().filter_map(move |w| {
                Some(LabSteady {
                    label: run_label(l, r),
                    workload: w.workload.name.clone(),
                    steadiness: crate::stats::steady::of_workload(w)?,
                })
            })
        })
        .collect()
}

/// Each run's precondition: `ext4-single: precondition: 4 KiB random writes: 64.0 MiB in 1.2 s`.
fn precondition_of(runs: &[(LabRun, RunRecord)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (l, r) in runs {
        for w in r
            .workloads
            .iter()
            .filter(|w| w.workload.name == "precondition")
        {
            let what = match w.workload.io().map(|io| io.pattern) {
                Some(crate::spec::Pattern::RandWrite) => crate::spec::Precondition::Random,
                _ => crate::spec::Precondition::Seq,
            };
            for t in &w.trials {
                let bytes: u64 = t.ops.iter().map(|o| o.bytes).sum();
                lines.push(format!(
                    "{}: precondition: {}: {} in {:.1} s",
                    run_label(l, r),
                    what.describe(),
                    crate::units::format_bytes(bytes),
                    t.elapsed().as_secs_f64()
                ));
            }
        }
    }
    lines
}

/// A run's trials, every workload's.
fn trials(r: &RunRecord) -> impl Iterator<Item = &TrialSample> {
    r.workloads.iter().flat_map(|w| &w.trials)
}

impl LabNotes {
    /// The notes of the lab's runs, in the order they ran.
    pub fn of(runs: &[(LabRun, RunRecord)]) -> LabNotes {
        use crate::sample::note::{Merged, NoteKind};
        let cpu_wait = runs
            .iter()
            .flat_map(|(l, r)| {
                let waited = |n: &crate::sample::Note| matches!(n.kind, NoteKind::CpuWait { .. });
                let label = r.label.clone().unwrap_or_else(|| l.layout.clone());
                Merged::of(trials(r), waited)
                    .lines()
                    .into_iter()
                    .map(move |line| format!("{label}: {line}"))
            })
            .collect();
        let as_designed =
            crate::sample::note::as_designed_lines(runs.iter().flat_map(|(_, r)| trials(r)));
        LabNotes {
            cpu_wait,
            as_designed,
            steady: steady_of(runs),
            precondition: precondition_of(runs),
        }
    }
}

/// The run's label: the layout's name, `NAME-degraded` while degraded, `NAME-rebuilding`
/// during the rebuild.
fn phase_label(m: &MountedLayout) -> String {
    match m.phase {
        Phase::Healthy => m.layout.name.clone(),
        Phase::Degraded => format!("{}-degraded", m.layout.name),
        Phase::Rebuilding => format!("{}-rebuilding", m.layout.name),
    }
}

/// The working set of a workload without a size of its own: a quarter of the layout, at most
/// 1GiB, at least 16MiB, whole MiB, so the working set fits beside the lab's fill data and a
/// degraded rebuild has room (4GiB assumed when the layout's size is unknown).
fn default_size(usable_bytes: Option<u64>) -> u64 {
    let usable = usable_bytes.unwrap_or(4 << 30);
    ((usable / 4).min(1 << 30) >> 20 << 20).max(16 << 20)
}

/// Runs the lab's workloads on one mounted layout as one stored run, labelled by
/// [`phase_label`] and tagged with the lab id: the run, why it stopped early, and whether
/// Ctrl-C stopped it.
fn run_layout(
    spec: &LabSpec,
    m: &MountedLayout,
    store: Option<&mut Store>,
    opts: &ConductOptions,
) -> anyhow::Result<(RunRecord, Option<anyhow::Error>, bool)> {
    // The space the previous phase's test file held is free only once its deletion is
    // committed (btrfs pins freed extents until the transaction ends): commit it now, or a
    // degraded btrfs raid1, which cannot allocate a new chunk, runs out of room mid-phase.
    commit_fs(m.path);
    let suite_opts = SuiteOptions {
        repeat: spec.workloads.repeat,
        default_size: default_size(m.usable_bytes),
        space_reserve: false,
        precondition: spec.workloads.precondition,
        ..SuiteOptions::default()
    };
    let suite = spec.workloads.suite_to_run();
    // The layout's mount point, always written (it is the lab's own); replays are not fitted
    // to it: their working set is the lab's, like every workload's.
    let request = TargetRequest {
        path: Some(m.path.to_path_buf()),
        writes: true,
        destroy: None,
    };
    let meta = RunMeta {
        command_line: opts.command_line.clone(),
        label: Some(phase_label(m)),
        note: None,
        lab_id: Some(m.lab_id.to_string()),
        layout: Some(mounted_record(spec, m)),
    };
    let progress = crate::progress::Progress::new(
        opts.show_progress,
        crate::runner::suite::estimate(&suite, &suite_opts),
    );
    progress.set_message(m.layout.name.clone());
    let r = crate::session::run(&suite, &suite_opts, &request, meta, store, &progress, false);
    progress.finish();
    // And this phase's, before the lab degrades, replaces or fills the layout next.
    commit_fs(m.path);
    let r = r?;
    Ok((r.record, r.error, r.interrupted))
}

/// Commits the filesystem at `path` (syncfs), so space freed by deleted files is free again.
/// Best effort: a failure leaves the space pinned a little longer, nothing worse.
fn commit_fs(path: &std::path::Path) {
    if let Ok(d) = std::fs::File::open(path) {
        let _ = rustix::fs::syncfs(&d);
    }
}

/// Keeps each run's completed layout record; the first store error, with the run it was for.
fn save_records(
    store: Option<&mut Store>,
    records: &[(String, LayoutRecord)],
) -> Result<(), SaveError> {
    let Some(s) = store else { return Ok(()) };
    for (id, rec) in records {
        s.set_layout(id, rec).map_err(|source| SaveError {
            run: id.clone(),
            layout: rec.name.clone().unwrap_or_else(|| "-".into()),
            location: s.location().to_string(),
            source: Box::new(source),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_cannot_keep_a_record_is_an_error_naming_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("t.db")).unwrap();
        let rec = LayoutRecord {
            name: Some("r6".into()),
            ..LayoutRecord::default()
        };
        let e = save_records(Some(&mut store), &[("deadbeef".into(), rec.clone())])
            .expect_err("no such run");
        let text = format!("{:#}", anyhow::Error::new(e));
        assert!(
            text.contains("saving the layout record of run deadbeef (r6)") && text.contains("t.db"),
            "{text}"
        );
        assert!(save_records(None, &[("deadbeef".into(), rec)]).is_ok());
    }

    #[test]
    fn the_default_working_set_is_a_quarter_of_the_layout_within_16mib_and_1gib() {
        assert_eq!(default_size(None), 1 << 30);
        assert_eq!(default_size(Some(400 << 20)), 100 << 20);
        assert_eq!(default_size(Some((400 << 20) + 12345)), 100 << 20);
        assert_eq!(default_size(Some(32 << 20)), 16 << 20);
        assert_eq!(default_size(Some(64 << 30)), 1 << 30);
    }
}
