//! ZFS layouts in the plan: usable capacity the way OpenZFS 2.x allocates it, and the resilver
//! figures that differ from md's (their speed is predicted with the others', in `perf.rs`).
//!
//! Capacity, per data vdev (formulas and sources in `docs/plan-model.md`):
//! 1. each child loses its labels and boot area: `osize = P2ALIGN(disk, 256KiB)`,
//!    `asize = osize - 4MiB - 512KiB`;
//! 2. the vdev's allocatable size: mirror one child, raidz `width x child`, dRAID
//!    (`vdev_draid_open`) each child less 32MiB kept for dRAID expansion
//!    (`VDEV_DRAID_REFLOW_RESERVE`), in whole 16MiB rows, times `children - spares`, rounded
//!    down to whole groups (`data + parity` rows of 16MiB);
//! 3. it is cut into metaslabs of `2^ms_shift` bytes (`vdev_metaslab_set_size`: about 200 of
//!    them, at least 16MiB, at most 16GiB each); the tail that is no whole metaslab is lost,
//!    and from 64 metaslabs up one goes to the embedded ZIL (`zfs_embedded_slog_min_ms`);
//!    a dRAID metaslab starts and ends on a whole stripe (`vdev_draid_metaslab_init`);
//! 4. a record of `recordsize` bytes takes `alloc(recordsize)` sectors: raidz
//!    `s + p x ceil(s / (w - p))` rounded up to a multiple of `p + 1` (`vdev_raidz_asize`),
//!    dRAID `ceil(s / d) x (d + p)` (fixed stripe width), mirror `s`;
//! 5. the pool keeps the slop reserve: `clamp(space / 32, min(128MiB, space / 2), 128GiB)`.
//!
//! Usable = sum over vdevs of `metaslab bytes x recordsize / alloc(recordsize)`, less slop:
//! what records of that size really hold. `zfs list` reports the same with 128KiB records
//! (its deflate ratio is fixed at 128KiB), given in [`ZfsCapacity::zfs_list`].

use super::layout::{Layout, Level};

/// Inputs only ZFS layouts use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZfsParams {
    /// Dataset recordsize, bytes (default 128KiB).
    pub recordsize: u64,
    /// Pool ashift: sectors of `2^ashift` bytes (default 12).
    pub ashift: u32,
    /// Share of the pool that holds data when a disk fails (default 0.5): a resilver copies
    /// allocated data only.
    pub fill: f64,
}

impl Default for ZfsParams {
    fn default() -> Self {
        ZfsParams {
            recordsize: 128 << 10,
            ashift: 12,
            fill: 0.5,
        }
    }
}

/// Front labels (2 x 256KiB) and the 3.5MiB boot area.
pub const LABEL_START: u64 = 4 << 20;
/// Back labels (2 x 256KiB).
pub const LABEL_END: u64 = 512 << 10;
/// `sizeof(vdev_label_t)`: a child's size is aligned down to it.
pub const LABEL_ALIGN: u64 = 256 << 10;
/// dRAID allocates children in rows of this height.
pub const DRAID_ROW: u64 = 16 << 20;
/// The end of every dRAID child kept for dRAID expansion (`VDEV_DRAID_REFLOW_RESERVE`, two
/// rows): the 32MiB the planner missed on each child (28% too much on 256MiB disks).
pub const DRAID_REFLOW_RESERVE: u64 = 2 * DRAID_ROW;
pub use crate::stack::zfs::{MAX_SLOP, MIN_SLOP, slop};

/// A vdev's shape for the allocation rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VdevShape {
    /// `n`-way mirror.
    Mirror,
    /// RAID-Z of `width` children with `parity`.
    Raidz {
        /// Children.
        width: u64,
        /// Parity.
        parity: u64,
    },
    /// dRAID with `data + parity` per group over `children`, `spares` distributed spares.
    Draid {
        /// Children.
        children: u64,
        /// Data per group.
        data: u64,
        /// Parity per group.
        parity: u64,
        /// Distributed spares.
        spares: u64,
    },
}

/// Sectors a record of `psize` bytes takes on a vdev (`vdev_*_asize`, in sectors).
pub fn alloc_sectors(shape: VdevShape, psize: u64, ashift: u32) -> u64 {
    let s = (psize.max(1) - 1) / (1 << ashift) + 1;
    match shape {
        VdevShape::Mirror => s,
        VdevShape::Raidz { width, parity } => {
            let data_cols = width.saturating_sub(parity).max(1);
            let total = s + parity * s.div_ceil(data_cols);
            total.div_ceil(parity + 1) * (parity + 1)
        }
        VdevShape::Draid { data, parity, .. } => s.div_ceil(data.max(1)) * (data + parity),
    }
}

/// A child's allocatable bytes: aligned to a label, less labels and boot area.
pub fn child_asize(disk: u64) -> u64 {
    (disk / LABEL_ALIGN * LABEL_ALIGN).saturating_sub(LABEL_START + LABEL_END)
}

/// The vdev's allocatable bytes before metaslabs.
pub fn vdev_asize(shape: VdevShape, disk: u64) -> u64 {
    let c = child_asize(disk);
    match shape {
        VdevShape::Mirror => c,
        VdevShape::Raidz { width, .. } => c.saturating_mul(width),
        VdevShape::Draid {
            children,
            data,
            parity,
            spares,
        } => {
            let rows = c.saturating_sub(DRAID_REFLOW_RESERVE) / DRAID_ROW * DRAID_ROW;
            let group = (data + parity).max(1) * DRAID_ROW;
            rows.saturating_mul(children.saturating_sub(spares)) / group * group
        }
    }
}

