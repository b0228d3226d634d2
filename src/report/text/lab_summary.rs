//! The lab's answer in one terminal table: a row per layout with its usable capacity and each
//! workload's headline figure against the baseline.

use crate::lab::report::LabReport;
use crate::units::format_bytes;

/// The lab's answer in one table: a row per layout, its usable capacity, and for each workload
/// its headline figure (MB/s, IOPS or ops/s: median over trials) with the ratio to the baseline
/// (`~` when the difference is not significant). The full comparison of every metric is
/// `iolab compare` on the lab's runs.
pub fn render_summary(
    r: &LabReport,
    c: &crate::report::compare::Comparison,
    suite: &crate::spec::Suite,
) -> String {
    use crate::sample::Unit;
    let mut cols: Vec<(String, usize)> = Vec::new(); // (header, row index)
    for w in &suite.workloads {
        let want = match &w.kind {
            crate::spec::WorkloadKind::Io(io) if io.headline_is_bandwidth() => ".mbps",
            crate::spec::WorkloadKind::Io(_) => ".iops",
            crate::spec::WorkloadKind::SmallFiles(_) => "create.ops",
            crate::spec::WorkloadKind::CachedRead(_) => ".mbps",
        };
        if let Some(i) = c
            .rows
            .iter()
            .position(|row| row.workload == w.name && row.metric.ends_with(want))
        {
            let unit = match c.rows[i].unit {
                Unit::MBps => "MB/s",
                Unit::Iops => "IOPS",
                Unit::OpsPerSec => "ops/s",
                Unit::Micros => "us",
            };
            cols.push((format!("{} {unit}", w.name), i));
        }
    }
    let fmt = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    let mut header = vec!["layout".to_string(), "usable".to_string()];
    header.extend(cols.iter().map(|(h, _)| h.clone()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (ri, run) in c.runs.iter().enumerate() {
        let usable = r
            .layouts
            .iter()
            .find(|l| Some(&l.name) == run.label.as_ref())
            .and_then(|l| l.usable_bytes);
        let mut row = vec![
            run.header.clone(),
            usable.map_or_else(|| "-".into(), format_bytes),
        ];
        for (_, i) in &cols {
            let cell = c.rows[*i].cells.get(ri).and_then(|x| x.as_ref());
            row.push(match cell {
                None => "-".into(),
                Some(cell) if run.baseline => format!("{} (base)", fmt(cell.summary.median)),
                Some(cell) => match &cell.ratio {
                    Some(ra) => format!(
                        "{} {:.2}x{}",
                        fmt(cell.summary.median),
                        ra.value,
                        if ra.significant == Some(false) {
                            "~"
                        } else {
                            ""
                        }
                    ),
                    None => fmt(cell.summary.median),
                },
            });
        }
        rows.push(row);
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            } else {
                s.push_str(&format!("{c:>w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&header);
    for row in &rows {
        out.push_str(&line(row));
    }
    let base = c.runs.get(c.baseline).map_or("-", |b| b.header.as_str());
    out.push_str(&format!(
        "median of each layout's trials; ratio to the baseline ({base}), ~ = not significant at 95%; every metric: iolab compare --lab {}\n",
        r.lab_id
    ));
    for n in &c.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}
