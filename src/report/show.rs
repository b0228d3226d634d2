//! `iolab show`: everything about one stored run, as text: when and how it ran, the machine,
//! the target and the devices under it, every workload's parameters, statistics over trials,
//! each trial's figures, merged latency percentiles, the per-second throughput and its cliffs.

use std::fmt::Write as _;

use crate::sample::{LatencyHistogram, RunRecord, TrialSample, Unit};
use crate::stats::{self, HIGH_CV};
use crate::units::{format_bytes, format_duration, format_latency_ns};

use super::compare::format_estimate;
use crate::output::text_table;

/// Local date and time of a Unix timestamp in ms: `2024-05-01 14:03:22`.
pub fn format_time(ms: u64) -> String {
    let Some((y, mo, d, h, mi, se)) = crate::sys::local_time((ms / 1000) as i64) else {
        return format!("@{}", ms / 1000);
    };
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{se:02}")
}

/// A status as the tables spell it.
pub fn status_name(s: crate::sample::RunStatus) -> &'static str {
    use crate::sample::RunStatus::{Complete, Failed, Incomplete, Interrupted, Running};
    match s {
        Running => "running",
        Complete => "complete",
        Interrupted => "interrupted",
        Failed => "failed",
        Incomplete => "incomplete",
    }
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

/// Per-second throughput as a line of block characters, at most `width` wide (seconds are
/// averaged into buckets), so a cliff is visible at a glance.
pub fn sparkline(values: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let per = values.len().div_ceil(width);
    let buckets: Vec<f64> = values
        .chunks(per)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let max = buckets.iter().copied().fold(0.0, f64::max);
    buckets
        .iter()
        .map(|&v| {
            if max <= 0.0 {
                BARS[0]
            } else {
                BARS[((v / max) * 7.0).round().clamp(0.0, 7.0) as usize]
            }
        })
        .collect()
}

fn series_values(t: &TrialSample) -> (Vec<f64>, &'static str) {
    if t.series.iter().any(|p| p.bytes > 0) {
        (
            t.series.iter().map(|p| p.bytes as f64 / 1e6).collect(),
            "MB/s",
        )
    } else {
        (t.series.iter().map(|p| p.ops as f64).collect(), "ops/s")
    }
}

/// Everything about one run.
pub fn render_run(r: &RunRecord) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "run {}{}  {}",
        r.id,
        r.label
            .as_ref()
            .map(|l| format!("  \"{l}\""))
            .unwrap_or_default(),
        status_name(r.status)
    );
    let took = r.ended_unix_ms.map(|e| {
        format_duration(std::time::Duration::from_millis(
            e.saturating_sub(r.started_unix_ms),
        ))
    });
    let _ = writeln!(
        o,
        "  started    {}{}",
        format_time(r.started_unix_ms),
        match (r.ended_unix_ms, took) {
            (Some(e), Some(t)) => format!("   ended {}   took {t}", format_time(e)),
            _ => String::new(),
        }
    );
    let _ = writeln!(o, "  command    {}", r.command_line.join(" "));
    let _ = writeln!(o, "  suite      {}", r.suite_name);
    if let Some(n) = &r.note {
        let _ = writeln!(o, "  note       {n}");
    }
    if let Some(l) = &r.lab_id {
        let _ = writeln!(o, "  lab        {l}");
    }
    if let Some(l) = &r.layout {
        let text = serde_json::to_string(l).unwrap_or_default();
        let _ = writeln!(o, "  layout     {text}");
    }
    if let Some(e) = &r.error {
        let _ = writeln!(o, "  error      {e}");
    }
    render_system_and_target(&mut o, r);

    let n = r.workloads.len();
    for (i, w) in r.workloads.iter().enumerate() {
        let _ = writeln!(
            o,
            "\nworkload {}/{n}: {}   {}",
            i + 1,
            w.workload.name,
            w.workload.describe()
        );
        if let Some(s) = stats::steady::of_workload(w) {
            let rounds: Vec<String> = s.rounds.iter().map(|v| s.format(*v)).collect();
            let _ = writeln!(o, "  {}", s.describe());
            let _ = writeln!(o, "  rounds: {}", rounds.join(", "));
            let _ = writeln!(o, "  (the figures below are that window's rounds)");
        }
        render_workload(&mut o, stats::steady::figure_trials(w));
    }

    if !r.notes.is_empty() {
        let _ = writeln!(o, "\nnotes");
        for n in &r.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
    o
}

