//! `zfs = { vdev, vdevs, width, special, log, cache, spares, pool = {...}, dataset = {...} }`:
//! a ZFS pool across the disks, which is also the filesystem.
//!
//! ```toml
//! [[layout]]
//! name = "zfs-raidz2-special"
//! zfs = { vdev = "raidz2", width = 6, special = 2, pool = { ashift = 12 }, dataset = { recordsize = "1M", compression = "lz4" } }
//! ```
//!
//! `vdev` is `mirror`, `raidz1`..`raidz3` or zpool's dRAID word (`draid2:8d:2s`); `vdevs`
//! data vdevs of `width` disks each (default: one vdev of every disk left); `special` disks
//! in a mirrored special vdev (0 or at least 2), `log` SLOG disks (mirrored when 2+), `cache`
//! L2ARC disks, `spares` hot spares. Properties are passed to `zpool create -o` (pool) and
//! `zfs create -o` (the measured dataset), each checked against the known list first.

use super::raw::{RawLayout, RawZfs};
use super::section::{Cx, Draft, Raid, Section};
use crate::spec::SpecError;
use crate::stack::zfs::{VdevKind, ZfsOptions};
use crate::stack::{FsKind, RaidLayer, Stack};
use crate::units;

/// The ZFS RAID layer.
pub(super) struct Zfs;

/// Smallest device `zpool create` takes (SPA_MINDEVSIZE).
const MIN_DEVICE: u64 = 64 << 20;

