//! What the recommended layout needs beyond its build: the runtime tunables the lab set on it
//! (md's stripe cache and thread groups, the array's read-ahead, the members' IO scheduler;
//! ZFS's dataset properties) as the commands that set them on the real array, persistently.
//!
//! md's tunables live in the kernel, not on the disks: they are gone at the next assembly,
//! so the lasting way is a udev rule that sets them each time the array appears (sysfs
//! attributes with `ATTR{}`, the read-ahead with `blockdev --setra`). A ZFS dataset property
//! is kept by the pool: `zfs set` once is enough.

use crate::sample::RunRecord;
use crate::sample::layout_record::Layer;

/// The udev rule file the commands write.
pub const UDEV_RULE: &str = "/etc/udev/rules.d/60-iolab-tuning.rules";

/// ZFS properties a dataset keeps that `zfs set` can change later (the pool's `ashift` is
/// fixed at creation: it is in the build, not here).
const ZFS_DATASET: [&str; 10] = [
    "recordsize",
    "compression",
    "primarycache",
    "secondarycache",
    "atime",
    "sync",
    "logbias",
    "special_small_blocks",
    "xattr",
    "dnodesize",
];

/// The tunables read back after the build (`stripe_cache_size 4096, group_thread_cnt 2`) as
/// key-value pairs.
fn pairs(held: &str) -> Vec<(&str, &str)> {
    held.split(", ")
        .filter_map(|p| p.trim().split_once(' '))
        .collect()
}

/// The commands that set `stack`'s runtime tunables on the real array, persistently, with a
/// comment line first saying what they do; empty when the layout sets none. `held` is what
/// the kernel or ZFS held after the lab's build (the layout record's `tunables`): the values
/// the measurements were made with, preferred over the stack's asked ones. `MD` and `POOL`
/// stand for the real array's name and pool.
pub fn commands(stack: &[Layer], held: Option<&str>) -> Vec<String> {
    let held = held.map(pairs).unwrap_or_default();
    let get = |k: &str| held.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let mut out = Vec::new();
    for l in stack {
        match l {
            Layer::Md {
                stripe_cache_size,
                group_thread_cnt,
                ..
            } => md_commands(
                get("stripe_cache_size")
                    .map(str::to_string)
                    .or_else(|| stripe_cache_size.map(|n| n.to_string())),
                get("group_thread_cnt")
                    .map(str::to_string)
                    .or_else(|| group_thread_cnt.map(|n| n.to_string())),
                get("read_ahead_kb"),
                get("scheduler"),
                &mut out,
            ),
            Layer::Zfs { describe, .. } => zfs_commands(describe, &held, &mut out),
            Layer::Fs {
                read_ahead: Some(bytes),
                ..
            } => fs_read_ahead(bytes / 512, stack, &mut out),
            _ => {}
        }
    }
    out
}

/// The filesystem's read-ahead (`read_ahead`), `sectors` of 512 bytes, set where it lasts on
/// the device the filesystem sits on: an LVM volume keeps it in LVM's metadata (`lvchange
/// --readahead`); an md array or a bcache device gets it from a udev rule each time it
/// appears; a plain disk, whose name iolab cannot know, is set now with a note that it is
/// gone at the next boot.
fn fs_read_ahead(sectors: u64, stack: &[Layer], out: &mut Vec<String>) {
    let bcache = stack
        .iter()
        .any(|l| matches!(l, Layer::Cache { kind, .. } if kind == "bcache"));
    let lvm = stack.iter().any(|l| matches!(l, Layer::Lvm));
    let md = stack.iter().any(|l| matches!(l, Layer::Md { .. }));
    if lvm && !bcache {
        out.push(
            "# the filesystem's read-ahead as measured, kept in the volume's LVM metadata".into(),
        );
        out.push(format!("lvchange --readahead {sectors} VG/LV"));
        return;
    }
    let (kernel, dev) = if bcache {
        ("KERNEL==\"bcache*\"", "/dev/BCACHE")
    } else if md {
        ("KERNEL==\"md*\", TEST==\"md/level\"", "/dev/MD")
    } else {
        out.push(format!(
            "# the filesystem's read-ahead as measured; the kernel forgets it at the next boot: add the line to a udev rule for the disk ({UDEV_RULE})"
        ));
        out.push(format!("blockdev --setra {sectors} /dev/DISK"));
        return;
    };
    out.push(format!(
        "# the filesystem's read-ahead as measured, set each time its device appears (udev: {UDEV_RULE})"
    ));
    out.push(format!(
        "echo 'SUBSYSTEM==\"block\", {kernel}, ACTION==\"add|change\", RUN+=\"/usr/sbin/blockdev --setra {sectors} $devnode\"' >> {UDEV_RULE}"
    ));
    out.push(format!("blockdev --setra {sectors} {dev}"));
}

