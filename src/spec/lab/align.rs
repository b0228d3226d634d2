//! `alignment = "auto" | "stripe" | "none"`: how the layers over a striped md array are
//! aligned to it. `auto` leaves it to the tools and checks what they did, `stripe`
//! passes the stripe to mkfs, pvcreate and make-bcache and checks, `none` does neither.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::stack::Stack;
use crate::stack::align::{Alignment, Geometry};

/// The alignment of a layout's layers.
pub(super) struct Align;

impl Section for Align {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.alignment.is_some().then_some("alignment")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        if let Some(a) = &raw.alignment {
            draft.alignment = Alignment::parse(a).ok_or_else(|| {
                cx.err(
                    "alignment",
                    "alignment",
                    format!(
                        "unknown alignment '{a}'; use \"auto\" (the tools' own, checked), \"stripe\" (iolab passes the stripe, checked) or \"none\" (neither)"
                    ),
                )
            })?;
        }
        Ok(())
    }

    fn check(
        &self,
        cx: &Cx,
        _raw: &RawLayout,
        stack: &Stack,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        if stack.alignment != Alignment::Stripe {
            return Ok(());
        }
        if Geometry::of(stack).is_none() {
            return Err(cx.err(
                "alignment",
                "alignment",
                "\"stripe\" needs an md array with a stripe (RAID0, 4, 5, 6 or 10) under the filesystem, and this stack has none (RAID1 mirrors; btrfs and ZFS stripe by themselves); use \"auto\"",
            ));
        }
        if let Some(o) = crate::stack::align::stripe_option(stack.fs(), stack.mkfs_options()) {
            return Err(cx.err(
                "alignment",
                "alignment",
                format!(
                    "\"stripe\" passes the stripe to {}, and mkfs_options already set it ('{o}'); drop it from mkfs_options, or use \"auto\" to keep yours and check it",
                    stack.fs().mkfs()
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "align_tests.rs"]
mod tests;
