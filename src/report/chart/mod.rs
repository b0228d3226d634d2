//! Hand-written SVG charts: horizontal bars with error bars, lines on linear, log and "nines"
//! axes, and labelled scatter points.
//!
//! Hand-written because the charts are simple and the report must be one file that opens with
//! no network: no chart library, no script, no font. Colours are CSS classes (`f3` fills with
//! palette colour 3, `k3` strokes with it) resolved through CSS variables, so one stylesheet
//! gives light and dark schemes by `prefers-color-scheme`. Inside an HTML page the page's
//! stylesheet applies ([`CHART_CSS`]); a standalone `.svg` file (for Markdown) carries its own
//! copy ([`Embed::Standalone`]).
//!
//! Every string that reaches the SVG goes through [`esc`]. Coordinates are rounded to one
//! decimal so a report over many runs stays small.

pub mod axis;
pub mod bar;
pub mod figure;
pub mod line;
pub mod scatter;

use std::fmt::Write as _;

/// How a chart is embedded, which decides what the `<svg>` element must carry itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Embed {
    /// Inside an HTML page: no namespace attribute (HTML parsers do not need one), no style
    /// (the page's applies), no title text (the page has a heading).
    Inline,
    /// A file of its own: namespace, its own stylesheet, and the title drawn at the top.
    Standalone,
}

/// Number of distinct colours; runs beyond it reuse colours with dashed lines.
pub const PALETTE: usize = 10;

/// Palette and chart classes, light scheme first, then dark, then print (always light). The
/// HTML page includes this once; standalone SVG files include it in a `<style>` element.
pub const CHART_CSS: &str = "\
:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--grid:#d1d9e0;--panel:#f6f8fa;\
--c0:#4e79a7;--c1:#f28e2b;--c2:#e15759;--c3:#76b7b2;--c4:#59a14f;--c5:#edc948;--c6:#b07aa1;\
--c7:#ff9da7;--c8:#9c755f;--c9:#bab0ac}\
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;\
--grid:#30363d;--panel:#151b23;--c0:#79a8dc;--c1:#ffa552;--c2:#ff7b7d;--c3:#8fd3cd;\
--c4:#7fca73;--c5:#f5d76e;--c6:#d19ec6;--c7:#ffb8c0;--c8:#c49a7c;--c9:#d0c8c4}}\
@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--grid:#ccc;--panel:#fff;\
--c0:#4e79a7;--c1:#f28e2b;--c2:#e15759;--c3:#76b7b2;--c4:#59a14f;--c5:#edc948;--c6:#b07aa1;\
--c7:#ff9da7;--c8:#9c755f;--c9:#bab0ac}}\
svg.chart{font:11px system-ui,-apple-system,'Segoe UI',sans-serif;fill:var(--fg)}\
.chart .bg{fill:var(--bg)}.chart .tt{font-size:13px;font-weight:600}\
.chart .ax{fill:var(--muted)}.chart .gl{stroke:var(--grid);stroke-width:1}\
.chart .fr{stroke:var(--muted);stroke-width:1;fill:none}\
.chart .eb{stroke:var(--fg);stroke-width:1.2;fill:none}\
.chart .rf{stroke:var(--fg);stroke-width:1;stroke-dasharray:4 3;fill:none;opacity:.7}\
.chart .ln{fill:none;stroke-width:1.6;stroke-linejoin:round}\
.chart .tr{fill:none;stroke-width:1.1;opacity:.75}\
.chart .dd{stroke-dasharray:5 3}.chart .mk{stroke-width:1;stroke-dasharray:2 2}\
.chart .in{font-weight:600;paint-order:stroke;stroke:var(--bg);stroke-width:3px;stroke-linejoin:round}.chart .bb{stroke:var(--fg);stroke-width:1.5}\
.chart .f0{fill:var(--c0)}.chart .f1{fill:var(--c1)}.chart .f2{fill:var(--c2)}\
.chart .f3{fill:var(--c3)}.chart .f4{fill:var(--c4)}.chart .f5{fill:var(--c5)}\
.chart .f6{fill:var(--c6)}.chart .f7{fill:var(--c7)}.chart .f8{fill:var(--c8)}\
.chart .f9{fill:var(--c9)}.chart .k0{stroke:var(--c0)}.chart .k1{stroke:var(--c1)}\
.chart .k2{stroke:var(--c2)}.chart .k3{stroke:var(--c3)}.chart .k4{stroke:var(--c4)}\
.chart .k5{stroke:var(--c5)}.chart .k6{stroke:var(--c6)}.chart .k7{stroke:var(--c7)}\
.chart .k8{stroke:var(--c8)}.chart .k9{stroke:var(--c9)}\n";