/// md's: one udev rule line per device kind (the array; its members, found by their md
/// superblock), written once, then applied now with `udevadm trigger`.
fn md_commands(
    cache: Option<String>,
    groups: Option<String>,
    read_ahead_kb: Option<&str>,
    scheduler: Option<&str>,
    out: &mut Vec<String>,
) {
    // md's defaults need no rule.
    let cache = cache.filter(|c| c != "256");
    let groups = groups.filter(|g| g != "0");
    let mut array: Vec<String> = Vec::new();
    if let Some(c) = &cache {
        array.push(format!("ATTR{{md/stripe_cache_size}}=\"{c}\""));
    }
    if let Some(g) = &groups {
        array.push(format!("ATTR{{md/group_thread_cnt}}=\"{g}\""));
    }
    if let Some(kb) = read_ahead_kb.and_then(|k| k.parse::<u64>().ok()) {
        array.push(format!(
            "RUN+=\"/usr/sbin/blockdev --setra {} $devnode\"",
            kb * 2
        ));
    }
    let member = scheduler.filter(|s| *s != "?" && *s != "mixed");
    if array.is_empty() && member.is_none() {
        return;
    }
    out.push(format!(
        "# md's runtime tunables as measured, set each time the array appears (udev: {UDEV_RULE})"
    ));
    if !array.is_empty() {
        out.push(format!(
            "echo 'SUBSYSTEM==\"block\", KERNEL==\"md*\", ACTION==\"add|change\", TEST==\"md/level\", {}' >> {UDEV_RULE}",
            array.join(", ").replace('\'', "'\\''")
        ));
    }
    if let Some(s) = member {
        out.push(format!(
            "echo 'SUBSYSTEM==\"block\", ACTION==\"add|change\", ENV{{ID_FS_TYPE}}==\"linux_raid_member\", ENV{{DEVTYPE}}==\"disk\", ATTR{{queue/scheduler}}=\"{s}\"' >> {UDEV_RULE}"
        ));
    }
    out.push(
        "udevadm control --reload && udevadm trigger --subsystem-match=block --action=change"
            .into(),
    );
    // Now, without waiting for udev, on the array (and its members for the scheduler).
    if let Some(c) = &cache {
        out.push(format!("echo {c} > /sys/block/MD/md/stripe_cache_size"));
    }
    if let Some(g) = &groups {
        out.push(format!("echo {g} > /sys/block/MD/md/group_thread_cnt"));
    }
    if let Some(kb) = read_ahead_kb.and_then(|k| k.parse::<u64>().ok()) {
        out.push(format!("blockdev --setra {} /dev/MD", kb * 2));
    }
}

/// ZFS's: `zfs set` for each dataset property the lab set and ZFS kept. The lab's own
/// `primarycache=metadata` (it keeps the ARC out of read figures) is not advice for a real
/// pool and is left out unless the sweep measured another value.
fn zfs_commands(describe: &str, held: &[(&str, &str)], out: &mut Vec<String>) {
    let asked: Vec<(&str, &str)> = describe
        .rsplit_once('[')
        .and_then(|(_, p)| p.strip_suffix(']'))
        .map(|p| {
            p.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .collect()
        })
        .unwrap_or_default();
    let mut props: Vec<String> = Vec::new();
    for (k, v) in asked {
        if !ZFS_DATASET.contains(&k) || (k == "primarycache" && v == "metadata") {
            continue;
        }
        let v = held
            .iter()
            .find(|(hk, _)| *hk == k)
            .map_or(v, |(_, hv)| *hv);
        props.push(format!("{k}={v}"));
    }
    if props.is_empty() {
        return;
    }
    out.push("# ZFS dataset properties as measured (the pool keeps them)".into());
    for p in props {
        out.push(format!("zfs set {p} POOL/DATASET"));
    }
}

/// [`commands`] for the layout named `name` among a lab's stored runs (its healthy run's
/// record); empty when it has none or sets no tunable.
pub fn for_runs(runs: &[RunRecord], name: &str) -> Vec<String> {
    runs.iter()
        .filter_map(|r| r.layout.as_ref())
        .find(|l| l.name.as_deref() == Some(name))
        .map(|l| commands(&l.stack, l.tunables.as_deref()))
        .unwrap_or_default()
}

