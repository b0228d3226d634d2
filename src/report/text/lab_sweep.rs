//! A sweep's answer in the terminal: per workload a table of every combination's headline
//! figure with its interval and its ratio to the best (`best`, `~` where the difference is not
//! significant), then one sentence per varied key. The answer itself is `stats::sweep`.

use crate::output::text_table;
use crate::report::compare::{format_estimate, format_ratio};
use crate::stats::sweep::Sweep;

/// Every sweep's tables and sentences, or nothing when the lab had no sweep.
pub fn render(sweeps: &[Sweep]) -> String {
    let mut out = String::new();
    for s in sweeps {
        out.push_str(&format!(
            "\nsweep {} ({}): {} layouts\n",
            s.layout,
            s.keys.join(" x "),
            s.combinations.len()
        ));
        for t in &s.tables {
            out.push_str(&format!(
                "{} {} ({}; median ± 95% interval):\n",
                t.workload,
                t.unit.label(),
                if t.higher_is_better {
                    "higher is better"
                } else {
                    "lower is better"
                }
            ));
            let mut head = s.keys.clone();
            head.extend(["figure".to_string(), "vs best".to_string()]);
            let rows: Vec<Vec<String>> = s
                .combinations
                .iter()
                .zip(&t.entries)
                .enumerate()
                .map(|(i, (c, e))| {
                    let mut row = c.values.clone();
                    row.push(
                        e.summary
                            .as_ref()
                            .map_or_else(|| "-".into(), format_estimate),
                    );
                    row.push(if t.best == Some(i) {
                        "best".into()
                    } else {
                        match &e.vs_best {
                            Some(r) => format!(
                                "{}{}",
                                format_ratio(r),
                                if e.tie && r.significant.is_none() {
                                    " ~"
                                } else {
                                    ""
                                }
                            ),
                            None if e.summary.is_some() => "~".into(),
                            None => "-".into(),
                        }
                    });
                    row
                })
                .collect();
            out.push_str(&text_table(&head, &rows, s.keys.len()));
            if let (Some(f), Some(b)) = (t.fastest, t.best) {
                out.push_str(&format!(
                    "fastest {} is not significantly better than {}: the first listed is named best\n",
                    s.combinations[f].name, s.combinations[b].name
                ));
            }
        }
        for line in &s.sentences {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !sweeps.is_empty() {
        out.push_str(
            "~ = not significantly different from the best at 95% (the ratio's interval holds 1); list a key's default first: a tie names it best\n",
        );
    }
    out
}
