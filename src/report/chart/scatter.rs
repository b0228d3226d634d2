//! Labelled points on two linear axes from zero: capacity against speed per layout, where the
//! layouts worth a look sit up and to the right.

use std::fmt::Write as _;

use super::axis;
use super::{Embed, colour, esc, n, seg, text, title, truncate};

/// One point.
#[derive(Clone, Debug, Default)]
pub struct Point {
    /// Name drawn next to it.
    pub label: String,
    /// Horizontal value.
    pub x: f64,
    /// Vertical value.
    pub y: f64,
    /// Palette index.
    pub colour: usize,
    /// Hover text.
    pub tooltip: String,
}

/// A scatter chart.
#[derive(Clone, Debug)]
pub struct ScatterChart {
    /// What it shows.
    pub title: String,
    /// Horizontal axis title.
    pub x_label: String,
    /// Vertical axis title.
    pub y_label: String,
    /// Tick labels of the horizontal axis.
    pub x_format: fn(f64) -> String,
    /// Tick labels of the vertical axis.
    pub y_format: fn(f64) -> String,
    /// A horizontal dashed line (1.0 for "as fast as the baseline").
    pub reference_y: Option<f64>,
    /// The points.
    pub points: Vec<Point>,
}

const W: f64 = 640.0;
const PLOT_H: f64 = 240.0;

/// Draws the chart as an `<svg>` element.
pub fn render(c: &ScatterChart, embed: Embed) -> String {
    let mut o = String::with_capacity(1024 + c.points.len() * 200);
    let th = super::title_height(embed);
    let (x0, x1) = (54.0, W - 110.0);
    let (y_top, y_bot) = (th + 10.0, th + 10.0 + PLOT_H);
    let fin = |v: &f64| v.is_finite();
    let xmax = c.points.iter().map(|p| p.x).filter(fin).fold(0.0, f64::max);
    let ymax = c
        .points
        .iter()
        .map(|p| p.y)
        .chain(c.reference_y)
        .filter(fin)
        .fold(0.0, f64::max);
    let xa = axis::linear(0.0, xmax * 1.05, x0, x1, &c.x_format);
    let ya = axis::linear(0.0, ymax * 1.1, y_bot, y_top, &c.y_format);
    let h = y_bot + 34.0;
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
        text(&mut o, x, y_bot + 14.0, "middle", "ax", label);
    }
    if let Some(r) = c.reference_y.filter(fin) {
        let y = ya.px(r);
        seg(&mut o, x0, y, x1, y, "rf");
    }
    let _ = write!(
        o,
        "<text class=\"ax\" transform=\"translate(12 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        n(f64::midpoint(y_top, y_bot)),
        esc(&c.y_label)
    );
    text(&mut o, x1, y_bot + 28.0, "end", "ax", &c.x_label);
    for p in c
        .points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
    {
        let (ci, _) = colour(p.colour);
        let (x, y) = (xa.px(p.x), ya.px(p.y));
        let _ = write!(
            o,
            "<circle class=\"f{ci} bb\" cx=\"{}\" cy=\"{}\" r=\"5\"><title>{}</title></circle>",
            n(x),
            n(y),
            esc(&p.tooltip)
        );
        text(
            &mut o,
            x + 8.0,
            y + 4.0,
            "start",
            "",
            &truncate(&p.label, 18),
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
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_placed_by_value() {
        let c = ScatterChart {
            title: "capacity vs speed".into(),
            x_label: "usable".into(),
            y_label: "speed".into(),
            x_format: super::super::bytes_label,
            y_format: super::super::compact,
            reference_y: Some(1.0),
            points: vec![
                Point {
                    label: "raid6".into(),
                    x: 4e12,
                    y: 1.0,
                    colour: 0,
                    tooltip: "raid6".into(),
                },
                Point {
                    label: "raid10 & more".into(),
                    x: 2e12,
                    y: 2.0,
                    colour: 1,
                    tooltip: "raid10".into(),
                },
            ],
        };
        let s = render(&c, Embed::Inline);
        let cx: Vec<f64> = s
            .match_indices("cx=\"")
            .map(|(i, _)| {
                let r = &s[i + 4..];
                r[..r.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(cx.len(), 2);
        assert!(cx[0] > cx[1], "{cx:?}");
        assert!(s.contains("raid10 &amp; more"));
        assert!(s.contains(">4TB<") || s.contains(">5TB<"), "{s}");
    }
}
