//! The answer of a sweep (a layout with `vary`, expanded into layouts named
//! `NAME[chunk=64KiB,stripe_cache_size=256]`): per workload, each combination's headline figure
//! with its interval against the best, and per varied key one sentence of what it is worth
//! ("chunk 256KiB: seq-write-1m 1.8x 64KiB (significant); rand-read-4k ~ (not significant)").
//!
//! It is read off a [`Comparison`] by the layouts' names alone, so a lab's terminal output and
//! a report of its stored runs give the same answer. "Significant" is the comparison's own
//! test ([`crate::stats::ratio()`]: the ratio's 95% interval excludes 1). A difference that is
//! not significant does not pick a winner: among the combinations the fastest is not
//! significantly better than, the one the sweep lists first (its first value of every key —
//! list the default first) is named best.

use serde::{Deserialize, Serialize};

use super::compare::Comparison;
use super::{Ratio, Summary, ratio};
use crate::sample::Unit;
use crate::sample::headline::{self, HeadlineKind};
use crate::spec::{Workload, WorkloadKind};

/// One sweep's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The layout's name before the brackets.
    pub layout: String,
    /// The varied keys as the names show them (`chunk`, `stripe_cache_size`), in order.
    pub keys: Vec<String>,
    /// The combinations in the order the sweep expanded them.
    pub combinations: Vec<Combination>,
    /// One table per workload with a headline figure.
    pub tables: Vec<SweepTable>,
    /// One sentence per varied key: its best value and what it is worth per workload.
    pub sentences: Vec<String>,
}

/// One expanded layout of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Combination {
    /// Its column in the comparison.
    pub run: usize,
    /// Its full name (`md6[chunk=64KiB]`).
    pub name: String,
    /// Its value of each key, in the order of [`Sweep::keys`].
    pub values: Vec<String>,
}

/// One workload's figures across a sweep's combinations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepTable {
    /// Workload name.
    pub workload: String,
    /// The headline metric's key (`write.mbps`).
    pub metric: String,
    /// Its unit.
    pub unit: Unit,
    /// Whether more is better (throughput) or less (an open loop's latency).
    pub higher_is_better: bool,
    /// One entry per combination, in [`Sweep::combinations`] order.
    pub entries: Vec<SweepEntry>,
    /// The entry named best (see the module's doc); `None` when no combination has a figure.
    pub best: Option<usize>,
    /// The entry with the best median, when it is not the one named best (the difference
    /// between the two is not significant).
    pub fastest: Option<usize>,
}

/// One combination's figure in a [`SweepTable`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepEntry {
    /// Median and interval over its trials; `None` when it has no figure.
    pub summary: Option<Summary>,
    /// Its ratio to the best entry (none for the best itself).
    pub vs_best: Option<Ratio>,
    /// `~`: not significantly different from the best (the best itself included).
    pub tie: bool,
}

/// A layout name of a sweep split into its base and `key=value` pairs; `None` for a name
/// without them.
pub fn parse_name(name: &str) -> Option<(&str, Vec<(&str, &str)>)> {
    let inner = name.strip_suffix(']')?;
    let open = inner.rfind('[')?;
    let (base, list) = (&inner[..open], &inner[open + 1..]);
    let pairs: Option<Vec<(&str, &str)>> = list.split(',').map(|p| p.split_once('=')).collect();
    let pairs = pairs?;
    (!base.is_empty() && !pairs.is_empty()).then_some((base, pairs))
}

/// The comparison row of a closed-loop workload's throughput figure: MB/s for sequential or
/// large blocks, IOPS for random, creates/s for small files.
pub fn throughput_row(c: &Comparison, w: &Workload) -> Option<usize> {
    let want = match &w.kind {
        WorkloadKind::Io(io) if io.headline_is_bandwidth() => ".mbps",
        WorkloadKind::Io(_) => ".iops",
        WorkloadKind::SmallFiles(_) => "create.ops",
        WorkloadKind::CachedRead(_) => ".mbps",
    };
    c.rows
        .iter()
        .position(|row| row.workload == w.name && row.metric.ends_with(want))
}

/// Each workload's headline row, in suite order: its throughput, or an open loop's p99 from
/// the schedule.
pub fn headline_rows(c: &Comparison, workloads: &[Workload]) -> Vec<usize> {
    workloads
        .iter()
        .filter_map(|w| {
            if headline::kind(w) != HeadlineKind::ScheduleLatency {
                return throughput_row(c, w);
            }
            let o = c.open_loops.iter().find(|o| o.workload == w.name)?;
            let key = o
                .metrics
                .iter()
                .find(|k| k.ends_with(&format!(".{}", headline::SCHED_P99)))?;
            c.rows
                .iter()
                .position(|r| r.workload == w.name && &r.metric == key)
        })
        .collect()
}

