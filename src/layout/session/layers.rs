//! Every layer's steps, registered once: the one place a stack's layer value is
//! matched to the code that builds, fails, rebuilds and checks it. A new layer adds its file
//! under `session/` and one arm here (the compiler names it: the match is exhaustive).

use super::steps::LayerSteps;
use super::{btrfs, cache, fs, lvm, md, member, zfs};
use crate::stack::{Layer, RaidLayer};

/// The steps of `layer`, with its options.
pub(super) fn steps(layer: &Layer) -> Box<dyn LayerSteps + '_> {
    match layer {
        Layer::Member(m) => Box::new(member::MemberSteps(m)),
        Layer::Raid(RaidLayer::None) => Box::new(NoPool),
        Layer::Raid(RaidLayer::Md(o)) => Box::new(md::MdSteps(o)),
        Layer::Raid(RaidLayer::Btrfs { data, metadata }) => Box::new(btrfs::BtrfsSteps {
            data: *data,
            metadata: *metadata,
        }),
        Layer::Raid(RaidLayer::Zfs(z)) => Box::new(zfs::ZfsSteps(z)),
        Layer::Lvm => Box::new(lvm::LvmSteps),
        Layer::Cache(c) => Box::new(cache::CacheSteps(c)),
        Layer::Fs(f) => Box::new(fs::FsSteps(f)),
    }
}

/// No RAID: the filesystem goes on the one member as it is.
struct NoPool;

impl LayerSteps for NoPool {
    fn name(&self) -> &'static str {
        "plain disk"
    }

    fn build(
        &self,
        _s: &mut super::Session,
        _on: &super::steps::LayoutDisks<'_>,
        _vol: &mut super::steps::Volume,
    ) -> Result<(), super::super::LayoutError> {
        Ok(())
    }

    fn assemble(
        &self,
        _s: &mut super::Session,
        _d: &super::OnDisk<'_>,
        _vol: &mut super::steps::Volume,
    ) -> Result<(), super::super::LayoutError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::registry::LAYERS;
    use crate::stack::cache::{CacheKind, CacheMode, CacheOptions};
    use crate::stack::member::{IntegrityAlgorithm, IntegrityOptions, LuksOptions, MemberLayer};
    use crate::stack::zfs::{VdevKind, ZfsOptions};
    use crate::stack::{BtrfsProfile, FsKind, FsLayer, MdLevel, MdOptions, Stack};

    /// The two faces of a layer agree: for every kind of stack, the layers whose steps the
    /// session takes are the layers the registry finds in it (what it checks is available, and
    /// what a VM guest gets modules and tools for), by name.
    #[test]
    fn each_stack_takes_the_steps_of_the_layers_the_registry_finds_in_it() {
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
            let mut taken: Vec<&str> = st
                .layers()
                .iter()
                .map(|l| steps(l).name())
                .filter(|n| *n != "plain disk")
                .collect();
            taken.sort_unstable();
            taken.dedup();
            let mut registered: Vec<&str> = LAYERS
                .iter()
                .filter(|l| l.in_stack(st))
                .map(|l| l.name())
                .collect();
            registered.sort_unstable();
            assert_eq!(taken, registered, "{}", st.describe());
            assert!(!taken.is_empty());
        }
    }
}
