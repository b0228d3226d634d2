//! A validated storage stack: its layers as an ordered list, bottom to top — the RAID layer
//! (btrfs profiles [`btrfs`], an md array [`md`], a ZFS pool [`zfs`], or one plain disk),
//! optional LVM linear volume, optional SSD cache ([`cache`]), the filesystem with its mkfs and
//! mount options — stored in the shape older records have ([`shape`]); the faults planned for
//! it ([`fault`]) and what a rebuild of it did ([`rebuild`]).
//!
//! Plain data, below every stage that touches it: the lab spec parser (`spec`) builds these
//! types and they are valid by construction; `layout` builds them on disks and trusts them;
//! the planner and the reports read them. They also know what a stack should give: how many
//! disks it needs, whether it survives losing one, and how much space the RAID level leaves
//! usable.

pub mod align;
pub mod btrfs;
pub mod cache;
pub mod fault;
pub mod md;
pub mod member;
pub mod rebuild;
pub mod shape;
pub mod zfs;

pub use align::Alignment;
pub use btrfs::BtrfsProfile;
pub use md::{MdLevel, MdOptions};
pub use member::MemberLayer;
pub use rebuild::Rebuild;

use serde::{Deserialize, Serialize};

/// The RAID layer at the bottom of a stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RaidLayer {
    /// One plain disk.
    None,
    /// A btrfs filesystem across the members with these profiles (btrfs is the RAID and the fs).
    Btrfs {
        /// Data profile.
        data: BtrfsProfile,
        /// Metadata profile.
        metadata: BtrfsProfile,
    },
    /// An md array.
    Md(MdOptions),
    /// A ZFS pool (ZFS is the RAID layer and the filesystem).
    Zfs(zfs::ZfsOptions),
}

impl RaidLayer {
    /// Whether the layer is its own filesystem (btrfs, ZFS): nothing is made over it.
    pub fn is_filesystem(&self) -> bool {
        matches!(self, RaidLayer::Btrfs { .. } | RaidLayer::Zfs(_))
    }
}

/// A filesystem type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    /// XFS.
    Xfs,
    /// ext4.
    Ext4,
    /// btrfs.
    Btrfs,
    /// ZFS: only ever set by a `zfs` RAID layer (`fs = "zfs"` is not accepted alone).
    Zfs,
}

impl FsKind {
    /// Parses `xfs`, `ext4`, `btrfs`.
    pub fn parse(s: &str) -> Option<FsKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "xfs" => Some(FsKind::Xfs),
            "ext4" => Some(FsKind::Ext4),
            "btrfs" => Some(FsKind::Btrfs),
            _ => None,
        }
    }

    /// The name `mount -t` takes.
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Xfs => "xfs",
            FsKind::Ext4 => "ext4",
            FsKind::Btrfs => "btrfs",
            FsKind::Zfs => "zfs",
        }
    }

    /// The mkfs tool.
    pub fn mkfs(self) -> &'static str {
        match self {
            FsKind::Xfs => "mkfs.xfs",
            FsKind::Ext4 => "mkfs.ext4",
            FsKind::Btrfs => "mkfs.btrfs",
            FsKind::Zfs => "zpool",
        }
    }

    /// Smallest device mkfs accepts (mkfs.xfs refuses filesystems under 300MB since v5.19).
    pub fn min_size(self) -> u64 {
        match self {
            FsKind::Xfs => 300_000_000,
            FsKind::Ext4 => 1 << 20,
            FsKind::Btrfs => 128 << 20,
            // zpool refuses devices under 64MiB.
            FsKind::Zfs => 64 << 20,
        }
    }
}

/// One layer of a stack. A stack is an ordered list of them over its disks, bottom first:
/// the RAID layer (md, btrfs, ZFS, or one plain disk), then what the spec puts over it (LVM,
/// an SSD cache), the filesystem last. The layout stage builds them in this order and the
/// record, planner and reports read them in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "layer", rename_all = "lowercase")]
pub enum Layer {
    /// A layer made on each disk before the pooling layer sees it (dm-integrity, LUKS):
    /// bottom-most, bottom first among themselves.
    Member(MemberLayer),
    /// What pools the disks: btrfs profiles, an md array, a ZFS pool, or one plain disk.
    Raid(RaidLayer),
    /// A linear LVM volume over the layer below.
    Lvm,
    /// An SSD cache between the layer below and the filesystem, on disks of its own.
    Cache(cache::CacheOptions),
    /// The filesystem (for btrfs and ZFS, the RAID layer's own).
    Fs(FsLayer),
}