impl Section for Zfs {
    fn raid_table(&self) -> Option<&'static str> {
        Some("zfs")
    }

    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.zfs.is_some().then_some("zfs")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        let Some(z) = &raw.zfs else {
            return Ok(());
        };
        refuse_other_layers(cx, raw, draft)?;
        let text = z.vdev.as_deref().ok_or_else(|| {
            cx.err(
                "zfs",
                "zfs.vdev",
                "missing; the vdev type (mirror, raidz1, raidz2, raidz3 or draid2:8d:2s)",
            )
        })?;
        let (mut vdev, children) =
            VdevKind::parse(text).map_err(|e| cx.err("vdev", "zfs.vdev", e))?;
        let vdevs = cx.count(z.vdevs, "zfs.vdevs", 1)?;
        if vdevs == 0 {
            return Err(cx.err("vdevs", "zfs.vdevs", "must be at least 1"));
        }
        let special = cx.count(z.special, "zfs.special", 0)?;
        let log = cx.count(z.log, "zfs.log", 0)?;
        let cache = cx.count(z.cache, "zfs.cache", 0)?;
        let spares = cx.count(z.spares, "zfs.spares", 0)?;
        if special == 1 {
            return Err(cx.err(
                "special",
                "zfs.special",
                "a special vdev holds the pool's metadata and must be a mirror; use special = 2 or more (or 0)",
            ));
        }
        let extra = special + log + cache + spares;
        let width = match (z.width, children) {
            (Some(_), _) => cx.count(z.width, "zfs.width", 0)?,
            (None, Some(c)) => c as usize,
            (None, None) => cx.pool.saturating_sub(extra) / vdevs,
        };
        if let (Some(c), true) = (children, z.width.is_some()) {
            if c as usize != width {
                return Err(cx.err(
                    "width",
                    "zfs.width",
                    format!("{text} names {c} children but width is {width}; make them agree"),
                ));
            }
        }
        vdev = default_draid_data(vdev, text, width);
        check_width(cx, z, vdev, text, width)?;
        let need = vdevs * width + extra;
        if need > cx.pool {
            let at = if z.width.is_some() { "width" } else { "vdev" };
            return Err(cx.err(
                at,
                if at == "width" { "zfs.width" } else { "zfs.vdev" },
                format!(
                    "the pool needs {need} disks ({vdevs} x {width} in vdevs + {extra} special/log/cache/spare), the lab has {}",
                    cx.pool
                ),
            ));
        }
        let pool = props(cx, z.pool.as_ref(), "pool", POOL_PROPS)?;
        let mut dataset = props(cx, z.dataset.as_ref(), "dataset", DATASET_PROPS)?;
        check_small_blocks(cx, &dataset, special)?;
        // A read served from the ARC is not a disk figure: the measured dataset caches only
        // metadata unless the spec says otherwise (the lab also caps the ARC).
        if !dataset.iter().any(|(k, _)| k == "primarycache") {
            dataset.push(("primarycache".into(), "metadata".into()));
        }
        let opts = ZfsOptions {
            vdev,
            vdevs,
            width,
            special,
            log,
            cache,
            spares,
            pool,
            dataset,
        };
        draft.fs = Some(FsKind::Zfs);
        draft.raid = Some(Raid {
            members: opts.data_disks(),
            spares: opts.extra_disks(),
            layer: RaidLayer::Zfs(opts),
            section: "zfs",
        });
        Ok(())
    }

    fn size(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        _stack: &Stack,
        member_size: Option<u64>,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        match (member_size, &raw.zfs) {
            (Some(sz), Some(_)) if sz < MIN_DEVICE => Err(cx.err(
                "zfs",
                "zfs",
                format!(
                    "zpool needs devices of at least 64MiB, the disks have {}; use bigger disks",
                    units::format_bytes(sz)
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// ZFS is its own volume manager and filesystem: no `fs`, LVM, mkfs or mount options.
fn refuse_other_layers(cx: &Cx, raw: &RawLayout, draft: &Draft) -> Result<(), SpecError> {
    if let Some(f) = draft.fs {
        return Err(cx.err(
            "fs",
            "fs",
            format!(
                "a zfs layer is its own filesystem; drop fs = \"{}\"",
                f.name()
            ),
        ));
    }
    if draft.lvm() {
        return Err(cx.err(
            "lvm",
            "lvm",
            "a zfs pool sits directly on the disks; drop lvm",
        ));
    }
    if raw.mkfs_options.is_some() {
        return Err(cx.err(
            "mkfs_options",
            "mkfs_options",
            "zfs has no mkfs; set pool = {...} and dataset = {...} properties in the zfs table",
        ));
    }
    if raw.mount_options.is_some() {
        return Err(cx.err(
            "mount_options",
            "mount_options",
            "zfs mounts its dataset itself; set dataset properties instead (e.g. atime = \"off\")",
        ));
    }
    Ok(())
}

/// A dRAID written without `:Dd` gets zpool's default of 8 data disks per group, or fewer
/// when the children leave less.
fn default_draid_data(vdev: VdevKind, text: &str, width: usize) -> VdevKind {
    match vdev {
        VdevKind::Draid { parity, spares, .. }
            if !text.split(':').skip(1).any(|p| p.ends_with('d')) =>
        {
            let room = width.saturating_sub(usize::from(parity) + spares as usize);
            VdevKind::Draid {
                parity,
                data: room.clamp(1, 8) as u32,
                spares,
            }
        }
        v => v,
    }
}

fn check_width(
    cx: &Cx,
    z: &RawZfs,
    vdev: VdevKind,
    text: &str,
    width: usize,
) -> Result<(), SpecError> {
    if width >= vdev.min_width() {
        return Ok(());
    }
    let (at, field) = if z.width.is_some() {
        ("width", "zfs.width")
    } else {
        ("vdev", "zfs.vdev")
    };
    let what = match vdev {
        VdevKind::Draid { .. } => "data + parity + spares".to_string(),
        _ => "disks".to_string(),
    };
    Err(cx.err(
        at,
        field,
        format!(
            "{text} needs at least {} {what} per vdev, the layout has {width}",
            vdev.min_width()
        ),
    ))
}

/// How one property's value is checked.
#[derive(Clone, Copy)]
enum Check {
    /// One of these words.
    Words(&'static [&'static str]),
    /// An integer in this range.
    Int(i64, i64),
    /// A power of two between these bytes (`128k`, `1M`).
    Pow2(u64, u64),
    /// Bytes up to this, 0 allowed (`special_small_blocks`).
    Size(u64),
    /// Any text zfs will check itself.
    Any,
}

const ON_OFF: &[&str] = &["on", "off"];

/// Pool properties `zpool create -o` takes here.
const POOL_PROPS: &[(&str, Check)] = &[
    ("ashift", Check::Int(9, 16)),
    ("autotrim", Check::Words(ON_OFF)),
    ("autoexpand", Check::Words(ON_OFF)),
    ("autoreplace", Check::Words(ON_OFF)),
    ("failmode", Check::Words(&["wait", "continue", "panic"])),
    ("comment", Check::Any),
];

/// Dataset properties `zfs create -o` takes here.
const DATASET_PROPS: &[(&str, Check)] = &[
    ("recordsize", Check::Pow2(512, 16 << 20)),
    ("compression", Check::Any),
    ("sync", Check::Words(&["standard", "always", "disabled"])),
    ("atime", Check::Words(ON_OFF)),
    ("relatime", Check::Words(ON_OFF)),
    ("primarycache", Check::Words(&["all", "metadata", "none"])),
    ("secondarycache", Check::Words(&["all", "metadata", "none"])),
    ("logbias", Check::Words(&["latency", "throughput"])),
    ("xattr", Check::Words(&["on", "off", "sa", "dir"])),
    (
        "dnodesize",
        Check::Words(&["legacy", "auto", "1k", "2k", "4k", "8k", "16k"]),
    ),
    (
        "redundant_metadata",
        Check::Words(&["all", "most", "some", "none"]),
    ),
    ("special_small_blocks", Check::Size(16 << 20)),
    (
        "checksum",
        Check::Words(&[
            "on",
            "off",
            "fletcher2",
            "fletcher4",
            "sha256",
            "sha512",
            "skein",
            "edonr",
            "blake3",
        ]),
    ),
    ("dedup", Check::Any),
    ("copies", Check::Int(1, 3)),
    ("direct", Check::Words(&["standard", "always", "disabled"])),
    ("prefetch", Check::Words(&["all", "metadata", "none"])),
];

/// Compression words zfs knows (levels `gzip-1`..`gzip-9`, `zstd-1`..`zstd-19`,
/// `zstd-fast-N` checked by shape).
fn compression_ok(v: &str) -> bool {
    let num = |s: &str, lo: u32, hi: u32| s.parse::<u32>().is_ok_and(|n| (lo..=hi).contains(&n));
    matches!(
        v,
        "on" | "off" | "lz4" | "lzjb" | "zle" | "gzip" | "zstd" | "zstd-fast"
    ) || v.strip_prefix("gzip-").is_some_and(|n| num(n, 1, 9))
        || v.strip_prefix("zstd-fast-")
            .is_some_and(|n| num(n, 1, 1000))
        || v.strip_prefix("zstd-").is_some_and(|n| num(n, 1, 19))
}

/// A property value as text: strings as written, booleans as on/off, integers in decimal.
fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.trim().to_string()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "on" } else { "off" }.to_string()),
        _ => None,
    }
}

