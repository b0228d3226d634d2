//! The lab spec as written: every field optional, unknown fields refused. The tables of one
//! layout section (`btrfs = {...}`, `mdadm = {...}`) are declared in that section's file.

use serde::Deserialize;
use toml::Spanned;

use super::btrfs::RawBtrfs;
use super::faults::RawFault;
use super::mdadm::RawMd;
use super::powercut::RawPowerCut;
use super::zfs::RawZfs;
use crate::spec::RawWorkload;
use crate::spec::locate::{SizeValue, StrList, TimeValue};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) name: Option<String>,
    pub(super) disks: Option<Spanned<RawDisks>>,
    #[serde(default)]
    pub(super) layout: Vec<Spanned<RawLayout>>,
    pub(super) workloads: Option<Spanned<RawWorkloads>>,
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
    pub(super) fs: Option<String>,
    pub(super) mkfs_options: Option<StrList>,
    pub(super) mount_options: Option<StrList>,
    pub(super) degrade: Option<bool>,
    pub(super) rebuild: Option<bool>,
    pub(super) failures: Option<i64>,
    pub(super) fill: Option<SizeValue>,
    pub(super) faults: Option<Vec<RawFault>>,
    pub(super) powercut: Option<RawPowerCut>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkloads {
    pub(super) profiles: Option<StrList>,
    pub(super) repeat: Option<i64>,
    pub(super) baseline: Option<String>,
    pub(super) size: Option<SizeValue>,
    pub(super) time: Option<TimeValue>,
    pub(super) defaults: Option<RawWorkload>,
    #[serde(default)]
    pub(super) workload: Vec<Spanned<RawWorkload>>,
}
