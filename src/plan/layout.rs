//! Candidate layouts: the names people type (`raid6+2spares`, `3xraid6`, `btrfs-raid1c3`) and
//! what they mean once placed on a number of disks: groups, spares, capacity, how many failures
//! each group survives, and what a write costs.
//!
//! Everything here is arithmetic on counts, so capacities are exact integers; the performance
//! and risk models read their per-level constants from [`Level`] so a level is described once.

use std::fmt;

use super::PlanError;

/// A RAID level (mdadm) or a btrfs data profile.
///
/// mdadm levels can be grouped (`3xraid6`: three raid6 arrays striped together) and can have
/// hot spares; btrfs profiles span all disks of one filesystem and have neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// mdadm raid0: striping, no redundancy.
    Raid0,
    /// mdadm raid1: every disk of the group holds a full copy.
    Raid1,
    /// mdadm raid5: one parity chunk per stripe, rotating.
    Raid5,
    /// mdadm raid6: two parity chunks per stripe (P+Q).
    Raid6,
    /// mdadm raid10 (near=2): fixed pairs of mirrors, striped.
    Raid10,
    /// One plain disk under its filesystem (xfs, ext4), no RAID: a lab's single-disk layout.
    Single,
    /// btrfs `single`: each 1 GiB chunk lives on one disk.
    BtrfsSingle,
    /// btrfs `raid0`: chunks striped across all disks.
    BtrfsRaid0,
    /// btrfs `raid1`: two copies of every chunk on two different disks, pairs not fixed.
    BtrfsRaid1,
    /// btrfs `raid1c3`: three copies.
    BtrfsRaid1c3,
    /// btrfs `raid1c4`: four copies.
    BtrfsRaid1c4,
    /// btrfs `raid10`: two copies, striped; pairs not fixed, so any second failure may lose data.
    BtrfsRaid10,
    /// btrfs `raid5`.
    BtrfsRaid5,
    /// btrfs `raid6`.
    BtrfsRaid6,
    /// ZFS N-way mirror vdevs (`6xmirror`: six 2-way mirrors on 12 disks).
    ZfsMirror,
    /// ZFS RAID-Z1 vdevs.
    Raidz1,
    /// ZFS RAID-Z2 vdevs.
    Raidz2,
    /// ZFS RAID-Z3 vdevs.
    Raidz3,
    /// ZFS dRAID: groups of `data + parity` sectors spread over every child of the vdev,
    /// `spares` distributed spares (`draid2:8d:2s`).
    Draid {
        /// Parity per group.
        parity: u8,
        /// Data per group.
        data: u32,
        /// Distributed spares.
        spares: u32,
    },
}

/// Every level, in the order `--help` lists them.
pub const ALL_LEVELS: [Level; 18] = [
    Level::Raid0,
    Level::Raid1,
    Level::Raid5,
    Level::Raid6,
    Level::Raid10,
    Level::Single,
    Level::BtrfsSingle,
    Level::BtrfsRaid0,
    Level::BtrfsRaid1,
    Level::BtrfsRaid1c3,
    Level::BtrfsRaid1c4,
    Level::BtrfsRaid10,
    Level::BtrfsRaid5,
    Level::BtrfsRaid6,
    Level::ZfsMirror,
    Level::Raidz1,
    Level::Raidz2,
    Level::Raidz3,
];

