//! Building one layout, bottom up: take its disks (fresh loop disks, or real devices checked
//! and wiped), then each layer's own build step in the stack's order (`layers.rs`), then a
//! private mount point. Every object is recorded in the state file before it exists, so
//! a failure anywhere tears down exactly what was made.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::super::LayoutError;
use super::super::fault;
use super::super::state::Owned;
use super::super::{fs, signature};
use super::layers;
use super::steps::{LayoutDisks, Volume};
use super::{Built, DiskSource, Session, Wrapped, check_stop};
use crate::stack::Stack;

/// The disks one layout is built on.
struct Disks {
    /// Every device, members first, then md spares.
    devs: Vec<PathBuf>,
    /// Backing file of each device (loop disks), in the same order.
    backing: Vec<Option<PathBuf>>,
    /// Size of the smallest device, bytes.
    member_size: u64,
}

impl Session {
    /// [`Session::build`] without the cleanup on error: each layer in turn, checking for
    /// Ctrl-C between them.
    pub(super) fn build_inner(
        &mut self,
        index: usize,
        name: &str,
        stack: &Stack,
        disks: &DiskSource,
        mark: usize,
        log_mark: usize,
    ) -> Result<Built, LayoutError> {
        let t0 = Instant::now();
        let Disks {
            mut devs,
            backing,
            member_size,
        } = self.take_disks(index, name, stack, disks)?;
        let wrapped = self.wrap_disks(index, &mut devs, member_size)?;
        // The layers under each member go on the members and spares, over the fault wrappers.
        let pooled = stack.members + stack.spares;
        let (under, member_size) =
            self.under_members(stack, index, &mut devs, pooled, member_size)?;
        // The cache disks come last; the RAID layer sees the others.
        let (devs, layer_disks) = devs.split_at(devs.len() - stack.cache_disks());
        let members: Vec<PathBuf> = devs[..stack.members].to_vec();
        let spares: Vec<PathBuf> = devs[stack.members..].to_vec();
        // Each layer in the stack's order, bottom first, on what the one below left.
        let mut vol = Volume::on(members[0].clone(), false);
        let on = LayoutDisks {
            index,
            name,
            stack,
            devs,
            members: &members,
            spares: &spares,
            layer_disks,
            member_size,
        };
        for layer in stack.layers() {
            check_stop()?;
            layers::steps(layer)?.build(self, &on, &mut vol)?;
        }
        check_stop()?;
        let mnt = self.mount_volume(index, name, stack, &vol)?;
        let build_time = t0.elapsed();
        let usable_bytes = self.usable_bytes(stack, &mnt)?;
        Ok(Built {
            name: name.to_string(),
            stack: stack.clone(),
            members,
            spares,
            layer_disks: layer_disks.to_vec(),
            backing,
            made: vol.made,
            fs_device: vol.base,
            mount_point: mnt,
            member_size,
            build_time,
            usable_bytes,
            wrapped,
            under,
            failed: Vec::new(),
            replaced: 0,
            degraded_at: None,
            mark,
            log_mark,
            index,
        })
    }

    /// Puts the disks the dm plan names under a dm device each (`linear`, or `delay`), in
    /// place in `devs`; every dm device is recorded before it is made.
    fn wrap_disks(
        &mut self,
        index: usize,
        devs: &mut [PathBuf],
        member_size: u64,
    ) -> Result<Vec<Wrapped>, LayoutError> {
        let plan = std::mem::take(&mut self.dm_plan);
        let mut out = Vec::new();
        let n = devs.len();
        for (&k, &wrap) in plan.iter().filter(|(k, _)| **k < n) {
            check_stop()?;
            let under = devs[k].clone();
            let bytes = if self.runner.is_dry_run() {
                member_size
            } else {
                crate::system::BlockDevice::from_path(&under).map_or(member_size, |b| b.size_bytes)
            };
            let sectors = bytes / 512;
            let name = fault::dm_name(&self.lab_id, index, k);
            self.push(Owned::Dm { name: name.clone() })?;
            let path = fault::create(
                &self.runner,
                &name,
                &fault::base_table(&under, sectors, wrap),
            )?;
            devs[k] = path.clone();
            out.push(Wrapped {
                path,
                name,
                under,
                sectors,
                wrap,
            });
        }
        Ok(out)
    }

    /// The disks for layout `index`: fresh loop disks, or the first real devices, each checked
    /// for data (unless dry) and wiped.
    fn take_disks(
        &mut self,
        index: usize,
        name: &str,
        stack: &Stack,
        disks: &DiskSource,
    ) -> Result<Disks, LayoutError> {
        let need = stack.disks();
        match disks {
            DiskSource::Loop {
                dir,
                size,
                direct_io,
            } => {
                let mut devs = Vec::new();
                let mut backing = Vec::new();
                for k in 0..need {
                    check_stop()?;
                    let (d, b) = self.loop_disk(dir, *size, *direct_io, &format!("{index}-{k}"))?;
                    devs.push(d);
                    backing.push(Some(b));
                }
                Ok(Disks {
                    devs,
                    backing,
                    member_size: *size,
                })
            }
            DiskSource::Devices(list) => {
                if list.len() < need {
                    return Err(LayoutError::Refused(format!(
                        "layout {name} needs {need} devices, {} given",
                        list.len()
                    )));
                }
                let devs = list[..need].to_vec();
                let member_size = devs
                    .iter()
                    .map(|d| crate::system::BlockDevice::from_path(d).map_or(0, |b| b.size_bytes))
                    .min()
                    .unwrap_or(0);
                for d in &devs {
                    if !self.runner.is_dry_run() {
                        signature::check_device(&self.runner, d, true)?;
                    }
                    signature::wipe(&self.runner, d)?;
                    for layer in stack.layers() {
                        check_stop()?;
                        layers::steps(layer)?.prepare_device(self, d)?;
                    }
                }
                Ok(Disks {
                    devs,
                    backing: vec![None; need],
                    member_size,
                })
            }
        }
    }

    /// Mounts the layout on its private (0700) mount point under the mount base: a layer
    /// that owns its mount ([`super::steps::LayerSteps::mount`]) does it, otherwise the
    /// stack's filesystem is mounted on what the layers left (with the other devices they
    /// name). Build and assemble after a power cut both mount here.
    pub(super) fn mount_volume(
        &mut self,
        index: usize,
        name: &str,
        stack: &Stack,
        vol: &Volume,
    ) -> Result<PathBuf, LayoutError> {
        let mnt = self.mount_point(index, name);
        for layer in stack.layers().iter().rev() {
            if layers::steps(layer)?.mount(self, index, vol, &mnt)? {
                return Ok(mnt);
            }
        }
        self.make_mount_point(&mnt)?;
        self.push(Owned::Mount { path: mnt.clone() })?;
        self.runner.run(&fs::mount_argv(
            stack.fs(),
            &vol.base,
            &vol.mount_with,
            &mnt,
            stack.mount_options(),
            false,
        ))?;
        Ok(mnt)
    }

    /// Bytes the mounted filesystem offers: the layer that knows better says (btrfs asks
    /// btrfs), `statvfs` otherwise; dry runs say 0.
    pub(super) fn usable_bytes(&self, stack: &Stack, mnt: &Path) -> Result<u64, LayoutError> {
        if self.runner.is_dry_run() {
            return Ok(0);
        }
        for layer in stack.layers().iter().rev() {
            if let Some(bytes) = layers::steps(layer)?.usable_bytes(self, mnt) {
                return bytes;
            }
        }
        Ok(fs::statvfs_bytes(mnt)?.0)
    }
}
