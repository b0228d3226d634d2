//! What a placed layout holds: usable bytes by md's and btrfs' arithmetic, or by ZFS's
//! allocator ([`super::zfs`]), and raw bytes. Beside the layout grammar rather than in it,
//! because the ZFS figures need the placed layout and `layout.rs` must not need `zfs.rs`.

use super::layout::{Layout, Level};
use super::zfs::{self, ZfsParams};

impl Layout {
    /// Usable bytes for `disk_bytes` per disk, before filesystem overhead.
    ///
    /// Exact integer arithmetic; `None` only when the result does not fit in 64 bits.
    pub fn usable_bytes(&self, disk_bytes: u64) -> Option<u64> {
        if self.level().is_zfs() {
            let p = ZfsParams::default();
            return zfs::capacity(self, disk_bytes, &p).map(|c| c.usable);
        }
        let d = u128::from(disk_bytes);
        let g = u128::from(self.spec.groups);
        let n = u128::from(self.per_group);
        let all = u128::from(self.active) * d;
        let v = match self.level() {
            Level::Raid0 | Level::Single | Level::BtrfsSingle | Level::BtrfsRaid0 => all,
            Level::Raid1 => g * d,
            Level::Raid5 | Level::Raid6 | Level::BtrfsRaid5 | Level::BtrfsRaid6 => {
                let p = u128::from(self.level().parity().unwrap_or(0));
                g * (n - p) * d
            }
            Level::Raid10
            | Level::BtrfsRaid1
            | Level::BtrfsRaid1c3
            | Level::BtrfsRaid1c4
            | Level::BtrfsRaid10 => all / u128::from(self.level().copies().unwrap_or(1)),
            Level::ZfsMirror
            | Level::Raidz1
            | Level::Raidz2
            | Level::Raidz3
            | Level::Draid { .. } => 0,
        };
        u64::try_from(v).ok()
    }

    /// Raw bytes of all disks, spares included.
    pub fn raw_bytes(&self, disk_bytes: u64) -> Option<u64> {
        u64::try_from(u128::from(self.disks) * u128::from(disk_bytes)).ok()
    }
}