impl Level {
    /// The name as typed in `--layouts`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Raid0 => "raid0",
            Level::Raid1 => "raid1",
            Level::Raid5 => "raid5",
            Level::Raid6 => "raid6",
            Level::Raid10 => "raid10",
            Level::Single => "single",
            Level::BtrfsSingle => "btrfs-single",
            Level::BtrfsRaid0 => "btrfs-raid0",
            Level::BtrfsRaid1 => "btrfs-raid1",
            Level::BtrfsRaid1c3 => "btrfs-raid1c3",
            Level::BtrfsRaid1c4 => "btrfs-raid1c4",
            Level::BtrfsRaid10 => "btrfs-raid10",
            Level::BtrfsRaid5 => "btrfs-raid5",
            Level::BtrfsRaid6 => "btrfs-raid6",
            Level::ZfsMirror => "mirror",
            Level::Raidz1 => "raidz1",
            Level::Raidz2 => "raidz2",
            Level::Raidz3 => "raidz3",
            Level::Draid { .. } => "draid",
        }
    }

    /// The level as zpool writes it: the name, or `draid2:8d:2s`.
    pub fn label(self) -> String {
        match self {
            Level::Draid {
                parity,
                data,
                spares,
            } => format!("draid{parity}:{data}d:{spares}s"),
            l => l.name().to_string(),
        }
    }

    /// Parses a level name; `md-raid6` and `btrfs:raid1` are accepted spellings too.
    pub fn parse(s: &str) -> Option<Level> {
        let s = s.trim().to_ascii_lowercase();
        let s = s.strip_prefix("md-").unwrap_or(&s);
        let s = s.replacen("btrfs:", "btrfs-", 1);
        let s = s.strip_prefix("zfs-").unwrap_or(&s);
        if s == "raidz" {
            return Some(Level::Raidz1);
        }
        if s.starts_with("draid") {
            return match crate::stack::zfs::VdevKind::parse(s) {
                Ok((
                    crate::stack::zfs::VdevKind::Draid {
                        parity,
                        data,
                        spares,
                    },
                    _,
                )) => Some(Level::Draid {
                    parity,
                    data,
                    spares,
                }),
                _ => None,
            };
        }
        ALL_LEVELS.into_iter().find(|l| l.name() == s)
    }

    /// True for ZFS vdev kinds.
    pub fn is_zfs(self) -> bool {
        self.family() == Family::Zfs
    }

    /// True for btrfs profiles (no groups, no hot spares).
    pub fn is_btrfs(self) -> bool {
        self.family() == Family::Btrfs
    }

    /// What makes the level: every level named, so a new one is placed where the compiler
    /// asks rather than counted among the others by a fallback.
    fn family(self) -> Family {
        match self {
            Level::Raid0 | Level::Raid1 | Level::Raid5 | Level::Raid6 | Level::Raid10 => Family::Md,
            Level::Single => Family::Disk,
            Level::BtrfsSingle
            | Level::BtrfsRaid0
            | Level::BtrfsRaid1
            | Level::BtrfsRaid1c3
            | Level::BtrfsRaid1c4
            | Level::BtrfsRaid10
            | Level::BtrfsRaid5
            | Level::BtrfsRaid6 => Family::Btrfs,
            Level::ZfsMirror
            | Level::Raidz1
            | Level::Raidz2
            | Level::Raidz3
            | Level::Draid { .. } => Family::Zfs,
        }
    }

    /// The fewest disks one group can have (mdadm's usual minimums; for btrfs the kernel's, with
    /// raid0 kept at 2 so that it stripes).
    pub fn min_disks(self) -> u32 {
        match self {
            Level::Single | Level::BtrfsSingle => 1,
            Level::Raid0
            | Level::Raid1
            | Level::Raid10
            | Level::BtrfsRaid0
            | Level::BtrfsRaid1
            | Level::BtrfsRaid10
            | Level::BtrfsRaid5 => 2,
            Level::Raid5 | Level::BtrfsRaid1c3 | Level::BtrfsRaid6 => 3,
            Level::Raid6 | Level::BtrfsRaid1c4 => 4,
            Level::ZfsMirror | Level::Raidz1 => 2,
            Level::Raidz2 => 3,
            Level::Raidz3 => 4,
            Level::Draid {
                parity,
                data,
                spares,
            } => u32::from(parity) + data + spares,
        }
    }

    /// Parity chunks per stripe for parity levels, `None` for the others.
    pub fn parity(self) -> Option<u32> {
        match self {
            Level::Raid5 | Level::BtrfsRaid5 | Level::Raidz1 => Some(1),
            Level::Raid6 | Level::BtrfsRaid6 | Level::Raidz2 => Some(2),
            Level::Raidz3 => Some(3),
            Level::Draid { parity, .. } => Some(u32::from(parity)),
            _ => None,
        }
    }

    /// Copies of every block for mirrored levels with a fixed copy count.
    pub fn copies(self) -> Option<u32> {
        match self {
            Level::Raid10 | Level::BtrfsRaid1 | Level::BtrfsRaid10 => Some(2),
            Level::BtrfsRaid1c3 => Some(3),
            Level::BtrfsRaid1c4 => Some(4),
            _ => None,
        }
    }
}

