//! Bringing a layout back after its machine lost power: the RAID layer assembled from the
//! members it was built on (md `--assemble`, which starts a resync or replays the partial
//! parity log; btrfs found from its devices; a ZFS pool imported), LVM activated, the filesystem mounted (its
//! journal or log replayed) — nothing made anew. Every object is recorded before it exists,
//! as for a build, so the layout tears down like any other.

use std::path::PathBuf;
use std::time::Instant;

use super::super::LayoutError;
use super::super::stack::Stack;
use super::layers;
use super::steps::{Made, Volume};
use super::{Built, Session};

/// What a layout left on its disks, as recorded when it was built.
#[derive(Debug, Clone)]
pub struct OnDisk<'a> {
    /// Layout number (names the mount point).
    pub index: usize,
    /// Layout name.
    pub name: &'a str,
    /// The stack.
    pub stack: &'a Stack,
    /// Data members, in order.
    pub members: &'a [PathBuf],
    /// md spares.
    pub spares: &'a [PathBuf],
    /// What the layers named at build (an md array's `--name`, the volume group, the ZFS
    /// pool): each layer finds its own again by it.
    pub made: &'a Made,
}

/// A layout assembled again, and how long each layer took.
#[derive(Debug)]
pub struct Assembled {
    /// The layout, mounted.
    pub built: Built,
    /// Seconds to assemble the RAID layer and activate LVM.
    pub assemble_seconds: f64,
    /// Seconds to mount (journal or log replay).
    pub mount_seconds: f64,
}

impl Session {
    /// Assembles the layout `d` describes from its disks and mounts it. On error everything
    /// started so far is stopped again before the error returns.
    pub fn assemble(&mut self, d: &OnDisk) -> Result<Assembled, LayoutError> {
        let mark = self.objects.len();
        let log_mark = self.runner.log_len();
        match self.assemble_inner(d, mark, log_mark) {
            Ok(a) => Ok(a),
            Err(e) => {
                self.teardown_to(mark);
                Err(e)
            }
        }
    }

    fn assemble_inner(
        &mut self,
        d: &OnDisk,
        mark: usize,
        log_mark: usize,
    ) -> Result<Assembled, LayoutError> {
        let t0 = Instant::now();
        // The layers under each member opened again on its disk (nothing formatted); the
        // pooling layer then finds the members on their top devices.
        let mut under = Vec::new();
        let mut tops: Vec<PathBuf> = d.members.iter().chain(d.spares).cloned().collect();
        if !d.stack.member_layers().is_empty() {
            for (k, disk) in tops.iter_mut().enumerate() {
                let u = self.member_stack(d.stack, d.index, &format!("m{k}"), disk, false)?;
                disk.clone_from(&u.top);
                under.push(u);
            }
        }
        let (top_members, top_spares) = tops.split_at(d.members.len());
        let d = &OnDisk {
            members: top_members,
            spares: top_spares,
            ..d.clone()
        };
        let first = d.members.first().cloned().ok_or_else(|| {
            LayoutError::Unexpected(format!("{}: no members to assemble", d.name))
        })?;
        let mut vol = Volume::on(first, true);
        vol.made = d.made.clone();
        // Each layer in the stack's order, bottom first, from what it left on the one below.
        for layer in d.stack.layers() {
            layers::steps(layer)?.assemble(self, d, &mut vol)?;
        }
        let assemble_seconds = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let mnt = self.mount_volume(d.index, d.name, d.stack, &vol)?;
        let Volume { base, made, .. } = vol;
        let mount_seconds = t1.elapsed().as_secs_f64();
        let usable_bytes = self.usable_bytes(d.stack, &mnt).unwrap_or(0);
        let member_size = d
            .members
            .iter()
            .filter_map(|p| crate::system::BlockDevice::from_path(p).map(|b| b.size_bytes))
            .min()
            .unwrap_or(0);
        Ok(Assembled {
            built: Built {
                name: d.name.to_string(),
                stack: d.stack.clone(),
                members: d.members.to_vec(),
                spares: d.spares.to_vec(),
                layer_disks: Vec::new(),
                backing: vec![None; d.members.len()],
                made,
                fs_device: base,
                mount_point: mnt,
                member_size,
                build_time: t0.elapsed(),
                usable_bytes,
                wrapped: Vec::new(),
                under,
                failed: Vec::new(),
                replaced: 0,
                degraded_at: None,
                mark,
                log_mark,
                index: d.index,
            },
            assemble_seconds,
            mount_seconds,
        })
    }
}
