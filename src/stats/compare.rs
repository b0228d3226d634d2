//! What stored runs say side by side: one row per workload metric, one column per run, each
//! cell the median with its 95% interval over the run's trials, and for every run but the
//! baseline its ratio to the baseline with the ratio's own interval and whether the difference
//! is significant; cliffs within trials and the notes a reader must see.
//!
//! [`Comparison`] is plain data built from [`RunRecord`]s here, where the statistics are, so
//! that the lab's conclusion and `iolab compare` build it alike; the reports render it.

use serde::{Deserialize, Serialize};

use crate::sample::headline::{self, HeadlineKind};
use crate::sample::labels;
use crate::sample::{LatencyKind, RunRecord, RunStatus, Unit};
use crate::spec::Workload;
use crate::stats::{self, CiMethod, Cliff, MetricSummary, Ratio, Summary};

/// What to compare.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// Index (into the runs given) of the baseline; the first run when `None`.
    pub baseline: Option<usize>,
    /// Keep only metrics matching one of these: a full name (`read.iops`), a figure (`iops`
    /// matches every `*.iops`) or an operation (`read` matches `read.*`). Empty keeps all.
    pub metrics: Vec<String>,
}

/// A run as a column of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparedRun {
    /// Store id.
    pub id: String,
    /// `--label`, when set.
    pub label: Option<String>,
    /// The column header: the label, or the id; made unique.
    pub header: String,
    /// Host name.
    pub host: String,
    /// Target path.
    pub target: String,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// How the run ended.
    pub status: RunStatus,
    /// True for the baseline column.
    pub baseline: bool,
    /// The lab's integrity verdict for the run's layout (`verified`, `DATA LOSS: ...`), when
    /// the lab checked a data set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// The layout's POWER verdict (`0/10 lost`, `2/3: ... (write hole)`), when the lab cut
    /// its power.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<String>,
    /// A degraded run whose cache device the lab failed first: what the cache did,
    /// in the lab's words (`bcache writeback cache device failed (2MiB dirty): ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_failure: Option<String>,
    /// What the lab's injected faults did to the layout's files: `intact`, `repaired (N
    /// files)`, `read error (N files)`, `silently wrong (N files)` (wrong bytes, no error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<String>,
}

/// One cell: a run's figure for one workload metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The statistics over the run's trials.
    pub summary: Summary,
    /// Ratio to the baseline's cell (`None` in the baseline column, or when the baseline
    /// lacks this figure or it is zero).
    pub ratio: Option<Ratio>,
    /// The trials disagree by more than 5% (coefficient of variation).
    pub high_cv: bool,
}

/// One row: a metric of a workload across the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Workload name.
    pub workload: String,
    /// Metric name (`read.iops`): the key scripts and `--metric` use.
    pub metric: String,
    /// The metric in words with its unit ("read IOPS"), as tables head it.
    #[serde(default)]
    pub label: String,
    /// Its unit.
    pub unit: Unit,
    /// Whether a ratio above 1 is an improvement.
    pub higher_is_better: bool,
    /// One cell per run, in column order; `None` when the run lacks the workload or metric.
    pub cells: Vec<Option<Cell>>,
}

/// A cliff found in one trial of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CliffNote {
    /// Column header of the run.
    pub run: String,
    /// Workload name.
    pub workload: String,
    /// Trial number.
    pub trial: u32,
    /// What happened.
    pub cliff: Cliff,
}

/// The whole comparison, ready to render.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Columns.
    pub runs: Vec<ComparedRun>,
    /// Index of the baseline column.
    pub baseline: usize,
    /// Rows, grouped by workload in suite order.
    pub rows: Vec<CompareRow>,
    /// Cliffs within trials.
    pub cliffs: Vec<CliffNote>,
    /// Things the reader must know: differing parameters, missing workloads, unfinished runs.
    pub notes: Vec<String>,
    /// Confidence level of every interval (0.95).
    pub confidence: f64,
    /// How cell intervals were computed (`t`).
    pub ci_method: CiMethod,
    /// How ratio intervals were computed (`delta-log-t`).
    pub ratio_method: CiMethod,
    /// What each run's latency figures measure, in column order.
    #[serde(default)]
    pub latency_kinds: Vec<LatencyKind>,
    /// The open-loop workloads (a rate, a replay at its recorded times), which are judged by
    /// their latency from the schedule and whether each run sustained the asked rate, not by
    /// the IOPS the schedule fixes; every other workload is judged by its throughput.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_loops: Vec<OpenLoopHeadline>,
}

