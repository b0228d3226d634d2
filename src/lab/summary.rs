//! What a lab concludes from its stored runs once every layout is done: each degraded layout's
//! speed against its healthy run, the layout record every run keeps, and the comparison of the
//! healthy layouts.
//!
//! It reads run records and builds a comparison ([`crate::stats::compare`]), as `iolab
//! compare` does: it is the lab's own conclusion, so it lives here and the CLI only prints it
//! (`report::text::lab_summary` draws it).

use super::driver::{MountedLayout, Phase};
use super::report::{LabReport, LabRun, LayoutReport};
use super::spec::{LabSpec, LayoutKind};
use crate::sample::RunRecord;
use crate::sample::layout_record::{Capacity, IntegrityRecord, Layer, LayoutRecord, RebuildRecord};
use crate::stats::compare::{self, CompareOptions, Comparison};

/// The record a run starts with: what the lab knows when the layout is mounted.
pub fn mounted_record(spec: &LabSpec, m: &MountedLayout) -> LayoutRecord {
    let stack = match &m.layout.kind {
        LayoutKind::Stack(s) => Layer::of_stack(s),
        LayoutKind::Directory(_) => Vec::new(),
    };
    LayoutRecord {
        name: Some(m.layout.name.clone()),
        lab: Some(spec.name.clone()),
        description: Some(m.description.clone()),
        stack,
        phase: Some(m.phase),
        degraded_of: (m.phase != Phase::Healthy).then(|| m.layout.name.clone()),
        capacity: Capacity {
            usable_bytes: m.usable_bytes,
            expected_usable_bytes: None,
            member_bytes: None,
        },
        decide: spec.decide.clone(),
        ..LayoutRecord::default()
    }
}

/// Adds to a run's record what the lab learned about its layout afterwards: build time,
/// expected capacity, rebuild, integrity, and the degraded ratio and what failing the cache
/// device did (degraded runs) or the baseline mark (`baseline`: the healthy run of the spec's
/// baseline layout).
pub fn complete_record(rec: &mut LayoutRecord, l: &LayoutReport, baseline: bool) {
    rec.build_seconds = l.build_seconds;
    rec.capacity.expected_usable_bytes = l.expected_usable_bytes;
    rec.capacity.member_bytes = l.member_bytes;
    rec.rebuild = l.rebuild.as_ref().map(|r| RebuildRecord {
        seconds: r.seconds,
        bytes: Some(r.bytes),
    });
    rec.integrity = l.integrity.as_ref().map(|i| IntegrityRecord {
        verdict: i.verdict.text(),
        detail: Some(i.clone()),
    });
    rec.faults = super::outcomes::of_layout(l);
    rec.power.clone_from(&l.power);
    rec.alignment.clone_from(&l.alignment);
    rec.tunables.clone_from(&l.md_tunables);
    rec.reused_build_of.clone_from(&l.reused_build_of);
    rec.read_ahead_sectors = l.read_ahead_sectors;
    match rec.phase {
        Some(Phase::Degraded) => {
            rec.degraded_ratio = l.degraded.as_ref().and_then(|d| d.perf_ratio);
            rec.cache_failure = l.degraded.as_ref().and_then(|d| d.cache_failure.clone());
        }
        Some(Phase::Rebuilding) => {
            rec.degraded_ratio = l.rebuild_load.as_ref().and_then(|d| d.perf_ratio);
        }
        _ => rec.lab_baseline = baseline,
    }
}

/// A cache failure the filesystem did not survive (writeback bcache: ext4 refuses to mount)
/// leaves no degraded run to keep it: the layout's healthy run keeps it then, so the store
/// (and `iolab report`) never loses what failing the cache did.
fn keep_cache_failures(records: &mut [(String, LayoutRecord)], layouts: &[LayoutReport]) {
    for lr in layouts {
        let Some(c) = lr.degraded.as_ref().and_then(|d| d.cache_failure.as_ref()) else {
            continue;
        };
        let of_layout = |rec: &LayoutRecord, phase| {
            rec.name.as_deref() == Some(lr.name.as_str()) && rec.phase == Some(phase)
        };
        if records
            .iter()
            .any(|(_, rec)| of_layout(rec, Phase::Degraded))
        {
            continue;
        }
        if let Some((_, rec)) = records
            .iter_mut()
            .find(|(_, rec)| of_layout(rec, Phase::Healthy))
        {
            rec.cache_failure = Some(c.clone());
        }
    }
}

