//! Horizontal bars, one per run: the median as the bar, the confidence interval as an error
//! bar, the ratio to the baseline printed on the bar, the baseline outlined and its value
//! drawn as a dashed line across every row so "how much faster" reads off the picture.
//!
//! Horizontal because run names are long and phones are narrow: the names get a column of
//! their own instead of slanting under the bars.

use std::fmt::Write as _;

use super::{Embed, axis, colour, compact, esc, n, seg, text, text_width, title, truncate};

/// One bar.
#[derive(Clone, Debug, Default)]
pub struct Bar {
    /// Run name, shown left of the bar.
    pub label: String,
    /// Bar length (the median); `None` draws "no data".
    pub value: Option<f64>,
    /// The confidence interval, drawn as an error bar.
    pub interval: Option<(f64, f64)>,
    /// The figure as text, right of the bar (`500 ± 25`).
    pub value_text: String,
    /// The ratio to the baseline (`1.23x`), printed on the bar; `None` for the baseline.
    pub ratio_text: Option<String>,
    /// True for the baseline's bar.
    pub baseline: bool,
    /// Palette index.
    pub colour: usize,
    /// Hover text with every figure.
    pub tooltip: String,
    /// `data-*` attributes of the bar, for tests and scripts (names without the prefix).
    pub data: Vec<(&'static str, String)>,
}

/// A bar chart.
#[derive(Clone, Debug, Default)]
pub struct BarChart {
    /// What it shows (drawn in standalone files; the accessible name in both).
    pub title: String,
    /// Unit of the values (`MB/s`).
    pub unit: String,
    /// Bars, top to bottom.
    pub bars: Vec<Bar>,
}

const W: f64 = 640.0;
const ROW: f64 = 24.0;
const BAR_H: f64 = 16.0;

/// Draws the chart as an `<svg>` element.
pub fn render(c: &BarChart, embed: Embed) -> String {
    let mut o = String::with_capacity(512 + c.bars.len() * 400);
    let th = super::title_height(embed);
    let label_w = c
        .bars
        .iter()
        .map(|b| text_width(&truncate(&b.label, 24), 11.0))
        .fold(40.0, f64::max)
        .min(150.0);
    // Room right of the longest bar for its figure, and for the ratio too when the bar turns
    // out too short to hold it.
    let right_w = c
        .bars
        .iter()
        .map(|b| {
            let inside = if b.baseline {
                "baseline"
            } else {
                b.ratio_text.as_deref().unwrap_or("")
            };
            text_width(&format!("{}  {inside}", b.value_text), 11.0)
        })
        .fold(40.0, f64::max)
        .min(230.0)
        + 14.0;
    let x0 = 8.0 + label_w + 8.0;
    let x1 = W - right_w;
    let max = c
        .bars
        .iter()
        .flat_map(|b| [b.value, b.interval.map(|i| i.1)])
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let unit = c.unit.clone();
    let ax = axis::linear(0.0, max, x0, x1, &|v| compact(v));
    let y0 = th + 6.0;
    let plot_h = c.bars.len() as f64 * ROW;
    let h = y0 + plot_h + 30.0;
    super::open(&mut o, W, h, &c.title, embed);
    title(&mut o, &c.title, embed);

    // Grid and axis labels.
    for (v, label) in &ax.ticks {
        let x = ax.px(*v);
        seg(&mut o, x, y0, x, y0 + plot_h, "gl");
        text(&mut o, x, y0 + plot_h + 14.0, "middle", "ax", label);
    }
    text(&mut o, x1, y0 + plot_h + 27.0, "end", "ax", &unit);

    for (i, b) in c.bars.iter().enumerate() {
        bar_row(&mut o, b, y0 + i as f64 * ROW, x0, &ax);
    }

    // The baseline's value across all rows.
    if let Some(bv) = c
        .bars
        .iter()
        .find(|b| b.baseline)
        .and_then(|b| b.value)
        .filter(|v| v.is_finite() && *v > 0.0)
    {
        let x = ax.px(bv);
        seg(&mut o, x, y0 - 3.0, x, y0 + plot_h + 3.0, "rf");
    }
    seg(&mut o, x0, y0, x0, y0 + plot_h, "fr");
    o.push_str("</svg>");
    o
}

/// One bar's row, `row_top` pixels down: its name, the bar with its error bar, the ratio
/// inside the bar (or after the figure when the bar is too short to hold it), the figure.
fn bar_row(o: &mut String, b: &Bar, row_top: f64, x0: f64, ax: &axis::Mapped) {
    let top = row_top + (ROW - BAR_H) / 2.0;
    let mid = top + BAR_H / 2.0 + 4.0;
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}<title>{}</title></text>",
        n(x0 - 8.0),
        n(mid),
        esc(&truncate(&b.label, 24)),
        esc(&b.label)
    );
    let Some(v) = b.value.filter(|v| v.is_finite()) else {
        text(o, x0 + 4.0, mid, "start", "ax", "no data");
        return;
    };
    let (c_idx, _) = colour(b.colour);
    let w = (ax.px(v) - x0).max(0.0);
    let mut attrs = String::new();
    for (k, val) in &b.data {
        let _ = write!(attrs, " data-{k}=\"{}\"", esc(val));
    }
    let cls = if b.baseline {
        format!("f{c_idx} bb")
    } else {
        format!("f{c_idx}")
    };
    let _ = write!(
        o,
        "<rect class=\"{cls}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{attrs}><title>{}</title></rect>",
        n(x0),
        n(top),
        n(w),
        n(BAR_H),
        esc(&b.tooltip)
    );
    let mut end = x0 + w;
    if let Some((lo, hi)) = b.interval.filter(|(l, h)| l.is_finite() && h.is_finite()) {
        let (xl, xh) = (ax.px(lo.max(0.0)), ax.px(hi));
        let yc = top + BAR_H / 2.0;
        let _ = write!(
            o,
            "<path class=\"eb\" d=\"M{} {}L{} {}M{} {}V{}M{} {}V{}\"/>",
            n(xl),
            n(yc),
            n(xh),
            n(yc),
            n(xl),
            n(yc - 5.0),
            n(yc + 5.0),
            n(xh),
            n(yc - 5.0),
            n(yc + 5.0)
        );
        end = end.max(xh);
    }
    let inside = if b.baseline {
        Some("baseline".to_string())
    } else {
        b.ratio_text.clone()
    };
    let mut outside = b.value_text.clone();
    if let Some(r) = inside {
        if text_width(&r, 11.0) + 8.0 <= w {
            text(o, x0 + 4.0, mid, "start", "in", &r);
        } else {
            outside = format!("{outside}  {r}");
        }
    }
    text(o, end + 6.0, mid, "start", "", &outside);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, v: f64, base: bool) -> Bar {
        Bar {
            label: label.into(),
            value: Some(v),
            interval: Some((v * 0.9, v * 1.1)),
            value_text: format!("{v}"),
            ratio_text: (!base).then(|| "2.00x".to_string()),
            baseline: base,
            colour: 0,
            tooltip: "t".into(),
            data: vec![("median", format!("{v}"))],
        }
    }

    #[test]
    fn bars_scale_to_their_values_and_escape_labels() {
        let c = BarChart {
            title: "seq <write>".into(),
            unit: "MB/s".into(),
            bars: vec![bar("raid5 & co", 100.0, true), bar("raid6", 200.0, false)],
        };
        let s = render(&c, Embed::Inline);
        assert!(s.starts_with("<svg class=\"chart\""), "{s}");
        assert!(!s.contains("xmlns"));
        assert!(s.contains("raid5 &amp; co"));
        assert!(s.contains("seq &lt;write&gt;"));
        assert!(s.contains("data-median=\"200\""));
        assert!(s.contains(">2.00x<"));
        assert!(s.contains(">baseline<"));
        // The second bar is twice as long as the first.
        let widths: Vec<f64> = s
            .match_indices("width=\"")
            .map(|(i, _)| {
                let rest = &s[i + 7..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(widths.len(), 2);
        assert!((widths[1] / widths[0] - 2.0).abs() < 0.02, "{widths:?}");
        let st = render(&c, Embed::Standalone);
        assert!(st.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(st.contains("<style>"));
    }

    #[test]
    fn a_run_without_the_figure_says_so() {
        let mut b = bar("x", 1.0, false);
        b.value = None;
        let s = render(
            &BarChart {
                title: "t".into(),
                unit: "IOPS".into(),
                bars: vec![b],
            },
            Embed::Inline,
        );
        assert!(s.contains("no data"));
        assert!(!s.contains("<rect"));
    }
}
