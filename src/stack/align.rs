//! Alignment of the layers over a striped md array: whether iolab leaves LVM's data
//! offset and the filesystem's stripe unit and width to the tools (`auto`, checked after the
//! build), passes them itself (`stripe`), or neither passes nor checks them (`none`); and the
//! array's stripe they are measured against. Plain data: the spec sets it, the layout stage
//! passes the arguments and checks what the tools did (`layout::align`).

use serde::{Deserialize, Serialize};

use super::{FsKind, MdLevel, RaidLayer, Stack};
use crate::units::format_bytes;

/// mdadm's chunk when the spec names none (metadata 1.2).
pub const MD_DEFAULT_CHUNK: u64 = 512 << 10;

/// How a layout's layers are aligned to the array under them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Alignment {
    /// What the tools do by themselves (they read the array's io_min/io_opt), then checked.
    #[default]
    Auto,
    /// iolab passes the stripe: `mkfs.xfs -d su=,sw=`, `mkfs.ext4 -E stride=,stripe_width=`,
    /// `pvcreate --dataalignment`, `make-bcache --data-offset`; then checked.
    Stripe,
    /// Neither passed nor checked.
    None,
}

impl Alignment {
    /// Every value, as the spec spells them.
    pub const NAMES: [&'static str; 3] = ["auto", "stripe", "none"];

    /// Parses `auto`, `stripe`, `none`.
    pub fn parse(s: &str) -> Option<Alignment> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Alignment::Auto),
            "stripe" => Some(Alignment::Stripe),
            "none" => Some(Alignment::None),
            _ => None,
        }
    }

    /// The spec's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Alignment::Auto => "auto",
            Alignment::Stripe => "stripe",
            Alignment::None => "none",
        }
    }

    /// The default: left out of stored stacks, so older records read and write unchanged.
    pub fn is_auto(&self) -> bool {
        *self == Alignment::Auto
    }
}

/// The stripe of an md array: `chunk` bytes on each of `data_disks` (the disks a full stripe
/// of data spans; parity and mirror copies excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    /// md level number (0, 4, 5, 6, 10).
    pub level: u32,
    /// Raid devices of the array.
    pub raid_disks: usize,
    /// Disks one stripe of data spans.
    pub data_disks: usize,
    /// Chunk, bytes.
    pub chunk: u64,
}

impl Geometry {
    /// The stripe of an md array of `level` over `raid_disks` with `chunk` bytes; RAID10 keeps
    /// `near_copies` of each chunk side by side. `None` for RAID1 (no stripe: nothing to align
    /// to) and for a zero chunk.
    ///
    /// RAID10's data disks follow the kernel's own io_opt (`raid10_set_io_opt`): raid disks
    /// divided by the near copies when they divide evenly, else all raid disks.
    pub fn md(
        level: MdLevel,
        raid_disks: usize,
        chunk: u64,
        near_copies: usize,
    ) -> Option<Geometry> {
        let data_disks = match level {
            MdLevel::Raid1 => return None,
            MdLevel::Raid0 => raid_disks,
            MdLevel::Raid4 | MdLevel::Raid5 => raid_disks.saturating_sub(1),
            MdLevel::Raid6 => raid_disks.saturating_sub(2),
            MdLevel::Raid10 => {
                let near = near_copies.max(1);
                if raid_disks % near == 0 {
                    raid_disks / near
                } else {
                    raid_disks
                }
            }
        };
        (chunk > 0 && data_disks > 0).then_some(Geometry {
            level: level.number(),
            raid_disks,
            data_disks,
            chunk,
        })
    }

    /// The stripe the spec's stack will have: its md level over its members, its chunk (or
    /// mdadm's 512KiB), RAID10 in md's near-2 layout. `None` without an md array with a stripe
    /// (RAID1, a plain disk; btrfs and ZFS have no stripe for a layer above to match).
    pub fn of(stack: &Stack) -> Option<Geometry> {
        match stack.raid() {
            RaidLayer::Md(o) => Geometry::md(
                o.level,
                stack.members,
                o.chunk.unwrap_or(MD_DEFAULT_CHUNK),
                2,
            ),
            _ => None,
        }
    }

    /// Bytes of data in one full stripe: chunk x data disks.
    pub fn stripe(&self) -> u64 {
        self.chunk * self.data_disks as u64
    }

    /// `md5 x4 (chunk 512KiB)`.
    pub fn describe(&self) -> String {
        format!(
            "md{} x{} (chunk {})",
            self.level,
            self.raid_disks,
            format_bytes(self.chunk)
        )
    }
}

/// The option of `options` that already sets a stripe for `kind` (`su=`, `sw=`, `sunit=`,
/// `swidth=` for xfs; `stride=`, `stripe_width=` / `stripe-width=` for ext4): `alignment =
/// "stripe"` would set it twice.
pub fn stripe_option(kind: FsKind, options: &[String]) -> Option<&str> {
    let keys: &[&str] = match kind {
        FsKind::Xfs => &["su=", "sw=", "sunit=", "swidth="],
        FsKind::Ext4 => &["stride=", "stripe_width=", "stripe-width="],
        FsKind::Btrfs | FsKind::Zfs => &[],
    };
    options.iter().map(String::as_str).find(|o| {
        o.split([',', ' '])
            .any(|part| keys.iter().any(|k| part.starts_with(k)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;

    #[test]
    fn data_disks_per_level() {
        let g = |l, n| Geometry::md(l, n, 512 * K, 2).map(|g| (g.data_disks, g.stripe()));
        assert_eq!(g(MdLevel::Raid0, 4), Some((4, 2048 * K)));
        assert_eq!(g(MdLevel::Raid5, 4), Some((3, 1536 * K)));
        assert_eq!(g(MdLevel::Raid4, 3), Some((2, 1024 * K)));
        assert_eq!(g(MdLevel::Raid6, 6), Some((4, 2048 * K)));
        // near=2: each chunk twice side by side, so half the members carry distinct data.
        assert_eq!(g(MdLevel::Raid10, 4), Some((2, 1024 * K)));
        // An odd member count does not divide: the kernel's io_opt spans every member.
        assert_eq!(g(MdLevel::Raid10, 3), Some((3, 1536 * K)));
        assert_eq!(g(MdLevel::Raid1, 2), None);
        assert_eq!(
            Geometry::md(MdLevel::Raid5, 4, 512 * K, 2)
                .unwrap()
                .describe(),
            "md5 x4 (chunk 512KiB)"
        );
    }

    #[test]
    fn spelled_as_the_spec_spells_it() {
        for n in Alignment::NAMES {
            assert_eq!(Alignment::parse(n).map(Alignment::name), Some(n));
        }
        assert_eq!(Alignment::parse("Stripe"), Some(Alignment::Stripe));
        assert_eq!(Alignment::parse("chunk"), None);
        assert!(Alignment::default().is_auto());
    }
}
