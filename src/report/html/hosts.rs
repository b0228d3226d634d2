//! The many-hosts part of a report: for each `iolab run --hosts` group among the runs (host
//! runs and their aggregate share a `hosts-group <id>` note, see [`crate::hosts::save`]),
//! throughput per second of every host with the aggregate over them, and each host's p99
//! with the straggler flagged by the slow-disk rule `iolab run --hosts` uses.

use crate::report::chart::bar::{Bar, BarChart};
use crate::report::chart::figure::{Figure, FigureKind, per_second_axes};
use crate::report::chart::line::{Line, LineChart};
use crate::report::chart::{self, Embed};
use crate::sample::{LatencyHistogram, RunRecord, TrialSample};
use crate::units::format_latency_ns;

/// One host of a group, for one workload.
#[derive(Clone, Debug)]
pub struct HostView {
    /// As given in `--hosts`.
    pub host: String,
    /// Its run's id.
    pub run_id: String,
    /// Throughput per second of its first trial: (second, IOPS or MB/s).
    pub points: Vec<(f64, f64)>,
    /// p99 of the headline op over all its trials merged, ns.
    pub p99_ns: Option<u64>,
    /// Median headline figure over its trials (what stragglers are judged by).
    pub headline: f64,
    /// Percent below the hosts' median when flagged as a straggler.
    pub slow_pct: Option<f64>,
}

/// One workload of a group.
#[derive(Clone, Debug)]
pub struct HostsWorkload {
    /// Workload name.
    pub name: String,
    /// `IOPS` or `MB/s`.
    pub unit: &'static str,
    /// The hosts, in `--hosts` order.
    pub hosts: Vec<HostView>,
    /// The aggregate run's throughput per second (first trial), when it is in the report.
    pub aggregate: Option<Vec<(f64, f64)>>,
}

/// One `--hosts` run: its group id and workloads.
#[derive(Clone, Debug)]
pub struct HostsView {
    /// The group id of the notes.
    pub group: String,
    /// Workloads, in the order the hosts ran them.
    pub workloads: Vec<HostsWorkload>,
}

/// What a run is in a group: a host (name, position) or the aggregate.
enum Role {
    Host(String, usize),
    Aggregate,
}

/// Reads a run's `hosts-group` note.
fn role(r: &RunRecord) -> Option<(String, Role)> {
    r.notes.iter().find_map(|n| {
        let rest = n.strip_prefix("hosts-group ")?;
        let (group, what) = rest.split_once(": ")?;
        if what.starts_with("aggregate") {
            return Some((group.to_string(), Role::Aggregate));
        }
        let what = what.strip_prefix("host ")?;
        let at = what.rfind(" (")?;
        let pos = what[at + 2..]
            .split(' ')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(usize::MAX);
        Some((group.to_string(), Role::Host(what[..at].to_string(), pos)))
    })
}

/// Host runs named in the notes of aggregates among `runs` (`h0 = run ID`) that are not
/// among `runs` themselves.
pub fn sibling_ids(runs: &[RunRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        let Some(list) = r.notes.iter().find_map(|n| {
            let (_, what) = n.strip_prefix("hosts-group ")?.split_once(": ")?;
            what.strip_prefix("aggregate")?;
            let open = what.find(" (")?;
            what[open + 2..].strip_suffix(')').map(str::to_string)
        }) else {
            continue;
        };
        for id in list
            .split(", ")
            .filter_map(|p| p.split_once(" = run "))
            .map(|x| x.1)
        {
            if !runs.iter().any(|r| r.id == id) && !out.iter().any(|x| x == id) {
                out.push(id.to_string());
            }
        }
    }
    out
}

/// Throughput per second of a trial in the unit of its headline.
fn points(t: &TrialSample, mbps: bool) -> Vec<(f64, f64)> {
    t.series
        .iter()
        .map(|p| {
            let v = if mbps {
                p.bytes as f64 / 1e6
            } else {
                p.ops as f64
            };
            (f64::from(p.t), v)
        })
        .collect()
}

/// A group as found: its id, its host runs (position, name, run) and its aggregate run.
type Group<'a> = (String, Vec<Member<'a>>, Option<&'a RunRecord>);

/// A host run of a group: its position in `--hosts`, its name, the run.
type Member<'a> = (usize, String, &'a RunRecord);

/// The groups among `runs` that have at least one host run.
pub fn build(runs: &[RunRecord]) -> Vec<HostsView> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for r in runs {
        let Some((g, m)) = role(r) else { continue };
        let i = groups.iter().position(|x| x.0 == g).unwrap_or_else(|| {
            groups.push((g.clone(), Vec::new(), None));
            groups.len() - 1
        });
        match m {
            Role::Host(name, pos) => groups[i].1.push((pos, name, r)),
            Role::Aggregate => groups[i].2 = Some(r),
        }
    }
    groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|(group, mut hosts, agg)| {
            hosts.sort_by_key(|h| h.0);
            let mut names: Vec<String> = Vec::new();
            for (_, _, r) in &hosts {
                for w in &r.workloads {
                    if !names.contains(&w.workload.name) {
                        names.push(w.workload.name.clone());
                    }
                }
            }
            let workloads = names
                .into_iter()
                .map(|name| workload(&name, &hosts, agg))
                .collect();
            HostsView { group, workloads }
        })
        .collect()
}

