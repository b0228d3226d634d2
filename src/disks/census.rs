//! The census: every block device with the facts a person building a storage server checks
//! before trusting a disk, gathered from /sys, /proc/self/mountinfo, udev data and structured
//! tool output. A fact that cannot be read is `None`/empty (shown as "-"), never an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::membership::{self, BtrfsFs, Membership, Signature};
use super::temperature::{self, Reading, TempSource};
use crate::system::blockdev::{self, BlockDevice};
use crate::system::{MountInfo, read_trim};

/// What kind of block device this is; the census shows whole disks unless `--all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// A whole disk: SATA/SAS/NVMe/virtio/USB.
    Disk,
    /// A partition of a disk (or of a loop device).
    Partition,
    /// A loop device over a file.
    Loop,
    /// An md RAID array.
    Md,
    /// A device-mapper target (LVM volume, dm-crypt, multipath).
    Dm,
    /// A compressed RAM disk.
    Zram,
    /// A plain RAM disk (`brd`).
    Ram,
    /// Anything else (`nbd`, optical drives, floppies).
    Other,
}

impl DeviceKind {
    /// The name shown in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Disk => "disk",
            DeviceKind::Partition => "part",
            DeviceKind::Loop => "loop",
            DeviceKind::Md => "md",
            DeviceKind::Dm => "dm",
            DeviceKind::Zram => "zram",
            DeviceKind::Ram => "ram",
            DeviceKind::Other => "other",
        }
    }
}

/// The kind of a device from what /sys says about it.
pub fn kind_of(d: &BlockDevice) -> DeviceKind {
    if d.parent.is_some() {
        return DeviceKind::Partition;
    }
    match d.transport.as_deref() {
        Some("loop") => return DeviceKind::Loop,
        Some("md") => return DeviceKind::Md,
        Some("dm") => return DeviceKind::Dm,
        Some("zram") => return DeviceKind::Zram,
        Some("ram") => return DeviceKind::Ram,
        Some("nbd") => return DeviceKind::Other,
        _ => {}
    }
    if ["sr", "fd", "mtdblock"]
        .iter()
        .any(|p| d.name.starts_with(p))
    {
        DeviceKind::Other
    } else {
        DeviceKind::Disk
    }
}

/// One device as the census reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskInfo {
    /// What /sys says (name, path, size, block sizes, model, serial, firmware, transport...).
    #[serde(flatten)]
    pub device: BlockDevice,
    /// Disk, partition, loop, md, dm, zram, ram or other.
    pub kind: DeviceKind,
    /// Kernel names of its partitions.
    pub partitions: Vec<String>,
    /// What is written at its start (filesystem, RAID/LVM superblock, partition table).
    pub signature: Option<Signature>,
    /// Temperature in degrees Celsius, when a sensor or smartctl reports one.
    pub temperature_c: Option<f64>,
    /// Where the temperature came from.
    pub temperature_source: Option<TempSource>,
    /// Where it, its partitions, or the btrfs filesystem it belongs to are mounted.
    pub mountpoints: Vec<PathBuf>,
    /// Devices stacked on it or on its partitions (md arrays, dm targets).
    pub used_by: Vec<String>,
    /// Arrays, filesystems and volume groups it (or a partition of it) belongs to.
    pub membership: Vec<Membership>,
}

impl DiskInfo {
    /// Kernel name.
    pub fn name(&self) -> &str {
        &self.device.name
    }
    /// Device node.
    pub fn path(&self) -> &Path {
        &self.device.path
    }
}

/// Sorts `sdb` before `sdaa` and `loop2` before `loop10`, as people count.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut num: Option<u64> = None;
        for c in s.chars() {
            if let Some(d) = c.to_digit(10) {
                num = Some(
                    num.unwrap_or(0)
                        .saturating_mul(10)
                        .saturating_add(u64::from(d)),
                );
            } else {
                if let Some(n) = num.take() {
                    out.push((std::mem::take(&mut text), n));
                }
                text.push(c);
            }
        }
        out.push((text, num.unwrap_or(0)));
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    // Within a family (same first two letters) shorter names first: `sdz` before `sdaa`.
    let key = |c: &Vec<(String, u64)>| -> Vec<(String, usize, String, u64)> {
        c.iter()
            .map(|(t, n)| (t.chars().take(2).collect(), t.len(), t.clone(), *n))
            .collect()
    };
    key(&ca).cmp(&key(&cb))
}

