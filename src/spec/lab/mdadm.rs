//! `mdadm = { level, members, spares, chunk, bitmap, bitmap_chunk, assume_clean,
//! consistency_policy }` and its runtime tunables (`stripe_cache_size`, `group_thread_cnt`,
//! `sync_speed_min/max`, `read_ahead`, the members' `scheduler`): a Linux md array under LVM
//! and/or a filesystem.

use super::raw::{RawLayout, RawMd};
use super::section::{Cx, Draft, Raid, Section};
use crate::spec::SpecError;
use crate::spec::locate::SizeValue;

use crate::stack::{MdLevel, MdOptions, RaidLayer};

/// The md RAID layer.
pub(super) struct Mdadm;

impl Section for Mdadm {
    fn raid_table(&self) -> Option<&'static str> {
        Some("mdadm")
    }

    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.mdadm.is_some().then_some("mdadm")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        let Some(m) = &raw.mdadm else {
            return Ok(());
        };
        let lv = m.level.as_ref().ok_or_else(|| {
            cx.err(
                "mdadm",
                "mdadm.level",
                "missing; the RAID level (0, 1, 4, 5, 6 or 10)",
            )
        })?;
        let lv_s = lv.text();
        let level = MdLevel::parse(&lv_s).ok_or_else(|| {
            cx.err(
                "level",
                "mdadm.level",
                format!("unknown level '{lv_s}' (use 0, 1, 4, 5, 6 or 10)"),
            )
        })?;
        let spares = cx.count(m.spares, "mdadm.spares", 0)?;
        if spares > 0 && !level.redundant() {
            return Err(cx.err(
                "spares",
                "mdadm.spares",
                "raid0 cannot use spares; drop spares or pick a redundant level",
            ));
        }
        // A write journal takes a disk of its own, after the spares.
        let journal = usize::from(m.consistency_policy.as_deref() == Some("journal"));
        let cache = draft.cache_disks();
        let members = cx.count(
            m.members,
            "mdadm.members",
            cx.pool.saturating_sub(spares + journal + cache),
        )?;
        if members < level.min_devices() {
            let (at, field) = if m.members.is_some() {
                ("members", "mdadm.members")
            } else {
                ("level", "mdadm.level")
            };
            return Err(cx.err(
                at,
                field,
                format!(
                    "md raid{} needs at least {} members, the layout has {members}",
                    level.number(),
                    level.min_devices()
                ),
            ));
        }
        let chunk = chunk(cx, m, level)?;
        let bitmap = bitmap(cx, m, level)?;
        let bitmap_chunk = bitmap_chunk(cx, m, bitmap.as_deref())?;
        let consistency_policy = consistency_policy(cx, m, level, bitmap.as_deref())?;
        let (sync_speed_min, sync_speed_max) = sync_speeds(cx, m, level)?;
        let stripe_cache_size = tunable(
            cx,
            m.stripe_cache_size,
            level,
            "stripe_cache_size",
            17..=32768,
        )?;
        let group_thread_cnt =
            tunable(cx, m.group_thread_cnt, level, "group_thread_cnt", 0..=8192)?;
        let read_ahead = read_ahead(cx, m.read_ahead.as_ref(), "read_ahead", "mdadm.read_ahead")?;
        let scheduler = scheduler(cx, m.scheduler.as_deref())?;
        let fs = draft.fs.ok_or_else(|| {
            cx.err(
                "mdadm",
                "fs",
                "missing; the filesystem on the array (xfs, ext4 or btrfs)",
            )
        })?;
        draft.fs = Some(fs);
        draft.raid = Some(Raid {
            layer: RaidLayer::Md(MdOptions {
                level,
                chunk,
                bitmap,
                bitmap_chunk,
                assume_clean: m.assume_clean.unwrap_or(false),
                consistency_policy,
                sync_speed_min,
                sync_speed_max,
                stripe_cache_size,
                group_thread_cnt,
                read_ahead,
                scheduler,
            }),
            members,
            spares,
            section: "mdadm",
        });
        Ok(())
    }
}