/// The commands as the terminal prints them under the decision, or nothing.
pub fn render(name: &str, cmds: &[String]) -> String {
    if cmds.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\n{name} was measured with runtime tunables; to set them on the real array (MD: its md device name, POOL/DATASET: the dataset):\n"
    );
    for c in cmds {
        s.push_str("  ");
        s.push_str(c);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(cache: Option<u64>, groups: Option<u64>) -> Layer {
        Layer::Md {
            level: "raid6".into(),
            members: 8,
            spares: 0,
            chunk_bytes: Some(256 << 10),
            bitmap: None,
            bitmap_chunk_bytes: None,
            consistency_policy: None,
            stripe_cache_size: cache,
            group_thread_cnt: groups,
        }
    }

    /// The values the kernel held are the ones advised (what was measured), in a udev rule for
    /// the array and one for its members, then applied now.
    #[test]
    fn md_tunables_become_a_udev_rule_and_sysfs_lines() {
        let c = commands(
            &[md(Some(4096), Some(4))],
            Some(
                "stripe_cache_size 8192, group_thread_cnt 4, read_ahead_kb 4096, scheduler mq-deadline",
            ),
        );
        let all = c.join("\n");
        assert!(
            all.contains("ATTR{md/stripe_cache_size}=\"8192\", ATTR{md/group_thread_cnt}=\"4\", RUN+=\"/usr/sbin/blockdev --setra 8192 $devnode\""),
            "{all}"
        );
        assert!(
            all.contains("ENV{ID_FS_TYPE}==\"linux_raid_member\""),
            "{all}"
        );
        assert!(
            all.contains("ATTR{queue/scheduler}=\"mq-deadline\""),
            "{all}"
        );
        assert!(
            all.contains("echo 8192 > /sys/block/MD/md/stripe_cache_size"),
            "{all}"
        );
        assert!(all.contains("blockdev --setra 8192 /dev/MD"), "{all}");
        assert!(all.contains(UDEV_RULE));
    }

    fn fs(read_ahead: Option<u64>) -> Layer {
        Layer::Fs {
            fs: "xfs".into(),
            mkfs_options: Vec::new(),
            mount_options: Vec::new(),
            read_ahead,
        }
    }

    /// The filesystem's read-ahead lasts where its device keeps it: LVM's metadata for a
    /// volume, a udev rule for an md array or a bcache device, and a plain disk is told that
    /// the kernel forgets it.
    #[test]
    fn the_filesystems_read_ahead_is_set_where_its_device_keeps_it() {
        let ra = Some(4 << 20);
        let lvm = commands(&[md(None, None), Layer::Lvm, fs(ra)], None).join("\n");
        assert!(lvm.contains("lvchange --readahead 8192 VG/LV"), "{lvm}");
        assert!(!lvm.contains("udev"), "{lvm}");
        let on_md = commands(&[md(None, None), fs(ra)], None).join("\n");
        assert!(
            on_md.contains("KERNEL==\"md*\", TEST==\"md/level\", ACTION==\"add|change\", RUN+=\"/usr/sbin/blockdev --setra 8192 $devnode\""),
            "{on_md}"
        );
        assert!(on_md.contains("blockdev --setra 8192 /dev/MD"), "{on_md}");
        let bcache = Layer::Cache {
            kind: "bcache".into(),
            mode: "writeback".into(),
            size_bytes: None,
            disks: 1,
        };
        let bc = commands(&[md(None, None), bcache, fs(ra)], None).join("\n");
        assert!(bc.contains("KERNEL==\"bcache*\""), "{bc}");
        assert!(bc.contains("blockdev --setra 8192 /dev/BCACHE"), "{bc}");
        let disk = commands(&[fs(ra)], None).join("\n");
        assert!(disk.contains("forgets it at the next boot"), "{disk}");
        assert!(disk.contains("blockdev --setra 8192 /dev/DISK"), "{disk}");
        assert!(commands(&[md(None, None), Layer::Lvm, fs(None)], None).is_empty());
    }

    /// md's defaults and a layout without tunables need nothing.
    #[test]
    fn defaults_need_no_commands() {
        assert!(commands(&[md(None, None)], None).is_empty());
        assert!(
            commands(
                &[md(Some(256), Some(0))],
                Some("stripe_cache_size 256, group_thread_cnt 0")
            )
            .is_empty()
        );
        assert!(commands(&[Layer::Lvm], None).is_empty());
    }

    /// ZFS: `zfs set` per dataset property, not the pool's ashift nor the lab's own
    /// primarycache=metadata.
    #[test]
    fn zfs_properties_become_zfs_set() {
        let z = Layer::Zfs {
            vdev: "raidz2".into(),
            vdevs: 1,
            width: 6,
            describe:
                "zfs raidz2 x6 [ashift=12 recordsize=1M compression=lz4 primarycache=metadata]"
                    .into(),
        };
        assert_eq!(
            commands(
                std::slice::from_ref(&z),
                Some("recordsize 1M, compression lz4, primarycache metadata")
            ),
            [
                "# ZFS dataset properties as measured (the pool keeps them)",
                "zfs set recordsize=1M POOL/DATASET",
                "zfs set compression=lz4 POOL/DATASET",
            ]
        );
        let all = Layer::Zfs {
            vdev: "raidz2".into(),
            vdevs: 1,
            width: 6,
            describe: "zfs raidz2 x6 [primarycache=all]".into(),
        };
        assert_eq!(
            commands(&[all], None)[1],
            "zfs set primarycache=all POOL/DATASET"
        );
    }
}