/// What makes a level: md, one plain disk, btrfs or ZFS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Md,
    Disk,
    Btrfs,
    Zfs,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// A layout as named: level, how many groups it is split into, how many hot spares stand by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutSpec {
    /// The name as the user typed it (lowercased), used as the row label.
    pub name: String,
    /// RAID level or btrfs profile.
    pub level: Level,
    /// Arrays of this level striped together (`3xraid6` = 3); 1 for a plain layout.
    pub groups: u32,
    /// Hot spares, taken out of the disk count and shared by all groups.
    pub spares: u32,
    /// An SSD cache in front (`+lvmcache`, `+bcache`, `+writecache`): on disks of its own, so the
    /// capacity is the RAID's; the planner models no speed for it (see [`cache_note`]).
    pub cache: Option<&'static str>,
}

/// The cache kinds a layout name may end with (`raid6+bcache`).
pub const CACHE_SUFFIXES: [&str; 3] = ["lvmcache", "bcache", "writecache"];

/// The cache kinds the planner models: a layout name's suffix, a lab record's cache kind.
pub const CACHE_KINDS: &[&str] = &CACHE_SUFFIXES;

/// The planner's cache kind named `kind` (a lab record's `bcache`), `None` for a kind it does
/// not model: the caller says so (`iolab decide`'s `not modelled`), never drops the layout.
pub fn cache_kind(kind: &str) -> Option<&'static str> {
    CACHE_SUFFIXES.into_iter().find(|k| *k == kind)
}

/// Splits a trailing `+lvmcache`, `+bcache` or `+writecache` off a layout name.
fn split_cache(name: &str) -> (&str, Option<&'static str>) {
    for k in CACHE_SUFFIXES {
        if let Some(body) = name.strip_suffix(k).and_then(|b| b.strip_suffix('+')) {
            return (body, Some(k));
        }
    }
    (name, None)
}

/// The note a plan carries when a layout has an SSD cache in front: what it changes (nothing
/// in capacity, on disks of its own) and that no speed is predicted for it, since its effect
/// depends on how much of the workload the cache holds.
pub fn cache_note(layouts: &[LayoutSpec]) -> Option<String> {
    let names: Vec<&str> = layouts
        .iter()
        .filter(|l| l.cache.is_some())
        .map(|l| l.name.as_str())
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "{}: the SSD cache sits on disks of its own and leaves capacity and failure tolerance as the RAID's; no speed is predicted for it (how much it helps depends on how much of the workload fits in it, which no disk figure says): the figures are the RAID's alone; measure the cache with `iolab lab` (cache = {{ kind = ... }})",
            names.join(", ")
        )
    })
}

