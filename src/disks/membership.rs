//! What a device belongs to: an md array, a btrfs filesystem, an LVM volume group, a bcache
//! cache (backing or cache device); and what
//! signature it carries (filesystem, RAID or LVM superblock, partition table).
//!
//! Sources, structured only: md from `/sys/class/block/<dev>/holders` and `/sys/block/mdX/md/`,
//! btrfs from `/sys/fs/btrfs/<uuid>/devices/`, signatures from udev's database
//! (`/run/udev/data`, `ID_FS_TYPE`) or `blkid -p -o export` when udev has no record, volume
//! group names from `pvs --reportformat json`. Functions take their /sys root so tests can feed
//! a tree of their own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::system::read_trim;

/// One thing a device is part of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Membership {
    /// A member of an md RAID array.
    Md {
        /// The array (`md0`); `None` when the superblock is there but no array is assembled.
        array: Option<String>,
        /// RAID level (`raid6`).
        level: Option<String>,
        /// This member's state as md sees it (`in_sync`, `faulty`, `spare`, ...).
        state: Option<String>,
        /// Array UUID from the member's superblock, when it could be read.
        uuid: Option<String>,
        /// The partition through which the disk is a member (`sda1`), when not the disk itself.
        via: Option<String>,
    },
    /// A device of a btrfs filesystem.
    Btrfs {
        /// Filesystem UUID.
        uuid: String,
        /// Filesystem label.
        label: Option<String>,
        /// The filesystem is mounted (known to the kernel in /sys/fs/btrfs).
        mounted: bool,
        /// The partition through which the disk is a member.
        via: Option<String>,
    },
    /// A device of a ZFS pool.
    Zpool {
        /// Pool name (from `zpool status`, or the label of a pool not imported).
        pool: String,
        /// Its top-level vdev (`raidz2-0`, `mirror-1`), when the pool is imported.
        vdev: Option<String>,
        /// `data`, `special`, `dedup`, `log`, `cache` or `spare`, when the pool is imported.
        role: Option<String>,
        /// The device's state in the pool (`ONLINE`, `OFFLINE`...), or `not imported`.
        state: Option<String>,
        /// The partition through which the disk is a member (ZFS partitions whole disks).
        via: Option<String>,
    },
    /// A device of a bcache: the backing device (the slow one, under `/dev/bcacheN`) or a
    /// cache device (the SSD of a cache set).
    Bcache {
        /// `backing` or `cache`, from the superblock's version; `None` when it could not be
        /// read (not root).
        role: Option<String>,
        /// The bcache device over a registered backing device (`bcache0`).
        device: Option<String>,
        /// The cache set a registered cache device serves (its UUID).
        set: Option<String>,
        /// The partition through which the disk is in it.
        via: Option<String>,
    },
    /// An LVM physical volume.
    LvmPv {
        /// Volume group, when the PV is in one and `pvs` could tell.
        vg: Option<String>,
        /// The partition through which the disk is a PV.
        via: Option<String>,
    },
}

