//! The error counters a storage layer keeps per member, so a user's real array can be asked
//! what a lab asks after a fault: did a disk hand back wrong bytes, and did the
//! layer notice?
//!
//! - btrfs (mounted): `btrfs device stats MNT` per device: write, read, flush, corruption
//!   (checksum mismatches: silent corruption caught) and generation errors.
//! - md: the array's `mismatch_cnt` (sectors whose copies or parity disagreed in the last
//!   check) and the member's `errors` (read errors md corrected on it), from sysfs.
//! - dm-integrity: the mismatches `dmsetup status` counts (blocks whose tag did not match:
//!   turned into read errors md can rewrite).
//! - ZFS: the READ, WRITE and CKSUM columns of `zpool status -p -P`.
//!
//! Gathered for the census's devices once per filesystem, array or pool; every tool runs with
//! a time limit and a missing tool or a refusal leaves that layer out.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use super::census::DiskInfo;
use super::membership::Membership;
use crate::system::read_trim;

/// How long one tool may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// One layer's counters for one device of the census.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceCounters {
    /// The census device (kernel name, `sdb`).
    pub device: String,
    /// `btrfs`, `md`, `dm-integrity` or `zfs`.
    pub layer: String,
    /// What the counters belong to: the btrfs mount point, the md array, the dm device
    /// (`iolab-0-integrity (dm-3)`), the pool.
    pub of: String,
    /// Counter name to value, in the layer's own names (`corruption_errs`, `mismatch_cnt`,
    /// `mismatches`, `cksum`).
    pub counters: BTreeMap<String, u64>,
}

impl DeviceCounters {
    /// True when any counter is above zero: the layer saw an error on this device.
    pub fn any(&self) -> bool {
        self.counters.values().any(|&n| n > 0)
    }

    /// `loop3: btrfs at /mnt/x: corruption_errs 16` (only the counters above zero, unless
    /// `all`).
    pub fn line(&self, all: bool) -> String {
        let shown: Vec<String> = self
            .counters
            .iter()
            .filter(|(_, n)| all || **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let shown = if shown.is_empty() {
            "no errors".to_string()
        } else {
            shown.join(", ")
        };
        format!("{}: {} {}: {shown}", self.device, self.layer, self.of)
    }
}

/// The kernel name a device path resolves to (`/dev/mapper/x` -> `dm-3`).
fn kernel_name(path: &str) -> String {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path).to_string())
}

/// The device itself and its partitions, by kernel name.
fn names_of(d: &DiskInfo) -> Vec<&str> {
    std::iter::once(d.name())
        .chain(d.partitions.iter().map(String::as_str))
        .collect()
}

fn run(argv: &[&str]) -> Option<String> {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]);
    super::tools::run_one(c, TOOL_TIMEOUT).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// btrfs's counters for the devices of mounted btrfs filesystems, one `btrfs device stats`
/// per filesystem.
fn btrfs(devs: &[DiskInfo], out: &mut Vec<DeviceCounters>) {
    let mut stats: HashMap<String, Vec<crate::layout::btrfs::DevStats>> = HashMap::new();
    for d in devs {
        for m in &d.membership {
            let Membership::Btrfs {
                uuid,
                mounted: true,
                ..
            } = m
            else {
                continue;
            };
            let Some(mnt) = d.mountpoints.first() else {
                continue;
            };
            let all = stats.entry(uuid.clone()).or_insert_with(|| {
                run(&["btrfs", "device", "stats", &mnt.to_string_lossy()])
                    .map(|t| crate::layout::btrfs::parse_device_stats(&t))
                    .unwrap_or_default()
            });
            let names = names_of(d);
            for s in all
                .iter()
                .filter(|s| names.contains(&kernel_name(&s.device).as_str()))
            {
                out.push(DeviceCounters {
                    device: d.name().to_string(),
                    layer: "btrfs".into(),
                    of: format!("at {}", mnt.display()),
                    counters: BTreeMap::from([
                        ("write_io_errs".into(), s.write_io_errs),
                        ("read_io_errs".into(), s.read_io_errs),
                        ("flush_io_errs".into(), s.flush_io_errs),
                        ("corruption_errs".into(), s.corruption_errs),
                        ("generation_errs".into(), s.generation_errs),
                    ]),
                });
            }
        }
    }
}

/// md's counters for members of assembled arrays, from sysfs under `class_block`.
fn md(class_block: &Path, devs: &[DiskInfo], out: &mut Vec<DeviceCounters>) {
    for d in devs {
        for m in &d.membership {
            let Membership::Md {
                array: Some(array),
                via,
                ..
            } = m
            else {
                continue;
            };
            let md = class_block.join(array).join("md");
            let member = via.as_deref().unwrap_or(d.name());
            let mut counters = BTreeMap::new();
            let num = |p: std::path::PathBuf| read_trim(p).and_then(|t| t.parse::<u64>().ok());
            if let Some(n) = num(md.join("mismatch_cnt")) {
                counters.insert("mismatch_cnt".to_string(), n);
            }
            if let Some(n) = num(md.join(format!("dev-{member}")).join("errors")) {
                counters.insert("errors".to_string(), n);
            }
            if !counters.is_empty() {
                out.push(DeviceCounters {
                    device: d.name().to_string(),
                    layer: "md".into(),
                    of: array.clone(),
                    counters,
                });
            }
        }
    }
}

