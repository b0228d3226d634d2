//! Every storage layer iolab builds, registered once: the availability check, the
//! VM's guest tools and its kernel modules are read from this list. A new layer is its own
//! file implementing [`super::layer::StorageLayer`] and one line here
//! (docs/architecture.md, "Adding a storage layer", lists the rest).

use super::layer::StorageLayer;
use super::{btrfs, cache, fs, lvm, mdadm, member, zfs};

/// The layers, in the order a stack is checked: what pools the disks, then what goes over it,
/// the filesystems last (the first missing piece is the reason a layout is unavailable).
pub static LAYERS: &[&dyn StorageLayer] = &[
    &member::Integrity,
    &member::Luks,
    &mdadm::Md,
    &zfs::Zfs,
    &lvm::Lvm,
    &cache::Lvmcache,
    &cache::Bcache,
    &cache::Writecache,
    &btrfs::Btrfs,
    &fs::XFS,
    &fs::EXT4,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::{FsKind, FsLayer, RaidLayer, Stack};

    /// Names are unique, and every layer a spec can write is found in some stack.
    #[test]
    fn every_layer_is_registered_once() {
        let mut names: Vec<&str> = LAYERS.iter().map(|l| l.name()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "{names:?}");
        let plain = Stack::over(RaidLayer::None, 1)
            .with(crate::stack::Layer::Lvm)
            .fs(FsLayer::plain(FsKind::Ext4));
        let found: Vec<&str> = LAYERS
            .iter()
            .filter(|l| l.in_stack(&plain))
            .map(|l| l.name())
            .collect();
        assert_eq!(found, ["lvm", "ext4"]);
        assert!(names.contains(&"bcache") && !names.contains(&"raid7"));
        assert!(names.contains(&"writecache"), "{names:?}");
    }
}