/// The filesystem on top of a stack, with the options it is made and mounted with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsLayer {
    /// The filesystem.
    pub kind: FsKind,
    /// Extra mkfs arguments, as given.
    pub mkfs_options: Vec<String>,
    /// Mount options (`noatime`), joined with commas on the command line.
    pub mount_options: Vec<String>,
    /// Read-ahead of the device the filesystem sits on, bytes (`read_ahead` in the spec; set
    /// with `blockdev --setra` after the build; `None`: the kernel's). A runtime tunable: a
    /// sweep over it re-tunes one build instead of making a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead: Option<u64>,
}

impl FsLayer {
    /// A filesystem made and mounted with the defaults.
    pub fn plain(kind: FsKind) -> FsLayer {
        FsLayer {
            kind,
            mkfs_options: Vec::new(),
            mount_options: Vec::new(),
            read_ahead: None,
        }
    }
}

/// A complete stack to build on `members + spares` disks (plus md's journal disk and the cache
/// disks): its layers, bottom first. Stored and exchanged in the shape older records have
/// (`raid`, `lvm`, `cache`, `fs` and the fs options side by side: [`shape`]), so every stored
/// lab reads and writes byte for byte as before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "shape::StackShape", into = "shape::StackShape")]
pub struct Stack {
    /// Disks holding data (md raid devices, btrfs devices, 1 for a plain disk).
    pub members: usize,
    /// md hot spares on top of the members.
    pub spares: usize,
    /// The layers, bottom (over the disks) first, the filesystem last.
    pub layers: Vec<Layer>,
    /// How the layers over a striped md array are aligned to it (`alignment` in the spec).
    pub alignment: Alignment,
}

/// A stack being put together ([`Stack::over`]); [`StackBuilder::fs`] finishes it.
#[derive(Debug, Clone)]
#[must_use]
pub struct StackBuilder {
    stack: Stack,
}

impl StackBuilder {
    /// Hot spares beside the members (md).
    pub fn spares(mut self, spares: usize) -> StackBuilder {
        self.stack.spares = spares;
        self
    }

    /// Adds `layer` in its place in the build order (replacing one of the same kind).
    pub fn with(mut self, layer: Layer) -> StackBuilder {
        self.stack.set(layer);
        self
    }

    /// [`StackBuilder::with`] when there is a layer: a spec's optional LVM or cache.
    pub fn with_some(self, layer: Option<Layer>) -> StackBuilder {
        match layer {
            Some(l) => self.with(l),
            None => self,
        }
    }

    /// How the layers over a striped array are aligned to it.
    pub fn alignment(mut self, alignment: Alignment) -> StackBuilder {
        self.stack.alignment = alignment;
        self
    }

    /// The stack, with `fs` on top.
    pub fn fs(self, fs: FsLayer) -> Stack {
        let mut stack = self.stack;
        stack.set(Layer::Fs(fs));
        stack
    }
}

/// The RAID layer a stack without one has.
static NO_RAID: RaidLayer = RaidLayer::None;

impl Stack {
    /// A stack over `members` disks pooled by `raid`: the builder takes the other layers in
    /// any order (each goes to its place in the build order) and the filesystem last, so a new
    /// layer adds one `.with(..)` where it is wanted instead of a parameter every caller passes.
    pub fn over(raid: RaidLayer, members: usize) -> StackBuilder {
        StackBuilder {
            stack: Stack {
                members,
                spares: 0,
                layers: vec![Layer::Raid(raid)],
                alignment: Alignment::Auto,
            },
        }
    }

    /// The stack with `under` made on each disk before the pooling layer (bottom first; sorted
    /// into their order, integrity under LUKS), replacing any it had.
    #[must_use]
    pub fn with_member_layers(mut self, mut under: Vec<MemberLayer>) -> Stack {
        under.sort_by_key(MemberLayer::rank);
        self.layers.retain(|l| !matches!(l, Layer::Member(_)));
        self.layers
            .splice(0..0, under.into_iter().map(Layer::Member));
        self
    }

