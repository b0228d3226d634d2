//! What people read about a multi-host run: a table per trial (a row per host and an
//! aggregate row), and the JSON document naming every host. Kept beside the multi-host types
//! it renders; single-host runs render through [`crate::report`].

use super::merge::TrialSummary;
use super::outcome::Outcome;
use crate::output::text_table;
use crate::units::{format_latency_ns, format_rate};

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn secs(ns: u64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

/// The terminal tables of a multi-host run.
pub fn table(outcome: &Outcome, trials: &[TrialSummary]) -> String {
    let mut out = String::new();
    let n = outcome.hosts.len();
    for t in trials {
        let a = &t.aggregate;
        let rtt = t
            .hosts
            .iter()
            .filter(|r| r.failed.is_none())
            .map(|r| r.rtt_ns)
            .max()
            .unwrap_or(0);
        out.push_str(&format!(
            "{} (trial {}): {} of {} hosts; start skew median {}, max {} (clocks known to +/-{})\n",
            t.workload,
            t.trial,
            a.hosts_ok,
            n,
            ms(t.skew_median_ns as f64),
            ms(t.skew_max_ns as f64),
            ms(rtt as f64 / 2.0)
        ));
        let head: Vec<String> = [
            "host", "op", "IOs", "IOPS", "MB/s", "p50", "p99", "p99.9", "skew", "done", "flag",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let mut rows: Vec<Vec<String>> = Vec::new();
        for r in &t.hosts {
            if let Some(why) = &r.failed {
                let mut row = vec![r.host.clone()];
                row.extend(std::iter::repeat_n("-".to_string(), 9));
                row.push(format!("FAILED: {why}"));
                rows.push(row);
                continue;
            }
            rows.push(vec![
                r.host.clone(),
                r.op.clone(),
                r.count.to_string(),
                format_rate(r.ops_per_sec),
                format_rate(r.mb_per_sec),
                format_latency_ns(r.p50_ns as f64),
                format_latency_ns(r.p99_ns as f64),
                format_latency_ns(r.p99_9_ns as f64),
                format!("{:+.3} ms", r.skew_ns as f64 / 1e6),
                secs(r.done_ns),
                r.slow_pct
                    .map(|p| format!("SLOW -{p:.0}%"))
                    .unwrap_or_default(),
            ]);
        }
        for f in &a.figures {
            rows.push(vec![
                if a.hosts_ok == n {
                    "aggregate".into()
                } else {
                    format!("aggregate ({} of {n} hosts)", a.hosts_ok)
                },
                f.op.clone(),
                f.count.to_string(),
                format_rate(f.ops_per_sec),
                format_rate(f.mb_per_sec),
                format_latency_ns(f.latency.p50_ns as f64),
                format_latency_ns(f.latency.p99_ns as f64),
                format_latency_ns(f.latency.p99_9_ns as f64),
                String::new(),
                format!("{} / {}", secs(a.first_done_ns), secs(a.last_done_ns)),
                String::new(),
            ]);
        }
        out.push_str(&text_table(&head, &rows, 2));
        let drained: u64 = a.figures.iter().map(|f| f.after_window).sum();
        out.push_str(&format!(
            "aggregate: IOs are the hosts' sum; rates over the {} in which all hosts ran; percentiles of the merged histograms (with the {drained} IOs in flight at the deadlines, which are not counted); done = first / last host\n\n",
            secs(a.window_ns),
        ));
    }
    for h in &outcome.hosts {
        for note in &h.notes {
            out.push_str(&format!("note: {}: {note}\n", h.name));
        }
    }
    out
}

/// The JSON document: every host named, every trial with its rows and aggregate.
pub fn json(
    outcome: &Outcome,
    trials: &[TrialSummary],
    saved: Option<&super::SavedIds>,
) -> serde_json::Value {
    serde_json::json!({
        "hosts": outcome.hosts,
        "trials": trials,
        "hosts_ok": outcome.hosts.iter().filter(|h| h.failed.is_none()).count(),
        "hosts_total": outcome.hosts.len(),
        "started_unix_ms": outcome.started_unix_ms,
        "ended_unix_ms": outcome.ended_unix_ms,
        "controller_cpu_ns": outcome.controller_cpu_ns,
        "error": outcome.error,
        "interrupted": outcome.interrupted,
        "saved": saved,
    })
}
