//! The stored shape of a [`Stack`]: the RAID layer, LVM, the cache and the filesystem with its
//! options side by side, as every stack was written before it became an ordered layer list
//!. Stacks read and write through it, so stored records and JSON stay byte for byte
//! what they were.

use serde::{Deserialize, Serialize};

use super::{FsKind, FsLayer, Layer, MemberLayer, RaidLayer, Stack, cache::CacheOptions};

/// A stack as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackShape {
    /// The RAID layer.
    pub raid: RaidLayer,
    /// Disks holding data.
    pub members: usize,
    /// md hot spares.
    pub spares: usize,
    /// A linear LVM volume over the RAID layer.
    pub lvm: bool,
    /// The filesystem.
    pub fs: FsKind,
    /// Extra mkfs arguments.
    pub mkfs_options: Vec<String>,
    /// Mount options.
    pub mount_options: Vec<String>,
    /// Read-ahead of the filesystem's device, bytes (left out when not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead: Option<u64>,
    /// The SSD cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheOptions>,
    /// The layers under each member, bottom first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub under_members: Vec<MemberLayer>,
    /// How the layers are aligned to the array (left out when `auto`, the default).
    #[serde(default, skip_serializing_if = "super::Alignment::is_auto")]
    pub alignment: super::Alignment,
}

impl From<StackShape> for Stack {
    fn from(s: StackShape) -> Stack {
        let mut stack = Stack::over(s.raid, s.members)
            .spares(s.spares)
            .with_some(s.lvm.then_some(Layer::Lvm))
            .with_some(s.cache.map(Layer::Cache))
            .fs(FsLayer {
                kind: s.fs,
                mkfs_options: s.mkfs_options,
                mount_options: s.mount_options,
                read_ahead: s.read_ahead,
            })
            .with_member_layers(s.under_members);
        stack.alignment = s.alignment;
        stack
    }
}

impl From<Stack> for StackShape {
    fn from(s: Stack) -> StackShape {
        let fs = s.fs_layer().clone();
        let under_members = s.member_layers().into_iter().cloned().collect();
        let alignment = s.alignment;
        StackShape {
            raid: s.raid().clone(),
            members: s.members,
            spares: s.spares,
            lvm: s.lvm(),
            fs: fs.kind,
            mkfs_options: fs.mkfs_options,
            mount_options: fs.mount_options,
            read_ahead: fs.read_ahead,
            cache: s.layers.into_iter().find_map(|l| match l {
                Layer::Cache(c) => Some(c),
                _ => None,
            }),
            under_members,
            alignment,
        }
    }
}
