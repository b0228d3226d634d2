//! What a report says, built once from stored runs; the HTML and Markdown renderers only
//! format it.
//!
//! The numbers come from [`compare::build`], so a figure in the
//! report is the figure `iolab compare` prints for the same runs. This module adds what a
//! table cannot show: which metric heads each workload, the latency curve of all trials
//! merged, the per-second series, the lab's capacity and degraded figures, and notes.

use crate::report::compare::{self, CompareOptions, CompareRow, Comparison};
use crate::sample::{LatencyHistogram, RunRecord, RunStatus, Unit, WorkloadRecord};
use crate::stats::{self, Ratio};

use super::setup::{self, DeviceRow, Fact, LayoutFacts};

/// Percentiles drawn on latency curves.
pub const PERCENTILES: [f64; 10] = [
    50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
];

/// Most points per line of a throughput series; longer trials are averaged down.
pub const MAX_SERIES_POINTS: usize = 300;

/// How much a note matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Changes how a figure should be read (noise, cache, failure, slow disk).
    Warning,
    /// Good to know.
    Info,
}

/// One note.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// How much it matters.
    pub severity: Severity,
    /// What to know, one line.
    pub text: String,
}

/// How to build a report.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Index (into the runs) of the baseline; the first run when `None`.
    pub baseline: Option<usize>,
    /// Heading; made from the run names when `None`.
    pub title: Option<String>,
    /// When the report was made, ms since the Unix epoch.
    pub generated_unix_ms: u64,
}

/// The setup of one run.
#[derive(Clone, Debug)]
pub struct RunSetup {
    /// Column header (label or id, made unique), as in `iolab compare`.
    pub header: String,
    /// Store id.
    pub id: String,
    /// True for the baseline.
    pub baseline: bool,
    /// How it ended.
    pub status: RunStatus,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// End, ms since the Unix epoch.
    pub ended_unix_ms: Option<u64>,
    /// Every setup fact, in table order.
    pub facts: Vec<Fact>,
    /// Devices under the target.
    pub devices: Vec<DeviceRow>,
    /// What a lab recorded about the layout.
    pub layout: Option<LayoutFacts>,
    /// `--note`.
    pub note: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// The command that made it.
    pub command: String,
}

/// Latency percentiles of one operation, per run, over all trials merged.
#[derive(Clone, Debug)]
pub struct LatencyView {
    /// Operation (`read`, `write`, `create`).
    pub op: String,
    /// Per run (column order): (percentile, ns) points, `None` without data.
    pub curves: Vec<Option<Vec<(f64, u64)>>>,
}

/// One trial's per-second throughput.
#[derive(Clone, Debug)]
pub struct TrialSeries {
    /// Run column.
    pub run: usize,
    /// Trial number.
    pub trial: u32,
    /// Trials the run has for this workload (one line per run reads differently from three).
    pub of: usize,
    /// (second, value) points, thinned to [`MAX_SERIES_POINTS`].
    pub points: Vec<(f64, f64)>,
}

/// Per-second throughput of every trial of a workload.
#[derive(Clone, Debug)]
pub struct SeriesView {
    /// `MB/s` or `ops/s` (metadata workloads move no bytes).
    pub unit: &'static str,
    /// The trials.
    pub trials: Vec<TrialSeries>,
}

/// Everything shown for one workload.
#[derive(Clone, Debug)]
pub struct WorkloadView {
    /// Workload name.
    pub name: String,
    /// Its parameters, one line (the baseline's).
    pub describe: String,
    /// The row of the headline metric in the comparison.
    pub headline: Option<usize>,
    /// All rows of this workload in the comparison.
    pub rows: Vec<usize>,
    /// Latency curves, headline operation first.
    pub latency: Vec<LatencyView>,
    /// Throughput per second.
    pub series: Option<SeriesView>,
    /// Indices of this workload's cliffs in the comparison.
    pub cliffs: Vec<usize>,
    /// Per run column, the answer of its SLO search (`--slo`), with the latency-vs-load curve.
    pub slo: Vec<Option<crate::stats::slo::SloCapacity>>,
    /// An open loop's sustained rows (`read.sustained`, `write.sustained`): a run short of the
    /// asked rate is marked beside its headline (empty for a closed loop).
    pub sustained: Vec<usize>,
    /// Per run column, its steady-state rounds judged by SNIA PTS's rules (`--steady-state`).
    pub steady: Vec<Option<crate::stats::steady::Steadiness>>,
}

/// A degraded run against its healthy layout.
#[derive(Clone, Debug)]
pub struct Degraded {
    /// Run column of the healthy layout.
    pub healthy: usize,
    /// Per workload (in report order): degraded / healthy headline ratio.
    pub ratios: Vec<Option<Ratio>>,
}

