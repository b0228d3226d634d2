//! What a run knows about the layout it ran on: the stack layer by layer, capacity, phase,
//! the degraded ratio, the rebuild and the data's integrity.
//!
//! One typed record, written by `iolab lab` (from what the lab reports), kept by the store in
//! `runs.layout` (schema v2; v1's free-form JSON is converted once, by the store's migration)
//! and read by the reports. It sits beside [`crate::sample::RunRecord`] because it is run data:
//! the lab, the store and the reports import it, and it imports none of them.
//!
//! Reading is tolerant: every field has a default, layers this version does not know read as
//! [`Layer::Unknown`], and top-level keys it does not know are kept in [`LayoutRecord::other`],
//! so a record written by a newer iolab (an `environment`, ZFS vdevs) still loads and is
//! written back without losing them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::integrity::IntegrityReport;
pub use super::integrity::VERIFIED_TEXT;
use crate::stack::{Layer as StackLayer, RaidLayer, Stack};

/// The layout of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LayoutRecord {
    /// Layout name: the label of its healthy run, what a degraded run's `degraded_of` names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Name of the lab (the spec's `name`) that built it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lab: Option<String>,
    /// One line describing the stack, with every mkfs and mount option.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The stack from the disks up, one entry per layer (empty for a directory layout).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<Layer>,
    /// Healthy, or with members failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// For a degraded run (or one during the rebuild): the layout name of its healthy run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded_of: Option<String>,
    /// How much space the layout gives.
    pub capacity: Capacity,
    /// Seconds from the first build command to mounted (md resync included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_seconds: Option<f64>,
    /// For a degraded run (or one during the rebuild): its speed over healthy, the geometric
    /// mean over workloads of the ratio of headline medians (1.0 = no loss).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded_ratio: Option<f64>,
    /// The rebuild after the degraded run, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<RebuildRecord>,
    /// What reading the lab's data set back and scrubbing found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegrityRecord>,
    /// The degraded run of a layout whose cache device the lab failed first (`cache.fail`):
    /// what the cache did. The integrity verdict says whether data was lost
    /// (writeback may lose what it held; writethrough must not). Left out when there was none,
    /// so older records read and write unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_failure: Option<crate::stack::cache::CacheFailure>,
    /// What each injected fault did to the data set, file by file (intact, repaired, read
    /// error, silently wrong) beside what the layer counted. Left out when the lab injected
    /// none, so older records read and write unchanged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<super::fault_outcome::FaultOutcome>,
    /// What power cuts did to the layout (`powercut` in the VM lab): the POWER verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<super::power::PowerReport>,
    /// How the layers sat on the array's stripe after the build (`alignment`): each layer's
    /// offset or stripe unit read back from the tools, and a warning with the fix where one is
    /// misaligned. Left out when not checked, so older records read and write unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment: Option<crate::layout::align::AlignmentReport>,
    /// The RAID layer's runtime tunables as the kernel or ZFS held them after the build
    /// (`stripe_cache_size 4096, group_thread_cnt 2, read_ahead_kb 4096`), read back: the
    /// stack says what was asked, this what was taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunables: Option<String>,
    /// Re-tuned, not rebuilt: the layout whose build this run's layout ran on, only its
    /// runtime tunables set anew (so `build_seconds` is absent). Left out for a layout built
    /// anew, so older records read and write unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reused_build_of: Option<String>,
    /// The filesystem device's read-ahead as read back before the workloads (`blockdev
    /// --getra`, 512-byte sectors), when the layout set one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_ahead_sectors: Option<u64>,
    /// The healthy run of the layout the lab spec named as `baseline`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lab_baseline: bool,
    /// Members a disk test found slow (kernel names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slow_members: Vec<String>,
    /// Where the layout was built when not on this host's own kernel: `vm (tcg)` or
    /// `vm (kvm)` for `iolab lab --vm` (speeds emulated; behaviour and integrity are the point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// What `iolab disks --bench` read and how (see docs/disks.md); not a lab layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disks_bench: Option<serde_json::Value>,
    /// The lab spec's `[decide]` table, so `iolab decide LAB` and `iolab report --lab` decide
    /// by the needs the lab was run for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decide: Option<crate::spec::decide::DecideSpec>,
    /// Keys this version does not know (a newer iolab's), kept as they were.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// Whether the workloads run on the healthy layout or with one member failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// All members present.
    Healthy,
    /// One member failed (the runs are labelled as degraded).
    Degraded,
    /// The failed member's replacement is being rebuilt while the workloads run.
    Rebuilding,
}

