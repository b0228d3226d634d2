//! The choice: which needs each layout misses, the Pareto front, the recommendation and its
//! runner-up, and what to relax when nothing qualifies.
//!
//! Ties within noise are ties. Two speeds are told apart only when the ratio of their medians
//! is significant by the compare statistics (`stats::ratio`: the delta-method interval excludes
//! 1; with a single trial, when they are more than [`crate::stats::HIGH_CV`] apart); two
//! capacities at the latency target when their intervals do not overlap; two usable
//! capacities when more than [`USABLE_TIE`] apart; two modelled loss probabilities when more
//! than [`LOSS_TIE`] apart (a model's inputs are not known better than that). Within a tie
//! the choice falls to the next figure in the preference's order.

use std::cmp::Ordering;

use super::{DecideError, LabFacts, LayoutFacts, Miss, Relax, Row, format_probability};
use crate::sample::layout_record::VERIFIED_TEXT;
use crate::spec::decide::{Accept, DecideSpec, Needs, Prefer, SpeedUnit};
use crate::units::{format_bytes_si, format_rate};

/// Usable capacities closer than this (relative) are a tie.
pub const USABLE_TIE: f64 = 0.005;

/// Loss probabilities within this factor of each other are a tie.
pub const LOSS_TIE: f64 = 1.1;

/// A figure layouts are compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// P(loss 5y), lower is better.
    Safety,
    /// Usable bytes at the real size.
    Usable,
    /// The decision workload's headline.
    Speed,
    /// IOPS at the latency target.
    Slo,
}

impl Axis {
    /// The figure's name in sentences.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Safety => "P(loss 5y)",
            Axis::Usable => "usable",
            Axis::Speed => "speed",
            Axis::Slo => "capacity at SLO",
        }
    }

    fn value(self, r: &Row) -> Option<f64> {
        match self {
            Axis::Safety => r.loss_5y.as_ref().map(|f| f.value),
            Axis::Usable => r.usable.as_ref().map(|f| f.value),
            Axis::Speed => r.speed.as_ref().map(|s| s.figure.value),
            Axis::Slo => r.capacity_at_slo.as_ref().map(|f| f.value),
        }
    }

    /// The row's figure as a sentence shows it.
    pub fn show(self, r: &Row) -> String {
        match self {
            Axis::Safety => r
                .loss_5y
                .as_ref()
                .map_or_else(|| "-".into(), |f| format_probability(f.value)),
            Axis::Usable => r
                .usable
                .as_ref()
                .map_or_else(|| "-".into(), |f| format_bytes_si(f.value as u64)),
            Axis::Speed => r.speed.as_ref().map_or_else(
                || "-".into(),
                |s| format!("{} {}", format_rate(s.figure.value), s.unit),
            ),
            Axis::Slo => r
                .capacity_at_slo
                .as_ref()
                .map_or_else(|| "-".into(), |f| format!("{} IOPS", format_rate(f.value))),
        }
    }

    /// The axes in the order a preference decides by: the preferred figure, then the others.
    pub fn order(prefer: Prefer) -> [Axis; 4] {
        match prefer {
            Prefer::Safety => [Axis::Safety, Axis::Usable, Axis::Speed, Axis::Slo],
            Prefer::Usable => [Axis::Usable, Axis::Safety, Axis::Speed, Axis::Slo],
            Prefer::Speed => [Axis::Speed, Axis::Safety, Axis::Usable, Axis::Slo],
            Prefer::CapacityAtSlo => [Axis::Slo, Axis::Safety, Axis::Usable, Axis::Speed],
        }
    }
}

/// Whether two speeds are a tie by the compare statistics.
fn speed_tied(a: &Row, b: &Row) -> bool {
    let (Some(sa), Some(sb)) = (&a.speed, &b.speed) else {
        return false;
    };
    match crate::stats::ratio(&sa.summary, &sb.summary) {
        Some(r) => match r.significant {
            Some(s) => !s,
            None => (r.value - 1.0).abs() < crate::stats::HIGH_CV,
        },
        None => sa.summary.median == sb.summary.median,
    }
}

