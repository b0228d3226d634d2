//! Which verdicts turn on the risk model's inputs. P(loss) rests on two figures nobody
//! measured: the unreadable-sector rate (a datasheet's 1e-14 per bit for desktop disks,
//! 1e-15 for enterprise ones; field studies see far fewer) and the annualized failure rate
//! (a fleet average; one batch of disks can fail at half or twice it). A RAID5 rejected at
//! 97% loss under the desktop figure may qualify at 0, and the reader must see that beside
//! the verdict rather than find it by re-running with other flags.
//!
//! The decision is made again under each end of the inputs' plausible range — URE desktop
//! 1e-14, enterprise 1e-15 and 0; AFR half and one and a half times the stated one — and
//! wherever a layout's verdict (qualifies or rejected) or the recommendation differs from the
//! decision's, the value where it changes is found by bisection and named.

use serde::Serialize;

use super::{Assumptions, Row, choose};
use crate::plan::risk::{URE_DESKTOP, URE_ENTERPRISE};

/// A risk input the decision is made again under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    /// Unrecoverable read errors per bit.
    Ure,
    /// Annualized failure rate.
    Afr,
}

/// The factors of the stated AFR the decision is made again at: a batch of disks fails at
/// half or one and a half times the fleet average as easily as at it.
pub const AFR_FACTORS: [f64; 2] = [0.5, 1.5];

/// Bisection steps for the value a verdict changes at: 2^-40 of the range, far below the two
/// significant figures it is printed with.
const STEPS: u32 = 40;

/// A verdict that changes within an input's plausible range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flip {
    /// The layout whose verdict changes; `None`: the recommendation changes.
    pub layout: Option<String>,
    /// The input.
    pub input: Input,
    /// Its value in the decision.
    pub stated: f64,
    /// The end of the range nearest the stated value where the verdict differs.
    pub at: f64,
    /// That end as named (`enterprise 1e-15`, `0`, `x0.5`).
    pub at_name: String,
    /// The value between the stated one and `at` where the verdict changes.
    pub flips_at: f64,
    /// The verdict at `at`: `qualifies`, the first need missed, or for the recommendation
    /// the layout recommended then.
    pub then: String,
}

/// What a decision made under other inputs says: each row's first miss (`None`: it
/// qualifies), and the recommendation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Per row, in order: the reason of its first miss, `None` when it qualifies.
    pub rows: Vec<Option<String>>,
    /// The layout recommended.
    pub best: Option<String>,
}

impl Outcome {
    /// The outcome of rows already decided.
    pub fn of(rows: &[Row], best: Option<String>) -> Outcome {
        Outcome {
            rows: rows
                .iter()
                .map(|r| r.misses.first().map(|m| m.reason.clone()))
                .collect(),
            best,
        }
    }
}

/// The ends of the range of `input` around the stated value, each with its name: below it
/// (nearest first), then above it (nearest first).
fn ends(input: Input, a: &Assumptions) -> [Vec<(f64, String)>; 2] {
    let pts: Vec<(f64, String)> = match input {
        Input::Ure => vec![
            (URE_DESKTOP, format!("desktop {URE_DESKTOP:e}")),
            (URE_ENTERPRISE, format!("enterprise {URE_ENTERPRISE:e}")),
            (0.0, "0".into()),
        ],
        Input::Afr => AFR_FACTORS
            .iter()
            .map(|f| (a.afr * f, format!("x{f}")))
            .collect(),
    };
    let stated = value(input, a);
    let mut below: Vec<_> = pts.iter().filter(|p| p.0 < stated).cloned().collect();
    let mut above: Vec<_> = pts.into_iter().filter(|p| p.0 > stated).collect();
    below.sort_by(|x, y| y.0.total_cmp(&x.0));
    above.sort_by(|x, y| x.0.total_cmp(&y.0));
    [below, above]
}

fn value(input: Input, a: &Assumptions) -> f64 {
    match input {
        Input::Ure => a.ure,
        Input::Afr => a.afr,
    }
}

/// `a` with `input` set to `v`.
pub fn with(input: Input, a: &Assumptions, v: f64) -> Assumptions {
    let mut b = a.clone();
    match input {
        Input::Ure => b.ure = v,
        Input::Afr => b.afr = v,
    }
    b
}

/// The value between `same` (where `key` matches the decision) and `differs` where it stops
/// matching: geometric steps when both are above 0 (the inputs span decades), else halves.
fn bisect(mut same: f64, mut differs: f64, changed: &dyn Fn(f64) -> bool) -> f64 {
    for _ in 0..STEPS {
        let mid = if same > 0.0 && differs > 0.0 {
            (same * differs).sqrt()
        } else {
            f64::midpoint(same, differs)
        };
        if changed(mid) {
            differs = mid;
        } else {
            same = mid;
        }
    }
    differs
}

