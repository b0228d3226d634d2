//! The sweeps' section of the HTML report: for each sweep (a layout with `vary`) and workload,
//! a chart of the headline figure against the varied values — one bar per combination in the
//! order the sweep lists them, the median with its 95% interval, the best outlined with its
//! value as the dashed line across, every other bar with its ratio to the best (`~`: not
//! significant) — then a sentence per varied key. The answer is `stats::sweep`'s, the same the
//! lab printed.

use std::fmt::Write as _;

use crate::report::chart::bar::{Bar, BarChart};
use crate::report::chart::{self, Embed, esc};
use crate::report::compare::format_estimate;
use crate::stats::sweep::{self, Sweep, SweepTable};

use super::figures::short_ratio;
use super::model::Report;

/// The sweeps among the report's runs, judged on each workload's headline.
pub fn answers(r: &Report) -> Vec<Sweep> {
    let rows: Vec<usize> = r.workloads.iter().filter_map(|w| w.headline).collect();
    sweep::answer(&r.comparison, &rows)
}

/// One workload's chart of a sweep, as an `<svg>`.
pub fn chart(s: &Sweep, t: &SweepTable, embed: Embed) -> String {
    let bars = s
        .combinations
        .iter()
        .zip(&t.entries)
        .enumerate()
        .map(|(i, (c, e))| {
            let label = c.values.join(" ");
            let Some(sum) = &e.summary else {
                return Bar {
                    label,
                    colour: i,
                    ..Bar::default()
                };
            };
            let best = t.best == Some(i);
            Bar {
                label,
                value: Some(sum.median),
                interval: sum.ci.map(|ci| (ci.lo, ci.hi)),
                value_text: format_estimate(sum),
                ratio_text: if best {
                    None
                } else {
                    Some(e.vs_best.as_ref().map_or_else(|| "~".into(), short_ratio))
                },
                baseline: best,
                colour: i,
                tooltip: format!(
                    "{}: {} {}{}",
                    c.name,
                    format_estimate(sum),
                    t.unit.label(),
                    if best {
                        " (best)"
                    } else if e.tie {
                        " (~ best)"
                    } else {
                        ""
                    }
                ),
                data: vec![
                    ("combination", c.name.clone()),
                    ("workload", t.workload.clone()),
                    ("median", format!("{}", sum.median)),
                    ("best", best.to_string()),
                ],
            }
        })
        .collect();
    chart::bar::render(
        &BarChart {
            title: format!("{} {}: {}", s.layout, s.keys.join(" x "), t.workload),
            unit: t.unit.label().to_string(),
            bars,
        },
        embed,
    )
}

/// The section, or nothing when no sweep is among the runs.
pub fn section(o: &mut String, r: &Report) {
    let sweeps = answers(r);
    if sweeps.is_empty() {
        return;
    }
    o.push_str("<section id=\"sweeps\"><h2>Sweeps</h2>\n");
    o.push_str("<p>Each varied value against the headline figure: median ± 95% interval; the best outlined, the others' ratio to it (<code>~</code>: not significant, and then the first-listed value is named best).</p>\n");
    for s in &sweeps {
        let _ = writeln!(
            o,
            "<h3>{} ({})</h3>",
            esc(&s.layout),
            esc(&s.keys.join(" × "))
        );
        for t in &s.tables {
            let _ = writeln!(
                o,
                "<figure><figcaption>{}: {} against {}</figcaption>{}</figure>",
                esc(&t.workload),
                esc(t.unit.label()),
                esc(&s.keys.join(" × ")),
                chart(s, t, Embed::Inline)
            );
        }
        o.push_str("<ul>");
        for line in &s.sentences {
            let _ = write!(o, "<li>{}</li>", esc(line));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}
