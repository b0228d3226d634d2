//! The session's step for the cache layer (issue 28): what [`super::super::cache`] builds,
//! each object recorded in the state file before it exists.

use std::path::{Path, PathBuf};

use super::super::LayoutError;
use super::super::state::Owned;
use super::super::{cache, fault, lvm};
use super::Session;
use crate::stack::cache::{CacheKind, CacheOptions};

impl Session {
    /// The cache layer over `base` (the array, its LV, or the one disk) on `disks`: returns the
    /// device the filesystem goes on. lvmcache converts the lab LV of `vg` in place.
    pub(super) fn cache_layer(
        &mut self,
        index: usize,
        c: &CacheOptions,
        base: &Path,
        vg: Option<&str>,
        disks: &[PathBuf],
    ) -> Result<PathBuf, LayoutError> {
        match c.kind {
            CacheKind::Lvmcache => {
                let vg = vg.ok_or_else(|| {
                    LayoutError::Unexpected("lvmcache needs the LVM layer under it".into())
                })?;
                self.extend_vg(vg, disks)?;
                let extra = lvm::no_udev_args(&self.runner);
                for mut argv in cache::lvmcache_argvs(vg, disks, c.size, c.mode) {
                    argv.splice(1..1, extra.iter().cloned());
                    self.runner.run(&argv)?;
                }
                Ok(base.to_path_buf())
            }
            CacheKind::Bcache => {
                let mut cache = disks
                    .first()
                    .cloned()
                    .ok_or_else(|| LayoutError::Unexpected("bcache needs a cache disk".into()))?;
                if let Some(size) = c.size {
                    let name = format!("iolab-{}-{index}-cache", self.lab_id);
                    self.push(Owned::Dm { name: name.clone() })?;
                    let table = format!("0 {} linear {} 0", size / 512, cache.display());
                    cache = fault::create(&self.runner, &name, &table)?;
                }
                let cset = cache::new_uuid(&self.runner);
                self.push(Owned::Bcache {
                    backing: base.to_path_buf(),
                    caches: vec![cache.clone()],
                    cset: cset.clone(),
                })?;
                cache::create_bcache(&self.runner, base, &cache, &cset, c.mode)
            }
        }
    }

    /// Adds `pvs` to the recorded VG `vg` before they become its PVs, so teardown and
    /// `--cleanup` remove their labels too.
    fn extend_vg(&mut self, vg: &str, pvs: &[PathBuf]) -> Result<(), LayoutError> {
        let found = self
            .objects
            .iter()
            .position(|o| matches!(o, Owned::Vg { name, .. } if name == vg));
        let i = found
            .ok_or_else(|| LayoutError::Unexpected(format!("volume group {vg} is not recorded")))?;
        if let Owned::Vg { name, pvs: old } = &self.objects[i] {
            let mut all = old.clone();
            all.extend(pvs.iter().cloned());
            let o = Owned::Vg {
                name: name.clone(),
                pvs: all,
            };
            self.set(i, o)?;
        }
        Ok(())
    }
}