/// An open-loop workload's headline across the runs: the rows it is judged by and, per run,
/// whether the asked rate was sustained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopHeadline {
    /// Workload name.
    pub workload: String,
    /// What it is judged by (`schedule_latency`).
    pub kind: HeadlineKind,
    /// The metric keys it is judged by, reads then writes: p99 and p99.9 latency from the
    /// schedule (lower is better) and the sustained share (`read.sustained`).
    pub metrics: Vec<String>,
    /// Per run column: achieved / asked per op (medians over trials), `None` where the run
    /// lacks the workload.
    pub sustained: Vec<Option<Sustained>>,
}

/// How much of its asked rate one run achieved, reads and writes apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sustained {
    /// Reads achieved / asked (median over trials), when the workload reads.
    pub read: Option<f64>,
    /// Writes achieved / asked, when it writes.
    pub write: Option<f64>,
    /// Every op reached at least [`headline::SUSTAINED_MIN`] of its asked rate.
    pub kept_up: bool,
}

impl Sustained {
    /// `reads 0.83, writes 0.80`: each op's share, for notes and marks.
    pub fn describe(&self) -> String {
        [("reads", self.read), ("writes", self.write)]
            .iter()
            .filter_map(|(n, v)| v.map(|v| format!("{n} {v:.2}")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A run's workloads with their metrics summarized over trials.
struct RunView<'a> {
    workloads: Vec<(&'a Workload, Vec<MetricSummary>)>,
}

fn metric_matches(name: &str, filters: &[String]) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| {
            name == f
                || name
                    .rsplit_once('.')
                    .is_some_and(|(op, fig)| op == f || fig == f)
        })
}

/// Column headers: the label, else the id; a label used twice gets the id appended.
fn headers(runs: &[RunRecord]) -> Vec<String> {
    let base: Vec<String> = runs
        .iter()
        .map(|r| r.label.clone().unwrap_or_else(|| r.id.clone()))
        .collect();
    base.iter()
        .zip(runs)
        .map(|(h, r)| {
            if base.iter().filter(|x| *x == h).count() > 1 && *h != r.id {
                format!("{h} ({})", r.id)
            } else {
                h.clone()
            }
        })
        .collect()
}

/// Builds the comparison of `runs` (at least one). The baseline is `opts.baseline` or the first.
pub fn build(runs: &[RunRecord], opts: &CompareOptions) -> Comparison {
    let baseline = opts.baseline.filter(|&b| b < runs.len()).unwrap_or(0);
    let headers = headers(runs);
    let views: Vec<RunView<'_>> = runs
        .iter()
        .map(|rec| RunView {
            // A preconditioning pass prepares the device; it is no figure to compare by.
            workloads: rec
                .workloads
                .iter()
                .filter(|w| !stats::steady::is_precondition(w))
                .map(|w| {
                    (
                        &w.workload,
                        stats::summarize_trials(stats::steady::figure_trials(w)),
                    )
                })
                .collect(),
        })
        .collect();

    // Workload order: the baseline's, then anything only the others have.
    let mut order: Vec<&str> = Vec::new();
    let mut col_order: Vec<usize> = vec![baseline];
    col_order.extend((0..runs.len()).filter(|&i| i != baseline));
    for &i in &col_order {
        for (w, _) in &views[i].workloads {
            if !order.contains(&w.name.as_str()) {
                order.push(&w.name);
            }
        }
    }

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for wname in &order {
        let per_run: Vec<Option<&(&Workload, Vec<MetricSummary>)>> = views
            .iter()
            .map(|v| v.workloads.iter().find(|(w, _)| w.name == *wname))
            .collect();
        workload_notes(wname, &per_run, &headers, baseline, &mut notes);
        let open = is_open_loop(wname, &views);
        workload_rows(wname, &per_run, &col_order, baseline, opts, open, &mut rows);
        if let Some(row) = capacity_row(wname, runs, baseline, opts) {
            rows.push(row);
        }
    }

    let open_loops = open_loop_headlines(&order, &views, &rows);
    sustained_notes(&open_loops, &headers, &mut notes);
    let cliffs = cliff_notes(runs, &headers, &mut notes);
    latency_kind_note(runs, &headers, &mut notes);
    Comparison {
        runs: compared_runs(runs, headers, baseline),
        baseline,
        rows,
        cliffs,
        notes,
        confidence: stats::CONFIDENCE,
        ci_method: CiMethod::StudentT,
        ratio_method: CiMethod::DeltaLogT,
        latency_kinds: runs
            .iter()
            .map(|r| LatencyKind::from_notes(&r.notes))
            .collect(),
        open_loops,
    }
}

/// Whether the workload named `wname` is an open loop in any run (its headline latency from
/// the schedule).
fn is_open_loop(wname: &str, views: &[RunView<'_>]) -> bool {
    views.iter().any(|v| {
        v.workloads
            .iter()
            .any(|(w, _)| w.name == wname && headline::kind(w) == HeadlineKind::ScheduleLatency)
    })
}

/// The open-loop workloads' headlines: the rows they are judged by, and per run the sustained
/// shares read from the `*.sustained` rows.
fn open_loop_headlines(
    order: &[&str],
    views: &[RunView<'_>],
    rows: &[CompareRow],
) -> Vec<OpenLoopHeadline> {
    order
        .iter()
        .filter(|w| is_open_loop(w, views))
        .map(|wname| {
            let row = |key: &str| {
                rows.iter()
                    .find(|r| r.workload == *wname && r.metric == key)
            };
            let metrics = ["read", "write"]
                .iter()
                .flat_map(|op| headline::schedule_keys(op))
                .filter(|k| row(k).is_some())
                .collect();
            let share = |op: &str, i: usize| {
                row(&format!("{op}.{}", headline::SUSTAINED))
                    .and_then(|r| r.cells[i].as_ref())
                    .map(|c| c.summary.median)
            };
            let sustained = (0..views.len())
                .map(|i| {
                    let (read, write) = (share("read", i), share("write", i));
                    (read.is_some() || write.is_some()).then(|| Sustained {
                        read,
                        write,
                        kept_up: ![read, write]
                            .iter()
                            .flatten()
                            .any(|v| headline::short_of_rate(*v)),
                    })
                })
                .collect();
            OpenLoopHeadline {
                workload: (*wname).to_string(),
                kind: HeadlineKind::ScheduleLatency,
                metrics,
                sustained,
            }
        })
        .collect()
}

/// A note for every run that did not sustain an open loop's asked rate: its latency from the
/// schedule then measures the backlog it built, not the layout at that rate.
fn sustained_notes(open: &[OpenLoopHeadline], headers: &[String], notes: &mut Vec<String>) {
    for o in open {
        for (i, s) in o.sustained.iter().enumerate() {
            if let Some(s) = s.as_ref().filter(|s| !s.kept_up) {
                notes.push(format!(
                    "rate not sustained: {} / {}: achieved/asked {} (median of trials; below {}): its latency from the schedule grows with the backlog",
                    headers[i],
                    o.workload,
                    s.describe(),
                    headline::SUSTAINED_MIN
                ));
            }
        }
    }
}

/// The rows of one workload: one per metric, in order of first appearance (baseline first),
/// each cell with its ratio to the baseline's. An open loop's headline rows come first (p99
/// and p99.9 latency from the schedule and the sustained share, reads then writes).
fn workload_rows(
    wname: &str,
    per_run: &[Option<&(&Workload, Vec<MetricSummary>)>],
    col_order: &[usize],
    baseline: usize,
    opts: &CompareOptions,
    open_loop: bool,
    rows: &mut Vec<CompareRow>,
) {
    let mut metrics: Vec<(&str, Unit)> = Vec::new();
    for &i in col_order {
        if let Some((_, ms)) = per_run[i] {
            for m in ms {
                if metric_matches(&m.name, &opts.metrics)
                    && !metrics.iter().any(|(n, _)| *n == m.name)
                {
                    metrics.push((&m.name, m.unit));
                }
            }
        }
    }
    if open_loop {
        let first: Vec<String> = ["read", "write"]
            .iter()
            .flat_map(|op| headline::schedule_keys(op))
            .collect();
        // A stable sort keeps every other row where it was.
        metrics.sort_by_key(|(n, _)| first.iter().position(|k| k == n).unwrap_or(first.len()));
    }
    for (mname, unit) in metrics {
        let summaries: Vec<Option<&Summary>> = per_run
            .iter()
            .map(|pr| {
                pr.and_then(|(_, ms)| ms.iter().find(|m| m.name == mname))
                    .map(|m| &m.summary)
            })
            .collect();
        let base = summaries[baseline];
        let cells = summaries
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.map(|s| Cell {
                    summary: s.clone(),
                    ratio: if i == baseline {
                        None
                    } else {
                        base.and_then(|b| stats::ratio(s, b))
                    },
                    high_cv: s.high_cv(),
                })
            })
            .collect();
        rows.push(CompareRow {
            workload: wname.to_string(),
            metric: mname.to_string(),
            label: labels::metric_label(mname),
            unit,
            higher_is_better: unit.higher_is_better(),
            cells,
        });
    }
}

/// The metric key of a workload's capacity under its latency target.
pub const CAPACITY_METRIC: &str = "slo.capacity_iops";

/// A workload's capacity at its latency target in each run that searched it, with its ratio
/// to the baseline's and that ratio's interval (`compare` shows capacity ratios).
/// `None` when no run searched the workload or `--metric` leaves the row out.
fn capacity_row(
    wname: &str,
    runs: &[RunRecord],
    baseline: usize,
    opts: &CompareOptions,
) -> Option<CompareRow> {
    if !metric_matches(CAPACITY_METRIC, &opts.metrics) {
        return None;
    }
    let caps: Vec<Option<stats::slo::SloCapacity>> = runs
        .iter()
        .map(|r| {
            r.workloads
                .iter()
                .find(|w| w.workload.name == wname)
                .and_then(stats::slo::of_workload)
        })
        .collect();
    let summaries: Vec<Option<Summary>> = caps
        .iter()
        .map(|c| c.as_ref().and_then(capacity_summary))
        .collect();
    if summaries.iter().all(Option::is_none) {
        return None;
    }
    let base = summaries[baseline].as_ref();
    let cells = summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.as_ref().map(|s| Cell {
                summary: s.clone(),
                ratio: if i == baseline {
                    None
                } else {
                    base.and_then(|b| capacity_ratio(s, b))
                },
                high_cv: false,
            })
        })
        .collect();
    Some(CompareRow {
        workload: wname.to_string(),
        metric: CAPACITY_METRIC.to_string(),
        label: labels::metric_label(CAPACITY_METRIC),
        unit: Unit::Iops,
        higher_is_better: true,
        cells,
    })
}

