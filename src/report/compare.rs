//! `iolab compare`: stored runs side by side, one row per workload metric, one column per run,
//! each cell `median ± half-width of the 95% interval`, and for every run but the baseline its
//! ratio to the baseline with the ratio's own interval and a mark when the difference is not
//! significant. The table in `raid6-vs-raid5-bonnie.txt` ("RAID6 is only 3.01x faster for
//! random creates"), with the spread the post did not have.
//!
//! [`Comparison`] is plain data built from [`RunRecord`]s; the four renderers (terminal text,
//! Markdown, JSON, CSV) only format it.

use crate::csv::csv_field;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::labels;
use crate::sample::{LatencyKind, RunRecord, RunStatus, Unit};
use crate::spec::Workload;
use crate::stats::{self, CiMethod, Cliff, HIGH_CV, MetricSummary, Ratio, Summary};

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
            workloads: rec
                .workloads
                .iter()
                .map(|w| (&w.workload, stats::summarize_trials(&w.trials)))
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
        workload_rows(wname, &per_run, &col_order, baseline, opts, &mut rows);
    }

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
    }
}

/// The rows of one workload: one per metric, in order of first appearance (baseline first),
/// each cell with its ratio to the baseline's.
fn workload_rows(
    wname: &str,
    per_run: &[Option<&(&Workload, Vec<MetricSummary>)>],
    col_order: &[usize],
    baseline: usize,
    opts: &CompareOptions,
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
            host: crate::report::labels::host_label(r),
            target: r.target.path.to_string_lossy().into_owned(),
            started_unix_ms: r.started_unix_ms,
            status: r.status,
            baseline: i == baseline,
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

// ---------------------------------------------------------------------------------------------
// Formatting helpers shared by the renderers.

/// Decimals that give the `±` figure two significant digits, or the value three when there is
/// no interval; 0..=4 either way.
fn decimals(value: f64, half: Option<f64>) -> usize {
    let (scale, extra) = match half {
        Some(h) if h > 0.0 && h.is_finite() => (h, 1.0),
        _ => (value.abs() / 100.0, 0.0),
    };
    if scale.is_nan() || scale <= 0.0 {
        return 1;
    }
    (extra - scale.log10().floor()).clamp(0.0, 4.0) as usize
}

/// `500.0 ± 24.8`, or `500.0` with a single trial.
pub fn format_estimate(s: &Summary) -> String {
    let h = s.half_width();
    let d = decimals(s.median, h);
    match h {
        Some(h) => format!("{:.d$} ± {:.d$}", s.median, h),
        None => format!("{:.d$} (n=1)", s.median),
    }
}

fn ratio_decimals(r: f64) -> usize {
    if r < 0.1 { 3 } else { 2 }
}

/// `3.01x [2.87, 3.14]`, `1.04x [0.82, 1.32] ~` when not significant, `1.50x` without interval.
pub fn format_ratio(r: &Ratio) -> String {
    let d = ratio_decimals(r.value);
    match r.ci {
        Some(ci) => format!(
            "{:.d$}x [{:.d$}, {:.d$}]{}",
            r.value,
            ci.lo,
            ci.hi,
            if r.significant == Some(false) {
                " ~"
            } else {
                ""
            }
        ),
        None => format!("{:.d$}x", r.value),
    }
}

/// The cell text; `!` marks a high coefficient of variation.
fn cell_text(c: &Option<Cell>) -> String {
    match c {
        None => "-".to_string(),
        Some(c) => {
            let mut s = format_estimate(&c.summary);
            if c.high_cv {
                s.push_str(" !");
            }
            s
        }
    }
}

fn ratio_text(c: &Option<Cell>) -> String {
    c.as_ref()
        .and_then(|c| c.ratio.as_ref())
        .map_or_else(|| "-".to_string(), format_ratio)
}

/// Headers and rows of the table as text, shared by the terminal and Markdown renderers:
/// workload, metric (its label, unit included), then per run its estimate and (except the
/// baseline) `vs <baseline>`.
fn table_cells(c: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let base = &c.runs[c.baseline].header;
    let mut head = vec!["workload".to_string(), "metric".into()];
    for r in &c.runs {
        if r.baseline {
            head.push(format!("{} (baseline)", r.header));
        } else {
            head.push(r.header.clone());
            head.push(format!("{} vs {base}", r.header));
        }
    }
    let mut rows = Vec::new();
    let mut last_w = "";
    for row in &c.rows {
        let mut line = vec![
            if row.workload == last_w {
                String::new()
            } else {
                row.workload.clone()
            },
            row_label(row),
        ];
        last_w = &row.workload;
        for (i, cell) in row.cells.iter().enumerate() {
            line.push(cell_text(cell));
            if i != c.baseline {
                line.push(ratio_text(cell));
            }
        }
        rows.push(line);
    }
    (head, rows)
}

/// A row's label; a comparison read back from JSON made before labels has only the key.
pub fn row_label(row: &CompareRow) -> String {
    if row.label.is_empty() {
        labels::metric_label(&row.metric)
    } else {
        row.label.clone()
    }
}

fn legend(c: &Comparison) -> Vec<String> {
    let mut l = vec![format!(
        "cells: median ± half-width of the {:.0}% confidence interval ({}); ratios: median / baseline median, {:.0}% interval by the delta method ({})",
        c.confidence * 100.0,
        c.ci_method.name(),
        c.confidence * 100.0,
        c.ratio_method.name()
    )];
    let any_ns = c.rows.iter().any(|r| {
        r.cells
            .iter()
            .flatten()
            .any(|x| x.ratio.is_some_and(|r| r.significant == Some(false)))
    });
    if any_ns {
        l.push("~ not significant: the ratio's interval includes 1".to_string());
    }
    if c.rows
        .iter()
        .any(|r| r.cells.iter().flatten().any(|x| x.high_cv))
    {
        l.push(format!(
            "! trials disagree by more than {:.0}% (coefficient of variation): run more trials (--until-stable) or look for noise",
            HIGH_CV * 100.0
        ));
    }
    if c.rows.iter().any(|r| !r.higher_is_better) {
        l.push("latency rows (µs): lower is better, so a ratio below 1 is an improvement".into());
        l.push(labels::latency_sentence(&c.latency_kinds));
    }
    l
}

fn cliff_lines(c: &Comparison) -> Vec<String> {
    c.cliffs
        .iter()
        .map(|n| {
            format!(
                "cliff: {} / {} trial {}: {}",
                n.run,
                n.workload,
                n.trial,
                n.cliff.describe()
            )
        })
        .collect()
}

/// Renders rows as an aligned text table: the first `left` columns left-aligned, the rest
/// right-aligned, two spaces between columns.
pub fn text_table(head: &[String], rows: &[Vec<String>], left: usize) -> String {
    let ncol = head.len();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate().take(ncol) {
            let pad = w[i] - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if i < left {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(head, &mut out);
    let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    line(&rule, &mut out);
    for r in rows {
        line(r, &mut out);
    }
    out
}

/// The terminal table with its legend, cliffs and notes.
pub fn render_text(c: &Comparison) -> String {
    let (head, rows) = table_cells(c);
    let mut out = text_table(&head, &rows, 2);
    out.push('\n');
    for l in legend(c) {
        let _ = writeln!(out, "{l}");
    }
    for l in cliff_lines(c) {
        let _ = writeln!(out, "{l}");
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A Markdown table to paste into a wiki or a blog, followed by the legend and notes as a list.
pub fn render_markdown(c: &Comparison) -> String {
    let (head, rows) = table_cells(c);
    let mut out = String::new();
    let row = |cells: &[String]| {
        format!(
            "| {} |\n",
            cells
                .iter()
                .map(|x| md_escape(x))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    };
    out.push_str(&row(&head));
    let align: Vec<String> = (0..head.len())
        .map(|i| if i < 2 { ":--".into() } else { "--:".into() })
        .collect();
    out.push_str(&format!("|{}|\n", align.join("|")));
    for r in &rows {
        out.push_str(&row(r));
    }
    out.push('\n');
    for l in legend(c)
        .into_iter()
        .chain(cliff_lines(c))
        .chain(c.notes.iter().map(|n| format!("note: {n}")))
    {
        let _ = writeln!(out, "- {}", md_escape(&l));
    }
    out
}

/// The comparison as pretty JSON (every field of [`Comparison`]).
pub fn render_json(c: &Comparison) -> String {
    // Plain data with string keys: serialization cannot fail.
    serde_json::to_string_pretty(c).unwrap_or_default() + "\n"
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

fn opt_num(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

/// One line per cell (workload, metric, run) with every statistic, for scripts.
pub fn render_csv(c: &Comparison) -> String {
    let mut out = String::from(
        "workload,metric,unit,higher_is_better,run_id,run,baseline,n,median,mean,sd,cv,min,max,ci_lo,ci_hi,ci_method,ratio,ratio_lo,ratio_hi,ratio_method,significant,high_cv,label\n",
    );
    for row in &c.rows {
        for (i, cell) in row.cells.iter().enumerate() {
            let Some(cell) = cell else { continue };
            let r = &c.runs[i];
            let s = &cell.summary;
            let ratio = cell.ratio.as_ref();
            let fields = [
                csv_field(&row.workload),
                csv_field(&row.metric),
                csv_field(row.unit.label()),
                row.higher_is_better.to_string(),
                csv_field(&r.id),
                csv_field(&r.header),
                r.baseline.to_string(),
                s.n.to_string(),
                num(s.median),
                num(s.mean),
                num(s.sd),
                num(s.cv),
                num(s.min),
                num(s.max),
                opt_num(s.ci.map(|x| x.lo)),
                opt_num(s.ci.map(|x| x.hi)),
                s.ci.map(|x| x.method.name())
                    .unwrap_or_default()
                    .to_string(),
                opt_num(ratio.map(|x| x.value)),
                opt_num(ratio.and_then(|x| x.ci).map(|x| x.lo)),
                opt_num(ratio.and_then(|x| x.ci).map(|x| x.hi)),
                ratio
                    .and_then(|x| x.ci)
                    .map(|x| x.method.name())
                    .unwrap_or_default()
                    .to_string(),
                ratio
                    .and_then(|x| x.significant)
                    .map(|b| b.to_string())
                    .unwrap_or_default(),
                cell.high_cv.to_string(),
                csv_field(&row_label(row)),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

/// The column of the run with this id, for callers mapping `--baseline` to a column.
pub fn index_of(runs: &[RunRecord], id: &str) -> Option<usize> {
    runs.iter().position(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(v: &[f64]) -> Summary {
        Summary::of(v).unwrap()
    }

    #[test]
    fn estimates_keep_two_significant_digits_of_their_spread() {
        assert_eq!(
            format_estimate(&summary(&[510.0, 500.0, 490.0])),
            "500 ± 25"
        );
        assert_eq!(
            format_estimate(&summary(&[100.0, 102.0, 98.0])),
            "100.0 ± 5.0"
        );
        assert_eq!(
            format_estimate(&summary(&[0.051, 0.052, 0.053])),
            "0.0520 ± 0.0025"
        );
        assert_eq!(format_estimate(&summary(&[153_421.0])), "153421 (n=1)");
        assert_eq!(format_estimate(&summary(&[7.5])), "7.50 (n=1)");
    }

    #[test]
    fn ratios_show_their_interval_and_mark_what_is_not_significant() {
        let a = summary(&[100.0, 102.0, 98.0]);
        let b = summary(&[300.0, 306.0, 294.0]);
        let c = summary(&[104.0, 114.0, 94.0]);
        let r = stats::ratio(&b, &a).unwrap();
        assert_eq!(format_ratio(&r), "3.00x [2.87, 3.14]");
        let r = stats::ratio(&c, &a).unwrap();
        assert!(format_ratio(&r).ends_with("] ~"), "{}", format_ratio(&r));
        let r = stats::ratio(&summary(&[150.0]), &a).unwrap();
        assert_eq!(format_ratio(&r), "1.50x");
    }

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

    #[test]
    fn csv_fields_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_field("raid6"), "raid6");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
