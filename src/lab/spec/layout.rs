//! One `[[layout]]` table: a stack (btrfs or mdadm RAID layer, LVM, filesystem) or an existing
//! directory, checked field by field against the disks the lab has.

use std::path::PathBuf;

use toml::Spanned;

use super::raw::*;
use super::{Disks, LayoutKind, LayoutSpec};
use crate::layout::stack::{BtrfsProfile, FsKind, MdLevel, MdOptions, RaidLayer, Stack};
use crate::spec::SpecError;
use crate::units;

fn count_of(
    loc: &Locator,
    v: Option<i64>,
    line: Option<usize>,
    key: &str,
    default: usize,
) -> Result<usize, SpecError> {
    match v {
        None => Ok(default),
        Some(n) if (0..=1024).contains(&n) => Ok(n as usize),
        Some(_) => Err(loc.err(line, key, "must be between 0 and 1024")),
    }
}

pub(super) fn parse_layout(
    loc: &Locator,
    i: usize,
    sl: &Spanned<RawLayout>,
    disks: &Disks,
) -> Result<LayoutSpec, SpecError> {
    let l = sl.get_ref();
    let start = sl.span().start;
    let at = |key: &str| Some(loc.line_of_key(start, "layout", key));
    let name = match &l.name {
        None => {
            return Err(loc.err(
                Some(loc.line_of(start)),
                format!("layout[{}].name", i + 1),
                "missing; every layout needs a name that says what it is (e.g. btrfs-raid5)",
            ));
        }
        Some(n) if !valid_name(n) => {
            return Err(loc.err(
                at("name"),
                format!("layout[{}].name", i + 1),
                format!(
                    "'{n}' is not a usable name; use up to 40 letters, digits, '-', '_' or '.'"
                ),
            ));
        }
        Some(n) => n.clone(),
    };
    let key = |k: &str| format!("layout[{name}].{k}");
    let degrade = l.degrade.unwrap_or(false);
    let rebuild = l.rebuild.unwrap_or(false);
    if rebuild && !degrade {
        return Err(loc.err(
            at("rebuild"),
            key("rebuild"),
            "a rebuild needs a failed member first; set degrade = true",
        ));
    }
    if let Some(dir) = &l.dir {
        let stray = [
            ("btrfs", l.btrfs.is_some()),
            ("mdadm", l.mdadm.is_some()),
            ("lvm", l.lvm.is_some()),
            ("fs", l.fs.is_some()),
            ("mkfs_options", l.mkfs_options.is_some()),
            ("mount_options", l.mount_options.is_some()),
            ("degrade", degrade),
            ("failures", l.failures.is_some()),
            ("fill", l.fill.is_some()),
        ];
        if let Some((k, _)) = stray.iter().find(|(_, set)| *set) {
            return Err(loc.err(
                at(k),
                key(k),
                "a dir layout uses an existing directory as it is; drop this field (or drop dir to build a stack)",
            ));
        }
        let p = PathBuf::from(dir);
        if !p.is_dir() {
            return Err(loc.err(
                at("dir"),
                key("dir"),
                format!("{dir} is not an existing directory"),
            ));
        }
        return Ok(LayoutSpec {
            name,
            kind: LayoutKind::Directory(p),
            degrade: false,
            rebuild: false,
            failures: 1,
            fill: None,
        });
    }
    let pool = disks.count();
    if pool == 0 {
        return Err(loc.err(
            Some(loc.line_of(start)),
            key("disks"),
            "this layout builds a stack but the lab has no [disks]; add devices = [...] or loop = {...}",
        ));
    }
    let fs_given = match &l.fs {
        None => None,
        Some(f) => Some(FsKind::parse(f).ok_or_else(|| {
            loc.err(
                at("fs"),
                key("fs"),
                format!("unknown filesystem '{f}' (use xfs, ext4 or btrfs)"),
            )
        })?),
    };
    let (raid, members, spares, fs) = match (&l.btrfs, &l.mdadm) {
        (Some(_), Some(_)) => {
            return Err(loc.err(
                at("mdadm"),
                key("mdadm"),
                "a layout has one RAID layer: btrfs or mdadm, not both",
            ));
        }
        (Some(b), None) => {
            let data_s = b.data.as_deref().ok_or_else(|| {
                loc.err(
                    at("btrfs"),
                    key("btrfs.data"),
                    "missing; the data profile (e.g. data = \"raid5\")",
                )
            })?;
            let names = BtrfsProfile::ALL.map(BtrfsProfile::name).join(", ");
            let data = BtrfsProfile::parse(data_s).ok_or_else(|| {
                loc.err(
                    at("data"),
                    key("btrfs.data"),
                    format!("unknown profile '{data_s}' (use {names})"),
                )
            })?;
            let members = count_of(loc, b.members, at("members"), &key("btrfs.members"), pool)?;
            let metadata = match &b.metadata {
                None => BtrfsProfile::default_metadata(data, members),
                Some(m) => BtrfsProfile::parse(m).ok_or_else(|| {
                    loc.err(
                        at("metadata"),
                        key("btrfs.metadata"),
                        format!("unknown profile '{m}' (use {names})"),
                    )
                })?,
            };
            for (p, k) in [(data, "data"), (metadata, "metadata")] {
                if members < p.min_devices() {
                    let (line, field) = if b.members.is_some() {
                        (at("members"), "btrfs.members")
                    } else {
                        (
                            at(k),
                            if k == "data" {
                                "btrfs.data"
                            } else {
                                "btrfs.metadata"
                            },
                        )
                    };
                    return Err(loc.err(
                        line,
                        key(field),
                        format!(
                            "btrfs {} needs at least {} devices, the layout has {members}",
                            p.name(),
                            p.min_devices()
                        ),
                    ));
                }
            }
            if l.lvm == Some(true) {
                return Err(loc.err(
                    at("lvm"),
                    key("lvm"),
                    "btrfs RAID sits directly on the disks; put LVM under mdadm or a single disk",
                ));
            }
            if let Some(f) = fs_given {
                if f != FsKind::Btrfs {
                    return Err(loc.err(
                        at("fs"),
                        key("fs"),
                        format!(
                            "a btrfs RAID layer is its own filesystem; drop fs = \"{}\"",
                            f.name()
                        ),
                    ));
                }
            }
            (
                RaidLayer::Btrfs { data, metadata },
                members,
                0,
                FsKind::Btrfs,
            )
        }
        (None, Some(m)) => {
            let lv = m.level.as_ref().ok_or_else(|| {
                loc.err(
                    at("mdadm"),
                    key("mdadm.level"),
                    "missing; the RAID level (0, 1, 4, 5, 6 or 10)",
                )
            })?;
            let lv_s = match lv {
                IntOrStr::Int(n) => n.to_string(),
                IntOrStr::Text(s) => s.clone(),
            };
            let level = MdLevel::parse(&lv_s).ok_or_else(|| {
                loc.err(
                    at("level"),
                    key("mdadm.level"),
                    format!("unknown level '{lv_s}' (use 0, 1, 4, 5, 6 or 10)"),
                )
            })?;
            let spares = count_of(loc, m.spares, at("spares"), &key("mdadm.spares"), 0)?;
            if spares > 0 && !level.redundant() {
                return Err(loc.err(
                    at("spares"),
                    key("mdadm.spares"),
                    "raid0 cannot use spares; drop spares or pick a redundant level",
                ));
            }
            let members = count_of(
                loc,
                m.members,
                at("members"),
                &key("mdadm.members"),
                pool.saturating_sub(spares),
            )?;
            if members < level.min_devices() {
                let (line, field) = if m.members.is_some() {
                    (at("members"), "mdadm.members")
                } else {
                    (at("level"), "mdadm.level")
                };
                return Err(loc.err(
                    line,
                    key(field),
                    format!(
                        "md raid{} needs at least {} members, the layout has {members}",
                        level.number(),
                        level.min_devices()
                    ),
                ));
            }
            let chunk = match &m.chunk {
                None => None,
                Some(v) => {
                    let c = size_of(v).map_err(|e| loc.err(at("chunk"), key("mdadm.chunk"), e))?;
                    if !level.has_chunk() {
                        return Err(loc.err(
                            at("chunk"),
                            key("mdadm.chunk"),
                            "raid1 has no chunks; drop chunk",
                        ));
                    }
                    if c < 4096 || !c.is_power_of_two() {
                        return Err(loc.err(
                            at("chunk"),
                            key("mdadm.chunk"),
                            "must be a power of two of at least 4k (e.g. 512k)",
                        ));
                    }
                    Some(c)
                }
            };
            let bitmap = match m.bitmap.as_deref() {
                None => None,
                Some(b @ ("internal" | "none")) => {
                    if b == "internal" && !level.redundant() {
                        return Err(loc.err(
                            at("bitmap"),
                            key("mdadm.bitmap"),
                            "raid0 has no redundancy to track; drop bitmap",
                        ));
                    }
                    Some(b.to_string())
                }
                Some(o) => {
                    return Err(loc.err(
                        at("bitmap"),
                        key("mdadm.bitmap"),
                        format!("unknown bitmap '{o}' (use internal or none)"),
                    ));
                }
            };
            let bitmap_chunk = match &m.bitmap_chunk {
                None => None,
                Some(v) => {
                    let c = size_of(v)
                        .map_err(|e| loc.err(at("bitmap_chunk"), key("mdadm.bitmap_chunk"), e))?;
                    if bitmap.as_deref() != Some("internal") {
                        return Err(loc.err(
                            at("bitmap_chunk"),
                            key("mdadm.bitmap_chunk"),
                            "needs bitmap = \"internal\"",
                        ));
                    }
                    if c < 4096 || !c.is_power_of_two() {
                        return Err(loc.err(
                            at("bitmap_chunk"),
                            key("mdadm.bitmap_chunk"),
                            "must be a power of two of at least 4k (e.g. 64M)",
                        ));
                    }
                    Some(c)
                }
            };
            let fs = fs_given.ok_or_else(|| {
                loc.err(
                    at("mdadm"),
                    key("fs"),
                    "missing; the filesystem on the array (xfs, ext4 or btrfs)",
                )
            })?;
            (
                RaidLayer::Md(MdOptions {
                    level,
                    chunk,
                    bitmap,
                    bitmap_chunk,
                    assume_clean: m.assume_clean.unwrap_or(false),
                }),
                members,
                spares,
                fs,
            )
        }
        (None, None) => {
            let fs = fs_given.ok_or_else(|| {
                loc.err(
                    Some(loc.line_of(start)),
                    key("fs"),
                    "missing; a layout needs btrfs = {...}, mdadm = {...}, fs = \"xfs\" on a single disk, or dir = \"...\"",
                )
            })?;
            (RaidLayer::None, 1, 0, fs)
        }
    };
    let stack = Stack {
        raid,
        members,
        spares,
        lvm: l.lvm.unwrap_or(false),
        fs,
        mkfs_options: list_of(&l.mkfs_options, split_words),
        mount_options: list_of(&l.mount_options, split_commas),
    };
    let members_key = match &stack.raid {
        RaidLayer::Btrfs { .. } => key("btrfs.members"),
        RaidLayer::Md(_) => key("mdadm.members"),
        RaidLayer::None => key("fs"),
    };
    if stack.disks() > pool {
        return Err(loc.err(
            at("members"),
            members_key,
            format!(
                "the layout needs {} disks, the lab has {pool}; raise disks or lower members/spares",
                stack.disks()
            ),
        ));
    }
    if degrade && !stack.survives_one_failure() {
        return Err(loc.err(
            at("degrade"),
            key("degrade"),
            format!(
                "{} cannot lose a member; degrade needs a redundant level (btrfs raid1/raid10/raid5/raid6 data and metadata, md 1/4/5/6/10)",
                stack.describe()
            ),
        ));
    }
    let failures = match l.failures {
        None | Some(1) => 1u8,
        Some(2) => {
            if !degrade {
                return Err(loc.err(
                    at("failures"),
                    key("failures"),
                    "a second failure needs the first; set degrade = true",
                ));
            }
            if stack.tolerated_failures() < 2 {
                return Err(loc.err(
                    at("failures"),
                    key("failures"),
                    format!(
                        "{} survives only {} failure; failures = 2 needs btrfs raid6, raid1c3 or raid1c4 for data and metadata, md raid6, or md raid1 with 3 members",
                        stack.describe(),
                        stack.tolerated_failures()
                    ),
                ));
            }
            2
        }
        Some(_) => {
            return Err(loc.err(
                at("failures"),
                key("failures"),
                "must be 1 or 2 (how many members fail)",
            ));
        }
    };
    let member_size = match disks {
        Disks::Loop { size, .. } => Some(*size),
        Disks::Devices(d) => d[..stack.disks()]
            .iter()
            .filter_map(|p| crate::system::BlockDevice::from_path(p).map(|b| b.size_bytes))
            .min(),
        Disks::None => None,
    };
    if let Some(sz) = member_size {
        let top = stack.expected_usable(sz);
        if top < stack.fs.min_size() {
            return Err(loc.err(
                at("fs"),
                key("fs"),
                format!(
                    "{} needs at least {}, the stack gives {}; use bigger disks",
                    stack.fs.name(),
                    units::format_bytes(stack.fs.min_size()),
                    units::format_bytes(top)
                ),
            ));
        }
    }
    let fill = match &l.fill {
        None => None,
        Some(v) => {
            let f = size_of(v).map_err(|e| loc.err(at("fill"), key("fill"), e))?;
            if let Some(sz) = member_size {
                let cap = stack.expected_usable(sz) / 2;
                if f > cap {
                    return Err(loc.err(
                        at("fill"),
                        key("fill"),
                        format!(
                            "{} is more than half the layout's space ({}); lower fill",
                            units::format_bytes(f),
                            units::format_bytes(cap)
                        ),
                    ));
                }
            }
            Some(f)
        }
    };
    Ok(LayoutSpec {
        name,
        kind: LayoutKind::Stack(stack),
        degrade,
        rebuild,
        failures,
        fill,
    })
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 40
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !n.starts_with('.')
}