/// The block devices the census lists: whole disks, or with `all` every device except
/// unattached loop and nbd devices and hidden NVMe multipath paths.
pub fn list(all: bool) -> Vec<BlockDevice> {
    let mut out: Vec<BlockDevice> = blockdev::all_names()
        .iter()
        .filter(|n| read_trim(format!("/sys/class/block/{n}/hidden")).as_deref() != Some("1"))
        .filter_map(|n| BlockDevice::read(n))
        .filter(|d| {
            let k = kind_of(d);
            let unattached =
                d.size_bytes == 0 && (k == DeviceKind::Loop || d.name.starts_with("nbd"));
            if unattached {
                return false;
            }
            all || k == DeviceKind::Disk
        })
        .collect();
    out.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    out
}

/// The census: [`list`] then [`describe_all`].
pub fn census(all: bool) -> Vec<DiskInfo> {
    describe_all(list(all))
}

/// Mount points of the devices named, matched by device number and by mount source.
fn mountpoints_of(names: &[String], mounts: &[MountInfo]) -> Vec<PathBuf> {
    let devnums: Vec<String> = names.iter().filter_map(|n| blockdev::devnum(n)).collect();
    let mut out: Vec<PathBuf> = Vec::new();
    for m in mounts {
        let by_source = || {
            std::fs::canonicalize(&m.source)
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
                .is_some_and(|f| names.contains(&f))
        };
        if (devnums.contains(&m.dev) || by_source()) && !out.contains(&m.mount_point) {
            out.push(m.mount_point.clone());
        }
    }
    out
}

/// The blk-mq tag depth: the queue depth of devices whose driver has no `queue_depth` file
/// (NVMe, virtio, loop).
fn mq_depth(name: &str) -> Option<u32> {
    read_trim(format!("/sys/class/block/{name}/mq/0/nr_tags")).and_then(|s| s.parse().ok())
}

/// What the machine says about every device at once, gathered before any one is described.
struct Facts {
    /// Filesystem signatures by device or partition name.
    sigs: HashMap<String, Signature>,
    /// The btrfs filesystems the kernel knows.
    btrfs: Vec<BtrfsFs>,
    /// LVM physical volumes (only asked for when a signature says LVM2_member).
    pvs: HashMap<PathBuf, Option<String>>,
    /// Members of imported zpools (empty without the zpool tool).
    zpools: HashMap<PathBuf, Membership>,
    /// Every mount.
    mounts: Vec<MountInfo>,
}

/// Census entries for a list of devices. Tools (`blkid`, `smartctl`, `pvs`) run once for all
/// of them, in parallel, each with a time limit.
pub fn describe_all(devs: Vec<BlockDevice>) -> Vec<DiskInfo> {
    let class_block = Path::new("/sys/class/block");
    let kinds: Vec<DeviceKind> = devs.iter().map(kind_of).collect();
    let parts = partitions_of(&devs, &kinds);
    let sigs = signatures(class_block, &devs, &parts);
    let btrfs: Vec<BtrfsFs> = membership::btrfs_filesystems(Path::new("/sys/fs/btrfs"));
    let pvs = if sigs
        .values()
        .any(|s| s.fs_type.as_deref() == Some("LVM2_member"))
    {
        membership::pvs_map()
    } else {
        HashMap::new()
    };
    let temps = temperatures(class_block, &devs, &kinds);
    let facts = Facts {
        sigs,
        btrfs,
        pvs,
        zpools: membership::zpool_map(),
        mounts: crate::system::mounts::mounts(),
    };
    devs.into_iter()
        .zip(kinds)
        .zip(parts)
        .zip(temps)
        .map(|(((d, kind), partitions), temp)| {
            describe(class_block, d, kind, partitions, temp, &facts)
        })
        .collect()
}

