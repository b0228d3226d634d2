//! Losing members and getting them back: the checks every layout gets (no member failed twice,
//! never more at once than the layout survives), the replacement disk, and the layer that pools
//! the members asked to fail, rebuild and check itself (`md.rs`, `btrfs.rs`, `zfs.rs`); the
//! scrub asks every layer in the stack for its own check, bottom first.

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::super::LayoutError;
use super::super::scrub::ScrubOutcome;
use super::super::signature;
use super::layers;
use super::{Built, DiskSource, Session};
use crate::stack::{Layer, Rebuild};

/// A repair one layer of a layout calls for ([`Session::repair_for`]).
#[derive(Debug, Clone)]
pub struct Repair {
    /// The layer whose repair it is.
    layer: Layer,
    /// The repair's name (`md repair`), for progress and errors.
    pub name: &'static str,
}

/// What degrading did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradeInfo {
    /// The member that was failed (the first, when several were).
    pub failed_member: PathBuf,
    /// Every member failed by this step.
    #[serde(default)]
    pub failed_members: Vec<PathBuf>,
    /// Time to fail it and be mounted again, seconds.
    pub seconds: f64,
    /// `cache.fail`: what failing the cache device first did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_failure: Option<crate::stack::cache::CacheFailure>,
}

impl Session {
    /// Fails one member (the last) and leaves the layout mounted and degraded: btrfs is
    /// unmounted, the member's loop device detached (a real device wiped), and mounted again
    /// with `-o degraded`; md gets `--fail`/`--remove`. With `cache.fail` the cache device
    /// fails first.
    pub fn degrade(&mut self, b: &mut Built) -> Result<DegradeInfo, LayoutError> {
        // A layer that fails its own devices first (`cache.fail`) says what that did.
        let mut cache_failure = None;
        for layer in b.stack.layers().to_vec() {
            if let Some(f) = layers::steps(&layer)?.fail_first(self, b)? {
                cache_failure = Some(f);
            }
        }
        let last = b.members.len().saturating_sub(1);
        let mut d = self.fail_members(b, &[last])?;
        d.cache_failure = cache_failure;
        Ok(d)
    }

    /// Fails the members at `which` (indexes into `members`) on top of any already failed, the
    /// way [`Session::degrade`] fails one. Refused when the layout would lose more members at
    /// once than it survives.
    pub fn fail_members(
        &mut self,
        b: &mut Built,
        which: &[usize],
    ) -> Result<DegradeInfo, LayoutError> {
        let mut idxs: Vec<usize> = which.to_vec();
        idxs.sort_unstable();
        idxs.dedup();
        if idxs.is_empty() || idxs.iter().any(|&i| i >= b.members.len()) {
            return Err(LayoutError::Unexpected(format!(
                "{}: no such member to fail ({which:?} of {})",
                b.name,
                b.members.len()
            )));
        }
        if let Some(i) = idxs.iter().find(|i| b.failed.contains(i)) {
            return Err(LayoutError::Unexpected(format!(
                "{}: {} is already failed",
                b.name,
                b.members[*i].display()
            )));
        }
        let total = b.failed.len() + idxs.len();
        if total > b.stack.tolerated_failures() {
            return Err(LayoutError::Refused(format!(
                "layout {} cannot lose {total} member{} at once ({})",
                b.name,
                if total == 1 { "" } else { "s" },
                b.stack.describe()
            )));
        }
        let t = Instant::now();
        let victims: Vec<PathBuf> = idxs.iter().map(|&i| b.members[i].clone()).collect();
        let pool = pool_layer(b)?;
        layers::steps(&pool)?.fail(self, b, &idxs, &victims)?;
        Ok(DegradeInfo {
            failed_member: victims[0].clone(),
            failed_members: victims,
            seconds: t.elapsed().as_secs_f64(),
            cache_failure: None,
        })
    }

    /// A fresh disk to replace member `idx`: a new loop disk, the next real device nobody uses
    /// (after the layout's own), or the wiped failed device itself — with the stack's layers
    /// under each member made on it (the top device is returned).
    pub(super) fn replacement(
        &mut self,
        b: &mut Built,
        idx: usize,
        disks: &DiskSource,
        taken: &[PathBuf],
    ) -> Result<(PathBuf, Option<PathBuf>), LayoutError> {
        let (disk, backing) = self.replacement_disk(b, idx, disks, taken)?;
        if b.stack.member_layers().is_empty() {
            return Ok((disk, backing));
        }
        if b.under.iter().any(|u| u.disk == disk) {
            // The failed device itself: its old layers still hold it open.
            return Err(LayoutError::Refused(format!(
                "{}: no unused device to replace {} with; the layers under each member need a fresh one (give one more device)",
                b.name,
                b.members[idx].display()
            )));
        }
        let tag = format!("r{idx}-{}", b.replaced);
        let stack = b.stack.clone();
        let u = self.member_stack(&stack, b.index, &tag, &disk, true)?;
        let top = u.top.clone();
        b.under.push(u);
        Ok((top, backing))
    }

