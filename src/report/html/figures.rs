//! The report's charts, made from its model: shared by the HTML page (inline SVG) and the
//! Markdown renderer (SVG files), so both show the same pictures.

use crate::report::chart::axis::Scale;
use crate::report::chart::bar::{Bar, BarChart};
use crate::report::chart::line::{AxisSpec, Line, LineChart, Marker};
use crate::report::chart::scatter::{Point, ScatterChart};
use crate::report::chart::{self, Embed, bytes_label, compact, latency_label};
use crate::report::compare::{format_estimate, format_ratio};
use crate::stats::Ratio;
use crate::units::format_bytes_si;

use super::model::{LatencyView, Report, WorkloadView};

pub use crate::report::chart::figure::{Figure, FigureKind, per_second_axes};

/// The ratio as printed on a bar: `1.23x`, with `~` when not significant.
pub fn short_ratio(r: &Ratio) -> String {
    let d = if r.value < 0.1 { 3 } else { 2 };
    format!(
        "{:.d$}x{}",
        r.value,
        if r.significant == Some(false) {
            " ~"
        } else {
            ""
        }
    )
}

/// The headline bar chart of a workload.
pub fn bars(r: &Report, w: &WorkloadView, embed: Embed) -> Option<Figure> {
    let h = w.headline?;
    let row = r.row(h);
    let unit = row.unit.label();
    let bars = r
        .comparison
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let cell = row.cells[i].as_ref();
            let Some(cell) = cell else {
                return Bar {
                    label: run.header.clone(),
                    colour: i,
                    baseline: run.baseline,
                    ..Bar::default()
                };
            };
            let s = &cell.summary;
            let est = format_estimate(s);
            let mut tooltip = format!(
                "{}: {} {unit} (median ± 95% CI half-width, n={}, cv {:.1}%)",
                run.header,
                est,
                s.n,
                s.cv * 100.0
            );
            if let Some(ratio) = &cell.ratio {
                tooltip.push_str(&format!("; vs baseline {}", format_ratio(ratio)));
            }
            Bar {
                label: run.header.clone(),
                value: Some(s.median),
                interval: s.ci.map(|ci| (ci.lo, ci.hi)),
                value_text: {
                    let mut t = if cell.high_cv {
                        format!("{est} !")
                    } else {
                        est
                    };
                    if let Some(v) = r.short_of_rate(w, i) {
                        t.push_str(&format!(" sustained {v:.2}"));
                    }
                    t
                },
                ratio_text: cell.ratio.as_ref().map(short_ratio),
                baseline: run.baseline,
                colour: i,
                tooltip,
                data: vec![
                    ("run", run.id.clone()),
                    ("workload", w.name.clone()),
                    ("metric", row.metric.clone()),
                    ("median", format!("{}", s.median)),
                ],
            }
        })
        .collect();
    let caption = format!(
        "{}: {}, median with 95% interval{}",
        w.name,
        crate::report::compare::row_label(row),
        if row.higher_is_better {
            ""
        } else {
            " (lower is better)"
        }
    );
    let c = BarChart {
        title: caption.clone(),
        unit: unit.to_string(),
        bars,
    };
    Some(Figure {
        kind: FigureKind::Bars,
        part: String::new(),
        caption,
        svg: chart::bar::render(&c, embed),
    })
}

fn legend(r: &Report, present: impl Fn(usize) -> bool) -> Vec<(String, usize)> {
    r.comparison
        .runs
        .iter()
        .enumerate()
        .filter(|(i, _)| present(*i))
        .map(|(i, run)| (run.header.clone(), i))
        .collect()
}

/// A latency percentile chart of one op of a workload.
pub fn latency(r: &Report, w: &WorkloadView, v: &LatencyView, embed: Embed) -> Figure {
    let lines = v
        .curves
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            c.as_ref().map(|pts| Line {
                name: format!("{} {}", r.comparison.runs[i].header, v.op),
                colour: i,
                thin: false,
                points: pts.iter().map(|&(p, ns)| (p, ns as f64)).collect(),
            })
        })
        .collect();
    let caption = format!(
        "{}: {} latency by percentile, all trials merged",
        w.name, v.op
    );
    let c = LineChart {
        title: caption.clone(),
        x: AxisSpec {
            scale: Scale::Nines,
            label: "percentile".into(),
            format: compact,
        },
        y: AxisSpec {
            scale: Scale::Log,
            label: "latency (log)".into(),
            format: latency_label,
        },
        lines,
        markers: Vec::new(),
        legend: legend(r, |i| v.curves[i].is_some()),
    };
    Figure {
        kind: FigureKind::Latency,
        part: v.op.clone(),
        caption,
        svg: chart::line::render(&c, embed),
    }
}

