//! The setup of each run as facts a reader compares: machine, target, filesystem and mount
//! options, devices with model and firmware, RAID level and chunk, LVM, and the layout a lab
//! recorded. Facts equal in every run are said once; the rest become columns.

use crate::sample::RunRecord;
use crate::sample::layout_record::{Layer, LayoutRecord};
use crate::system::BlockDevice;
use crate::target::TargetKind;
use crate::units::{format_bytes, format_bytes_si};

/// One named fact about a run's setup.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// What it is (`kernel`, `filesystem`).
    pub key: &'static str,
    /// Its value as shown; `-` when unknown.
    pub value: String,
}

/// One block device under a target.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRow {
    /// Kernel name.
    pub name: String,
    /// Model (vendor first when known).
    pub model: String,
    /// Firmware revision.
    pub firmware: String,
    /// Serial number.
    pub serial: String,
    /// Size, decimal units as on the label.
    pub size: String,
    /// `HDD`, `SSD` or `-`.
    pub kind: String,
    /// Transport (`sata`, `nvme`, `loop`, `md`).
    pub transport: String,
    /// RAID level and chunk of an md array.
    pub raid: String,
}

/// What a lab recorded about the layout a run ran on, as the setup table and notes show it.
/// Every field is optional: a record has what its lab knew (a directory layout has no stack).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayoutFacts {
    /// Layout name (the label of its runs).
    pub name: Option<String>,
    /// One line describing the stack.
    pub description: String,
    /// RAID level (`raid6`, `btrfs raid1`, `single disk`).
    pub level: Option<String>,
    /// Chunk size.
    pub chunk: Option<String>,
    /// Member disks.
    pub members: Option<u64>,
    /// Hot spares.
    pub spares: Option<u64>,
    /// An LVM volume in the stack (`None`: no stack recorded).
    pub lvm: Option<bool>,
    /// Filesystem.
    pub fs: Option<String>,
    /// Mount options.
    pub mount_options: Option<String>,
    /// Usable capacity, bytes.
    pub usable_bytes: Option<u64>,
    /// Name of the healthy layout run this degraded run belongs to.
    pub degraded_of: Option<String>,
    /// The run was made while the failed member's replacement rebuilt (`during_rebuild`).
    pub rebuilding: bool,
    /// Seconds the rebuild took.
    pub rebuild_seconds: Option<f64>,
    /// Members a disk test found slow.
    pub slow_members: Vec<String>,
    /// The lab's integrity verdict: `verified`, `DATA LOSS (...)`, `FAILED: <step>`.
    pub integrity: Option<String>,
    /// The degraded run's cache device failed first (`cache.fail`): what it did.
    pub cache_failure: Option<crate::stack::cache::CacheFailure>,
    /// How its layers sat on the array's stripe (`aligned (lvm, xfs)`, or each misaligned
    /// layer's warning with its fix); `None` when the lab did not check.
    pub alignment: Option<String>,
    /// What each fault the lab injected did to the data set's files, and what the layer
    /// counted (the report's fault table).
    pub faults: Vec<crate::sample::fault_outcome::FaultOutcome>,
}

