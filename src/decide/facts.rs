//! What a stored lab measured, per layout, in the shape a decision needs: the stack, the
//! capacity on the lab's disks, every workload's headline over its trials (healthy and with a
//! member failed), the capacity at the latency target, the rebuild and the integrity verdict.
//!
//! Read from the lab's run records as the store gives them back, so `iolab decide LAB` sees
//! exactly what `iolab lab` saw. Tests build these by hand with the figures of a post.

use serde::Serialize;

use crate::sample::fault_outcome::FaultOutcome;
use crate::sample::integrity::IntegrityReport;
use crate::sample::layout_record::Phase;
use crate::sample::layout_record::{Layer, RebuildRecord};
use crate::sample::{RunRecord, WorkloadRecord};
use crate::spec::Pattern;
use crate::spec::decide::{DecideSpec, SpeedUnit};
use crate::stats::Summary;
use crate::stats::slo::SloCapacity;

/// One workload on one layout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadFacts {
    /// Workload name.
    pub name: String,
    /// The headline metric (`write.mbps`).
    pub metric: String,
    /// Its unit.
    pub unit: SpeedUnit,
    /// The IO pattern (`None` for small files), to set the planner's prediction beside it.
    pub pattern: Option<Pattern>,
    /// The headline over the healthy trials.
    pub healthy: Option<Summary>,
    /// The headline over the trials with a member failed.
    pub degraded: Option<Summary>,
    /// The capacity at the lab's latency target, healthy (`None`: not searched).
    pub slo: Option<SloCapacity>,
    /// The same with a member failed.
    pub slo_degraded: Option<SloCapacity>,
    /// The headline over the trials run during the rebuild (`during_rebuild = true`).
    pub rebuilding: Option<Summary>,
    /// The capacity at the latency target during the rebuild.
    pub slo_rebuilding: Option<SloCapacity>,
}

/// One layout of a stored lab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutFacts {
    /// Layout name.
    pub name: String,
    /// One line: the stack with its options.
    pub description: String,
    /// The stack from the disks up (empty for an existing directory).
    pub stack: Vec<Layer>,
    /// `vm (tcg)` when built in a VM: speeds emulated.
    pub environment: Option<String>,
    /// Bytes of each member disk in the lab.
    pub member_bytes: Option<u64>,
    /// Usable bytes the filesystem reported.
    pub usable_bytes: Option<u64>,
    /// Usable bytes the RAID level promises from the members.
    pub expected_usable_bytes: Option<u64>,
    /// Usable bytes the same stack reported built again at the real disk size on this host
    /// ([`super::measure`]); `None` until measured, or where this host cannot build it.
    pub usable_at_size: Option<AtSize>,
    /// Every workload, in suite order.
    pub workloads: Vec<WorkloadFacts>,
    /// The rebuild the lab timed.
    pub rebuild: Option<RebuildRecord>,
    /// The integrity verdict through the lab's faults (`None`: no data set was checked).
    pub integrity: Option<String>,
    /// The power-cut verdict: filled once the lab records one.
    pub power: Option<String>,
    /// Whether any power cut lost a durable write or read a file back wrong.
    pub power_lost: bool,
    /// What the lab's faults and read-backs lost, split by how (`None`: nothing lost, or no
    /// data set checked).
    pub losses: Option<Losses>,
    /// Each injected fault's outcome, file by file.
    pub faults: Vec<FaultOutcome>,
}

/// A layout's data loss through the lab, split into the loss an application sees (an error)
/// and the one it cannot (wrong bytes, no error).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Losses {
    /// Files read back with wrong bytes and no error (the most one read-back saw).
    pub silent: u64,
    /// Files that could not be read or were gone (the most one read-back saw).
    pub unreadable: u64,
    /// Errors the layer's scrub or check could not repair.
    pub scrub_errors: u64,
    /// The kinds of fault the silently wrong files came back under (`corrupt`), in order.
    pub under: Vec<String>,
}

impl Losses {
    /// The losses of a layout from its integrity record and fault outcomes.
    pub fn of(i: Option<&IntegrityReport>, faults: &[FaultOutcome]) -> Option<Losses> {
        let steps = i.map_or(&[][..], |i| i.steps.as_slice());
        let from_faults = crate::sample::fault_outcome::silently_wrong(faults);
        let l = Losses {
            silent: steps
                .iter()
                .map(|s| s.mismatched)
                .max()
                .unwrap_or(0)
                .max(from_faults.as_ref().map_or(0, |x| x.0)),
            unreadable: steps
                .iter()
                .map(|s| s.read_errors + s.missing)
                .chain(faults.iter().map(|f| f.read_error))
                .max()
                .unwrap_or(0),
            scrub_errors: i.map_or(0, IntegrityReport::scrub_errors),
            under: from_faults
                .map_or_else(Vec::new, |x| x.1.into_iter().map(str::to_string).collect()),
        };
        (l.silent + l.unreadable + l.scrub_errors > 0).then_some(l)
    }
}

impl LayoutFacts {
    /// True when the layout's speeds were emulated (built in a VM).
    pub fn emulated(&self) -> bool {
        self.environment
            .as_deref()
            .is_some_and(|e| e.starts_with("vm"))
    }

    /// The workload named `name`.
    pub fn workload(&self, name: &str) -> Option<&WorkloadFacts> {
        self.workloads.iter().find(|w| w.name == name)
    }
}

