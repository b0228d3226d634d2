//! A storage layer's one trait, [`StorageLayer`] (what the build stage knows of a kind of
//! layer), and the [`LayerSteps`] it hands out for a stack's layer value: build it on what the
//! layer below left, assemble it again after a power cut, lose members, get them back, check
//! and re-tune it. A layer answers in its own file under `session/` (`md.rs`, `btrfs.rs`,
//! `zfs.rs`, `lvm.rs`, `cache.rs`, `fs.rs`, `member.rs`) and is registered once in
//! `layout/registry.rs`; the session's walkers take its steps from there
//! ([`super::layers::steps`]) and name no layer.

use std::path::{Path, PathBuf};

use super::super::LayoutError;
use super::super::layer::GuestTool;
use super::super::scrub::ScrubOutcome;
use super::{Built, DiskSource, OnDisk, Session};
use crate::stack::{Layer, Rebuild, Stack};

/// What the layers built so far leave for the next one.
#[derive(Debug)]
pub(crate) struct Volume {
    /// The device the next layer is made on (mkfs runs on it, mount mounts it).
    pub base: PathBuf,
    /// What the layers built so far named, each under its own key (an md array, a volume
    /// group): what a layer over them finds them by.
    pub made: Made,
    /// The pooling layer made its own filesystem (btrfs RAID, ZFS): nothing is left for mkfs.
    pub mkfs_done: bool,
    /// Other devices the mount names beside `base`, so the kernel assembles a filesystem
    /// across them without a scan (btrfs RAID's other members).
    pub mount_with: Vec<PathBuf>,
    /// Where a layer that mounts its own filesystem mounted it (a ZFS dataset): the session
    /// then mounts nothing.
    pub mounted: Option<PathBuf>,
}

impl Volume {
    /// What a layout's first member leaves for the layer over it; `mkfs_done` when the
    /// filesystem is already on the disks (assembling after a power cut).
    pub(super) fn on(base: PathBuf, mkfs_done: bool) -> Volume {
        Volume {
            base,
            made: Made::default(),
            mkfs_done,
            mount_with: Vec::new(),
            mounted: None,
        }
    }
}

/// The names a layer gave what it made (an md array's device and `--name`, LVM's volume
/// group, a ZFS pool), each under a key the layer owns: what the layers over it, the lab and
/// the assembly after a power cut find them by. The generic structs carry this, and no field of
/// any one layer; a layer reads its own entries through its own accessors.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Made(std::collections::BTreeMap<String, String>);

impl Made {
    /// The name made under `key`, if the layer that owns the key made one.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Records what a layer made under its `key`.
    pub(crate) fn set(&mut self, key: &'static str, name: impl Into<String>) {
        self.0.insert(key.to_string(), name.into());
    }
}

/// The disks of the layout being built, as the build step of every layer sees them.
#[derive(Debug)]
pub(crate) struct LayoutDisks<'a> {
    /// The layout's number in the lab.
    pub index: usize,
    /// The layout's name.
    pub name: &'a str,
    /// The whole stack (a layer may read its neighbours' options, e.g. mkfs options).
    pub stack: &'a Stack,
    /// The RAID layer's devices: members, then spares (and md's journal disk).
    pub devs: &'a [PathBuf],
    /// The members.
    pub members: &'a [PathBuf],
    /// The spares.
    pub spares: &'a [PathBuf],
    /// The disks the layers over the pooling layer take for their own (an SSD cache's), after
    /// the members and spares.
    pub layer_disks: &'a [PathBuf],
    /// Size of the smallest disk, bytes.
    pub member_size: u64,
}

/// One kind of storage layer: everything iolab's build stage knows of it, in one impl in the
/// layer's own file under `session/` — its name, whether this machine can build it, what a VM
/// guest needs for it, and its steps (build, assemble, fail, rebuild, check) for a stack's layer
/// value of its kind. The kinds are registered once in [`crate::layout::registry::LAYERS`]; the
/// availability check, the VM's module and tool lists and the session's walkers all read them
/// from there.
pub(crate) trait StorageLayer: Sync {
    /// The name specs, reports and errors use (`md`, `lvmcache`, `xfs`).
    fn name(&self) -> &'static str;

    /// This kind's steps for `layer`, or `None` when `layer` is of another kind: the one place
    /// a stack's layer value is matched to the code that builds it.
    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>>;

    /// Whether `stack` has a layer of this kind.
    fn in_stack(&self, stack: &Stack) -> bool {
        stack.layers().iter().any(|l| self.steps(l).is_some())
    }

    /// Whether this machine can build it (kernel support and tools): the error is the reason,
    /// shown as `unavailable here: <reason>`.
    fn detect(&self) -> Result<(), String>;

    /// Kernel modules a VM guest loads for it (their dependencies are found in
    /// `modules.dep`).
    fn vm_modules(&self) -> &'static [&'static str] {
        &[]
    }

    /// Programs a VM guest runs for it.
    fn vm_tools(&self) -> &'static [GuestTool] {
        &[]
    }
}

/// One layer's steps. Only a layer that pools the members (md, btrfs, ZFS) fails and rebuilds
/// them; the others keep the defaults (refused: the session only asks the pooling layer).
pub(crate) trait LayerSteps {
    /// The name errors use.
    fn name(&self) -> &'static str;

