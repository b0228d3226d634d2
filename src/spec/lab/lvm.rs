//! `lvm = true`: a linear LVM volume over the RAID layer (or the single disk).

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::stack::Layer;

/// The LVM layer.
pub(super) struct Lvm;

impl Section for Lvm {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.lvm.is_some().then_some("lvm")
    }

    fn parse(&self, _cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        if raw.lvm == Some(true) {
            draft.add(Layer::Lvm);
        }
        Ok(())
    }
}