impl LayoutSpec {
    /// Parses `[Gx]LEVEL[+Nspare(s)]`, e.g. `raid6`, `raid6+2spares`, `3xraid6+1spare`,
    /// `btrfs-raid1c3`. The error names the layout and what is wrong with it.
    pub fn parse(text: &str) -> Result<LayoutSpec, PlanError> {
        let name = text.trim().to_ascii_lowercase();
        let bad = |why: String| PlanError::Layout {
            name: name.clone(),
            why,
        };
        if name.is_empty() {
            return Err(bad(
                "empty layout name (use e.g. raid6, raid5+1spare, 3xraid6)".into(),
            ));
        }
        let (plain, cache) = split_cache(&name);
        let (body, spares) = match plain.split_once('+') {
            None => (plain, 0),
            Some((body, tail)) => {
                let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
                let word = &tail[digits.len()..];
                if !matches!(word, "spare" | "spares") {
                    return Err(bad(format!(
                        "'+{tail}' is neither a spare count (write +1spare or +2spares) nor a cache kind ({})",
                        CACHE_KINDS.join(", ")
                    )));
                }
                let n: u32 = if digits.is_empty() {
                    1
                } else {
                    digits
                        .parse()
                        .map_err(|_| bad(format!("spare count '{digits}' is too large")))?
                };
                (body, n)
            }
        };
        let (groups, level_text) = match body.split_once('x') {
            Some((g, rest)) if !g.is_empty() && g.chars().all(|c| c.is_ascii_digit()) => {
                let g: u32 = g
                    .parse()
                    .map_err(|_| bad(format!("group count '{g}' is too large")))?;
                (g, rest)
            }
            _ => (1, body),
        };
        let level = Level::parse(level_text).ok_or_else(|| {
            let mut known: Vec<&str> = ALL_LEVELS.iter().map(|l| l.name()).collect();
            known.push("draidP:Dd:Ss");
            bad(format!(
                "unknown level '{level_text}' (known: {})",
                known.join(", ")
            ))
        })?;
        LayoutSpec::new(name, level, groups, spares, cache)
    }

    /// A layout from its parts, checked as a typed name is (a lab record's stack comes this
    /// way, with no name to parse): `name` is the row label.
    pub fn new(
        name: String,
        level: Level,
        groups: u32,
        spares: u32,
        cache: Option<&'static str>,
    ) -> Result<LayoutSpec, PlanError> {
        let bad = |why: String| PlanError::Layout {
            name: name.clone(),
            why,
        };
        if groups == 0 {
            return Err(bad("a layout needs at least 1 group".into()));
        }
        if level.is_btrfs() && groups > 1 {
            return Err(bad(format!(
                "btrfs profiles span all disks of one filesystem; drop the '{groups}x'"
            )));
        }
        if level.is_btrfs() && spares > 0 {
            return Err(bad(
                "btrfs has no hot spares (a failed disk is replaced with `btrfs replace`); drop the '+spares'"
                    .into(),
            ));
        }
        if matches!(level, Level::Raid0 | Level::Single) && spares > 0 {
            return Err(bad(format!(
                "{level} has no redundancy to rebuild, so a hot spare cannot help; drop the '+spares'"
            )));
        }
        if cache.is_some() && level.is_zfs() {
            return Err(bad(
                "zfs caches in its own pool (L2ARC); drop the '+lvmcache', '+bcache' or '+writecache'".into(),
            ));
        }
        if cache.is_some() && level.is_btrfs() {
            return Err(bad(
                "btrfs is its own filesystem, so no cache sits between it and the RAID; drop the '+lvmcache', '+bcache' or '+writecache'".into(),
            ));
        }
        Ok(LayoutSpec {
            name,
            level,
            groups,
            spares,
            cache,
        })
    }

    /// Places the layout on `disks` disks (spares included): checks the counts add up.
    pub fn on_disks(&self, disks: u32) -> Result<Layout, PlanError> {
        let bad = |why: String| PlanError::Layout {
            name: self.name.clone(),
            why,
        };
        if disks == 0 {
            return Err(bad("no disks (give --disks N with N >= 1)".into()));
        }
        let Some(active) = disks.checked_sub(self.spares).filter(|a| *a > 0) else {
            return Err(bad(format!(
                "{} spares leave no disks for data out of {disks}",
                self.spares
            )));
        };
        if active % self.groups != 0 {
            let after = if self.spares > 0 {
                format!(" (after {} spares)", self.spares)
            } else {
                String::new()
            };
            return Err(bad(format!(
                "{active} disks{after} do not split into {} equal groups",
                self.groups
            )));
        }
        let per_group = active / self.groups;
        let min = self.level.min_disks();
        if per_group < min {
            let what = if self.groups > 1 {
                format!(
                    "{} per group ({active} disks in {} groups)",
                    per_group, self.groups
                )
            } else if self.spares > 0 {
                format!("{per_group} ({disks} disks less {} spares)", self.spares)
            } else {
                format!("{per_group}")
            };
            return Err(bad(format!(
                "{} needs at least {min} disks per group, got {what}",
                self.level
            )));
        }
        if self.level == Level::Single && (self.groups, active) != (1, 1) {
            return Err(bad(format!(
                "single is one plain disk, got {disks} (for several disks in one filesystem use raid0 or btrfs-single)"
            )));
        }
        if self.level == Level::Raid10 && per_group % 2 != 0 {
            return Err(bad(format!(
                "raid10 is modelled as pairs of mirrors and needs an even number of disks per group, got {per_group}"
            )));
        }
        Ok(Layout {
            spec: self.clone(),
            disks,
            active,
            per_group,
        })
    }
}

