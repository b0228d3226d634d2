//! `iolab report`: one self-contained HTML file with the comparison, the setup of every run,
//! charts per workload, the lab's capacity and degraded figures, and notes.
//!
//! Self-contained means no network, ever: charts are inline SVG, the stylesheet is inline, there
//! is no script and no font, and a Content-Security-Policy forbids loading anything, so the file
//! opens the same from a mail attachment, a wiki or an air-gapped lab. Light and dark schemes
//! follow `prefers-color-scheme`; tables scroll sideways on a phone; printing keeps charts whole.
//!
//! [`model`] builds what the report says (numbers from `compare::build`), [`figures`] draws
//! the charts, this file lays out the page; `report::markdown` renders the same model.

pub mod decision;
mod faults;
pub mod figures;
pub mod hosts;
pub mod model;
pub mod notes;
pub mod setup;
pub mod sweep;
mod tables;

use std::fmt::Write as _;

use crate::report::chart::{CHART_CSS, Embed, PALETTE, esc};
use crate::report::compare::{Cell, format_estimate, format_ratio, row_label};
use crate::report::show::{format_time, status_name};
use crate::units::{format_bytes_si, format_duration};

use model::Severity;
pub use model::{Report, ReportOptions};
use tables::Split;

/// The page stylesheet (the chart classes come from [`CHART_CSS`]).
const PAGE_CSS: &str = "\
*{box-sizing:border-box}\
body{margin:0;background:var(--bg);color:var(--fg);\
font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}\
main{max-width:1080px;margin:0 auto;padding:16px}\
h1{font-size:1.6em;margin:.2em 0 .3em;line-height:1.25}\
h2{font-size:1.3em;margin:2em 0 .6em;border-bottom:1px solid var(--grid);padding-bottom:.2em}\
h3{font-size:1.05em;margin:1.4em 0 .4em}\
a{color:var(--c0)}.meta{color:var(--muted);margin:.2em 0}\
nav{margin:.8em 0;font-size:14px;display:flex;flex-wrap:wrap}\
nav a{margin-right:.9em;white-space:nowrap}\
.tw{overflow-x:auto;margin:.4em 0 1em;-webkit-overflow-scrolling:touch}\
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}\
th,td{padding:4px 8px;border-bottom:1px solid var(--grid);text-align:right;\
vertical-align:top;white-space:nowrap}\
th:first-child,td:first-child,.l{text-align:left}\
thead th,table.sum td:first-child{white-space:normal}\
td.l{white-space:normal;min-width:7em;overflow-wrap:anywhere}\
thead th{background:var(--panel);font-weight:600}\
.r{display:block;color:var(--muted);font-size:12px}.u{color:var(--muted);font-weight:400}\
.bl{font-weight:600}.hi{color:var(--c2)}\
.sw{display:inline-block;width:.75em;height:.75em;border-radius:2px;margin-right:.4em;\
vertical-align:-.05em}\
figure{margin:.8em 0 1.4em;break-inside:avoid;page-break-inside:avoid}\
figcaption{color:var(--muted);font-size:13px;margin-bottom:.2em}\
svg.chart{width:100%;height:auto;max-width:820px;display:block}\
code{font-size:.88em;background:var(--panel);padding:1px 4px;border-radius:3px;\
overflow-wrap:anywhere}\
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.4em 0}\
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}\
ul.notes{padding-left:1.2em}ul.notes li{margin:.25em 0}\
li.warn::marker{content:'⚠ ';color:var(--c1)}.bad{color:var(--c1)}\
details{margin:.3em 0}summary{cursor:pointer;color:var(--muted)}\
footer{margin-top:2.5em;color:var(--muted);font-size:13px}\
@media (max-width:600px){body{font-size:14px}main{padding:10px}\
dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.4em}\
figure{overflow-x:auto;-webkit-overflow-scrolling:touch}svg.chart{min-width:540px}}\
@media print{main{max-width:none;padding:0}nav{display:none}h2,h3{break-after:avoid}\
.tw{overflow:visible}th,td{white-space:normal}a{color:inherit;text-decoration:none}\
svg.chart{max-width:680px}}\n";

