//! The lab's last word: which layout, and why — from the speed the lab measured,
//! the capacity and rebuild time scaled to the real disks, and the planner's risk of losing
//! data over that rebuild window.
//!
//! Our users ended every post with a choice ("RAID6 of 43 drives + 2 hot spares", "RAID5 + a
//! hot spare may be the compromise") made in a spreadsheet from three places. Here the pieces
//! meet:
//!
//! - [`facts`]: what a stored lab measured per layout (speeds over trials, degraded speeds,
//!   capacity at the latency target, the rebuild, the integrity verdict);
//! - [`scale`]: those figures at the real disk size, each saying where it comes from
//!   ([`Source`]: measured here, emulated, scaled, modelled) and carrying its spread;
//! - [`choose`]: the needs that rule layouts out (each rejection names the need missed), the
//!   Pareto front, ties within noise (the compare statistics' ratio intervals), the
//!   recommendation with its runner-up, and what to relax when nothing qualifies.
//!
//! A pure function of stored runs and needs: `iolab lab` decides at its end, `iolab decide
//! LAB` decides again with other needs without re-running, and the reports render the same
//! [`Decision`] (`report::text::decide`, the HTML report's first section).

pub mod choose;
pub mod facts;
pub mod measure;
pub mod runs;
pub mod scale;
pub mod sensitivity;
mod steady;
pub mod tunables;

#[cfg(test)]
pub(crate) mod tests;

use serde::Serialize;

use crate::plan::MeasuredPerf;
use crate::spec::decide::{DecideSpec, Needs, Prefer};

pub use facts::{AtSize, LabFacts, LayoutFacts, Losses, WorkloadFacts, from_runs};
pub use runs::{AtRealSize, RunsDecideError, decide_runs};

/// Where a figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Measured by this lab, on its own disks.
    Measured,
    /// Measured by this lab in a virtual machine: the disks were emulated, so only ratios and
    /// behaviour carry over.
    Emulated,
    /// Measured by this lab and scaled to the real disk size.
    Scaled,
    /// Computed by the planner's model (docs/plan-model.md) from stated or default inputs.
    Modelled,
}

impl Source {
    /// The word printed beside a figure.
    pub fn word(self) -> &'static str {
        match self {
            Source::Measured => "measured",
            Source::Emulated => "emulated",
            Source::Scaled => "scaled",
            Source::Modelled => "modelled",
        }
    }
}

/// One figure of a decision: its value, its spread, where it comes from and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// The value (bytes, seconds, a probability, a rate: the field says).
    pub value: f64,
    /// Its 95% interval, when the figure has a spread (trials, a search's bracket); `None` for
    /// a single measurement or a model's output, which `basis` then says.
    pub interval: Option<(f64, f64)>,
    /// Where it comes from.
    pub source: Source,
    /// How it was obtained, one line (`1.2GB in 41s: 29 MB/s per member x 8TB`).
    pub basis: String,
}

/// The speed of a layout on the decision's workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Speed {
    /// The workload.
    pub workload: String,
    /// Its headline metric (`write.mbps`).
    pub metric: String,
    /// The unit (`MB/s`, `IOPS`, `ops/s`).
    pub unit: &'static str,
    /// Median over trials, with the 95% interval of the mean.
    pub figure: Figure,
    /// The trials' summary, what ties are judged by.
    pub summary: crate::stats::Summary,
}

/// The planner's prediction from the disks' speed set against what the lab measured: a
/// bottleneck other than the disks shows as a ratio far below 1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predicted {
    /// What the disks' speeds predict for this layout, in the speed's unit.
    pub predicted: f64,
    /// Measured over predicted.
    pub ratio: f64,
    /// What the ratio means, when it means something (`something other than the disks limits
    /// this layout`).
    pub note: Option<String>,
}

/// A need a layout misses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    /// The need (`min_usable`, `max_loss_5y`, `min.seq-write-1m`, `min_capacity_at_slo`,
    /// `integrity`).
    pub need: String,
    /// One line: `usable 62.0TB < 70.0TB`.
    pub reason: String,
    /// The layout's figure, in the need's unit (`None`: not measured).
    pub have: Option<f64>,
    /// The need's bound.
    pub want: Option<f64>,
    /// The layout's figure as printed (`62.0TB`).
    pub have_text: Option<String>,
    /// The bound as printed (`70.0TB`).
    pub want_text: Option<String>,
}

