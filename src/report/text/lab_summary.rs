//! The lab's answer in one terminal table: a row per layout with its usable capacity and each
//! workload's headline figure against the baseline; an open loop's in full below it.

use crate::lab::report::LabReport;
use crate::report::compare::Comparison;
use crate::sample::headline::{self, HeadlineKind};
use crate::units::{format_bytes, format_latency_ns};

/// A workload's column in the table.
enum Col {
    /// A closed loop's throughput: the comparison row.
    Throughput(usize),
    /// An open loop: the row of its headline op's p99 latency from the schedule, and its
    /// sustained rows (reads, writes).
    Schedule {
        /// The p99 row.
        p99: usize,
        /// The `*.sustained` rows.
        shares: Vec<usize>,
    },
}

/// The lab's answer in one table: a row per layout, its usable capacity, and for each workload
/// its headline figure (MB/s, IOPS or ops/s: median over trials) with the ratio to the baseline
/// (`~` when the difference is not significant). An open loop (a replay, a model, a rate) is
/// judged by its latency from the schedule instead — the IOPS are what its schedule asked —
/// with `sustained 0.83` when a layout fell short of the asked rate, and gets a table of its
/// own below: p99 and p99.9 from the schedule and the sustained share, reads and writes apart.
/// The full comparison of every metric is `iolab compare` on the lab's runs.
pub fn render_summary(r: &LabReport, c: &Comparison, suite: &crate::spec::Suite) -> String {
    let mut cols: Vec<(String, Col)> = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    for w in &suite.workloads {
        if headline::kind(w) == HeadlineKind::ScheduleLatency {
            if let Some(col) = schedule_col(c, &w.name) {
                open.push(&w.name);
                cols.push(col);
            }
            continue;
        }
        if let Some((h, i)) = throughput_col(c, w) {
            cols.push((h, Col::Throughput(i)));
        }
    }
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
        for (_, col) in &cols {
            row.push(match col {
                Col::Throughput(i) => cell(c, *i, ri, fmt),
                Col::Schedule { p99, shares } => {
                    let mut s = cell(c, *p99, ri, latency);
                    if let Some(v) =
                        worst_share(c, shares, ri).filter(|v| headline::short_of_rate(*v))
                    {
                        s.push_str(&format!(" sustained {v:.2}"));
                    }
                    s
                }
            });
        }
        rows.push(row);
    }
    let mut out = aligned(&header, &rows);
    let base = c.runs.get(c.baseline).map_or("-", |b| b.header.as_str());
    out.push_str(&format!(
        "median of each layout's trials; ratio to the baseline ({base}), ~ = not significant at 95%; every metric: iolab compare --lab {}\n",
        r.lab_id
    ));
    if !open.is_empty() {
        out.push_str(&format!(
            "open loop ({}): judged by latency from the schedule (due time to completion; lower is\nbetter, a ratio above 1 is slower), not by the IOPS its schedule asked; sustained =\nachieved/asked IOPS, marked below {}\n",
            open.join(", "),
            headline::SUSTAINED_MIN
        ));
        for name in open {
            out.push('\n');
            out.push_str(&open_loop_table(c, name));
        }
    }
    for n in &c.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// A closed loop's column: its throughput row with the header `NAME UNIT`.
fn throughput_col(c: &Comparison, w: &crate::spec::Workload) -> Option<(String, usize)> {
    use crate::sample::Unit;
    let want = match &w.kind {
        crate::spec::WorkloadKind::Io(io) if io.headline_is_bandwidth() => ".mbps",
        crate::spec::WorkloadKind::Io(_) => ".iops",
        crate::spec::WorkloadKind::SmallFiles(_) => "create.ops",
        crate::spec::WorkloadKind::CachedRead(_) => ".mbps",
    };
    let i = c
        .rows
        .iter()
        .position(|row| row.workload == w.name && row.metric.ends_with(want))?;
    let unit = match c.rows[i].unit {
        Unit::MBps => "MB/s",
        Unit::Iops => "IOPS",
        Unit::OpsPerSec => "ops/s",
        Unit::Micros => "us",
        Unit::Fraction => "",
    };
    Some((format!("{} {unit}", w.name), i))
}

/// An open loop's column: the p99 from the schedule of the op its headline names first
/// (reads when it reads), headed `NAME OP p99`.
fn schedule_col(c: &Comparison, name: &str) -> Option<(String, Col)> {
    let o = c.open_loops.iter().find(|o| o.workload == name)?;
    let row = |key: &str| {
        c.rows
            .iter()
            .position(|r| r.workload == name && r.metric == key)
    };
    let p99_key = o
        .metrics
        .iter()
        .find(|k| k.ends_with(&format!(".{}", headline::SCHED_P99)))?;
    let p99 = row(p99_key)?;
    let shares = o
        .metrics
        .iter()
        .filter(|k| headline::is_sustained_key(k))
        .filter_map(|k| row(k))
        .collect();
    let op = p99_key.split('.').next().unwrap_or_default();
    Some((format!("{name} {op} p99"), Col::Schedule { p99, shares }))
}