impl Membership {
    /// Short text for the table: `md0 raid6 in_sync`, `btrfs data`, `lvm-pv vg0`.
    pub fn short(&self) -> String {
        let (text, via) = match self {
            Membership::Md {
                array,
                level,
                state,
                uuid,
                via,
            } => {
                let mut s = match array {
                    Some(a) => a.clone(),
                    None => format!(
                        "md (not assembled{})",
                        uuid.as_deref()
                            .map(|u| format!(" {}", short_uuid(u)))
                            .unwrap_or_default()
                    ),
                };
                for x in [level, state].into_iter().flatten() {
                    s.push(' ');
                    s.push_str(x);
                }
                (s, via)
            }
            Membership::Btrfs {
                uuid, label, via, ..
            } => (
                format!(
                    "btrfs {}",
                    label
                        .clone()
                        .unwrap_or_else(|| short_uuid(uuid).to_string())
                ),
                via,
            ),
            Membership::Zpool {
                pool,
                vdev,
                role,
                state,
                via,
            } => {
                let mut s = format!("zpool {pool}");
                for x in [vdev, role, state].into_iter().flatten() {
                    s.push(' ');
                    s.push_str(x);
                }
                (s, via)
            }
            Membership::Bcache {
                role,
                device,
                set,
                via,
            } => {
                let mut s = "bcache".to_string();
                for x in [role, device].into_iter().flatten() {
                    s.push(' ');
                    s.push_str(x);
                }
                if let Some(u) = set {
                    s.push_str(&format!(" set {}", short_uuid(u)));
                }
                if role.is_none() && device.is_none() && set.is_none() {
                    s.push_str(" (not registered)");
                }
                (s, via)
            }
            Membership::LvmPv { vg, via } => (
                match vg {
                    Some(v) => format!("lvm-pv {v}"),
                    None => "lvm-pv (no vg)".to_string(),
                },
                via,
            ),
        };
        match via {
            Some(p) => format!("{p}: {text}"),
            None => text,
        }
    }

    /// Marks the membership as held through a partition of the disk.
    pub fn with_via(mut self, part: &str) -> Membership {
        let v = match &mut self {
            Membership::Md { via, .. }
            | Membership::Btrfs { via, .. }
            | Membership::Zpool { via, .. }
            | Membership::Bcache { via, .. }
            | Membership::LvmPv { via, .. } => via,
        };
        *v = Some(part.to_string());
        self
    }
}

fn short_uuid(u: &str) -> &str {
    u.get(..8).unwrap_or(u)
}

/// What is written at the start of a device, as blkid or udev identified it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Filesystem or superblock type (`xfs`, `btrfs`, `linux_raid_member`, `LVM2_member`).
    pub fs_type: Option<String>,
    /// Partition table type (`gpt`, `dos`).
    pub pttype: Option<String>,
    /// UUID of the filesystem or array.
    pub uuid: Option<String>,
    /// Label of the filesystem or array.
    pub label: Option<String>,
}

impl Signature {
    /// The signature from udev properties, when udev recorded one.
    pub fn from_udev(props: &[(String, String)]) -> Option<Signature> {
        let get = |k: &str| {
            props
                .iter()
                .find(|(kk, _)| kk == k)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        };
        let s = Signature {
            fs_type: get("ID_FS_TYPE"),
            pttype: get("ID_PART_TABLE_TYPE"),
            uuid: get("ID_FS_UUID"),
            label: get("ID_FS_LABEL"),
        };
        (s != Signature::default()).then_some(s)
    }

    /// What to show in a column: the filesystem type, else the partition table type.
    pub fn short(&self) -> Option<&str> {
        self.fs_type.as_deref().or(self.pttype.as_deref())
    }
}

/// Undoes the backslash escaping of `blkid -o export` values (`LVM2\ 001`).
fn unescape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses `blkid -p -o export DEV...`: blank-line separated blocks of `KEY=value`, each with
/// `DEVNAME`. Returns signatures keyed by device path.
pub fn parse_blkid_export(text: &str) -> HashMap<PathBuf, Signature> {
    let mut out = HashMap::new();
    for block in text.split("\n\n") {
        let mut dev = None;
        let mut s = Signature::default();
        for line in block.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let v = unescape(v);
            match k {
                "DEVNAME" => dev = Some(PathBuf::from(v)),
                "TYPE" => s.fs_type = Some(v),
                "PTTYPE" => s.pttype = Some(v),
                "UUID" => s.uuid = Some(v),
                "LABEL" => s.label = Some(v),
                _ => {}
            }
        }
        if let Some(d) = dev {
            out.insert(d, s);
        }
    }
    out
}

