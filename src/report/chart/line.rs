//! Lines over a shared x axis: latency percentile curves (nines against a log latency axis)
//! and throughput per second of each trial (seconds against MB/s), with vertical markers for
//! the cliffs found in a series.

use std::fmt::Write as _;

use super::axis::{self, Mapped, Scale};
use super::{Embed, colour, esc, n, seg, text, title};

/// One line.
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// What it is (hover text).
    pub name: String,
    /// Palette index (`colour()` decides dashing past the palette).
    pub colour: usize,
    /// Drawn thinner and lighter: one trial among several of the same run.
    pub thin: bool,
    /// Points in data units, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A vertical mark at an x value (a cliff).
#[derive(Clone, Debug, Default)]
pub struct Marker {
    /// Where, in x data units.
    pub x: f64,
    /// Palette index of the run it belongs to.
    pub colour: usize,
    /// What happened there.
    pub tooltip: String,
}

/// One axis of a line chart.
#[derive(Clone, Debug)]
pub struct AxisSpec {
    /// How values are spread.
    pub scale: Scale,
    /// Axis title with the unit (`latency`, `MB/s`, `seconds`).
    pub label: String,
    /// Tick label of a value.
    pub format: fn(f64) -> String,
}

/// A line chart.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// What it shows.
    pub title: String,
    /// Horizontal axis.
    pub x: AxisSpec,
    /// Vertical axis.
    pub y: AxisSpec,
    /// The lines.
    pub lines: Vec<Line>,
    /// Vertical markers.
    pub markers: Vec<Marker>,
    /// Legend entries: name and palette index.
    pub legend: Vec<(String, usize)>,
}

const W: f64 = 640.0;
const PLOT_H: f64 = 220.0;

fn map_axis(spec: &AxisSpec, vals: &mut dyn Iterator<Item = f64>, p0: f64, p1: f64) -> Mapped {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        if spec.scale == Scale::Log && v <= 0.0 {
            continue;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        (lo, hi) = (1.0, 10.0);
    }
    match spec.scale {
        Scale::Linear => axis::linear(lo, hi, p0, p1, &spec.format),
        Scale::Log => axis::log(lo, hi, p0, p1, &spec.format),
        Scale::Nines => axis::nines_axis(hi, p0, p1),
    }
}

/// Draws the chart as an `<svg>` element.
pub fn render(c: &LineChart, embed: Embed) -> String {
    let points: usize = c.lines.iter().map(|l| l.points.len()).sum();
    let mut o = String::with_capacity(1024 + points * 12 + c.lines.len() * 120);
    let th = super::title_height(embed);
    let (x0, x1) = (54.0, W - 14.0);
    let y_top = th + 10.0;
    let y_bot = y_top + PLOT_H;
    let xa = map_axis(
        &c.x,
        &mut c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        x0,
        x1,
    );
    let ya = map_axis(
        &c.y,
        &mut c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        y_bot,
        y_top,
    );
    // The legend's height is known only after laying it out: draw it into its own buffer.
    let mut leg = String::new();
    let leg_h = super::legend(&mut leg, x0, y_bot + 40.0, x1 - x0, &c.legend);
    let h = y_bot + 40.0 + leg_h + 4.0;
    super::open(&mut o, W, h, &c.title, embed);
    title(&mut o, &c.title, embed);

    for (v, label) in &ya.ticks {
        let y = ya.px(*v);
        seg(&mut o, x0, y, x1, y, "gl");
        text(&mut o, x0 - 5.0, y + 4.0, "end", "ax", label);
    }
    for (v, label) in &xa.ticks {
        let x = xa.px(*v);
        seg(&mut o, x, y_top, x, y_bot, "gl");
        // A label at the right edge would be cut by the viewBox: end it there instead.
        let anchor = if x > x1 - 20.0 { "end" } else { "middle" };
        text(&mut o, x, y_bot + 14.0, anchor, "ax", label);
    }
    let _ = write!(
        o,
        "<text class=\"ax\" transform=\"translate(12 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        n(f64::midpoint(y_top, y_bot)),
        esc(&c.y.label)
    );
    text(&mut o, x1, y_bot + 28.0, "end", "ax", &c.x.label);

    for l in &c.lines {
        draw_line(&mut o, l, &xa, &ya, c.y.scale == Scale::Log);
    }
    for m in &c.markers {
        let (ci, _) = colour(m.colour);
        let x = xa.px(m.x);
        let _ = write!(
            o,
            "<path class=\"mk k{ci}\" d=\"M{} {}V{}\"><title>{}</title></path>",
            n(x),
            n(y_top),
            n(y_bot),
            esc(&m.tooltip)
        );
        let _ = write!(
            o,
            "<path class=\"f{ci}\" d=\"M{} {}l-4 -7h8z\"><title>{}</title></path>",
            n(x),
            n(y_top),
            esc(&m.tooltip)
        );
    }
    let _ = write!(
        o,
        "<rect class=\"fr\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        n(x0),
        n(y_top),
        n(x1 - x0),
        n(PLOT_H)
    );
    o.push_str(&leg);
    o.push_str("</svg>");
    o
}

