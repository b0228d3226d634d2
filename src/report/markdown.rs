//! `iolab report --format md`: the report as Markdown for a blog post or a wiki page, with the
//! same tables and notes as the HTML page and its charts as SVG files in a directory next to
//! the Markdown file (wikis and static site generators serve those as images).

use std::fmt::Write as _;

use crate::report::chart::Embed;
use crate::report::compare::{Cell, format_estimate, format_ratio, row_label};
use crate::report::html::figures::{self, Figure};
use crate::report::html::model::{Report, Severity};
use crate::report::show::{format_time, status_name};
use crate::units::{format_bytes_si, format_duration};

/// A rendered Markdown report: the text and the chart files it links to.
#[derive(Clone, Debug)]
pub struct Markdown {
    /// The Markdown document.
    pub text: String,
    /// Chart files: name inside the chart directory, and the SVG document.
    pub files: Vec<(String, String)>,
}

/// Escapes text for Markdown prose: characters that would start emphasis, links, HTML or a
/// table cell are backslash-escaped, line breaks become spaces.
pub fn md_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                o.push('\\');
                o.push(c);
            }
            '&' => o.push_str("&amp;"),
            '\n' | '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Text inside backticks: a backtick in it widens the fence instead of being escaped.
fn md_code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

/// A relative link target: safe characters kept, the rest percent-encoded.
fn md_url(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_./~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// A file-name part from a workload name: lower-case letters, digits and dashes.
pub fn slug(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            o.push(c.to_ascii_lowercase());
        } else if !o.ends_with('-') {
            o.push('-');
        }
    }
    let o = o.trim_matches('-').to_string();
    if o.is_empty() { "w".into() } else { o }
}

fn table(o: &mut String, head: &[String], rows: &[Vec<String>], left: usize) {
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let align: Vec<&str> = (0..head.len())
        .map(|i| if i < left { ":--" } else { "--:" })
        .collect();
    let _ = writeln!(o, "|{}|", align.join("|"));
    for r in rows {
        let _ = writeln!(o, "| {} |", r.join(" | "));
    }
    o.push('\n');
}

fn cell_md(c: Option<&Cell>) -> String {
    let Some(c) = c else { return "-".into() };
    let mut s = md_text(&format_estimate(&c.summary));
    if c.high_cv {
        s.push_str(" !");
    }
    if let Some(r) = &c.ratio {
        let _ = write!(s, " ({})", md_text(&format_ratio(r)));
    }
    s
}

/// A workload's headline cell in run column `run`, with **sustained 0.83** when an open loop
/// fell short of its asked rate there.
fn headline_md(r: &Report, w: &crate::report::html::model::WorkloadView, run: usize) -> String {
    let mut s = cell_md(w.headline.and_then(|h| r.row(h).cells[run].as_ref()));
    if let Some(v) = r.short_of_rate(w, run) {
        let _ = write!(s, " **sustained {v:.2}**");
    }
    s
}

fn run_name(r: &Report, i: usize) -> String {
    let run = &r.comparison.runs[i];
    if run.baseline {
        format!("**{}** (baseline)", md_text(&run.header))
    } else {
        md_text(&run.header)
    }
}

struct Out<'a> {
    text: String,
    files: Vec<(String, String)>,
    dir: &'a str,
}

impl Out<'_> {
    fn figure(&mut self, prefix: &str, f: Figure) {
        let mut name = format!("{prefix}-{}", f.kind.slug());
        if !f.part.is_empty() {
            name.push('-');
            name.push_str(&slug(&f.part));
        }
        name.push_str(".svg");
        let _ = writeln!(
            self.text,
            "![{}]({}/{})\n",
            md_text(&f.caption),
            md_url(self.dir),
            md_url(&name)
        );
        self.files.push((name, f.svg));
    }
}

/// Renders the report; charts are linked as `chart_dir/NAME.svg` (the caller writes
/// [`Markdown::files`] there).
pub fn render(r: &Report, chart_dir: &str) -> Markdown {
    let mut o = Out {
        text: String::with_capacity(32 * 1024),
        files: Vec::new(),
        dir: chart_dir,
    };
    let t = &mut o.text;
    let _ = writeln!(t, "# {}\n", md_text(&r.title));
    let first = r.runs.iter().map(|s| s.started_unix_ms).min().unwrap_or(0);
    let _ = writeln!(
        t,
        "{} runs × {} workloads, baseline **{}**, first run started {}; report made {} by iolab {}.\n",
        r.runs.len(),
        r.workloads.len(),
        md_text(&r.comparison.runs[r.baseline()].header),
        format_time(first),
        format_time(r.generated_unix_ms),
        md_text(&r.iolab_version)
    );

    if let Some(d) = &r.decision {
        let _ = writeln!(
            t,
            "## Decision\n\n{}",
            crate::report::text::decide::render_markdown(d)
        );
    }
    summary(t, r);
    setup(t, r);
    lab(&mut o, r);
    workloads(&mut o, r);
    hosts(&mut o, r);
    notes(&mut o.text, r);
    Markdown {
        text: o.text,
        files: o.files,
    }
}