/// Every sweep among the comparison's runs (two or more layouts of one base name and the same
/// keys), judged on the headline rows `rows` (indices into `c.rows`).
pub fn answer(c: &Comparison, rows: &[usize]) -> Vec<Sweep> {
    let mut sweeps: Vec<Sweep> = Vec::new();
    for (i, run) in c.runs.iter().enumerate() {
        let name = run.label.as_deref().unwrap_or(&run.header);
        let Some((base, pairs)) = parse_name(name) else {
            continue;
        };
        let keys: Vec<String> = pairs.iter().map(|(k, _)| (*k).to_string()).collect();
        let combo = Combination {
            run: i,
            name: name.to_string(),
            values: pairs.iter().map(|(_, v)| (*v).to_string()).collect(),
        };
        match sweeps
            .iter_mut()
            .find(|s| s.layout == base && s.keys == keys)
        {
            Some(s) => s.combinations.push(combo),
            None => sweeps.push(Sweep {
                layout: base.to_string(),
                keys,
                combinations: vec![combo],
                tables: Vec::new(),
                sentences: Vec::new(),
            }),
        }
    }
    sweeps.retain(|s| s.combinations.len() >= 2);
    for s in &mut sweeps {
        s.tables = rows.iter().filter_map(|&r| table(c, s, r)).collect();
        s.sentences = (0..s.keys.len()).map(|k| sentence(s, k)).collect();
    }
    sweeps
}

/// Whether `a` is a better figure than `b`.
fn better(a: f64, b: f64, higher: bool) -> bool {
    if higher { a > b } else { a < b }
}

/// Among `idx` (entries with a figure, in sweep order), the one named best: the first whose
/// difference to the fastest is not significant; and the fastest (the first of equal medians).
fn pick_best(
    summaries: &[Option<&Summary>],
    idx: &[usize],
    higher: bool,
) -> Option<(usize, usize)> {
    let median = |i: usize| summaries[i].map_or(f64::NAN, |s| s.median);
    let fastest = idx.iter().copied().reduce(|a, b| {
        if better(median(b), median(a), higher) {
            b
        } else {
            a
        }
    })?;
    let top = summaries[fastest]?;
    let best = idx
        .iter()
        .copied()
        .find(|&i| i == fastest || summaries[i].is_some_and(|s| !significant(s, top)))
        .unwrap_or(fastest);
    Some((best, fastest))
}

/// Whether two figures differ significantly (the ratio's 95% interval excludes 1).
fn significant(a: &Summary, b: &Summary) -> bool {
    ratio(a, b).and_then(|r| r.significant) == Some(true)
}

/// One workload's table of a sweep.
fn table(c: &Comparison, s: &Sweep, row: usize) -> Option<SweepTable> {
    let r = c.rows.get(row)?;
    let summaries: Vec<Option<&Summary>> = s
        .combinations
        .iter()
        .map(|k| r.cells.get(k.run)?.as_ref().map(|cell| &cell.summary))
        .collect();
    let with: Vec<usize> = (0..summaries.len())
        .filter(|&i| summaries[i].is_some())
        .collect();
    if with.is_empty() {
        return None;
    }
    let picked = pick_best(&summaries, &with, r.higher_is_better);
    let best_sum = picked.and_then(|(b, _)| summaries[b]);
    let entries = summaries
        .iter()
        .enumerate()
        .map(|(i, sum)| {
            let is_best = picked.is_some_and(|(b, _)| b == i);
            let vs_best = match (sum, best_sum) {
                (Some(x), Some(b)) if !is_best => ratio(x, b),
                _ => None,
            };
            SweepEntry {
                summary: sum.cloned(),
                tie: is_best
                    || (sum.is_some()
                        && vs_best.as_ref().and_then(|v| v.significant) != Some(true)),
                vs_best,
            }
        })
        .collect();
    Some(SweepTable {
        workload: r.workload.clone(),
        metric: r.metric.clone(),
        unit: r.unit,
        higher_is_better: r.higher_is_better,
        entries,
        best: picked.map(|(b, _)| b),
        fastest: picked.and_then(|(b, f)| (b != f).then_some(f)),
    })
}