/// Parses `dmsetup status --target integrity`: `NAME: START LEN integrity MISMATCHES ...`,
/// to each dm name its mismatch count.
pub fn parse_integrity_status(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let Some((name, rest)) = l.split_once(": ") else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(&"integrity"), Some(n)) =
            (w.get(2), w.get(3).and_then(|n| n.parse::<u64>().ok()))
        {
            *out.entry(name.trim().to_string()).or_insert(0) += n;
        }
    }
    out
}

/// dm-integrity's mismatches for integrity devices and the disks under them.
fn integrity(class_block: &Path, devs: &[DiskInfo], out: &mut Vec<DeviceCounters>) {
    let dm_name = |k: &str| read_trim(class_block.join(k).join("dm").join("name"));
    let on_dm = |d: &DiskInfo| {
        d.name().starts_with("dm-") || d.used_by.iter().any(|u| u.starts_with("dm-"))
    };
    if !devs.iter().any(on_dm) {
        return;
    }
    let Some(text) = run(&["dmsetup", "status", "--target", "integrity"]) else {
        return;
    };
    let counts = parse_integrity_status(&text);
    for d in devs {
        let candidates = std::iter::once(d.name()).chain(d.used_by.iter().map(String::as_str));
        for k in candidates.filter(|k| k.starts_with("dm-")) {
            let Some((name, n)) = dm_name(k).and_then(|n| Some((n.clone(), *counts.get(&n)?)))
            else {
                continue;
            };
            out.push(DeviceCounters {
                device: d.name().to_string(),
                layer: "dm-integrity".into(),
                of: format!("{name} ({k})"),
                counters: BTreeMap::from([("mismatches".to_string(), n)]),
            });
        }
    }
}

/// ZFS's error columns for devices of imported pools, one `zpool status -p -P`.
fn zfs(devs: &[DiskInfo], out: &mut Vec<DeviceCounters>) {
    if !devs.iter().any(|d| {
        d.membership
            .iter()
            .any(|m| matches!(m, Membership::Zpool { vdev: Some(_), .. }))
    }) {
        return;
    }
    let Some(text) = run(&["zpool", "status", "-p", "-P"]) else {
        return;
    };
    for pool in crate::layout::zfs::status::parse_all(&text) {
        for dev in &pool.devices {
            let k = kernel_name(&dev.name);
            let Some(d) = devs.iter().find(|d| names_of(d).contains(&k.as_str())) else {
                continue;
            };
            out.push(DeviceCounters {
                device: d.name().to_string(),
                layer: "zfs".into(),
                of: format!("pool {} {}", pool.pool, dev.vdev),
                counters: BTreeMap::from([
                    ("read".to_string(), dev.read),
                    ("write".to_string(), dev.write),
                    ("cksum".to_string(), dev.cksum),
                ]),
            });
        }
    }
}

/// Every counter the layers keep for the census's devices, in census order per layer.
pub fn gather(devs: &[DiskInfo]) -> Vec<DeviceCounters> {
    let class_block = Path::new("/sys/class/block");
    let mut out = Vec::new();
    btrfs(devs, &mut out);
    md(class_block, devs, &mut out);
    integrity(class_block, devs, &mut out);
    zfs(devs, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrity_mismatches_are_read_per_dm_name() {
        let text = "iolab-ab-0-int: 0 2093056 integrity 7 2093056 -\n\
                    iolab-ab-1-int: 0 2093056 integrity 0 2093056 -\n\
                    other: 0 100 linear\n";
        let m = parse_integrity_status(text);
        assert_eq!(m.get("iolab-ab-0-int"), Some(&7));
        assert_eq!(m.get("iolab-ab-1-int"), Some(&0));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn a_line_names_only_the_counters_above_zero_unless_all_are_asked() {
        let c = DeviceCounters {
            device: "loop3".into(),
            layer: "btrfs".into(),
            of: "at /mnt/x".into(),
            counters: BTreeMap::from([("corruption_errs".into(), 16), ("read_io_errs".into(), 0)]),
        };
        assert!(c.any());
        assert_eq!(c.line(false), "loop3: btrfs at /mnt/x: corruption_errs 16");
        assert_eq!(
            c.line(true),
            "loop3: btrfs at /mnt/x: corruption_errs 16, read_io_errs 0"
        );
    }
}