    /// The layers under each member, bottom first (empty for most stacks).
    pub fn member_layers(&self) -> Vec<&MemberLayer> {
        self.layers
            .iter()
            .filter_map(|l| match l {
                Layer::Member(m) => Some(m),
                _ => None,
            })
            .collect()
    }

    /// The layers, bottom first.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The RAID layer at the bottom ([`RaidLayer::None`] for one plain disk).
    pub fn raid(&self) -> &RaidLayer {
        self.layers
            .iter()
            .find_map(|l| match l {
                Layer::Raid(r) => Some(r),
                _ => None,
            })
            .unwrap_or(&NO_RAID)
    }

    /// Whether an LVM volume sits over the RAID layer.
    pub fn lvm(&self) -> bool {
        self.layers.iter().any(|l| matches!(l, Layer::Lvm))
    }

    /// The SSD cache layer, when the stack has one.
    pub fn cache(&self) -> Option<&cache::CacheOptions> {
        self.layers.iter().find_map(|l| match l {
            Layer::Cache(c) => Some(c),
            _ => None,
        })
    }

    /// The filesystem layer (a plain xfs one if a hand-made stack lacks it).
    pub fn fs_layer(&self) -> &FsLayer {
        static XFS: FsLayer = FsLayer {
            kind: FsKind::Xfs,
            mkfs_options: Vec::new(),
            mount_options: Vec::new(),
            read_ahead: None,
        };
        self.layers
            .iter()
            .rev()
            .find_map(|l| match l {
                Layer::Fs(f) => Some(f),
                _ => None,
            })
            .unwrap_or(&XFS)
    }

    /// The filesystem.
    pub fn fs(&self) -> FsKind {
        self.fs_layer().kind
    }

    /// Extra mkfs arguments, as given.
    pub fn mkfs_options(&self) -> &[String] {
        &self.fs_layer().mkfs_options
    }

    /// Mount options, joined with commas on the command line.
    pub fn mount_options(&self) -> &[String] {
        &self.fs_layer().mount_options
    }

    /// The layer of the same kind as `layer` replaced by it (or added in its place in the
    /// build order when the stack has none): how tests and the planner vary one layer.
    pub fn set(&mut self, layer: Layer) {
        let rank = |l: &Layer| match l {
            Layer::Member(m) => m.rank(),
            Layer::Raid(_) => 10,
            Layer::Lvm => 11,
            Layer::Cache(_) => 12,
            Layer::Fs(_) => 13,
        };
        let r = rank(&layer);
        if let Some(i) = self.layers.iter().position(|l| rank(l) == r) {
            self.layers[i] = layer;
        } else {
            let at = self
                .layers
                .iter()
                .position(|l| rank(l) > r)
                .unwrap_or(self.layers.len());
            self.layers.insert(at, layer);
        }
    }

    /// The stack without its LVM layer.
    pub fn without_lvm(&mut self) {
        self.layers.retain(|l| !matches!(l, Layer::Lvm));
    }

    /// Disks the stack uses: members plus spares, plus md's write journal disk, plus the
    /// cache disks.
    pub fn disks(&self) -> usize {
        self.members + self.spares + self.journal_disks() + self.cache_disks()
    }

    /// Disks holding the SSD cache, taken last (after the journal disk).
    pub fn cache_disks(&self) -> usize {
        self.cache().map_or(0, |c| c.disks)
    }

    /// Disks holding md's write journal (`consistency_policy = "journal"`): 0 or 1, taken
    /// after the spares.
    pub fn journal_disks(&self) -> usize {
        usize::from(matches!(self.raid(), RaidLayer::Md(o) if o.journal()))
    }

    /// Whether one member can fail without losing the filesystem.
    pub fn survives_one_failure(&self) -> bool {
        self.tolerated_failures() >= 1
    }

    /// How many members can be missing at once without losing data: btrfs the lesser of its
    /// data and metadata profiles, md raid6 two, md raid1 all but one, other md levels one
    /// (raid10 is only sure to survive one), raid0 and a plain disk none.
    pub fn tolerated_failures(&self) -> usize {
        match self.raid() {
            RaidLayer::None => 0,
            RaidLayer::Btrfs { data, metadata } => data
                .tolerated_failures()
                .min(metadata.tolerated_failures())
                .min(self.members.saturating_sub(1)),
            RaidLayer::Md(md) => match md.level {
                MdLevel::Raid0 => 0,
                MdLevel::Raid1 => self.members.saturating_sub(1),
                MdLevel::Raid6 => 2,
                MdLevel::Raid4 | MdLevel::Raid5 | MdLevel::Raid10 => 1,
            },
            RaidLayer::Zfs(z) => z.tolerated_failures(),
        }
    }

