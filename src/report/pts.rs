//! SNIA PTS's IOPS summary (the `pts-iops` profile): block sizes down, read/write mixes
//! across, each cell the workload's IOPS (reads and writes together, median over its trials),
//! as PTS's report tabulates it — the steady state the tracked 4k writes reached is the line
//! above it.

use std::fmt::Write as _;

use crate::sample::RunRecord;
use crate::spec::SteadyFigure;
use crate::spec::profiles::{PTS_BLOCK_SIZES, PTS_READ_PCTS, bs_name, pts_iops_name};
use crate::stats::steady::figure_of;

/// The table, when the run holds any of `pts-iops`'s cells (`None` otherwise); a cell the run
/// did not reach (Ctrl-C) is `-`.
pub fn iops_table(run: &RunRecord) -> Option<String> {
    let cell = |bs: u64, rp: u8| -> Option<f64> {
        let name = pts_iops_name(bs, rp);
        let w = run.workloads.iter().find(|w| w.workload.name == name)?;
        let v: Vec<f64> = w
            .trials
            .iter()
            .map(|t| figure_of(t, SteadyFigure::Iops))
            .collect();
        crate::stats::summary::median(&v)
    };
    let cells: Vec<Vec<Option<f64>>> = PTS_BLOCK_SIZES
        .iter()
        .map(|&bs| PTS_READ_PCTS.iter().map(|&rp| cell(bs, rp)).collect())
        .collect();
    if cells.iter().flatten().all(Option::is_none) {
        return None;
    }
    let mut out = String::from("SNIA PTS IOPS (reads + writes per second; columns read/write %)\n");
    let _ = write!(out, "{:>6}", "bs");
    for rp in PTS_READ_PCTS {
        let _ = write!(out, " {:>9}", format!("{rp}/{}", 100 - rp));
    }
    out.push('\n');
    for (bs, row) in PTS_BLOCK_SIZES.iter().zip(&cells) {
        let label = bs_name(*bs);
        let _ = write!(out, "{label:>6}");
        for c in row {
            let text = c.map_or_else(|| "-".into(), |v| format!("{v:.0}"));
            let _ = write!(out, " {text:>9}");
        }
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{OpSample, TrialSample, WorkloadRecord};
    use crate::spec::profiles::{ProfileScale, profile};

    /// Each cell is its own workload's IOPS, reads and writes together, in its row (block
    /// size) and column (mix); a run without the profile's cells has no table.
    #[test]
    fn the_table_puts_each_workload_in_its_block_size_row_and_mix_column() {
        let suite = profile("pts-iops", ProfileScale::default()).unwrap();
        let trial = |reads: u64, writes: u64| {
            let op = |name: &str, n: u64| {
                let mut o = OpSample::new(name);
                o.count = n;
                o.elapsed_ns = 1_000_000_000;
                o
            };
            TrialSample {
                trial: 1,
                ops: vec![op("read", reads), op("write", writes)],
                ..TrialSample::default()
            }
        };
        let mut run = RunRecord {
            id: "r".into(),
            status: crate::sample::RunStatus::Complete,
            started_unix_ms: 0,
            ended_unix_ms: Some(1),
            command_line: vec![],
            label: None,
            note: None,
            lab_id: None,
            layout: None,
            suite_name: "pts-iops".into(),
            system: crate::system::SystemInfo::default(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: Vec::new(),
            notes: Vec::new(),
            error: None,
        };
        assert!(iops_table(&run).is_none());
        // Cell value: 1000 x row + column, split 65/35 so both ops count.
        for (i, w) in suite.workloads.iter().skip(1).enumerate() {
            let v = 1000 * (i / 7 + 1) as u64 + (i % 7) as u64;
            run.workloads.push(WorkloadRecord {
                workload: w.clone(),
                trials: vec![trial(v - v / 3, v / 3)],
            });
        }
        run.workloads.pop();
        let t = iops_table(&run).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            [
                "bs", "100/0", "95/5", "65/35", "50/50", "35/65", "5/95", "0/100"
            ]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["4k", "1000", "1001", "1002", "1003", "1004", "1005", "1006"]
        );
        assert_eq!(
            lines[8].split_whitespace().collect::<Vec<_>>(),
            ["1m", "7000", "7001", "7002", "7003", "7004", "7005", "-"]
        );
    }
}