impl LayoutFacts {
    /// The facts of a run's layout record.
    pub fn from_record(r: &LayoutRecord) -> LayoutFacts {
        let (level, chunk, members, spares) = match r.raid() {
            Some(Layer::Md {
                level,
                members,
                spares,
                chunk_bytes,
                ..
            }) => (
                Some(level.clone()),
                chunk_bytes.map(format_bytes),
                Some(*members).filter(|m| *m > 0),
                Some(*spares),
            ),
            Some(Layer::Btrfs { data, members, .. }) => (
                Some(format!("btrfs {data}")),
                None,
                Some(*members).filter(|m| *m > 0),
                None,
            ),
            Some(Layer::Zfs {
                vdev, vdevs, width, ..
            }) => (
                Some(if *vdevs > 1 {
                    format!("zfs {vdevs}x {vdev}")
                } else {
                    format!("zfs {vdev}")
                }),
                None,
                Some(vdevs * width).filter(|m| *m > 0),
                None,
            ),
            Some(Layer::Disk) => (Some("single disk".into()), None, Some(1), None),
            // `raid()` finds none of these: listed so a new layer is placed here by the
            // compiler, not dropped by a fallback.
            Some(
                Layer::Lvm
                | Layer::Cache { .. }
                | Layer::Fs { .. }
                | Layer::Member { .. }
                | Layer::Unknown,
            )
            | None => (None, None, None, None),
        };
        let fs = r.fs();
        let mut f = LayoutFacts {
            name: r.name.clone(),
            description: String::new(),
            level,
            chunk,
            members,
            spares,
            lvm: (!r.stack.is_empty()).then(|| r.stack.contains(&Layer::Lvm)),
            fs: fs.map(|(fs, _)| fs.to_string()),
            mount_options: fs.map(|(_, o)| o.join(",")).filter(|o| !o.is_empty()),
            usable_bytes: r.capacity.usable_bytes,
            degraded_of: r.degraded_of.clone(),
            rebuilding: r.phase == Some(crate::sample::layout_record::Phase::Rebuilding),
            rebuild_seconds: r.rebuild.as_ref().map(|b| b.seconds),
            slow_members: r.slow_members.clone(),
            integrity: r.integrity.as_ref().map(|i| i.verdict.clone()),
            cache_failure: r.cache_failure.clone(),
            alignment: r.alignment.as_ref().map(alignment_text),
            faults: r.faults.clone(),
        };
        f.description = r
            .description
            .clone()
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| f.compose());
        f
    }

    /// A one-line description from the fields: `raid6 x6 +1 spare, chunk 512KiB > lvm > xfs`.
    fn compose(&self) -> String {
        let mut parts = Vec::new();
        let mut raid = self.level.clone().unwrap_or_default();
        if let Some(m) = self.members {
            raid.push_str(&format!(" x{m}"));
        }
        if let Some(s) = self.spares.filter(|s| *s > 0) {
            raid.push_str(&format!(" +{s} spare{}", if s == 1 { "" } else { "s" }));
        }
        if let Some(c) = &self.chunk {
            raid.push_str(&format!(", chunk {c}"));
        }
        let raid = raid.trim().to_string();
        if !raid.is_empty() {
            parts.push(raid);
        }
        if self.lvm == Some(true) {
            parts.push("lvm".to_string());
        }
        if let Some(fs) = &self.fs {
            let mut s = fs.clone();
            if let Some(o) = &self.mount_options {
                s.push_str(&format!(" ({o})"));
            }
            parts.push(s);
        }
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join(" > ")
        }
    }
}

/// The alignment fact: the summary, then each warning with its fix.
fn alignment_text(a: &crate::layout::align::AlignmentReport) -> String {
    let mut parts = vec![a.summary()];
    if let Some(g) = &a.array {
        parts[0].push_str(&format!(" over {g}"));
    }
    parts.extend(a.warnings().into_iter().map(str::to_string));
    parts.join("; ")
}

fn opt(s: &Option<String>) -> String {
    s.clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "-".into())
}

/// A device as a table row.
pub fn device_row(d: &BlockDevice) -> DeviceRow {
    let model = match (&d.vendor, &d.model) {
        (Some(v), Some(m)) if !m.starts_with(v.as_str()) && !v.trim().is_empty() => {
            format!("{} {m}", v.trim())
        }
        (_, m) => opt(m),
    };
    DeviceRow {
        name: d.name.clone(),
        model,
        firmware: opt(&d.firmware),
        serial: opt(&d.serial),
        size: format_bytes_si(d.size_bytes),
        kind: match d.rotational {
            Some(true) => "HDD".into(),
            Some(false) => "SSD".into(),
            None => "-".into(),
        },
        transport: opt(&d.transport),
        raid: match (&d.md_level, d.md_chunk_bytes) {
            (Some(l), Some(c)) => format!("{l}, chunk {}", format_bytes(c)),
            (Some(l), None) => l.clone(),
            _ => "-".into(),
        },
    }
}

