//! One measured session: a suite run on one target, every trial kept in the store the moment
//! it finishes, the whole run recorded with its exact setup. `iolab run` is one session; `iolab
//! lab` runs one per layout (and one more per layout while degraded).
//!
//! This is where running a suite on a target is orchestrated, for every caller: [`prepare()`]
//! (the target resolved and checked, the preflight) and then [`run_session`] (the suite, the
//! store, the record); [`run`] is the two in one call. The callers keep only what is theirs:
//! `iolab run` turns flags into these inputs, prints and picks the exit code; the lab builds
//! the layout the run goes on; the `--hosts` agent speaks its protocol.

mod prepare;

pub use prepare::{PrepareError, ReplayFit, prepare, prepare_fitting_replays, suite_writes};

use crate::progress::Progress;
use crate::runner::io::Control;
use crate::runner::suite::{Sink, SuiteOptions, run_suite};
use crate::sample::{RunRecord, RunStatus, TrialSample, now_unix_ms};
use crate::spec::{Suite, Workload};
use crate::store::{Store, StoreError};
use crate::target::{Target, TargetRequest};

/// Why [`run`] produced no run: it could not start, or the store refused it.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target or the suite was refused before anything ran ([`prepare()`]).
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The store could not begin or finish the run ([`run_session`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a session records about itself besides its results.
#[derive(Debug, Clone, Default)]
pub struct RunMeta {
    /// argv of the command.
    pub command_line: Vec<String>,
    /// `--label`.
    pub label: Option<String>,
    /// `--note`.
    pub note: Option<String>,
    /// The lab this run belongs to.
    pub lab_id: Option<String>,
    /// The layout it runs on (lab runs).
    pub layout: Option<crate::sample::LayoutRecord>,
}

/// What a session produced.
#[derive(Debug)]
pub struct SessionResult {
    /// The run, as stored (id set when a store was given).
    pub record: RunRecord,
    /// Why it stopped early.
    pub error: Option<anyhow::Error>,
    /// Ctrl-C/SIGTERM stopped it.
    pub interrupted: bool,
}

struct StoreSink<'a> {
    progress: &'a Progress,
    store: Option<&'a mut Store>,
    run_id: String,
    /// The run's notes so far, each once with the number of trials that wrote it.
    notes: crate::sample::note::Merged,
    suite_len: usize,
    live_notes: bool,
}

impl Sink for StoreSink<'_> {
    fn trial_start(&mut self, index: usize, w: &Workload, trial: u32, planned: u32) {
        let of = if index + 1 > self.suite_len {
            String::new()
        } else {
            format!("[{}/{}] ", index + 1, self.suite_len)
        };
        self.progress
            .set_message(format!("{of}{} trial {trial}/{planned}", w.name));
    }

    fn trial_done(&mut self, index: usize, w: &Workload, t: &TrialSample) -> anyhow::Result<()> {
        let search = matches!(&w.kind, crate::spec::WorkloadKind::Io(io) if io.slo.is_some());
        // A note about the engine working as designed stays with its trial (the JSON has it;
        // `--verbose` prints it merged); the run's notes are what every screen shows.
        for n in &t.notes {
            if !(n.kind.as_designed() || (search && crate::runner::io::is_search_point_note(n))) {
                self.add(n, 1);
            }
        }
        if let Some(s) = self.store.as_deref_mut() {
            crate::pause::at("store commit");
            s.add_trial(&self.run_id, index, w, t)?;
        }
        Ok(())
    }

    fn note(&mut self, msg: &str) {
        self.add(&crate::sample::Note::caveat(msg), 0);
    }
}

impl StoreSink<'_> {
    /// Keeps `note` once, counting the `trials` that wrote it (0: the suite said it).
    fn add(&mut self, note: &crate::sample::Note, trials: u32) {
        // A table ends with the notes; in JSON mode they go to stderr as they happen, the
        // first of each line only.
        if self.notes.add(note, trials) && self.live_notes {
            self.progress.println(&format!("iolab: note: {note}"));
        }
    }
}

/// Runs `suite` on the target `request` asks for: [`prepare()`] (replays left as they are), then
/// [`run_session`]. The target (a temporary directory, when it made one) is gone when this
/// returns.
///
/// The lab runs every layout and phase through this. `iolab run` calls the two steps itself
/// ([`prepare_fitting_replays`], then [`run_session`]) because it does more between them: it
/// prints how replays were fitted, checks `--label`, and opens the store only once the target
/// is known to be usable, so a refused target leaves nothing behind, not even a database. The
/// `--hosts` agent calls [`prepare()`] only: it has no store or record of its own, and runs the
/// suite under its own sink (the start barrier, trials streamed to the controller).
///
/// # Errors
/// [`RunError::Prepare`] when the run could not start, [`RunError::Store`] when the store
/// refused it; errors during the run are in the result, next to what was measured before them.
pub fn run(
    suite: &Suite,
    opts: &SuiteOptions,
    request: &TargetRequest,
    meta: RunMeta,
    store: Option<&mut Store>,
    progress: &Progress,
    live_notes: bool,
) -> Result<SessionResult, RunError> {
    let target = prepare(suite, opts, request)?;
    Ok(run_session(
        &target, suite, opts, meta, store, progress, live_notes,
    )?)
}

