//! `fs`, `mkfs_options`, `mount_options`: the filesystem on top of the stack, and whether the
//! stack leaves it room enough.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section, usable};
use crate::spec::SpecError;
use crate::spec::locate::{list_of, split_commas, split_words};
use crate::stack::{FsKind, Stack};
use crate::units;

/// The filesystem layer.
pub(super) struct Fs;

impl Section for Fs {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        [
            ("fs", raw.fs.is_some()),
            ("mkfs_options", raw.mkfs_options.is_some()),
            ("mount_options", raw.mount_options.is_some()),
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