/// The devices in one phrase: physical disks grouped by model, firmware and size
/// (`4 x ST4000NM0033 fw GA0A 4.00TB HDD`); stacked devices (md, dm) are left to the RAID and
/// LVM facts.
pub fn device_summary(devs: &[BlockDevice]) -> String {
    let leaves: Vec<&BlockDevice> = devs
        .iter()
        .filter(|d| d.slaves.is_empty() && d.md_level.is_none())
        .collect();
    let mut groups: Vec<(String, usize)> = Vec::new();
    for d in leaves {
        let r = device_row(d);
        let mut key = if r.model == "-" {
            format!("{} ({})", r.transport, r.size)
        } else {
            format!("{} {}", r.model, r.size)
        };
        if r.firmware != "-" {
            key.push_str(&format!(" fw {}", r.firmware));
        }
        if r.kind != "-" {
            key.push_str(&format!(" {}", r.kind));
        }
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => groups.push((key, 1)),
        }
    }
    if groups.is_empty() {
        return "-".into();
    }
    groups
        .iter()
        .map(|(k, n)| {
            if *n == 1 {
                k.clone()
            } else {
                format!("{n} × {k}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The RAID level under the target: md arrays from /sys, else the lab's layout, else a btrfs
/// filesystem over several devices.
fn raid_fact(r: &RunRecord, layout: Option<&LayoutFacts>) -> String {
    let md: Vec<String> = r
        .target
        .devices
        .iter()
        .filter_map(|d| {
            d.md_level.as_ref().map(|l| {
                let mut s = format!("{} {l}", d.name);
                if !d.slaves.is_empty() {
                    s.push_str(&format!(" x{}", d.slaves.len()));
                }
                if let Some(c) = d.md_chunk_bytes {
                    s.push_str(&format!(", chunk {}", format_bytes(c)));
                }
                s
            })
        })
        .collect();
    if !md.is_empty() {
        return md.join("; ");
    }
    if let Some(l) = layout.and_then(|l| l.level.clone()) {
        let mut s = l;
        if let Some(c) = layout.and_then(|l| l.chunk.clone()) {
            s.push_str(&format!(", chunk {c}"));
        }
        return s;
    }
    if r.target.fs_type.as_deref() == Some("btrfs") && r.target.devices.len() > 1 {
        return format!("btrfs over {} devices", r.target.devices.len());
    }
    "-".into()
}

fn lvm_fact(r: &RunRecord, layout: Option<&LayoutFacts>) -> String {
    let dm: Vec<&str> = r
        .target
        .devices
        .iter()
        .filter(|d| d.name.starts_with("dm-") || d.transport.as_deref() == Some("dm"))
        .map(|d| d.name.as_str())
        .collect();
    if !dm.is_empty() {
        return format!("yes ({})", dm.join(", "));
    }
    match layout.and_then(|l| l.lvm) {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => "-".into(),
    }
}

/// Every fact of a run, in the order the setup table shows them.
pub fn facts(r: &RunRecord, layout: Option<&LayoutFacts>) -> Vec<Fact> {
    let s = &r.system;
    let t = &r.target;
    let kind = match t.kind {
        TargetKind::Directory => "directory",
        TargetKind::File => "file",
        TargetKind::BlockDevice => "block device",
    };
    let fs = match &t.fs_type {
        Some(fs) => {
            let mut v = fs.clone();
            if let Some(m) = &t.mount_point {
                v.push_str(&format!(" on {}", m.display()));
            }
            if let Some(src) = &t.mount_source {
                v.push_str(&format!(" from {src}"));
            }
            v
        }
        None => "-".into(),
    };
    let f = |key: &'static str, value: String| Fact {
        key,
        value: if value.trim().is_empty() {
            "-".into()
        } else {
            value
        },
    };
    let mut out = vec![
        f("host", crate::report::labels::host_label(r)),
        f("kernel", s.kernel.clone()),
        f(
            "CPU",
            if s.cpu_model.is_empty() {
                format!("{} CPUs", s.cpus)
            } else {
                format!("{} × {}", s.cpus, s.cpu_model)
            },
        ),
        f(
            "RAM",
            if s.ram_bytes == 0 {
                String::new()
            } else {
                format_bytes(s.ram_bytes)
            },
        ),
        f(
            "iolab",
            format!("{} ({})", s.iolab_version, s.iolab_git_rev)
                .trim_end_matches(" ()")
                .to_string(),
        ),
        f("suite", r.suite_name.clone()),
        f("target", format!("{} ({kind})", t.path.display())),
        f("filesystem", fs),
        f("mount options", opt(&t.mount_options)),
        f("devices", device_summary(&t.devices)),
        f("RAID", raid_fact(r, layout)),
        f("LVM", lvm_fact(r, layout)),
        f(
            "layout",
            layout.map_or_else(String::new, |l| l.description.clone()),
        ),
        f("lab", r.lab_id.clone().unwrap_or_default()),
    ];
    // Only a lab that checked the alignment adds its row: older records show as before.
    if let Some(a) = layout.and_then(|l| l.alignment.clone()) {
        out.insert(out.len() - 1, f("alignment", a));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_facts_come_from_the_record() {
        let r: LayoutRecord = serde_json::from_value(serde_json::json!({
            "name": "r6-degraded",
            "stack": [
                {"layer": "md", "level": "raid6", "members": 6, "spares": 1, "chunk_bytes": 524288},
                {"layer": "lvm"},
                {"layer": "fs", "fs": "xfs", "mount_options": ["noatime", "nobarrier"]}
            ],
            "capacity": {"usable_bytes": 4_000_000_000u64},
            "degraded_of": "r6",
            "rebuild": {"seconds": 81.5},
            "integrity": {"verdict": "verified"},
            "slow_members": ["sdd"]
        }))
        .unwrap();
        let f = LayoutFacts::from_record(&r);
        assert_eq!(f.name.as_deref(), Some("r6-degraded"));
        assert_eq!(f.level.as_deref(), Some("raid6"));
        assert_eq!(f.chunk.as_deref(), Some("512KiB"));
        assert_eq!(f.members, Some(6));
        assert_eq!(f.lvm, Some(true));
        assert_eq!(f.mount_options.as_deref(), Some("noatime,nobarrier"));
        assert_eq!(f.usable_bytes, Some(4_000_000_000));
        assert_eq!(f.degraded_of.as_deref(), Some("r6"));
        assert_eq!(f.rebuild_seconds, Some(81.5));
        assert_eq!(f.integrity.as_deref(), Some("verified"));
        assert_eq!(f.slow_members, ["sdd"]);
        assert_eq!(
            f.description,
            "raid6 x6 +1 spare, chunk 512KiB > lvm > xfs (noatime,nobarrier)"
        );

        let mut d = r.clone();
        d.description = Some("md raid6 x6 > lvm > xfs".into());
        assert_eq!(
            LayoutFacts::from_record(&d).description,
            "md raid6 x6 > lvm > xfs"
        );
        let btrfs: LayoutRecord = serde_json::from_value(serde_json::json!({
            "stack": [{"layer": "btrfs", "data": "raid1", "metadata": "raid1c3", "members": 3},
                      {"layer": "fs", "fs": "btrfs"}]
        }))
        .unwrap();
        let f = LayoutFacts::from_record(&btrfs);
        assert_eq!(f.level.as_deref(), Some("btrfs raid1"));
        assert_eq!(f.lvm, Some(false));
        let none = LayoutFacts::from_record(&LayoutRecord::default());
        assert_eq!(none.level, None);
        assert_eq!(none.description, "-");
        assert_eq!(none.lvm, None);
    }

    /// A ZFS pool is the RAID layer of its stack: the setup table shows its vdev kind and
    /// members like md's level and members, not `-`.
    #[test]
    fn a_zfs_layout_shows_its_level_and_members() {
        let zfs = |vdev: &str, vdevs: u64, width: u64| -> LayoutRecord {
            serde_json::from_value(serde_json::json!({
                "name": "z",
                "stack": [{"layer": "zfs", "vdev": vdev, "vdevs": vdevs, "width": width,
                           "describe": "ashift=12"}]
            }))
            .unwrap()
        };
        let f = LayoutFacts::from_record(&zfs("raidz1", 1, 3));
        assert_eq!(f.level.as_deref(), Some("zfs raidz1"));
        assert_eq!(f.members, Some(3));
        assert_eq!(f.lvm, Some(false));
        assert_eq!(f.description, "zfs raidz1 x3");
        let f = LayoutFacts::from_record(&zfs("mirror", 2, 2));
        assert_eq!(f.level.as_deref(), Some("zfs 2x mirror"));
        assert_eq!(f.members, Some(4));
        let run = RunRecord {
            id: "id-z".into(),
            status: crate::sample::RunStatus::Complete,
            started_unix_ms: 1_700_000_000_000,
            ended_unix_ms: None,
            command_line: vec![],
            label: Some("z".into()),
            note: None,
            lab_id: None,
            layout: None,
            suite_name: "lab".into(),
            system: crate::system::SystemInfo::default(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: Vec::new(),
            notes: Vec::new(),
            error: None,
        };
        let setup = facts(&run, Some(&f));
        let raid = setup.iter().find(|x| x.key == "RAID").unwrap();
        assert_eq!(raid.value, "zfs 2x mirror");
    }

    #[test]
    fn identical_disks_are_counted_once() {
        let disk = |name: &str, fw: &str| BlockDevice {
            name: name.into(),
            model: Some("ST4000NM0033".into()),
            firmware: Some(fw.into()),
            size_bytes: 4_000_000_000_000,
            rotational: Some(true),
            ..BlockDevice::default()
        };
        let md = BlockDevice {
            name: "md0".into(),
            md_level: Some("raid6".into()),
            slaves: vec!["sda".into(), "sdb".into()],
            ..BlockDevice::default()
        };
        let s = device_summary(&[
            md,
            disk("sda", "GA0A"),
            disk("sdb", "GA0A"),
            disk("sdc", "GA0B"),
        ]);
        assert_eq!(
            s,
            "2 × ST4000NM0033 4.00TB fw GA0A HDD; ST4000NM0033 4.00TB fw GA0B HDD"
        );
    }
}