fn workload(
    name: &str,
    hosts: &[(usize, String, &RunRecord)],
    agg: Option<&RunRecord>,
) -> HostsWorkload {
    let find = |r: &RunRecord| {
        r.workloads
            .iter()
            .find(|w| w.workload.name == name)
            .cloned()
    };
    let mbps = hosts
        .iter()
        .find_map(|(_, _, r)| find(r))
        .and_then(|w| {
            let t = w.trials.first()?;
            crate::sample::headline::throughput(&w.workload, t)
        })
        .is_some_and(|(k, _)| k.ends_with("mbps"));
    let mut views: Vec<HostView> = hosts
        .iter()
        .map(|(_, host, r)| {
            let w = find(r);
            let trials: &[TrialSample] = w.as_ref().map_or(&[], |w| &w.trials);
            let values: Vec<f64> = trials
                .iter()
                .filter_map(|t| crate::sample::headline::throughput(&w.as_ref()?.workload, t))
                .map(|(_, v)| v)
                .collect();
            let headline = crate::stats::median(&values).unwrap_or(0.0);
            // The op carrying most of the traffic, all trials merged.
            let op = trials.first().and_then(|t| {
                t.ops
                    .iter()
                    .filter(|o| o.op != "sync")
                    .max_by_key(|o| o.count)
                    .map(|o| o.op.clone())
            });
            let p99_ns = op.map(|op| {
                let mut h = LatencyHistogram::new();
                for o in trials.iter().filter_map(|t| t.op(&op)) {
                    h.merge(&o.latency);
                }
                h.percentile(99.0)
            });
            HostView {
                host: host.clone(),
                run_id: r.id.clone(),
                points: trials.first().map(|t| points(t, mbps)).unwrap_or_default(),
                p99_ns,
                headline,
                slow_pct: None,
            }
        })
        .collect();
    let figs: Vec<f64> = views.iter().map(|v| v.headline).collect();
    for (k, below, _) in
        crate::hosts::merge::stragglers(&figs, crate::disks::outliers::DEFAULT_TOLERANCE)
    {
        views[k].slow_pct = Some(below);
    }
    HostsWorkload {
        name: name.to_string(),
        unit: if mbps { "MB/s" } else { "IOPS" },
        hosts: views,
        aggregate: agg
            .and_then(find)
            .and_then(|w| w.trials.first().map(|t| points(t, mbps))),
    }
}

fn flag(v: &HostView) -> String {
    v.slow_pct
        .map(|p| format!(" (SLOW -{p:.0}%)"))
        .unwrap_or_default()
}

/// The per-host charts of one workload of a group: throughput per second per host with the
/// aggregate, and each host's p99.
pub fn figures(g: &HostsView, w: &HostsWorkload, embed: Embed) -> Vec<Figure> {
    let n = w.hosts.len();
    let mut lines: Vec<Line> = w
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| Line {
            name: format!("{}{}", h.host, flag(h)),
            colour: i,
            thin: false,
            points: h.points.clone(),
        })
        .collect();
    let mut legend: Vec<(String, usize)> =
        lines.iter().map(|l| (l.name.clone(), l.colour)).collect();
    if let Some(a) = &w.aggregate {
        lines.push(Line {
            name: format!("aggregate of {n} hosts"),
            colour: n,
            thin: false,
            points: a.clone(),
        });
        legend.push((format!("aggregate of {n} hosts"), n));
    }
    let caption = format!(
        "{}: {} per second, each host and all {n} (hosts-group {})",
        w.name, w.unit, g.group
    );
    let (x, y) = per_second_axes(w.unit);
    let series = LineChart {
        title: caption.clone(),
        x,
        y,
        lines,
        markers: Vec::new(),
        legend,
    };
    let bars = w
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let text = h.p99_ns.map_or("-".into(), |p| format_latency_ns(p as f64));
            Bar {
                label: h.host.clone(),
                value: h.p99_ns.map(|p| p as f64 / 1e3),
                interval: None,
                value_text: format!("{text}{}", flag(h)),
                ratio_text: None,
                baseline: false,
                colour: i,
                tooltip: format!(
                    "{}: p99 {text}, {} {:.0}{} (run {})",
                    h.host,
                    w.unit,
                    h.headline,
                    flag(h),
                    h.run_id
                ),
                data: vec![
                    ("host", h.host.clone()),
                    ("p99-ns", h.p99_ns.unwrap_or(0).to_string()),
                    ("slow", h.slow_pct.is_some().to_string()),
                ],
            }
        })
        .collect();
    let bar_caption = format!(
        "{}: p99 per host (SLOW: {} over 15% below the hosts' median)",
        w.name, w.unit
    );
    let p99 = BarChart {
        title: bar_caption.clone(),
        unit: "µs".into(),
        bars,
    };
    vec![
        Figure {
            kind: FigureKind::HostsSeries,
            part: g.group.clone(),
            caption,
            svg: chart::line::render(&series, embed),
        },
        Figure {
            kind: FigureKind::HostsP99,
            part: g.group.clone(),
            caption: bar_caption,
            svg: chart::bar::render(&p99, embed),
        },
    ]
}