    /// Usable bytes the RAID level leaves from members of `member_size` bytes (less what the
    /// layers under each member keep: [`MemberLayer::usable`]), before filesystem overhead (btrfs data profile; md level; one disk otherwise).
    pub fn expected_usable(&self, member_size: u64) -> u64 {
        // What each member offers the pooling layer once the layers under it took theirs.
        let member_size = self
            .member_layers()
            .iter()
            .fold(member_size, |s, m| m.usable(s));
        match self.raid() {
            RaidLayer::None => member_size,
            RaidLayer::Btrfs { data, .. } => data.usable(self.members, member_size),
            RaidLayer::Md(md) => md.level.usable(self.members, member_size),
            RaidLayer::Zfs(z) => z.usable(member_size),
        }
    }

    /// One line saying what the stack is, its layers bottom first: `md raid6 x5 +1 spare,
    /// chunk 512KiB, bitmap internal > lvm > xfs (noatime)`.
    pub fn describe(&self) -> String {
        self.words(false)
    }

    /// The stack in a few words, without options (the lab table's column): `md raid6 x5 +1 >
    /// lvm > xfs`, `btrfs raid1 x2`, `disk > ext4`, `md raid5 x3 > lvm > lvmcache wt > xfs`
    /// (a cache's mode: `wt` writethrough, `wb` writeback).
    pub fn short(&self) -> String {
        self.words(true)
    }

    /// The one walk of the layers behind both text forms, long or `short`.
    fn words(&self, short: bool) -> String {
        let parts: Vec<String> = self
            .layers
            .iter()
            .filter_map(|l| match l {
                // Named by the RAID layer they sit under: `md raid5 x4 over dm-integrity`.
                Layer::Member(_) => None,
                Layer::Raid(r) if short => Some(self.short_raid(r)),
                Layer::Raid(r) => Some(self.describe_raid(r)),
                Layer::Lvm => Some("lvm".into()),
                Layer::Cache(c) if short => {
                    let mode = if c.mode.may_lose_data() { "wb" } else { "wt" };
                    Some(format!("{} {mode}", c.kind.name()))
                }
                Layer::Cache(c) => Some(c.describe()),
                // btrfs and ZFS are their own filesystem: named once, by the RAID layer.
                Layer::Fs(_) if self.raid().is_filesystem() => None,
                Layer::Fs(f) => Some(f.kind.name().to_string()),
            })
            .collect();
        let mut s = parts.join(" > ");
        if short {
            return s;
        }
        let f = self.fs_layer();
        if !f.mkfs_options.is_empty() {
            s.push_str(&format!(" [mkfs {}]", f.mkfs_options.join(" ")));
        }
        if !f.mount_options.is_empty() {
            s.push_str(&format!(" ({})", f.mount_options.join(",")));
        }
        if let Some(b) = f.read_ahead {
            s.push_str(&format!(", read-ahead {}", crate::units::format_bytes(b)));
        }
        if !self.alignment.is_auto() {
            s.push_str(&format!(" [alignment {}]", self.alignment.name()));
        }
        s
    }

    /// Whether `next` is this stack with only runtime tunables changed — the settings written
    /// to a built stack's sysfs or `blockdev` after the build (md's `stripe_cache_size`,
    /// `group_thread_cnt`, `sync_speed_min/max`, read-ahead and members' scheduler; the
    /// filesystem device's read-ahead) — so the lab can re-tune one build instead of making a
    /// new one. False when nothing differs (two equal layouts are two builds, as written),
    /// and when a tunable `next` leaves unset was set here: the kernel's default it would
    /// fall back to is not known to put back.
    pub fn retunable_to(&self, next: &Stack) -> bool {
        let (this, a) = self.split_runtime_tunables();
        let (that, b) = next.split_runtime_tunables();
        this == that && a != b && a.iter().zip(&b).all(|(x, y)| x.is_none() || y.is_some())
    }