/// Space a layout gives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capacity {
    /// Bytes the filesystem reported right after mounting (btrfs: estimated free space,
    /// which accounts for copies and parity; others: statvfs size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_bytes: Option<u64>,
    /// Bytes the RAID level promises from its members, before filesystem overhead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_usable_bytes: Option<u64>,
    /// Bytes of each member disk: what the capacity is scaled from to a real disk size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_bytes: Option<u64>,
}

/// What a run's stored record keeps of a rebuild ([`crate::stack::Rebuild`]): the figures the
/// reports show, in the shape every stored record has had, so records written by earlier
/// versions read, compare and export the same.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RebuildRecord {
    /// Seconds from start to completion.
    pub seconds: f64,
    /// Bytes written to the new member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// The integrity of the lab's data set on the layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntegrityRecord {
    /// The verdict as the lab prints it: `verified` ([`VERIFIED_TEXT`]),
    /// `DATA LOSS (n files, m scrub errors)`, `FAILED: <step>`.
    pub verdict: String,
    /// Every read-back and scrub behind the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<IntegrityReport>,
}

/// One layer of a stack. Tagged by `layer`; a tag from a newer iolab reads as
/// [`Layer::Unknown`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "layer", rename_all = "snake_case")]
pub enum Layer {
    /// One plain disk.
    Disk,
    /// An md array.
    Md {
        /// RAID level: `raid6`.
        level: String,
        /// Member disks holding data (0 when not recorded).
        #[serde(default)]
        members: u64,
        /// Hot spares.
        #[serde(default)]
        spares: u64,
        /// Chunk size, bytes (`None`: mdadm's default or not recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chunk_bytes: Option<u64>,
        /// Write-intent bitmap: `internal`, `none`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bitmap: Option<String>,
        /// Bitmap chunk, bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bitmap_chunk_bytes: Option<u64>,
        /// How md keeps parity consistent over an unclean stop: `resync`, `ppl`, `journal`
        /// (`None`: mdadm's default, or a record written before it was kept). The power-cut
        /// outcome depends on it, so two stacks differing only here must not read the same.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        consistency_policy: Option<String>,
        /// md's stripe cache, stripes (`None`: md's default, 256).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stripe_cache_size: Option<u64>,
        /// md's RAID4/5/6 worker thread groups (`None`: md's default, 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_thread_cnt: Option<u64>,
    },
    /// btrfs as the RAID layer: its profiles over the member disks.
    Btrfs {
        /// Data profile: `raid1`.
        data: String,
        /// Metadata profile (empty when not recorded).
        #[serde(default)]
        metadata: String,
        /// Member disks (0 when not recorded).
        #[serde(default)]
        members: u64,
    },
    /// A linear LVM volume.
    Lvm,
    /// An SSD cache between the RAID (or LVM) and the filesystem.
    Cache {
        /// `lvmcache`, `bcache` or `writecache`.
        kind: String,
        /// `writethrough` or `writeback`.
        mode: String,
        /// The cache's size, bytes (`None`: all of its disks).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size_bytes: Option<u64>,
        /// Disks holding the cache.
        #[serde(default)]
        disks: u64,
    },
    /// The filesystem on top.
    Fs {
        /// Its type: `xfs`, `ext4`, `btrfs`.
        fs: String,
        /// Extra mkfs arguments, as given.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mkfs_options: Vec<String>,
        /// Mount options, one per entry (`noatime`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mount_options: Vec<String>,
        /// Read-ahead of the device under it, bytes, as asked (`read_ahead`; left out when
        /// not set, so older records read and write unchanged).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read_ahead: Option<u64>,
    },
    /// A ZFS pool (also the filesystem).
    Zfs {
        /// Data vdevs as zpool writes them (`raidz2`, `mirror`, `draid2:8d:12c:2s`).
        vdev: String,
        /// How many data vdevs.
        vdevs: u64,
        /// Disks per data vdev.
        width: u64,
        /// Everything else of the pool in zpool's words (special, log, cache, spares,
        /// properties).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        describe: String,
    },
    /// A layer made on each member disk before the RAID layer pools them:
    /// recorded bottom first, before the RAID layer.
    Member {
        /// `dm-integrity`, `luks`.
        kind: String,
        /// Its options in words: `dm-integrity (crc32c)`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        describe: String,
    },
    /// A layer a newer iolab wrote.
    #[serde(other)]
    Unknown,
}

