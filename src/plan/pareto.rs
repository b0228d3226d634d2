//! The Pareto front, once for the planner's layouts and the decision's rows: a row is on the
//! front when no other row is at least as good on every figure and better on one. What
//! "better" means per figure (higher, lower, within a tolerance, not known) stays with the
//! caller, which says it as an [`Ordering`] per figure.

use std::cmp::Ordering;

/// Whether a row dominates another, from how it compares with it on each figure (`Greater`:
/// better; `None`: a figure one of them lacks, left out): never worse, and better on one.
pub fn dominates(figures: impl IntoIterator<Item = Option<Ordering>>) -> bool {
    let mut better = false;
    for f in figures {
        match f {
            Some(Ordering::Less) => return false,
            Some(Ordering::Greater) => better = true,
            _ => {}
        }
    }
    better
}

/// For each row, the name of the first other row (in `rows`' order) that dominates it; `None`
/// for the rows on the front. `dominates(b, a)`: `b` dominates `a`.
pub fn dominated_by<T>(
    rows: &[T],
    name: impl Fn(&T) -> &str,
    dominates: impl Fn(&T, &T) -> bool,
) -> Vec<Option<String>> {
    rows.iter()
        .map(|a| {
            rows.iter()
                .find(|b| name(b) != name(a) && dominates(b, a))
                .map(|b| name(b).to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_dominating_row_is_named_and_the_front_is_not() {
        // (name, usable, speed): higher is better on both.
        let rows = [("a", 1, 1), ("b", 2, 2), ("c", 3, 1), ("d", 2, 2)];
        let by = dominated_by(
            &rows,
            |r| r.0,
            |b, a| dominates([Some(b.1.cmp(&a.1)), Some(b.2.cmp(&a.2))]),
        );
        assert_eq!(
            by,
            [Some("b".to_string()), None, None, None],
            "equal rows do not dominate each other"
        );
        assert!(!dominates([Some(Ordering::Equal), None]));
        assert!(dominates([None, Some(Ordering::Greater)]));
        assert!(!dominates([Some(Ordering::Greater), Some(Ordering::Less)]));
    }
}