/// The headline figure of each workload for every run.
fn summary(t: &mut String, r: &Report) {
    let _ = writeln!(
        t,
        "## Summary\n\nHeadline figure of each workload: median ± half-width of the 95% confidence interval, and in parentheses the ratio to the baseline with its interval (`~`: not significant).\n"
    );
    let mut head = vec!["run".to_string()];
    for w in &r.workloads {
        let h = w.headline.map_or(String::new(), |h| {
            format!(" ({})", md_text(&row_label(r.row(h))))
        });
        head.push(format!("{}{h}", md_text(&w.name)));
    }
    let rows: Vec<Vec<String>> = (0..r.runs.len())
        .map(|i| {
            std::iter::once(run_name(r, i))
                .chain(r.workloads.iter().map(|w| headline_md(r, w, i)))
                .collect()
        })
        .collect();
    table(t, &head, &rows, 1);
}

/// What is common to every run, and a row per run with what differs.
fn setup(t: &mut String, r: &Report) {
    t.push_str("## Setup\n\n");
    for f in &r.common {
        let _ = writeln!(t, "- {}: {}", md_text(f.key), md_text(&f.value));
    }
    if !r.common.is_empty() {
        t.push('\n');
    }
    let mut head: Vec<String> = ["run", "id", "started", "took", "status"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    head.extend(r.varying.iter().map(|k| md_text(k)));
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut row = vec![
                run_name(r, i),
                md_code(&s.id),
                format_time(s.started_unix_ms),
                s.ended_unix_ms.map_or("-".into(), |e| {
                    format_duration(std::time::Duration::from_millis(
                        e.saturating_sub(s.started_unix_ms),
                    ))
                }),
                status_name(s.status).to_string(),
            ];
            for k in &r.varying {
                row.push(md_text(
                    s.facts
                        .iter()
                        .find(|f| f.key == *k)
                        .map_or("-", |f| f.value.as_str()),
                ));
            }
            row
        })
        .collect();
    table(t, &head, &rows, head.len());
}

/// A section per workload: its charts (linked files) and its table of every metric.
fn workloads(o: &mut Out<'_>, r: &Report) {
    for (i, w) in r.workloads.iter().enumerate() {
        let _ = writeln!(
            o.text,
            "## {}\n\n{}\n",
            md_text(&w.name),
            md_code(&w.describe)
        );
        let prefix = format!("{:02}-{}", i + 1, slug(&w.name));
        let figs = figures::workload_figures(r, w, Embed::Standalone);
        let mut table_done = false;
        for f in figs {
            let is_bars = f.kind == figures::FigureKind::Bars;
            o.figure(&prefix, f);
            if is_bars {
                metrics_table(&mut o.text, r, w);
                table_done = true;
            }
        }
        if !table_done {
            metrics_table(&mut o.text, r, w);
        }
        if w.series.is_none() && !w.rows.is_empty() {
            o.text.push_str(
                "No throughput-over-time chart: every trial lasted a second or less.\n\n",
            );
        }
    }
}

/// The per-host charts of every `iolab run --hosts` group among the runs.
fn hosts(o: &mut Out<'_>, r: &Report) {
    if r.hosts.is_empty() {
        return;
    }
    o.text.push_str("## Hosts\n\nRuns of `iolab run --hosts`: throughput per second of each host (first trial) and of the aggregate; each host's p99, the straggler flagged.\n\n");
    for g in &r.hosts {
        for (i, w) in g.workloads.iter().enumerate() {
            let prefix = format!("{:02}-hosts-{}", i + 1, slug(&w.name));
            for f in crate::report::html::hosts::figures(g, w, Embed::Standalone) {
                o.figure(&prefix, f);
            }
        }
    }
}

/// The notes and the legend of the figures.
fn notes(t: &mut String, r: &Report) {
    t.push_str("## Notes\n\n");
    if r.notes.is_empty() {
        t.push_str(
            "Nothing to report: every trial finished cleanly and agreed with the others.\n\n",
        );
    }
    for n in &r.notes {
        let mark = if n.severity == Severity::Warning {
            "**warning:** "
        } else {
            ""
        };
        let _ = writeln!(t, "- {mark}{}", md_text(&n.text));
    }
    let c = &r.comparison;
    let _ = writeln!(
        t,
        "\nFigures: median ± half-width of the {:.0}% confidence interval ({}); ratios: median / baseline median with a delta-method interval ({}); `~` not significant, `!` trials disagree by more than 5%. {}",
        c.confidence * 100.0,
        c.ci_method.name(),
        c.ratio_method.name(),
        md_text(&crate::report::html::latency_sentences(c, &|s| {
            format!("Open {}", s.trim_start_matches("open "))
        }))
    );
}

