//! A multi-host run in the results store: one run per host (its own trials, its own machine
//! and target) and one aggregate run (merged histograms, the common window), tied together by
//! a group id in their notes. The schema needs no host field this way, and every existing
//! command (`show`, `compare`, `report`) reads each of them as the run it is.

use super::merge::{TrialSummary, aggregate_sample};
use super::outcome::Outcome;
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
    let seed = crate::sample::now_unix_ns() ^ u64::from(std::process::id());
    let group = format!(
        "{:012x}",
        xxhash_rust::xxh3::xxh3_64(&seed.to_le_bytes()) >> 16
    );
    let n = outcome.hosts.len();
    let base = |system, target, note: String, notes: Vec<String>| {
        let mut rec = record(meta, suite, note, system, target, notes);
        rec.started_unix_ms = outcome.started_unix_ms;
        rec.ended_unix_ms = Some(outcome.ended_unix_ms);
        rec.error.clone_from(&outcome.error);
        rec
    };
    let mut ids = Vec::new();
    for (i, h) in outcome.hosts.iter().enumerate() {
        let Some(target) = h.target_info.clone() else {
            continue;
        };
        let mut notes = vec![format!(
            "hosts-group {group}: host {} ({} of {n})",
            h.name,
            i + 1
        )];
        notes.extend(h.notes.iter().cloned());
        if let Some(f) = &h.failed {
            notes.push(format!("host failed: {f}"));
        }
        let mut rec = base(
            h.system.clone().unwrap_or_default(),
            target,
            format!("host {} of hosts-group {group}", h.name),
            notes,
        );
        rec.status = status(outcome, h.failed.is_some());
        for st in &outcome.trials {
            let Some(Some(ht)) = st.hosts.get(i) else {
                continue;
            };
            push_trial(&mut rec.workloads, suite, st.workload, ht.sample.clone());
        }
        ids.push((h.name.clone(), store.save_run(&rec)?));
    }
    let ok = outcome.hosts.iter().filter(|h| h.failed.is_none()).count();
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
    let mut rec = base(
        crate::system::SystemInfo::collect(),
        any_target,
        format!("aggregate of hosts-group {group}"),
        notes,
    );
    rec.label = meta.label.clone();
    rec.status = status(outcome, ok < n);
    for (st, sum) in outcome.trials.iter().zip(summaries) {
        if sum.aggregate.hosts_ok == 0 {
            continue;
        }
        let name = suite
            .workloads
            .get(st.workload)
            .map_or(String::new(), |w| w.name.clone());
        push_trial(
            &mut rec.workloads,
            suite,
            st.workload,
            aggregate_sample(st, &sum.aggregate, &name),
        );
    }
    let aggregate = match placeholder {
        Some(p) => store.save_run_replacing(&rec, p)?,
        None => store.save_run(&rec)?,
    };
    Ok(Some(SavedIds {
        group,
        aggregate,
        hosts: ids,
    }))
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