/// How `a` stands against `b` on `axis`: `Greater` is better, `Equal` a tie within noise;
/// `None` when either lacks the figure.
pub fn compare(axis: Axis, a: &Row, b: &Row) -> Option<Ordering> {
    let (x, y) = (axis.value(a)?, axis.value(b)?);
    let tied = match axis {
        Axis::Usable => (x - y).abs() <= USABLE_TIE * x.max(y),
        Axis::Safety => {
            let (lo, hi) = (x.min(y), x.max(y));
            hi <= 0.0 || (lo > 0.0 && hi / lo <= LOSS_TIE)
        }
        Axis::Speed => speed_tied(a, b),
        Axis::Slo => {
            let iv = |r: &Row| {
                r.capacity_at_slo
                    .as_ref()
                    .and_then(|f| f.interval)
                    .unwrap_or((axis.value(r).unwrap_or(0.0), axis.value(r).unwrap_or(0.0)))
            };
            let ((alo, ahi), (blo, bhi)) = (iv(a), iv(b));
            alo <= bhi && blo <= ahi
        }
    };
    if tied {
        return Some(Ordering::Equal);
    }
    let o = x.partial_cmp(&y)?;
    Some(if axis == Axis::Safety { o.reverse() } else { o })
}

/// Checks the needs against what the lab stored, and picks the decision's workload: the one
/// named, else the first `min` workload, else the lab's first.
pub fn check_needs(lab: &LabFacts, spec: &DecideSpec) -> Result<Option<String>, DecideError> {
    let mut known: Vec<(&str, SpeedUnit)> = Vec::new();
    for l in &lab.layouts {
        for w in &l.workloads {
            if !known.iter().any(|(n, _)| *n == w.name) {
                known.push((&w.name, w.unit));
            }
        }
    }
    let unknown = |field: String, w: &str| DecideError::UnknownWorkload {
        field,
        workload: w.to_string(),
        lab: lab.lab_id.clone(),
        known: known.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
    };
    for m in &spec.needs.min {
        let field = format!("min.{}", m.workload);
        let Some((_, unit)) = known.iter().find(|(n, _)| *n == m.workload) else {
            return Err(unknown(field, &m.workload));
        };
        if let Some(u) = m.unit.filter(|u| u != unit) {
            return Err(DecideError::Unit {
                field,
                given: u.label(),
                unit: unit.label(),
                example: format!("{}={}{}", m.workload, format_rate(m.value), unit.label()),
            });
        }
    }
    if let Some(w) = &spec.workload {
        if !known.iter().any(|(n, _)| n == w) {
            return Err(unknown("workload".into(), w));
        }
    }
    let has_slo = lab
        .layouts
        .iter()
        .any(|l| l.workloads.iter().any(|w| w.slo.is_some()));
    let wants_slo = spec.needs.min_capacity_at_slo.is_some();
    if (wants_slo || spec.prefer == Some(Prefer::CapacityAtSlo)) && !has_slo {
        return Err(DecideError::NotMeasured {
            field: if wants_slo {
                "min_capacity_at_slo"
            } else {
                "prefer"
            }
            .into(),
            why: format!(
                "lab {} measured no capacity at a latency target: run it with [workloads] slo = \"p99<=5ms\"",
                lab.lab_id
            ),
        });
    }
    let wants_loss = spec.needs.max_loss_1y.is_some() || spec.needs.max_loss_5y.is_some();
    let rebuilt = lab.layouts.iter().any(|l| l.rebuild.is_some());
    if wants_loss && !rebuilt && !spec.disk.any() && spec.disk_from.is_none() {
        return Err(DecideError::NotMeasured {
            field: if spec.needs.max_loss_5y.is_some() {
                "max_loss_5y"
            } else {
                "max_loss_1y"
            }
            .into(),
            why: format!(
                "lab {} timed no rebuild and no disk speed is given: P(data loss) needs a rebuild time (--disk-write-mbps, --disk-from, or a lab with rebuild = true)",
                lab.lab_id
            ),
        });
    }
    Ok(spec
        .workload
        .clone()
        .or_else(|| spec.needs.min.first().map(|m| m.workload.clone()))
        .or_else(|| known.first().map(|(n, _)| (*n).to_string())))
}

fn miss(need: &str, reason: String, have: Option<(f64, String)>, want: (f64, String)) -> Miss {
    Miss {
        need: need.to_string(),
        reason,
        have: have.as_ref().map(|h| h.0),
        want: Some(want.0),
        have_text: have.map(|h| h.1),
        want_text: Some(want.1),
    }
}

