//! The `[decide]` table: its values read by [`crate::spec::decide`], then checked
//! against this lab — every workload a need names exists and is measured in the unit given,
//! a latency-target need has a lab that searches one, a loss need has a rebuild time to stand
//! on — so a lab never runs for hours to fail at its last word.

use toml::Spanned;

use super::{LabWorkloads, LayoutKind, LayoutSpec};
use crate::spec::SpecError;
use crate::spec::decide::{BadKey, DecideSpec, Prefer, RawDecide, headline_unit};
use crate::spec::locate::Locator;

pub(super) fn parse_decide(
    loc: &Locator,
    raw: Option<&Spanned<RawDecide>>,
    layouts: &[LayoutSpec],
    workloads: &LabWorkloads,
) -> Result<Option<DecideSpec>, SpecError> {
    let Some(sr) = raw else { return Ok(None) };
    let start = sr.span().start;
    let err = |e: BadKey| {
        let top = e.key.split('.').next().unwrap_or(&e.key).to_string();
        loc.err(
            Some(loc.line_of_key(start, "decide", &top)),
            format!("decide.{}", e.key),
            e.msg,
        )
    };
    let d = sr.get_ref().validate().map_err(err)?;
    check(&d, layouts, workloads).map_err(err)?;
    Ok(Some(d))
}

/// Checks a decision's needs against the lab that will run (the spec's table, or `iolab lab`'s
/// flags laid over it): the error names the key under `decide`.
pub(super) fn check(
    d: &DecideSpec,
    layouts: &[LayoutSpec],
    workloads: &LabWorkloads,
) -> Result<(), BadKey> {
    let err = |key: &str, msg: String| BadKey {
        key: key.to_string(),
        msg,
    };
    let suite = &workloads.suite.workloads;
    let names = || {
        suite
            .iter()
            .map(|w| w.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for m in &d.needs.min {
        let key = format!("min.{}", m.workload);
        let Some(w) = suite.iter().find(|w| w.name == m.workload) else {
            return Err(err(
                &key,
                format!(
                    "'{}' is not a workload of this lab (workloads: {})",
                    m.workload,
                    names()
                ),
            ));
        };
        let unit = headline_unit(w);
        if let Some(u) = m.unit.filter(|u| *u != unit) {
            return Err(err(
                &key,
                format!(
                    "is in {} but the workload's headline is {}; write e.g. \"{} {}\"",
                    u.label(),
                    unit.label(),
                    crate::units::format_rate(m.value),
                    unit.label()
                ),
            ));
        }
    }
    if let Some(w) = &d.workload {
        if !suite.iter().any(|x| &x.name == w) {
            return Err(err(
                "workload",
                format!(
                    "'{w}' is not a workload of this lab (workloads: {})",
                    names()
                ),
            ));
        }
    }
    let searches_slo = suite
        .iter()
        .any(|w| matches!(&w.kind, crate::spec::WorkloadKind::Io(io) if io.slo.is_some()));
    let wants_slo = d.needs.min_capacity_at_slo.is_some();
    if (wants_slo || d.prefer == Some(Prefer::CapacityAtSlo)) && !searches_slo {
        return Err(err(
            if wants_slo {
                "min_capacity_at_slo"
            } else {
                "prefer"
            },
            "the lab measures no capacity at a latency target: add slo = \"p99<=5ms\" to [workloads]"
                .into(),
        ));
    }
    let wants_loss = d.needs.max_loss_1y.is_some() || d.needs.max_loss_5y.is_some();
    let rebuilds = layouts
        .iter()
        .any(|l| l.rebuild && matches!(l.kind, LayoutKind::Stack(_)));
    if wants_loss && !rebuilds && !d.disk.any() && d.disk_from.is_none() {
        return Err(err(
            if d.needs.max_loss_5y.is_some() {
                "max_loss_5y"
            } else {
                "max_loss_1y"
            },
            "P(data loss) needs a rebuild time: set rebuild = true on the layouts, or give the disks' speed (disk_write_mbps, disk_from)"
                .into(),
        ));
    }
    Ok(())
}
