//! md RAID levels and an array's options: what an md RAID layer is made of (plain data; the
//! layout stage's `layout/mdadm.rs` builds it).

use serde::{Deserialize, Serialize};

/// An md RAID level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MdLevel {
    /// Striping.
    #[serde(rename = "0")]
    Raid0,
    /// Mirroring.
    #[serde(rename = "1")]
    Raid1,
    /// Dedicated parity disk.
    #[serde(rename = "4")]
    Raid4,
    /// Distributed parity.
    #[serde(rename = "5")]
    Raid5,
    /// Double distributed parity.
    #[serde(rename = "6")]
    Raid6,
    /// Striped mirrors (md's near-2 layout).
    #[serde(rename = "10")]
    Raid10,
}

impl MdLevel {
    /// Every level, for error messages.
    pub const ALL: [MdLevel; 6] = [
        MdLevel::Raid0,
        MdLevel::Raid1,
        MdLevel::Raid4,
        MdLevel::Raid5,
        MdLevel::Raid6,
        MdLevel::Raid10,
    ];

    /// Parses `6`, `raid6`, `RAID6`.
    pub fn parse(s: &str) -> Option<MdLevel> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("raid").unwrap_or(&t);
        Self::ALL.into_iter().find(|l| l.number().to_string() == t)
    }

    /// The number mdadm's `--level` takes.
    pub fn number(self) -> u32 {
        match self {
            MdLevel::Raid0 => 0,
            MdLevel::Raid1 => 1,
            MdLevel::Raid4 => 4,
            MdLevel::Raid5 => 5,
            MdLevel::Raid6 => 6,
            MdLevel::Raid10 => 10,
        }
    }

    /// Fewest raid devices mdadm creates the level with (without `--force`).
    pub fn min_devices(self) -> usize {
        match self {
            MdLevel::Raid0 | MdLevel::Raid1 | MdLevel::Raid10 => 2,
            MdLevel::Raid4 | MdLevel::Raid5 => 3,
            MdLevel::Raid6 => 4,
        }
    }

    /// Whether the array survives losing one member (everything but raid0).
    pub fn redundant(self) -> bool {
        self != MdLevel::Raid0
    }

    /// Whether the level computes parity (RAID4/5/6: md's stripe cache and worker threads).
    pub fn has_parity(self) -> bool {
        matches!(self, MdLevel::Raid4 | MdLevel::Raid5 | MdLevel::Raid6)
    }

    /// Whether the level stripes in chunks (so `--chunk` means something).
    pub fn has_chunk(self) -> bool {
        self != MdLevel::Raid1
    }

    /// Usable bytes of `n` raid devices of `size` bytes, before md and filesystem overhead.
    pub fn usable(self, n: usize, size: u64) -> u64 {
        let n = n as u64;
        match self {
            MdLevel::Raid0 => n * size,
            MdLevel::Raid1 => size,
            MdLevel::Raid4 | MdLevel::Raid5 => n.saturating_sub(1) * size,
            MdLevel::Raid6 => n.saturating_sub(2) * size,
            MdLevel::Raid10 => n * size / 2,
        }
    }
}

/// Options of an md array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdOptions {
    /// RAID level.
    pub level: MdLevel,
    /// Chunk size in bytes (`None`: mdadm's default, 512KiB).
    pub chunk: Option<u64>,
    /// Write-intent bitmap: `internal`, `none`, or mdadm's default when `None`.
    pub bitmap: Option<String>,
    /// Bitmap chunk in bytes (`None`: mdadm's default).
    pub bitmap_chunk: Option<u64>,
    /// Skip the initial resync (`--assume-clean`); fine on zeroed disks, not on used ones.
    pub assume_clean: bool,
    /// How md keeps parity consistent over an unclean stop (`--consistency-policy`):
    /// `resync` (mdadm's default: the whole array, or what the bitmap marks, after a crash)
    /// or `ppl` (a partial parity log on each member closes the RAID5 write hole); `None`:
    /// mdadm's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency_policy: Option<String>,
    /// The array's own recovery and resync speed floor, bytes per second (`sync_speed_min`;
    /// `None`: the system's `speed_limit_min`, 1000 KiB/s by default). md slows a rebuild
    /// towards it while other IO runs, so it sets how long a rebuild under load takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_speed_min: Option<u64>,
    /// The array's recovery and resync speed ceiling, bytes per second (`sync_speed_max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_speed_max: Option<u64>,
    /// Stripes md keeps in its RAID4/5/6 stripe cache (`stripe_cache_size`, a page per member
    /// each; md's default 256). Writes smaller than a stripe wait here for the rest of it:
    /// the first tunable RAID5/6 write posts raise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_cache_size: Option<u64>,
    /// RAID4/5/6 worker thread groups (`group_thread_cnt`; md's default 0: raid5d alone
    /// computes parity, one core's worth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_thread_cnt: Option<u64>,
    /// The array's read-ahead, bytes (`blockdev --setra`, 512-byte sectors; `None`: the
    /// kernel's, which md sizes from the stripe). Sequential reads over a wide stripe want a
    /// whole stripe or more ahead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead: Option<u64>,
    /// The members' IO scheduler (`/sys/block/X/queue/scheduler`: `none`, `mq-deadline`,
    /// `bfq`, `kyber`; `None`: the kernel's choice per disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
}

impl MdOptions {
    /// An array of `level` with mdadm's defaults for everything else (chunk, bitmap,
    /// consistency policy, resync speeds), made clean by a resync.
    pub fn new(level: MdLevel) -> MdOptions {
        MdOptions {
            level,
            chunk: None,
            bitmap: None,
            bitmap_chunk: None,
            assume_clean: false,
            consistency_policy: None,
            sync_speed_min: None,
            sync_speed_max: None,
            stripe_cache_size: None,
            group_thread_cnt: None,
            read_ahead: None,
            scheduler: None,
        }
    }

    /// Whether the array has a write journal on a disk of its own (`consistency_policy =
    /// "journal"`): md writes every stripe update to it before the members, closing the write
    /// hole, and replays it after an unclean stop.
    pub fn journal(&self) -> bool {
        self.consistency_policy.as_deref() == Some("journal")
    }
}