/// Signatures of many devices from `blkid -p` (probing the device itself, not blkid's cache),
/// one call per device, all at once: `blkid -p` stops at the first device it cannot open.
/// Devices blkid cannot open (not root, no media) are missing from the map.
pub fn blkid_many(devs: &[PathBuf]) -> HashMap<PathBuf, Signature> {
    let cmds = devs
        .iter()
        .map(|d| {
            let mut c = Command::new("blkid");
            c.args(["-p", "-o", "export"]).arg(d);
            c
        })
        .collect();
    super::tools::run_all(cmds, super::tools::TOOL_TIMEOUT)
        .into_iter()
        .flatten()
        .flat_map(|o| parse_blkid_export(&String::from_utf8_lossy(&o)))
        .collect()
}

/// Parses `pvs --reportformat json -o pv_name,vg_name`: PV path -> volume group (`None` for a
/// PV in no group).
pub fn parse_pvs_json(json: &[u8]) -> HashMap<PathBuf, Option<String>> {
    let mut out = HashMap::new();
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(json) else {
        return out;
    };
    let reports = v.get("report").and_then(|r| r.as_array());
    for r in reports.into_iter().flatten() {
        for pv in r.get("pv").and_then(|p| p.as_array()).into_iter().flatten() {
            let Some(name) = pv.get("pv_name").and_then(|n| n.as_str()) else {
                continue;
            };
            let vg = pv
                .get("vg_name")
                .and_then(|n| n.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            let path = std::fs::canonicalize(name).unwrap_or_else(|_| PathBuf::from(name));
            out.insert(path, vg);
        }
    }
    out
}

/// Volume groups of every PV LVM knows, from `pvs`; empty when LVM is not installed.
pub fn pvs_map() -> HashMap<PathBuf, Option<String>> {
    let mut c = Command::new("pvs");
    c.args(["--reportformat", "json", "-o", "pv_name,vg_name"])
        .env("LVM_SUPPRESS_FD_WARNINGS", "1");
    super::tools::run_one(c, super::tools::TOOL_TIMEOUT)
        .map(|o| parse_pvs_json(&o))
        .unwrap_or_default()
}

/// Where each device of every imported pool sits: real device path (`zpool status -P -L`
/// resolves links) to its membership. Empty when zpool is not installed or no pool exists.
pub fn zpool_map() -> HashMap<PathBuf, Membership> {
    if crate::system::which("zpool").is_none() {
        return HashMap::new();
    }
    let mut c = Command::new("zpool");
    c.args(["status", "-P", "-L"]);
    super::tools::run_one(c, super::tools::TOOL_TIMEOUT)
        .map(|o| parse_zpool_status(&String::from_utf8_lossy(&o)))
        .unwrap_or_default()
}

/// Parses `zpool status -P -L` of every pool into device path -> membership.
pub fn parse_zpool_status(text: &str) -> HashMap<PathBuf, Membership> {
    let mut m = HashMap::new();
    for pool in crate::layout::zfs::status::parse_all(text) {
        for d in pool.devices.iter().filter(|d| d.name.starts_with('/')) {
            m.insert(
                PathBuf::from(&d.name),
                Membership::Zpool {
                    pool: pool.pool.clone(),
                    vdev: (d.vdev != d.name).then(|| d.vdev.clone()),
                    role: Some(d.role.name().to_string()),
                    state: Some(d.state.clone()),
                    via: None,
                },
            );
        }
    }
    m
}

/// Adds the pool membership of the device at `path` from `map` (replacing a `not imported`
/// guess from its signature).
pub fn add_zpool(out: &mut Vec<Membership>, map: &HashMap<PathBuf, Membership>, path: &Path) {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(z) = map.get(&real).or_else(|| map.get(path)) {
        out.retain(|m| !matches!(m, Membership::Zpool { vdev: None, .. }));
        out.push(z.clone());
    }
}

/// The md arrays a device is a member of, from its holders and the array's `md/` directory.
pub fn md_of(class_block: &Path, name: &str, holders: &[String]) -> Vec<Membership> {
    holders
        .iter()
        .filter(|h| h.starts_with("md"))
        .map(|h| {
            let md = class_block.join(h).join("md");
            let nonempty = |p: PathBuf| read_trim(p).filter(|s| !s.is_empty());
            Membership::Md {
                array: Some(h.clone()),
                level: nonempty(md.join("level")),
                state: nonempty(md.join(format!("dev-{name}")).join("state")),
                uuid: nonempty(md.join("uuid")),
                via: None,
            }
        })
        .collect()
}

/// bcache's superblock magic, 16 bytes at offset 24 of the superblock (at 4 KiB).
const BCACHE_MAGIC: [u8; 16] = [
    0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81,
];

/// `backing` or `cache` from a bcache superblock (4 KiB into the device): its version is 0 or
/// 3 for a cache device, 1 or 4 for a backing device (bcache's `BCACHE_SB_VERSION_*`).
pub fn bcache_role(sb: &[u8]) -> Option<&'static str> {
    if sb.get(24..40)? != BCACHE_MAGIC {
        return None;
    }
    let v = u64::from_le_bytes(sb.get(16..24)?.try_into().ok()?);
    match v {
        0 | 3 => Some("cache"),
        1 | 4 => Some("backing"),
        _ => None,
    }
}