/// What [`conclude`] found.
#[derive(Debug)]
pub struct Conclusion {
    /// The healthy layouts compared, baseline first when the spec names one; `None` when no
    /// healthy layout produced a result.
    pub comparison: Option<Comparison>,
    /// The complete layout record of every stored run, by run id, for the store.
    pub records: Vec<(String, LayoutRecord)>,
}

/// Fills in each degraded layout's speed ratio and the report's list of stored runs, and
/// returns the comparison and the runs' final layout records. `runs` are the lab's runs in
/// the order they ran, each with its [`LabRun`] (an empty `run_id` when nothing was stored).
pub fn conclude(
    spec: &LabSpec,
    report: &mut LabReport,
    runs: Vec<(LabRun, RunRecord)>,
) -> Conclusion {
    let find = |name: &str, phase: Phase| {
        runs.iter()
            .find(|(r, _)| r.layout == name && r.phase == phase)
            .map(|(_, rec)| rec)
    };
    for lr in &mut report.layouts {
        let healthy = find(&lr.name, Phase::Healthy);
        lr.slo = lab_slo(
            healthy,
            find(&lr.name, Phase::Degraded),
            find(&lr.name, Phase::Rebuilding),
        );
        let ratio = |phase| match (healthy, find(&lr.name, phase)) {
            (Some(h), Some(d)) => degraded_ratio(h, d),
            _ => None,
        };
        if let (Some(x), Some(dr)) = (ratio(Phase::Degraded), lr.degraded.as_mut()) {
            dr.perf_ratio = Some(x);
        }
        if let (Some(x), Some(rl)) = (ratio(Phase::Rebuilding), lr.rebuild_load.as_mut()) {
            rl.perf_ratio = Some(x);
        }
    }
    let baseline = spec.workloads.baseline.as_deref();
    let mut records = Vec::new();
    for (r, rec) in runs.iter().filter(|(r, _)| !r.run_id.is_empty()) {
        let Some(lr) = report.layouts.iter().find(|l| l.name == r.layout) else {
            continue;
        };
        let mut layout = rec.layout.clone().unwrap_or_default();
        let is_base = r.phase == Phase::Healthy && baseline == Some(lr.name.as_str());
        complete_record(&mut layout, lr, is_base);
        records.push((r.run_id.clone(), layout));
    }
    keep_cache_failures(&mut records, &report.layouts);
    let healthy: Vec<RunRecord> = runs
        .iter()
        .filter(|(r, rec)| {
            r.phase == Phase::Healthy && !rec.workloads.iter().all(|w| w.trials.is_empty())
        })
        .map(|(_, rec)| rec.clone())
        .collect();
    report.runs = runs
        .into_iter()
        .map(|(r, _)| r)
        .filter(|r| !r.run_id.is_empty())
        .collect();
    let comparison = (!healthy.is_empty()).then(|| {
        let baseline =
            baseline.and_then(|b| healthy.iter().position(|r| r.label.as_deref() == Some(b)));
        compare::build(
            &healthy,
            &CompareOptions {
                baseline,
                metrics: Vec::new(),
            },
        )
    });
    Conclusion {
        comparison,
        records,
    }
}

/// Each searched workload's capacity at the lab's target, healthy, degraded and during the
/// rebuild.
fn lab_slo(
    h: Option<&RunRecord>,
    d: Option<&RunRecord>,
    r: Option<&RunRecord>,
) -> Vec<super::report::LabSlo> {
    let of = |r: Option<&RunRecord>, name: &str| {
        r?.workloads
            .iter()
            .find(|w| w.workload.name == name)
            .and_then(crate::stats::slo::of_workload)
    };
    let Some(base) = h.or(d) else {
        return Vec::new();
    };
    base.workloads
        .iter()
        .filter_map(|w| {
            crate::stats::slo::of_workload(w)?;
            let name = &w.workload.name;
            Some(super::report::LabSlo {
                workload: name.clone(),
                healthy: of(h, name),
                degraded: of(d, name),
                rebuilding: of(r, name),
            })
        })
        .collect()
}

