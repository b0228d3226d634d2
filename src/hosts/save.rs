//! A multi-host run in the results store: one run per host (its own trials, its own machine
//! and target) and one aggregate run (merged histograms, the common window), tied together by
//! a group id in their notes. The schema needs no host field this way, and every existing
//! command (`show`, `compare`, `report`) reads each of them as the run it is.

use super::merge::{TrialSummary, aggregate_sample};
use super::outcome::{HostResult, Outcome};
use crate::sample::{RunRecord, RunStatus, WorkloadRecord};
use crate::spec::Suite;
use crate::store::Store;

/// The run ids a multi-host run was saved under.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SavedIds {
    /// The group id written into every run's notes (`hosts-group <id>`).
    pub group: String,
    /// The aggregate run.
    pub aggregate: String,
    /// (host, run id) for each host that reported anything.
    pub hosts: Vec<(String, String)>,
}

/// What the command line adds to the stored runs.
#[derive(Debug, Clone, Default)]
pub struct SaveMeta {
    /// argv.
    pub command_line: Vec<String>,
    /// `--label` (given to the aggregate run).
    pub label: Option<String>,
    /// `--note`.
    pub note: Option<String>,
}

fn status(outcome: &Outcome, failed_host: bool) -> RunStatus {
    if outcome.interrupted {
        RunStatus::Interrupted
    } else if outcome.error.is_some() || failed_host {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    }
}

/// The record every stored run of a multi-host run starts from: the command line, `--note`
/// with what this run is, the suite; `Complete`, no label, no trials until the caller says.
fn record(
    meta: &SaveMeta,
    suite: &Suite,
    what: String,
    system: crate::system::SystemInfo,
    target: crate::target::TargetInfo,
    notes: Vec<String>,
) -> RunRecord {
    RunRecord {
        id: String::new(),
        status: RunStatus::Complete,
        started_unix_ms: 0,
        ended_unix_ms: None,
        command_line: meta.command_line.clone(),
        label: None,
        note: Some(match &meta.note {
            Some(m) => format!("{m} ({what})"),
            None => what,
        }),
        lab_id: None,
        layout: None,
        suite_name: suite.name.clone(),
        system,
        target,
        workloads: Vec::new(),
        notes,
        error: None,
    }
}

/// The run stored while the hosts run, owned by this process, until [`save`] stores the real
/// ones (and the caller deletes it): a controller killed at any step leaves it, and every reader
/// sees it `incomplete` (the host runs and the aggregate need the hosts' results, which only
/// exist at the end). It carries the aggregate's label, the hosts and the suite's workloads.
pub fn pending(
    hosts: &[super::HostSpec],
    default_target: Option<&std::path::Path>,
    suite: &Suite,
    meta: &SaveMeta,
) -> RunRecord {
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let path = hosts
        .iter()
        .find_map(|h| h.target.clone())
        .or_else(|| default_target.map(std::path::Path::to_path_buf))
        .unwrap_or_default();
    let mut rec = record(
        meta,
        suite,
        format!("multi-host run on {}", names.join(", ")),
        crate::system::SystemInfo::collect(),
        crate::target::TargetInfo::directory(path),
        vec![format!(
            "hosts pending: the controller stores one run per host and their aggregate when the hosts' results are in; a run left like this is one whose controller died ({} host(s): {})",
            names.len(),
            names.join(", ")
        )],
    );
    rec.status = RunStatus::Running;
    rec.started_unix_ms = crate::sample::now_unix_ms();
    rec.label = meta.label.clone();
    rec.workloads = suite
        .workloads
        .iter()
        .map(|w| WorkloadRecord {
            workload: w.clone(),
            trials: Vec::new(),
        })
        .collect();
    rec
}

/// Stores the host runs and the aggregate run; the aggregate, stored last, replaces the
/// [`pending`] run `placeholder` in the same transaction (a kill before it leaves the host runs
/// and the placeholder, which reads `incomplete`: the group never looks finished when it is
/// not). `None` when no host got as far as resolving its target: nothing to store, and the
/// placeholder is deleted.
pub fn save(
    store: &mut Store,
    outcome: &Outcome,
    summaries: &[TrialSummary],
    suite: &Suite,
    meta: &SaveMeta,
    placeholder: Option<&str>,
) -> crate::store::Result<Option<SavedIds>> {
    let Some(any_target) = outcome.hosts.iter().find_map(|h| h.target_info.clone()) else {
        if let Some(p) = placeholder {
            store.delete(p)?;
        }
        return Ok(None);
    };
    let group = Group {
        id: group_id(),
        outcome,
        suite,
        meta,
    };
    let mut ids = Vec::new();
    for (i, h) in outcome.hosts.iter().enumerate() {
        let Some(rec) = group.host_run(i, h) else {
            continue;
        };
        ids.push((h.name.clone(), store.save_run(&rec)?));
    }
    let rec = group.aggregate_run(summaries, any_target, &ids);
    let aggregate = match placeholder {
        Some(p) => store.save_run_replacing(&rec, p)?,
        None => store.save_run(&rec)?,
    };
    Ok(Some(SavedIds {
        group: group.id,
        aggregate,
        hosts: ids,
    }))
}

