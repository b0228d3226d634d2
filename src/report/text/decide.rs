//! The decision table for a terminal and as Markdown: one row per layout — usable
//! at the real disk size, speed on the decision's workload with its spread, degraded ratio,
//! capacity at the latency target, rebuild time and window, P(loss), integrity — each figure
//! marked with where it comes from, rejected layouts struck out with the need they miss, the
//! Pareto front marked, and the recommendation in one sentence under it.

use std::fmt::Write as _;

use crate::decide::{Decision, Figure, Row, Source, format_probability};
use crate::units::{format_bytes_si, format_duration, format_rate};

/// The mark after a figure: where it comes from.
fn mark(s: Source) -> &'static str {
    match s {
        Source::Measured => "m",
        Source::Emulated => "e",
        Source::Scaled => "s",
        Source::Modelled => "p",
    }
}

/// The legend of the marks after each figure: where it comes from.
pub const LEGEND: &str =
    "[m] measured here, [e] emulated (VM), [s] scaled to the real disks, [p] the planner's model";

fn dur(secs: f64) -> String {
    format_duration(std::time::Duration::from_secs_f64(secs.max(0.0)))
}

fn with_mark(text: String, f: &Figure) -> String {
    format!("{text} [{}]", mark(f.source))
}

/// `401 ±4.2 MB/s [m]`: the median and the half-width of its interval.
fn speed_cell(r: &Row) -> String {
    r.speed.as_ref().map_or_else(
        || "-".into(),
        |s| {
            let pm = s
                .figure
                .interval
                .map(|(lo, hi)| format!(" ±{}", format_rate((hi - lo) / 2.0)))
                .unwrap_or_default();
            with_mark(
                format!("{}{pm} {}", format_rate(s.figure.value), s.unit),
                &s.figure,
            )
        },
    )
}

fn ratio_cell(f: Option<&Figure>) -> String {
    f.map_or_else(
        || "-".into(),
        |f| {
            let iv = f
                .interval
                .map(|(lo, hi)| format!(" ({lo:.2}-{hi:.2})"))
                .unwrap_or_default();
            with_mark(format!("{:.2}x{iv}", f.value), f)
        },
    )
}

fn slo_cell(r: &Row) -> String {
    let one = |f: &Figure| format_rate(f.value);
    let Some(h) = &r.capacity_at_slo else {
        return "not measured".into();
    };
    let mut s = one(h);
    if let Some(d) = &r.capacity_at_slo_degraded {
        s.push_str(&format!(" / deg {}", one(d)));
    }
    if let Some(rb) = &r.capacity_at_slo_rebuilding {
        s.push_str(&format!(" / rebuild {}", one(rb)));
    }
    with_mark(s, h)
}

