//! The table `iolab run` prints: one row per workload and operation, medians over trials,
//! latency percentiles over all trials, the spread, and the notes a reader must see.

use std::fmt::Write as _;

use super::json::summarize;
use crate::sample::{RunRecord, RunStatus};
use crate::units::format_latency_ns;

fn cv_pct(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean * 100.0)
}

/// Renders the run table; `verbose` adds the notes about the engine working as designed
/// (one line each, merged over the trials), which the default screen leaves to the JSON.
pub fn run_table(run: &RunRecord, verbose: bool) -> String {
    let mut out = String::new();
    let t = &run.target;
    let fs = match (&t.fs_type, &t.mount_source) {
        (Some(f), Some(s)) => format!(" ({f} on {s})"),
        (Some(f), None) => format!(" ({f})"),
        _ => String::new(),
    };
    let trials = run
        .workloads
        .iter()
        .map(|w| w.trials.len())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "iolab {} suite on {}{fs}: {} trial{} per workload",
        run.suite_name,
        t.path.display(),
        trials,
        if trials == 1 { "" } else { "s" }
    );
    table(&mut out, run);
    for ws in summarize(run) {
        if let Some(c) = &ws.slo {
            out.push_str(&super::text::slo::curve(&ws.workload, c));
        }
        if let Some(s) = &ws.steady {
            let rounds: Vec<String> = s.rounds.iter().map(|v| s.format(*v)).collect();
            let _ = writeln!(
                out,
                "{}: {} (the row above is that window's)\n{}: rounds {}",
                ws.workload,
                s.describe(),
                ws.workload,
                rounds.join(", ")
            );
        }
    }
    if let Some(t) = super::pts::iops_table(run) {
        out.push_str(&t);
    }
    footer(&mut out, run, verbose);
    out
}

/// The table itself: a row per workload and operation.
fn table(out: &mut String, run: &RunRecord) {
    let headers = [
        "workload", "op", "MB/s", "IOPS", "p50", "p99", "p99.9", "max", "cv",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (ws, wr) in summarize(run).iter().zip(&run.workloads) {
        if ws.slo.is_some() {
            // Its trials ran at many rates: the curve below the table says what they mean.
            rows.push(vec![
                wr.workload.name.clone(),
                "slo".into(),
                "-".into(),
                ws.slo
                    .as_ref()
                    .and_then(|c| c.capacity)
                    .map_or_else(|| "-".into(), crate::units::format_rate),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        let mut first = true;
        for o in &ws.ops {
            let data_op = o.bytes > 0 || o.op == "read" || o.op == "write";
            let headline = if data_op {
                &o.mb_per_sec
            } else {
                &o.ops_per_sec
            };
            rows.push(vec![
                if first {
                    wr.workload.name.clone()
                } else {
                    String::new()
                },
                o.op.clone(),
                if data_op {
                    crate::units::format_rate(o.mb_per_sec_median)
                } else {
                    "-".into()
                },
                crate::units::format_rate(o.ops_per_sec_median),
                format_latency_ns(o.latency.p50_ns as f64),
                format_latency_ns(o.latency.p99_ns as f64),
                format_latency_ns(o.latency.p99_9_ns as f64),
                format_latency_ns(o.latency.max_ns as f64),
                cv_pct(headline).map_or_else(|| "-".into(), |c| format!("{c:.1}%")),
            ]);
            first = false;
        }
        if ws.ops.is_empty() {
            rows.push(vec![
                wr.workload.name.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i < 2 {
                let _ = write!(s, "{:<w$}  ", c, w = widths[i]);
            } else {
                let _ = write!(s, "{:>w$}  ", c, w = widths[i]);
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(
        out,
        "{}",
        line(
            &headers
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
        )
    );
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
}

/// What follows the table: noisy workloads, verification, notes and how the run ended.
fn footer(out: &mut String, run: &RunRecord, verbose: bool) {
    let summaries = summarize(run);
    let high_cv: Vec<&str> = summaries
        .iter()
        .filter(|ws| {
            ws.slo.is_none()
                && ws.ops.iter().any(|o| {
                    cv_pct(if o.bytes > 0 {
                        &o.mb_per_sec
                    } else {
                        &o.ops_per_sec
                    })
                    .is_some_and(|c| c > 5.0)
                })
        })
        .map(|ws| ws.workload.as_str())
        .collect();
    if !high_cv.is_empty() {
        let _ = writeln!(
            out,
            "note: spread above 5% in {}: repeat more (--repeat, --until-stable) before drawing conclusions",
            high_cv.join(", ")
        );
    }
    for wr in &run.workloads {
        let mut v = crate::sample::VerifySummary::default();
        let mut any = false;
        for t in &wr.trials {
            if let Some(tv) = &t.verify {
                v.merge(tv.clone());
                any = true;
            }
        }
        if any && v.blocks_checked > 0 {
            let _ = writeln!(out, "verify: {}: {}", wr.workload.name, v.describe());
        }
    }
    for n in &run.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if verbose {
        let trials = run.workloads.iter().flat_map(|w| &w.trials);
        for n in crate::sample::note::as_designed_lines(trials) {
            let _ = writeln!(out, "note: {n}");
        }
    }
    match run.status {
        RunStatus::Interrupted => {
            let _ = writeln!(out, "status: interrupted (finished trials shown)");
        }
        RunStatus::Failed => {
            let _ = writeln!(
                out,
                "status: failed: {}",
                run.error.as_deref().unwrap_or("unknown error")
            );
        }
        _ => {}
    }
}