/// The system the run ran on and its target, devices included.
fn render_system_and_target(o: &mut String, r: &RunRecord) {
    let s = &r.system;
    let _ = writeln!(o, "\nsystem");
    let _ = writeln!(
        o,
        "  host       {}   kernel {}",
        super::labels::host_label(r),
        s.kernel
    );
    let _ = writeln!(
        o,
        "  cpu        {} x {}   ram {}",
        s.cpus,
        s.cpu_model,
        format_bytes(s.ram_bytes)
    );
    let _ = writeln!(o, "  iolab      {} ({})", s.iolab_version, s.iolab_git_rev);

    let t = &r.target;
    let _ = writeln!(o, "\ntarget");
    let kind = match t.kind {
        crate::target::TargetKind::Directory => "directory",
        crate::target::TargetKind::File => "file",
        crate::target::TargetKind::BlockDevice => "block device",
    };
    let _ = writeln!(o, "  path       {} ({kind})", t.path.display());
    if let Some(fs) = &t.fs_type {
        let _ = writeln!(
            o,
            "  filesystem {fs} on {} from {}",
            t.mount_point
                .as_ref()
                .map_or("-".to_string(), |m| m.display().to_string()),
            opt(&t.mount_source)
        );
        let _ = writeln!(o, "  options    {}", opt(&t.mount_options));
    }
    if !t.devices.is_empty() {
        let head: Vec<String> = [
            "device", "model", "serial", "firmware", "size", "rot", "sched", "raid",
        ]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
        let rows: Vec<Vec<String>> = t
            .devices
            .iter()
            .map(|d| {
                vec![
                    d.name.clone(),
                    opt(&d.model).to_string(),
                    opt(&d.serial).to_string(),
                    opt(&d.firmware).to_string(),
                    format_bytes(d.size_bytes),
                    d.rotational
                        .map_or("-", |r| if r { "yes" } else { "no" })
                        .to_string(),
                    opt(&d.scheduler).to_string(),
                    match (&d.md_level, d.md_chunk_bytes) {
                        (Some(l), Some(c)) => format!("{l} chunk {}", format_bytes(c)),
                        (Some(l), None) => l.clone(),
                        _ => "-".to_string(),
                    },
                ]
            })
            .collect();
        for line in text_table(&head, &rows, 8).lines() {
            let _ = writeln!(o, "  {line}");
        }
    }
}

fn render_workload(o: &mut String, trials: &[TrialSample]) {
    if trials.is_empty() {
        let _ = writeln!(o, "  no trials recorded");
        return;
    }
    let ms = stats::summarize_trials(trials);
    render_metric_summary(o, &ms);
    render_trial_rates(o, trials, &ms);
    render_latency(o, trials);
    render_per_second(o, trials);
    for t in trials {
        for n in t.notes.iter().filter(|n| !n.kind.as_designed()) {
            let _ = writeln!(o, "  note (trial {}): {n}", t.trial);
        }
    }
    for line in crate::sample::note::as_designed_lines(trials) {
        let _ = writeln!(o, "  note: {line}");
    }
}

