//! A drawn chart as the reports hold it (its kind, for file names and alt text; its caption;
//! its `<svg>`), and the axes every per-second chart shares. Below the HTML model and its
//! figure builders, so that the workload figures and the `--hosts` figures use one
//! definition without importing each other.

use super::axis::Scale;
use super::compact;
use super::line::AxisSpec;

/// What a chart is, for file names and alt text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FigureKind {
    /// Headline bars.
    Bars,
    /// Latency percentiles of one op.
    Latency,
    /// Throughput per second.
    Series,
    /// Capacity against speed.
    Capacity,
    /// Throughput per second of each host of a `--hosts` run, and of the aggregate.
    HostsSeries,
    /// p99 of each host of a `--hosts` run, the straggler flagged.
    HostsP99,
    /// Latency against offered load of an SLO search, the capacity marked.
    Slo,
    /// A steady-state run's figure per round (SNIA PTS), its measurement window marked.
    Steady,
}

impl FigureKind {
    /// Short name used in file names.
    pub fn slug(self) -> &'static str {
        match self {
            FigureKind::Bars => "bars",
            FigureKind::Latency => "latency",
            FigureKind::Series => "series",
            FigureKind::Capacity => "capacity",
            FigureKind::HostsSeries => "hosts-series",
            FigureKind::HostsP99 => "hosts-p99",
            FigureKind::Slo => "slo",
            FigureKind::Steady => "steady",
        }
    }
}

/// A drawn chart.
#[derive(Clone, Debug)]
pub struct Figure {
    /// What it is.
    pub kind: FigureKind,
    /// Extra part of the file name (the op of a latency chart).
    pub part: String,
    /// Caption and alt text.
    pub caption: String,
    /// The `<svg>` element.
    pub svg: String,
}

/// The axes of a throughput-per-second chart: seconds across, `unit` (MB/s, IOPS, ops/s) up,
/// both linear. One definition so a workload's series and a `--hosts` group's per-host chart
/// read the same way.
pub fn per_second_axes(unit: &str) -> (AxisSpec, AxisSpec) {
    let axis = |label: &str| AxisSpec {
        scale: Scale::Linear,
        label: label.into(),
        format: compact,
    };
    (axis("seconds"), axis(unit))
}