/// One layout's row of the decision table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Layout name.
    pub name: String,
    /// The stack, one line.
    pub description: String,
    /// How the planner reads it (`raid6+2spares on 47 disks`); `None` when it cannot (an
    /// existing directory, a profile it does not model).
    pub model: Option<String>,
    /// `vm (tcg)` when the lab ran in a VM.
    pub environment: Option<String>,
    /// Usable bytes at the real disk size.
    pub usable: Option<Figure>,
    /// The planner's usable bytes at the real size, beside it.
    pub usable_planner: Option<u64>,
    /// Speed on the decision's workload.
    pub speed: Option<Speed>,
    /// That workload's headline with a member failed over healthy.
    pub degraded: Option<Figure>,
    /// That workload's headline during the rebuild over healthy (labs with
    /// `during_rebuild = true`).
    pub during_rebuild: Option<Figure>,
    /// IOPS meeting the lab's latency target, healthy (`None`: not measured).
    pub capacity_at_slo: Option<Figure>,
    /// The same with a member failed.
    pub capacity_at_slo_degraded: Option<Figure>,
    /// The same during the rebuild.
    pub capacity_at_slo_rebuilding: Option<Figure>,
    /// Seconds to rebuild one disk at the real size (`None`: no redundancy).
    pub rebuild: Option<Figure>,
    /// Seconds from a failure until redundancy is back: the replacement wait (none with a hot
    /// spare) plus the rebuild.
    pub window: Option<Figure>,
    /// Probability of losing data within one year.
    pub loss_1y: Option<Figure>,
    /// Probability of losing data within five years.
    pub loss_5y: Option<Figure>,
    /// The integrity verdict through the lab's faults (`None`: no data set checked).
    pub integrity: Option<String>,
    /// The power-cut verdict, when the lab ran power cuts.
    pub power: Option<String>,
    /// Whether a power cut lost a durable write or read a file back wrong: the layout is
    /// rejected, as one whose integrity check failed is.
    pub power_lost: bool,
    /// The planner's speed from the disks' speeds against the measured one.
    pub predicted: Option<Predicted>,
    /// The needs it misses (empty: it qualifies).
    pub misses: Vec<Miss>,
    /// On the Pareto front: no other layout is at least as good on every figure and better on
    /// one (ties within noise count as equal).
    pub pareto: bool,
    /// The first layout that dominates it.
    pub dominated_by: Option<String>,
}

impl Row {
    /// True when it meets every need.
    pub fn qualifies(&self) -> bool {
        self.misses.is_empty()
    }
}

/// A need to relax so that a layout qualifies, when none does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relax {
    /// The need.
    pub need: String,
    /// Its bound now, as written (`70.0TB`).
    pub from: String,
    /// The bound that lets `layout` qualify (`62.0TB`).
    pub to: String,
    /// How far, percent of the bound now.
    pub by_pct: f64,
    /// The layout that would then qualify.
    pub layout: String,
}

/// What the decision assumed: the real disks and the risk model's inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assumptions {
    /// Bytes of one real disk (`None`: each layout at its lab disks' size).
    pub disk_bytes: Option<u64>,
    /// The disks' speed the model used.
    pub disk: crate::plan::DiskPerf,
    /// Where that speed came from.
    pub disk_source: String,
    /// The speed was measured or stated (not the 7200 rpm default).
    pub disk_known: bool,
    /// Annualized failure rate.
    pub afr: f64,
    /// Unrecoverable read errors per bit.
    pub ure: f64,
    /// Hours to replace a disk without a hot spare.
    pub replace_hours: f64,
}

/// The decision: one row per layout, the needs, the front, the recommendation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The lab decided on.
    pub lab_id: String,
    /// Its name.
    pub lab: String,
    /// The needs.
    pub needs: Needs,
    /// What was maximised.
    pub prefer: Prefer,
    /// The workload whose headline is the speed.
    pub workload: Option<String>,
    /// What was assumed.
    pub assumptions: Assumptions,
    /// One row per layout, in the order the lab ran them.
    pub rows: Vec<Row>,
    /// The layouts on the Pareto front.
    pub pareto: Vec<String>,
    /// The recommended layout (`None`: nothing qualifies).
    pub recommended: Option<String>,
    /// The next best that qualifies.
    pub runner_up: Option<String>,
    /// Layouts tied with the recommended one on the preferred figure (within noise): the
    /// choice between them was made on the next figure.
    pub tied: Vec<String>,
    /// The recommendation in one sentence, with its reasons and the runner-up; or, when
    /// nothing qualifies, what to relax.
    pub sentence: String,
    /// When nothing qualifies: the smallest relaxations that let a layout qualify.
    pub relax: Vec<Relax>,
    /// What the reader must know to read the figures right.
    pub notes: Vec<String>,
    /// The verdicts (a layout's, or the recommendation) that change within the plausible
    /// range of the risk inputs: URE desktop 1e-14, enterprise 1e-15, 0; AFR x0.5, x1.5.
    pub flips: Vec<sensitivity::Flip>,
    /// Those flips in one line, printed beside the verdict (`None`: no verdict changes).
    pub turns_on: Option<String>,
}