fn chunk(cx: &Cx, m: &RawMd, level: MdLevel) -> Result<Option<u64>, SpecError> {
    let Some(v) = &m.chunk else {
        return Ok(None);
    };
    let c = v.bytes().map_err(|e| cx.err("chunk", "mdadm.chunk", e))?;
    if !level.has_chunk() {
        return Err(cx.err("chunk", "mdadm.chunk", "raid1 has no chunks; drop chunk"));
    }
    if c < 4096 || !c.is_power_of_two() {
        return Err(cx.err(
            "chunk",
            "mdadm.chunk",
            "must be a power of two of at least 4k (e.g. 512k)",
        ));
    }
    Ok(Some(c))
}

fn bitmap(cx: &Cx, m: &RawMd, level: MdLevel) -> Result<Option<String>, SpecError> {
    match m.bitmap.as_deref() {
        None => Ok(None),
        Some(b @ ("internal" | "none")) => {
            if b == "internal" && !level.redundant() {
                return Err(cx.err(
                    "bitmap",
                    "mdadm.bitmap",
                    "raid0 has no redundancy to track; drop bitmap",
                ));
            }
            Ok(Some(b.to_string()))
        }
        Some(o) => Err(cx.err(
            "bitmap",
            "mdadm.bitmap",
            format!("unknown bitmap '{o}' (use internal or none)"),
        )),
    }
}

fn bitmap_chunk(cx: &Cx, m: &RawMd, bitmap: Option<&str>) -> Result<Option<u64>, SpecError> {
    let Some(v) = &m.bitmap_chunk else {
        return Ok(None);
    };
    let c = v
        .bytes()
        .map_err(|e| cx.err("bitmap_chunk", "mdadm.bitmap_chunk", e))?;
    if bitmap != Some("internal") {
        return Err(cx.err(
            "bitmap_chunk",
            "mdadm.bitmap_chunk",
            "needs bitmap = \"internal\"",
        ));
    }
    if c < 4096 || !c.is_power_of_two() {
        return Err(cx.err(
            "bitmap_chunk",
            "mdadm.bitmap_chunk",
            "must be a power of two of at least 4k (e.g. 64M)",
        ));
    }
    Ok(Some(c))
}

/// `consistency_policy`: `resync` (mdadm's default) or `ppl` (RAID5 only, no bitmap: md writes
/// a partial parity log beside each stripe update, so a crash cannot leave parity wrong).
fn consistency_policy(
    cx: &Cx,
    m: &RawMd,
    level: MdLevel,
    bitmap: Option<&str>,
) -> Result<Option<String>, SpecError> {
    let field = "mdadm.consistency_policy";
    match m.consistency_policy.as_deref() {
        None => Ok(None),
        Some("resync") => {
            if !level.redundant() {
                return Err(cx.err(
                    "consistency_policy",
                    field,
                    "raid0 has no redundancy to keep consistent; drop consistency_policy",
                ));
            }
            Ok(Some("resync".into()))
        }
        Some("ppl") => {
            if level != MdLevel::Raid5 {
                return Err(cx.err(
                    "consistency_policy",
                    field,
                    format!(
                        "md keeps a partial parity log only for raid5, not raid{}; drop consistency_policy or use level = 5",
                        level.number()
                    ),
                ));
            }
            if bitmap == Some("internal") {
                return Err(cx.err(
                    "consistency_policy",
                    field,
                    "ppl and a write-intent bitmap exclude each other in md; drop bitmap or use resync",
                ));
            }
            Ok(Some("ppl".into()))
        }
        Some("journal") => {
            if !matches!(level, MdLevel::Raid4 | MdLevel::Raid5 | MdLevel::Raid6) {
                return Err(cx.err(
                    "consistency_policy",
                    field,
                    format!(
                        "md keeps a write journal only for raid4, raid5 and raid6, not raid{}; drop consistency_policy or pick a parity level",
                        level.number()
                    ),
                ));
            }
            if bitmap == Some("internal") {
                return Err(cx.err(
                    "consistency_policy",
                    field,
                    "a write journal and a write-intent bitmap exclude each other in md; drop bitmap",
                ));
            }
            Ok(Some("journal".into()))
        }
        Some(o) => Err(cx.err(
            "consistency_policy",
            field,
            format!("unknown '{o}' (use resync or ppl)"),
        )),
    }
}

