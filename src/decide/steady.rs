//! Steady-state figures in a decision (SNIA PTS, `[workloads] steady_state`): a layout's speed
//! on a workload run in rounds is its judged window's rounds (the steady one, or else the
//! last), never a median that still holds a cache's or a fresh SSD's fast start; and the
//! decision says which of its figures never became steady, so a choice made on one is read
//! as such.

use super::Decision;
use crate::sample::{RunRecord, WorkloadRecord, headline};
use crate::stats::Summary;
use crate::stats::steady::{figure_trials, of_workload};

/// A workload's speed over the trials its figure comes from: a steady-state run's window
/// ([`figure_trials`]), every trial otherwise.
pub(super) fn headline_summary(w: &WorkloadRecord) -> Option<Summary> {
    let values: Vec<f64> = figure_trials(w)
        .iter()
        .filter_map(|t| headline::throughput(&w.workload, t))
        .map(|m| m.1)
        .collect();
    Summary::of(&values)
}

/// The notes a decision adds for the steady-state rounds of the lab's runs (its own workload's
/// alone when it has one): one saying the speeds are steady windows, and one per figure that
/// never became steady (`seq-write-1m on md5: not steady after 25 rounds; last window
/// used`), in the order the runs ran.
pub(super) fn notes(d: &Decision, runs: &[RunRecord]) -> Vec<String> {
    let mut unsteady = Vec::new();
    let mut judged = std::collections::BTreeSet::new();
    for r in runs {
        let Some(layout) = &r.layout else { continue };
        let label = r
            .label
            .clone()
            .or_else(|| layout.name.clone())
            .unwrap_or_default();
        for w in &r.workloads {
            if d.workload.as_ref().is_some_and(|n| *n != w.workload.name) {
                continue;
            }
            let Some(s) = of_workload(w) else { continue };
            judged.insert(w.workload.name.clone());
            if s.steady_at.is_none() {
                let last = if s.window.is_some() {
                    "last window used"
                } else {
                    "every round used"
                };
                unsteady.push(format!(
                    "{} on {label}: not steady after {} rounds; {last}",
                    w.workload.name,
                    s.rounds.len(),
                ));
            }
        }
    }
    if judged.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = judged.iter().map(String::as_str).collect();
    let mut out = vec![format!(
        "{}: each layout's speed is its steady-state window (SNIA PTS: 5 rounds, range <= 20%, slope excursion <= 10% of the mean), not every round",
        names.join(", ")
    )];
    out.extend(unsteady);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::layout_record::LayoutRecord;
    use crate::sample::{OpSample, RunStatus, TrialSample};
    use crate::spec::decide::DecideSpec;
    use crate::spec::{IoWorkload, Pattern, SteadyFigure, SteadyState, Workload, WorkloadKind};

    /// `seq-write-1m` on layout `name`, in rounds of 1 s writing `mbps` each (the lab's
    /// `steady_state = "bw"`), and a fixed-time `rr` beside it.
    fn run(name: &str, mbps: &[u64]) -> RunRecord {
        let round = |n: u32, mb: u64| {
            let mut o = OpSample::new("write");
            o.count = mb;
            o.bytes = mb * 1_000_000;
            o.elapsed_ns = 1_000_000_000;
            TrialSample {
                trial: n,
                elapsed_ns: 1_000_000_000,
                ops: vec![o],
                ..TrialSample::default()
            }
        };
        let seq = Workload {
            name: "seq-write-1m".into(),
            drop_caches: false,
            kind: WorkloadKind::Io(IoWorkload {
                pattern: Pattern::Write,
                block_size: 1 << 20,
                steady: Some(SteadyState {
                    figure: SteadyFigure::Bw,
                    round: std::time::Duration::from_secs(1),
                    max_rounds: 25,
                }),
                ..IoWorkload::default()
            }),
        };
        RunRecord {
            id: format!("id-{name}"),
            status: RunStatus::Complete,
            started_unix_ms: 0,
            ended_unix_ms: Some(1),
            command_line: vec![],
            label: Some(name.into()),
            note: None,
            lab_id: Some("lab1".into()),
            layout: Some(LayoutRecord {
                name: Some(name.into()),
                ..LayoutRecord::default()
            }),
            suite_name: "lab".into(),
            system: crate::system::SystemInfo::default(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: vec![WorkloadRecord {
                workload: seq,
                trials: (1..)
                    .zip(mbps.iter().copied())
                    .map(|(n, v)| round(n, v))
                    .collect(),
            }],
            notes: Vec::new(),
            error: None,
        }
    }

    /// A cache in front of md6 fills after two rounds (900, 600 MB/s, then 200): its speed is
    /// its steady window's, 200, not a median over every round; md5 swings 100/300 for 25
    /// rounds, never steady: its speed is its last window's and the decision says so, in
    /// the words users read.
    #[test]
    fn a_decision_takes_steady_windows_and_names_the_figures_that_were_not_steady() {
        let swing: Vec<u64> = (0..25)
            .map(|i| if i % 2 == 0 { 100 } else { 300 })
            .collect();
        let runs = [
            run("md6", &[900, 600, 200, 201, 199, 200, 200]),
            run("md5", &swing),
        ];
        let d = super::super::decide_runs(
            "lab1",
            &runs,
            &DecideSpec::default(),
            None,
            super::super::AtRealSize::Model,
        )
        .unwrap();
        let speed = |n: &str| {
            let r = d.rows.iter().find(|r| r.name == n).unwrap();
            r.speed.as_ref().unwrap().figure.value
        };
        assert!((speed("md6") - 200.0).abs() < 1.5, "{:?}", d.rows[0].speed);
        // md5's last window, rounds 21-25: 100, 300, 100, 300, 100.
        assert!((speed("md5") - 100.0).abs() < 1.5, "{:?}", d.rows[1].speed);
        let ours: Vec<&String> = d.notes.iter().filter(|n| n.contains("steady")).collect();
        assert_eq!(ours.len(), 2, "{:#?}", d.notes);
        assert!(
            ours[0].starts_with(
                "seq-write-1m: each layout's speed is its steady-state window (SNIA PTS"
            ),
            "{}",
            ours[0]
        );
        assert_eq!(
            ours[1],
            "seq-write-1m on md5: not steady after 25 rounds; last window used"
        );
    }

    /// A lab without steady-state rounds adds no note.
    #[test]
    fn no_rounds_no_note() {
        let mut r = run("md6", &[900, 600]);
        if let WorkloadKind::Io(io) = &mut r.workloads[0].workload.kind {
            io.steady = None;
        }
        let d = super::super::decide_runs(
            "lab1",
            &[r],
            &DecideSpec::default(),
            None,
            super::super::AtRealSize::Model,
        )
        .unwrap();
        assert!(
            !d.notes.iter().any(|n| n.contains("steady")),
            "{:#?}",
            d.notes
        );
    }
}