/// What the row's verdict column says.
fn verdict(d: &Decision, r: &Row) -> String {
    if d.recommended.as_deref() == Some(r.name.as_str()) {
        "RECOMMENDED".into()
    } else if d.runner_up.as_deref() == Some(r.name.as_str()) {
        "runner-up".into()
    } else if r.qualifies() {
        "qualifies".into()
    } else {
        format!(
            "rejected: {}",
            r.misses
                .iter()
                .map(|m| m.reason.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )
    }
}

fn headers(d: &Decision, slo: bool) -> Vec<String> {
    let mut h = vec!["layout".to_string(), "usable".into()];
    h.push(d.workload.clone().unwrap_or_else(|| "speed".into()));
    h.push("degraded".into());
    if d.shows_rebuilding() {
        h.push("rebuilding".into());
    }
    if slo {
        h.push("capacity@SLO".into());
    }
    for x in ["rebuild", "window", "P(loss 1y)", "P(loss 5y)", "integrity"] {
        h.push(x.into());
    }
    if d.shows_power() {
        h.push("power".into());
    }
    h.push("front".into());
    h.push("verdict".into());
    h
}

fn cells(d: &Decision, r: &Row, slo: bool) -> Vec<String> {
    let fig = |f: &Option<Figure>, show: &dyn Fn(f64) -> String| {
        f.as_ref()
            .map_or_else(|| "-".into(), |f| with_mark(show(f.value), f))
    };
    let mut c = vec![
        r.name.clone(),
        fig(&r.usable, &|v| format_bytes_si(v as u64)),
        speed_cell(r),
        ratio_cell(r.degraded.as_ref()),
    ];
    if d.shows_rebuilding() {
        c.push(ratio_cell(r.during_rebuild.as_ref()));
    }
    if slo {
        c.push(slo_cell(r));
    }
    c.push(fig(&r.rebuild, &dur));
    c.push(fig(&r.window, &dur));
    c.push(fig(&r.loss_1y, &format_probability));
    c.push(fig(&r.loss_5y, &format_probability));
    c.push(r.integrity.clone().unwrap_or_else(|| "-".into()));
    if d.shows_power() {
        c.push(r.power.clone().unwrap_or_else(|| "-".into()));
    }
    c.push(if r.pareto { "yes".into() } else { "-".into() });
    c.push(verdict(d, r));
    c
}

/// The line above the table: the real disks, the needs, the preference.
pub fn heading(d: &Decision) -> String {
    let disks = d.assumptions.disk_bytes.map_or_else(
        || "the lab's own disks".to_string(),
        |b| format!("{} disks", format_bytes_si(b)),
    );
    let mut needs = Vec::new();
    let n = &d.needs;
    if let Some(u) = n.min_usable {
        needs.push(format!("usable >= {}", format_bytes_si(u)));
    }
    if let Some(p) = n.max_loss_1y {
        needs.push(format!("loss 1y <= {}", format_probability(p)));
    }
    if let Some(p) = n.max_loss_5y {
        needs.push(format!("loss 5y <= {}", format_probability(p)));
    }
    if let Some(c) = n.min_capacity_at_slo {
        needs.push(format!("capacity at SLO >= {} IOPS", format_rate(c)));
    }
    for m in &n.min {
        needs.push(format!("{} >= {}", m.workload, format_rate(m.value)));
    }
    format!(
        "Decision for lab {} ({}) at {disks}; needs: {}; prefer {}",
        d.lab_id,
        d.lab,
        if needs.is_empty() {
            "none".to_string()
        } else {
            needs.join(", ")
        },
        d.prefer.name()
    )
}

/// The decision for a terminal: heading, aligned table, the sentence, relaxations and notes.
pub fn render_table(d: &Decision) -> String {
    let slo = d.shows_capacity_at_slo();
    let h = headers(d, slo);
    let rows: Vec<Vec<String>> = d.rows.iter().map(|r| cells(d, r, slo)).collect();
    let mut w: Vec<usize> = h.iter().map(|x| x.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(r.len() - 1) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                let _ = write!(s, "{c:<wd$}  ", wd = w[i]);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = String::new();
    let _ = writeln!(out, "{}", heading(d));
    let upper: Vec<String> = h.iter().map(|x| x.to_uppercase()).collect();
    let _ = writeln!(out, "{}", line(&upper));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    let _ = writeln!(out, "{LEGEND}");
    let _ = writeln!(out, "\n{}", d.sentence);
    if let Some(t) = &d.turns_on {
        let _ = writeln!(out, "{t}");
    }
    for n in &d.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The decision as Markdown: rejected layouts struck out, the recommended one in bold.
pub fn render_markdown(d: &Decision) -> String {
    let slo = d.shows_capacity_at_slo();
    let h = headers(d, slo);
    let mut out = String::new();
    let _ = writeln!(out, "**{}**\n", md_escape(&heading(d)));
    let _ = writeln!(out, "| {} |", h.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        h.iter()
            .enumerate()
            .map(|(i, _)| if i == 0 || i + 1 == h.len() {
                "---|"
            } else {
                "---:|"
            })
            .collect::<String>()
    );
    for r in &d.rows {
        let mut c = cells(d, r, slo);
        if d.recommended.as_deref() == Some(r.name.as_str()) {
            c[0] = format!("**{}**", c[0]);
        } else if !r.qualifies() {
            c[0] = format!("~~{}~~", c[0]);
        }
        let c: Vec<String> = c.iter().map(|x| md_escape(x)).collect();
        let _ = writeln!(out, "| {} |", c.join(" | "));
    }
    let _ = writeln!(out, "\n{LEGEND}\n\n{}", md_escape(&d.sentence));
    if let Some(t) = &d.turns_on {
        let _ = writeln!(out, "\n{}", md_escape(t));
    }
    if !d.notes.is_empty() {
        out.push('\n');
        for n in &d.notes {
            let _ = writeln!(out, "- {}", md_escape(n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::tests::{needs, pod, seed_spec};

    #[test]
    fn a_power_column_shows_the_verdict_and_the_rejection_names_it() {
        let plain = crate::decide::decide(&pod(), &needs(None, None), None).unwrap();
        assert!(!render_table(&plain).contains("POWER"));
        let mut lab = pod();
        lab.layouts[1].power = Some("1/3: 2 files silently wrong (write hole)".into());
        lab.layouts[1].power_lost = true;
        let d = crate::decide::decide(&lab, &needs(None, None), None).unwrap();
        let t = render_table(&d);
        let r5 = t.lines().find(|l| l.starts_with("md-raid5-44+1s")).unwrap();
        assert!(t.contains("POWER"), "{t}");
        assert!(r5.contains("rejected: power cuts: 1/3"), "{r5}");
    }

    #[test]
    fn a_rebuilding_column_shows_only_when_a_layout_was_measured_during_its_rebuild() {
        let plain = crate::decide::decide(&pod(), &needs(None, None), None).unwrap();
        assert!(!render_table(&plain).contains("REBUILDING"));
        let mut lab = pod();
        lab.layouts[0].workloads[0].rebuilding = crate::stats::Summary::of(&[200.0, 201.0, 199.0]);
        let d = crate::decide::decide(&lab, &needs(None, None), None).unwrap();
        let t = render_table(&d);
        let r6 = t.lines().find(|l| l.starts_with("md-raid6-43+2s")).unwrap();
        assert!(t.contains("REBUILDING") && r6.contains("0.50x ("), "{t}");
    }

    #[test]
    fn the_tables_strike_rejections_and_mark_the_recommendation() {
        let mut spec = needs(Some(200_000_000_000_000), Some(0.01));
        spec.disk.write_mbps = Some(150.0);
        let d = crate::decide::decide(&pod(), &spec, None).unwrap();
        let t = render_table(&d);
        println!("{t}");
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("Decision for lab pod45 (45-spindles) at 8.00TB disks; needs: usable >= 200.00TB, loss 5y <= 1.0%; prefer safety"), "{t}");
        assert!(
            lines[1].starts_with("LAYOUT") && lines[1].contains("SEQ-WRITE-1M"),
            "{t}"
        );
        let r6 = lines
            .iter()
            .find(|l| l.starts_with("md-raid6-43+2s"))
            .unwrap();
        assert!(
            r6.contains("327.99TB [p]") && r6.contains("401 ±") && r6.ends_with("RECOMMENDED"),
            "{r6}"
        );
        let r10 = lines
            .iter()
            .find(|l| l.starts_with("md-raid10-44+1s"))
            .unwrap();
        assert!(
            r10.contains("rejected: usable 175.99TB < 200.00TB; loss 5y "),
            "{r10}"
        );
        assert!(t.contains(&d.sentence));
        let md = render_markdown(&d);
        println!("{md}");
        assert!(md.contains("| **md-raid6-43+2s** |"), "{md}");
        assert!(md.contains("| ~~md-raid5-44+1s~~ |"), "{md}");
    }

    /// The line saying which verdict turns on the risk inputs follows the sentence, in the
    /// terminal and in Markdown; without a flip there is none.
    #[test]
    fn the_sensitivity_line_follows_the_sentence() {
        let d = crate::decide::decide(&pod(), &seed_spec(), None).unwrap();
        let line = d.turns_on.as_deref().unwrap();
        assert!(line.starts_with("Turns on the risk inputs"), "{line}");
        let t = render_table(&d);
        assert!(t.contains(&format!("{}\n{line}\n", d.sentence)), "{t}");
        assert!(render_markdown(&d).contains(&format!("\n\n{line}\n")));
        let d =
            crate::decide::decide(&pod(), &needs(Some(200_000_000_000_000), None), None).unwrap();
        assert_eq!(d.turns_on, None);
        assert!(!render_table(&d).contains("Turns on"));
        assert!(!render_markdown(&d).contains("Turns on"));
    }
}