    /// This stack with every runtime tunable unset (what its build depends on), and the
    /// tunables taken out, as text, in one fixed order.
    fn split_runtime_tunables(&self) -> (Stack, [Option<String>; 7]) {
        let mut s = self.clone();
        let mut t: [Option<String>; 7] = Default::default();
        let n = |v: Option<u64>| v.map(|x| x.to_string());
        for l in &mut s.layers {
            match l {
                Layer::Raid(RaidLayer::Md(o)) => {
                    t[0] = n(o.stripe_cache_size.take());
                    t[1] = n(o.group_thread_cnt.take());
                    t[2] = n(o.sync_speed_min.take());
                    t[3] = n(o.sync_speed_max.take());
                    t[4] = n(o.read_ahead.take());
                    t[5] = o.scheduler.take();
                }
                Layer::Fs(f) => t[6] = n(f.read_ahead.take()),
                _ => {}
            }
        }
        (s, t)
    }

    /// The RAID layer's part of [`Stack::short`], with the layers under its members, top
    /// first (`md raid5 x3 over luks over integrity`).
    fn short_raid(&self, raid: &RaidLayer) -> String {
        let mut out = self.short_pool(raid);
        for m in self.member_layers().iter().rev() {
            out.push_str(" over ");
            out.push_str(m.short());
        }
        out
    }

    /// The pooling layer's words in [`Stack::short`].
    fn short_pool(&self, raid: &RaidLayer) -> String {
        match raid {
            RaidLayer::None => "disk".to_string(),
            RaidLayer::Btrfs { data, .. } => format!("btrfs {} x{}", data.name(), self.members),
            RaidLayer::Md(md) => {
                let mut m = format!("md raid{} x{}", md.level.number(), self.members);
                if self.spares > 0 {
                    m.push_str(&format!(" +{}", self.spares));
                }
                m
            }
            RaidLayer::Zfs(z) if z.vdevs > 1 => {
                format!("zfs {}x {}", z.vdevs, z.vdev.zpool_word(z.width))
            }
            RaidLayer::Zfs(z) => format!("zfs {}", z.vdev.zpool_word(z.width)),
        }
    }

    /// The RAID layer's part of [`Stack::describe`], with what each member sits on, top
    /// first: `md raid5 x4 over luks (...) over dm-integrity (crc32c)`.
    fn describe_raid(&self, raid: &RaidLayer) -> String {
        let mut s = self.describe_pool(raid);
        for m in self.member_layers().iter().rev() {
            s.push_str(" over ");
            s.push_str(&m.describe());
        }
        s
    }

