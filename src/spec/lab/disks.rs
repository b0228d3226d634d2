//! The `[disks]` table: real devices (checked against the [`Host`]) or loop disks.

use std::path::PathBuf;

use toml::Spanned;

use super::SlowDisk;
use super::host::{DeviceProblem, Host};
use super::raw::{RawDisks, RawLoop};
use super::{DEFAULT_DISK_DIR, Disks, MAX_LOOP_DISKS, MIN_LOOP_SIZE};
use crate::spec::SpecError;
use crate::spec::locate::Locator;
use crate::units;

/// The line of `key` in the `[disks]` table.
type At<'a> = dyn Fn(&str) -> Option<usize> + 'a;

pub(super) fn parse_disks(
    loc: &Locator,
    raw: Option<&Spanned<RawDisks>>,
    host: &dyn Host,
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
        (Some(devs), None) => parse_devices(loc, &at, devs, host),
        (None, Some(l)) => parse_loop(loc, &at, l),
    }
}

fn parse_devices(
    loc: &Locator,
    at: &At,
    devs: &[String],
    host: &dyn Host,
) -> Result<Disks, SpecError> {
    if devs.is_empty() {
        return Err(loc.err(at("devices"), "disks.devices", "the list is empty"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for (i, d) in devs.iter().enumerate() {
        let key = format!("disks.devices[{}]", i + 1);
        let p = PathBuf::from(d);
        match host.block_device(&p) {
            Ok(()) => {}
            Err(DeviceProblem::Unreadable(e)) => {
                return Err(loc.err(
                    at("devices"),
                    &key,
                    format!("{d}: {e}; name an existing block device"),
                ));
            }
            Err(DeviceProblem::NotBlock) => {
                return Err(loc.err(at("devices"), &key, format!("{d} is not a block device")));
            }
        }
        let canon = host.canonical(&p);
        if out.iter().any(|o| host.canonical(o) == canon) {
            return Err(loc.err(at("devices"), &key, format!("{d} is listed twice")));
        }
        out.push(p);
    }
    Ok(Disks::Devices(out))
}

fn parse_loop(loc: &Locator, at: &At, l: &RawLoop) -> Result<Disks, SpecError> {
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
        Some(v) => v
            .bytes()
            .map_err(|m| loc.err(at("size"), "disks.loop.size", m))?,
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

/// Longest latency a slow disk may add (a dead disk is a fault, not a slow one).
const MAX_LATENCY_MS: u32 = 10_000;

/// `[disks] slow = [{ disk, bandwidth, iops, latency }]`: checked against the disk count.
pub(super) fn parse_slow(
    loc: &Locator,
    raw: Option<&Spanned<RawDisks>>,
    disks: &Disks,
) -> Result<Vec<SlowDisk>, SpecError> {
    let Some(sd) = raw else {
        return Ok(Vec::new());
    };
    let Some(list) = &sd.get_ref().slow else {
        return Ok(Vec::new());
    };
    let line = Some(loc.line_of_key(sd.span().start, "disks", "slow"));
    let count = disks.count();
    let mut out: Vec<SlowDisk> = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let key = |k: &str| format!("disks.slow[{}].{k}", i + 1);
        let disk = match s.disk {
            None => return Err(loc.err(line, key("disk"), "missing; which disk (0 is the first)")),
            Some(d) if d < 0 || d as usize >= count => {
                return Err(loc.err(
                    line,
                    key("disk"),
                    format!(
                        "disk {d} does not exist; the lab has {count} disks (0 to {})",
                        count.saturating_sub(1)
                    ),
                ));
            }
            Some(d) => d as usize,
        };
        if out.iter().any(|o| o.disk == disk) {
            return Err(loc.err(line, key("disk"), format!("disk {disk} is listed twice")));
        }
        let bandwidth = match &s.bandwidth {
            None => None,
            Some(v) => {
                let b = v.bytes().map_err(|e| loc.err(line, key("bandwidth"), e))?;
                if b < 64 << 10 {
                    return Err(loc.err(
                        line,
                        key("bandwidth"),
                        "at least 64KiB (per second, e.g. \"20MiB\")",
                    ));
                }
                Some(b)
            }
        };
        let iops = match s.iops {
            None => None,
            Some(n) if (1..=10_000_000).contains(&n) => Some(n as u64),
            Some(_) => return Err(loc.err(line, key("iops"), "must be between 1 and 10000000")),
        };
        let latency_ms = match &s.latency {
            None => None,
            Some(v) => {
                let d = v.duration().map_err(|e| loc.err(line, key("latency"), e))?;
                let ms = d.as_millis();
                if ms == 0 || ms > u128::from(MAX_LATENCY_MS) {
                    return Err(loc.err(
                        line,
                        key("latency"),
                        format!("must be between 1ms and {MAX_LATENCY_MS}ms (e.g. \"8ms\")"),
                    ));
                }
                Some(ms as u32)
            }
        };
        if bandwidth.is_none() && iops.is_none() && latency_ms.is_none() {
            return Err(loc.err(
                line,
                key("disk"),
                "says nothing about the disk; give bandwidth, iops and/or latency",
            ));
        }
        out.push(SlowDisk {
            disk,
            bandwidth,
            iops,
            latency_ms,
        });
    }
    Ok(out)
}