/// Every metric summarized over the trials.
fn render_metric_summary(o: &mut String, ms: &[stats::MetricSummary]) {
    let head: Vec<String> = [
        "metric",
        "unit",
        "n",
        "median ± 95% CI (t)",
        "mean",
        "sd",
        "cv",
        "min",
        "max",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect();
    let rows: Vec<Vec<String>> = ms
        .iter()
        .map(|m| {
            let s = &m.summary;
            vec![
                m.name.clone(),
                m.unit.label().to_string(),
                s.n.to_string(),
                format_estimate(s),
                crate::units::format_rate(s.mean),
                crate::units::format_rate(s.sd),
                format!(
                    "{:.1}%{}",
                    s.cv * 100.0,
                    if s.high_cv() { " !" } else { "" }
                ),
                crate::units::format_rate(s.min),
                crate::units::format_rate(s.max),
            ]
        })
        .collect();
    for line in text_table(&head, &rows, 2).lines() {
        let _ = writeln!(o, "  {line}");
    }
    if ms.iter().any(|m| m.summary.high_cv()) {
        let _ = writeln!(
            o,
            "  ! trials disagree by more than {:.0}%: run more trials (--until-stable) or look for noise",
            HIGH_CV * 100.0
        );
    }
}

/// Each trial's rates.
fn render_trial_rates(o: &mut String, trials: &[TrialSample], ms: &[stats::MetricSummary]) {
    let rate_names: Vec<&str> = ms
        .iter()
        .filter(|m| m.unit != Unit::Micros)
        .map(|m| m.name.as_str())
        .collect();
    let mut head = vec!["trial".to_string(), "started".into(), "elapsed".into()];
    head.extend(rate_names.iter().map(std::string::ToString::to_string));
    let rows: Vec<Vec<String>> = trials
        .iter()
        .map(|t| {
            let metrics = t.metrics();
            let mut row = vec![
                t.trial.to_string(),
                format_time(t.started_unix_ms),
                format_duration(t.elapsed()),
            ];
            for n in &rate_names {
                row.push(
                    metrics
                        .iter()
                        .find(|m| m.name == *n)
                        .map_or("-".to_string(), |m| crate::units::format_rate(m.value)),
                );
            }
            row
        })
        .collect();
    let _ = writeln!(o);
    for line in text_table(&head, &rows, 2).lines() {
        let _ = writeln!(o, "  {line}");
    }
}

/// Latency of all trials together, per operation.
fn render_latency(o: &mut String, trials: &[TrialSample]) {
    let mut ops: Vec<(String, LatencyHistogram)> = Vec::new();
    for t in trials {
        for op in &t.ops {
            match ops.iter_mut().find(|(n, _)| *n == op.op) {
                Some((_, h)) => h.merge(&op.latency),
                None => ops.push((op.op.clone(), op.latency.clone())),
            }
        }
    }
    ops.retain(|(_, h)| !h.is_empty());
    if !ops.is_empty() {
        let head: Vec<String> = [
            "latency", "count", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max",
        ]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
        let rows: Vec<Vec<String>> = ops
            .iter()
            .map(|(n, h)| {
                let s = h.summary();
                let f = |v: u64| format_latency_ns(v as f64);
                vec![
                    n.clone(),
                    s.count.to_string(),
                    f(s.min_ns),
                    f(s.p50_ns),
                    f(s.p90_ns),
                    f(s.p99_ns),
                    f(s.p99_9_ns),
                    f(s.p99_99_ns),
                    f(s.max_ns),
                ]
            })
            .collect();
        let _ = writeln!(o);
        for line in text_table(&head, &rows, 1).lines() {
            let _ = writeln!(o, "  {line}");
        }
    }
}

/// Throughput per second and cliffs, per trial.
fn render_per_second(o: &mut String, trials: &[TrialSample]) {
    let mut wrote = false;
    for t in trials.iter().filter(|t| !t.series.is_empty()) {
        if !wrote {
            let _ = writeln!(o, "\n  per second:");
            wrote = true;
        }
        let (v, unit) = series_values(t);
        let max = v.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            o,
            "  trial {:>2}  {}  max {} {unit}",
            t.trial,
            sparkline(&v, 60),
            crate::units::format_rate(max)
        );
        for c in stats::detect_cliffs(&t.series) {
            let _ = writeln!(o, "            cliff: {}", c.describe());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_shows_a_cliff_and_fits_its_width() {
        let v = [100.0, 100.0, 100.0, 25.0, 25.0, 25.0];
        assert_eq!(sparkline(&v, 60), "███▃▃▃");
        let long: Vec<f64> = (0..300).map(f64::from).collect();
        assert_eq!(sparkline(&long, 60).chars().count(), 60);
        assert_eq!(sparkline(&[], 10), "");
    }

    #[test]
    fn times_are_formatted_as_dates() {
        let s = format_time(1_700_000_000_000);
        assert_eq!(s.len(), 19, "{s}");
        assert!(s.starts_with("2023-11-1"), "{s}");
    }
}