    /// The pooling layer's own words.
    fn describe_pool(&self, raid: &RaidLayer) -> String {
        use crate::units::format_bytes;
        match raid {
            RaidLayer::None => "single disk".to_string(),
            RaidLayer::Btrfs { data, metadata } => format!(
                "btrfs {} (metadata {}) x{}",
                data.name(),
                metadata.name(),
                self.members
            ),
            RaidLayer::Md(md) => {
                let mut s = format!("md raid{} x{}", md.level.number(), self.members);
                if self.spares > 0 {
                    s.push_str(&format!(
                        " +{} spare{}",
                        self.spares,
                        if self.spares == 1 { "" } else { "s" }
                    ));
                }
                if let Some(c) = md.chunk {
                    s.push_str(&format!(", chunk {}", format_bytes(c)));
                }
                if let Some(p) = &md.consistency_policy {
                    s.push_str(&format!(", consistency {p}"));
                    if md.journal() {
                        s.push_str(" (1 disk)");
                    }
                }
                if let Some(b) = &md.bitmap {
                    s.push_str(&format!(", bitmap {b}"));
                    if let Some(bc) = md.bitmap_chunk {
                        s.push_str(&format!("/{}", format_bytes(bc)));
                    }
                }
                if let Some(n) = md.stripe_cache_size {
                    s.push_str(&format!(", stripe cache {n}"));
                }
                if let Some(n) = md.group_thread_cnt {
                    s.push_str(&format!(", {n} thread groups"));
                }
                if let Some(b) = md.read_ahead {
                    s.push_str(&format!(", read-ahead {}", format_bytes(b)));
                }
                if let Some(x) = &md.scheduler {
                    s.push_str(&format!(", members' scheduler {x}"));
                }
                s
            }
            RaidLayer::Zfs(z) => z.describe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    #[test]
    fn capacities_per_level() {
        assert_eq!(BtrfsProfile::Raid0.usable(4, G), 4 * G);
        assert_eq!(BtrfsProfile::Raid1.usable(2, G), G);
        assert_eq!(BtrfsProfile::Raid10.usable(4, G), 2 * G);
        assert_eq!(BtrfsProfile::Raid5.usable(4, G), 3 * G);
        assert_eq!(BtrfsProfile::Raid6.usable(5, G), 3 * G);
        assert_eq!(BtrfsProfile::Raid1c3.usable(3, G), G);
        assert_eq!(MdLevel::Raid6.usable(6, G), 4 * G);
        assert_eq!(MdLevel::Raid1.usable(3, G), G);
        assert_eq!(MdLevel::Raid10.usable(4, G), 2 * G);
        assert_eq!(MdLevel::Raid4.usable(3, G), 2 * G);
    }

    #[test]
    fn parsing_levels_and_profiles() {
        assert_eq!(MdLevel::parse("raid6"), Some(MdLevel::Raid6));
        assert_eq!(MdLevel::parse("10"), Some(MdLevel::Raid10));
        assert_eq!(MdLevel::parse("7"), None);
        assert_eq!(BtrfsProfile::parse("RAID1C3"), Some(BtrfsProfile::Raid1c3));
        assert_eq!(BtrfsProfile::parse("raid7"), None);
        assert_eq!(
            BtrfsProfile::default_metadata(BtrfsProfile::Raid6, 4),
            BtrfsProfile::Raid1c3
        );
        assert_eq!(
            BtrfsProfile::default_metadata(BtrfsProfile::Raid0, 1),
            BtrfsProfile::Dup
        );
    }

    fn md(level: MdLevel) -> RaidLayer {
        RaidLayer::Md(MdOptions::new(level))
    }

    #[test]
    fn describes_itself() {
        let RaidLayer::Md(mut o) = md(MdLevel::Raid6) else {
            unreachable!()
        };
        o.chunk = Some(512 << 10);
        o.bitmap = Some("internal".into());
        o.bitmap_chunk = Some(64 << 20);
        let fs = FsLayer {
            kind: FsKind::Xfs,
            mkfs_options: vec![],
            mount_options: vec!["noatime".into()],
            read_ahead: None,
        };
        let s = Stack::over(RaidLayer::Md(o), 5)
            .spares(1)
            .with(Layer::Lvm)
            .fs(fs);
        assert_eq!(
            s.describe(),
            "md raid6 x5 +1 spare, chunk 512KiB, bitmap internal/64MiB > lvm > xfs (noatime)"
        );
        assert_eq!(s.disks(), 6);
        assert!(s.survives_one_failure());
    }

    /// The stack is its layers in build order, and it is stored in the shape every
    /// older record has (fields and their order as they were), whatever the layers.
    #[test]
    fn layers_are_in_build_order_and_stored_in_the_old_shape() {
        let c = cache::CacheOptions {
            kind: cache::CacheKind::Bcache,
            mode: cache::CacheMode::Writeback,
            disks: 1,
            size: None,
            fail: false,
        };
        let s = Stack::over(md(MdLevel::Raid5), 3)
            .with(Layer::Lvm)
            .with(Layer::Cache(c.clone()))
            .fs(FsLayer::plain(FsKind::Ext4));
        assert_eq!(
            s.layers(),
            [
                Layer::Raid(md(MdLevel::Raid5)),
                Layer::Lvm,
                Layer::Cache(c),
                Layer::Fs(FsLayer::plain(FsKind::Ext4)),
            ]
        );
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"raid":{"type":"md","level":"5","chunk":null,"bitmap":null,"bitmap_chunk":null,"assume_clean":false},"members":3,"spares":0,"lvm":true,"fs":"ext4","mkfs_options":[],"mount_options":[],"cache":{"kind":"bcache","mode":"writeback","disks":1}}"#
        );
        let back: Stack = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        // One layer replaced in place, one added where the build order puts it.
        let mut t = Stack::over(RaidLayer::None, 1).fs(FsLayer::plain(FsKind::Xfs));
        t.set(Layer::Lvm);
        t.set(Layer::Raid(md(MdLevel::Raid1)));
        assert_eq!(t.describe(), "md raid1 x1 > lvm > xfs");
        t.without_lvm();
        assert_eq!(t.describe(), "md raid1 x1 > xfs");
    }