/// Averages consecutive points into at most `max` points, so an hour-long trial draws as a
/// line of a few hundred points rather than 3600 (a cliff still shows: it lasts seconds, and
/// buckets are short).
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let per = points.len().div_ceil(max);
    points
        .chunks(per)
        .map(|c| {
            let k = c.len() as f64;
            (
                c.iter().map(|p| p.0).sum::<f64>() / k,
                c.iter().map(|p| p.1).sum::<f64>() / k,
            )
        })
        .collect()
}

/// Draws one line of the chart into `o`: a polyline through its points (those a log axis can
/// show), or a dot when it has a single point, with its name as the tooltip.
fn draw_line(o: &mut String, l: &Line, xa: &Mapped, ya: &Mapped, log_y: bool) {
    if l.points.is_empty() {
        return;
    }
    let (ci, dashed) = colour(l.colour);
    let cls = format!(
        "{} k{ci}{}",
        if l.thin { "tr" } else { "ln" },
        if dashed { " dd" } else { "" }
    );
    let mut pts = String::with_capacity(l.points.len() * 12);
    for (i, (x, y)) in l.points.iter().enumerate() {
        if !x.is_finite() || !y.is_finite() || (log_y && *y <= 0.0) {
            continue;
        }
        if i > 0 && !pts.is_empty() {
            pts.push(' ');
        }
        let _ = write!(pts, "{},{}", n(xa.px(*x)), n(ya.px(*y)));
    }
    if l.points.len() == 1 {
        // A single point is no line: draw a dot so the run is still visible.
        let (x, y) = l.points[0];
        let _ = write!(
            o,
            "<circle class=\"f{ci}\" cx=\"{}\" cy=\"{}\" r=\"3\"><title>{}</title></circle>",
            n(xa.px(x)),
            n(ya.px(y)),
            esc(&l.name)
        );
        return;
    }
    let _ = write!(
        o,
        "<polyline class=\"{cls}\" points=\"{pts}\"><title>{}</title></polyline>",
        esc(&l.name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(scale: Scale, label: &str) -> AxisSpec {
        AxisSpec {
            scale,
            label: label.into(),
            format: super::super::compact,
        }
    }

    #[test]
    fn lines_are_drawn_inside_the_plot_with_a_legend() {
        let c = LineChart {
            title: "latency".into(),
            x: spec(Scale::Nines, "percentile"),
            y: spec(Scale::Log, "latency"),
            lines: vec![
                Line {
                    name: "a<b".into(),
                    colour: 0,
                    thin: false,
                    points: vec![(50.0, 100.0), (99.0, 1000.0), (99.9, 5000.0)],
                },
                Line {
                    name: "one".into(),
                    colour: 11,
                    thin: false,
                    points: vec![(50.0, 200.0)],
                },
            ],
            markers: vec![Marker {
                x: 90.0,
                colour: 1,
                tooltip: "cliff".into(),
            }],
            legend: vec![("a<b".into(), 0), ("one".into(), 11)],
        };
        let s = render(&c, Embed::Inline);
        assert!(s.contains("<polyline class=\"ln k0\""), "{s}");
        assert!(s.contains("<circle class=\"f1\""));
        assert!(s.contains("a&lt;b"));
        assert!(s.contains(">p99.9<"));
        assert!(
            s.contains("class=\"ln k1 dd\""),
            "dashed legend for colour 11"
        );
        // Every coordinate of the polyline lies in the plot area.
        let pts = s.split("points=\"").nth(1).unwrap();
        for p in pts[..pts.find('"').unwrap()].split(' ') {
            let (x, y) = p.split_once(',').unwrap();
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            assert!(
                (54.0..=626.0).contains(&x) && (10.0..=230.0).contains(&y),
                "{p}"
            );
        }
    }

    #[test]
    fn long_series_are_thinned_to_the_limit() {
        let pts: Vec<(f64, f64)> = (0..3600).map(|i| (f64::from(i), 1.0)).collect();
        let t = thin(&pts, 300);
        assert!(t.len() <= 300, "{}", t.len());
        assert!(t.iter().all(|p| p.1 == 1.0));
        assert_eq!(thin(&pts[..10], 300).len(), 10);
    }
}