/// What key `k` is worth in one table: the entries that differ from the table's best only in
/// `k`, and among them the best value, the worst, how much better the best is (as a speed:
/// above 1) and whether that is significant. `None` when fewer than two have a figure.
fn along(s: &Sweep, t: &SweepTable, k: usize) -> Option<Along> {
    let best = &s.combinations[t.best?].values;
    let slice: Vec<usize> = (0..s.combinations.len())
        .filter(|&i| {
            t.entries[i].summary.is_some()
                && s.combinations[i]
                    .values
                    .iter()
                    .zip(best)
                    .enumerate()
                    .all(|(j, (a, b))| j == k || a == b)
        })
        .collect();
    if slice.len() < 2 {
        return None;
    }
    let sums: Vec<Option<&Summary>> = t.entries.iter().map(|e| e.summary.as_ref()).collect();
    let (b, _) = pick_best(&sums, &slice, t.higher_is_better)?;
    let worst = slice
        .iter()
        .copied()
        .reduce(|a, x| match (sums[a], sums[x]) {
            (Some(sa), Some(sx)) if better(sa.median, sx.median, t.higher_is_better) => x,
            _ => a,
        })?;
    let (sb, sw) = (sums[b]?, sums[worst]?);
    let factor = if t.higher_is_better {
        sb.median / sw.median
    } else {
        sw.median / sb.median
    };
    Some(Along {
        best: b,
        worst,
        factor,
        significant: b != worst && significant(sb, sw),
    })
}

/// What one key is worth in one workload ([`along`]).
struct Along {
    /// The entry with the key's best value.
    best: usize,
    /// The entry with its worst.
    worst: usize,
    /// How much better the best is, as a speed (above 1).
    factor: f64,
    /// Whether the difference is significant.
    significant: bool,
}

/// A factor as the sentence prints it: `1.8x`, `1.05x` near 1.
fn factor_text(f: f64) -> String {
    if f.is_finite() && f < 2.0 {
        format!("{f:.2}x")
    } else {
        format!("{f:.1}x")
    }
}

