//! The plan as people read it: an aligned terminal table or a Markdown table, one row per
//! layout, figures the controller cap holds marked with `*`, dominated layouts named.

use crate::plan::{LayoutRow, Limit, Plan};
use crate::units::format_bytes_si;

/// Formats a probability as a percentage with two significant digits (`51%`, `0.45%`,
/// `3.2e-5%`), so a column of very different risks stays comparable at a glance.
pub fn format_probability(p: f64) -> String {
    let pct = p * 100.0;
    if pct <= 0.0 || !pct.is_finite() {
        return "0%".into();
    }
    if (99.5..100.0).contains(&pct) {
        return ">99%".into();
    }
    if pct >= 10.0 {
        format!("{pct:.0}%")
    } else if pct >= 1.0 {
        format!("{pct:.1}%")
    } else if pct >= 0.01 {
        let digits = (1.0 - pct.log10().floor()) as usize;
        format!("{pct:.digits$}%")
    } else {
        format!("{}%", sci(pct))
    }
}

/// `x` in scientific notation with two significant digits: `1.2e5`, `3.4e-7`.
pub fn sci(x: f64) -> String {
    let s = format!("{x:.1e}");
    s.replace("e0", "").replace(".0e", "e")
}

/// Hours as `45m`, `7.4h`, `79h`.
pub fn format_hours(h: f64) -> String {
    if h < 1.0 {
        format!("{:.0}m", h * 60.0)
    } else if h < 10.0 {
        format!("{h:.1}h")
    } else {
        format!("{h:.0}h")
    }
}

/// MTTDL in years (`1.4y`, `850y`, `1.2e5y`), days or hours when shorter; `inf` when beyond a
/// float.
pub fn format_mttdl(hours: Option<f64>) -> String {
    match hours {
        None => "inf".into(),
        Some(h) => {
            let y = h / crate::plan::risk::HOURS_PER_YEAR;
            if h < 48.0 {
                format_hours(h)
            } else if y < 1.0 {
                format!("{:.0}d", h / 24.0)
            } else if y < 10.0 {
                format!("{y:.1}y")
            } else if y < 10_000.0 {
                format!("{y:.0}y")
            } else {
                format!("{}y", sci(y))
            }
        }
    }
}

fn rate(v: f64, limit: Limit) -> String {
    let mut s = if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    if limit == Limit::Controller {
        s.push('*');
    }
    s
}