/// A capacity as a cell's summary: the capacity is the middle, its search interval the
/// interval; `n` counts the rates tried. `None` when no capacity was found (none met).
fn capacity_summary(c: &stats::slo::SloCapacity) -> Option<Summary> {
    let v = c.capacity.filter(|v| v.is_finite() && *v > 0.0)?;
    let ci = c.interval.map(|(lo, hi)| stats::Interval {
        lo,
        hi,
        level: stats::CONFIDENCE,
        method: CiMethod::SloSearch,
    });
    Some(Summary {
        n: c.curve.len(),
        median: v,
        mean: v,
        sd: 0.0,
        cv: 0.0,
        min: ci.as_ref().map_or(v, |i| i.lo),
        max: ci.as_ref().map_or(v, |i| i.hi),
        ci,
    })
}

/// The ratio of two capacities with an interval: on the log scale each side's 95% interval
/// is read as ±1.96 standard errors (its half-width over the capacity), and the two add in
/// quadrature. Without both intervals, the ratio alone.
fn capacity_ratio(run: &Summary, base: &Summary) -> Option<Ratio> {
    if base.median <= 0.0 {
        return None;
    }
    let value = run.median / base.median;
    let se = |s: &Summary| {
        let i = s.ci.as_ref()?;
        (i.lo > 0.0 && i.hi >= i.lo).then(|| (i.hi.ln() - i.lo.ln()) / (2.0 * 1.96))
    };
    let (Some(a), Some(b)) = (se(run), se(base)) else {
        return Some(Ratio {
            value,
            ci: None,
            significant: None,
        });
    };
    let half = 1.96 * (a * a + b * b).sqrt();
    let ci = stats::Interval {
        lo: value * (-half).exp(),
        hi: value * half.exp(),
        level: stats::CONFIDENCE,
        method: CiMethod::SloSearch,
    };
    let significant = Some(ci.lo > 1.0 || ci.hi < 1.0);
    Some(Ratio {
        value,
        ci: Some(ci),
        significant,
    })
}