fn metrics_table(t: &mut String, r: &Report, w: &crate::report::html::model::WorkloadView) {
    if w.rows.is_empty() {
        t.push_str("No trial of this workload finished.\n\n");
        return;
    }
    let mut head = vec!["run".to_string()];
    head.extend(w.rows.iter().map(|&ri| {
        let row = r.row(ri);
        md_text(&row_label(row))
    }));
    let rows: Vec<Vec<String>> = (0..r.runs.len())
        .map(|i| {
            std::iter::once(run_name(r, i))
                .chain(w.rows.iter().map(|&ri| {
                    let row = r.row(ri);
                    let c = row.cells[i].as_ref();
                    let short = crate::sample::headline::is_sustained_key(&row.metric)
                        && c.is_some_and(|c| {
                            crate::sample::headline::short_of_rate(c.summary.median)
                        });
                    let mut s = cell_md(c);
                    if short {
                        s.push_str(" **NOT SUSTAINED**");
                    }
                    s
                }))
                .collect()
        })
        .collect();
    table(t, &head, &rows, 1);
}

fn lab(o: &mut Out<'_>, r: &Report) {
    let Some(lab) = &r.lab else { return };
    o.text.push_str("## Lab\n\n");
    if !lab.lab_ids.is_empty() {
        let _ = writeln!(
            o.text,
            "Lab {}. Speed: geometric mean over workloads of the headline ratio to the baseline.\n",
            md_text(&lab.lab_ids.join(", "))
        );
    }
    if let Some(f) = figures::capacity(r, Embed::Standalone) {
        o.figure("00-lab", f);
    }
    let secs = |v: f64| format_duration(std::time::Duration::from_secs_f64(v.max(0.0)));
    let mut head: Vec<String> = ["layout", "stack", "usable", "speed", "rebuild", "integrity"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    head.extend(r.workloads.iter().map(|w| md_text(&w.name)));
    let rows: Vec<Vec<String>> = lab
        .layouts
        .iter()
        .map(|l| {
            let mut row = vec![
                run_name(r, l.run),
                md_text(
                    r.runs[l.run]
                        .layout
                        .as_ref()
                        .map_or("-", |x| x.description.as_str()),
                ),
                l.usable_bytes.map_or("-".into(), format_bytes_si),
                l.speed.map_or("-".into(), |v| format!("{v:.2}x")),
                l.rebuild_seconds.map_or("-".into(), secs),
                md_text(l.integrity.as_deref().unwrap_or("-")),
            ];
            row.extend(r.workloads.iter().map(|w| headline_md(r, w, l.run)));
            row
        })
        .collect();
    table(&mut o.text, &head, &rows, 2);
    let degraded: Vec<_> = lab
        .layouts
        .iter()
        .filter(|l| l.degraded.is_some())
        .collect();
    if !degraded.is_empty() {
        o.text.push_str("### Degraded vs healthy\n\n");
        let mut head: Vec<String> = ["degraded run", "healthy run", "rebuild"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        head.extend(r.workloads.iter().map(|w| md_text(&w.name)));
        let rows: Vec<Vec<String>> = degraded
            .iter()
            .filter_map(|l| {
                let d = l.degraded.as_ref()?;
                let mut row = vec![
                    run_name(r, l.run),
                    run_name(r, d.healthy),
                    l.rebuild_seconds.map_or("-".into(), secs),
                ];
                row.extend(d.ratios.iter().zip(&r.workloads).map(|(x, w)| {
                    x.as_ref().map_or("-".into(), |x| {
                        let lat = if r.headline_is_latency(w) {
                            " p99 latency"
                        } else {
                            ""
                        };
                        md_text(&format!("{}{lat}", format_ratio(x)))
                    })
                }));
                Some(row)
            })
            .collect();
        table(&mut o.text, &head, &rows, 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_specials_are_escaped() {
        assert_eq!(md_text("a|b *c* <d>"), "a\\|b \\*c\\* \\<d\\>");
        assert_eq!(md_code("x`y"), "`` x`y ``");
        assert_eq!(
            md_url("my report-charts/01 a.svg"),
            "my%20report-charts/01%20a.svg"
        );
        assert_eq!(slug("Seq Write (1M)"), "seq-write-1m");
        assert_eq!(slug("***"), "w");
    }
}