/// A fresh group id (12 hex digits from the clock and the pid): it ties the runs of one
/// multi-host run together in their notes, so it must differ between runs, not be secret.
fn group_id() -> String {
    let seed = crate::sample::now_unix_ns() ^ u64::from(std::process::id());
    format!(
        "{:012x}",
        xxhash_rust::xxh3::xxh3_64(&seed.to_le_bytes()) >> 16
    )
}

/// What every run of one multi-host run shares: its group id, the outcome, the suite and
/// the command line, so the host runs and the aggregate are built the same way.
struct Group<'a> {
    /// The id written into every run's notes.
    id: String,
    /// What the hosts did.
    outcome: &'a Outcome,
    /// The suite they ran.
    suite: &'a Suite,
    /// What the command line adds.
    meta: &'a SaveMeta,
}

impl Group<'_> {
    /// A run of this group as [`record`] starts it, with the outcome's window and error: the
    /// host runs and the aggregate cover the same time and failed for the same reason.
    fn base(
        &self,
        system: crate::system::SystemInfo,
        target: crate::target::TargetInfo,
        note: String,
        notes: Vec<String>,
    ) -> RunRecord {
        let mut rec = record(self.meta, self.suite, note, system, target, notes);
        rec.started_unix_ms = self.outcome.started_unix_ms;
        rec.ended_unix_ms = Some(self.outcome.ended_unix_ms);
        rec.error.clone_from(&self.outcome.error);
        rec
    }

    /// Host `i`'s own run: its machine, its target, its notes and its trials. `None` when the
    /// host never resolved its target: there is no target to store the run against.
    fn host_run(&self, i: usize, h: &HostResult) -> Option<RunRecord> {
        let target = h.target_info.clone()?;
        let (group, n) = (&self.id, self.outcome.hosts.len());
        let mut notes = vec![format!(
            "hosts-group {group}: host {} ({} of {n})",
            h.name,
            i + 1
        )];
        notes.extend(h.notes.iter().cloned());
        if let Some(f) = &h.failed {
            notes.push(format!("host failed: {f}"));
        }
        let mut rec = self.base(
            h.system.clone().unwrap_or_default(),
            target,
            format!("host {} of hosts-group {group}", h.name),
            notes,
        );
        rec.status = status(self.outcome, h.failed.is_some());
        for st in &self.outcome.trials {
            let Some(Some(ht)) = st.hosts.get(i) else {
                continue;
            };
            push_trial(
                &mut rec.workloads,
                self.suite,
                st.workload,
                ht.sample.clone(),
            );
        }
        Some(rec)
    }

    /// The aggregate run: this machine, the first resolved host target, the `--label`, and one
    /// merged trial per trial some host finished; its notes name the host runs (`ids`) so a
    /// reader can go from the aggregate to each host.
    fn aggregate_run(
        &self,
        summaries: &[TrialSummary],
        any_target: crate::target::TargetInfo,
        ids: &[(String, String)],
    ) -> RunRecord {
        let (group, n) = (&self.id, self.outcome.hosts.len());
        let ok = self
            .outcome
            .hosts
            .iter()
            .filter(|h| h.failed.is_none())
            .count();
        let mut notes = vec![format!(
            "hosts-group {group}: aggregate of {ok} of {n} hosts ({})",
            ids.iter()
                .map(|(h, id)| format!("{h} = run {id}"))
                .collect::<Vec<_>>()
                .join(", ")
        )];
        notes.push(
            "latency percentiles from the hosts' merged histograms; rates over the window in which all hosts ran"
                .into(),
        );
        let mut rec = self.base(
            crate::system::SystemInfo::collect(),
            any_target,
            format!("aggregate of hosts-group {group}"),
            notes,
        );
        rec.label = self.meta.label.clone();
        rec.status = status(self.outcome, ok < n);
        for (st, sum) in self.outcome.trials.iter().zip(summaries) {
            if sum.aggregate.hosts_ok == 0 {
                continue;
            }
            let name = self
                .suite
                .workloads
                .get(st.workload)
                .map_or(String::new(), |w| w.name.clone());
            push_trial(
                &mut rec.workloads,
                self.suite,
                st.workload,
                aggregate_sample(st, &sum.aggregate, &name),
            );
        }
        rec
    }
}

fn push_trial(
    records: &mut Vec<WorkloadRecord>,
    suite: &Suite,
    index: usize,
    sample: crate::sample::TrialSample,
) {
    let Some(w) = suite.workloads.get(index) else {
        return;
    };
    match records.iter_mut().find(|r| r.workload.name == w.name) {
        Some(r) => r.trials.push(sample),
        None => records.push(WorkloadRecord {
            workload: w.clone(),
            trials: vec![sample],
        }),
    }
}