impl fmt::Display for LayoutSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Parses a comma-separated `--layouts` list; duplicates are refused so rows stay unambiguous.
pub fn parse_layouts(list: &str) -> Result<Vec<LayoutSpec>, PlanError> {
    let mut out: Vec<LayoutSpec> = Vec::new();
    for part in list.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        let spec = LayoutSpec::parse(part)?;
        if out.iter().any(|s| s.name == spec.name) {
            return Err(PlanError::Layout {
                name: spec.name,
                why: "listed twice in --layouts".into(),
            });
        }
        out.push(spec);
    }
    if out.is_empty() {
        return Err(PlanError::Input {
            field: "--layouts",
            why: "is empty (give e.g. --layouts raid6,raid6+2spares,raid5+1spare)".into(),
        });
    }
    Ok(out)
}

/// One unit of redundancy for the risk model: a set of disks that loses data when more than
/// `tolerates` of them are down at once. A layout is `units` such sets, independent of each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedundancyUnit {
    /// Disks in the unit.
    pub members: u32,
    /// Concurrent failures it survives.
    pub tolerates: u32,
    /// How many such units the layout has (data is lost when any of them is).
    pub units: u32,
    /// Disks' worth of data read with no redundancy left, while rebuilding the last tolerated
    /// failure: an unreadable sector there is lost data.
    pub disks_read_unprotected: u32,
    /// Bytes crossing the bus per byte rebuilt (reads of the survivors plus the write).
    pub rebuild_traffic: u32,
}

/// A layout placed on a number of disks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// What was asked for.
    pub spec: LayoutSpec,
    /// All disks, spares included.
    pub disks: u32,
    /// Disks holding data (disks less spares).
    pub active: u32,
    /// Disks in each group.
    pub per_group: u32,
}

impl Layout {
    /// The level.
    pub fn level(&self) -> Level {
        self.spec.level
    }

    /// The redundancy structure the risk model works on.
    pub fn redundancy(&self) -> RedundancyUnit {
        let n = self.per_group;
        let g = self.spec.groups;
        let unit = |members, tolerates, units, read, traffic| RedundancyUnit {
            members,
            tolerates,
            units,
            disks_read_unprotected: read,
            rebuild_traffic: traffic,
        };
        match self.level() {
            // Striping: one unit of every disk, no failure survived, nothing to rebuild.
            Level::Raid0 | Level::Single | Level::BtrfsSingle | Level::BtrfsRaid0 => {
                unit(self.active, 0, 1, 0, 0)
            }
            // An n-way mirror survives n-1 failures; the last rebuild reads the one survivor.
            Level::Raid1 => unit(n, n - 1, g, 1, 2),
            // Fixed pairs: each pair is a unit.
            Level::Raid10 => unit(2, 1, g * n / 2, 1, 2),
            Level::Raid5 | Level::Raid6 | Level::BtrfsRaid5 | Level::BtrfsRaid6 => {
                let p = self.level().parity().unwrap_or(0);
                unit(n, p, g, n - p, n)
            }
            // btrfs mirrors spread chunks over every disk: with enough chunks, any c disks share
            // some chunk, so the whole filesystem is one unit surviving c-1 failures. The
            // rebuild re-copies one disk's worth of chunks from their remaining copies.
            Level::BtrfsRaid1 | Level::BtrfsRaid1c3 | Level::BtrfsRaid1c4 | Level::BtrfsRaid10 => {
                let c = self.level().copies().unwrap_or(2);
                unit(self.active, c - 1, 1, 1, 2)
            }
            // ZFS: each vdev is a unit; a resilver reads the allocated data only (the risk
            // model scales the bytes by the fill).
            Level::ZfsMirror => unit(n, n - 1, g, 1, 2),
            Level::Raidz1 | Level::Raidz2 | Level::Raidz3 => {
                let p = self.level().parity().unwrap_or(1);
                unit(n, p, g, n - p, n)
            }
            Level::Draid { parity, data, .. } => unit(n, u32::from(parity), g, data, data + 1),
        }
    }

