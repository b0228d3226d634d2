//! `iolab compare`: stored runs side by side, one row per workload metric, one column per run,
//! each cell `median ± half-width of the 95% interval`, and for every run but the baseline its
//! ratio to the baseline with the ratio's own interval and a mark when the difference is not
//! significant. The table in `raid6-vs-raid5-bonnie.txt` ("RAID6 is only 3.01x faster for
//! random creates"), with the spread the post did not have.
//!
//! [`Comparison`] is plain data built from [`RunRecord`]s by `stats::compare` (re-exported
//! here); the four renderers here (terminal text, Markdown, JSON, CSV) only format it.

use crate::csv::csv_field;
use std::fmt::Write as _;

use crate::output::text_table;
use crate::report::labels;
use crate::sample::RunRecord;
use crate::sample::headline;
use crate::stats::{HIGH_CV, Ratio, Summary};

pub use crate::stats::compare::{
    Cell, CliffNote, CompareOptions, CompareRow, ComparedRun, Comparison, build,
};

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

/// The cell text; `!` marks a high coefficient of variation, `NOT SUSTAINED` an open loop's
/// sustained share below the mark (the run fell short of the asked rate).
fn cell_text(row: &CompareRow, c: &Option<Cell>) -> String {
    match c {
        None => "-".to_string(),
        Some(c) => {
            let mut s = format_estimate(&c.summary);
            if c.high_cv {
                s.push_str(" !");
            }
            if headline::is_sustained_key(&row.metric) && headline::short_of_rate(c.summary.median)
            {
                s.push_str(" NOT SUSTAINED");
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
            line.push(cell_text(row, cell));
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
        if submit_latency_rows(c) {
            l.push(labels::latency_sentence(&c.latency_kinds));
        }
    }
    l.extend(open_loop_sentence(c));
    l
}

/// Whether the comparison's latency rows include submit-to-complete ones (a closed loop's,
/// `*.lat_*`), which the latency sentence explains: a comparison of open loops alone has only
/// latency from the schedule and service time, which the open-loop sentence explains.
pub fn submit_latency_rows(c: &Comparison) -> bool {
    c.open_loops.is_empty() || c.rows.iter().any(|r| r.metric.contains(".lat_"))
}

/// What an open loop's rows mean and what it is judged by; `None` without open loops.
pub fn open_loop_sentence(c: &Comparison) -> Option<String> {
    if c.open_loops.is_empty() {
        return None;
    }
    let names: Vec<&str> = c.open_loops.iter().map(|o| o.workload.as_str()).collect();
    Some(format!(
        "open loop ({}): judged by latency from schedule (each IO's due time to its completion: what a client waiting for it saw; service time: submission to completion) at p99 and p99.9, not by the IOPS its schedule asked; sustained = achieved/asked IOPS over the window, NOT SUSTAINED below {}",
        names.join(", "),
        headline::SUSTAINED_MIN
    ))
}

/// Each layout's verdicts (integrity, what the lab's faults did to its files, power cuts, a
/// cache device the lab failed), one line per run that has any: a comparison of speeds must
/// not hide that one of the layouts lost data.
fn verdict_lines(c: &Comparison) -> Vec<String> {
    c.runs
        .iter()
        .filter_map(|r| {
            let mut parts = Vec::new();
            if let Some(i) = &r.integrity {
                parts.push(format!("integrity {i}"));
            }
            if let Some(f) = &r.faults {
                parts.push(format!("lab faults {f}"));
            }
            if let Some(p) = &r.power {
                parts.push(format!("power cuts {p}"));
            }
            if let Some(c) = &r.cache_failure {
                parts.push(c.clone());
            }
            (!parts.is_empty()).then(|| format!("verdict: {}: {}", r.header, parts.join("; ")))
        })
        .collect()
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

/// The terminal table with its legend, cliffs and notes.
pub fn render_text(c: &Comparison) -> String {
    let (head, rows) = table_cells(c);
    let mut out = text_table(&head, &rows, 2);
    out.push('\n');
    for l in legend(c) {
        let _ = writeln!(out, "{l}");
    }
    for l in verdict_lines(c).into_iter().chain(cliff_lines(c)) {
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
        .chain(verdict_lines(c))
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
    use crate::stats;

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
    fn csv_fields_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_field("raid6"), "raid6");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