/// `highbit64`: the 1-based index of the highest set bit (0 for 0).
fn highbit(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Metaslab size shift for a vdev of `asize` bytes (`vdev_metaslab_set_size`, OpenZFS 2.x:
/// default 512MiB; under 16 metaslabs: `highbit(asize/16)`, at least 24; over 200:
/// `highbit(asize/200)`, at most 34; over 131072 metaslabs: `highbit(asize/131072)`).
pub fn metaslab_shift(asize: u64) -> u32 {
    let count = asize >> 29;
    let mut shift = if count < 16 {
        highbit(asize / 16).max(24)
    } else if count > 200 {
        highbit(asize / 200).min(34)
    } else {
        29
    };
    if asize >> shift > 131_072 {
        shift = highbit(asize / 131_072);
    }
    shift
}

/// Bytes of whole metaslabs in the normal class (less the embedded-log metaslab when the
/// vdev has 64 or more).
pub fn metaslab_bytes(asize: u64) -> u64 {
    let shift = metaslab_shift(asize);
    let mut count = asize >> shift;
    if count >= 64 {
        count -= 1;
    }
    count << shift
}

/// [`metaslab_bytes`] of a vdev whose metaslabs must start and end on a whole stripe of
/// `stripe` bytes (dRAID: `(data + parity) << ashift`; `vdev_draid_metaslab_init` moves each
/// start up to the next stripe and cuts the size down to whole stripes).
pub fn metaslab_bytes_striped(asize: u64, stripe: u64) -> u64 {
    let shift = metaslab_shift(asize);
    let ms = 1u64 << shift;
    let total = asize >> shift;
    let stripe = stripe.max(1);
    // From 64 metaslabs one goes to the embedded log; which one moves the sum by less than a
    // stripe, so the first is left out.
    let first = u64::from(total >= 64);
    (first..total)
        .map(|i| {
            let start = i << shift;
            let astart = start.div_ceil(stripe) * stripe;
            (ms - (astart - start)) / stripe * stripe
        })
        .sum()
}

/// One layout's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZfsCapacity {
    /// Bytes of whole metaslabs over all data vdevs (raw, parity included).
    pub allocatable: u64,
    /// Bytes records of the given recordsize hold, slop taken out: the usable capacity.
    pub usable: u64,
    /// What `zfs list` shows as USED + AVAIL on the empty pool (128KiB deflate ratio).
    pub zfs_list: u64,
    /// The slop reserve taken out.
    pub slop: u64,
}

/// The shape of each data vdev of a ZFS layout, `None` for other levels.
pub fn shape(layout: &Layout) -> Option<VdevShape> {
    let n = u64::from(layout.per_group);
    match layout.level() {
        Level::ZfsMirror => Some(VdevShape::Mirror),
        Level::Raidz1 | Level::Raidz2 | Level::Raidz3 => Some(VdevShape::Raidz {
            width: n,
            parity: u64::from(layout.level().parity().unwrap_or(1)),
        }),
        Level::Draid {
            parity,
            data,
            spares,
        } => Some(VdevShape::Draid {
            children: n,
            data: u64::from(data),
            parity: u64::from(parity),
            spares: u64::from(spares),
        }),
        _ => None,
    }
}

/// Capacity of a ZFS layout with disks of `disk` bytes; `None` for other levels.
pub fn capacity(layout: &Layout, disk: u64, p: &ZfsParams) -> Option<ZfsCapacity> {
    let sh = shape(layout)?;
    let groups = u128::from(layout.spec.groups);
    let asize = vdev_asize(sh, disk);
    let ms = u128::from(match sh {
        VdevShape::Draid { data, parity, .. } => {
            metaslab_bytes_striped(asize, (data + parity) << p.ashift)
        }
        _ => metaslab_bytes(asize),
    });
    let sector = 1u128 << p.ashift;
    let rec = u128::from(p.recordsize);
    let alloc = u128::from(alloc_sectors(sh, p.recordsize, p.ashift)) * sector;
    let alloc_128k = u128::from(alloc_sectors(sh, 128 << 10, p.ashift)) * sector;
    // zfs list: `(space >> 9) x deflate_ratio`, the ratio `128KiB / (asize(128KiB) >> 9)`.
    let ratio = (128u128 << 10) / (alloc_128k >> 9).max(1);
    let listed = groups * ((ms >> 9) * ratio);
    let data = groups * ms * rec / alloc.max(1);
    let slop_bytes = u128::from(slop(u64::try_from(listed).ok()?));
    Some(ZfsCapacity {
        allocatable: u64::try_from(groups * ms).ok()?,
        usable: u64::try_from(data.saturating_sub(slop_bytes)).ok()?,
        zfs_list: u64::try_from(listed.saturating_sub(slop_bytes)).ok()?,
        slop: u64::try_from(slop_bytes).ok()?,
    })
}

/// How much faster than one disk's write speed a resilver goes: 1 for mirrors and raidz
/// (the new disk's writes bind), `(children - 1) / (data + 1)` for a dRAID rebuilding onto
/// its distributed spares (every child reads and writes a share).
pub fn resilver_speedup(layout: &Layout) -> f64 {
    match shape(layout) {
        Some(VdevShape::Draid {
            children,
            data,
            spares,
            ..
        }) if spares > 0 => ((children - 1) as f64 / (data + 1) as f64).max(1.0),
        _ => 1.0,
    }
}

#[cfg(test)]
#[path = "zfs_tests.rs"]
mod tests;