/// The throughput-per-second chart of a workload, cliffs marked.
pub fn series(r: &Report, w: &WorkloadView, embed: Embed) -> Option<Figure> {
    let s = w.series.as_ref()?;
    let lines = s
        .trials
        .iter()
        .map(|t| Line {
            name: format!("{} trial {}", r.comparison.runs[t.run].header, t.trial),
            colour: t.run,
            thin: t.of > 1,
            points: t.points.clone(),
        })
        .collect();
    let markers = w
        .cliffs
        .iter()
        .filter_map(|&ci| {
            let c = &r.comparison.cliffs[ci];
            let run = r.comparison.runs.iter().position(|x| x.header == c.run)?;
            Some(Marker {
                x: f64::from(c.cliff.at_s),
                colour: run,
                tooltip: format!("{} trial {}: {}", c.run, c.trial, c.cliff.describe()),
            })
        })
        .collect();
    let caption = format!(
        "{}: throughput per second ({}) of every trial; cliffs marked",
        w.name, s.unit
    );
    let (x, y) = per_second_axes(s.unit);
    let c = LineChart {
        title: caption.clone(),
        x,
        y,
        lines,
        markers,
        legend: legend(r, |i| s.trials.iter().any(|t| t.run == i)),
    };
    Some(Figure {
        kind: FigureKind::Series,
        part: String::new(),
        caption,
        svg: chart::line::render(&c, embed),
    })
}

fn ratio_label(v: f64) -> String {
    format!("{}x", compact(v))
}

/// Capacity against overall speed of a lab's healthy layouts.
pub fn capacity(r: &Report, embed: Embed) -> Option<Figure> {
    let lab = r.lab.as_ref()?;
    let points: Vec<Point> = lab
        .layouts
        .iter()
        .filter(|l| l.degraded.is_none() && l.degraded_of_missing.is_none())
        .filter_map(|l| {
            let (u, s) = (l.usable_bytes?, l.speed?);
            let name = &r.comparison.runs[l.run].header;
            Some(Point {
                label: name.clone(),
                x: u as f64,
                y: s,
                colour: l.run,
                tooltip: format!(
                    "{name}: {} usable, {:.2}x the baseline's speed (geometric mean over workloads)",
                    format_bytes_si(u),
                    s
                ),
            })
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let caption = "Capacity vs speed: usable bytes against the geometric mean of headline ratios to the baseline".to_string();
    let c = ScatterChart {
        title: caption.clone(),
        x_label: "usable capacity".into(),
        y_label: "speed vs baseline".into(),
        x_format: bytes_label,
        y_format: ratio_label,
        reference_y: Some(1.0),
        points,
    };
    Some(Figure {
        kind: FigureKind::Capacity,
        part: String::new(),
        caption,
        svg: chart::scatter::render(&c, embed),
    })
}

/// The latency-vs-load curve of a workload's SLO search: the first target's statistic (from
/// the schedule) at each rate tried, per run; each run's capacity marked.
pub fn slo(r: &Report, w: &WorkloadView, embed: Embed) -> Option<Figure> {
    let first = w.slo.iter().flatten().next()?;
    let lines: Vec<Line> = w
        .slo
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let c = c.as_ref()?;
            Some(Line {
                name: format!("{} {}", r.comparison.runs[i].header, c.targets),
                colour: i,
                thin: false,
                points: c
                    .curve
                    .iter()
                    .filter_map(|p| Some((p.rate, p.values.first()?.median)))
                    .filter(|(_, v)| v.is_finite() && *v < f64::MAX)
                    .collect(),
            })
        })
        .collect();
    let markers = w
        .slo
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let c = c.as_ref()?;
            Some(Marker {
                x: c.capacity?,
                colour: i,
                tooltip: format!("{}: {}", r.comparison.runs[i].header, c.describe()),
            })
        })
        .collect();
    let caption = format!(
        "{}: latency (from schedule) against offered load, {}; capacity marked",
        w.name, first.targets
    );
    let c = LineChart {
        title: caption.clone(),
        x: AxisSpec {
            scale: Scale::Log,
            label: "offered IOPS (log)".into(),
            format: compact,
        },
        y: AxisSpec {
            scale: Scale::Log,
            label: "latency (log)".into(),
            format: latency_label,
        },
        lines,
        markers,
        legend: legend(r, |i| w.slo.get(i).is_some_and(Option::is_some)),
    };
    Some(Figure {
        kind: FigureKind::Slo,
        part: String::new(),
        caption,
        svg: chart::line::render(&c, embed),
    })
}

/// All charts of a workload, in page order.
pub fn workload_figures(r: &Report, w: &WorkloadView, embed: Embed) -> Vec<Figure> {
    let mut v: Vec<Figure> = bars(r, w, embed).into_iter().collect();
    v.extend(slo(r, w, embed));
    v.extend(w.latency.iter().map(|l| latency(r, w, l, embed)));
    v.extend(series(r, w, embed));
    v
}