/// One layout of a lab.
#[derive(Clone, Debug)]
pub struct LayoutRow {
    /// Run column.
    pub run: usize,
    /// Usable capacity, bytes.
    pub usable_bytes: Option<u64>,
    /// Geometric mean over workloads of the headline ratio to the baseline.
    pub speed: Option<f64>,
    /// Seconds the rebuild took.
    pub rebuild_seconds: Option<f64>,
    /// The lab's integrity verdict for this layout, when it checked one.
    pub integrity: Option<String>,
    /// When this run is a degraded layout: against its healthy run.
    pub degraded: Option<Degraded>,
    /// `degraded_of` named a run not in the report.
    pub degraded_of_missing: Option<String>,
    /// The run was made during the rebuild, not merely degraded.
    pub rebuilding: bool,
}

/// The lab part of a report.
#[derive(Clone, Debug)]
pub struct LabView {
    /// Lab ids among the runs.
    pub lab_ids: Vec<String>,
    /// One row per run that has a layout or a lab id.
    pub layouts: Vec<LayoutRow>,
}

/// A whole report.
#[derive(Clone, Debug)]
pub struct Report {
    /// Heading.
    pub title: String,
    /// When it was made, ms since the Unix epoch.
    pub generated_unix_ms: u64,
    /// The numbers, as `iolab compare` computes them.
    pub comparison: Comparison,
    /// Setup per run, in column order.
    pub runs: Vec<RunSetup>,
    /// Facts equal in every run (said once).
    pub common: Vec<Fact>,
    /// Keys of facts that differ between runs (setup table columns).
    pub varying: Vec<&'static str>,
    /// Workloads in report order.
    pub workloads: Vec<WorkloadView>,
    /// Lab section, when runs came from a lab.
    pub lab: Option<LabView>,
    /// The lab's decision: the report's first section when set (`iolab report
    /// --lab` decides by the needs the lab ran with).
    pub decision: Option<crate::decide::Decision>,
    /// What the reader must know.
    pub notes: Vec<Note>,
    /// `iolab run --hosts` groups among the runs (per-host charts).
    pub hosts: Vec<super::hosts::HostsView>,
    /// Version of the iolab that made the report.
    pub iolab_version: String,
}

impl Report {
    /// The comparison row at `i`.
    pub fn row(&self, i: usize) -> &CompareRow {
        &self.comparison.rows[i]
    }

    /// The baseline's column.
    pub fn baseline(&self) -> usize {
        self.comparison.baseline
    }

    /// The unit of a workload's headline figure.
    pub fn headline_unit(&self, w: &WorkloadView) -> Option<Unit> {
        w.headline.map(|h| self.row(h).unit)
    }

    /// Whether a workload's headline is a latency (an open loop's, from the schedule): its
    /// ratios read the other way round, above 1 slower.
    pub fn headline_is_latency(&self, w: &WorkloadView) -> bool {
        w.headline.is_some_and(|h| !self.row(h).higher_is_better)
    }

    /// An open loop's lowest sustained share in run column `run` (median over its trials)
    /// when it fell short of the asked rate; `None` when it kept up or is a closed loop.
    pub fn short_of_rate(&self, w: &WorkloadView, run: usize) -> Option<f64> {
        w.sustained
            .iter()
            .filter_map(|&i| self.row(i).cells.get(run)?.as_ref())
            .map(|c| c.summary.median)
            .reduce(f64::min)
            .filter(|v| crate::sample::headline::short_of_rate(*v))
    }
}

/// Workload names: the baseline's order, then anything only the others have (as `compare`).
fn workload_order(runs: &[RunRecord], baseline: usize) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let cols = std::iter::once(baseline).chain((0..runs.len()).filter(|&i| i != baseline));
    for i in cols {
        for w in &runs[i].workloads {
            if !order.contains(&w.workload.name) {
                order.push(w.workload.name.clone());
            }
        }
    }
    order
}

fn find_workload<'a>(r: &'a RunRecord, name: &str) -> Option<&'a WorkloadRecord> {
    r.workloads.iter().find(|w| w.workload.name == name)
}

/// The metric a workload is judged by, as `iolab run` picks it: MB/s for sequential or large
/// blocks, IOPS for random, ops/s for small files. Taken from the first run (baseline first)
/// with a trial.
fn headline_metric(runs: &[RunRecord], baseline: usize, name: &str) -> Option<String> {
    let cols = std::iter::once(baseline).chain((0..runs.len()).filter(|&i| i != baseline));
    for i in cols {
        if let Some(w) = find_workload(&runs[i], name) {
            if let Some(t) = w.trials.first() {
                if let Some((m, _)) = crate::sample::headline(&w.workload, t) {
                    return Some(m);
                }
            }
        }
    }
    None
}