/// The needs a row misses, each with its reason.
pub fn misses(r: &Row, lab: &LabFacts, spec: &DecideSpec) -> Vec<Miss> {
    let n = &spec.needs;
    let mut out = Vec::new();
    if let Some(min) = n.min_usable {
        let want = (min as f64, format_bytes_si(min));
        match &r.usable {
            Some(u) if u.value >= min as f64 => {}
            Some(u) => {
                let have = format_bytes_si(u.value as u64);
                out.push(miss(
                    "min_usable",
                    format!("usable {have} < {}", want.1),
                    Some((u.value, have)),
                    want,
                ));
            }
            None => out.push(miss("min_usable", "usable not measured".into(), None, want)),
        }
    }
    for (need, label, max, fig) in [
        ("max_loss_1y", "loss 1y", n.max_loss_1y, &r.loss_1y),
        ("max_loss_5y", "loss 5y", n.max_loss_5y, &r.loss_5y),
    ] {
        let Some(max) = max else { continue };
        let want = (max, format_probability(max));
        match fig {
            Some(f) if f.value <= max => {}
            Some(f) => {
                let have = format_probability(f.value);
                out.push(miss(
                    need,
                    format!("{label} {have} > {}", want.1),
                    Some((f.value, have)),
                    want,
                ));
            }
            None => out.push(miss(
                need,
                format!("{label} not modelled (the planner cannot model this layout)"),
                None,
                want,
            )),
        }
    }
    if let Some(min) = n.min_capacity_at_slo {
        let want = (min, format!("{} IOPS", format_rate(min)));
        match &r.capacity_at_slo {
            Some(c) if c.value >= min => {}
            Some(c) => {
                let have = format!("{} IOPS", format_rate(c.value));
                out.push(miss(
                    "min_capacity_at_slo",
                    format!("capacity at SLO {have} < {}", want.1),
                    Some((c.value, have)),
                    want,
                ));
            }
            None => out.push(miss(
                "min_capacity_at_slo",
                "capacity at SLO not measured".into(),
                None,
                want,
            )),
        }
    }
    let facts = lab.layouts.iter().find(|l| l.name == r.name);
    for m in &n.min {
        let wf = facts.and_then(|l| l.workload(&m.workload));
        let unit = wf.map_or("", |w| w.unit.label());
        let want = (m.value, format!("{} {unit}", format_rate(m.value)));
        let need = format!("min.{}", m.workload);
        match wf.and_then(|w| w.healthy.as_ref()) {
            Some(s) if s.median >= m.value => {}
            Some(s) => {
                let have = format!("{} {unit}", format_rate(s.median));
                let noise = if s.ci.is_some_and(|c| c.contains(m.value)) {
                    " (within the trials' interval)"
                } else {
                    ""
                };
                out.push(miss(
                    &need,
                    format!("{} {have} < {}{noise}", m.workload, want.1),
                    Some((s.median, have)),
                    want,
                ));
            }
            None => out.push(miss(
                &need,
                format!("{} not measured", m.workload),
                None,
                want,
            )),
        }
    }
    out.extend(loss_misses(r, facts, spec));
    out
}

/// The losses that rule a layout out: a failed integrity verdict, files silently wrong under
/// a lab fault (unless accepted), a power cut that lost durable writes.
fn loss_misses(r: &Row, facts: Option<&LayoutFacts>, spec: &DecideSpec) -> Vec<Miss> {
    let mut out = Vec::new();
    let losses = facts.and_then(|l| l.losses.as_ref());
    let silent = facts.and_then(|l| silent_miss(l, spec));
    // A layout whose only loss is files silently wrong is rejected for that, by its own
    // reason (and kept when it is accepted); one that also lost files to errors keeps the
    // integrity verdict's rejection.
    let only_silent = losses.is_some_and(|l| l.silent > 0 && l.unreadable == 0);
    if let Some(v) = r
        .integrity
        .as_deref()
        .filter(|v| *v != VERIFIED_TEXT && !only_silent)
    {
        out.push(Miss {
            need: "integrity".into(),
            reason: format!("integrity: {v}"),
            have: None,
            want: None,
            have_text: None,
            want_text: None,
        });
    }
    out.extend(silent);
    // A power cut that lost what the layout had acknowledged as durable (or the write hole:
    // a file read back wrong without an error) is a loss like a failed integrity check.
    if let Some(v) = r.power.as_deref().filter(|_| r.power_lost) {
        out.push(Miss {
            need: "power".into(),
            reason: format!("power cuts: {v}"),
            have: None,
            want: None,
            have_text: None,
            want_text: None,
        });
    }
    out
}

