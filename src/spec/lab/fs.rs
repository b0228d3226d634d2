//! `fs`, `mkfs_options`, `mount_options`, `read_ahead`: the filesystem on top of the stack
//! (and the read-ahead of the device it sits on), and whether the stack leaves it room enough.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section, usable};
use crate::spec::SpecError;
use crate::spec::locate::{list_of, split_commas, split_words};
use crate::stack::{FsKind, RaidLayer, Stack};
use crate::units;

/// The filesystem layer.
pub(super) struct Fs;

impl Section for Fs {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        [
            ("fs", raw.fs.is_some()),
            ("mkfs_options", raw.mkfs_options.is_some()),
            ("mount_options", raw.mount_options.is_some()),
            ("read_ahead", raw.read_ahead.is_some()),
        ]
        .into_iter()
        .find_map(|(k, set)| set.then_some(k))
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        if let Some(f) = &raw.fs {
            draft.fs = Some(FsKind::parse(f).ok_or_else(|| {
                cx.err(
                    "fs",
                    "fs",
                    format!("unknown filesystem '{f}' (use xfs, ext4 or btrfs)"),
                )
            })?);
        }
        draft.mkfs_options = list_of(&raw.mkfs_options, split_words);
        draft.mount_options = list_of(&raw.mount_options, split_commas);
        draft.read_ahead =
            super::mdadm::read_ahead(cx, raw.read_ahead.as_ref(), "read_ahead", "read_ahead")?;
        Ok(())
    }

    /// `read_ahead` reaches file reads only through the block device xfs and ext4 read from:
    /// btrfs and ZFS keep a read-ahead of their own, which `blockdev --setra` does not touch.
    /// On a filesystem straight on an md array it is the array's own, `mdadm.read_ahead`.
    fn check(
        &self,
        cx: &Cx,
        _raw: &RawLayout,
        stack: &Stack,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        if stack.fs_layer().read_ahead.is_none() {
            return Ok(());
        }
        let kind = stack.fs();
        if !matches!(kind, FsKind::Xfs | FsKind::Ext4) {
            return Err(cx.err(
                "read_ahead",
                "read_ahead",
                format!(
                    "{} keeps its own read-ahead, which blockdev --setra on a device does not reach; drop read_ahead (it is for xfs and ext4)",
                    kind.name()
                ),
            ));
        }
        let on_md = matches!(stack.raid(), RaidLayer::Md(o) if o.read_ahead.is_some());
        if on_md && !stack.lvm() && stack.cache().is_none() {
            return Err(cx.err(
                "read_ahead",
                "read_ahead",
                "the filesystem sits on the md array, whose read-ahead mdadm.read_ahead already sets; give one of the two",
            ));
        }
        Ok(())
    }

    fn size(
        &self,
        cx: &Cx,
        _raw: &RawLayout,
        stack: &Stack,
        member_size: Option<u64>,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let Some(sz) = member_size else {
            return Ok(());
        };
        let top = usable(stack, sz);
        if top < stack.fs().min_size() {
            return Err(cx.err(
                "fs",
                "fs",
                format!(
                    "{} needs at least {}, the stack gives {}; use bigger disks",
                    stack.fs().name(),
                    units::format_bytes(stack.fs().min_size()),
                    units::format_bytes(top)
                ),
            ));
        }
        Ok(())
    }
}