/// The latency curve of one op over all trials of a workload; points stop where the
/// histogram holds too few values to say anything about a rarer percentile.
fn latency_curve(w: &WorkloadRecord, op: &str) -> Option<Vec<(f64, u64)>> {
    let mut h = LatencyHistogram::new();
    for t in &w.trials {
        if let Some(o) = t.op(op) {
            h.merge(&o.latency);
        }
    }
    if h.is_empty() {
        return None;
    }
    let count = h.len() as f64;
    let ps: Vec<f64> = PERCENTILES
        .iter()
        .copied()
        .filter(|&p| p <= 90.0 || count * (1.0 - p / 100.0) >= 1.0)
        .collect();
    // One pass over the counts for all percentiles (same values as `percentile()` gives).
    let values = h.0.value_at_quantiles(ps.iter().map(|p| p / 100.0));
    Some(ps.iter().copied().zip(values).collect())
}

fn latency_views(runs: &[RunRecord], name: &str, headline: Option<&str>) -> Vec<LatencyView> {
    // Headline op first, then other data ops of block workloads (the writes of a 70/30 mix).
    let mut ops: Vec<String> = Vec::new();
    if let Some(h) = headline.and_then(|m| m.split_once('.')).map(|(op, _)| op) {
        ops.push(h.to_string());
    }
    for r in runs {
        if let Some(w) = find_workload(r, name) {
            if w.workload.io().is_none() {
                continue;
            }
            for t in &w.trials {
                for o in &t.ops {
                    if matches!(o.op.as_str(), "read" | "write") && !ops.contains(&o.op) {
                        ops.push(o.op.clone());
                    }
                }
            }
        }
    }
    ops.into_iter()
        .map(|op| LatencyView {
            curves: runs
                .iter()
                .map(|r| find_workload(r, name).and_then(|w| latency_curve(w, &op)))
                .collect(),
            op,
        })
        .filter(|v| v.curves.iter().any(Option::is_some))
        .collect()
}

/// The per-second points of one trial. The last second of a window is usually partial: its
/// count is scaled by the part of the second it covers, so it reads as a rate like the others,
/// and dropped when it covers less than a quarter of a second (too few IOs to mean anything).
fn trial_points(t: &crate::sample::TrialSample, bytes: bool) -> Vec<(f64, f64)> {
    let secs = t.elapsed_ns as f64 / 1e9;
    let mut pts = Vec::with_capacity(t.series.len());
    for p in &t.series {
        let v = if bytes {
            p.bytes as f64 / 1e6
        } else {
            p.ops as f64
        };
        let covered = (secs - f64::from(p.t)).clamp(0.0, 1.0);
        if covered >= 1.0 || t.elapsed_ns == 0 {
            pts.push((f64::from(p.t), v));
        } else if covered >= 0.25 {
            pts.push((f64::from(p.t), v / covered));
        }
    }
    pts
}

fn series_view(runs: &[RunRecord], name: &str) -> Option<SeriesView> {
    let ws: Vec<Option<&WorkloadRecord>> = runs.iter().map(|r| find_workload(r, name)).collect();
    let bytes = ws
        .iter()
        .flatten()
        .flat_map(|w| &w.trials)
        .any(|t| t.series.iter().any(|p| p.bytes > 0));
    let mut trials = Vec::new();
    for (run, w) in ws.iter().enumerate() {
        let Some(w) = w else { continue };
        let with_series = w.trials.iter().filter(|t| !t.series.is_empty()).count();
        for t in w.trials.iter().filter(|t| !t.series.is_empty()) {
            let pts = trial_points(t, bytes);
            trials.push(TrialSeries {
                run,
                trial: t.trial,
                of: with_series,
                points: crate::report::chart::line::thin(&pts, MAX_SERIES_POINTS),
            });
        }
    }
    // A trial of a second or less is one point: nothing to see over time.
    if trials.iter().all(|t| t.points.len() < 2) {
        return None;
    }
    Some(SeriesView {
        unit: if bytes { "MB/s" } else { "ops/s" },
        trials,
    })
}