/// Cliffs within every run's trials; runs that did not complete get a note.
fn cliff_notes(runs: &[RunRecord], headers: &[String], notes: &mut Vec<String>) -> Vec<CliffNote> {
    let mut cliffs = Vec::new();
    for (i, rec) in runs.iter().enumerate() {
        for w in &rec.workloads {
            for (trial, cs) in stats::trial_cliffs(&w.trials) {
                for cliff in cs {
                    cliffs.push(CliffNote {
                        run: headers[i].clone(),
                        workload: w.workload.name.clone(),
                        trial,
                        cliff,
                    });
                }
            }
        }
        if rec.status != RunStatus::Complete {
            let what = match rec.status {
                RunStatus::Running => "is still running",
                RunStatus::Interrupted => "was interrupted",
                RunStatus::Failed => "failed",
                RunStatus::Incomplete => "is incomplete (its process died)",
                RunStatus::Complete => "",
            };
            notes.push(format!(
                "{} {what}: its figures come from the trials it finished",
                headers[i]
            ));
        }
    }
    cliffs
}

/// The columns: each run with its header.
fn compared_runs(runs: &[RunRecord], headers: Vec<String>, baseline: usize) -> Vec<ComparedRun> {
    runs.iter()
        .zip(headers)
        .enumerate()
        .map(|(i, (r, header))| ComparedRun {
            id: r.id.clone(),
            label: r.label.clone(),
            header,
            host: crate::sample::labels::host_label(r),
            target: r.target.path.to_string_lossy().into_owned(),
            started_unix_ms: r.started_unix_ms,
            status: r.status,
            baseline: i == baseline,
            integrity: r
                .layout
                .as_ref()
                .and_then(|l| l.integrity.as_ref())
                .map(|i| i.verdict.clone()),
            power: r
                .layout
                .as_ref()
                .and_then(|l| l.power.as_ref())
                .map(crate::sample::power::PowerReport::text),
            cache_failure: r
                .layout
                .as_ref()
                .and_then(|l| l.cache_failure.as_ref())
                .map(crate::stack::cache::CacheFailure::describe),
            faults: r
                .layout
                .as_ref()
                .and_then(|l| crate::sample::fault_outcome::layout_verdict(&l.faults)),
        })
        .collect()
}