impl Layer {
    /// The layers of a lab stack, from the disks up: one record per stack layer, in the
    /// stack's order (a filesystem that is the RAID layer's own, btrfs's or ZFS's, is recorded
    /// with it: ZFS has none of its own, btrfs its mkfs and mount options).
    pub fn of_stack(s: &Stack) -> Vec<Layer> {
        s.layers()
            .iter()
            .filter_map(|l| match l {
                StackLayer::Member(m) => Some(Layer::Member {
                    kind: m.name().to_string(),
                    describe: m.describe(),
                }),
                StackLayer::Raid(r) => Some(Self::of_raid(s, r)),
                StackLayer::Lvm => Some(Layer::Lvm),
                StackLayer::Cache(c) => Some(Layer::Cache {
                    kind: c.kind.name().to_string(),
                    mode: c.mode.name().to_string(),
                    size_bytes: c.size,
                    disks: c.disks as u64,
                }),
                StackLayer::Fs(_) if matches!(s.raid(), RaidLayer::Zfs(_)) => None,
                StackLayer::Fs(f) => Some(Layer::Fs {
                    fs: f.kind.name().to_string(),
                    mkfs_options: f.mkfs_options.clone(),
                    mount_options: f.mount_options.clone(),
                    read_ahead: f.read_ahead,
                }),
            })
            .collect()
    }

    /// The record of a stack's RAID layer.
    fn of_raid(s: &Stack, raid: &RaidLayer) -> Layer {
        let members = s.members as u64;
        match raid {
            RaidLayer::None => Layer::Disk,
            RaidLayer::Btrfs { data, metadata } => Layer::Btrfs {
                data: data.name().to_string(),
                metadata: metadata.name().to_string(),
                members,
            },
            RaidLayer::Md(md) => Layer::Md {
                level: format!("raid{}", md.level.number()),
                members,
                spares: s.spares as u64,
                chunk_bytes: md.chunk,
                bitmap: md.bitmap.clone(),
                bitmap_chunk_bytes: md.bitmap_chunk,
                consistency_policy: md.consistency_policy.clone(),
                stripe_cache_size: md.stripe_cache_size,
                group_thread_cnt: md.group_thread_cnt,
            },
            RaidLayer::Zfs(z) => Layer::Zfs {
                vdev: z.vdev.zpool_word(z.width),
                vdevs: z.vdevs as u64,
                width: z.width as u64,
                describe: z.describe(),
            },
        }
    }
}

/// Reads a run file's layout: a record as written, or, for a document this version cannot read
/// as one (a v1 run file from `iolab show --json`), an empty record that keeps it whole as
/// `other["v1_layout"]`, so the rest of the run still reads. (The store converts its own v1
/// rows properly, in its migration.)
pub fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<LayoutRecord>, D::Error> {
    let Some(v) = Option::<serde_json::Value>::deserialize(d)? else {
        return Ok(None);
    };
    Ok(Some(
        serde_json::from_value::<LayoutRecord>(v.clone()).unwrap_or_else(|_| {
            let mut r = LayoutRecord::default();
            r.other.insert("v1_layout".into(), v);
            r
        }),
    ))
}

impl LayoutRecord {
    /// The RAID layer at the bottom of the stack (md, btrfs, a ZFS pool, one plain disk), when
    /// there is one. The match names every layer, so a layer added to [`Layer`] is placed here
    /// (pooling the disks or not) where the compiler asks, never dropped by a fallback.
    pub fn raid(&self) -> Option<&Layer> {
        self.stack.iter().find(|l| match l {
            Layer::Md { .. } | Layer::Btrfs { .. } | Layer::Zfs { .. } | Layer::Disk => true,
            Layer::Lvm
            | Layer::Cache { .. }
            | Layer::Fs { .. }
            | Layer::Member { .. }
            | Layer::Unknown => false,
        })
    }

