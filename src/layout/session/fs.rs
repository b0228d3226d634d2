//! The filesystem's steps: mkfs on what the layers below left (unless the pooling layer made
//! the filesystem itself: btrfs RAID, ZFS), and `btrfs scrub` as btrfs's check.

use super::super::fs::Filesystem;
use super::super::layer::{self, GuestTool};
use super::super::scrub::{self, ScrubOutcome};
use super::super::state::Owned;
use super::super::{LayoutError, fs};
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, OnDisk, Session};
use crate::stack::Layer;
use crate::stack::{FsKind, FsLayer};

/// `blockdev --setra` on a device: the filesystem's (`read_ahead`) or an md array's
/// (`mdadm.read_ahead`), bytes, 512-byte sectors on the command line; nothing when the layout
/// leaves it to the kernel.
pub(super) fn set_read_ahead(
    s: &Session,
    dev: &std::path::Path,
    bytes: Option<u64>,
) -> Result<(), LayoutError> {
    let Some(b) = bytes else { return Ok(()) };
    s.runner.run(&[
        "blockdev".to_string(),
        "--setra".into(),
        (b / 512).to_string(),
        dev.display().to_string(),
    ])?;
    Ok(())
}

/// A filesystem with its mkfs and mount options.
pub(super) struct FsSteps<'a>(pub &'a FsLayer);

impl LayerSteps for FsSteps<'_> {
    fn name(&self) -> &'static str {
        self.0.kind.name()
    }

    /// The filesystem's device's read-ahead set anew.
    fn retune(&self, s: &mut Session, b: &Built) -> Result<(), LayoutError> {
        set_read_ahead(s, &b.fs_device, self.0.read_ahead)
    }

    /// btrfs says what it offers (statvfs counts raw space on RAID profiles).
    fn usable_bytes(&self, s: &Session, mnt: &std::path::Path) -> Option<Result<u64, LayoutError>> {
        (self.0.kind == FsKind::Btrfs).then(|| super::super::btrfs::usable_bytes(&s.runner, mnt))
    }

    /// mkfs on the base device (a single-device btrfs is recorded so teardown forgets it).
    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        if vol.mkfs_done {
            return Ok(());
        }
        let f = self.0;
        if f.kind == FsKind::Btrfs {
            s.push(Owned::Btrfs {
                devices: vec![vol.base.clone()],
            })?;
        }
        // `alignment = "stripe"`: mkfs gets the array's stripe, not what it reads of the device.
        let options = match crate::stack::align::Geometry::of(on.stack) {
            Some(g) if on.stack.alignment == crate::stack::Alignment::Stripe => {
                super::super::align::stripe_mkfs_options(f.kind, &f.mkfs_options, &g)
            }
            _ => f.mkfs_options.clone(),
        };
        let argv = fs::mkfs_argv(f.kind, &options, &vol.base);
        s.runner.run_interruptible(&argv, None::<&[&str]>)?;
        set_read_ahead(s, &vol.base, f.read_ahead)
    }

    /// Nothing here: the filesystem is mounted (its journal or log replayed) after every
    /// layer is back.
    /// (The device's read-ahead lives in the kernel: set again.)
    fn assemble(
        &self,
        s: &mut Session,
        _d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        set_read_ahead(s, &vol.base, self.0.read_ahead)
    }

    fn check(
        &self,
        s: &mut Session,
        b: &Built,
        _written_under: bool,
    ) -> Result<Option<ScrubOutcome>, LayoutError> {
        if self.0.kind != FsKind::Btrfs {
            return Ok(None);
        }
        scrub::btrfs_scrub(&s.runner, &b.mount_point).map(Some)
    }
}

impl StorageLayer for Filesystem {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        match layer {
            Layer::Fs(f) if f.kind == self.kind => Some(Box::new(FsSteps(f))),
            _ => None,
        }
    }

    fn detect(&self) -> Result<(), String> {
        layer::filesystem(self.kind.name(), &[self.kind.mkfs()], self.package)
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        self.modules
    }

    fn vm_tools(&self) -> &'static [GuestTool] {
        self.tools
    }
}