    /// The cache layer sits between LVM and the fs in the description, and its disk
    /// comes on top of the members; a stack without one serializes as before.
    #[test]
    fn a_cache_is_described_and_counted() {
        let mut s = Stack::over(md(MdLevel::Raid5), 3)
            .with(Layer::Lvm)
            .fs(FsLayer::plain(FsKind::Xfs));
        let plain = serde_json::to_string(&s).unwrap();
        assert!(!plain.contains("cache"), "{plain}");
        s.set(Layer::Cache(cache::CacheOptions {
            kind: cache::CacheKind::Lvmcache,
            mode: cache::CacheMode::Writethrough,
            disks: 1,
            size: Some(256 << 20),
            fail: false,
        }));
        assert_eq!(
            s.describe(),
            "md raid5 x3 > lvm > lvmcache writethrough 256MiB (1 disk) > xfs"
        );
        assert_eq!(s.disks(), 4);
        let back: Stack = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    /// An md RAID5 x4 under xfs, `edit` applied to its md options and its filesystem.
    fn md5_xfs(edit: impl FnOnce(&mut MdOptions, &mut FsLayer)) -> Stack {
        let mut o = MdOptions::new(MdLevel::Raid5);
        o.chunk = Some(64 << 10);
        let mut fs = FsLayer::plain(FsKind::Xfs);
        edit(&mut o, &mut fs);
        Stack::over(RaidLayer::Md(o), 4).fs(fs)
    }

    #[test]
    fn only_runtime_tunables_make_a_stack_retunable() {
        let base = md5_xfs(|o, f| {
            o.stripe_cache_size = Some(256);
            f.read_ahead = Some(128 << 10);
        });
        // Each runtime tunable on its own is a re-tune.
        let runtime: [fn(&mut MdOptions, &mut FsLayer); 7] = [
            |o, _| o.stripe_cache_size = Some(4096),
            |o, _| o.group_thread_cnt = Some(4),
            |o, _| o.sync_speed_min = Some(50 << 20),
            |o, _| o.sync_speed_max = Some(200 << 20),
            |o, _| o.read_ahead = Some(4 << 20),
            |o, _| o.scheduler = Some("none".into()),
            |_, f| f.read_ahead = Some(4 << 20),
        ];
        for (i, edit) in runtime.iter().enumerate() {
            let next = md5_xfs(|o, f| {
                o.stripe_cache_size = Some(256);
                f.read_ahead = Some(128 << 10);
                edit(o, f);
            });
            assert!(
                base.retunable_to(&next),
                "runtime tunable {i}: {}",
                next.describe()
            );
        }
        // Anything the build depends on is a rebuild, also beside a runtime change.
        let built: [fn(&mut MdOptions, &mut FsLayer); 5] = [
            |o, _| o.chunk = Some(256 << 10),
            |o, _| o.bitmap = Some("internal".into()),
            |_, f| f.mkfs_options = vec!["-b".into(), "size=1024".into()],
            |_, f| f.mount_options = vec!["noatime".into()],
            |_, f| f.kind = FsKind::Ext4,
        ];
        for (i, edit) in built.iter().enumerate() {
            let next = md5_xfs(|o, f| {
                o.stripe_cache_size = Some(4096);
                f.read_ahead = Some(128 << 10);
                edit(o, f);
            });
            assert!(
                !base.retunable_to(&next),
                "build key {i}: {}",
                next.describe()
            );
        }
        // Not with other members, LVM or alignment.
        let mut wider = md5_xfs(|o, f| {
            o.stripe_cache_size = Some(4096);
            f.read_ahead = Some(128 << 10);
        });
        wider.members = 5;
        assert!(!base.retunable_to(&wider));
        let mut aligned = base.clone();
        aligned.alignment = Alignment::Stripe;
        if let Some(Layer::Fs(f)) = aligned.layers.last_mut() {
            f.read_ahead = Some(4 << 20);
        }
        assert!(!base.retunable_to(&aligned));
        // Nothing changed: two builds, as written.
        assert!(!base.retunable_to(&base.clone()));
        // A tunable set here and left to the kernel next has no default to go back to.
        let unset = md5_xfs(|o, _| o.stripe_cache_size = Some(256));
        assert!(!base.retunable_to(&unset));
        // The other way round is fine: it is set.
        assert!(unset.retunable_to(&base));
    }
}
