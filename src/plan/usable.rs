//! What a built layout reports as usable, modelled: the RAID's arithmetic less what each layer
//! keeps for itself, in the amounts each tool really takes. Those amounts are mostly fixed or
//! capped, not a share of the disk: an md data offset of at most 129 MiB, an xfs log of at
//! most 2038 MiB, a btrfs metadata chunk of 256 MiB or 1 GiB. On 1 GiB lab disks they weigh
//! 13-19%; on 4 TB disks a few hundredths of a percent. Scaling a small lab's measured
//! efficiency to big disks is therefore wrong by up to the whole overhead; this model is what
//! `iolab plan` prints and what `iolab decide` uses where the host cannot build the layout at
//! the real size.
//!
//! The quantity is the one the lab records ([`crate::layout::Built::usable_bytes`]): btrfs's
//! `Free (estimated)` plus data used on the empty filesystem; for xfs, ext4 and ZFS the size
//! statvfs reports (what `df` shows as Size: xfs less its internal log, ext4 less its inode
//! tables, bitmaps, descriptors and journal, ZFS less its slop). Each rule below names the
//! code it follows; `docs/plan-model.md` has them with worked figures, and the unit tests
//! check each against what the tools built on this kind of machine (btrfs-progs 6.2,
//! xfsprogs 6.1, e2fsprogs 1.47, mdadm 4.2).

use super::layout::{Layout, Level};
use super::zfs::{self, ZfsParams};
use crate::stack::{BtrfsProfile, FsKind};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// What sits over the RAID of a layout, for what it keeps for itself: the filesystem on md
/// levels and one plain disk (btrfs and ZFS are their own), an LVM volume between them, and
/// the btrfs metadata profile when it is not the one the lab picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Over {
    /// The filesystem over an md array (btrfs and ZFS levels ignore it).
    pub fs: FsKind,
    /// A linear LVM volume between the array and the filesystem.
    pub lvm: bool,
    /// btrfs metadata profile (`None`: [`BtrfsProfile::default_metadata`], as the lab makes).
    pub btrfs_metadata: Option<BtrfsProfile>,
}

impl Default for Over {
    fn default() -> Self {
        Over {
            fs: FsKind::Xfs,
            lvm: false,
            btrfs_metadata: None,
        }
    }
}

/// md's data offset on a member of `dev` bytes (metadata 1.2, mdadm 4.x `validate_geometry1`):
/// 12 KiB of superblock, bitmap space (`choose_bm_space`), and a reshape headroom of 128 MiB
/// halved while more than 0.1% of the member (and, for chunked levels, down to no less than
/// 4 chunks), rounded up to 1 MiB. 129 MiB on members of 200 GiB and more.
pub fn md_data_offset(dev: u64, chunk: Option<u64>) -> u64 {
    let sectors = dev >> 9;
    let bm = if sectors < 64 * 2 {
        0
    } else if sectors - 64 * 2 >= 200 * 1024 * 1024 * 2 {
        128 * 2
    } else if sectors - 4 * 2 > 8 * 1024 * 1024 * 2 {
        64 * 2
    } else {
        4 * 2
    };
    let chunk_kib = chunk.map_or(0, |c| c / KIB);
    let mut headroom: u64 = 128 * 1024 * 2;
    while (headroom << 10) > sectors && (chunk_kib == 0 || headroom / 2 >= chunk_kib * 2 * 2) {
        headroom >>= 1;
    }
    let offset = (12 * 2 + bm + headroom).div_ceil(2048) * 2048;
    offset << 9
}

/// Bytes of one md member that hold data: less the data offset, rounded down to the chunk
/// (`Create`: the component size is a multiple of the chunk; raid1 of 64 KiB).
pub fn md_component(dev: u64, chunk: Option<u64>) -> u64 {
    let unit = chunk.filter(|c| *c >= 4 * KIB).unwrap_or(64 * KIB);
    dev.saturating_sub(md_data_offset(dev, chunk)) / unit * unit
}

/// A linear LVM volume over a physical volume of `dev` bytes: the data area starts at 1 MiB
/// (or at the array's full stripe `align`, when larger: LVM aligns it to md's optimal IO
/// size) and the volume takes every whole 4 MiB extent after it.
pub fn lvm_volume(dev: u64, align: u64) -> u64 {
    let start = if align > MIB { align } else { MIB };
    dev.saturating_sub(start) / (4 * MIB) * (4 * MIB)
}

/// What xfs reports as its size on a device of `dev` bytes (xfsprogs 6.1 defaults: 4 KiB
/// blocks, internal log of 1/2048 of the filesystem, at least 64 MiB, at most 2038 MiB;
/// statvfs leaves the internal log out).
pub fn xfs_size(dev: u64) -> u64 {
    let blocks = dev / 4096;
    let log = (blocks / 2048).clamp(64 * MIB / 4096, (2 * GIB - 10 * MIB) / 4096);
    blocks.saturating_sub(log) * 4096
}

