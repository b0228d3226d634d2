//! `fill`: the size of the verification data set written before degrading, at most half the
//! layout's space.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section, usable};
use crate::spec::SpecError;
use crate::stack::Stack;
use crate::units;

/// The data set's size.
pub(super) struct Fill;

impl Section for Fill {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.fill.is_some().then_some("fill")
    }

    fn size(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        stack: &Stack,
        member_size: Option<u64>,
        draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let Some(v) = &raw.fill else {
            return Ok(());
        };
        let f = v.bytes().map_err(|e| cx.err("fill", "fill", e))?;
        if let Some(sz) = member_size {
            let cap = usable(stack, sz) / 2;
            if f > cap {
                return Err(cx.err(
                    "fill",
                    "fill",
                    format!(
                        "{} is more than half the layout's space ({}); lower fill",
                        units::format_bytes(f),
                        units::format_bytes(cap)
                    ),
                ));
            }
        }
        draft.fill = Some(f);
        Ok(())
    }
}
