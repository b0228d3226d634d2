//! Tables that fit a laptop window. A table with a column per workload, per metric or per
//! fact grows with the runs' variety; past [`TABLE_COLUMNS`] such columns it is written as
//! several tables, each repeating the lead column (the run or layout), so none scrolls
//! sideways in a 1280 px window (the summary first, then the setup, lab and
//! per-workload tables). A phone still scrolls each table inside its own box.

use std::fmt::Write as _;

/// Item columns per table, besides the lead column: five headline cells (a figure with its
/// interval over a ratio with its own) are what fit 1048 px of page with room to spare.
pub(super) const TABLE_COLUMNS: usize = 5;

/// One table to write in parts.
pub(super) struct Split<'a> {
    /// The `<table>` element's class (`sum` for the summary), or empty.
    pub class: &'a str,
    /// The lead column's heading (a `<th>` element).
    pub lead: String,
    /// The item columns' headings (`<th>` elements).
    pub heads: Vec<String>,
    /// Per row: the lead cell and the item cells (`<td>` elements, as many as `heads`).
    pub rows: Vec<(String, Vec<String>)>,
}

impl Split<'_> {
    /// Writes the table, in parts of at most [`TABLE_COLUMNS`] item columns.
    pub(super) fn write(&self, o: &mut String) {
        let n = self.heads.len();
        let mut start = 0;
        loop {
            let end = (start + TABLE_COLUMNS).min(n);
            self.part(o, start, end);
            start = end;
            if start >= n {
                break;
            }
        }
    }

    fn part(&self, o: &mut String, start: usize, end: usize) {
        if self.class.is_empty() {
            o.push_str("<div class=\"tw\"><table><thead><tr>");
        } else {
            let _ = write!(
                o,
                "<div class=\"tw\"><table class=\"{}\"><thead><tr>",
                self.class
            );
        }
        o.push_str(&self.lead);
        for h in &self.heads[start..end] {
            o.push_str(h);
        }
        o.push_str("</tr></thead><tbody>\n");
        for (lead, cells) in &self.rows {
            o.push_str("<tr>");
            o.push_str(lead);
            for c in cells.get(start..end).unwrap_or_default() {
                o.push_str(c);
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</tbody></table></div>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_tables_are_split_repeating_the_lead_column() {
        let t = Split {
            class: "sum",
            lead: "<th>run</th>".into(),
            heads: (0..12).map(|i| format!("<th>h{i}</th>")).collect(),
            rows: vec![(
                "<td>a</td>".into(),
                (0..12).map(|i| format!("<td>c{i}</td>")).collect(),
            )],
        };
        let mut o = String::new();
        t.write(&mut o);
        assert_eq!(o.matches("<table class=\"sum\">").count(), 3);
        assert_eq!(o.matches("<th>run</th>").count(), 3);
        assert_eq!(o.matches("<td>a</td>").count(), 3);
        let last = &o[o.rfind("<table").unwrap()..];
        assert!(last.contains("<th>h10</th><th>h11</th></tr>") && last.contains("c11"));
        // No item columns: one table with the lead column only.
        let mut o = String::new();
        Split {
            class: "",
            lead: "<th>run</th>".into(),
            heads: vec![],
            rows: vec![("<td>a</td>".into(), vec![])],
        }
        .write(&mut o);
        assert_eq!(o.matches("<table>").count(), 1);
    }
}