/// The swatch classes `s0..s9`, one per palette colour, tying table rows to chart colours.
fn swatch_css() -> String {
    let mut css = String::new();
    for i in 0..PALETTE {
        css.push_str(&format!(".s{i}{{background:var(--c{i})}}"));
    }
    css.push('\n');
    css
}

fn swatch(i: usize) -> String {
    format!("<span class=\"sw s{}\"></span>", i % PALETTE)
}

/// A run's name as table rows show it: swatch, name, baseline mark.
fn run_cell(r: &Report, i: usize) -> String {
    let run = &r.comparison.runs[i];
    format!(
        "{}<span{}>{}</span>{}",
        swatch(i),
        if run.baseline { " class=\"bl\"" } else { "" },
        esc(&run.header),
        if run.baseline {
            " <span class=\"u\">(baseline)</span>"
        } else {
            ""
        }
    )
}

/// A figure cell: estimate (with `!` when noisy) and the ratio below it.
fn cell_html(c: Option<&Cell>) -> String {
    let Some(c) = c else {
        return "-".into();
    };
    let mut s = esc(&format_estimate(&c.summary));
    if c.high_cv {
        s.push_str(" <span class=\"hi\" title=\"trials disagree by more than 5%\">!</span>");
    }
    if let Some(r) = &c.ratio {
        let _ = write!(s, "<span class=\"r\">{}</span>", esc(&format_ratio(r)));
    }
    s
}

/// Whether `c` is an open loop's sustained share below the mark (`read.sustained` < 0.95).
fn short_share(row: &crate::report::compare::CompareRow, c: Option<&Cell>) -> bool {
    crate::sample::headline::is_sustained_key(&row.metric)
        && c.is_some_and(|c| crate::sample::headline::short_of_rate(c.summary.median))
}

/// A workload's headline cell in run column `run`, with `sustained 0.83` marked bad when an
/// open loop fell short of its asked rate there.
fn headline_html(r: &Report, w: &model::WorkloadView, run: usize) -> String {
    let mut s = cell_html(w.headline.and_then(|h| r.row(h).cells[run].as_ref()));
    if let Some(v) = r.short_of_rate(w, run) {
        let _ = write!(
            s,
            " <strong class=\"bad\" title=\"achieved/asked IOPS: the rate was not sustained\">sustained {v:.2}</strong>"
        );
    }
    s
}

/// Builds the report of `runs` (at least one, in column order): the model, then the notes
/// gathered from it.
pub fn build(runs: &[crate::sample::RunRecord], opts: &ReportOptions) -> Report {
    let mut report = model::build(runs, opts);
    report.notes = notes::collect(&report, runs);
    report
}

/// Renders the whole page.
pub fn render(r: &Report) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
<meta name=\"color-scheme\" content=\"light dark\">\n\
<meta name=\"generator\" content=\"iolab {}\">\n<title>{}</title>\n<style>\n{CHART_CSS}{PAGE_CSS}{}</style>\n</head>\n<body><main>\n",
        esc(&r.iolab_version),
        esc(&r.title),
        swatch_css()
    );
    header(&mut o, r);
    if let Some(d) = &r.decision {
        decision::section(&mut o, d);
    }
    summary(&mut o, r);
    setup(&mut o, r);
    lab(&mut o, r);
    sweep::section(&mut o, r);
    for (i, w) in r.workloads.iter().enumerate() {
        workload(&mut o, r, i, w);
    }
    hosts_section(&mut o, r);
    notes(&mut o, r);
    footer(&mut o, r);
    o.push_str("</main></body></html>\n");
    o
}