/// Degraded over healthy: the geometric mean over workloads of the ratio of headline medians,
/// as speeds (1.0 = no loss, below 1 slower): a latency headline (an open loop's, from the
/// schedule) counts healthy over degraded, so twice the latency reads 0.5 like half the IOPS.
pub fn degraded_ratio(h: &RunRecord, d: &RunRecord) -> Option<f64> {
    let med = |r: &RunRecord, name: &str| -> Option<f64> {
        let wr = r.workloads.iter().find(|w| w.workload.name == name)?;
        crate::stats::Summary::of(&wr.headline_values()).map(|s| s.median)
    };
    let mut logs = Vec::new();
    for w in &h.workloads {
        if let (Some(a), Some(b)) = (med(h, &w.workload.name), med(d, &w.workload.name)) {
            if a > 0.0 && b > 0.0 {
                let up = crate::sample::headline::kind(&w.workload).higher_is_better();
                logs.push(if up { (b / a).ln() } else { (a / b).ln() });
            }
        }
    }
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::report::DegradedReport;
    use crate::stack::cache::{CacheFailure, CacheKind, CacheMode};

    /// What failing the cache device did goes into the degraded run's stored
    /// record, where `iolab report` reads it; the healthy and rebuilding runs' records stay
    /// without it.
    #[test]
    fn the_degraded_record_keeps_the_cache_failure() {
        let f = CacheFailure {
            kind: CacheKind::Lvmcache,
            mode: CacheMode::Writethrough,
            devices: vec!["iolab-ab12cd-0-cache".into()],
            dirty_bytes: None,
            state_before: "clean".into(),
            kernel: "cache LV failed".into(),
            actions: vec!["lvconvert --uncache --force: ok".into()],
            state_after: "no cache".into(),
            usable: Some(true),
        };
        let mut lr = LayoutReport::new("md5-lvmcache", "md raid5 x3".into(), None);
        lr.degraded = Some(DegradedReport {
            failed_member: "/dev/loop2".into(),
            degrade_seconds: 0.1,
            workload_seconds: Some(1.0),
            data_verified: true,
            perf_ratio: Some(0.8),
            workload_error: None,
            cache_failure: Some(f.clone()),
        });
        let completed = |phase| {
            let mut rec = LayoutRecord {
                phase: Some(phase),
                ..LayoutRecord::default()
            };
            complete_record(&mut rec, &lr, false);
            rec
        };
        let d = completed(Phase::Degraded);
        assert_eq!(d.cache_failure, Some(f.clone()));
        assert_eq!(d.degraded_ratio, Some(0.8));
        assert!(completed(Phase::Healthy).cache_failure.is_none());
        assert!(completed(Phase::Rebuilding).cache_failure.is_none());

        // No degraded run (the filesystem did not come back): the healthy run keeps it;
        // with a degraded run, only that one has it.
        let rec = |phase| LayoutRecord {
            name: Some("md5-lvmcache".into()),
            phase: Some(phase),
            ..LayoutRecord::default()
        };
        let mut only_healthy = vec![("h".to_string(), rec(Phase::Healthy))];
        keep_cache_failures(&mut only_healthy, std::slice::from_ref(&lr));
        assert_eq!(only_healthy[0].1.cache_failure, Some(f.clone()));
        let mut both = vec![
            ("h".to_string(), rec(Phase::Healthy)),
            ("d".to_string(), d.clone()),
        ];
        both[1].1.name = Some("md5-lvmcache".into());
        keep_cache_failures(&mut both, std::slice::from_ref(&lr));
        assert!(both[0].1.cache_failure.is_none());
        assert_eq!(both[1].1.cache_failure, Some(f));
    }
}
