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

/// A steady-state workload's figure per round, one line per run, each run's measurement
/// window marked at its first and last round; the caption gives each run's verdict by SNIA
/// PTS's rules (range and slope excursion against 20% and 10% of the mean).
pub fn steady(r: &Report, w: &WorkloadView, embed: Embed) -> Option<Figure> {
    let judged: Vec<(usize, &crate::stats::steady::Steadiness)> = w
        .steady
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.as_ref()?)))
        .collect();
    let (_, first) = judged.first()?;
    let header = |i: usize| r.comparison.runs[i].header.clone();
    let lines = judged
        .iter()
        .map(|&(i, s)| Line {
            name: header(i),
            colour: i,
            thin: false,
            points: (1..)
                .zip(&s.rounds)
                .map(|(n, v)| (f64::from(n), *v))
                .collect(),
        })
        .collect();
    let mut markers = Vec::new();
    for &(i, s) in &judged {
        let Some(win) = &s.window else { continue };
        let what = if s.steady_at.is_some() {
            "steady window"
        } else {
            "last window (NOT steady)"
        };
        for (n, edge) in [(win.first_round, "starts"), (win.last_round, "ends")] {
            markers.push(Marker {
                x: f64::from(n),
                colour: i,
                tooltip: format!("{}: {what} {edge} at round {n}", header(i)),
            });
        }
    }
    let verdicts: Vec<String> = judged
        .iter()
        .map(|&(i, s)| format!("{}: {}", header(i), s.describe()))
        .collect();
    let unit = match first.figure {
        crate::spec::SteadyFigure::Iops => "IOPS",
        crate::spec::SteadyFigure::Bw => "bytes/s",
        crate::spec::SteadyFigure::Lat => "mean latency (ns)",
    };
    let caption = format!(
        "{}: {unit} per round, measurement window marked (SNIA PTS: range <= 20%, slope excursion <= 10% of the mean). {}",
        w.name,
        verdicts.join("; ")
    );
    let axis = |label: &str| AxisSpec {
        scale: Scale::Linear,
        label: label.into(),
        format: compact,
    };
    let c = LineChart {
        title: caption.clone(),
        x: axis("round"),
        y: axis(unit),
        lines,
        markers,
        legend: legend(r, |i| w.steady.get(i).is_some_and(Option::is_some)),
    };
    Some(Figure {
        kind: FigureKind::Steady,
        part: String::new(),
        caption,
        svg: chart::line::render(&c, embed),
    })
}

/// All charts of a workload, in page order.
pub fn workload_figures(r: &Report, w: &WorkloadView, embed: Embed) -> Vec<Figure> {
    let mut v: Vec<Figure> = bars(r, w, embed).into_iter().collect();
    v.extend(steady(r, w, embed));
    v.extend(slo(r, w, embed));
    v.extend(w.latency.iter().map(|l| latency(r, w, l, embed)));
    v.extend(series(r, w, embed));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{OpSample, RunRecord, RunStatus, TrialSample, WorkloadRecord};
    use crate::spec::{IoWorkload, Pattern, SteadyFigure, SteadyState, Workload, WorkloadKind};

    /// A run of `rr` in steady-state rounds of 1 s at `iops` each.
    fn run(label: &str, iops: &[u64]) -> RunRecord {
        let round = |n: u32, v: u64| {
            let mut o = OpSample::new("write");
            o.count = v;
            o.bytes = v * 4096;
            o.elapsed_ns = 1_000_000_000;
            TrialSample {
                trial: n,
                elapsed_ns: 1_000_000_000,
                ops: vec![o],
                ..TrialSample::default()
            }
        };
        RunRecord {
            id: format!("id-{label}"),
            status: RunStatus::Complete,
            started_unix_ms: 0,
            ended_unix_ms: Some(1),
            command_line: vec![],
            label: Some(label.into()),
            note: None,
            lab_id: None,
            layout: None,
            suite_name: "s".into(),
            system: crate::system::SystemInfo::default(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: vec![WorkloadRecord {
                workload: Workload {
                    name: "rw".into(),
                    drop_caches: false,
                    kind: WorkloadKind::Io(IoWorkload {
                        pattern: Pattern::RandWrite,
                        steady: Some(SteadyState {
                            figure: SteadyFigure::Iops,
                            round: std::time::Duration::from_secs(1),
                            max_rounds: 25,
                        }),
                        ..IoWorkload::default()
                    }),
                },
                trials: (1..)
                    .zip(iops.iter().copied())
                    .map(|(n, v)| round(n, v))
                    .collect(),
            }],
            notes: Vec::new(),
            error: None,
        }
    }

    /// The HTML report draws a steady-state workload's figure per round for each run, marks
    /// each run's window at its first and last round (the steady one; the last, said NOT
    /// steady, for a run that never got there), and its caption gives each verdict with the
    /// window's range and slope excursion against PTS's limits.
    #[test]
    fn the_rounds_chart_marks_each_window_and_says_each_verdict() {
        let swing: Vec<u64> = (0..25)
            .map(|i| if i % 2 == 0 { 3000 } else { 2000 })
            .collect();
        let runs = [
            run("ssd", &[9000, 6000, 2000, 2010, 1990, 2000, 2000]),
            run("hdd", &swing),
        ];
        let opts = super::super::model::ReportOptions {
            baseline: None,
            title: None,
            generated_unix_ms: 0,
        };
        let r = super::super::build(&runs, &opts);
        let w = r.workloads.iter().find(|w| w.name == "rw").unwrap();
        let f = steady(&r, w, Embed::Inline).expect("a steady chart");
        assert_eq!(f.kind, FigureKind::Steady);
        assert!(
            f.caption.starts_with("rw: IOPS per round, measurement window marked (SNIA PTS: range <= 20%, slope excursion <= 10% of the mean). ssd: steady at round 7 (rounds 3-7: mean 2000 IOPS, range 1.0% <= 20%, "),
            "{}",
            f.caption
        );
        assert!(
            f.caption.contains("hdd: NOT steady after 25 rounds (last window rounds 21-25: mean 2600 IOPS, range 38.5% > 20%"),
            "{}",
            f.caption
        );
        for mark in [
            "ssd: steady window starts at round 3",
            "ssd: steady window ends at round 7",
            "hdd: last window (NOT steady) starts at round 21",
            "hdd: last window (NOT steady) ends at round 25",
        ] {
            assert!(f.svg.contains(mark), "{mark}: {}", f.svg);
        }
        let html = super::super::render(&r);
        assert!(html.contains("rw: IOPS per round, measurement window marked"));
        assert!(html.contains("ssd: steady window starts at round 3"));
        // A workload without rounds has no such chart.
        let mut plain = runs.clone();
        for p in &mut plain {
            if let WorkloadKind::Io(io) = &mut p.workloads[0].workload.kind {
                io.steady = None;
            }
        }
        let r = super::super::build(&plain, &opts);
        assert!(steady(&r, &r.workloads[0], Embed::Inline).is_none());
    }
}