fn props(
    cx: &Cx,
    table: Option<&toml::Table>,
    which: &str,
    known: &[(&str, Check)],
) -> Result<Vec<(String, String)>, SpecError> {
    let mut out = Vec::new();
    let Some(t) = table else {
        return Ok(out);
    };
    for (k, v) in t {
        let field = format!("zfs.{which}.{k}");
        let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
        let check = known.iter().find(|(n, _)| n == k).map(|(_, c)| *c);
        let Some(check) = check else {
            let hint = if k == "mountpoint" {
                "the lab mounts the dataset in its own directory; drop mountpoint".to_string()
            } else {
                format!(
                    "unknown {which} property '{k}' (known: {})",
                    names.join(", ")
                )
            };
            return Err(cx.err(k, &field, hint));
        };
        let text = value_text(v)
            .ok_or_else(|| cx.err(k, &field, "must be a string, an integer or true/false"))?;
        check_value(k, &text, check).map_err(|why| cx.err(k, &field, why))?;
        out.push((k.clone(), text));
    }
    Ok(out)
}

fn check_value(key: &str, v: &str, check: Check) -> Result<(), String> {
    match check {
        Check::Words(w) if !w.contains(&v) => Err(format!("'{v}' is not one of {}", w.join(", "))),
        Check::Int(lo, hi) => match v.parse::<i64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(()),
            _ => Err(format!("must be an integer from {lo} to {hi}, not '{v}'")),
        },
        Check::Pow2(lo, hi) => match units::parse_bytes(v) {
            Ok(b) if b.is_power_of_two() && (lo..=hi).contains(&b) => Ok(()),
            _ => Err(format!(
                "must be a power of two from {} to {} (e.g. 128k, 1M), not '{v}'",
                units::format_bytes(lo),
                units::format_bytes(hi)
            )),
        },
        Check::Size(hi) => match units::parse_bytes(v) {
            Ok(b) if b <= hi && (b == 0 || b.is_power_of_two()) => Ok(()),
            _ => Err(format!(
                "must be 0 or a power of two up to {}, not '{v}'",
                units::format_bytes(hi)
            )),
        },
        Check::Any if key == "compression" && !compression_ok(v) => Err(format!(
            "unknown compression '{v}' (use lz4, zstd, zstd-N, gzip-N, zle, on or off)"
        )),
        _ => Ok(()),
    }
}

/// `special_small_blocks` sends small blocks to the special vdev: it needs one.
fn check_small_blocks(
    cx: &Cx,
    dataset: &[(String, String)],
    special: usize,
) -> Result<(), SpecError> {
    let set = dataset
        .iter()
        .any(|(k, v)| k == "special_small_blocks" && units::parse_bytes(v).is_ok_and(|b| b > 0));
    if set && special == 0 {
        return Err(cx.err(
            "special_small_blocks",
            "zfs.dataset.special_small_blocks",
            "sends small blocks to a special vdev, and the pool has none; set special = 2",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "zfs_tests.rs"]
mod tests;