/// The sentence of key `k`: the value that wins where the key matters (the first listed when
/// it matters nowhere), then per workload how much better it is than the worst value, or `~`.
fn sentence(s: &Sweep, k: usize) -> String {
    let value = |i: usize| s.combinations[i].values[k].as_str();
    let found: Vec<(&str, Option<Along>)> = s
        .tables
        .iter()
        .map(|t| (t.workload.as_str(), along(s, t, k)))
        .collect();
    // The value best in most workloads where the key matters.
    let mut votes: Vec<(&str, usize)> = Vec::new();
    for (_, a) in &found {
        if let Some(x) = a.as_ref().filter(|x| x.significant) {
            match votes.iter_mut().find(|(v, _)| *v == value(x.best)) {
                Some((_, n)) => *n += 1,
                None => votes.push((value(x.best), 1)),
            }
        }
    }
    let head = votes
        .iter()
        .fold(None::<(&str, usize)>, |acc, &(v, n)| match acc {
            Some((_, m)) if m >= n => acc,
            _ => Some((v, n)),
        })
        .map_or_else(
            || s.combinations.first().map_or("", |c| c.values[k].as_str()),
            |(v, _)| v,
        );
    let parts: Vec<String> = found
        .iter()
        .map(|(w, a)| match a {
            Some(x) if x.significant => {
                let lead = if value(x.best) == head {
                    String::new()
                } else {
                    format!("{} ", value(x.best))
                };
                format!(
                    "{w} {lead}{} {} (significant)",
                    factor_text(x.factor),
                    value(x.worst)
                )
            }
            Some(_) => format!("{w} ~ (not significant)"),
            None => format!("{w} - (one value measured)"),
        })
        .collect();
    format!("{} {head}: {}", s.keys[k], parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RunStatus;
    use crate::stats::compare::{Cell, CompareRow, ComparedRun};
    use crate::stats::{CiMethod, Summary};

    /// A comparison of `names` (in column order) with one headline row per workload given as
    /// `(workload, metric, unit, trials per run)`.
    fn comparison(names: &[&str], rows: &[(&str, &str, Unit, Vec<Vec<f64>>)]) -> Comparison {
        let runs = names
            .iter()
            .enumerate()
            .map(|(i, n)| ComparedRun {
                id: format!("r{i}"),
                label: Some((*n).to_string()),
                header: (*n).to_string(),
                host: "h".into(),
                target: "/t".into(),
                started_unix_ms: 0,
                status: RunStatus::Complete,
                baseline: i == 0,
                integrity: None,
                power: None,
                cache_failure: None,
                faults: None,
            })
            .collect();
        let rows = rows
            .iter()
            .map(|(w, m, unit, trials)| CompareRow {
                workload: (*w).to_string(),
                metric: (*m).to_string(),
                label: String::new(),
                unit: *unit,
                higher_is_better: unit.higher_is_better(),
                cells: trials
                    .iter()
                    .map(|t| {
                        Summary::of(t).map(|summary| Cell {
                            high_cv: summary.high_cv(),
                            summary,
                            ratio: None,
                        })
                    })
                    .collect(),
            })
            .collect();
        Comparison {
            runs,
            baseline: 0,
            rows,
            cliffs: Vec::new(),
            notes: Vec::new(),
            confidence: 0.95,
            ci_method: CiMethod::StudentT,
            ratio_method: CiMethod::DeltaLogT,
            latency_kinds: Vec::new(),
            open_loops: Vec::new(),
        }
    }

    /// Trials around `m`, +-1%.
    fn around(m: f64) -> Vec<f64> {
        vec![m * 0.99, m, m * 1.01]
    }

    #[test]
    fn names_split_into_base_and_values() {
        assert_eq!(
            parse_name("md6[chunk=64KiB,stripe_cache_size=256]"),
            Some((
                "md6",
                vec![("chunk", "64KiB"), ("stripe_cache_size", "256")]
            ))
        );
        assert_eq!(parse_name("md6"), None);
        assert_eq!(parse_name("md6[chunk]"), None);
        assert_eq!(parse_name("[a=b]"), None);
    }

    /// A 2 x 2 sweep (figures as a TCG lab of md RAID6 recorded them): the table names every
    /// combination, the fastest write is best and 1.8x the 64KiB chunk, reads differ by less
    /// than their noise so the first-listed value is named best and the sentence says `~`.
    #[test]
    fn a_two_by_two_sweep_answers_per_workload_and_key() {
        let names = [
            "md6[chunk=64KiB,stripe_cache_size=256]",
            "md6[chunk=64KiB,stripe_cache_size=4096]",
            "md6[chunk=256KiB,stripe_cache_size=256]",
            "md6[chunk=256KiB,stripe_cache_size=4096]",
            "plain",
        ];
        let c = comparison(
            &names,
            &[
                (
                    "seq-write-1m",
                    "write.mbps",
                    Unit::MBps,
                    vec![
                        around(100.0),
                        around(110.0),
                        around(150.0),
                        around(180.0),
                        around(90.0),
                    ],
                ),
                (
                    "rand-read-4k",
                    "read.iops",
                    Unit::Iops,
                    vec![
                        vec![900.0, 1000.0, 1100.0],
                        vec![950.0, 1000.0, 1150.0],
                        vec![1000.0, 1050.0, 1080.0],
                        vec![880.0, 1020.0, 1120.0],
                        around(500.0),
                    ],
                ),
            ],
        );
        let s = answer(&c, &[0, 1]);
        assert_eq!(s.len(), 1, "one sweep; 'plain' is not part of it");
        let s = &s[0];
        assert_eq!(s.layout, "md6");
        assert_eq!(s.keys, ["chunk", "stripe_cache_size"]);
        assert_eq!(s.combinations.len(), 4);
        assert_eq!(s.combinations[2].values, ["256KiB", "256"]);
        let w = &s.tables[0];
        assert_eq!(w.best, Some(3));
        assert_eq!(w.fastest, None);
        assert!(!w.entries[0].tie && !w.entries[2].tie && w.entries[3].tie);
        let r = w.entries[0].vs_best.as_ref().expect("ratio");
        assert!((r.value - 100.0 / 180.0).abs() < 1e-9);
        let rd = &s.tables[1];
        assert_eq!(
            rd.best,
            Some(0),
            "no read is significantly better: the first is best"
        );
        assert_eq!(rd.fastest, Some(2));
        assert!(rd.entries.iter().all(|e| e.tie));
        assert_eq!(
            s.sentences[0],
            "chunk 256KiB: seq-write-1m 1.64x 64KiB (significant); rand-read-4k ~ (not significant)"
        );
        assert_eq!(
            s.sentences[1],
            "stripe_cache_size 4096: seq-write-1m 1.20x 256 (significant); rand-read-4k ~ (not significant)"
        );
    }

    /// A latency headline (an open loop): lower is better, and the factor is still a speed
    /// (above 1); a key whose best value differs by workload names it per workload.
    #[test]
    fn lower_is_better_and_a_value_per_workload() {
        let names = [
            "z[recordsize=16K]",
            "z[recordsize=128K]",
            "z[recordsize=1M]",
        ];
        let c = comparison(
            &names,
            &[
                (
                    "seq-read",
                    "read.mbps",
                    Unit::MBps,
                    vec![around(100.0), around(300.0), around(400.0)],
                ),
                (
                    "oltp",
                    "read.sched_p99_us",
                    Unit::Micros,
                    vec![around(500.0), around(1000.0), around(2000.0)],
                ),
            ],
        );
        let s = &answer(&c, &[0, 1])[0];
        assert_eq!(s.tables[1].best, Some(0));
        assert_eq!(
            s.sentences[0],
            "recordsize 1M: seq-read 4.0x 16K (significant); oltp 16K 4.0x 1M (significant)"
        );
    }
}