    /// The bare disk [`Session::replacement`] puts the member layers on.
    fn replacement_disk(
        &mut self,
        b: &Built,
        idx: usize,
        disks: &DiskSource,
        taken: &[PathBuf],
    ) -> Result<(PathBuf, Option<PathBuf>), LayoutError> {
        match disks {
            DiskSource::Loop {
                dir,
                size,
                direct_io,
            } => {
                let tag = if b.replaced == 0 {
                    format!("{}-r{idx}", b.index)
                } else {
                    format!("{}-r{idx}-{}", b.index, b.replaced)
                };
                let (d, f) = self.loop_disk(dir, *size, *direct_io, &tag)?;
                Ok((d, Some(f)))
            }
            DiskSource::Devices(list) => {
                let unused = list.iter().skip(b.stack.disks()).find(|d| {
                    !b.members.contains(d)
                        && !b.spares.contains(d)
                        && !taken.contains(d)
                        && !b.under.iter().any(|u| &u.disk == *d)
                });
                match unused {
                    Some(d) => {
                        signature::wipe(&self.runner, d)?;
                        Ok((d.clone(), None))
                    }
                    None => Ok((b.members[idx].clone(), None)),
                }
            }
        }
    }

    /// Replaces every failed member with a fresh disk (a new loop disk, the next unused real
    /// device, or the wiped failed device itself), one after the other, and times the rebuild
    /// to completion.
    pub fn rebuild(&mut self, b: &mut Built, disks: &DiskSource) -> Result<Rebuild, LayoutError> {
        if b.failed.is_empty() {
            return Err(LayoutError::Unexpected(format!(
                "{} is not degraded; nothing to rebuild",
                b.name
            )));
        }
        let mut failed = b.failed.clone();
        failed.sort_unstable();
        let pool = pool_layer(b)?;
        layers::steps(&pool)?.rebuild(self, b, disks, &failed)
    }

    /// The repair a layer of `b` calls for after its check said `checked` (`md repair` when
    /// md's check found copies that disagree); `None` when none does.
    pub fn repair_for(&self, b: &Built, checked: &ScrubOutcome) -> Option<Repair> {
        b.stack.layers().iter().find_map(|l| {
            let name = layers::steps(l).ok()?.repair_for(checked)?;
            Some(Repair {
                layer: l.clone(),
                name,
            })
        })
    }

    /// Runs the repair [`Session::repair_for`] found.
    pub fn repair(&mut self, b: &Built, r: &Repair) -> Result<ScrubOutcome, LayoutError> {
        layers::steps(&r.layer)?.repair(self, b)
    }

    /// Runs each layer's own consistency check on a complete (not degraded) layout, bottom
    /// first (md's `check` action, `btrfs scrub`, `zpool scrub`). `written_under`: the lab
    /// wrote garbage onto a member (a `corrupt` fault), so copies that disagree are its doing
    /// and count as errors.
    pub fn scrub(
        &mut self,
        b: &Built,
        written_under: bool,
    ) -> Result<Vec<ScrubOutcome>, LayoutError> {
        if b.is_degraded() {
            return Err(LayoutError::Refused(format!(
                "{} is degraded; scrub it after the rebuild",
                b.name
            )));
        }
        let mut out = Vec::new();
        // Bottom first: md's check before the filesystem's scrub.
        for layer in b.stack.layers() {
            if let Some(o) = layers::steps(layer)?.check(self, b, written_under)? {
                out.push(o);
            }
        }
        Ok(out)
    }
}

impl Built {
    /// Marks the members at `idxs` failed, the layout degraded from now on.
    pub(super) fn mark_failed(&mut self, idxs: &[usize]) {
        self.failed.extend(idxs);
        self.degraded_at = Some(Instant::now());
    }

    /// Puts a replacement in failed member `idx`'s place: it is a member again, no longer
    /// failed, and one more replacement was made.
    pub(super) fn put_in_place(&mut self, idx: usize, new: PathBuf, backing: Option<PathBuf>) {
        self.members[idx] = new;
        self.backing[idx] = backing;
        self.failed.retain(|&i| i != idx);
        self.replaced += 1;
    }
}

/// The layer that pools the members (md, btrfs RAID, ZFS): the one that fails and rebuilds
/// (a copy: its steps then change the layout).
fn pool_layer(b: &Built) -> Result<Layer, LayoutError> {
    b.stack
        .layers()
        .iter()
        .find(|l| layers::steps(l).is_ok_and(|s| s.pools_members()))
        .cloned()
        .ok_or_else(|| {
            LayoutError::Unexpected(format!("{}: no RAID layer to fail or rebuild", b.name))
        })
}
