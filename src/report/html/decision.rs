//! The report's first section for a lab: the recommendation in one sentence, then
//! the decision table — rejected layouts struck out with the need they miss, the Pareto front
//! marked, every figure with its source (hover for how it was obtained).

use std::fmt::Write as _;

use crate::decide::{Decision, Figure, Row, format_probability};
use crate::report::chart::esc;
use crate::report::text::decide::{LEGEND, heading};
use crate::units::{format_bytes_si, format_duration, format_rate};

/// A figure's cell: the value, its interval below (`pm`: as `± half-width`, the way the
/// compare tables print a median's), its source as a muted word with the basis on hover.
fn cell(f: Option<&Figure>, show: &dyn Fn(f64) -> String, pm: bool) -> String {
    let Some(f) = f else {
        return "<td>-</td>".into();
    };
    let iv = f.interval.map_or_else(String::new, |(lo, hi)| {
        if pm {
            format!("<span class=\"r\">± {}</span>", esc(&show((hi - lo) / 2.0)))
        } else {
            format!(
                "<span class=\"r\">{} – {}</span>",
                esc(&show(lo)),
                esc(&show(hi))
            )
        }
    });
    format!(
        "<td title=\"{}\">{}{iv}<span class=\"r\">{}</span></td>",
        esc(&f.basis),
        esc(&show(f.value)),
        f.source.word()
    )
}

fn dur(s: f64) -> String {
    format_duration(std::time::Duration::from_secs_f64(s.max(0.0)))
}

fn row_html(o: &mut String, d: &Decision, r: &Row, slo: bool, rebuilding: bool, power: bool) {
    let best = d.recommended.as_deref() == Some(r.name.as_str());
    let name = if best {
        format!(
            "<b>{}</b> <span class=\"u\">recommended</span>",
            esc(&r.name)
        )
    } else if d.runner_up.as_deref() == Some(r.name.as_str()) {
        format!("{} <span class=\"u\">runner-up</span>", esc(&r.name))
    } else if r.qualifies() {
        esc(&r.name)
    } else {
        format!("<del>{}</del>", esc(&r.name))
    };
    let _ = write!(o, "<tr><td>{name}</td>");
    o.push_str(&cell(
        r.usable.as_ref(),
        &|v| format_bytes_si(v as u64),
        false,
    ));
    let unit = r.speed.as_ref().map_or("", |s| s.unit);
    o.push_str(&cell(
        r.speed.as_ref().map(|s| &s.figure),
        &|v| format!("{} {unit}", format_rate(v)),
        true,
    ));
    o.push_str(&cell(r.degraded.as_ref(), &|v| format!("{v:.2}x"), false));
    if rebuilding {
        o.push_str(&cell(
            r.during_rebuild.as_ref(),
            &|v| format!("{v:.2}x"),
            false,
        ));
    }
    if slo {
        if r.capacity_at_slo.is_some() {
            o.push_str(&cell(r.capacity_at_slo.as_ref(), &format_rate, false));
        } else {
            o.push_str("<td>not measured</td>");
        }
    }
    o.push_str(&cell(r.rebuild.as_ref(), &dur, false));
    o.push_str(&cell(r.window.as_ref(), &dur, false));
    o.push_str(&cell(r.loss_5y.as_ref(), &format_probability, false));
    let integrity = match r.integrity.as_deref() {
        None => "-".to_string(),
        Some(v) if v == crate::sample::layout_record::VERIFIED_TEXT => esc(v),
        Some(v) => format!("<strong class=\"bad\">{}</strong>", esc(v)),
    };
    let _ = write!(o, "<td class=\"l\">{integrity}</td>");
    if power {
        let p = match r.power.as_deref() {
            None => "-".to_string(),
            Some(v) if r.power_lost => format!("<strong class=\"bad\">{}</strong>", esc(v)),
            Some(v) => esc(v),
        };
        let _ = write!(o, "<td class=\"l\">{p}</td>");
    }
    let _ = writeln!(
        o,
        "<td>{}</td><td class=\"l\">{}</td></tr>",
        if r.pareto { "yes" } else { "-" },
        if r.qualifies() {
            "meets every need".to_string()
        } else {
            format!(
                "<span class=\"bad\">{}</span>",
                esc(&r
                    .misses
                    .iter()
                    .map(|m| m.reason.as_str())
                    .collect::<Vec<_>>()
                    .join("; "))
            )
        }
    );
}