fn header(o: &mut String, r: &Report) {
    let _ = writeln!(o, "<header><h1>{}</h1>", esc(&r.title));
    let n = r.runs.len();
    let first = r.runs.iter().map(|s| s.started_unix_ms).min().unwrap_or(0);
    let last = r
        .runs
        .iter()
        .map(|s| s.ended_unix_ms.unwrap_or(s.started_unix_ms))
        .max()
        .unwrap_or(0);
    let mut hosts: Vec<&str> = Vec::new();
    for s in &r.runs {
        if let Some(h) = s.facts.iter().find(|f| f.key == "host") {
            if !hosts.contains(&h.value.as_str()) {
                hosts.push(&h.value);
            }
        }
    }
    let _ = writeln!(
        o,
        "<p class=\"meta\">{n} run{} × {} workload{}, baseline <b>{}</b>; run {} to {} on {}; report made {}.</p>",
        if n == 1 { "" } else { "s" },
        r.workloads.len(),
        if r.workloads.len() == 1 { "" } else { "s" },
        esc(&r.comparison.runs[r.baseline()].header),
        esc(&format_time(first)),
        esc(&format_time(last)),
        esc(&hosts.join(", ")),
        esc(&format_time(r.generated_unix_ms))
    );
    o.push_str("<nav>");
    if r.decision.is_some() {
        o.push_str("<a href=\"#decision\">Decision</a>");
    }
    o.push_str("<a href=\"#summary\">Summary</a><a href=\"#setup\">Setup</a>");
    if r.lab.is_some() {
        o.push_str("<a href=\"#lab\">Lab</a>");
    }
    for (i, w) in r.workloads.iter().enumerate() {
        let _ = write!(o, "<a href=\"#w{}\">{}</a>", i + 1, esc(&w.name));
    }
    if !r.hosts.is_empty() {
        o.push_str("<a href=\"#hosts\">Hosts</a>");
    }
    o.push_str("<a href=\"#notes\">Notes</a></nav></header>\n");
}

fn summary(o: &mut String, r: &Report) {
    o.push_str("<section id=\"summary\"><h2>Summary</h2>\n");
    let _ = writeln!(
        o,
        "<p>Headline figure of each workload: median ± half-width of the 95% confidence interval over trials; below it, the ratio to <b>{}</b> with its own interval (<code>~</code>: not significant).</p>",
        esc(&r.comparison.runs[r.baseline()].header)
    );
    // A column per workload, split so each table fits a laptop window (tables.rs).
    let heads = r
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let label = w
                .headline
                .map_or_else(|| "-".to_string(), |h| row_label(r.row(h)));
            format!(
                "<th><a href=\"#w{}\">{}</a><span class=\"r\">{}</span></th>",
                i + 1,
                esc(&w.name),
                esc(&label)
            )
        })
        .collect();
    let rows = (0..r.runs.len())
        .map(|i| {
            let cells = r
                .workloads
                .iter()
                .map(|w| format!("<td>{}</td>", headline_html(r, w, i)))
                .collect();
            (format!("<td>{}</td>", run_cell(r, i)), cells)
        })
        .collect();
    Split {
        class: "sum",
        lead: "<th>run</th>".into(),
        heads,
        rows,
    }
    .write(o);
    o.push_str("</section>\n");
}

