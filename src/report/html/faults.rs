//! The lab's fault outcomes, one table row per layout and fault: what the lab struck (kind,
//! member, where, how many copies), what became of the data set's files (intact, repaired,
//! read error, silently wrong) and what the layer itself counted (md's `mismatch_cnt` and its
//! repair, btrfs's checksum errors and scrub, ZFS's CKSUM). A silently wrong file is the loss
//! an application cannot notice: its cell is marked, as a lost integrity verdict is.

use std::fmt::Write as _;

use super::model::{LabView, Report};
use super::run_cell;
use crate::report::chart::esc;
use crate::sample::fault_outcome::FaultOutcome;
use crate::units::format_bytes;

/// The fault's own cell: `corrupt, member 0, 1MiB at 16MiB, one copy` and its full line
/// below.
fn fault_cell(f: &FaultOutcome) -> String {
    let mut what = vec![f.kind.clone(), format!("member {}", f.member)];
    if let (Some(off), Some(len)) = (f.offset, f.length) {
        what.push(format!("{} at {}", format_bytes(len), format_bytes(off)));
    }
    if let Some(c) = &f.copies {
        what.push(format!("{c} cop{}", if c == "one" { "y" } else { "ies" }));
    }
    let mut s = esc(&what.join(", "));
    let _ = write!(s, "<span class=\"r\">{}</span>", esc(&f.description));
    if let Some(e) = &f.error {
        let _ = write!(s, "<span class=\"r bad\">not injected: {}</span>", esc(e));
    }
    s
}

/// A count cell, marked bad when it is a loss and not zero.
fn count(n: u64, bad: bool) -> String {
    if bad && n > 0 {
        format!("<td><strong class=\"bad\">{n}</strong></td>")
    } else {
        format!("<td>{n}</td>")
    }
}

/// The table, after the lab's degraded table; nothing when no layout had a fault.
pub(super) fn outcome_table(o: &mut String, r: &Report, lab: &LabView) {
    let rows: Vec<(usize, &FaultOutcome)> = lab
        .layouts
        .iter()
        .filter_map(|l| Some((l.run, r.runs[l.run].layout.as_ref()?)))
        // Every run of a layout keeps its faults: the healthy one's row says them once.
        .filter(|(_, f)| f.degraded_of.is_none())
        .flat_map(|(run, f)| f.faults.iter().map(move |x| (run, x)))
        .collect();
    if rows.is_empty() {
        return;
    }
    o.push_str("<h3>Fault outcomes</h3><p>Each fault the lab injected, and the data set's files read back after it: <b>intact</b>, <b>repaired</b> (under the struck range, read back right while the layer counted errors), <b>read error</b> (the application saw an error) and <b>silently wrong</b> (wrong bytes, no error: the loss an application cannot notice). Beside them, what the layer itself counted.</p>\n");
    o.push_str("<div class=\"tw\"><table class=\"faults\"><thead><tr><th>layout</th><th class=\"l\">fault</th><th>files</th><th>intact</th><th>repaired</th><th>read error</th><th>silently wrong</th><th class=\"l\">the layer counted</th></tr></thead><tbody>\n");
    for (run, f) in rows {
        let counted = f.counted();
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}<td class=\"l\">{}</td></tr>",
            run_cell(r, run),
            fault_cell(f),
            f.files,
            f.intact,
            f.repaired,
            count(f.read_error, true),
            count(f.silently_wrong, true),
            if counted.is_empty() {
                "-".into()
            } else {
                esc(&counted)
            }
        );
    }
    o.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
mod tests {
    use crate::sample::fault_outcome::FaultOutcome;
    use crate::sample::layout_record::{IntegrityRecord, LayoutRecord};

    use super::super::notes::tests::lab_run;