/// The pooling layer in a few words (`md raid5 x3`, `btrfs raid1 x2`, `zfs raidz1 x3`), to
/// name a layout's redundancy beside a loss; the description when the stack is not recorded.
fn pool_words(l: &LayoutFacts) -> String {
    use crate::sample::layout_record::Layer;
    let pool = l.stack.iter().find_map(|x| match x {
        Layer::Md { level, members, .. } => Some(format!("md {level} x{members}")),
        Layer::Btrfs { data, members, .. } => Some(format!("btrfs {data} x{members}")),
        Layer::Zfs { vdev, width, .. } => Some(format!("zfs {vdev} x{width}")),
        Layer::Disk => Some("one disk".into()),
        _ => None,
    });
    let over: Vec<&str> = l
        .stack
        .iter()
        .filter_map(|x| match x {
            Layer::Member { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    match pool {
        Some(p) if over.is_empty() => p,
        Some(p) => format!("{p} over {}", over.join(" over ")),
        None => l.description.clone(),
    }
}

/// The need a layout misses when a lab fault returned wrong bytes without an error
/// (`silent corruption: 1 file silently wrong under a corrupt fault (md raid5 x3)`), unless the
/// needs accept it.
fn silent_miss(l: &LayoutFacts, spec: &DecideSpec) -> Option<Miss> {
    let loss = l.losses.as_ref().filter(|x| x.silent > 0)?;
    if spec.needs.accept.contains(&Accept::SilentCorruption) {
        return None;
    }
    let files = format!(
        "{} file{}",
        loss.silent,
        if loss.silent == 1 { "" } else { "s" }
    );
    let under = match loss.under.as_slice() {
        [] => String::new(),
        [k] => format!(
            " under {} {k} fault",
            if k.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            }
        ),
        ks => format!(" under {} faults", ks.join(" and ")),
    };
    Some(Miss {
        need: "silent_corruption".into(),
        reason: format!(
            "silent corruption: {files} silently wrong{under} ({})",
            pool_words(l)
        ),
        have: Some(loss.silent as f64),
        want: Some(0.0),
        have_text: Some(files),
        want_text: Some("0 files".into()),
    })
}

/// Whether `b` dominates `a`: at least as good on every figure both have (ties count as
/// equal) and better on one.
fn dominates(b: &Row, a: &Row) -> bool {
    crate::plan::pareto::dominates(
        [Axis::Usable, Axis::Safety, Axis::Speed, Axis::Slo].map(|axis| compare(axis, b, a)),
    )
}

/// Marks the Pareto front and, for every other row, the first row dominating it.
pub fn mark_pareto(rows: &mut [Row]) {
    let by = crate::plan::pareto::dominated_by(rows, |r| &r.name, dominates);
    for (r, by) in rows.iter_mut().zip(by) {
        r.pareto = by.is_none();
        r.dominated_by = by;
    }
}

/// What [`recommend`] chose.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pick {
    /// The recommended layout.
    pub best: Option<String>,
    /// The next best.
    pub runner_up: Option<String>,
    /// Layouts tied with the best on the preferred figure.
    pub tied: Vec<String>,
    /// The figure the choice was finally made on (the preferred one unless tied).
    pub decided_on: Option<Axis>,
}

/// The best of `cands` by the axes in order: the rows tied with the top on the first axis go
/// on to the next. Returns its index, the rows tied on the first axis, and the deciding axis.
fn best_of(cands: &[&Row], axes: &[Axis]) -> Option<(usize, Vec<usize>, Axis)> {
    let mut set: Vec<usize> = (0..cands.len()).collect();
    let mut tied_first = Vec::new();
    let mut decided = axes[0];
    for (i, &axis) in axes.iter().enumerate() {
        decided = axis;
        let top = set.iter().copied().max_by(|&a, &b| {
            let (x, y) = (axis.value(cands[a]), axis.value(cands[b]));
            let o = match (x, y) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (None, None) => Ordering::Equal,
            };
            let o = if axis == Axis::Safety && x.is_some() && y.is_some() {
                o.reverse()
            } else {
                o
            };
            // On equal figures the earlier layout wins: max_by keeps the last maximum.
            o.then(b.cmp(&a))
        })?;
        let keep: Vec<usize> = set
            .iter()
            .copied()
            .filter(|&r| {
                r == top
                    || compare(axis, cands[r], cands[top]) == Some(Ordering::Equal)
                    || (axis.value(cands[top]).is_none() && axis.value(cands[r]).is_none())
            })
            .collect();
        if i == 0 {
            tied_first = keep.clone();
        }
        set = keep;
        if set.len() == 1 {
            break;
        }
    }
    let best = *set.first()?;
    tied_first.retain(|&r| r != best);
    Some((best, tied_first, decided))
}