fn setup(o: &mut String, r: &Report) {
    o.push_str("<section id=\"setup\"><h2>Setup</h2>\n");
    if !r.common.is_empty() {
        o.push_str("<p>Common to every run:</p><dl class=\"facts\">");
        for f in &r.common {
            let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(f.key), esc(&f.value));
        }
        o.push_str("</dl>\n");
    }
    // Id, times and status, then a column per fact that differs between the runs.
    let mut heads: Vec<String> = ["id", "started", "took", "status"]
        .iter()
        .map(|k| format!("<th class=\"l\">{k}</th>"))
        .collect();
    heads.extend(
        r.varying
            .iter()
            .map(|k| format!("<th class=\"l\">{}</th>", esc(k))),
    );
    let rows = r
        .runs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let took = s.ended_unix_ms.map_or("-".to_string(), |e| {
                format_duration(std::time::Duration::from_millis(
                    e.saturating_sub(s.started_unix_ms),
                ))
            });
            let mut cells = vec![
                format!("<td class=\"l\"><code>{}</code></td>", esc(&s.id)),
                format!(
                    "<td class=\"l\">{}</td>",
                    esc(&format_time(s.started_unix_ms))
                ),
                format!("<td class=\"l\">{}</td>", esc(&took)),
                format!("<td class=\"l\">{}</td>", esc(status_name(s.status))),
            ];
            for k in &r.varying {
                let v = s
                    .facts
                    .iter()
                    .find(|f| f.key == *k)
                    .map_or("-", |f| f.value.as_str());
                cells.push(format!("<td class=\"l\">{}</td>", esc(v)));
            }
            (format!("<td>{}</td>", run_cell(r, i)), cells)
        })
        .collect();
    Split {
        class: "",
        lead: "<th>run</th>".into(),
        heads,
        rows,
    }
    .write(o);
    for (i, s) in r.runs.iter().enumerate() {
        let extra = s.note.is_some() || s.error.is_some() || !s.devices.is_empty();
        if !extra {
            continue;
        }
        let _ = write!(
            o,
            "<details><summary>{} {}: command, devices</summary>",
            swatch(i),
            esc(&s.header)
        );
        let _ = write!(o, "<p><code>{}</code></p>", esc(&s.command));
        if let Some(n) = &s.note {
            let _ = write!(o, "<p>Note: {}</p>", esc(n));
        }
        if let Some(e) = &s.error {
            let _ = write!(o, "<p>Error: {}</p>", esc(e));
        }
        if !s.devices.is_empty() {
            o.push_str("<div class=\"tw\"><table><thead><tr><th>device</th><th class=\"l\">model</th><th class=\"l\">firmware</th><th class=\"l\">serial</th><th>size</th><th class=\"l\">type</th><th class=\"l\">transport</th><th class=\"l\">RAID</th></tr></thead><tbody>");
            for d in &s.devices {
                let _ = write!(
                    o,
                    "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                    esc(&d.name),
                    esc(&d.model),
                    esc(&d.firmware),
                    esc(&d.serial),
                    esc(&d.size),
                    esc(&d.kind),
                    esc(&d.transport),
                    esc(&d.raid)
                );
            }
            o.push_str("</tbody></table></div>");
        }
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

fn lab(o: &mut String, r: &Report) {
    let Some(lab) = &r.lab else { return };
    o.push_str("<section id=\"lab\"><h2>Lab</h2>\n");
    if !lab.lab_ids.is_empty() {
        let _ = writeln!(
            o,
            "<p>Lab {}: capacity, speed and resilience per layout. Speed is the geometric mean over workloads of the headline ratio to <b>{}</b>.</p>",
            esc(&lab.lab_ids.join(", ")),
            esc(&r.comparison.runs[r.baseline()].header)
        );
    }
    if let Some(f) = figures::capacity(r, Embed::Inline) {
        let _ = writeln!(
            o,
            "<figure><figcaption>{}</figcaption>{}</figure>",
            esc(&f.caption),
            f.svg
        );
    }
    // The layout's facts, then its headline per workload (split to fit, tables.rs).
    let mut heads: Vec<String> = [
        "<th class=\"l\">stack</th>",
        "<th>usable</th>",
        "<th>speed</th>",
        "<th>rebuild</th>",
        "<th class=\"l\">integrity</th>",
    ]
    .map(String::from)
    .to_vec();
    heads.extend(workload_heads(r));
    let rebuild = |v: Option<f64>| {
        v.map_or("-".into(), |v| {
            esc(&format_duration(std::time::Duration::from_secs_f64(
                v.max(0.0),
            )))
        })
    };
    let rows = lab
        .layouts
        .iter()
        .map(|l| {
            let s = &r.runs[l.run];
            let mut cells = vec![
                format!(
                    "<td class=\"l\">{}</td>",
                    esc(s.layout.as_ref().map_or("-", |x| x.description.as_str()))
                ),
                format!(
                    "<td>{}</td>",
                    l.usable_bytes.map_or("-".into(), format_bytes_si)
                ),
                format!(
                    "<td>{}</td>",
                    l.speed.map_or("-".into(), |v| format!("{v:.2}x"))
                ),
                format!("<td>{}</td>", rebuild(l.rebuild_seconds)),
                format!(
                    "<td class=\"l\">{}</td>",
                    integrity_html(l.integrity.as_deref())
                ),
            ];
            for w in &r.workloads {
                cells.push(format!("<td>{}</td>", headline_html(r, w, l.run)));
            }
            (format!("<td>{}</td>", run_cell(r, l.run)), cells)
        })
        .collect();
    Split {
        class: "",
        lead: "<th>layout</th>".into(),
        heads,
        rows,
    }
    .write(o);
    degraded_table(o, r, lab, &rebuild);
    faults::outcome_table(o, r, lab);
    o.push_str("</section>\n");
}

/// The lab's degraded (and rebuilding) runs against their healthy layouts: each workload's
/// headline ratio, `p99 latency` beside an open loop's (above 1 slower).
fn degraded_table(
    o: &mut String,
    r: &Report,
    lab: &model::LabView,
    rebuild: &dyn Fn(Option<f64>) -> String,
) {
    let degraded: Vec<_> = lab
        .layouts
        .iter()
        .filter(|l| l.degraded.is_some())
        .collect();
    if !degraded.is_empty() {
        if degraded.iter().any(|l| l.rebuilding) {
            o.push_str("<h3>Degraded and rebuilding vs healthy</h3><p>Headline figure of each workload with one member failed (runs named <code>-rebuilding</code>: while its replacement rebuilt), divided by the same layout healthy.</p>\n");
        } else {
            o.push_str("<h3>Degraded vs healthy</h3><p>Headline figure of each workload with one member failed, divided by the same layout healthy.</p>\n");
        }
        let mut heads = vec![
            "<th class=\"l\">healthy run</th>".to_string(),
            "<th>rebuild</th>".to_string(),
        ];
        heads.extend(workload_heads(r));
        let rows = degraded
            .iter()
            .filter_map(|l| {
                let d = l.degraded.as_ref()?;
                let mut cells = vec![
                    format!("<td class=\"l\">{}</td>", run_cell(r, d.healthy)),
                    format!("<td>{}</td>", rebuild(l.rebuild_seconds)),
                ];
                cells.extend(d.ratios.iter().zip(&r.workloads).map(|(ratio, w)| {
                    let lat = if r.headline_is_latency(w) {
                        " p99 latency"
                    } else {
                        ""
                    };
                    format!(
                        "<td>{}</td>",
                        ratio
                            .as_ref()
                            .map_or("-".into(), |x| esc(&format!("{}{lat}", format_ratio(x))))
                    )
                }));
                Some((format!("<td>{}</td>", run_cell(r, l.run)), cells))
            })
            .collect();
        Split {
            class: "",
            lead: "<th>degraded run</th>".into(),
            heads,
            rows,
        }
        .write(o);
    }
}

/// A heading per workload, for the lab's tables.
fn workload_heads(r: &Report) -> Vec<String> {
    r.workloads
        .iter()
        .map(|w| format!("<th>{}</th>", esc(&w.name)))
        .collect()
}

/// A verdict other than `verified` is what the reader must not miss: it is marked bad.
fn integrity_html(verdict: Option<&str>) -> String {
    match verdict {
        None => "-".into(),
        Some(v) if v == crate::sample::layout_record::VERIFIED_TEXT => esc(v),
        Some(v) => format!("<strong class=\"bad\">{}</strong>", esc(v)),
    }
}

fn workload(o: &mut String, r: &Report, index: usize, w: &model::WorkloadView) {
    let _ = writeln!(
        o,
        "<section id=\"w{}\"><h2>{}</h2><p><code>{}</code></p>",
        index + 1,
        esc(&w.name),
        esc(&w.describe)
    );
    for f in figures::workload_figures(r, w, Embed::Inline) {
        let _ = writeln!(
            o,
            "<figure><figcaption>{}</figcaption>{}</figure>",
            esc(&f.caption),
            f.svg
        );
        if f.kind == figures::FigureKind::Bars {
            metrics_table(o, r, w);
        }
    }
    if w.headline.is_none() {
        metrics_table(o, r, w);
    }
    if w.series.is_none() && !w.rows.is_empty() {
        o.push_str("<p class=\"meta\">No throughput-over-time chart: every trial lasted a second or less.</p>\n");
    }
    o.push_str("</section>\n");
}

/// Per-host charts of every `iolab run --hosts` group among the runs.
fn hosts_section(o: &mut String, r: &Report) {
    if r.hosts.is_empty() {
        return;
    }
    o.push_str("<section id=\"hosts\"><h2>Hosts</h2>\n<p>Runs of <code>iolab run --hosts</code>: one line per host (its own window, first trial) and the aggregate (the hosts' streamed seconds merged; its percentiles come from merged histograms, never averaged).</p>\n");
    for g in &r.hosts {
        for w in &g.workloads {
            for f in hosts::figures(g, w, Embed::Inline) {
                let _ = writeln!(
                    o,
                    "<figure class=\"hosts\" data-group=\"{}\"><figcaption>{}</figcaption>{}</figure>",
                    esc(&g.group),
                    esc(&f.caption),
                    f.svg
                );
            }
        }
    }
    o.push_str("</section>\n");
}

/// Every metric of a workload: one row per run, one column per metric (split to fit).
fn metrics_table(o: &mut String, r: &Report, w: &model::WorkloadView) {
    if w.rows.is_empty() {
        o.push_str("<p>No trial of this workload finished.</p>\n");
        return;
    }
    let heads = w
        .rows
        .iter()
        .map(|&ri| format!("<th>{}</th>", esc(&row_label(r.row(ri)))))
        .collect();
    let rows = (0..r.runs.len())
        .map(|i| {
            let cells = w
                .rows
                .iter()
                .map(|&ri| {
                    let c = r.row(ri).cells[i].as_ref();
                    let mut s = cell_html(c);
                    if short_share(r.row(ri), c) {
                        s.push_str(" <strong class=\"bad\">not sustained</strong>");
                    }
                    format!("<td>{s}</td>")
                })
                .collect();
            (format!("<td>{}</td>", run_cell(r, i)), cells)
        })
        .collect();
    Split {
        class: "",
        lead: "<th>run</th>".into(),
        heads,
        rows,
    }
    .write(o);
}

fn notes(o: &mut String, r: &Report) {
    o.push_str("<section id=\"notes\"><h2>Notes</h2>\n");
    if r.notes.is_empty() {
        o.push_str(
            "<p>Nothing to report: every trial finished cleanly and agreed with the others.</p>\n",
        );
    } else {
        o.push_str("<ul class=\"notes\">\n");
        for n in &r.notes {
            let _ = writeln!(
                o,
                "<li{}>{}</li>",
                if n.severity == Severity::Warning {
                    " class=\"warn\""
                } else {
                    ""
                },
                esc(&n.text)
            );
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}

/// What the latency figures mean, as sentences: submit-to-complete (or fio's clat) where a
/// closed loop's rows are, latency from the schedule where an open loop's are (its sentence
/// passed through `first`, which makes it start a sentence).
pub(crate) fn latency_sentences(
    c: &crate::report::compare::Comparison,
    first: &dyn Fn(&str) -> String,
) -> String {
    let mut out = Vec::new();
    if crate::report::compare::submit_latency_rows(c) {
        out.push(crate::report::labels::latency_sentence(&c.latency_kinds));
    }
    if let Some(s) = crate::report::compare::open_loop_sentence(c) {
        out.push(format!("{}.", first(&s)));
    }
    out.join(" ")
}

/// `s` with its first letter in upper case, for a sentence.
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn footer(o: &mut String, r: &Report) {
    let c = &r.comparison;
    let _ = writeln!(
        o,
        "<footer><p>Figures: median over trials ± half-width of the {:.0}% confidence interval ({}); error bars show that interval. Ratios: median / baseline median with a {:.0}% interval by the delta method ({}); <code>~</code> marks a ratio whose interval includes 1, <code>!</code> a figure whose trials disagree by more than 5%. {} Latency curves merge every trial's histogram. Made by iolab {}.</p></footer>",
        c.confidence * 100.0,
        esc(c.ci_method.name()),
        c.confidence * 100.0,
        esc(c.ratio_method.name()),
        esc(&latency_sentences(c, &upper_first)),
        esc(&r.iolab_version)
    );
}
