//! The `[disks]` and `[workloads]` sections.

use std::path::PathBuf;

use toml::Spanned;

use super::raw::*;
use super::{DEFAULT_DISK_DIR, Disks, LabWorkloads, LayoutSpec, MAX_LOOP_DISKS, MIN_LOOP_SIZE};
use crate::spec::profiles::{self, ProfileScale};
use crate::spec::{SpecError, Suite};
use crate::units;

pub(super) fn parse_disks(
    loc: &Locator,
    raw: Option<&Spanned<RawDisks>>,
) -> Result<Disks, SpecError> {
    let Some(sd) = raw else {
        return Ok(Disks::None);
    };
    let d = sd.get_ref();
    let start = sd.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "disks", key));
    match (&d.devices, &d.loop_disks) {
        (Some(_), Some(_)) => Err(loc.err(
            at("loop"),
            "disks",
            "give either devices = [...] or loop = {...}, not both",
        )),
        (None, None) => Err(loc.err(
            at("disks"),
            "disks",
            "give devices = [\"/dev/sdb\", ...] or loop = { count = 4, size = \"1GiB\" }",
        )),
        (Some(devs), None) => {
            if devs.is_empty() {
                return Err(loc.err(at("devices"), "disks.devices", "the list is empty"));
            }
            let mut out: Vec<PathBuf> = Vec::new();
            for (i, d) in devs.iter().enumerate() {
                let key = format!("disks.devices[{}]", i + 1);
                let p = PathBuf::from(d);
                let meta = std::fs::metadata(&p).map_err(|e| {
                    loc.err(
                        at("devices"),
                        &key,
                        format!("{d}: {e}; name an existing block device"),
                    )
                })?;
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_block_device() {
                    return Err(loc.err(at("devices"), &key, format!("{d} is not a block device")));
                }
                let canon = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
                if out
                    .iter()
                    .any(|o| std::fs::canonicalize(o).unwrap_or_else(|_| o.clone()) == canon)
                {
                    return Err(loc.err(at("devices"), &key, format!("{d} is listed twice")));
                }
                out.push(p);
            }
            Ok(Disks::Devices(out))
        }
        (None, Some(l)) => {
            let count = l.count.ok_or_else(|| {
                loc.err(
                    at("count"),
                    "disks.loop.count",
                    "missing; how many disks (e.g. count = 4)",
                )
            })?;
            if count < 1 || count as usize > MAX_LOOP_DISKS {
                return Err(loc.err(
                    at("count"),
                    "disks.loop.count",
                    format!("must be between 1 and {MAX_LOOP_DISKS}"),
                ));
            }
            let size = match &l.size {
                None => 1 << 30,
                Some(v) => size_of(v).map_err(|m| loc.err(at("size"), "disks.loop.size", m))?,
            };
            if size < MIN_LOOP_SIZE {
                return Err(loc.err(
                    at("size"),
                    "disks.loop.size",
                    format!(
                        "{} is too small; loop disks need at least {}",
                        units::format_bytes(size),
                        units::format_bytes(MIN_LOOP_SIZE)
                    ),
                ));
            }
            let dir = PathBuf::from(l.dir.as_deref().unwrap_or(DEFAULT_DISK_DIR));
            if !dir.is_absolute() {
                return Err(loc.err(
                    at("dir"),
                    "disks.loop.dir",
                    "must be an absolute path (e.g. /var/tmp/iolab-disks)",
                ));
            }
            Ok(Disks::Loop {
                count: count as usize,
                size,
                dir,
                direct_io: l.direct_io,
            })
        }
    }
}

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
        });
    };
    let w = sw.get_ref();
    let start = sw.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "workloads", key));
    let mut scale = ProfileScale::default();
    if let Some(v) = &w.size {
        scale.size = Some(size_of(v).map_err(|e| loc.err(at("size"), "workloads.size", e))?);
    }
    if let Some(v) = &w.time {
        scale.runtime = Some(time_of(v).map_err(|e| loc.err(at("time"), "workloads.time", e))?);
    }
    let names = list_of(&w.profiles, split_commas);
    let mut suite = Suite {
        name: String::new(),
        workloads: Vec::new(),
    };
    for n in &names {
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
    let mut profiles_used = names;
    if suite.workloads.is_empty() {
        suite = profiles::profile("default", scale).unwrap_or_default();
        profiles_used = vec!["default".into()];
    }
    suite.name = if profiles_used.is_empty() {
        "lab".into()
    } else {
        profiles_used.join("+")
    };
    let repeat = match w.repeat {
        None => 3,
        Some(n) if (1..=1000).contains(&n) => n as u32,
        Some(_) => {
            return Err(loc.err(
                at("repeat"),
                "workloads.repeat",
                "must be between 1 and 1000",
            ));
        }
    };
    if let Some(b) = &w.baseline {
        if !layouts.iter().any(|l| &l.name == b) {
            return Err(loc.err(
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
            ));
        }
    }
    Ok(LabWorkloads {
        profiles: profiles_used,
        suite,
        repeat,
        baseline: w.baseline.clone(),
        size: scale.size,
        runtime: scale.runtime,
    })
}