/// Whether block group `g` holds a superblock backup (`sparse_super`: 0, 1 and the powers
/// of 3, 5 and 7).
fn ext4_has_backup(g: u64) -> bool {
    if g <= 1 {
        return true;
    }
    [3u64, 5, 7].into_iter().any(|b| {
        let mut p = b;
        while p < g {
            p *= b;
        }
        p == g
    })
}

/// `ext2fs_default_journal_size`: journal blocks for a filesystem of `blocks` blocks.
fn ext4_journal_blocks(blocks: u64) -> u64 {
    const STEPS: [(u64, u64); 9] = [
        (2048, 0),
        (32768, 1024),
        (256 * 1024, 4096),
        (512 * 1024, 8192),
        (4096 * 1024, 16384),
        (8192 * 1024, 32768),
        (16384 * 1024, 65536),
        (32768 * 1024, 131_072),
        (u64::MAX, 262_144),
    ];
    STEPS
        .iter()
        .find(|(below, _)| blocks < *below)
        .map_or(262_144, |s| s.1)
}

/// Block size and bytes per inode by mke2fs's size type (`/etc/mke2fs.conf` as Debian ships
/// it): under 3 MiB floppy, under 512 MiB small (1 KiB blocks), under 4 TiB default, under
/// 16 TiB big, else huge.
fn ext4_geometry(bytes: u64) -> (u64, u64) {
    match bytes {
        b if b < 3 * MIB => (1024, 8192),
        b if b < 512 * MIB => (1024, 4096),
        b if b < 4 * TIB => (4096, 16384),
        b if b < 16 * TIB => (4096, 32768),
        _ => (4096, 65536),
    }
}

/// What ext4 reports as its size on a device of `dev` bytes (e2fsprogs 1.47 defaults: 256-byte
/// inodes, flex_bg, 64bit, resize_inode, sparse_super; `ext2fs_initialize` for the groups and
/// inode tables, `calc_reserved_gdt_blocks`, the default journal): statvfs leaves out every
/// group's bitmaps and inode table, the superblock backups with their descriptors and
/// reserved descriptor blocks, and the journal. The 5% reserved for root are in it.
pub fn ext4_size(dev: u64) -> u64 {
    let bytes = dev / 4096 * 4096;
    let (bs, ratio) = ext4_geometry(bytes);
    let mut blocks = bytes / bs;
    let inodes = blocks * bs / ratio;
    let first = u64::from(bs == 1024);
    let (bpg, gdpb, addr) = (8 * bs, bs / 64, bs / 4);
    let resize = u32::try_from(blocks).is_ok();
    loop {
        let groups = (blocks - first).div_ceil(bpg).max(1);
        let ipg = inodes.div_ceil(groups).min(bs * 8);
        let itb = (ipg * 256).div_ceil(bs);
        let ipg = (itb * bs / 256) & !7;
        let itb = (ipg * 256).div_ceil(bs);
        let desc = groups.div_ceil(gdpb);
        let rsv = if resize {
            let max = if blocks < u64::from(u32::MAX) / 1024 {
                blocks * 1024
            } else {
                u64::from(u32::MAX)
            };
            (max - first)
                .div_ceil(bpg)
                .div_ceil(gdpb)
                .saturating_sub(desc)
                .min(addr)
        } else {
            0
        };
        let mut last = 2 + itb;
        if ext4_has_backup(groups - 1) {
            last += 1 + desc + rsv;
        }
        let rem = (blocks - first) % bpg;
        if rem > 0 && rem < last + 50 && groups > 1 {
            blocks -= rem;
            continue;
        }
        let backups = (0..groups).filter(|g| ext4_has_backup(*g)).count() as u64;
        let overhead =
            first + backups * (1 + desc + rsv) + groups * (2 + itb) + ext4_journal_blocks(blocks);
        return blocks.saturating_sub(overhead) * bs;
    }
}

/// Bytes a filesystem made on a device of `dev` bytes reports; `None` for btrfs and ZFS,
/// which are modelled with their RAID.
pub fn fs_size(fs: FsKind, dev: u64) -> Option<u64> {
    match fs {
        FsKind::Xfs => Some(xfs_size(dev)),
        FsKind::Ext4 => Some(ext4_size(dev)),
        FsKind::Btrfs | FsKind::Zfs => None,
    }
}

/// Stripes a btrfs chunk of `profile` takes on `n` devices, and how many of them hold data
/// (its logical size is the stripe size times that).
fn btrfs_stripes(profile: BtrfsProfile, n: u64) -> (u64, u64) {
    match profile {
        BtrfsProfile::Single => (1, 1),
        BtrfsProfile::Dup => (2, 1),
        BtrfsProfile::Raid0 => (n, n),
        BtrfsProfile::Raid1 => (2, 1),
        BtrfsProfile::Raid1c3 => (3, 1),
        BtrfsProfile::Raid1c4 => (4, 1),
        BtrfsProfile::Raid10 => (n / 2 * 2, n / 2),
        BtrfsProfile::Raid5 => (n, n.saturating_sub(1)),
        BtrfsProfile::Raid6 => (n, n.saturating_sub(2)),
    }
}