    /// Data disks per stripe for the `stripe width = chunk x data disks` figure mkfs wants;
    /// `None` for levels without striping (raid1, btrfs single/mirrors).
    pub fn data_disks_per_stripe(&self) -> Option<u32> {
        let n = self.per_group;
        match self.level() {
            Level::Raid0 => Some(n),
            Level::Raid10 => Some(n / 2),
            Level::Raid5 | Level::Raid6 | Level::BtrfsRaid5 | Level::BtrfsRaid6 => {
                Some(n - self.level().parity().unwrap_or(0))
            }
            Level::BtrfsRaid0 => Some(self.active),
            Level::BtrfsRaid10 => Some(self.active / 2),
            // ZFS stripes records, not chunks: no mkfs stripe width to give.
            Level::Raid1
            | Level::Single
            | Level::BtrfsSingle
            | Level::BtrfsRaid1
            | Level::BtrfsRaid1c3
            | Level::BtrfsRaid1c4
            | Level::ZfsMirror
            | Level::Raidz1
            | Level::Raidz2
            | Level::Raidz3
            | Level::Draid { .. } => None,
        }
    }

    /// A short description of the disk arrangement: `45`, `43+2s`, `3x15`, `3x14+3s`.
    pub fn arrangement(&self) -> String {
        let mut s = if self.spec.groups > 1 {
            format!("{}x{}", self.spec.groups, self.per_group)
        } else {
            self.active.to_string()
        };
        if self.spec.spares > 0 {
            s.push_str(&format!("+{}s", self.spec.spares));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(name: &str, disks: u32) -> Layout {
        LayoutSpec::parse(name).unwrap().on_disks(disks).unwrap()
    }

    /// A cache suffix is read, changes no capacity, and the plan says it predicts no
    /// speed for it.
    #[test]
    fn a_cache_suffix_changes_no_capacity_and_invents_no_speed() {
        let c = LayoutSpec::parse("raid5+1spare+bcache").unwrap();
        assert_eq!(
            (c.level, c.spares, c.cache),
            (Level::Raid5, 1, Some("bcache"))
        );
        let plain = LayoutSpec::parse("raid5+1spare").unwrap();
        assert_eq!(plain.cache, None);
        assert_eq!(
            c.on_disks(5).unwrap().active,
            plain.on_disks(5).unwrap().active
        );
        assert_eq!(
            LayoutSpec::parse("raid6+lvmcache").unwrap().cache,
            Some("lvmcache")
        );
        assert_eq!(
            LayoutSpec::parse("raid1+writecache").unwrap().cache,
            Some("writecache")
        );
        assert!(LayoutSpec::parse("btrfs-raid1+bcache").is_err());
        assert!(LayoutSpec::parse("raidz2+lvmcache").is_err());
        let note = cache_note(&[c, plain]).unwrap();
        assert!(note.starts_with("raid5+1spare+bcache: "), "{note}");
        assert!(note.contains("no speed is predicted"), "{note}");
        assert_eq!(cache_note(&[LayoutSpec::parse("raid6").unwrap()]), None);
    }

    #[test]
    fn grammar() {
        let s = LayoutSpec::parse("raid6+2spares").unwrap();
        assert_eq!((s.level, s.groups, s.spares), (Level::Raid6, 1, 2));
        let s = LayoutSpec::parse("raid5+1spare").unwrap();
        assert_eq!((s.level, s.groups, s.spares), (Level::Raid5, 1, 1));
        let s = LayoutSpec::parse(" 3xRAID6 ").unwrap();
        assert_eq!(
            (s.level, s.groups, s.spares, s.name.as_str()),
            (Level::Raid6, 3, 0, "3xraid6")
        );
        let s = LayoutSpec::parse("3xraid6+1spare").unwrap();
        assert_eq!((s.groups, s.spares), (3, 1));
        assert_eq!(
            LayoutSpec::parse("btrfs-raid1c3").unwrap().level,
            Level::BtrfsRaid1c3
        );
        assert_eq!(
            LayoutSpec::parse("btrfs:raid10").unwrap().level,
            Level::BtrfsRaid10
        );
        for bad in [
            "raid7",
            "raid6+2",
            "raid6+twospares",
            "0xraid6",
            "2xbtrfs-raid1",
            "btrfs-raid1+1spare",
            "raid0+1spare",
            "",
        ] {
            let e = LayoutSpec::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("layout '"), "{bad}: {e}");
        }
    }

    #[test]
    fn placement_errors_name_the_layout_and_the_fix() {
        let e = LayoutSpec::parse("raid6")
            .unwrap()
            .on_disks(3)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "layout 'raid6': raid6 needs at least 4 disks per group, got 3"
        );
        let e = LayoutSpec::parse("3xraid6")
            .unwrap()
            .on_disks(44)
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not split into 3 equal groups"), "{e}");
        let e = LayoutSpec::parse("raid10")
            .unwrap()
            .on_disks(5)
            .unwrap_err()
            .to_string();
        assert!(e.contains("even number"), "{e}");
        let e = LayoutSpec::parse("raid5+3spares")
            .unwrap()
            .on_disks(3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("leave no disks"), "{e}");
    }

