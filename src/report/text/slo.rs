//! The latency-vs-load curve of an SLO search, as a terminal table: one row per rate tried,
//! the latency each target limits (measured from the schedule), the service time, whether the
//! rate met every target, and the answer with its interval and the knee.

use std::fmt::Write as _;

use crate::stats::slo::SloCapacity;
use crate::units::{format_latency_ns, format_rate};

/// The curve and the answer of one workload's search.
pub fn curve(workload: &str, c: &SloCapacity) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{workload}: {}", c.describe());
    if let Some(p) = c.peak {
        let _ = write!(out, "  closed-loop peak {} IOPS", format_rate(p));
        if let Some(k) = c.knee {
            let _ = write!(
                out,
                "; knee (latency twice the lightest load's) near {} IOPS",
                format_rate(k)
            );
        }
        let _ = writeln!(out);
    }
    let targets: Vec<String> = c
        .targets
        .split(", ")
        .map(|t| t.split("<=").next().unwrap_or(t).to_string())
        .collect();
    let mut headers: Vec<String> = vec!["rate".into(), "achieved".into()];
    headers.extend(targets.iter().map(|t| format!("{t} (sched)")));
    headers.extend(["service p50".to_string(), "trials".into(), "meets".into()]);
    let mut rows: Vec<Vec<String>> = Vec::new();
    for p in &c.curve {
        let mut r = vec![format_rate(p.rate), format_rate(p.achieved)];
        for v in &p.values {
            r.push(if v.median >= f64::MAX {
                "-".into()
            } else {
                format_latency_ns(v.median)
            });
        }
        r.push(p.service_ns.map_or_else(|| "-".into(), format_latency_ns));
        r.push(p.trials.to_string());
        r.push(if p.meets {
            "yes".into()
        } else if !p.sustained {
            "no (backlog)".into()
        } else {
            "no".into()
        });
        rows.push(r);
    }
    let mut w: Vec<usize> = headers.iter().map(String::len).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("  ");
        for (i, c) in cells.iter().enumerate() {
            let _ = write!(s, "{:>wd$}  ", c, wd = w[i]);
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&headers));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    if !c.unresolved.is_empty() {
        let _ = writeln!(
            out,
            "  note: {} not resolved by the trials' IO counts (fewer than 10 IOs beyond the percentile): lengthen --time",
            c.unresolved.join(", ")
        );
    }
    out
}
