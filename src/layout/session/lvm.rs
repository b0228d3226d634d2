//! LVM's step: a volume group on what the layer below left; its one logical volume becomes
//! the device the next layer is made on.

use super::super::LayoutError;
use super::super::layer::{self, GuestTool, VM_HINT};
use super::super::lvm;
use super::super::lvm::Lvm;
use super::super::state::Owned;
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, OnDisk, Session};
use crate::stack::Layer;

/// LVM over the RAID layer (or the one disk).
pub(super) struct LvmSteps;

/// LVM's key in [`super::Made`]: the volume group's name.
const VG: &str = "lvm.vg";

impl Built {
    /// The LVM volume group, when the stack has one (a cache over LVM extends it).
    pub fn volume_group(&self) -> Option<&str> {
        self.made.get(VG)
    }
}

/// The volume group the LVM layer under `vol` made, when there is one.
pub(super) fn volume_group(vol: &Volume) -> Option<&str> {
    vol.made.get(VG)
}

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
        // `alignment = "stripe"`: the data offset is the array's stripe, not LVM's own pick.
        let pv_args = match crate::stack::align::Geometry::of(on.stack) {
            Some(g) if on.stack.alignment == crate::stack::Alignment::Stripe => {
                super::super::align::data_alignment(&g)
            }
            _ => Vec::new(),
        };
        vol.base = lvm::create_with(&s.runner, &name, &vol.base, &pv_args)?;
        vol.made.set(VG, name);
        Ok(())
    }

    /// The volume group activated again (`vgchange -ay`).
    fn assemble(
        &self,
        s: &mut Session,
        d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        let name = d.made.get(VG).ok_or_else(|| {
            LayoutError::Unexpected(format!("{}: the volume group is unknown", d.name))
        })?;
        s.push(Owned::Vg {
            name: name.to_string(),
            pvs: vec![vol.base.clone()],
        })?;
        let mut argv: Vec<String> = vec!["vgchange".into(), "-ay".into(), name.into()];
        argv.splice(1..1, lvm::no_udev_args(&s.runner));
        s.runner.run(&argv)?;
        vol.base = lvm::lv_path(name);
        Ok(())
    }
}

impl StorageLayer for Lvm {
    fn name(&self) -> &'static str {
        "lvm"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        matches!(layer, Layer::Lvm).then(|| Box::new(LvmSteps) as Box<dyn LayerSteps>)
    }

    fn detect(&self) -> Result<(), String> {
        if !layer::device_mapper() {
            return Err(format!(
                "the kernel has no device-mapper (no /dev/mapper/control, no dm-mod module), which LVM needs; {VM_HINT}"
            ));
        }
        layer::tools(&["lvm"], "lvm2")
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        &["dm_mod"]
    }

    fn vm_tools(&self) -> &'static [GuestTool] {
        &[GuestTool {
            name: "lvm",
            package: "lvm2",
            required: true,
        }]
    }
}