/// Raw bytes of the first chunk mkfs.btrfs makes for a block group type (btrfs-progs 6.2
/// `btrfs_alloc_chunk`): a stripe of `calc` bytes on each of the profile's stripes, cut to
/// `max / stripes` when its logical size would pass `max` (itself at most 10% of the
/// filesystem's `total`), never below `min`, in 64 KiB units.
fn btrfs_first_chunk(profile: BtrfsProfile, n: u64, total: u64, sizes: (u64, u64, u64)) -> u64 {
    let (calc, max, min) = sizes;
    let (stripes, data) = btrfs_stripes(profile, n);
    let max = max.min(total / 10);
    let mut stripe = calc;
    if stripe * data > max {
        stripe = max / stripes / (64 * KIB) * (64 * KIB);
    }
    stripe.max(min) * stripes
}

/// What an empty btrfs on `n` devices of `dev` bytes reports as usable (`btrfs filesystem
/// usage`: `Free (estimated)` plus data used): the unallocated space over the data profile's
/// ratio, after mkfs's first metadata chunk (256 MiB, 1 GiB above 50 GiB of devices) and
/// system chunk (8 MiB) in the metadata profile.
pub fn btrfs_usable(data: BtrfsProfile, metadata: BtrfsProfile, n: u64, dev: u64) -> u64 {
    let n = n.max(1);
    let total = n.saturating_mul(dev);
    let meta_calc = if total > 50 * GIB { GIB } else { 256 * MIB };
    let meta = btrfs_first_chunk(metadata, n, total, (meta_calc, meta_calc, 32 * MIB));
    let system = btrfs_first_chunk(metadata, n, total, (8 * MIB, 16 * MIB, MIB));
    let (stripes, per) = btrfs_stripes(data, n);
    let free = u128::from(total.saturating_sub(meta + system));
    u64::try_from(free * u128::from(per) / u128::from(stripes.max(1))).unwrap_or(u64::MAX)
}

impl Layout {
    /// What the built layout reports as usable on disks of `disk_bytes` with `over` on top
    /// (md arrays of `chunk` bytes): see the module's doc. `None` when it does not fit in 64
    /// bits.
    pub fn reported_bytes(
        &self,
        disk_bytes: u64,
        chunk: u64,
        over: &Over,
        z: &ZfsParams,
    ) -> Option<u64> {
        let level = self.level();
        if level.is_zfs() {
            return zfs::capacity(self, disk_bytes, z).map(|c| c.usable);
        }
        if let Some(data) = btrfs_profile(level) {
            let n = u64::from(self.active);
            let meta = over
                .btrfs_metadata
                .unwrap_or_else(|| BtrfsProfile::default_metadata(data, self.active as usize));
            return Some(btrfs_usable(data, meta, n, disk_bytes));
        }
        if level == Level::Single {
            let vol = if over.lvm {
                lvm_volume(disk_bytes, 0)
            } else {
                disk_bytes
            };
            return fs_size(over.fs, vol).or(Some(vol));
        }
        let (array, align) = self.md_bytes(disk_bytes, Some(chunk))?;
        let vol = if over.lvm {
            lvm_volume(array, align)
        } else {
            array
        };
        fs_size(over.fs, vol).or(Some(vol))
    }

    /// The md arrays' bytes from members of `dev` bytes (data offset and chunk rounding
    /// taken out), all groups together, and a full stripe's bytes (what LVM aligns to).
    /// `chunk`: mdadm's chunk (`None`: its default, 512 KiB).
    pub fn md_bytes(&self, dev: u64, chunk: Option<u64>) -> Option<(u64, u64)> {
        let chunk = chunk.unwrap_or(512 * KIB);
        let level = self.level();
        let chunked = (level != Level::Raid1).then_some(chunk);
        let member = u128::from(md_component(dev, chunked));
        let n = u128::from(self.per_group);
        let data = match level {
            Level::Raid0 => n,
            Level::Raid1 => 1,
            Level::Raid5 => n - 1,
            Level::Raid6 => n - 2,
            _ => n / 2,
        };
        let per_group = match level {
            Level::Raid10 => member * n / 2,
            _ => member * data,
        };
        let all = u64::try_from(per_group * u128::from(self.spec.groups)).ok()?;
        let stripe = u64::try_from(data * u128::from(chunk)).ok()?;
        Some((all, stripe))
    }
}

/// The btrfs data profile of a planner level, `None` for md and ZFS levels.
pub fn btrfs_profile(level: Level) -> Option<BtrfsProfile> {
    Some(match level {
        Level::BtrfsSingle => BtrfsProfile::Single,
        Level::BtrfsRaid0 => BtrfsProfile::Raid0,
        Level::BtrfsRaid1 => BtrfsProfile::Raid1,
        Level::BtrfsRaid1c3 => BtrfsProfile::Raid1c3,
        Level::BtrfsRaid1c4 => BtrfsProfile::Raid1c4,
        Level::BtrfsRaid10 => BtrfsProfile::Raid10,
        Level::BtrfsRaid5 => BtrfsProfile::Raid5,
        Level::BtrfsRaid6 => BtrfsProfile::Raid6,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "usable_tests.rs"]
mod tests;
