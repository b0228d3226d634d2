//! fio's results as an iolab run: one workload per job (per group with `group_reporting`,
//! clones of one job summed as `group_reporting` would), one op per direction, the latency
//! histogram rebuilt from json+ bins.

use std::collections::BTreeMap;

use super::json::{FioDir, FioJob, FioLat, FioOutput, value_text};
use super::map::workload_from_options;
use crate::sample::{
    IoAccounting, LatencyHistogram, LatencyKind, OpSample, RunRecord, RunStatus, TrialSample,
    WorkloadRecord,
};
use crate::spec::{RawWorkload, Workload};
use crate::system::SystemInfo;
use crate::target::{TargetInfo, TargetKind};

/// What the import adds around fio's numbers.
#[derive(Debug, Clone, Default)]
pub struct ImportMeta {
    /// The file as the user named it.
    pub file: String,
    /// argv of the import command.
    pub command_line: Vec<String>,
    /// `--label`.
    pub label: Option<String>,
    /// `--note`.
    pub note: Option<String>,
}

/// The run id of an imported file: the first digits of its content hash, so importing the
/// same file again finds the run already there.
pub fn content_id(text: &str) -> String {
    let h = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
    format!("{:08x}", h >> 32)
}

/// Jobs of fio's output that become one workload: the clones of one job (same name, group
/// and host).
struct Group<'a> {
    name: String,
    host: Option<String>,
    jobs: Vec<&'a FioJob>,
}

