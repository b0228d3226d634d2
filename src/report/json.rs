//! The `--json` document of a run: the whole record plus a summary a script can read without
//! decoding histograms.

use serde::Serialize;

use crate::sample::{LatencyHistogram, LatencySummary, RunRecord};
use crate::stats::median;

/// Per-operation figures of one workload across its trials.
#[derive(Debug, Clone, Serialize)]
pub struct OpSummary {
    /// `read`, `write`, `sync` or a small-file phase.
    pub op: String,
    /// Operations per second of each trial.
    pub ops_per_sec: Vec<f64>,
    /// MB/s (10^6 bytes/s) of each trial.
    pub mb_per_sec: Vec<f64>,
    /// Median of `ops_per_sec`.
    pub ops_per_sec_median: f64,
    /// Median of `mb_per_sec`.
    pub mb_per_sec_median: f64,
    /// Operations counted in all trials.
    pub count: u64,
    /// Bytes counted in all trials.
    pub bytes: u64,
    /// Latency percentiles over all trials together.
    pub latency: LatencySummary,
}

/// One workload's summary.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadSummary {
    /// Workload name.
    pub workload: String,
    /// Trials run.
    pub trials: usize,
    /// Per operation kind (an SLO search's trials ran at many rates: read `slo` instead).
    pub ops: Vec<OpSummary>,
    /// An SLO search's answer: the capacity at the targets and the latency-vs-load curve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<crate::stats::slo::SloCapacity>,
}

/// Summaries of every workload of a run.
pub fn summarize(run: &RunRecord) -> Vec<WorkloadSummary> {
    run.workloads
        .iter()
        .map(|wr| {
            let mut ops: Vec<OpSummary> = Vec::new();
            for t in &wr.trials {
                for o in &t.ops {
                    if !ops.iter().any(|s| s.op == o.op) {
                        ops.push(OpSummary {
                            op: o.op.clone(),
                            ops_per_sec: Vec::new(),
                            mb_per_sec: Vec::new(),
                            ops_per_sec_median: 0.0,
                            mb_per_sec_median: 0.0,
                            count: 0,
                            bytes: 0,
                            latency: LatencySummary::default(),
                        });
                    }
                }
            }
            for s in &mut ops {
                let mut h = LatencyHistogram::new();
                for t in &wr.trials {
                    if let Some(o) = t.op(&s.op) {
                        s.ops_per_sec.push(o.ops_per_sec());
                        s.mb_per_sec.push(o.mb_per_sec());
                        s.count += o.count;
                        s.bytes += o.bytes;
                        h.merge(&o.latency);
                    }
                }
                s.ops_per_sec_median = median(&s.ops_per_sec).unwrap_or(0.0);
                s.mb_per_sec_median = median(&s.mb_per_sec).unwrap_or(0.0);
                s.latency = h.summary();
            }
            WorkloadSummary {
                workload: wr.workload.name.clone(),
                trials: wr.trials.len(),
                ops,
                slo: crate::stats::slo::of_workload(wr),
            }
        })
        .collect()
}

/// The document `iolab run --json` prints.
pub fn run_document(run: &RunRecord) -> serde_json::Value {
    serde_json::json!({
        "run": run,
        "summary": summarize(run),
    })
}