/// Latency rows of runs imported from fio may hold fio's `clat` rather than submit-to-complete
/// latency: say which, and that a ratio across kinds is not like for like.
fn latency_kind_note(runs: &[RunRecord], headers: &[String], notes: &mut Vec<String>) {
    let kinds: Vec<LatencyKind> = runs
        .iter()
        .map(|r| LatencyKind::from_notes(&r.notes))
        .collect();
    if kinds.iter().all(|k| *k == LatencyKind::Lat) {
        return;
    }
    let each: Vec<String> = headers
        .iter()
        .zip(&kinds)
        .map(|(h, k)| format!("{h}: {}", k.name()))
        .collect();
    let mixed = kinds.iter().any(|k| *k != kinds[0]);
    notes.push(format!(
        "latency kind ({}){}",
        each.join(", "),
        if mixed {
            "; clat excludes submission time, lat includes it: latency ratios between them are not like for like"
        } else {
            "; clat is fio's completion latency (submission time excluded)"
        }
    ));
}

/// Notes for one workload: runs that lack it, and parameters that differ from the baseline's
/// (a ratio between different workloads is not a comparison of layouts).
fn workload_notes(
    name: &str,
    per_run: &[Option<&(&Workload, Vec<MetricSummary>)>],
    headers: &[String],
    baseline: usize,
    notes: &mut Vec<String>,
) {
    let missing: Vec<&str> = per_run
        .iter()
        .zip(headers)
        .filter(|(p, _)| p.is_none())
        .map(|(_, h)| h.as_str())
        .collect();
    if !missing.is_empty() {
        notes.push(format!(
            "workload '{name}' is missing from {}",
            missing.join(", ")
        ));
    }
    let Some((base, _)) = per_run[baseline] else {
        return;
    };
    for (i, p) in per_run.iter().enumerate() {
        if let Some((w, _)) = p {
            if i != baseline && w.kind != base.kind {
                notes.push(format!(
                    "workload '{name}' differs: {} ran `{}`, {} ran `{}`",
                    headers[baseline],
                    base.describe(),
                    headers[i],
                    w.describe()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_filters_match_names_figures_and_operations() {
        let f = |x: &[&str]| {
            x.iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert!(metric_matches("read.iops", &[]));
        assert!(metric_matches("read.iops", &f(&["iops"])));
        assert!(metric_matches("read.iops", &f(&["read"])));
        assert!(metric_matches("read.iops", &f(&["read.iops"])));
        assert!(!metric_matches("write.iops", &f(&["read", "mbps"])));
        assert!(!metric_matches("read.lat_p99_us", &f(&["iops"])));
    }

    fn cap(v: f64, lo: f64, hi: f64) -> Summary {
        capacity_summary(&stats::slo::SloCapacity {
            targets: "p99<=2ms".into(),
            verdict: stats::slo::SloVerdict::Capacity,
            capacity: Some(v),
            interval: Some((lo, hi)),
            peak: None,
            knee: None,
            curve: Vec::new(),
            bracket: None,
            unresolved: Vec::new(),
        })
        .expect("a capacity")
    }

    /// Capacities compare by ratio with an interval from both searches' intervals.
    #[test]
    fn capacity_ratios_carry_an_interval_from_both_searches() {
        // By hand: each side's half-width on the log scale is ln(2100/1900)/2 = ln(1050/950)/2
        // = 0.05004, i.e. 0.02553 standard errors of 1.96; together 0.03611, x 1.96 = 0.07077:
        // 0.5 x e^-0.07077 = 0.4658, 0.5 x e^0.07077 = 0.5367.
        let r = capacity_ratio(&cap(1000.0, 950.0, 1050.0), &cap(2000.0, 1900.0, 2100.0)).unwrap();
        assert!((r.value - 0.5).abs() < 1e-12);
        let ci = r.ci.unwrap();
        assert!(
            (ci.lo - 0.4658).abs() < 1e-4 && (ci.hi - 0.5367).abs() < 1e-4,
            "{ci:?}"
        );
        assert_eq!(r.significant, Some(true));
        // Wide intervals that overlap: not significant.
        let r = capacity_ratio(&cap(2100.0, 1600.0, 2600.0), &cap(2000.0, 1500.0, 2500.0)).unwrap();
        assert_eq!(r.significant, Some(false));
        // No capacity (nothing met) has no cell.
        let none = stats::slo::SloCapacity {
            targets: String::new(),
            verdict: stats::slo::SloVerdict::NoneMet,
            capacity: None,
            interval: None,
            peak: None,
            knee: None,
            curve: Vec::new(),
            bracket: None,
            unresolved: Vec::new(),
        };
        assert!(capacity_summary(&none).is_none());
    }
}