/// Writes the decision section.
pub fn section(o: &mut String, d: &Decision) {
    o.push_str("<section id=\"decision\"><h2>Decision</h2>\n");
    let _ = writeln!(
        o,
        "<p class=\"meta\">{}</p>\n<p><b>{}</b></p>",
        esc(&heading(d)),
        esc(&d.sentence)
    );
    if let Some(t) = &d.turns_on {
        let _ = writeln!(o, "<p class=\"turns\">{}</p>", esc(t));
    }
    let slo = d.shows_capacity_at_slo();
    let _ = write!(
        o,
        "<div class=\"tw\"><table><thead><tr><th>layout</th><th>usable</th><th>{}</th><th>degraded</th>",
        esc(d.workload.as_deref().unwrap_or("speed"))
    );
    let rebuilding = d.shows_rebuilding();
    if rebuilding {
        o.push_str("<th>rebuilding</th>");
    }
    if slo {
        o.push_str("<th>capacity@SLO</th>");
    }
    o.push_str("<th>rebuild</th><th>window</th><th>P(loss 5y)</th><th class=\"l\">integrity</th>");
    let power = d.shows_power();
    if power {
        o.push_str("<th class=\"l\">power</th>");
    }
    o.push_str("<th>front</th><th class=\"l\">needs</th></tr></thead><tbody>\n");
    for r in &d.rows {
        row_html(o, d, r, slo, rebuilding, power);
    }
    o.push_str("</tbody></table></div>\n");
    let _ = writeln!(
        o,
        "<p class=\"meta\">Under each figure: where it comes from ({}); hover for how.</p>",
        esc(LEGEND)
    );
    if !d.notes.is_empty() {
        o.push_str("<ul class=\"notes\">");
        for n in &d.notes {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::{esc, section};
    use crate::decide::tests::{needs, pod, seed_spec};

    #[test]
    fn a_layout_measured_during_its_rebuild_adds_the_rebuilding_column() {
        let plain = crate::decide::decide(&pod(), &needs(None, None), None).unwrap();
        let mut html = String::new();
        super::section(&mut html, &plain);
        assert!(!html.contains("<th>rebuilding</th>"), "{html}");
        let mut lab = pod();
        lab.layouts[0].workloads[0].rebuilding = crate::stats::Summary::of(&[200.0, 201.0, 199.0]);
        let d = crate::decide::decide(&lab, &needs(None, None), None).unwrap();
        let mut html = String::new();
        super::section(&mut html, &d);
        assert!(html.contains("<th>rebuilding</th>"), "{html}");
        assert!(html.contains("during the rebuild over healthy"), "{html}");
    }

    #[test]
    fn the_html_strikes_rejections_and_titles_the_rebuild_basis() {
        let mut spec = needs(Some(200_000_000_000_000), Some(0.01));
        spec.disk.write_mbps = Some(150.0);
        let d = crate::decide::decide(&pod(), &spec, None).unwrap();
        let mut html = String::new();
        super::section(&mut html, &d);
        assert!(html.contains("<del>md-raid10-44+1s</del>"), "{html}");
        assert!(
            html.contains("title=\"1.00GB rebuilt in 10.0s: 100 MB/s per member\""),
            "{html}"
        );
    }

    /// The sensitivity line is a paragraph after the sentence, and absent without a flip.
    #[test]
    fn the_sensitivity_line_follows_the_sentence() {
        let d = crate::decide::decide(&pod(), &seed_spec(), None).unwrap();
        let mut html = String::new();
        section(&mut html, &d);
        let line = d.turns_on.as_deref().unwrap();
        assert!(
            html.contains(&format!("<p class=\"turns\">{}</p>", esc(line))),
            "{html}"
        );
        let d =
            crate::decide::decide(&pod(), &needs(Some(200_000_000_000_000), None), None).unwrap();
        let mut html = String::new();
        section(&mut html, &d);
        assert!(!html.contains("Turns on"), "{html}");
    }
}
