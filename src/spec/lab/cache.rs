//! `cache = { kind = "lvmcache" | "bcache" | "writecache", disks = 1, mode = "writethrough" |
//! "writeback", size = "...", fail = false }`: an SSD cache between the RAID (or its LVM volume)
//! and the filesystem, on disks of its own taken after the members, spares and md's journal
//! disk. `writecache` (dm-writecache) is write-back only.

use super::raw::{RawCache, RawLayout};
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::stack::cache::{CacheKind, CacheMode, CacheOptions};
use crate::stack::{Layer, RaidLayer, Stack};
use crate::units;

/// The smallest cache the lab builds: dm-cache's metadata and bcache's buckets and journal
/// need room of their own.
pub(super) const MIN_CACHE: u64 = 32 << 20;

/// Room LVM keeps on each cache PV (its label and metadata area, extent rounding).
const PV_OVERHEAD: u64 = 8 << 20;

/// The cache layer.
pub(super) struct Cache;

impl Section for Cache {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.cache.is_some().then_some("cache")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        let Some(c) = &raw.cache else {
            return Ok(());
        };
        let kind = kind(cx, c)?;
        let mode = match &c.mode {
            None => kind.default_mode(),
            Some(m) => CacheMode::parse(m).ok_or_else(|| {
                cx.err(
                    "mode",
                    "cache.mode",
                    format!("unknown mode '{m}' (use writethrough or writeback)"),
                )
            })?,
        };
        if !kind.modes().contains(&mode) {
            return Err(cx.err(
                "mode",
                "cache.mode",
                format!(
                    "{} writes back only (dm-writecache has no writethrough); set mode = \"writeback\" or use kind = \"lvmcache\"",
                    kind.name()
                ),
            ));
        }
        let disks = cx.count(c.disks, "cache.disks", 1)?;
        if disks == 0 {
            return Err(cx.err(
                "disks",
                "cache.disks",
                "a cache needs at least 1 disk; set disks = 1 (or drop the cache table)",
            ));
        }
        if kind == CacheKind::Bcache && disks > 1 {
            return Err(cx.err(
                "disks",
                "cache.disks",
                "bcache caches on one disk here; set disks = 1 (lvmcache can span several)",
            ));
        }
        let size = match &c.size {
            None => None,
            Some(v) => {
                let b = v.bytes().map_err(|e| cx.err("size", "cache.size", e))?;
                if b < MIN_CACHE {
                    return Err(cx.err(
                        "size",
                        "cache.size",
                        format!(
                            "a cache needs at least {}; raise size",
                            units::format_bytes(MIN_CACHE)
                        ),
                    ));
                }
                Some(b)
            }
        };
        if kind.is_lvm() {
            if raw.lvm == Some(false) {
                let k = kind.name();
                return Err(cx.err(
                    "lvm",
                    "lvm",
                    format!("{k} is an LVM layer; drop lvm = false ({k} implies lvm = true)"),
                ));
            }
            draft.add(Layer::Lvm);
        }
        let fail = c.fail.unwrap_or(false);
        if fail && !raw.degrade.unwrap_or(false) {
            return Err(cx.err(
                "fail",
                "cache.fail",
                "the cache device fails in the degrade step; set degrade = true (or drop fail)",
            ));
        }
        draft.add(Layer::Cache(CacheOptions {
            kind,
            mode,
            disks,
            size,
            fail,
        }));
        Ok(())
    }

    fn check(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        stack: &Stack,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let Some(c) = stack.cache() else {
            return Ok(());
        };
        if raw.powercut.is_some() {
            // After a cut the lab assembles each layer again from its disks: writecache comes
            // back with the VG (`vgchange -ay`); the other caches not yet, nor a cache under
            // the dm device the lab fails it through.
            let why = if c.kind != CacheKind::Writecache {
                format!(
                    "a layout with a {} cache cannot be power-cut yet; drop powercut or the cache table (kind = \"writecache\" can be)",
                    c.kind.name()
                )
            } else if c.fail {
                "a writecache that the lab fails cannot be power-cut too; drop powercut or cache.fail"
                    .to_string()
            } else {
                String::new()
            };
            if !why.is_empty() {
                return Err(cx.err("powercut", "powercut", why));
            }
        }
        let why = match stack.raid() {
            RaidLayer::Md(_) | RaidLayer::None => return Ok(()),
            RaidLayer::Btrfs { .. } => {
                "btrfs is the RAID and the filesystem at once, so nothing sits between them; \
                 put the cache over mdadm = {...} (or one disk) with fs = \"btrfs\""
            }
            RaidLayer::Zfs(_) => {
                "zfs caches in its own pool; drop the cache table and set zfs.cache = 1 (L2ARC)"
            }
        };
        Err(cx.err("cache", "cache", why))
    }

    fn size(
        &self,
        cx: &Cx,
        _raw: &RawLayout,
        stack: &Stack,
        member_size: Option<u64>,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let (Some(c), Some(disk)) = (stack.cache(), member_size) else {
            return Ok(());
        };
        let room = match c.kind {
            CacheKind::Lvmcache | CacheKind::Writecache => {
                // A cache the lab fails sits on a dm device 1MiB into each disk.
                let dm = if c.fail { 1 << 20 } else { 0 };
                disk.saturating_sub(PV_OVERHEAD + dm) * c.disks as u64
            }
            CacheKind::Bcache => disk,
        };
        let (at, field, what) = match c.size {
            Some(s) if s > room => ("size", "cache.size", s),
            None if room < MIN_CACHE => ("cache", "cache", room),
            _ => return Ok(()),
        };
        Err(cx.err(
            at,
            field,
            format!(
                "the cache disks hold {} of cache, {} asked; lower size or use bigger disks",
                units::format_bytes(room),
                units::format_bytes(what)
            ),
        ))
    }
}

fn kind(cx: &Cx, c: &RawCache) -> Result<CacheKind, SpecError> {
    let k = c.kind.as_ref().ok_or_else(|| {
        cx.err(
            "cache",
            "cache.kind",
            "missing; which cache: kind = \"lvmcache\", \"bcache\" or \"writecache\"",
        )
    })?;
    CacheKind::parse(k).ok_or_else(|| {
        cx.err(
            "kind",
            "cache.kind",
            format!("unknown cache '{k}' (use lvmcache, bcache or writecache)"),
        )
    })
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