fn read_bcache_sb(path: &Path) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    f.seek(SeekFrom::Start(4096)).ok()?;
    let mut b = vec![0u8; 64];
    f.read_exact(&mut b).ok()?;
    Some(b)
}

/// A device's bcache membership: its role from the superblock; registered, the bcache
/// device over it (a holder `bcacheN`) or the cache set it serves (`bcache/set` in sysfs).
fn bcache_of(class_block: &Path, name: &str, holders: &[String], path: &Path) -> Membership {
    let device = holders.iter().find(|h| h.starts_with("bcache")).cloned();
    let set = std::fs::read_link(class_block.join(name).join("bcache").join("set"))
        .ok()
        .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()));
    let role = read_bcache_sb(path)
        .as_deref()
        .and_then(bcache_role)
        .or_else(|| {
            if device.is_some() {
                Some("backing")
            } else {
                set.as_ref().map(|_| "cache")
            }
        })
        .map(str::to_string);
    Membership::Bcache {
        role,
        device,
        set,
        via: None,
    }
}

/// A btrfs filesystem the kernel knows (mounted), from /sys/fs/btrfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtrfsFs {
    /// Filesystem UUID (the directory name).
    pub uuid: String,
    /// Label, when set.
    pub label: Option<String>,
    /// Kernel names of its devices.
    pub devices: Vec<String>,
}

/// Every btrfs filesystem under a /sys/fs/btrfs root.
pub fn btrfs_filesystems(fs_btrfs: &Path) -> Vec<BtrfsFs> {
    let Ok(rd) = std::fs::read_dir(fs_btrfs) else {
        return Vec::new();
    };
    let mut out: Vec<BtrfsFs> = rd
        .flatten()
        .filter_map(|e| {
            let devdir = e.path().join("devices");
            let mut devices: Vec<String> = std::fs::read_dir(&devdir)
                .ok()?
                .flatten()
                .map(|d| d.file_name().to_string_lossy().into_owned())
                .collect();
            devices.sort();
            Some(BtrfsFs {
                uuid: e.file_name().to_string_lossy().into_owned(),
                label: read_trim(e.path().join("label")).filter(|s| !s.is_empty()),
                devices,
            })
        })
        .collect();
    out.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    out
}