/// What a layout's stack reported when built at the real disk size on sparse files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtSize {
    /// Bytes of each disk it was built on.
    pub disk_bytes: u64,
    /// The usable bytes it reported (as the lab reads them).
    pub usable_bytes: u64,
}

/// A stored lab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabFacts {
    /// The lab id.
    pub lab_id: String,
    /// The lab's name (its spec's `name`).
    pub name: String,
    /// Its layouts, in the order they ran.
    pub layouts: Vec<LayoutFacts>,
    /// The `[decide]` table the lab ran with, when it had one.
    pub decide: Option<DecideSpec>,
}

/// The unit of a stored headline metric (`write.mbps`, `read.iops`, `create.ops`).
fn unit_of(metric: &str) -> SpeedUnit {
    if metric.ends_with(".mbps") {
        SpeedUnit::MBps
    } else if metric.ends_with(".iops") {
        SpeedUnit::Iops
    } else {
        SpeedUnit::OpsPerSec
    }
}

/// A workload's speed over its trials: its throughput, the unit a speed need is written in
/// (an open loop's headline is its latency from the schedule, `sample::headline`; a decision
/// still holds its throughput against the needs). A steady-state run's: its window's rounds.
fn headline(w: &WorkloadRecord) -> Option<Summary> {
    super::steady::headline_summary(w)
}

/// The workload of run `r` named `name`.
fn named<'a>(r: Option<&'a RunRecord>, name: &str) -> Option<&'a WorkloadRecord> {
    r?.workloads.iter().find(|w| w.workload.name == name)
}

fn workload_facts(
    h: &WorkloadRecord,
    degraded: Option<&RunRecord>,
    rebuilding: Option<&RunRecord>,
) -> WorkloadFacts {
    let d = named(degraded, &h.workload.name);
    let rb = named(rebuilding, &h.workload.name);
    let metric = h
        .trials
        .iter()
        .find_map(|t| crate::sample::headline::throughput(&h.workload, t))
        .map_or_else(String::new, |m| m.0);
    let unit = if metric.is_empty() {
        crate::spec::decide::headline_unit(&h.workload)
    } else {
        unit_of(&metric)
    };
    WorkloadFacts {
        name: h.workload.name.clone(),
        metric,
        unit,
        pattern: match &h.workload.kind {
            crate::spec::WorkloadKind::Io(io) => Some(io.pattern),
            _ => None,
        },
        healthy: headline(h),
        degraded: d.and_then(headline),
        slo: crate::stats::slo::of_workload(h),
        slo_degraded: d.and_then(crate::stats::slo::of_workload),
        rebuilding: rb.and_then(headline),
        slo_rebuilding: rb.and_then(crate::stats::slo::of_workload),
    }
}

/// Gathers a lab's layouts from its stored runs (in the order they ran): each layout's healthy
/// run, and its degraded run beside it. Runs without a layout record are not the lab's layouts
/// and are left out.
pub fn from_runs(lab_id: &str, runs: &[RunRecord]) -> LabFacts {
    let mut layouts = Vec::new();
    let mut name = String::new();
    let mut decide = None;
    for r in runs {
        let Some(rec) = &r.layout else { continue };
        if rec.degraded_of.is_some()
            || matches!(rec.phase, Some(Phase::Degraded | Phase::Rebuilding))
        {
            continue;
        }
        let Some(lname) = rec.name.clone().or_else(|| r.label.clone()) else {
            continue;
        };
        if name.is_empty() {
            name = rec.lab.clone().unwrap_or_default();
        }
        if decide.is_none() {
            decide.clone_from(&rec.decide);
        }
        let of_phase = |phase: Phase| {
            runs.iter().find(|d| {
                d.layout.as_ref().is_some_and(|l| {
                    l.degraded_of.as_deref() == Some(lname.as_str())
                        && l.phase.unwrap_or(Phase::Degraded) == phase
                })
            })
        };
        let degraded = of_phase(Phase::Degraded);
        let rebuilding = of_phase(Phase::Rebuilding);
        let dl = degraded.and_then(|d| d.layout.as_ref());
        let integrity = rec
            .integrity
            .as_ref()
            .or_else(|| dl.and_then(|l| l.integrity.as_ref()));
        let faults = if rec.faults.is_empty() {
            dl.map_or(&[][..], |l| l.faults.as_slice())
        } else {
            rec.faults.as_slice()
        };
        layouts.push(LayoutFacts {
            name: lname,
            description: rec.description.clone().unwrap_or_default(),
            stack: rec.stack.clone(),
            environment: rec.environment.clone(),
            member_bytes: rec.capacity.member_bytes,
            usable_bytes: rec.capacity.usable_bytes,
            expected_usable_bytes: rec.capacity.expected_usable_bytes,
            usable_at_size: None,
            workloads: r
                .workloads
                .iter()
                .filter(|w| !crate::stats::steady::is_precondition(w))
                .map(|w| workload_facts(w, degraded, rebuilding))
                .collect(),
            rebuild: rec
                .rebuild
                .clone()
                .or_else(|| dl.and_then(|l| l.rebuild.clone())),
            integrity: integrity.map(|i| i.verdict.clone()),
            power: rec
                .power
                .as_ref()
                .map(crate::sample::power::PowerReport::text),
            power_lost: rec.power.as_ref().is_some_and(|p| p.lost_cuts() > 0),
            losses: Losses::of(integrity.and_then(|i| i.detail.as_ref()), faults),
            faults: faults.to_vec(),
        });
    }
    LabFacts {
        lab_id: lab_id.to_string(),
        name,
        layouts,
        decide,
    }
}