/// Column headers and one cell list per row.
fn cells(plan: &Plan) -> (Vec<String>, Vec<Vec<String>>) {
    let years = plan.inputs.mission_years;
    let mission = if (years - years.round()).abs() < 1e-9 {
        format!("loss {years:.0}y")
    } else {
        format!("loss {years}y")
    };
    let headers = [
        "layout",
        "disks",
        "usable",
        "eff",
        "seq rd MB/s",
        "seq wr MB/s",
        "rnd rd IOPS",
        "rnd wr IOPS",
        "rebuild",
        "window",
        "loss 1y",
        mission.as_str(),
        "MTTDL",
        "",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    let rows = plan.layouts.iter().map(row_cells).collect();
    (headers, rows)
}

fn row_cells(r: &LayoutRow) -> Vec<String> {
    let dash = || "-".to_string();
    vec![
        r.name.clone(),
        arrangement(r),
        format_bytes_si(r.usable_bytes),
        format!("{:.0}%", r.efficiency * 100.0),
        rate(r.seq_read_mbps, r.limits.seq_read),
        rate(r.seq_write_mbps, r.limits.seq_write),
        rate(r.rand_read_iops, r.limits.rand_read),
        rate(r.rand_write_iops, r.limits.rand_write),
        r.rebuild_hours.map_or_else(dash, format_hours),
        r.exposure_hours.map_or_else(dash, format_hours),
        format_probability(r.data_loss_probability_1y),
        format_probability(r.data_loss_probability_mission),
        format_mttdl(r.mttdl_hours),
        r.dominated_by
            .as_ref()
            .map_or_else(String::new, |b| format!("dominated by {b}")),
    ]
}

fn arrangement(r: &LayoutRow) -> String {
    let mut s = if r.groups > 1 {
        format!("{}x{}", r.groups, r.disks_per_group)
    } else {
        r.active_disks.to_string()
    };
    if r.spares > 0 {
        s.push_str(&format!("+{}s", r.spares));
    }
    s
}

fn any_capped(plan: &Plan) -> bool {
    plan.layouts.iter().any(|r| {
        [
            r.limits.seq_read,
            r.limits.seq_write,
            r.limits.rand_read,
            r.limits.rand_write,
        ]
        .contains(&Limit::Controller)
    })
}

fn footer(plan: &Plan) -> Vec<String> {
    let i = &plan.inputs;
    let mut out = vec![format!(
        "{} disks of {}; AFR {:.2}%, URE {:e}/bit, replace {} without a spare; window = wait for a disk + rebuild",
        i.disks,
        format_bytes_si(i.disk_bytes),
        i.afr * 100.0,
        i.ure_per_bit,
        format_hours(i.replace_hours)
    )];
    if any_capped(plan) {
        out.push("* held by the controller cap (--cap-mbps / --cap-iops), not by the disks".into());
    }
    out.extend(plan.notes.iter().cloned());
    out
}

/// The aligned terminal table with its notes.
pub fn text(plan: &Plan) -> String {
    let (headers, rows) = cells(plan);
    let ncol = headers.len();
    let mut width = vec![0usize; ncol];
    for r in std::iter::once(&headers).chain(rows.iter()) {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let left = |i: usize| i == 0 || i == 1 || i == ncol - 1;
    let line = |r: &Vec<String>| {
        let mut s = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if left(i) {
                s.push_str(&format!("{c:<w$}", w = width[i]));
            } else {
                s.push_str(&format!("{c:>w$}", w = width[i]));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(&headers);
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out.push('\n');
    for f in footer(plan) {
        out.push_str(&f);
        out.push('\n');
    }
    out
}

/// The Markdown table with its notes as a list.
pub fn markdown(plan: &Plan) -> String {
    let (mut headers, rows) = cells(plan);
    if let Some(last) = headers.last_mut() {
        *last = "note".into();
    }
    let ncol = headers.len();
    let mut out = format!("| {} |\n", headers.join(" | "));
    let align: Vec<&str> = (0..ncol)
        .map(|i| {
            if i <= 1 || i == ncol - 1 {
                ":--"
            } else {
                "--:"
            }
        })
        .collect();
    out.push_str(&format!("|{}|\n", align.join("|")));
    for r in &rows {
        let r: Vec<String> = r.iter().map(|c| c.replace('*', "\\*")).collect();
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out.push('\n');
    for f in footer(plan) {
        out.push_str(&format!("- {}\n", f.replace('*', "\\*")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_read_at_a_glance() {
        assert_eq!(format_probability(0.5123), "51%");
        assert_eq!(format_probability(0.0451), "4.5%");
        assert_eq!(format_probability(0.004_51), "0.45%");
        assert_eq!(format_probability(0.000_451), "0.045%");
        assert_eq!(format_probability(3.2e-7), "3.2e-5%");
        assert_eq!(format_probability(0.0), "0%");
        assert_eq!(format_probability(0.9991), ">99%");
        assert_eq!(sci(123_456.0), "1.2e5");
    }

    #[test]
    fn durations_and_mttdl() {
        assert_eq!(format_hours(7.407), "7.4h");
        assert_eq!(format_hours(79.4), "79h");
        assert_eq!(format_hours(0.5), "30m");
        assert_eq!(format_mttdl(Some(8760.0 * 123_000.0)), "1.2e5y");
        assert_eq!(format_mttdl(Some(8760.0 * 1.5)), "1.5y");
        assert_eq!(format_mttdl(None), "inf");
        assert_eq!(format_mttdl(Some(24.0 * 36.0)), "36d");
        assert_eq!(format_mttdl(Some(5.5)), "5.5h");
    }
}
