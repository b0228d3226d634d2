//! The lab spec as written: every field optional, unknown fields refused. The tables of the
//! layout sections (`btrfs = {...}`, `mdadm = {...}`) are declared here too, below
//! [`RawLayout`], so that this file imports no section and each section file reads its table
//! from here.

use serde::Deserialize;
use toml::Spanned;

use crate::spec::RawWorkload;
use crate::spec::locate::{IntOrStr, SizeValue, StrList, TimeValue};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) name: Option<String>,
    pub(super) disks: Option<Spanned<RawDisks>>,
    #[serde(default)]
    pub(super) layout: Vec<Spanned<RawLayout>>,
    pub(super) workloads: Option<Spanned<RawWorkloads>>,
    /// Needs and preferences the lab decides by at its end.
    pub(super) decide: Option<Spanned<crate::spec::decide::RawDecide>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDisks {
    pub(super) devices: Option<Vec<String>>,
    #[serde(rename = "loop")]
    pub(super) loop_disks: Option<RawLoop>,
    pub(super) slow: Option<Vec<RawSlow>>,
}

/// One emulated slow disk as written (`[disks] slow = [{ disk = 4, latency = "8ms" }]`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlow {
    pub(super) disk: Option<i64>,
    pub(super) bandwidth: Option<SizeValue>,
    pub(super) iops: Option<i64>,
    pub(super) latency: Option<TimeValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoop {
    pub(super) count: Option<i64>,
    pub(super) size: Option<SizeValue>,
    pub(super) dir: Option<String>,
    pub(super) direct_io: Option<bool>,
}

/// One `[[layout]]` table. A new section adds its fields here (serde refuses unknown keys, with
/// the list of known ones) and registers itself in `layout::SECTIONS`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLayout {
    pub(super) name: Option<String>,
    pub(super) dir: Option<String>,
    pub(super) btrfs: Option<RawBtrfs>,
    pub(super) mdadm: Option<RawMd>,
    pub(super) zfs: Option<RawZfs>,
    pub(super) lvm: Option<bool>,
    pub(super) cache: Option<RawCache>,
    pub(super) integrity: Option<RawIntegrity>,
    pub(super) luks: Option<RawLuks>,
    pub(super) fs: Option<String>,
    pub(super) mkfs_options: Option<StrList>,
    pub(super) mount_options: Option<StrList>,
    pub(super) read_ahead: Option<SizeValue>,
    pub(super) degrade: Option<bool>,
    pub(super) rebuild: Option<bool>,
    pub(super) during_rebuild: Option<bool>,
    pub(super) failures: Option<i64>,
    pub(super) fill: Option<SizeValue>,
    pub(super) faults: Option<Vec<RawFault>>,
    pub(super) powercut: Option<RawPowerCut>,
    /// How the layers over a striped md array are aligned to it (`auto`, `stripe`, `none`).
    pub(super) alignment: Option<String>,
    /// A sweep: spec keys and the values each takes; the layout is expanded into
    /// one layout per combination before anything else reads it (`vary.rs`).
    pub(super) vary: Option<toml::Table>,
    /// The most layouts a sweep may expand into (default 64).
    pub(super) max_layouts: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkloads {
    pub(super) profiles: Option<StrList>,
    pub(super) repeat: Option<i64>,
    pub(super) baseline: Option<String>,
    pub(super) size: Option<SizeValue>,
    pub(super) time: Option<TimeValue>,
    /// Latency targets every block-IO workload is searched against.
    pub(super) slo: Option<String>,
    /// The time each layout's SLO search may take.
    pub(super) budget: Option<TimeValue>,
    /// How narrow each SLO search's bracket gets (0.05: within 5%).
    pub(super) slo_precision: Option<f64>,
    pub(super) defaults: Option<RawWorkload>,
    #[serde(default)]
    pub(super) workload: Vec<Spanned<RawWorkload>>,
    /// Traces to replay on every layout (`replay = "mail.trace"` or a list).
    pub(super) replay: Option<StrList>,
    /// Traces whose workload models run on every layout.
    pub(super) model: Option<StrList>,
    /// Write each layout twice over before its workloads (SNIA PTS): `true`, `"seq"` or
    /// `"random"`.
    pub(super) precondition: Option<crate::spec::SteadyValue>,
    /// Every closed-loop block-IO workload in rounds until steady by PTS's rules: `true` or
    /// `"iops"`, `"bw"`, `"lat"`.
    pub(super) steady_state: Option<crate::spec::SteadyValue>,
    /// One steady-state round (default `time`, then the defaults' `time`, else PTS's 60s).
    pub(super) round: Option<TimeValue>,
    /// Steady-state rounds at most (PTS: 25).
    pub(super) max_rounds: Option<u32>,
}

/// The `btrfs` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBtrfs {
    pub(super) data: Option<String>,
    pub(super) metadata: Option<String>,
    pub(super) members: Option<i64>,
}

/// The `mdadm` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMd {
    pub(super) level: Option<IntOrStr>,
    pub(super) members: Option<i64>,
    pub(super) spares: Option<i64>,
    pub(super) chunk: Option<SizeValue>,
    pub(super) bitmap: Option<String>,
    pub(super) bitmap_chunk: Option<SizeValue>,
    pub(super) assume_clean: Option<bool>,
    pub(super) consistency_policy: Option<String>,
    pub(super) sync_speed_min: Option<SizeValue>,
    pub(super) sync_speed_max: Option<SizeValue>,
    pub(super) stripe_cache_size: Option<i64>,
    pub(super) group_thread_cnt: Option<i64>,
    pub(super) read_ahead: Option<SizeValue>,
    pub(super) scheduler: Option<String>,
}

/// The `zfs` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawZfs {
    pub(super) vdev: Option<String>,
    pub(super) vdevs: Option<i64>,
    pub(super) width: Option<i64>,
    pub(super) special: Option<i64>,
    pub(super) log: Option<i64>,
    pub(super) cache: Option<i64>,
    pub(super) spares: Option<i64>,
    pub(super) pool: Option<toml::Table>,
    pub(super) dataset: Option<toml::Table>,
}

/// The `cache` table as written (an SSD cache between the RAID and the filesystem).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCache {
    pub(super) kind: Option<String>,
    pub(super) disks: Option<i64>,
    pub(super) mode: Option<String>,
    pub(super) size: Option<SizeValue>,
    pub(super) fail: Option<bool>,
}

/// The `integrity` table as written (dm-integrity under each member).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIntegrity {
    pub(super) algorithm: Option<String>,
    pub(super) journal: Option<bool>,
}

/// The `luks` table as written (LUKS2 under each member).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLuks {
    pub(super) cipher: Option<String>,
    pub(super) key_size: Option<i64>,
}

/// One fault as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) member: Option<i64>,
    pub(super) at: Option<String>,
    pub(super) kind: Option<String>,
    pub(super) offset: Option<SizeValue>,
    pub(super) length: Option<SizeValue>,
    pub(super) progress: Option<i64>,
    pub(super) copies: Option<String>,
}

/// The `powercut` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPowerCut {
    pub(super) cuts: Option<i64>,
    pub(super) then: Option<String>,
    pub(super) disk_cache: Option<String>,
    pub(super) seed: Option<i64>,
    pub(super) window: Option<TimeValue>,
}
