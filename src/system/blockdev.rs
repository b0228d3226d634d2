//! Block devices as /sys describes them: size, block sizes, model, firmware, rotational...
//!
//! Every field is optional in spirit: a virtual disk has no serial, a loop device no model.
//! Missing facts are `None` (shown as "-"), never errors.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::mounts::MountInfo;
use super::read_trim;

/// One block device.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BlockDevice {
    /// Kernel name (`sda`, `nvme0n1`, `loop3`, `md0`).
    pub name: String,
    /// Device node (`/dev/sda`).
    pub path: PathBuf,
    /// "major:minor".
    pub devnum: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Smallest addressable unit, bytes (O_DIRECT alignment).
    pub logical_block_size: u32,
    /// Physical sector size, bytes.
    pub physical_block_size: u32,
    /// Spinning disk (true) or not.
    pub rotational: Option<bool>,
    /// Vendor, when the device reports one.
    pub vendor: Option<String>,
    /// Model string.
    pub model: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// Firmware revision.
    pub firmware: Option<String>,
    /// Active IO scheduler (`mq-deadline`, `none`).
    pub scheduler: Option<String>,
    /// Device queue depth, when the transport reports one.
    pub queue_depth: Option<u32>,
    /// `sata`, `sas`, `nvme`, `virtio`, `loop`, `md`, `dm`, `zram`, ...
    pub transport: Option<String>,
    /// The whole disk this is a partition of.
    pub parent: Option<String>,
    /// Devices stacked on this one (md arrays, dm targets).
    pub holders: Vec<String>,
    /// Devices this one is stacked on (md members, loop backing has none).
    pub slaves: Vec<String>,
    /// Backing file of a loop device.
    pub loop_backing_file: Option<PathBuf>,
    /// RAID level of an md array (`raid6`).
    pub md_level: Option<String>,
    /// Chunk size of an md array, bytes.
    pub md_chunk_bytes: Option<u64>,
}

fn sys_block(name: &str) -> PathBuf {
    Path::new("/sys/class/block").join(name)
}

/// "major:minor" of a device by kernel name.
pub fn devnum(name: &str) -> Option<String> {
    read_trim(sys_block(name).join("dev"))
}

/// Kernel names of the partitions of a whole disk.
pub fn partitions(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(sys_block(name)) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(name) && e.path().join("partition").exists() {
                out.push(n);
            }
        }
    }
    out.sort();
    out
}

fn list_dir(p: PathBuf) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn nonempty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Kernel names of every block device in /sys/class/block.
pub fn all_names() -> Vec<String> {
    list_dir(PathBuf::from("/sys/class/block"))
}

