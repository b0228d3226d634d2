//! The `--json` document of a run: the whole record plus a summary a script can read without
//! decoding histograms.

use serde::Serialize;

use crate::sample::{LatencyHistogram, LatencySummary, RunRecord};
use crate::stats::median;

/// Per-operation figures of one workload across its trials (a steady-state run's: across
/// its window's rounds).
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
    /// In an open loop, submission to completion (`latency` then counts from the schedule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<LatencySummary>,
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
    /// A fixed-rate open loop's schedule over its trials: asked and achieved, late, shed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopSummary>,
    /// A steady-state run's rounds judged by PTS's rules: the steady window's mean is the
    /// figure to quote, and only when `steady_at` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::stats::steady::Steadiness>,
}

/// What an open loop's trials did with their schedule, summed over trials.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpenLoopSummary {
    /// The rate asked, IOPS (all threads).
    pub asked_iops: f64,
    /// Median over trials of the IOPS completed.
    pub achieved_iops: f64,
    /// IOs the schedule asked for in the measured windows.
    pub scheduled: u64,
    /// IOs submitted.
    pub issued: u64,
    /// IOs submitted more than 1 ms after their due time.
    pub late: u64,
    /// IOs dropped over 1 s behind.
    pub shed: u64,
    /// Whether every trial kept up (nothing shed, no backlog beyond the queue at the end) and
    /// each op achieved at least 0.95 of its asked rate (`read_sustained`, `write_sustained`).
    pub sustained: bool,
    /// How late IOs went out (due time to submission), all trials merged.
    pub issue_error: LatencySummary,
    /// Reads achieved / asked (median over trials; `sample::headline::sustained`), when the
    /// workload reads on a schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_sustained: Option<f64>,
    /// Writes achieved / asked, when it writes on a schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_sustained: Option<f64>,
}

/// Sums the open-loop records of a fixed-rate workload's trials (`None` in a closed loop
/// and for an SLO search, whose trials ran at many rates).
fn open_loop_summary(wr: &crate::sample::WorkloadRecord) -> Option<OpenLoopSummary> {
    let crate::spec::WorkloadKind::Io(io) = &wr.workload.kind else {
        return None;
    };
    if io.slo.is_some() {
        return None;
    }
    let in_flight = u64::from(io.queue_depth) * u64::from(io.threads);
    let mut all: Option<crate::sample::OpenLoopSample> = None;
    let mut achieved = Vec::new();
    let mut sustained = true;
    for t in &wr.trials {
        let Some(ol) = &t.open_loop else { continue };
        sustained &= ol.sustained(in_flight);
        achieved.push(
            t.ops
                .iter()
                .filter(|o| o.op == "read" || o.op == "write")
                .map(crate::sample::OpSample::ops_per_sec)
                .sum(),
        );
        match &mut all {
            Some(a) => a.merge(ol),
            None => all = Some(ol.clone()),
        }
    }
    let a = all?;
    let share = |op: &str| {
        let v: Vec<f64> = wr
            .trials
            .iter()
            .filter_map(|t| crate::sample::headline::sustained(t, op))
            .collect();
        median(&v)
    };
    let (read_sustained, write_sustained) = (share("read"), share("write"));
    let short = [read_sustained, write_sustained]
        .into_iter()
        .flatten()
        .any(crate::sample::headline::short_of_rate);
    Some(OpenLoopSummary {
        read_sustained,
        write_sustained,
        asked_iops: a.asked_iops,
        achieved_iops: median(&achieved).unwrap_or(0.0),
        scheduled: a.scheduled,
        issued: a.issued,
        late: a.late,
        shed: a.shed,
        sustained: sustained && !short,
        issue_error: a.issue_error.summary(),
    })
}

/// Summaries of every workload of a run.
pub fn summarize(run: &RunRecord) -> Vec<WorkloadSummary> {
    run.workloads
        .iter()
        .map(|wr| {
            // A steady-state run's figures are its window's (the steady one, or the last
            // judged): the rounds before it are the device settling, not its figure.
            let steady = crate::stats::steady::of_workload(wr);
            let trials = crate::stats::steady::figure_trials(wr);
            let mut ops: Vec<OpSummary> = Vec::new();
            for t in trials {
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
                            service: None,
                        });
                    }
                }
            }
            for s in &mut ops {
                let mut h = LatencyHistogram::new();
                let mut service: Option<LatencyHistogram> = None;
                for t in trials {
                    if let Some(o) = t.op(&s.op) {
                        if let Some(sv) = &o.service {
                            service.get_or_insert_with(LatencyHistogram::new).merge(sv);
                        }
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
                s.service = service.map(|h| h.summary());
            }
            WorkloadSummary {
                workload: wr.workload.name.clone(),
                trials: wr.trials.len(),
                ops,
                slo: crate::stats::slo::of_workload(wr),
                open_loop: open_loop_summary(wr),
                steady,
            }
        })
        .collect()
}

/// The document `iolab run --json` prints: the run, a summary per workload, and the notes about
/// the engine working as designed merged over the trials (each trial's own are in its notes).
pub fn run_document(run: &RunRecord) -> serde_json::Value {
    let trials = run.workloads.iter().flat_map(|w| &w.trials);
    serde_json::json!({
        "run": run,
        "summary": summarize(run),
        "as_designed_notes": crate::sample::note::as_designed_lines(trials),
    })
}
