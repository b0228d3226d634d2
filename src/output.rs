//! What commands print, the same way for every command: the aligned text table of the
//! terminal renderers. Below every stage, so a renderer anywhere (a report, the multi-host
//! table, `iolab list`) draws its table with it.

/// Renders rows as an aligned text table: the first `left` columns left-aligned, the rest
/// right-aligned, two spaces between columns.
pub fn text_table(head: &[String], rows: &[Vec<String>], left: usize) -> String {
    let ncol = head.len();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate().take(ncol) {
            let pad = w[i] - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if i < left {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(head, &mut out);
    let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    line(&rule, &mut out);
    for r in rows {
        line(r, &mut out);
    }
    out
}