/// Key=value pairs udev recorded for a device (`/run/udev/data/b<maj>:<min>`, `E:` lines).
pub fn udev_props(devnum: &str) -> Vec<(String, String)> {
    let p = format!("/run/udev/data/b{devnum}");
    std::fs::read_to_string(p)
        .map(|t| {
            t.lines()
                .filter_map(|l| l.strip_prefix("E:"))
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

impl BlockDevice {
    /// Reads a device by kernel name; `None` when /sys has no such block device.
    pub fn read(name: &str) -> Option<BlockDevice> {
        let base = sys_block(name);
        let devnum = read_trim(base.join("dev"))?;
        let is_part = base.join("partition").exists();
        let parent = if is_part {
            std::fs::canonicalize(&base).ok().and_then(|p| {
                p.parent()
                    .and_then(|pp| pp.file_name())
                    .map(|f| f.to_string_lossy().into_owned())
            })
        } else {
            None
        };
        // Queue facts live on the whole disk for partitions.
        let qbase = parent
            .as_ref()
            .map_or_else(|| base.clone(), |p| sys_block(p));
        let dev = qbase.join("device");
        let num = |p: PathBuf| read_trim(p).and_then(|s| s.parse::<u64>().ok());
        let sectors = num(base.join("size")).unwrap_or(0);
        let scheduler = read_trim(qbase.join("queue/scheduler")).and_then(|s| {
            s.split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                .or_else(|| (!s.is_empty()).then_some(s))
        });
        let udev = udev_props(&devnum);
        let uprop = |k: &str| udev.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.clone());
        let serial = nonempty(read_trim(dev.join("serial")))
            .or_else(|| nonempty(read_trim(qbase.join("serial"))))
            .or_else(|| nonempty(uprop("ID_SERIAL_SHORT")));
        let firmware = nonempty(read_trim(dev.join("rev")))
            .or_else(|| nonempty(read_trim(dev.join("firmware_rev"))))
            .or_else(|| nonempty(uprop("ID_REVISION")));
        let model = nonempty(read_trim(dev.join("model"))).or_else(|| nonempty(uprop("ID_MODEL")));
        let md_level = nonempty(read_trim(base.join("md/level")));
        let md_chunk_bytes = num(base.join("md/chunk_size")).filter(|c| *c > 0);
        let loop_backing_file = read_trim(base.join("loop/backing_file")).map(PathBuf::from);
        let rotational = read_trim(qbase.join("queue/rotational")).map(|s| s == "1");
        let transport = transport_of(name, parent.as_deref(), &dev, &udev);
        Some(BlockDevice {
            name: name.to_string(),
            path: PathBuf::from("/dev").join(name),
            devnum,
            size_bytes: sectors * 512,
            logical_block_size: num(qbase.join("queue/logical_block_size")).unwrap_or(512) as u32,
            physical_block_size: num(qbase.join("queue/physical_block_size")).unwrap_or(512) as u32,
            rotational,
            vendor: nonempty(read_trim(dev.join("vendor"))),
            model,
            serial,
            firmware,
            scheduler,
            queue_depth: num(dev.join("queue_depth")).map(|q| q as u32),
            transport,
            parent,
            holders: list_dir(base.join("holders")),
            slaves: list_dir(base.join("slaves")),
            loop_backing_file,
            md_level,
            md_chunk_bytes,
        })
    }

    /// Reads the device behind a device node path (`/dev/loop3`, a /dev/disk/by-id link).
    pub fn from_path(p: &Path) -> Option<BlockDevice> {
        let real = std::fs::canonicalize(p).ok()?;
        let meta = std::fs::metadata(&real).ok()?;
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_block_device() {
            return None;
        }
        use std::os::unix::fs::MetadataExt;
        let rdev = meta.rdev();
        Self::from_devnum(libc::major(rdev), libc::minor(rdev))
    }

    /// Reads the device with a device number.
    pub fn from_devnum(major: u32, minor: u32) -> Option<BlockDevice> {
        let link = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")).ok()?;
        let name = link.file_name()?.to_string_lossy().into_owned();
        Self::read(&name)
    }

    /// The whole disk this device belongs to (itself when it is not a partition).
    pub fn whole_disk(&self) -> String {
        self.parent.clone().unwrap_or_else(|| self.name.clone())
    }
}

fn transport_of(
    name: &str,
    parent: Option<&str>,
    dev: &Path,
    udev: &[(String, String)],
) -> Option<String> {
    let n = parent.unwrap_or(name);
    for (prefix, t) in [
        ("loop", "loop"),
        ("md", "md"),
        ("dm-", "dm"),
        ("zram", "zram"),
        ("nvme", "nvme"),
        ("vd", "virtio"),
        ("ram", "ram"),
        ("nbd", "nbd"),
    ] {
        if n.starts_with(prefix) {
            return Some(t.to_string());
        }
    }
    if let Some((_, bus)) = udev.iter().find(|(k, _)| k == "ID_BUS") {
        return Some(if bus == "ata" {
            "sata".into()
        } else {
            bus.clone()
        });
    }
    let real = std::fs::canonicalize(dev)
        .ok()?
        .to_string_lossy()
        .into_owned();
    if real.contains("/ata") {
        Some("sata".into())
    } else if real.contains("/usb") {
        Some("usb".into())
    } else if real.contains("sas") || real.contains("/end_device") {
        Some("sas".into())
    } else if real.contains("/host") {
        Some("scsi".into())
    } else {
        None
    }
}

/// The block devices under a file or directory: the device of its filesystem, resolved through
/// partitions, loop devices, md and dm down to the disks. Empty when unknown (tmpfs).
pub fn devices_under(path: &Path) -> Vec<BlockDevice> {
    use std::os::unix::fs::MetadataExt;
    let mut first: Vec<BlockDevice> = Vec::new();
    if let Ok(m) = std::fs::metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        if m.file_type().is_block_device() {
            first.extend(BlockDevice::from_devnum(
                libc::major(m.rdev()),
                libc::minor(m.rdev()),
            ));
        } else if let Some(d) = BlockDevice::from_devnum(libc::major(m.dev()), libc::minor(m.dev()))
        {
            first.push(d);
        }
    }
    if first.is_empty() {
        // btrfs and others report an anonymous device number: use the mount source(s).
        if let Some(mi) = super::mounts::mount_of(path) {
            if mi.fs_type == "btrfs" {
                first.extend(btrfs_devices(&mi));
            }
            if first.is_empty() {
                first.extend(BlockDevice::from_path(Path::new(&mi.source)));
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = first;
    while let Some(d) = stack.pop() {
        if out.iter().any(|o: &BlockDevice| o.name == d.name) {
            continue;
        }
        for s in &d.slaves {
            stack.extend(BlockDevice::read(s));
        }
        if let Some(p) = &d.parent {
            if !d.slaves.is_empty() {
                stack.extend(BlockDevice::read(p));
            }
        }
        out.push(d);
    }
    out
}

/// The member devices of a mounted btrfs filesystem, from `/sys/fs/btrfs/<uuid>/devices`.
pub fn btrfs_devices(mi: &MountInfo) -> Vec<BlockDevice> {
    let Ok(rd) = std::fs::read_dir("/sys/fs/btrfs") else {
        return Vec::new();
    };
    let src = std::fs::canonicalize(&mi.source).ok();
    for e in rd.flatten() {
        let devs = list_dir(e.path().join("devices"));
        if devs.is_empty() {
            continue;
        }
        let matches = src
            .as_ref()
            .and_then(|s| s.file_name())
            .is_some_and(|f| devs.iter().any(|d| d.as_str() == f.to_string_lossy()));
        if matches {
            return devs.iter().filter_map(|d| BlockDevice::read(d)).collect();
        }
    }
    Vec::new()
}

/// Mount points where the block device `dev` (e.g. "loop3", "sdb") or any partition of it is
/// mounted, found by device number and by source path.
pub fn mounts_of_device(dev_name: &str) -> Vec<MountInfo> {
    let mut names = vec![dev_name.to_string()];
    names.extend(partitions(dev_name));
    let devnums: Vec<String> = names.iter().filter_map(|n| devnum(n)).collect();
    super::mounts::mounts()
        .into_iter()
        .filter(|m| {
            devnums.contains(&m.dev)
                || names.iter().any(|n| m.source == format!("/dev/{n}"))
                || std::fs::canonicalize(&m.source)
                    .ok()
                    .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
                    .is_some_and(|f| names.contains(&f))
        })
        .collect()
}
