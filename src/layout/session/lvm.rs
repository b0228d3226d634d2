//! LVM's step: a volume group on what the layer below left; its one logical volume becomes
//! the device the next layer is made on.

use super::super::LayoutError;
use super::super::lvm;
use super::super::state::Owned;
use super::Session;
use super::steps::{LayerSteps, LayoutDisks, Volume};

/// LVM over the RAID layer (or the one disk).
pub(super) struct LvmSteps;

impl LayerSteps for LvmSteps {
    fn name(&self) -> &'static str {
        "lvm"
    }

    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        let name = format!("iolab_{}_{}", s.lab_id, on.index);
        s.push(Owned::Vg {
            name: name.clone(),
            pvs: vec![vol.base.clone()],
        })?;
        vol.base = lvm::create(&s.runner, &name, &vol.base)?;
        vol.vg = Some(name);
        Ok(())
    }
}
