//! A stack's layer value matched to its steps through the registry
//! ([`crate::layout::registry::LAYERS`]): the walkers ask here and name no layer. A layer no
//! registered kind claims is an error, never skipped.

use super::super::LayoutError;
use super::super::layer::PlainDisk;
use super::super::registry::LAYERS;
use super::steps::{LayerSteps, StorageLayer};
use crate::stack::{Layer, RaidLayer};

/// The steps of `layer`, with its options, from the one registered kind that claims it.
pub(super) fn steps(layer: &Layer) -> Result<Box<dyn LayerSteps + '_>, LayoutError> {
    LAYERS.iter().find_map(|k| k.steps(layer)).ok_or_else(|| {
        LayoutError::Unexpected(format!(
            "no registered storage layer builds {layer:?}; register it in layout/registry.rs"
        ))
    })
}

impl StorageLayer for PlainDisk {
    fn name(&self) -> &'static str {
        "plain disk"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        matches!(layer, Layer::Raid(RaidLayer::None))
            .then(|| Box::new(NoPool) as Box<dyn LayerSteps>)
    }

    fn detect(&self) -> Result<(), String> {
        Ok(())
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
    ) -> Result<(), LayoutError> {
        Ok(())
    }

    fn assemble(
        &self,
        _s: &mut super::Session,
        _d: &super::OnDisk<'_>,
        _vol: &mut super::steps::Volume,
    ) -> Result<(), LayoutError> {
        Ok(())
    }
}