/// The lowest sustained share of a run among `shares` rows (median over its trials).
fn worst_share(c: &Comparison, shares: &[usize], run: usize) -> Option<f64> {
    shares
        .iter()
        .filter_map(|&i| c.rows[i].cells.get(run)?.as_ref())
        .map(|x| x.summary.median)
        .reduce(f64::min)
}

/// A throughput, IOPS or ops/s figure: whole above 100, one decimal below.
fn fmt(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A latency figure kept in microseconds, in the unit that reads best (`2.49ms`).
fn latency(us: f64) -> String {
    format_latency_ns(us * 1e3)
}

/// One cell of row `i` for run `ri`: the median, `(base)` for the baseline, else the ratio to
/// it (`~` when not significant).
fn cell(c: &Comparison, i: usize, ri: usize, show: fn(f64) -> String) -> String {
    let run = &c.runs[ri];
    match c.rows[i].cells.get(ri).and_then(|x| x.as_ref()) {
        None => "-".into(),
        Some(cell) if run.baseline => format!("{} (base)", show(cell.summary.median)),
        Some(cell) => match &cell.ratio {
            Some(ra) => format!(
                "{} {:.2}x{}",
                show(cell.summary.median),
                ra.value,
                if ra.significant == Some(false) {
                    "~"
                } else {
                    ""
                }
            ),
            None => show(cell.summary.median),
        },
    }
}

/// An open loop's own table: per layout its headline rows, p99 and p99.9 latency from the
/// schedule with their ratios to the baseline, and the sustained share (`NOT SUSTAINED` below
/// the mark), reads and writes apart.
fn open_loop_table(c: &Comparison, name: &str) -> String {
    let Some(o) = c.open_loops.iter().find(|o| o.workload == name) else {
        return String::new();
    };
    let keys: Vec<(usize, &str)> = o
        .metrics
        .iter()
        .filter_map(|k| {
            let i = c
                .rows
                .iter()
                .position(|r| r.workload == name && r.metric == *k)?;
            Some((i, k.as_str()))
        })
        .collect();
    let mut header = vec![format!("{name} (open loop)")];
    header.extend(keys.iter().map(|(_, k)| {
        let (op, fig) = k.split_once('.').unwrap_or((k, ""));
        match fig {
            headline::SCHED_P99 => format!("{op} p99"),
            headline::SCHED_P99_9 => format!("{op} p99.9"),
            _ => format!("{op} sustained"),
        }
    }));
    let rows: Vec<Vec<String>> = (0..c.runs.len())
        .map(|ri| {
            let mut row = vec![c.runs[ri].header.clone()];
            for (i, k) in &keys {
                row.push(if headline::is_sustained_key(k) {
                    match c.rows[*i].cells.get(ri).and_then(|x| x.as_ref()) {
                        None => "-".into(),
                        Some(x) if headline::short_of_rate(x.summary.median) => {
                            format!("{:.2} NOT SUSTAINED", x.summary.median)
                        }
                        Some(x) => format!("{:.2}", x.summary.median),
                    }
                } else {
                    cell(c, *i, ri, latency)
                });
            }
            row
        })
        .collect();
    aligned(&header, &rows)
}

/// The rows under their header, the first column left-aligned and the rest right-aligned.
fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
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
    let mut out = line(header);
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{
        AskedByOp, OpSample, OpenLoopSample, RunRecord, RunStatus, TrialSample, WorkloadRecord,
    };
    use crate::spec::{Arrivals, IoWorkload, OpenLoop, Pattern, Rate, Workload, WorkloadKind};

    fn op(name: &str, count: u64, p99_ms: u64, trial: u32) -> OpSample {
        let mut o = OpSample::new(name);
        o.count = count;
        o.bytes = count * 4096;
        o.elapsed_ns = 1_000_000_000;
        // 98% near 1 ms (each trial a little apart), the slowest 2% at p99_ms.
        for i in 0..count {
            o.latency.record(if i % 50 == 0 {
                p99_ms * 1_000_000
            } else {
                1_000_000 + u64::from(trial) * 10_000
            });
        }
        o
    }

    /// A run of the open loop "replay-t" (5000 IOPS asked, 4000 reads and 1000 writes) that
    /// achieved `reads` and `writes` a second with the slow 2% at `p99_ms`, and of the closed
    /// loop "rr", three trials each.
    fn run(label: &str, reads: u64, writes: u64, p99_ms: u64) -> RunRecord {
        let open = Workload {
            name: "replay-t".into(),
            drop_caches: false,
            kind: WorkloadKind::Io(IoWorkload {
                pattern: Pattern::RandRw,
                read_pct: 80,
                open_loop: Some(OpenLoop {
                    rate: Rate::Iops(5000.0),
                    arrivals: Arrivals::Poisson,
                    per_thread: false,
                }),
                ..IoWorkload::default()
            }),
        };
        let closed = Workload {
            name: "rr".into(),
            drop_caches: false,
            kind: WorkloadKind::Io(IoWorkload::default()),
        };
        let trial = |n: u32, ops: Vec<OpSample>, ol: Option<OpenLoopSample>| TrialSample {
            trial: n,
            elapsed_ns: 1_000_000_000,
            ops,
            open_loop: ol,
            ..TrialSample::default()
        };
        let ol = OpenLoopSample {
            asked_iops: 5000.0,
            asked_by_op: Some(Box::new(AskedByOp {
                read_iops: 4000.0,
                write_iops: 1000.0,
            })),
            ..OpenLoopSample::default()
        };
        RunRecord {
            id: format!("id-{label}"),
            status: RunStatus::Complete,
            started_unix_ms: 0,
            ended_unix_ms: Some(1),
            command_line: Vec::new(),
            label: Some(label.into()),
            note: None,
            lab_id: Some("ab12cd".into()),
            layout: None,
            suite_name: "lab".into(),
            system: crate::system::SystemInfo::default(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: vec![
                WorkloadRecord {
                    workload: open,
                    trials: (1..=3)
                        .map(|n| {
                            let ops = vec![
                                op("read", reads + u64::from(n), p99_ms, n),
                                op("write", writes, p99_ms, n),
                            ];
                            trial(n, ops, Some(ol.clone()))
                        })
                        .collect(),
                },
                WorkloadRecord {
                    workload: closed,
                    trials: (1..=3)
                        .map(|n| trial(n, vec![op("read", 900 + u64::from(n), 2, n)], None))
                        .collect(),
                },
            ],
            notes: Vec::new(),
            error: None,
        }
    }

    /// A replay compared by the IOPS its schedule fixes said `2487 1.00x~` on both
    /// layouts. The open loop's column is its p99 latency from the schedule (raid5's 5 ms is
    /// 2.5x raid1's 2 ms), raid5's `sustained 0.80` shows beside it, and its own table gives
    /// p99, p99.9 and the sustained share of reads and writes apart, NOT SUSTAINED where
    /// short; the closed loop keeps its IOPS column.
    #[test]
    fn an_open_loop_is_headlined_by_its_latency_from_the_schedule_and_its_sustained_share() {
        let runs = [run("raid1", 4000, 1000, 2), run("raid5", 3320, 800, 5)];
        let c = crate::stats::compare::build(&runs, &Default::default());
        let suite = crate::spec::Suite {
            name: "lab".into(),
            workloads: runs[0]
                .workloads
                .iter()
                .map(|w| w.workload.clone())
                .collect(),
        };
        let lab = LabReport {
            lab_id: "ab12cd".into(),
            name: "t".into(),
            spec_file: "t.toml".into(),
            disks: String::new(),
            baseline: None,
            interrupted: false,
            dry_run: false,
            layouts: Vec::new(),
            leftovers: Vec::new(),
            runs: Vec::new(),
        };
        let out = render_summary(&lab, &c, &suite);
        let line = |start: &str| {
            out.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("{start}: {out}"))
        };
        let head = line("layout");
        assert!(
            head.contains("replay-t read p99") && head.contains("rr IOPS"),
            "{out}"
        );
        assert!(!head.contains("replay-t IOPS"), "{out}");
        let raid1 = line("raid1 ");
        assert!(
            raid1.contains("2.00ms (base)") && !raid1.contains("sustained"),
            "{out}"
        );
        let raid5 = line("raid5 ");
        assert!(raid5.contains("5.00ms 2.50x sustained 0.80"), "{out}");
        let table = line("replay-t (open loop)");
        for col in [
            "read p99",
            "read p99.9",
            "read sustained",
            "write p99.9",
            "write sustained",
        ] {
            assert!(table.contains(col), "{col}: {out}");
        }
        let detail = out
            .lines()
            .skip_while(|l| !l.starts_with("replay-t (open loop)"))
            .find(|l| l.starts_with("raid5"))
            .unwrap();
        assert!(
            detail.contains("0.83 NOT SUSTAINED") && detail.contains("0.80 NOT SUSTAINED"),
            "{out}"
        );
        assert!(
            out.contains("rate not sustained: raid5 / replay-t"),
            "{out}"
        );
        let o = &c.open_loops;
        assert_eq!(o.len(), 1, "only the open loop");
        assert!(o[0].sustained[0].as_ref().unwrap().kept_up);
        assert!(!o[0].sustained[1].as_ref().unwrap().kept_up);
    }
}
