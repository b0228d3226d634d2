//! Every layer's steps, registered once (issue 28): the one place a stack's layer value is
//! matched to the code that builds, fails, rebuilds and checks it. A new layer adds its file
//! under `session/` and one arm here (the compiler names it: the match is exhaustive).

use super::steps::LayerSteps;
use super::{btrfs, cache, fs, lvm, md, zfs};
use crate::stack::{Layer, RaidLayer};

/// The steps of `layer`, with its options.
pub(super) fn steps(layer: &Layer) -> Box<dyn LayerSteps + '_> {
    match layer {
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