    /// The filesystem layer, when there is one.
    pub fn fs(&self) -> Option<(&str, &[String])> {
        self.stack.iter().find_map(|l| match l {
            Layer::Fs {
                fs, mount_options, ..
            } => Some((fs.as_str(), mount_options.as_slice())),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_keeps_what_it_does_not_know() {
        let v = serde_json::json!({
            "name": "r6",
            "stack": [
                {"layer": "md", "level": "raid6", "members": 5, "spares": 1, "chunk_bytes": 524288},
                {"layer": "zfs_vdev", "resilver_bytes": 7},
                {"layer": "fs", "fs": "xfs", "mount_options": ["noatime"]}
            ],
            "phase": "degraded",
            "environment": "vm (tcg)",
            "pool_guid": "from a newer iolab",
            "capacity": {"usable_bytes": 100, "future": 1}
        });
        let r: LayoutRecord = serde_json::from_value(v).unwrap();
        assert_eq!(r.phase, Some(Phase::Degraded));
        assert_eq!(r.stack[1], Layer::Unknown);
        assert_eq!(r.capacity.usable_bytes, Some(100));
        assert_eq!(r.environment.as_deref(), Some("vm (tcg)"));
        assert_eq!(r.other["pool_guid"], "from a newer iolab");
        assert_eq!(r.fs(), Some(("xfs", &["noatime".to_string()][..])));
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["environment"], "vm (tcg)");
        assert_eq!(back["pool_guid"], "from a newer iolab");
        assert_eq!(back["stack"][0]["chunk_bytes"], 524288);
        assert!(back.get("lab_baseline").is_none() && back.get("rebuild").is_none());
        let empty: LayoutRecord = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, LayoutRecord::default());
    }

    #[test]
    fn a_run_file_with_a_layout_of_another_shape_still_reads() {
        #[derive(Deserialize)]
        struct Run {
            #[serde(default, deserialize_with = "lenient")]
            layout: Option<LayoutRecord>,
        }
        let v1: Run =
            serde_json::from_str(r#"{"layout": {"name": "r1", "integrity": "verified"}}"#).unwrap();
        let r = v1.layout.unwrap();
        assert_eq!(r.other["v1_layout"]["integrity"], "verified");
        assert!(r.name.is_none());
        let v2: Run = serde_json::from_str(r#"{"layout": {"name": "r1"}}"#).unwrap();
        assert_eq!(v2.layout.unwrap().name.as_deref(), Some("r1"));
        let none: Run = serde_json::from_str(r#"{"layout": null}"#).unwrap();
        assert!(none.layout.is_none());
        let absent: Run = serde_json::from_str("{}").unwrap();
        assert!(absent.layout.is_none());
    }

    #[test]
    fn stacks_become_layers() {
        let s: Stack = serde_json::from_value(serde_json::json!({
            "raid": {"type": "btrfs", "data": "raid1", "metadata": "raid1c3"},
            "members": 3, "spares": 0, "lvm": false, "fs": "btrfs",
            "mkfs_options": [], "mount_options": ["noatime"]
        }))
        .unwrap();
        let l = Layer::of_stack(&s);
        assert_eq!(
            l,
            [
                Layer::Btrfs {
                    data: "raid1".into(),
                    metadata: "raid1c3".into(),
                    members: 3
                },
                Layer::Fs {
                    fs: "btrfs".into(),
                    mkfs_options: vec![],
                    mount_options: vec!["noatime".into()],
                    read_ahead: None
                }
            ]
        );
        let s: Stack = serde_json::from_value(serde_json::json!({
            "raid": {"type": "md", "level": "5", "chunk": 262144, "bitmap": null,
                     "bitmap_chunk": null, "assume_clean": false},
            "members": 4, "spares": 1, "lvm": true, "fs": "ext4",
            "mkfs_options": ["-E", "stride=64"], "mount_options": []
        }))
        .unwrap();
        let l = Layer::of_stack(&s);
        assert_eq!(
            l[0],
            Layer::Md {
                level: "raid5".into(),
                members: 4,
                spares: 1,
                chunk_bytes: Some(262144),
                bitmap: None,
                bitmap_chunk_bytes: None,
                consistency_policy: None,
                stripe_cache_size: None,
                group_thread_cnt: None
            }
        );
        assert_eq!(l[1], Layer::Lvm);
    }

    /// md's consistency policy is kept in the layer (a power cut's outcome depends on it), and
    /// a record without one serializes as before it was kept.
    #[test]
    fn md_consistency_policy_is_kept_and_absent_when_unset() {
        let mut s: Stack = serde_json::from_value(serde_json::json!({
            "raid": {"type": "md", "level": "5", "chunk": null, "bitmap": null,
                     "bitmap_chunk": null, "assume_clean": false, "consistency_policy": "ppl"},
            "members": 4, "spares": 0, "lvm": false, "fs": "ext4",
            "mkfs_options": [], "mount_options": []
        }))
        .unwrap();
        let l = Layer::of_stack(&s);
        assert!(
            matches!(&l[0], Layer::Md { consistency_policy: Some(p), .. } if p == "ppl"),
            "{l:?}"
        );
        if let RaidLayer::Md(mut md) = s.raid().clone() {
            md.consistency_policy = None;
            s.set(crate::stack::Layer::Raid(RaidLayer::Md(md)));
        }
        let plain = serde_json::to_string(&Layer::of_stack(&s)[0]).unwrap();
        assert!(!plain.contains("consistency"), "{plain}");
    }

    /// A degraded run's record keeps what failing the cache device did, in the lab
    /// report's shape, and reads it back; a record without one has no such key (older records
    /// write back unchanged).
    #[test]
    fn a_cache_failure_is_kept_and_absent_when_there_was_none() {
        use crate::stack::cache::{CacheFailure, CacheKind, CacheMode};
        let f = CacheFailure {
            kind: CacheKind::Bcache,
            mode: CacheMode::Writeback,
            devices: vec!["iolab-ab12cd-1-cache".into()],
            dirty_bytes: Some(3 << 20),
            state_before: "dirty".into(),
            kernel: "bcache0 detached".into(),
            actions: vec!["unregister: ok".into()],
            state_after: "no cache".into(),
            usable: Some(true),
        };
        let r = LayoutRecord {
            name: Some("md5-bcache".into()),
            degraded_of: Some("md5-bcache".into()),
            phase: Some(Phase::Degraded),
            cache_failure: Some(f.clone()),
            ..LayoutRecord::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["cache_failure"], serde_json::to_value(&f).unwrap());
        assert_eq!(v["cache_failure"]["kind"], "bcache");
        assert_eq!(v["cache_failure"]["dirty_bytes"], 3 << 20);
        let back: LayoutRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        assert!(back.other.is_empty(), "{:?}", back.other);
        let plain = LayoutRecord {
            cache_failure: None,
            ..r
        };
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("cache_failure"), "{json}");
        assert_eq!(serde_json::from_str::<LayoutRecord>(&json).unwrap(), plain);
    }

    /// A cache sits between LVM and the fs in the record, and reads back.
    #[test]
    fn a_cache_becomes_its_own_layer() {
        let s: Stack = serde_json::from_value(serde_json::json!({
            "raid": {"type": "md", "level": "5", "chunk": null, "bitmap": null,
                     "bitmap_chunk": null, "assume_clean": false},
            "members": 3, "spares": 0, "lvm": true, "fs": "xfs",
            "mkfs_options": [], "mount_options": [],
            "cache": {"kind": "lvmcache", "mode": "writethrough", "disks": 1, "size": 268435456}
        }))
        .unwrap();
        let l = Layer::of_stack(&s);
        let cache = Layer::Cache {
            kind: "lvmcache".into(),
            mode: "writethrough".into(),
            size_bytes: Some(256 << 20),
            disks: 1,
        };
        assert_eq!(l[1..3], [Layer::Lvm, cache.clone()]);
        assert!(matches!(l[3], Layer::Fs { .. }));
        let json = serde_json::to_value(&cache).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"layer": "cache", "kind": "lvmcache", "mode": "writethrough",
                               "size_bytes": 268435456, "disks": 1})
        );
        assert_eq!(serde_json::from_value::<Layer>(json).unwrap(), cache);
    }
}