/// `stripe_cache_size` / `group_thread_cnt`: RAID4/5/6 runtime tunables, written to the
/// array's sysfs before the workloads; `range` is what md's own store function accepts.
fn tunable(
    cx: &Cx,
    v: Option<i64>,
    level: MdLevel,
    key: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<u64>, SpecError> {
    let Some(n) = v else { return Ok(None) };
    let field = format!("mdadm.{key}");
    if !level.has_parity() {
        return Err(cx.err(
            key,
            &field,
            format!(
                "md has a stripe cache and parity threads only on raid4, raid5 and raid6, not raid{}; drop {key}",
                level.number()
            ),
        ));
    }
    if !range.contains(&n) {
        return Err(cx.err(
            key,
            &field,
            format!(
                "{n} is outside what md accepts ({} to {})",
                range.start(),
                range.end()
            ),
        ));
    }
    Ok(u64::try_from(n).ok())
}

/// `sync_speed_min` / `sync_speed_max`: the array's recovery speed limits, per second
/// (`"50MiB"`); md's `sync_speed_min`/`max` files take KiB/s.
fn sync_speeds(
    cx: &Cx,
    m: &RawMd,
    level: MdLevel,
) -> Result<(Option<u64>, Option<u64>), SpecError> {
    let one = |v: &Option<SizeValue>, key: &str, field: &str| -> Result<Option<u64>, SpecError> {
        let Some(v) = v else { return Ok(None) };
        if !level.redundant() {
            return Err(cx.err(
                key,
                field,
                "raid0 never rebuilds or resyncs; drop the speed limit",
            ));
        }
        let b = v.bytes().map_err(|e| cx.err(key, field, e))?;
        if b < 1024 {
            return Err(cx.err(
                key,
                field,
                "below 1KiB per second; give a speed such as \"50MiB\" (per second)",
            ));
        }
        Ok(Some(b))
    };
    let min = one(&m.sync_speed_min, "sync_speed_min", "mdadm.sync_speed_min")?;
    let max = one(&m.sync_speed_max, "sync_speed_max", "mdadm.sync_speed_max")?;
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(cx.err(
                "sync_speed_min",
                "mdadm.sync_speed_min",
                "above sync_speed_max; the floor must not exceed the ceiling",
            ));
        }
    }
    Ok((min, max))
}

/// The IO schedulers a member may get (what `/sys/block/X/queue/scheduler` lists on a blk-mq
/// kernel).
pub(crate) const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "bfq", "kyber"];

/// A read-ahead (`"4MiB"`: md's `mdadm.read_ahead`, the filesystem device's `read_ahead`), set
/// with `blockdev --setra` in 512-byte sectors, so a whole number of them; at most what the
/// kernel's `read_ahead_kb` holds. `key` is the spec key as written, `field` its full name.
pub(super) fn read_ahead(
    cx: &Cx,
    v: Option<&SizeValue>,
    key: &str,
    field: &str,
) -> Result<Option<u64>, SpecError> {
    let Some(v) = v else { return Ok(None) };
    let b = v.bytes().map_err(|e| cx.err(key, field, e))?;
    if b % 512 != 0 || b > (1 << 30) {
        return Err(cx.err(
            key,
            field,
            "must be a multiple of 512 bytes up to 1GiB, e.g. \"4MiB\" (blockdev --setra counts sectors)",
        ));
    }
    Ok(Some(b))
}

/// `scheduler`: the members' IO scheduler, one of [`SCHEDULERS`].
fn scheduler(cx: &Cx, v: Option<&str>) -> Result<Option<String>, SpecError> {
    let Some(v) = v else { return Ok(None) };
    if SCHEDULERS.contains(&v) {
        return Ok(Some(v.to_string()));
    }
    Err(cx.err(
        "scheduler",
        "mdadm.scheduler",
        format!("unknown scheduler '{v}' (use {})", SCHEDULERS.join(", ")),
    ))
}