/// Which optional columns a rendering of the decision shows: one answer for the terminal,
/// Markdown and HTML tables alike.
impl Decision {
    /// The capacity at the latency target: measured for a layout, or asked for as a need.
    pub fn shows_capacity_at_slo(&self) -> bool {
        self.rows.iter().any(|r| r.capacity_at_slo.is_some())
            || self.needs.min_capacity_at_slo.is_some()
    }

    /// The ratio during the rebuild: a layout was measured during its rebuild.
    pub fn shows_rebuilding(&self) -> bool {
        self.rows.iter().any(|r| r.during_rebuild.is_some())
    }

    /// The POWER verdict: a layout went through power cuts.
    pub fn shows_power(&self) -> bool {
        self.rows.iter().any(|r| r.power.is_some())
    }
}

/// A decision that cannot be made: the field named, exit 2 at the command line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecideError {
    /// A need names a workload the lab did not run.
    #[error("{field}: '{workload}' is not a workload of lab {lab} (workloads: {known})")]
    UnknownWorkload {
        /// The need or flag.
        field: String,
        /// The workload named.
        workload: String,
        /// The lab.
        lab: String,
        /// The workloads it ran.
        known: String,
    },
    /// A need's unit is not the workload's headline unit.
    #[error("{field}: {given} but the workload's headline is in {unit}; write e.g. {example}")]
    Unit {
        /// The need or flag.
        field: String,
        /// The unit written.
        given: &'static str,
        /// The headline's unit.
        unit: &'static str,
        /// The need rewritten in that unit.
        example: String,
    },
    /// The lab did not measure what a need requires.
    #[error("{field}: {why}")]
    NotMeasured {
        /// The need or flag.
        field: String,
        /// What is missing and how to get it.
        why: String,
    },
    /// The lab has no layout run to decide between.
    #[error(
        "lab {0}: no stored layout run to decide between (a lab stores one per layout it built)"
    )]
    NoLayouts(String),
}

/// The disks' speed measured elsewhere (`disk_from`): the figures and where they came from.
#[derive(Debug, Clone, Default)]
pub struct DiskMeasured {
    /// Per-disk figures as far as the run measured them.
    pub perf: MeasuredPerf,
    /// The run, for the source line.
    pub from: String,
}

/// Decides between a stored lab's layouts by `spec`. `disk`: the real disks' speed from a
/// stored run, when `disk_from` named one (the CLI reads it from the store).
pub fn decide(
    lab: &LabFacts,
    spec: &DecideSpec,
    disk: Option<&DiskMeasured>,
) -> Result<Decision, DecideError> {
    if lab.layouts.is_empty() {
        return Err(DecideError::NoLayouts(lab.lab_id.clone()));
    }
    let workload = choose::check_needs(lab, spec)?;
    let assumptions = scale::assumptions(spec, disk);
    let mut notes = Vec::new();
    let build = |a: &Assumptions, notes: &mut Vec<String>| -> Vec<Row> {
        lab.layouts
            .iter()
            .map(|l| scale::row(l, workload.as_deref(), a, notes))
            .collect()
    };
    let mut rows = build(&assumptions, &mut notes);
    for r in &mut rows {
        r.misses = choose::misses(r, lab, spec);
    }
    let prefer = spec.prefer.unwrap_or_default();
    choose::mark_pareto(&mut rows);
    let pick = choose::recommend(&rows, prefer);
    let relax = if pick.best.is_none() {
        choose::relax(&rows, &spec.needs)
    } else {
        Vec::new()
    };
    let sentence = choose::sentence(&rows, &pick, prefer, &relax, &spec.needs);
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let flips = sensitivity::flips(
        &assumptions,
        &sensitivity::Outcome::of(&rows, pick.best.clone()),
        &names,
        &|a| sensitivity::outcome(build(a, &mut Vec::new()), lab, spec),
    );
    let turns_on = sensitivity::line(&flips, &assumptions);
    scale::notes(&rows, &assumptions, &mut notes);
    Ok(Decision {
        lab_id: lab.lab_id.clone(),
        lab: lab.name.clone(),
        needs: spec.needs.clone(),
        prefer,
        workload,
        assumptions,
        pareto: rows
            .iter()
            .filter(|r| r.pareto)
            .map(|r| r.name.clone())
            .collect(),
        rows,
        recommended: pick.best,
        runner_up: pick.runner_up,
        tied: pick.tied,
        sentence,
        relax,
        notes,
        flips,
        turns_on,
    })
}

/// A probability as a percentage with two significant figures (`0.45%`, `0.0031%`, `12%`).
pub fn format_probability(p: f64) -> String {
    let x = p * 100.0;
    if x <= 0.0 || !x.is_finite() {
        return "0%".into();
    }
    if x >= 10.0 {
        return format!("{x:.0}%");
    }
    let decimals = (1 - x.log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}%")
}
