//! The `[workloads]` table: profiles and inline workloads every layout runs, trials, baseline.

use toml::Spanned;

use super::raw::RawWorkloads;
use super::{LabWorkloads, LayoutSpec};
use crate::spec::locate::{Locator, list_of, split_commas};
use crate::spec::profiles::{self, ProfileScale};
use crate::spec::{Precondition, SpecError, SteadyState, SteadyValue, Suite};

/// The `[workloads]` table read into what every layout runs; without it, the default profile
/// three times.
pub(super) fn parse_workloads(
    loc: &Locator,
    raw: Option<&Spanned<RawWorkloads>>,
    layouts: &[LayoutSpec],
) -> Result<LabWorkloads, SpecError> {
    let Some(sw) = raw else {
        let suite = profiles::profile("default", ProfileScale::default()).unwrap_or_default();
        return Ok(LabWorkloads {
            profiles: vec!["default".into()],
            suite,
            repeat: 3,
            baseline: None,
            size: None,
            runtime: None,
            models: Vec::new(),
            precondition: None,
            steady: None,
        });
    };
    let w = sw.get_ref();
    let start = sw.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "workloads", key));
    let mut scale = ProfileScale::default();
    if let Some(v) = &w.size {
        scale.size = Some(
            v.bytes()
                .map_err(|e| loc.err(at("size"), "workloads.size", e))?,
        );
    }
    if let Some(v) = &w.time {
        scale.runtime = Some(
            v.positive_duration()
                .map_err(|e| loc.err(at("time"), "workloads.time", e))?,
        );
    }
    let names = list_of(&w.profiles, split_commas);
    let mut suite = listed_workloads(loc, &at, w, &names, scale)?;
    let mut profiles_used = names;
    push_replays(loc, &at, w, &mut suite)?;
    let models = list_of(&w.model, split_commas);
    if suite.workloads.is_empty() && models.is_empty() {
        suite = profiles::profile("default", scale).unwrap_or_default();
        profiles_used = vec!["default".into()];
    }
    if w.slo.is_some() {
        let slo = lab_slo(w).map_err(|e| loc.err(at("slo"), "workloads.slo", e))?;
        set_slo(&mut suite, &slo);
    } else if w.budget.is_some() || w.slo_precision.is_some() {
        return Err(loc.err(
            at(if w.budget.is_some() {
                "budget"
            } else {
                "slo_precision"
            }),
            "workloads",
            "budget and slo_precision belong to an SLO search: add slo = \"p99<=5ms\" or drop them",
        ));
    }
    suite.name = if profiles_used.is_empty() {
        "lab".into()
    } else {
        profiles_used.join("+")
    };
    let repeat = repeat_of(loc, &at, w)?;
    check_baseline(loc, &at, w, layouts)?;
    let (precondition, steady) = pts(loc, &at, w)?;
    Ok(LabWorkloads {
        profiles: profiles_used,
        suite,
        repeat,
        baseline: w.baseline.clone(),
        size: scale.size,
        runtime: scale.runtime,
        models,
        precondition,
        steady,
    })
}

/// `replay = "mail.trace"`: the trace on every layout, its offsets wrapped into each layout's
/// working set (layouts differ in size).
fn push_replays(
    loc: &Locator,
    at: &dyn Fn(&str) -> Option<usize>,
    w: &RawWorkloads,
    suite: &mut Suite,
) -> Result<(), SpecError> {
    for t in list_of(&w.replay, split_commas) {
        let stem = std::path::Path::new(&t)
            .file_stem()
            .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
        let raw = crate::spec::RawWorkload {
            name: Some(format!("replay-{stem}")),
            replay: Some(t.clone()),
            replay_map: Some("wrap".into()),
            ..Default::default()
        };
        let valid = raw
            .validate()
            .map_err(|e| loc.err(at("replay"), "workloads.replay", e.msg))?;
        suite.workloads.push(valid);
    }
    Ok(())
}

/// The trials per workload: 3 unless `repeat` says, between 1 and 1000.
fn repeat_of(
    loc: &Locator,
    at: &dyn Fn(&str) -> Option<usize>,
    w: &RawWorkloads,
) -> Result<u32, SpecError> {
    match w.repeat {
        None => Ok(3),
        Some(n) if (1..=1000).contains(&n) => Ok(n as u32),
        Some(_) => Err(loc.err(
            at("repeat"),
            "workloads.repeat",
            "must be between 1 and 1000",
        )),
    }
}