/// The recommendation among the qualifying rows, by the preference, and the runner-up.
pub fn recommend(rows: &[Row], prefer: Prefer) -> Pick {
    let axes = Axis::order(prefer);
    let ok: Vec<&Row> = rows.iter().filter(|r| r.qualifies()).collect();
    let Some((best, tied, decided)) = best_of(&ok, &axes) else {
        return Pick::default();
    };
    let rest: Vec<&Row> = ok
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != best)
        .map(|(_, r)| *r)
        .collect();
    Pick {
        best: Some(ok[best].name.clone()),
        runner_up: best_of(&rest, &axes).map(|(i, _, _)| rest[i].name.clone()),
        tied: tied.iter().map(|&i| ok[i].name.clone()).collect(),
        decided_on: Some(decided),
    }
}

fn relax_of(m: &Miss, layout: &str) -> Option<Relax> {
    let (have, want) = (m.have?, m.want?);
    if want <= 0.0 {
        return None;
    }
    Some(Relax {
        need: m.need.clone(),
        from: m.want_text.clone()?,
        to: m.have_text.clone()?,
        by_pct: (have - want).abs() / want * 100.0,
        layout: layout.to_string(),
    })
}

/// When nothing qualifies: for each need, the smallest relaxation of it alone that lets a
/// layout qualify (smallest first); when no layout misses only one need, every relaxation the
/// layout needing the least needs. Misses that cannot be relaxed (lost data, a figure not
/// measured) are never offered.
pub fn relax(rows: &[Row], _needs: &Needs) -> Vec<Relax> {
    let all =
        |r: &Row| -> Option<Vec<Relax>> { r.misses.iter().map(|m| relax_of(m, &r.name)).collect() };
    let mut single: Vec<Relax> = Vec::new();
    for r in rows.iter().filter(|r| r.misses.len() == 1) {
        if let Some(mut v) = all(r) {
            let x = v.remove(0);
            match single.iter_mut().find(|s| s.need == x.need) {
                Some(s) if s.by_pct > x.by_pct => *s = x,
                Some(_) => {}
                None => single.push(x),
            }
        }
    }
    if !single.is_empty() {
        single.sort_by(|a, b| a.by_pct.total_cmp(&b.by_pct));
        return single;
    }
    rows.iter()
        .filter_map(all)
        .filter(|v| !v.is_empty())
        .min_by(|a, b| {
            let worst = |v: &Vec<Relax>| v.iter().map(|x| x.by_pct).fold(0.0, f64::max);
            worst(a).total_cmp(&worst(b))
        })
        .unwrap_or_default()
}

/// "3% slower than raid5 on seq-write-1m (not significant)", when another layout is faster.
fn speed_clause(rows: &[Row], best: &Row) -> Option<String> {
    let s = best.speed.as_ref()?;
    let fastest = rows
        .iter()
        .filter(|r| r.name != best.name)
        .filter_map(|r| Some((r, r.speed.as_ref()?)))
        .max_by(|a, b| a.1.figure.value.total_cmp(&b.1.figure.value))?;
    if fastest.1.figure.value <= s.figure.value {
        return None;
    }
    let r = crate::stats::ratio(&s.summary, &fastest.1.summary)?;
    let verdict = match r.significant {
        Some(true) => "significant",
        Some(false) => "not significant",
        None => "one trial: no interval",
    };
    Some(format!(
        "{:.0}% slower than {} on {} ({verdict})",
        (1.0 - r.value) * 100.0,
        fastest.0.name,
        s.workload
    ))
}

