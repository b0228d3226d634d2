//! Every storage layer iolab builds, registered once: the availability check, the
//! VM's guest tools and kernel modules, and the session's steps for each layer of a stack are
//! read from this list. A new layer is its own file implementing
//! `StorageLayer` (`session/steps.rs`) and one line here
//! (docs/architecture.md, "Adding a storage layer", lists the rest).

use super::layer;
use super::session::StorageLayer;
use super::{btrfs, cache, fs, lvm, mdadm, member, zfs};

/// The layers, in the order a stack is checked: what pools the disks, then what goes over it,
/// the filesystems last (the first missing piece is the reason a layout is unavailable).
pub(crate) static LAYERS: &[&dyn StorageLayer] = &[
    &layer::PlainDisk,
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
    use crate::stack::cache::{CacheKind, CacheMode, CacheOptions};
    use crate::stack::member::{IntegrityAlgorithm, IntegrityOptions, LuksOptions, MemberLayer};
    use crate::stack::zfs::{VdevKind, ZfsOptions};
    use crate::stack::{
        BtrfsProfile, FsKind, FsLayer, Layer, MdLevel, MdOptions, RaidLayer, Stack,
    };

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
        assert_eq!(found, ["plain disk", "lvm", "ext4"]);
        assert!(names.contains(&"bcache") && !names.contains(&"raid7"));
        assert!(names.contains(&"writecache"), "{names:?}");
    }

    /// Every layer of every kind of stack is claimed by exactly one registered kind, whose
    /// steps go by the kind's name: none is dropped, none built twice, and what the
    /// availability check asks about is what the session builds.
    #[test]
    fn each_layer_of_a_stack_is_claimed_by_exactly_one_registered_kind() {
        let cache = CacheOptions {
            kind: CacheKind::Bcache,
            mode: CacheMode::Writeback,
            disks: 1,
            size: None,
            fail: false,
        };
        let stacks = [
            Stack::over(RaidLayer::Md(MdOptions::new(MdLevel::Raid6)), 5)
                .spares(1)
                .with(Layer::Lvm)
                .with(Layer::Cache(cache))
                .fs(FsLayer::plain(FsKind::Xfs)),
            Stack::over(
                RaidLayer::Btrfs {
                    data: BtrfsProfile::Raid1,
                    metadata: BtrfsProfile::Raid1,
                },
                2,
            )
            .fs(FsLayer::plain(FsKind::Btrfs)),
            Stack::over(RaidLayer::Zfs(ZfsOptions::simple(VdevKind::Raidz(2), 6)), 6)
                .fs(FsLayer::plain(FsKind::Zfs)),
            Stack::over(RaidLayer::None, 1).fs(FsLayer::plain(FsKind::Ext4)),
            // Layers under each member: dm-integrity under LUKS under md.
            Stack::over(RaidLayer::Md(MdOptions::new(MdLevel::Raid5)), 3)
                .fs(FsLayer::plain(FsKind::Xfs))
                .with_member_layers(vec![
                    MemberLayer::Luks(LuksOptions {
                        cipher: "aes-xts-plain64".into(),
                        key_size: 512,
                    }),
                    MemberLayer::Integrity(IntegrityOptions {
                        algorithm: IntegrityAlgorithm::Crc32c,
                        journal: true,
                    }),
                ]),
        ];
        for st in &stacks {
            let mut claimed: Vec<&str> = Vec::new();
            for l in st.layers() {
                let claims: Vec<&str> = LAYERS
                    .iter()
                    .filter_map(|k| k.steps(l).map(|s| (k.name(), s.name())))
                    .map(|(kind, steps)| {
                        assert_eq!(kind, steps, "{l:?} in {}", st.describe());
                        kind
                    })
                    .collect();
                assert_eq!(claims.len(), 1, "{l:?} in {}: {claims:?}", st.describe());
                claimed.extend(claims);
            }
            claimed.sort_unstable();
            claimed.dedup();
            let mut found: Vec<&str> = LAYERS
                .iter()
                .filter(|k| k.in_stack(st))
                .map(|k| k.name())
                .collect();
            found.sort_unstable();
            assert_eq!(found, claimed, "{}", st.describe());
        }
    }
}