    /// The text of each row of the table headed `Fault outcomes`, cells joined by ` | `.
    fn table_rows(html: &str) -> Vec<String> {
        let start = html
            .find("<table class=\"faults\">")
            .expect("a fault table");
        let table = &html[start..start + html[start..].find("</table>").unwrap_or(0)];
        table
            .split("<tr>")
            .skip(1)
            .map(|row| {
                let row = row.replace("</th>", "</td>");
                let cells: Vec<String> = row
                    .split("</td>")
                    .map(|c| {
                        let mut out = String::new();
                        let mut tag = false;
                        for ch in c.chars() {
                            match ch {
                                '<' => {
                                    tag = true;
                                    out.push(' ');
                                }
                                '>' => tag = false,
                                _ if !tag => out.push(ch),
                                _ => {}
                            }
                        }
                        out.split_whitespace().collect::<Vec<_>>().join(" ")
                    })
                    .filter(|c| !c.is_empty())
                    .collect();
                cells.join(" | ")
            })
            .collect()
    }

    /// md RAID5 returned a file wrong without an error where btrfs raid1 mended
    /// it: one row per layout and fault with the files classed and the layer's counters,
    /// the silently wrong count marked; a layout without faults has no row.
    #[test]
    fn each_fault_is_a_row_with_its_files_classed_and_the_layers_counters() {
        let layout = |name: &str, verdict: &str, faults: Vec<FaultOutcome>| LayoutRecord {
            name: Some(name.into()),
            description: Some(name.into()),
            integrity: Some(IntegrityRecord {
                verdict: verdict.into(),
                detail: None,
            }),
            faults,
            ..LayoutRecord::default()
        };
        let corrupt = FaultOutcome {
            kind: "corrupt".into(),
            member: 0,
            offset: Some(16 << 20),
            length: Some(1 << 20),
            copies: Some("one".into()),
            description: "corrupt 1MiB at 16MiB (under file data) on member 0 before degrading"
                .into(),
            files: 40,
            ..FaultOutcome::default()
        };
        let md = FaultOutcome {
            intact: 39,
            silently_wrong: 1,
            md_mismatch_cnt: Some(8),
            md_after_repair: Some(1),
            ..corrupt.clone()
        };
        let btrfs = FaultOutcome {
            intact: 37,
            repaired: 3,
            btrfs_csum_errors: Some(16),
            btrfs_corrected: Some(0),
            btrfs_uncorrectable: Some(0),
            ..corrupt.clone()
        };
        let runs = [
            lab_run(
                "md-raid5",
                layout(
                    "md-raid5",
                    "DATA LOSS (1 file, 8 scrub errors; 1 silently wrong: wrong bytes, no error)",
                    vec![md],
                ),
            ),
            lab_run(
                "btrfs-raid1",
                layout("btrfs-raid1", "verified", vec![btrfs]),
            ),
            lab_run("plain", layout("plain", "verified", vec![])),
        ];
        let r = super::super::build(&runs, &super::super::ReportOptions::default());
        let html = super::super::render(&r);
        assert_eq!(
            table_rows(&html),
            [
                "layout | fault | files | intact | repaired | read error | silently wrong | the layer counted",
                "md-raid5 (baseline) | corrupt, member 0, 1MiB at 16MiB, one copy corrupt 1MiB at 16MiB (under file data) on member 0 before degrading | 40 | 39 | 0 | 0 | 1 | md mismatch_cnt 8, 1 file still wrong after repair",
                "btrfs-raid1 | corrupt, member 0, 1MiB at 16MiB, one copy corrupt 1MiB at 16MiB (under file data) on member 0 before degrading | 40 | 37 | 3 | 0 | 0 | btrfs 16 checksum errors, scrub 0 corrected 0 uncorrectable",
            ]
        );
        assert!(
            html.contains("<td>0</td><td><strong class=\"bad\">1</strong></td>"),
            "the silently wrong cell is marked: {html}"
        );
        let text = crate::report::compare::render_text(&r.comparison);
        assert!(
            text.contains("verdict: md-raid5: integrity DATA LOSS (1 file, 8 scrub errors; 1 silently wrong: wrong bytes, no error); lab faults silently wrong (1 file)"),
            "{text}"
        );
        assert!(
            text.contains(
                "verdict: btrfs-raid1: integrity verified; lab faults repaired (3 files)"
            ),
            "{text}"
        );
        assert!(
            text.contains("verdict: plain: integrity verified\n"),
            "{text}"
        );

        let none = super::super::build(&runs[2..], &super::super::ReportOptions::default());
        assert!(!super::super::render(&none).contains("Fault outcomes"));
    }
}