/// The partitions of each device (none for a partition itself).
fn partitions_of(devs: &[BlockDevice], kinds: &[DeviceKind]) -> Vec<Vec<String>> {
    devs.iter()
        .zip(kinds)
        .map(|(d, k)| {
            if *k == DeviceKind::Partition {
                Vec::new()
            } else {
                blockdev::partitions(&d.name)
            }
        })
        .collect()
}

/// Signatures of the devices and their partitions: udev's record when it has one, else one
/// blkid call for the rest (empty devices are not probed).
fn signatures(
    class_block: &Path,
    devs: &[BlockDevice],
    parts: &[Vec<String>],
) -> HashMap<String, Signature> {
    let mut every: Vec<(String, String)> = Vec::new(); // (name, devnum) of devices and partitions
    for (d, p) in devs.iter().zip(parts) {
        every.push((d.name.clone(), d.devnum.clone()));
        for n in p {
            every.push((n.clone(), blockdev::devnum(n).unwrap_or_default()));
        }
    }
    let mut sigs: HashMap<String, Signature> = HashMap::new();
    let mut probe: Vec<PathBuf> = Vec::new();
    for (n, num) in &every {
        if let Some(s) = Signature::from_udev(&blockdev::udev_props(num)) {
            sigs.insert(n.clone(), s);
        } else {
            let empty = read_trim(class_block.join(n).join("size")).as_deref() == Some("0");
            if !empty {
                probe.push(Path::new("/dev").join(n));
            }
        }
    }
    for (p, s) in membership::blkid_many(&probe) {
        if let Some(f) = p.file_name() {
            sigs.insert(f.to_string_lossy().into_owned(), s);
        }
    }
    sigs
}

/// Temperatures: hwmon first; smartctl, all at once, for whole disks without a sensor; a
/// partition shows its disk's temperature when the disk is in the list too.
fn temperatures(
    class_block: &Path,
    devs: &[BlockDevice],
    kinds: &[DeviceKind],
) -> Vec<Option<Reading>> {
    let mut temps: Vec<Option<Reading>> = devs
        .iter()
        .map(|d| {
            let dir = class_block.join(d.whole_disk());
            temperature::hwmon_celsius(&dir).map(|c| Reading {
                celsius: c,
                source: TempSource::Hwmon,
            })
        })
        .collect();
    let ask: Vec<usize> = (0..devs.len())
        .filter(|&i| temps[i].is_none() && kinds[i] == DeviceKind::Disk && devs[i].size_bytes > 0)
        .collect();
    let paths: Vec<PathBuf> = ask.iter().map(|&i| devs[i].path.clone()).collect();
    for (i, t) in ask.iter().zip(temperature::smartctl_many(&paths)) {
        temps[*i] = t.map(|c| Reading {
            celsius: c,
            source: TempSource::Smartctl,
        });
    }
    for i in 0..devs.len() {
        if temps[i].is_none() {
            if let Some(p) = &devs[i].parent {
                temps[i] = devs
                    .iter()
                    .position(|d| &d.name == p)
                    .and_then(|j| temps[j]);
            }
        }
    }
    temps
}

/// One census entry from the facts gathered for all.
fn describe(
    class_block: &Path,
    mut d: BlockDevice,
    kind: DeviceKind,
    partitions: Vec<String>,
    temp: Option<Reading>,
    facts: &Facts,
) -> DiskInfo {
    if d.queue_depth.is_none() {
        d.queue_depth = mq_depth(&d.whole_disk());
    }
    let (membership, used_by) = memberships_with_partitions(class_block, &d, &partitions, facts);
    let mountpoints = mountpoints_with_btrfs(&d, &partitions, &membership, facts);
    DiskInfo {
        signature: facts.sigs.get(&d.name).cloned(),
        device: d,
        kind,
        partitions,
        temperature_c: temp.map(|t| t.celsius),
        temperature_source: temp.map(|t| t.source),
        mountpoints,
        used_by,
        membership,
    }
}