    /// Makes the layer on `vol` (what the layers below left) and updates it for the next one;
    /// every object is recorded in the session's state before it is made.
    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError>;

    /// Brings the layer back from what it left on its disks after a power cut (md
    /// `--assemble`, a pool imported, a volume group activated) and updates `vol` for the next
    /// one; nothing made anew. Every layer says, so a new one cannot be skipped silently.
    fn assemble(
        &self,
        s: &mut Session,
        d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError>;

    /// Fails the layer's own devices before the members fail, when its spec asks (an SSD
    /// cache's `fail = true`), and says what the layer did: the degrade step's first act.
    fn fail_first(
        &self,
        _s: &mut Session,
        _b: &mut Built,
    ) -> Result<Option<crate::stack::cache::CacheFailure>, LayoutError> {
        Ok(None)
    }

    /// Whether this layer pools the members (md, btrfs RAID, ZFS): the one the session asks to
    /// fail and rebuild them.
    fn pools_members(&self) -> bool {
        false
    }

    /// Fails the members at `idxs` (`victims` are their devices) and leaves the layout
    /// usable, degraded; marks them failed ([`Built::mark_failed`]) once they are gone.
    fn fail(
        &self,
        _s: &mut Session,
        b: &mut Built,
        _idxs: &[usize],
        _victims: &[PathBuf],
    ) -> Result<(), LayoutError> {
        Err(LayoutError::Unexpected(format!(
            "{}: the {} layer has no members to fail",
            b.name,
            self.name()
        )))
    }

    /// Replaces the failed members at `failed` with fresh disks and waits for the layer to be
    /// whole again.
    fn rebuild(
        &self,
        _s: &mut Session,
        b: &mut Built,
        _disks: &DiskSource,
        _failed: &[usize],
    ) -> Result<Rebuild, LayoutError> {
        Err(LayoutError::Unexpected(format!(
            "{}: the {} layer has no members to rebuild",
            b.name,
            self.name()
        )))
    }

    /// Readies a real device (not a lab-made loop disk) the layout is about to take, after
    /// its old signatures are wiped: what the layer assumes of a fresh disk that a used one
    /// may not give.
    fn prepare_device(&self, _s: &mut Session, _dev: &Path) -> Result<(), LayoutError> {
        Ok(())
    }

    /// Mounts layout `index` on `mnt` when the layer owns its filesystem's mount (a ZFS pool
    /// mounts its dataset), `false` when it leaves the mount to the session (`mount -t` of
    /// the stack's filesystem on `vol.base` and `vol.mount_with`).
    fn mount(
        &self,
        _s: &mut Session,
        _index: usize,
        _vol: &Volume,
        _mnt: &Path,
    ) -> Result<bool, LayoutError> {
        Ok(false)
    }

    /// Sets this layer's runtime tunables (this value's, the next layout of a sweep) on `b`,
    /// built with the same layer under other tunables.
    fn retune(&self, _s: &mut Session, _b: &Built) -> Result<(), LayoutError> {
        Ok(())
    }

    /// This layer's tunables the kernel holds other than `b`'s stack asked, in words (none
    /// when all took, or the layer has none).
    fn wrong_tunables(&self, _s: &Session, _b: &Built) -> Vec<String> {
        Vec::new()
    }

    /// Bytes the mounted filesystem at `mnt` offers when this layer knows better than
    /// `statvfs` (btrfs asks btrfs), `None` when it does not.
    fn usable_bytes(&self, _s: &Session, _mnt: &Path) -> Option<Result<u64, LayoutError>> {
        None
    }

    /// The name of the layer's repair (`md repair`) when its own check, `checked`, found copies
    /// that disagree and the layer can make them agree; `None` when the check calls for none.
    fn repair_for(&self, _checked: &ScrubOutcome) -> Option<&'static str> {
        None
    }

    /// Runs the repair [`LayerSteps::repair_for`] named.
    fn repair(&self, _s: &mut Session, b: &Built) -> Result<ScrubOutcome, LayoutError> {
        Err(LayoutError::Unexpected(format!(
            "{}: the {} layer has no repair",
            b.name,
            self.name()
        )))
    }

    /// Caps a host-wide cache this layer's reads would otherwise come from while its layout is
    /// measured (ZFS's ARC: a read from it is no disk figure), and returns the setting to put
    /// back with [`LayerSteps::restore_cache`]; `None` when the layer has no such cache.
    fn cap_cache(&self, _s: &Session) -> Option<Result<String, LayoutError>> {
        None
    }

    /// Puts back the setting [`LayerSteps::cap_cache`] returned.
    fn restore_cache(&self, _s: &Session, _prev: &str) -> Result<(), LayoutError> {
        Ok(())
    }

    /// The layer's runtime tunables as the kernel or the layer's tool holds them now, in
    /// words (`stripe_cache_size 4096, ...`), `None` when it has none to say.
    fn tunables(&self, _s: &Session, _b: &Built) -> Option<String> {
        None
    }

    /// The layer's own consistency check (md `check`, `btrfs scrub`, `zpool scrub`), `None`
    /// when it has none. `written_under`: the lab wrote garbage onto a member on purpose.
    fn check(
        &self,
        _s: &mut Session,
        _b: &Built,
        _written_under: bool,
    ) -> Result<Option<ScrubOutcome>, LayoutError> {
        Ok(None)
    }
}