/// The lab section: capacity, overall speed, degraded ratios and rebuild times per layout.
fn lab_view(
    runs: &[RunSetup],
    records: &[RunRecord],
    workloads: &[WorkloadView],
    c: &Comparison,
) -> Option<LabView> {
    let in_lab: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].lab_id.is_some() || records[i].layout.is_some())
        .collect();
    if in_lab.is_empty() {
        return None;
    }
    let mut lab_ids: Vec<String> = Vec::new();
    for i in &in_lab {
        if let Some(l) = &records[*i].lab_id {
            if !lab_ids.contains(l) {
                lab_ids.push(l.clone());
            }
        }
    }
    // A degraded run names its healthy layout by label, layout name, header or id; a healthy
    // run (one that is not itself degraded) is preferred when several match.
    let by_name = |name: &str, me: usize| -> Option<usize> {
        let matches = |j: usize| {
            j != me
                && (records[j].label.as_deref() == Some(name)
                    || runs[j].layout.as_ref().and_then(|l| l.name.as_deref()) == Some(name)
                    || runs[j].header == name
                    || runs[j].id == name)
        };
        let healthy = |j: usize| {
            runs[j]
                .layout
                .as_ref()
                .is_none_or(|l| l.degraded_of.is_none())
        };
        (0..runs.len())
            .find(|&j| matches(j) && healthy(j))
            .or_else(|| (0..runs.len()).find(|&j| matches(j)))
    };
    let layouts = in_lab
        .iter()
        .map(|&i| {
            let lf = runs[i].layout.clone().unwrap_or_default();
            let mut logs = Vec::new();
            for w in workloads {
                if let Some(h) = w.headline {
                    if let Some(r) = c.rows[h].cells[i].as_ref().map(|cell| {
                        if i == c.baseline {
                            Some(1.0)
                        } else {
                            cell.ratio.map(|r| r.value)
                        }
                    }) {
                        if let Some(v) = r.filter(|v| *v > 0.0 && v.is_finite()) {
                            // As a speed: an open loop's latency headline counts inverted
                            // (twice the latency from the schedule is half the speed).
                            let up = c.rows[h].higher_is_better;
                            logs.push(if up { v.ln() } else { -v.ln() });
                        }
                    }
                }
            }
            let speed =
                (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp());
            let (degraded, missing) = match lf.degraded_of.as_deref() {
                None => (None, None),
                Some(name) => match by_name(name, i) {
                    None => (None, Some(name.to_string())),
                    Some(healthy) => {
                        let ratios = workloads
                            .iter()
                            .map(|w| {
                                let h = w.headline?;
                                let d = c.rows[h].cells[i].as_ref()?;
                                let b = c.rows[h].cells[healthy].as_ref()?;
                                stats::ratio(&d.summary, &b.summary)
                            })
                            .collect();
                        (Some(Degraded { healthy, ratios }), None)
                    }
                },
            };
            LayoutRow {
                run: i,
                usable_bytes: lf.usable_bytes,
                speed,
                rebuild_seconds: lf.rebuild_seconds,
                integrity: lf.integrity,
                degraded,
                degraded_of_missing: missing,
                rebuilding: lf.rebuilding,
            }
        })
        .collect();
    Some(LabView { lab_ids, layouts })
}

fn default_title(c: &Comparison, records: &[RunRecord]) -> String {
    let labs: Vec<&str> = records.iter().filter_map(|r| r.lab_id.as_deref()).collect();
    if !labs.is_empty() && labs.len() == records.len() && labs.iter().all(|l| *l == labs[0]) {
        return format!("Lab {}: {} layouts compared", labs[0], records.len());
    }
    let names: Vec<&str> = c.runs.iter().map(|r| r.header.as_str()).collect();
    match names.len() {
        0 => "iolab report".into(),
        1 => format!("iolab run {}", names[0]),
        2..=4 => names.join(" vs "),
        n => format!("{n} runs: {}, …", names[..3].join(", ")),
    }
}

/// The setup facts equal in every run (said once above the table; unknown everywhere, not at
/// all) and the keys of those that differ.
fn common_and_varying(setups: &[RunSetup]) -> (Vec<Fact>, Vec<&'static str>) {
    let mut common = Vec::new();
    let mut varying = Vec::new();
    if let Some(first) = setups.first() {
        for (k, f) in first.facts.iter().enumerate() {
            let all_same = setups.iter().all(|s| s.facts[k].value == f.value);
            if all_same && setups.len() > 1 {
                if f.value != "-" {
                    common.push(f.clone());
                }
            } else if setups.iter().any(|s| s.facts[k].value != "-") {
                varying.push(f.key);
            }
        }
    }
    (common, varying)
}