    #[test]
    fn capacities_by_hand() {
        let tb2 = 2_000_000_000_000u64;
        // The 45-disk pod: raid6 of 45 keeps 43 disks of data, 86 TB.
        assert_eq!(
            placed("raid6", 45).usable_bytes(tb2),
            Some(86_000_000_000_000)
        );
        assert_eq!(
            placed("raid6+2spares", 45).usable_bytes(tb2),
            Some(82_000_000_000_000)
        );
        assert_eq!(
            placed("raid5", 45).usable_bytes(tb2),
            Some(88_000_000_000_000)
        );
        assert_eq!(
            placed("raid5+1spare", 45).usable_bytes(tb2),
            Some(86_000_000_000_000)
        );
        assert_eq!(
            placed("3xraid6", 45).usable_bytes(tb2),
            Some(78_000_000_000_000)
        );
        assert_eq!(
            placed("raid0", 45).usable_bytes(tb2),
            Some(90_000_000_000_000)
        );
        assert_eq!(placed("raid1", 2).usable_bytes(tb2), Some(tb2));
        assert_eq!(
            placed("raid10", 44).usable_bytes(tb2),
            Some(44_000_000_000_000)
        );
        assert_eq!(
            placed("btrfs-raid1", 45).usable_bytes(tb2),
            Some(45_000_000_000_000)
        );
        assert_eq!(
            placed("btrfs-raid1c3", 45).usable_bytes(tb2),
            Some(30_000_000_000_000)
        );
        assert_eq!(placed("btrfs-raid1", 3).usable_bytes(1001), Some(1501));
        assert_eq!(
            placed("raid6+2spares", 45).raw_bytes(tb2),
            Some(90_000_000_000_000)
        );
    }

    #[test]
    fn redundancy_units() {
        let r = placed("raid10", 44).redundancy();
        assert_eq!((r.members, r.tolerates, r.units), (2, 1, 22));
        let r = placed("3xraid6", 45).redundancy();
        assert_eq!(
            (r.members, r.tolerates, r.units, r.disks_read_unprotected),
            (15, 2, 3, 13)
        );
        let r = placed("btrfs-raid1c3", 6).redundancy();
        assert_eq!((r.members, r.tolerates, r.units), (6, 2, 1));
        assert_eq!(placed("raid6+2spares", 45).arrangement(), "43+2s");
        assert_eq!(placed("3xraid6", 45).arrangement(), "3x15");
    }
}