/// Everything one device (not its partitions) belongs to.
pub fn memberships(
    class_block: &Path,
    name: &str,
    holders: &[String],
    sig: Option<&Signature>,
    btrfs: &[BtrfsFs],
    pvs: &HashMap<PathBuf, Option<String>>,
    path: &Path,
) -> Vec<Membership> {
    let mut out = md_of(class_block, name, holders);
    let fs_type = sig.and_then(|s| s.fs_type.as_deref());
    if out.is_empty() && fs_type == Some("linux_raid_member") {
        out.push(Membership::Md {
            array: None,
            level: None,
            state: None,
            uuid: sig.and_then(|s| s.uuid.clone()),
            via: None,
        });
    }
    if let Some(fs) = btrfs.iter().find(|f| f.devices.iter().any(|d| d == name)) {
        out.push(Membership::Btrfs {
            uuid: fs.uuid.clone(),
            label: fs.label.clone(),
            mounted: true,
            via: None,
        });
    } else if fs_type == Some("btrfs") {
        if let Some(uuid) = sig.and_then(|s| s.uuid.clone()) {
            out.push(Membership::Btrfs {
                uuid,
                label: sig.and_then(|s| s.label.clone()),
                mounted: false,
                via: None,
            });
        }
    }
    if fs_type == Some("zfs_member") {
        out.push(Membership::Zpool {
            pool: sig
                .and_then(|s| s.label.clone())
                .unwrap_or_else(|| "?".into()),
            vdev: None,
            role: None,
            state: Some("not imported".into()),
            via: None,
        });
    }
    if fs_type == Some("bcache") || holders.iter().any(|h| h.starts_with("bcache")) {
        out.push(bcache_of(class_block, name, holders, path));
    }
    if fs_type == Some("LVM2_member") {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        out.push(Membership::LvmPv {
            vg: pvs.get(&real).cloned().flatten(),
            via: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `zpool status -P -L` of two pools, by hand from zpool's documented format: a raidz2 on
    /// partitions of whole disks (ZFS partitions what it is given), with special, log, cache
    /// and spare; and a plain mirror of loop devices.
    const ZPOOL_STATUS: &str = "  pool: tank
 state: ONLINE
config:

\tNAME           STATE     READ WRITE CKSUM
\ttank           ONLINE       0     0     0
\t  raidz2-0     ONLINE       0     0     0
\t    /dev/sdb1  ONLINE       0     0     0
\t    /dev/sdc1  ONLINE       0     0     0
\t    /dev/sdd1  ONLINE       0     0     0
\t    /dev/sde1  ONLINE       0     0     0
\tspecial
\t  mirror-1     ONLINE       0     0     0
\t    /dev/nvme0n1p1  ONLINE   0     0     0
\t    /dev/nvme1n1p1  ONLINE   0     0     0
\tlogs
\t  /dev/nvme2n1p1   ONLINE   0     0     0
\tcache
\t  /dev/sdf1    ONLINE       0     0     0
\tspares
\t  /dev/sdg1    AVAIL

errors: No known data errors

  pool: scratch
 state: DEGRADED
config:

\tNAME            STATE     READ WRITE CKSUM
\tscratch         DEGRADED     0     0     0
\t  mirror-0      DEGRADED     0     0     0
\t    /dev/loop0  ONLINE       0     0     0
\t    /dev/loop1  OFFLINE      0     0     0

errors: No known data errors
";

    #[test]
    fn zpool_members_with_vdev_and_role() {
        let m = parse_zpool_status(ZPOOL_STATUS);
        assert_eq!(m.len(), 11);
        let short = |p: &str| m[&PathBuf::from(p)].short();
        assert_eq!(short("/dev/sdb1"), "zpool tank raidz2-0 data ONLINE");
        assert_eq!(
            short("/dev/nvme1n1p1"),
            "zpool tank mirror-1 special ONLINE"
        );
        assert_eq!(short("/dev/nvme2n1p1"), "zpool tank log ONLINE");
        assert_eq!(short("/dev/sdf1"), "zpool tank cache ONLINE");
        assert_eq!(short("/dev/sdg1"), "zpool tank spare AVAIL");
        assert_eq!(short("/dev/loop1"), "zpool scratch mirror-0 data OFFLINE");
        assert_eq!(
            m[&PathBuf::from("/dev/sdc1")]
                .clone()
                .with_via("sdc1")
                .short(),
            "sdc1: zpool tank raidz2-0 data ONLINE"
        );
        // The imported pool's entry replaces the signature's guess.
        let mut out = vec![Membership::Zpool {
            pool: "tank".into(),
            vdev: None,
            role: None,
            state: Some("not imported".into()),
            via: None,
        }];
        assert_eq!(out[0].short(), "zpool tank not imported");
        add_zpool(&mut out, &m, Path::new("/dev/sdb1"));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].short(), "zpool tank raidz2-0 data ONLINE");
    }

    #[test]
    fn md_member_from_holders_and_md_dir() {
        let d = tempfile::tempdir().unwrap();
        let md = d.path().join("md0/md");
        std::fs::create_dir_all(md.join("dev-sdb1")).unwrap();
        std::fs::write(md.join("level"), "raid6\n").unwrap();
        std::fs::write(md.join("dev-sdb1/state"), "in_sync\n").unwrap();
        let m = md_of(d.path(), "sdb1", &["md0".into(), "dm-0".into()]);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].short(), "md0 raid6 in_sync");
        assert_eq!(
            m[0].clone().with_via("sdb1").short(),
            "sdb1: md0 raid6 in_sync"
        );
    }

    #[test]
    fn unassembled_md_btrfs_and_lvm_from_signatures() {
        let d = tempfile::tempdir().unwrap();
        let none = HashMap::new();
        let raid = Signature {
            fs_type: Some("linux_raid_member".into()),
            uuid: Some("0123456789abcdef".into()),
            ..Signature::default()
        };
        let m = memberships(
            d.path(),
            "sdc",
            &[],
            Some(&raid),
            &[],
            &none,
            Path::new("/dev/sdc"),
        );
        assert_eq!(m[0].short(), "md (not assembled 01234567)");

        let fs = BtrfsFs {
            uuid: "abcdef01-2345".into(),
            label: Some("pool".into()),
            devices: vec!["loop3".into(), "loop4".into()],
        };
        let m = memberships(
            d.path(),
            "loop4",
            &[],
            None,
            &[fs],
            &none,
            Path::new("/dev/loop4"),
        );
        assert_eq!(m[0].short(), "btrfs pool");

        let pv = Signature {
            fs_type: Some("LVM2_member".into()),
            ..Signature::default()
        };
        let mut vgs = HashMap::new();
        vgs.insert(
            PathBuf::from("/dev/iolab-no-such-pv"),
            Some("vg0".to_string()),
        );
        let m = memberships(
            d.path(),
            "iolab-no-such-pv",
            &[],
            Some(&pv),
            &[],
            &vgs,
            Path::new("/dev/iolab-no-such-pv"),
        );
        assert_eq!(m[0].short(), "lvm-pv vg0");
    }

    #[test]
    fn parses_blkid_export_blocks() {
        let t = "DEVNAME=/dev/loop1\nUUID=iZRO1J\nVERSION=LVM2\\ 001\nTYPE=LVM2_member\nUSAGE=raid\n\n\
                 DEVNAME=/dev/sda\nPTUUID=x\nPTTYPE=gpt\n\nDEVNAME=/dev/loop4\nLABEL=my\\ data\nTYPE=xfs\n";
        let m = parse_blkid_export(t);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[Path::new("/dev/loop1")].fs_type.as_deref(),
            Some("LVM2_member")
        );
        assert_eq!(m[Path::new("/dev/sda")].short(), Some("gpt"));
        assert_eq!(m[Path::new("/dev/loop4")].label.as_deref(), Some("my data"));
    }

    #[test]
    fn parses_pvs_json() {
        let j = br#"{"report":[{"pv":[{"pv_name":"/dev/iolab-x1","vg_name":""},{"pv_name":"/dev/iolab-x2","vg_name":"vg0"}]}]}"#;
        let m = parse_pvs_json(j);
        assert_eq!(m[Path::new("/dev/iolab-x1")], None);
        assert_eq!(m[Path::new("/dev/iolab-x2")], Some("vg0".to_string()));
    }
}