/// The needs a qualifying row meets, with its figures.
fn met(r: &Row, needs: &Needs) -> Vec<String> {
    let mut v = Vec::new();
    if let (Some(min), Some(u)) = (needs.min_usable, &r.usable) {
        v.push(format!(
            "usable {} >= {}",
            format_bytes_si(u.value as u64),
            format_bytes_si(min)
        ));
    }
    for (label, max, fig) in [
        ("loss 1y", needs.max_loss_1y, &r.loss_1y),
        ("loss 5y", needs.max_loss_5y, &r.loss_5y),
    ] {
        if let (Some(max), Some(f)) = (max, fig) {
            v.push(format!(
                "{label} {} <= {}",
                format_probability(f.value),
                format_probability(max)
            ));
        }
    }
    if let (Some(min), Some(c)) = (needs.min_capacity_at_slo, &r.capacity_at_slo) {
        v.push(format!(
            "capacity at SLO {} >= {} IOPS",
            format_rate(c.value),
            format_rate(min)
        ));
    }
    if !needs.min.is_empty() {
        v.push(format!(
            "the minimum speed on {}",
            needs
                .min
                .iter()
                .map(|m| m.workload.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    v
}

/// The recommendation in one sentence with its reasons, the runner-up and the rejections; or,
/// when nothing qualifies, what to relax.
pub fn sentence(
    rows: &[Row],
    pick: &Pick,
    prefer: Prefer,
    relax: &[Relax],
    needs: &Needs,
) -> String {
    let row = |n: &str| rows.iter().find(|r| r.name == n);
    let Some(best) = pick.best.as_deref().and_then(row) else {
        let mut s = "No layout meets every need".to_string();
        if relax.is_empty() {
            s.push_str(" and no relaxation of the needs alone would change that (see the reasons)");
        } else {
            let combined = relax.len() > 1 && relax.iter().all(|r| r.layout == relax[0].layout);
            let parts: Vec<String> = relax
                .iter()
                .map(|r| {
                    format!(
                        "{} from {} to {} ({:.0}%{})",
                        r.need,
                        r.from,
                        r.to,
                        r.by_pct,
                        if combined {
                            String::new()
                        } else {
                            format!(": {} would qualify", r.layout)
                        }
                    )
                })
                .collect();
            s.push_str("; relax ");
            s.push_str(&parts.join(if combined { " and " } else { ", or " }));
            if combined {
                s.push_str(&format!(" for {} to qualify", relax[0].layout));
            }
        }
        s.push('.');
        return s;
    };
    let axis = Axis::order(prefer)[0];
    let mut parts = vec![format!("{} is recommended", best.name)];
    let m = met(best, needs);
    if !m.is_empty() {
        parts.push(format!("meets {}", m.join(", ")));
    }
    let others = rows.iter().filter(|r| r.qualifies()).count() > 1;
    if !others {
        parts.push("the only layout that qualifies".into());
    } else if pick.tied.is_empty() {
        let word = match axis {
            Axis::Safety => "lowest",
            Axis::Usable => "most",
            Axis::Speed => "fastest",
            Axis::Slo => "highest",
        };
        parts.push(format!(
            "{word} {} of those that qualify ({})",
            axis.name(),
            axis.show(best)
        ));
    } else {
        parts.push(format!(
            "tied on {} with {} (within noise), chosen on {}",
            axis.name(),
            pick.tied.join(", "),
            pick.decided_on.unwrap_or(axis).name()
        ));
    }
    if axis != Axis::Speed {
        parts.extend(speed_clause(rows, best));
    }
    if let Some(ru) = pick.runner_up.as_deref().and_then(row) {
        parts.push(format!(
            "runner-up {} ({} {})",
            ru.name,
            axis.name(),
            axis.show(ru)
        ));
    }
    for r in rows.iter().filter(|r| !r.qualifies()) {
        parts.push(format!("{} rejected: {}", r.name, r.misses[0].reason));
    }
    let mut s = parts.join("; ");
    s.push('.');
    s
}