/// Runs `suite` on `target`, keeping each trial in `store` (when given) as it finishes.
///
/// # Errors
/// The store refused to begin or finish the run; errors during the run are in the result,
/// next to what was measured before them.
pub fn run_session(
    target: &Target,
    suite: &Suite,
    opts: &SuiteOptions,
    meta: RunMeta,
    mut store: Option<&mut Store>,
    progress: &Progress,
    live_notes: bool,
) -> Result<SessionResult, StoreError> {
    let mut record = RunRecord {
        id: String::new(),
        status: RunStatus::Running,
        started_unix_ms: now_unix_ms(),
        ended_unix_ms: None,
        command_line: meta.command_line,
        label: meta.label,
        note: meta.note,
        lab_id: meta.lab_id,
        layout: meta.layout,
        suite_name: suite.name.clone(),
        system: crate::system::SystemInfo::collect(),
        target: target.info.clone(),
        workloads: Vec::new(),
        notes: Vec::new(),
        error: None,
    };
    if let Some(s) = store.as_deref_mut() {
        record.id = s.begin_run(&record)?;
        crate::pause::at("run begun");
    }
    let ctl = Control {
        stop: crate::signals::stop_flag(),
        counters: progress.counters(),
        gate: Default::default(),
        intervals: None,
    };
    let mut sink = StoreSink {
        progress,
        store,
        run_id: record.id.clone(),
        notes: crate::sample::note::Merged::default(),
        suite_len: suite.workloads.len(),
        live_notes,
    };
    let outcome = run_suite(suite, target, opts, &ctl, &mut sink);
    for wr in &outcome.records {
        if let Some(n) = stability_note(wr, opts) {
            sink.note(&n);
        }
    }
    record.notes = std::mem::take(&mut sink.notes).lines();
    record.workloads = outcome.records;
    record.ended_unix_ms = Some(now_unix_ms());
    record.status = if outcome.interrupted {
        RunStatus::Interrupted
    } else if outcome.error.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    record.error = outcome.error.as_ref().map(crate::error::one_line);
    if let Some(s) = sink.store.as_deref_mut() {
        let ended = record.ended_unix_ms.unwrap_or_else(now_unix_ms);
        s.finish_run(
            &record.id,
            record.status,
            ended,
            &record.notes,
            record.error.as_deref(),
        )?;
        crate::pause::at("run finished");
    }
    Ok(SessionResult {
        record,
        error: outcome.error,
        interrupted: outcome.interrupted,
    })
}

/// With `--until-stable`: how many trials each workload took and how tight it got.
fn stability_note(wr: &crate::sample::WorkloadRecord, opts: &SuiteOptions) -> Option<String> {
    let pct = opts.until_stable?;
    let vals = wr.headline_values();
    let s = crate::stats::Summary::of(&vals)?;
    let got = s
        .precision_pct()
        .map_or_else(|| "-".to_string(), |p| format!("{p:.1}%"));
    Some(if crate::stats::is_stable(&vals, pct) {
        format!(
            "{}: stable within {pct}% after {} trials (95% CI half-width {got} of the median)",
            wr.workload.name,
            vals.len()
        )
    } else {
        format!(
            "{}: not stable within {pct}% after {} trials (95% CI half-width {got}); raise --max-repeat",
            wr.workload.name,
            vals.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{EngineKind, IoWorkload, WorkloadKind};
    use crate::target::TargetError;

    fn psync_reads() -> Suite {
        Suite {
            name: "t".into(),
            workloads: vec![Workload {
                name: "rand-read-4k".into(),
                drop_caches: false,
                kind: WorkloadKind::Io(IoWorkload {
                    engine: EngineKind::Psync,
                    size: Some(1 << 20),
                    runtime: Some(std::time::Duration::from_millis(100)),
                    ..IoWorkload::default()
                }),
            }],
        }
    }

    fn opts() -> SuiteOptions {
        SuiteOptions {
            drop_caches: false,
            ..SuiteOptions::default()
        }
    }

    /// A run is a library call (what `iolab run` and the lab call): a real suite on
    /// a real directory, the record back, nothing printed, no store needed.
    #[test]
    fn a_suite_runs_on_a_target_through_the_library_alone() {
        let d = tempfile::tempdir().expect("temp dir");
        let request = TargetRequest {
            path: Some(d.path().to_path_buf()),
            writes: false,
            destroy: None,
        };
        let progress = Progress::new(false, std::time::Duration::ZERO);
        let r = run(
            &psync_reads(),
            &opts(),
            &request,
            RunMeta::default(),
            None,
            &progress,
            false,
        )
        .expect("the run starts");
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.record.status, RunStatus::Complete);
        assert!(r.record.id.is_empty(), "no store, no id");
        let trials = &r.record.workloads[0].trials;
        assert_eq!(trials.len(), 1);
        assert!(trials[0].ops[0].count > 0, "reads were done");
        assert_eq!(
            std::fs::read_dir(d.path()).expect("dir").count(),
            0,
            "the test file is removed"
        );
    }

    /// What cannot start comes back typed, before anything is written: a target that
    /// does not exist is a [`TargetError`] the user can fix (exit 2 at the command line).
    #[test]
    fn a_run_that_cannot_start_is_a_typed_error() {
        let d = tempfile::tempdir().expect("temp dir");
        let request = TargetRequest {
            path: Some(d.path().join("missing")),
            writes: false,
            destroy: None,
        };
        let Err(e) = prepare(&psync_reads(), &opts(), &request) else {
            panic!("a missing target was accepted")
        };
        assert!(
            matches!(&e, PrepareError::Target(t @ TargetError::NotFound(_)) if t.is_usage()),
            "{e:?}"
        );
    }
}