/// Escapes text for HTML and SVG, in element content and in quoted attributes alike.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters other than tab and newline are not allowed in XML.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A coordinate with at most one decimal and no trailing `.0`: compact and exact enough for a
/// screen (a tenth of a pixel).
pub fn n(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A value with a metric suffix and at most three significant digits: `850`, `1.2k`, `45k`,
/// `1.5M`, `2T`. Axis labels use it.
pub fn compact(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", sig3(scaled))
}

/// Three significant digits without trailing zeros.
fn sig3(v: f64) -> String {
    let a = v.abs();
    let d = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.d$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A latency tick label: `50us`, `1ms`, `2.5s`.
pub fn latency_label(ns: f64) -> String {
    if ns < 1e3 {
        format!("{}ns", sig3(ns))
    } else if ns < 1e6 {
        format!("{}us", sig3(ns / 1e3))
    } else if ns < 1e9 {
        format!("{}ms", sig3(ns / 1e6))
    } else {
        format!("{}s", sig3(ns / 1e9))
    }
}

/// A byte-count tick label in decimal units, as disk labels read: `500GB`, `2TB`.
pub fn bytes_label(b: f64) -> String {
    format!("{}B", compact(b))
}

/// Rough width of a text in pixels at `px` font size: enough to lay labels out without a font.
pub fn text_width(s: &str, px: f64) -> f64 {
    s.chars().count() as f64 * px * 0.58
}

/// Cuts a label to `max` characters, ending with an ellipsis when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The palette classes of a series index: colour (`0..PALETTE`) and whether it is dashed
/// (series past the palette are dashed so they stay distinguishable).
pub fn colour(i: usize) -> (usize, bool) {
    (i % PALETTE, (i / PALETTE) % 2 == 1)
}

/// Opens an `<svg>` of `w` x `h` user units that scales to the width of its container.
pub(crate) fn open(out: &mut String, w: f64, h: f64, title: &str, embed: Embed) {
    let ns = match embed {
        Embed::Inline => "",
        Embed::Standalone => " xmlns=\"http://www.w3.org/2000/svg\"",
    };
    let size = match embed {
        // A file opened on its own gets its natural size; inline charts fill their container.
        Embed::Standalone => format!(" width=\"{}\" height=\"{}\"", n(w), n(h)),
        Embed::Inline => String::new(),
    };
    let _ = write!(
        out,
        "<svg{ns} class=\"chart\" viewBox=\"0 0 {} {}\"{size} role=\"img\" aria-label=\"{}\"><title>{}</title>",
        n(w),
        n(h),
        esc(title),
        esc(title)
    );
    if embed == Embed::Standalone {
        out.push_str("<style>");
        out.push_str(CHART_CSS);
        out.push_str("</style>");
        let _ = write!(
            out,
            "<rect class=\"bg\" width=\"{}\" height=\"{}\"/>",
            n(w),
            n(h)
        );
    }
}

/// The height a standalone chart adds above the plot for its title.
pub(crate) fn title_height(embed: Embed) -> f64 {
    match embed {
        Embed::Inline => 0.0,
        Embed::Standalone => 22.0,
    }
}

/// Draws the title at the top of a standalone chart.
pub(crate) fn title(out: &mut String, title: &str, embed: Embed) {
    if embed == Embed::Standalone {
        let _ = write!(
            out,
            "<text class=\"tt\" x=\"8\" y=\"16\">{}</text>",
            esc(title)
        );
    }
}

/// A text element; `anchor` is `start`, `middle` or `end`.
pub(crate) fn text(out: &mut String, x: f64, y: f64, anchor: &str, class: &str, s: &str) {
    let a = if anchor == "start" {
        String::new()
    } else {
        format!(" text-anchor=\"{anchor}\"")
    };
    let c = if class.is_empty() {
        String::new()
    } else {
        format!(" class=\"{class}\"")
    };
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\"{a}{c}>{}</text>",
        n(x),
        n(y),
        esc(s)
    );
}

/// A line segment with a class.
pub(crate) fn seg(out: &mut String, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
    let _ = write!(
        out,
        "<path class=\"{class}\" d=\"M{} {}L{} {}\"/>",
        n(x1),
        n(y1),
        n(x2),
        n(y2)
    );
}

/// A legend: coloured swatches with names, in as many columns as fit `width`, starting at
/// `y`. Returns the height used.
pub(crate) fn legend(
    out: &mut String,
    x0: f64,
    y: f64,
    width: f64,
    entries: &[(String, usize)],
) -> f64 {
    if entries.is_empty() {
        return 0.0;
    }
    let longest = entries
        .iter()
        .map(|(s, _)| s.chars().count().min(28))
        .max()
        .unwrap_or(0);
    let col_w = (text_width(&"x".repeat(longest), 11.0) + 30.0).max(90.0);
    let cols = ((width / col_w).floor() as usize).max(1);
    let rows = entries.len().div_ceil(cols);
    for (i, (name, idx)) in entries.iter().enumerate() {
        let (c, dashed) = colour(*idx);
        let x = x0 + (i % cols) as f64 * col_w;
        let yy = y + (i / cols) as f64 * 16.0 + 8.0;
        let dd = if dashed { " dd" } else { "" };
        seg(
            out,
            x,
            yy - 4.0,
            x + 18.0,
            yy - 4.0,
            &format!("ln k{c}{dd}"),
        );
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\">{}<title>{}</title></text>",
            n(x + 23.0),
            n(yy),
            esc(&truncate(name, 28)),
            esc(name)
        );
    }
    rows as f64 * 16.0 + 4.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_elements_and_attributes() {
        assert_eq!(
            esc("<b a=\"x\">&'</b>"),
            "&lt;b a=&quot;x&quot;&gt;&amp;&#39;&lt;/b&gt;"
        );
        assert_eq!(esc("a\u{1}b"), "a b");
    }

    #[test]
    fn coordinates_keep_one_decimal() {
        assert_eq!(n(12.0), "12");
        assert_eq!(n(12.04), "12");
        assert_eq!(n(12.06), "12.1");
        assert_eq!(n(-0.04), "0");
        assert_eq!(n(f64::NAN), "0");
    }

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(compact(850.0), "850");
        assert_eq!(compact(1200.0), "1.2k");
        assert_eq!(compact(45_000.0), "45k");
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(latency_label(50_000.0), "50us");
        assert_eq!(latency_label(2_500_000_000.0), "2.5s");
        assert_eq!(bytes_label(2e12), "2TB");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(colour(13), (3, true));
    }
}