/// One thing whose verdict may change: a row (by index) or the recommendation.
#[derive(Clone, Copy)]
enum Item {
    Row(usize),
    Best,
}

fn key(o: &Outcome, item: Item) -> Option<&str> {
    match item {
        // A row's verdict is whether it qualifies, not which need it misses first.
        Item::Row(i) => o.rows[i].as_ref().map(|_| "rejected"),
        Item::Best => o.best.as_deref(),
    }
}

/// The verdicts that change within the inputs' ranges. `remake` decides again under other
/// assumptions; `now` is the decision's own outcome; `names` the rows' layouts.
pub fn flips(
    a: &Assumptions,
    now: &Outcome,
    names: &[String],
    remake: &dyn Fn(&Assumptions) -> Outcome,
) -> Vec<Flip> {
    let mut out = Vec::new();
    let items: Vec<Item> = (0..names.len())
        .map(Item::Row)
        .chain([Item::Best])
        .collect();
    for input in [Input::Ure, Input::Afr] {
        let stated = value(input, a);
        for side in ends(input, a) {
            let outcomes: Vec<Outcome> = side
                .iter()
                .map(|(v, _)| remake(&with(input, a, *v)))
                .collect();
            for &item in &items {
                let Some(k) = outcomes.iter().position(|o| key(o, item) != key(now, item)) else {
                    continue;
                };
                // Nothing new when the recommendation is lost: its row's flip says why.
                if matches!(item, Item::Best) && outcomes[k].best.is_none() {
                    continue;
                }
                let from = if k == 0 { stated } else { side[k - 1].0 };
                let changed = |v: f64| key(&remake(&with(input, a, v)), item) != key(now, item);
                let (at, at_name) = side[k].clone();
                out.push(Flip {
                    layout: match item {
                        Item::Row(i) => Some(names[i].clone()),
                        Item::Best => None,
                    },
                    input,
                    stated,
                    at,
                    at_name,
                    flips_at: bisect(from, at, &changed),
                    then: match item {
                        Item::Row(i) => outcomes[k].rows[i]
                            .clone()
                            .unwrap_or_else(|| "qualifies".into()),
                        Item::Best => outcomes[k].best.clone().unwrap_or_default(),
                    },
                });
            }
        }
    }
    out
}

/// An input's value as printed: `2.3e-15/bit`, `1.86%` (as the notes print the AFR).
fn show(input: Input, v: f64) -> String {
    match input {
        Input::Ure if v <= 0.0 => "0".into(),
        Input::Ure => format!("{v:.1e}/bit"),
        Input::Afr => format!("{:.2}%", v * 100.0),
    }
}

fn input_name(input: Input) -> &'static str {
    match input {
        Input::Ure => "URE",
        Input::Afr => "AFR",
    }
}

/// One flip in words: `md-raid5-44+1s qualifies at URE below 2.3e-15/bit`, `md-raid6-43+2s
/// is rejected at AFR above 2.1% (at x1.5: loss 5y 1.2% > 1.0%)`.
fn words(f: &Flip) -> String {
    let name = input_name(f.input);
    // A verdict that changes only at the end itself has no threshold to name.
    let when = if f.flips_at == f.at {
        format!("at {name} {}", f.at_name)
    } else {
        let dir = if f.flips_at < f.stated {
            "below"
        } else {
            "above"
        };
        format!("at {name} {dir} {}", show(f.input, f.flips_at))
    };
    match &f.layout {
        Some(l) if f.then == "qualifies" => format!("{l} qualifies {when}"),
        Some(l) => format!("{l} is rejected {when} (at {}: {})", f.at_name, f.then),
        None => format!("{} is recommended {when}", f.then),
    }
}

/// The line beside the verdict, when a verdict changes within the inputs' ranges (`None`:
/// none does, and nothing is printed).
pub fn line(flips: &[Flip], a: &Assumptions) -> Option<String> {
    if flips.is_empty() {
        return None;
    }
    let parts: Vec<String> = flips.iter().map(words).collect();
    Some(format!(
        "Turns on the risk inputs (stated URE {}, AFR {}): {}.",
        show(Input::Ure, a.ure),
        show(Input::Afr, a.afr),
        parts.join("; ")
    ))
}

/// Re-decides the rows' verdicts and the recommendation from rows built under other
/// assumptions, as the decision does.
pub fn outcome(mut rows: Vec<Row>, lab: &super::LabFacts, spec: &super::DecideSpec) -> Outcome {
    for r in &mut rows {
        r.misses = choose::misses(r, lab, spec);
    }
    let pick = choose::recommend(&rows, spec.prefer.unwrap_or_default());
    Outcome::of(&rows, pick.best)
}
