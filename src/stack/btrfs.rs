//! btrfs's block-group profiles: what btrfs as a RAID layer is made of (plain data; the layout
//! stage's `layout/btrfs.rs` builds it).

use serde::{Deserialize, Serialize};

/// A btrfs block-group profile (for data or metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BtrfsProfile {
    /// One copy, no striping.
    Single,
    /// Two copies on one device.
    Dup,
    /// Striped, no redundancy.
    Raid0,
    /// Two copies on two devices.
    Raid1,
    /// Three copies.
    Raid1c3,
    /// Four copies.
    Raid1c4,
    /// Striped mirrors.
    Raid10,
    /// Striped with one parity.
    Raid5,
    /// Striped with two parities.
    Raid6,
}

impl BtrfsProfile {
    /// Every profile, for error messages.
    pub const ALL: [BtrfsProfile; 9] = [
        BtrfsProfile::Single,
        BtrfsProfile::Dup,
        BtrfsProfile::Raid0,
        BtrfsProfile::Raid1,
        BtrfsProfile::Raid1c3,
        BtrfsProfile::Raid1c4,
        BtrfsProfile::Raid10,
        BtrfsProfile::Raid5,
        BtrfsProfile::Raid6,
    ];

    /// Parses `raid5`, `RAID1C3`, `single`...
    pub fn parse(s: &str) -> Option<BtrfsProfile> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The name mkfs.btrfs takes.
    pub fn name(self) -> &'static str {
        match self {
            BtrfsProfile::Single => "single",
            BtrfsProfile::Dup => "dup",
            BtrfsProfile::Raid0 => "raid0",
            BtrfsProfile::Raid1 => "raid1",
            BtrfsProfile::Raid1c3 => "raid1c3",
            BtrfsProfile::Raid1c4 => "raid1c4",
            BtrfsProfile::Raid10 => "raid10",
            BtrfsProfile::Raid5 => "raid5",
            BtrfsProfile::Raid6 => "raid6",
        }
    }

    /// Fewest devices mkfs.btrfs (v6) and the kernel accept for the profile.
    pub fn min_devices(self) -> usize {
        match self {
            BtrfsProfile::Single | BtrfsProfile::Dup | BtrfsProfile::Raid0 => 1,
            BtrfsProfile::Raid1 | BtrfsProfile::Raid10 | BtrfsProfile::Raid5 => 2,
            BtrfsProfile::Raid1c3 | BtrfsProfile::Raid6 => 3,
            BtrfsProfile::Raid1c4 => 4,
        }
    }

    /// How many devices can vanish without losing data.
    pub fn tolerated_failures(self) -> usize {
        match self {
            BtrfsProfile::Single | BtrfsProfile::Dup | BtrfsProfile::Raid0 => 0,
            BtrfsProfile::Raid1 | BtrfsProfile::Raid10 | BtrfsProfile::Raid5 => 1,
            BtrfsProfile::Raid1c3 | BtrfsProfile::Raid6 => 2,
            BtrfsProfile::Raid1c4 => 3,
        }
    }

    /// Usable bytes out of `n` devices of `size` bytes, before filesystem overhead.
    pub fn usable(self, n: usize, size: u64) -> u64 {
        let n = n as u64;
        match self {
            BtrfsProfile::Single | BtrfsProfile::Raid0 => n * size,
            BtrfsProfile::Dup => n * size / 2,
            BtrfsProfile::Raid1 | BtrfsProfile::Raid10 => n * size / 2,
            BtrfsProfile::Raid1c3 => n * size / 3,
            BtrfsProfile::Raid1c4 => n * size / 4,
            BtrfsProfile::Raid5 => n.saturating_sub(1) * size,
            BtrfsProfile::Raid6 => n.saturating_sub(2) * size,
        }
    }

    /// The metadata profile used when a spec names only the data profile: as redundant as the
    /// data (raid1c3 under raid6, which survives two failures), dup on one device.
    pub fn default_metadata(data: BtrfsProfile, devices: usize) -> BtrfsProfile {
        if devices < 2 {
            return BtrfsProfile::Dup;
        }
        match data {
            BtrfsProfile::Raid6 | BtrfsProfile::Raid1c3 if devices >= 3 => BtrfsProfile::Raid1c3,
            BtrfsProfile::Raid1c4 if devices >= 4 => BtrfsProfile::Raid1c4,
            _ => BtrfsProfile::Raid1,
        }
    }
}