/// `baseline` names a layout of this lab, or the error lists the layouts there are.
fn check_baseline(
    loc: &Locator,
    at: &dyn Fn(&str) -> Option<usize>,
    w: &RawWorkloads,
    layouts: &[LayoutSpec],
) -> Result<(), SpecError> {
    let Some(b) = &w.baseline else {
        return Ok(());
    };
    if layouts.iter().any(|l| &l.name == b) {
        return Ok(());
    }
    Err(loc.err(
        at("baseline"),
        "workloads.baseline",
        format!(
            "'{b}' is not a layout of this lab (layouts: {})",
            layouts
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// `[workloads] precondition`, `steady_state`, `round`, `max_rounds`: SNIA PTS on every
/// layout, checked as a workload's own keys are (`round` defaults to `time`, or
/// `[workloads.defaults] time`, else 60s).
fn pts(
    loc: &Locator,
    at: &dyn Fn(&str) -> Option<usize>,
    w: &RawWorkloads,
) -> Result<(Option<Precondition>, Option<SteadyState>), SpecError> {
    let precondition = match &w.precondition {
        None | Some(SteadyValue::Flag(false)) => None,
        Some(SteadyValue::Flag(true)) => Some(Precondition::Seq),
        Some(SteadyValue::Figure(k)) => Some(Precondition::parse(k).ok_or_else(|| {
            loc.err(
                at("precondition"),
                "workloads.precondition",
                format!("unknown kind '{k}' (use true, \"seq\" or \"random\")"),
            )
        })?),
    };
    let raw = crate::spec::RawWorkload {
        steady_state: w.steady_state.clone(),
        round: w.round.clone(),
        max_rounds: w.max_rounds,
        time: w
            .time
            .clone()
            .or_else(|| w.defaults.as_ref().and_then(|d| d.time.clone())),
        ..crate::spec::RawWorkload::default()
    };
    let steady = raw
        .steady(false)
        .map_err(|e| loc.err(at(&e.key), format!("workloads.{}", e.key), e.msg))?;
    if steady.is_some() && w.slo.is_some() {
        return Err(loc.err(
            at("steady_state"),
            "workloads.steady_state",
            "an SLO search runs at chosen rates, steady-state rounds closed-loop: drop slo or steady_state",
        ));
    }
    Ok((precondition, steady))
}

/// `[workloads] slo`, `budget`, `slo_precision` as one search's settings, checked as a
/// workload's own `slo` is.
fn lab_slo(w: &RawWorkloads) -> Result<crate::spec::Slo, String> {
    let raw = crate::spec::raw::RawWorkload {
        slo: w.slo.clone(),
        budget: w.budget.clone(),
        slo_precision: w.slo_precision,
        ..crate::spec::raw::RawWorkload::default()
    };
    raw.slo().map_err(|e| e.to_string())
}

/// Gives every block-IO workload without its own targets or rate the lab's SLO: each layout
/// then reports its capacity at the target for each (healthy and degraded alike).
fn set_slo(suite: &mut Suite, slo: &crate::spec::Slo) {
    for w in &mut suite.workloads {
        if let crate::spec::WorkloadKind::Io(io) = &mut w.kind {
            if io.slo.is_none() && io.open_loop.is_none() {
                io.slo = Some(slo.clone());
            }
        }
    }
}

/// The profiles' workloads then the inline ones, names unique.
fn listed_workloads(
    loc: &Locator,
    at: &dyn Fn(&str) -> Option<usize>,
    w: &RawWorkloads,
    names: &[String],
    scale: ProfileScale,
) -> Result<Suite, SpecError> {
    let mut suite = Suite {
        name: String::new(),
        workloads: Vec::new(),
    };
    for n in names {
        let p = profiles::profile(n, scale).ok_or_else(|| {
            loc.err(
                at("profiles"),
                "workloads.profiles",
                format!(
                    "unknown profile '{n}' (known: {})",
                    profiles::profile_names().join(", ")
                ),
            )
        })?;
        suite.workloads.extend(p.workloads);
    }
    let defaults = w.defaults.clone().unwrap_or_default();
    for (i, item) in w.workload.iter().enumerate() {
        let merged = item.get_ref().clone().or(&defaults);
        let valid = merged.validate().map_err(|e| {
            loc.err(
                Some(loc.line_of_key(item.span().start, "workloads.workload", &e.key)),
                format!("workloads.workload[{}].{}", i + 1, e.key),
                e.msg,
            )
        })?;
        suite.workloads.push(valid);
    }
    let mut names_seen = std::collections::HashSet::new();
    for wl in &suite.workloads {
        if !names_seen.insert(wl.name.clone()) {
            return Err(loc.err(
                at("profiles"),
                "workloads",
                format!(
                    "two workloads are named '{}'; names must be unique",
                    wl.name
                ),
            ));
        }
    }
    Ok(suite)
}