/// Builds the report of `runs` (at least one, in column order), without its notes: those are
/// gathered from the finished model, which `html::build` does next.
pub fn build(runs: &[RunRecord], opts: &ReportOptions) -> Report {
    let c = compare::build(
        runs,
        &CompareOptions {
            baseline: opts.baseline,
            metrics: Vec::new(),
        },
    );
    let setups = run_setups(runs, &c);
    let (common, varying) = common_and_varying(&setups);
    let workloads: Vec<WorkloadView> = workload_order(runs, c.baseline)
        .into_iter()
        .map(|name| workload_view(runs, &c, name))
        .collect();
    let lab = lab_view(&setups, runs, &workloads, &c);
    let title = opts
        .title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| default_title(&c, runs));
    Report {
        title,
        generated_unix_ms: opts.generated_unix_ms,
        comparison: c,
        runs: setups,
        common,
        varying,
        workloads,
        lab,
        decision: None,
        notes: Vec::new(),
        hosts: super::hosts::build(runs),
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The setup of each run, in column order, under the header the comparison gave it: what the
/// report shows above the figures so a difference can be traced to what was set up.
fn run_setups(runs: &[RunRecord], c: &Comparison) -> Vec<RunSetup> {
    runs.iter()
        .zip(&c.runs)
        .map(|(r, cr)| {
            let layout = r.layout.as_ref().map(LayoutFacts::from_record);
            RunSetup {
                header: cr.header.clone(),
                id: r.id.clone(),
                baseline: cr.baseline,
                status: r.status,
                started_unix_ms: r.started_unix_ms,
                ended_unix_ms: r.ended_unix_ms,
                facts: setup::facts(r, layout.as_ref()),
                devices: r.target.devices.iter().map(setup::device_row).collect(),
                layout,
                note: r.note.clone(),
                error: r.error.clone(),
                command: r.command_line.join(" "),
            }
        })
        .collect()
}

/// Workload `name`'s section: its rows of the comparison, the one that heads it (the metric
/// `iolab run` judges it by, else the first row that is neither a latency nor a fraction),
/// and its per-run SLO, latency, series, steady-state, cliff and sustained views.
fn workload_view(runs: &[RunRecord], c: &Comparison, name: String) -> WorkloadView {
    let baseline = c.baseline;
    let rows: Vec<usize> = (0..c.rows.len())
        .filter(|&i| c.rows[i].workload == name)
        .collect();
    let metric = headline_metric(runs, baseline, &name);
    let headline = metric
        .as_deref()
        .and_then(|m| rows.iter().copied().find(|&i| c.rows[i].metric == m))
        .or_else(|| {
            rows.iter()
                .copied()
                .find(|&i| !matches!(c.rows[i].unit, Unit::Micros | Unit::Fraction))
        });
    let describe = std::iter::once(baseline)
        .chain(0..runs.len())
        .find_map(|i| find_workload(&runs[i], &name))
        .map(|w| w.workload.describe())
        .unwrap_or_default();
    let headline_name = headline.map(|h| c.rows[h].metric.clone());
    WorkloadView {
        slo: runs
            .iter()
            .map(|r| find_workload(r, &name).and_then(crate::stats::slo::of_workload))
            .collect(),
        latency: latency_views(runs, &name, headline_name.as_deref()),
        series: series_view(runs, &name),
        steady: runs
            .iter()
            .map(|r| find_workload(r, &name).and_then(crate::stats::steady::of_workload))
            .collect(),
        cliffs: (0..c.cliffs.len())
            .filter(|&i| c.cliffs[i].workload == name)
            .collect(),
        sustained: rows
            .iter()
            .copied()
            .filter(|&i| crate::sample::headline::is_sustained_key(&c.rows[i].metric))
            .collect(),
        name,
        describe,
        headline,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{IoAccounting, SeriesPoint, TrialSample};

    #[test]
    fn the_partial_last_second_reads_as_a_rate() {
        let t = TrialSample {
            workload: "w".into(),
            trial: 1,
            started_unix_ms: 0,
            elapsed_ns: 2_500_000_000,
            ops: Vec::new(),
            series: (0..3)
                .map(|t| SeriesPoint {
                    t,
                    bytes: if t == 2 { 50_000_000 } else { 100_000_000 },
                    ops: 10,
                    ..Default::default()
                })
                .collect(),
            accounting: IoAccounting::default(),
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            notes: Vec::new(),
            verify: None,
            open_loop: None,
        };
        assert_eq!(
            trial_points(&t, true),
            vec![(0.0, 100.0), (1.0, 100.0), (2.0, 100.0)]
        );
        let mut short = t.clone();
        short.elapsed_ns = 2_100_000_000;
        assert_eq!(
            trial_points(&short, true).len(),
            2,
            "a tenth of a second is dropped"
        );
        assert_eq!(trial_points(&t, false)[0], (0.0, 10.0));
    }
}