/// What a device belongs to, its partitions' memberships included (marked with the partition),
/// and the holders of the device and its partitions.
fn memberships_with_partitions(
    class_block: &Path,
    d: &BlockDevice,
    partitions: &[String],
    facts: &Facts,
) -> (Vec<Membership>, Vec<String>) {
    let mut membership = membership::memberships(
        class_block,
        &d.name,
        &d.holders,
        facts.sigs.get(&d.name),
        &facts.btrfs,
        &facts.pvs,
        &d.path,
    );
    membership::add_zpool(&mut membership, &facts.zpools, &d.path);
    let mut used_by = d.holders.clone();
    for p in partitions {
        let holders = blockdev::BlockDevice::read(p)
            .map(|pd| pd.holders)
            .unwrap_or_default();
        for h in &holders {
            if !used_by.contains(h) {
                used_by.push(h.clone());
            }
        }
        let dev = Path::new("/dev").join(p);
        let mut of_part = membership::memberships(
            class_block,
            p,
            &holders,
            facts.sigs.get(p),
            &facts.btrfs,
            &facts.pvs,
            &dev,
        );
        membership::add_zpool(&mut of_part, &facts.zpools, &dev);
        membership.extend(of_part.into_iter().map(|m| m.with_via(p)));
    }
    (membership, used_by)
}

/// Where the device or its partitions are mounted. A btrfs filesystem is mounted through one
/// of its devices; all of them hold it.
fn mountpoints_with_btrfs(
    d: &BlockDevice,
    partitions: &[String],
    membership: &[Membership],
    facts: &Facts,
) -> Vec<PathBuf> {
    let mut names = vec![d.name.clone()];
    names.extend(partitions.iter().cloned());
    let mut mountpoints = mountpoints_of(&names, &facts.mounts);
    for m in membership {
        if let Membership::Btrfs { uuid, .. } = m {
            if let Some(fs) = facts.btrfs.iter().find(|f| &f.uuid == uuid) {
                for mp in mountpoints_of(&fs.devices, &facts.mounts) {
                    if !mountpoints.contains(&mp) {
                        mountpoints.push(mp);
                    }
                }
            }
        }
    }
    mountpoints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec![
            "loop10", "sdaa", "loop2", "sdb", "nvme0n1", "sda", "nvme10n1", "nvme2n1",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "loop2", "loop10", "nvme0n1", "nvme2n1", "nvme10n1", "sda", "sdb", "sdaa"
            ]
        );
    }

    #[test]
    fn kinds_from_transport_and_parent() {
        let d = |name: &str, t: Option<&str>, parent: Option<&str>| BlockDevice {
            name: name.into(),
            transport: t.map(String::from),
            parent: parent.map(String::from),
            ..BlockDevice::default()
        };
        assert_eq!(kind_of(&d("sda", Some("sata"), None)), DeviceKind::Disk);
        assert_eq!(
            kind_of(&d("sda1", Some("sata"), Some("sda"))),
            DeviceKind::Partition
        );
        assert_eq!(kind_of(&d("loop3", Some("loop"), None)), DeviceKind::Loop);
        assert_eq!(kind_of(&d("zram0", Some("zram"), None)), DeviceKind::Zram);
        assert_eq!(kind_of(&d("md0", Some("md"), None)), DeviceKind::Md);
        assert_eq!(kind_of(&d("sr0", None, None)), DeviceKind::Other);
        assert_eq!(kind_of(&d("vda", Some("virtio"), None)), DeviceKind::Disk);
    }

    #[test]
    fn census_of_this_machine_lists_only_whole_disks_by_default() {
        for d in census(false) {
            assert_eq!(d.kind, DeviceKind::Disk, "{}", d.name());
        }
    }
}