fn groups(out: &FioOutput) -> Vec<Group<'_>> {
    let mut gs: Vec<Group<'_>> = Vec::new();
    let mut keys: Vec<(String, u32, Option<String>)> = Vec::new();
    for j in out.entries() {
        let key = (j.jobname.clone(), j.groupid, j.hostname.clone());
        if let Some(i) = keys.iter().position(|k| *k == key) {
            gs[i].jobs.push(j);
        } else {
            keys.push(key);
            gs.push(Group {
                name: j.jobname.clone(),
                host: j.hostname.clone(),
                jobs: vec![j],
            });
        }
    }
    // Names must be unique within a run: the host tells client jobs apart, then a number.
    let hosts: std::collections::BTreeSet<_> = gs.iter().filter_map(|g| g.host.clone()).collect();
    if hosts.len() > 1 {
        for g in &mut gs {
            if let Some(h) = &g.host {
                g.name = format!("{}@{h}", g.name);
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for g in &mut gs {
        let base = g.name.clone();
        let mut n = 2;
        while !seen.insert(g.name.clone()) {
            g.name = format!("{base}-{n}");
            n += 1;
        }
    }
    gs
}

/// The latency fio reports with bins: `lat_ns` when fio kept its bins (`lat_percentiles=1`),
/// else `clat_ns`. Returns the block and its kind.
fn latency_of(d: &FioDir) -> Option<(&FioLat, LatencyKind, bool)> {
    let has_bins = |l: &Option<FioLat>| l.as_ref().is_some_and(|l| l.bins.is_some());
    let has_table = |l: &Option<FioLat>| l.as_ref().is_some_and(|l| l.percentile.is_some());
    if has_bins(&d.lat_ns) {
        return d.lat_ns.as_ref().map(|l| (l, LatencyKind::Lat, true));
    }
    if has_bins(&d.clat_ns) {
        return d.clat_ns.as_ref().map(|l| (l, LatencyKind::Clat, true));
    }
    if has_table(&d.lat_ns) {
        return d.lat_ns.as_ref().map(|l| (l, LatencyKind::Lat, false));
    }
    d.clat_ns.as_ref().map(|l| (l, LatencyKind::Clat, false))
}

/// A histogram from fio's percentile table (plain json): each step between two table points
/// holds its share of the IOs at the upper point, so every table percentile reads back, while
/// percentiles between points and merges across jobs are approximate.
fn from_table(l: &FioLat) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    let table = l.table();
    if l.n == 0 || table.is_empty() {
        return h;
    }
    let mut placed = 0u64;
    for (pct, ns) in &table {
        let upto = ((pct / 100.0) * l.n as f64).ceil() as u64;
        let n = upto.saturating_sub(placed);
        if n > 0 {
            h.0.saturating_record_n((*ns).max(1), n);
            placed += n;
        }
    }
    if l.n > placed {
        h.0.saturating_record_n(l.max.max(1), l.n - placed);
    }
    h
}

fn from_bins(bins: &[(u64, u64)]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    for &(ns, c) in bins {
        if c > 0 {
            h.0.saturating_record_n(ns.max(1), c);
        }
    }
    h
}

/// One direction summed over the clones of a job.
fn op_of(name: &'static str, dirs: &[&FioDir], kinds: &mut Vec<(LatencyKind, bool)>) -> OpSample {
    let mut o = OpSample::new(name);
    for d in dirs {
        o.count += d.total_ios;
        o.bytes += d.io_bytes;
        o.elapsed_ns = o.elapsed_ns.max(d.runtime.saturating_mul(1_000_000));
        if d.total_ios == 0 {
            continue;
        }
        if let Some((lat, kind, exact)) = latency_of(d) {
            let h = match lat.bin_list() {
                Some(b) => from_bins(&b),
                None => from_table(lat),
            };
            o.latency.merge(&h);
            kinds.push((kind, exact));
        }
    }
    o
}

/// The options of a job as fio printed them, globals first.
///
/// fio leaves valueless flags out of its JSON, `time_based` among them; a job that ran for
/// its whole `runtime` (within 1%) is taken as time based.
fn job_options(out: &FioOutput, j: &FioJob) -> Vec<(String, String)> {
    let mut m: BTreeMap<String, String> = out
        .global_options
        .iter()
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect();
    for (k, v) in &j.options {
        m.insert(k.clone(), value_text(v));
    }
    let runtime_ms = m
        .get("runtime")
        .and_then(|r| super::jobfile::parse_fio_time_ns(r, 1_000_000_000))
        .map(|ns| ns / 1_000_000);
    if runtime_ms.is_some_and(|r| r > 0 && j.job_runtime * 100 >= r * 99) {
        m.entry("time_based".into()).or_insert_with(|| "1".into());
    }
    m.into_iter().collect()
}

fn workload_for(g: &Group<'_>, opts: &[(String, String)]) -> Workload {
    let mut opts: Vec<(String, String)> =
        opts.iter().filter(|(k, _)| k != "name").cloned().collect();
    opts.push(("name".into(), g.name.clone()));
    workload_from_options(&g.name, &opts).unwrap_or_else(|| {
        // Options iolab cannot express: keep the name and the direction; fio's numbers stand.
        let pattern = if g
            .jobs
            .iter()
            .any(|j| j.write.as_ref().is_some_and(|d| d.total_ios > 0))
        {
            "write"
        } else {
            "read"
        };
        let raw = RawWorkload {
            name: Some(g.name.clone()),
            pattern: Some(pattern.into()),
            ..Default::default()
        };
        raw.validate().unwrap_or_else(|_| Workload {
            name: g.name.clone(),
            drop_caches: false,
            kind: crate::spec::WorkloadKind::Io(Default::default()),
        })
    })
}

/// One group's trial (one op per direction with IO, CPU from fio's percentages) and workload.
fn group_trial(
    g: &Group<'_>,
    opts: &[(String, String)],
    started: u64,
    kinds: &mut Vec<(LatencyKind, bool)>,
) -> (Workload, TrialSample) {
    let mut ops = Vec::new();
    for (i, name) in ["read", "write", "trim", "sync"].into_iter().enumerate() {
        let dirs: Vec<&FioDir> = g.jobs.iter().filter_map(|j| j.dirs()[i].1).collect();
        let op = op_of(name, &dirs, kinds);
        if op.count > 0 {
            ops.push(op);
        }
    }
    let runtime_ms = g.jobs.iter().map(|j| j.job_runtime).max().unwrap_or(0);
    let cpu = |f: fn(&FioJob) -> f64| -> u64 {
        g.jobs
            .iter()
            .map(|j| (f(j) / 100.0 * j.job_runtime as f64 * 1e6).max(0.0) as u64)
            .sum()
    };
    let total: u64 = ops.iter().map(|o| o.count).sum();
    let workload = workload_for(g, opts);
    let trial = TrialSample {
        workload: workload.name.clone(),
        trial: 1,
        started_unix_ms: started,
        elapsed_ns: runtime_ms.saturating_mul(1_000_000),
        ops,
        series: Vec::new(),
        accounting: IoAccounting {
            submitted: total,
            completed: total,
            ..Default::default()
        },
        cpu_user_ns: cpu(|j| j.usr_cpu),
        cpu_sys_ns: cpu(|j| j.sys_cpu),
        notes: Vec::new(),
        verify: None,
        open_loop: None,
    };
    (workload, trial)
}

/// Builds the run an import stores: one workload per job, one op per direction with IO, CPU
/// from fio's percentages, and the setup (version, time, options, hosts) in the notes.
pub fn to_run_record(out: &FioOutput, text: &str, meta: &ImportMeta) -> RunRecord {
    let started = out.unix_ms();
    let mut notes = vec![format!(
        "imported from {} ({}, fio finished at {} ms since the epoch, content xxh3 {:016x})",
        meta.file,
        out.fio_version,
        started,
        xxhash_rust::xxh3::xxh3_64(text.as_bytes())
    )];
    let mut workloads = Vec::new();
    let mut kinds: Vec<(LatencyKind, bool)> = Vec::new();
    let mut hosts: Vec<String> = Vec::new();
    let mut filenames: Vec<String> = Vec::new();
    for g in groups(out) {
        let opts = job_options(out, g.jobs[0]);
        if let Some(h) = &g.host {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
        if let Some((_, f)) = opts
            .iter()
            .find(|(k, _)| k == "filename" || k == "directory")
        {
            if !filenames.contains(f) {
                filenames.push(f.clone());
            }
        }
        notes.push(job_note(&g, &opts));
        let trial_and_workload = group_trial(&g, &opts, started, &mut kinds);
        let (workload, trial) = trial_and_workload;
        workloads.push(WorkloadRecord {
            workload,
            trials: vec![trial],
        });
    }
    let kind = if kinds.iter().any(|(k, _)| *k == LatencyKind::Clat) {
        LatencyKind::Clat
    } else {
        LatencyKind::Lat
    };
    notes.push(kind.note().to_string());
    if kinds.iter().any(|(_, exact)| !exact) {
        notes.push("latency from fio's percentile table (plain json): the table's percentiles are kept, others and merges across jobs are approximate; use --output-format=json+ for exact bins".into());
    }
    let target_path = filenames
        .first()
        .cloned()
        .unwrap_or_else(|| format!("fio:{}", meta.file));
    RunRecord {
        id: content_id(text),
        status: RunStatus::Complete,
        started_unix_ms: started,
        ended_unix_ms: Some(started),
        command_line: meta.command_line.clone(),
        label: meta.label.clone(),
        note: meta.note.clone(),
        lab_id: None,
        layout: None,
        suite_name: format!("fio:{}", short_name(&meta.file)),
        system: SystemInfo {
            hostname: if hosts.is_empty() {
                "unknown (fio output names no host)".into()
            } else {
                hosts.join(",")
            },
            kernel: String::new(),
            cpu_model: String::new(),
            cpus: 0,
            ram_bytes: 0,
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            iolab_git_rev: env!("IOLAB_GIT_REV").to_string(),
        },
        target: TargetInfo {
            kind: if target_path.starts_with("/dev/") {
                TargetKind::BlockDevice
            } else {
                TargetKind::File
            },
            path: target_path.into(),
            fs_type: None,
            mount_point: None,
            mount_options: None,
            mount_source: None,
            devices: Vec::new(),
        },
        workloads,
        notes,
        error: None,
    }
}

/// The note that records one fio job of an import: its name, host, how many jobs were summed
/// into it, and its options as fio was given them.
fn job_note(g: &Group<'_>, opts: &[(String, String)]) -> String {
    let shown: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "fio job '{}'{}{}: {}",
        g.name,
        g.host
            .as_ref()
            .map_or(String::new(), |h| format!(" on host {h}")),
        if g.jobs.len() > 1 {
            format!(" ({} jobs summed)", g.jobs.len())
        } else {
            String::new()
        },
        shown.join(" ")
    )
}

fn short_name(file: &str) -> String {
    std::path::Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned())
}
