//! Losing members and getting them back: failing one or more members of a built layout
//! (btrfs: detached and mounted `-o degraded`; md: `--fail --remove`), replacing them one after
//! the other (`btrfs replace` then converting what was written while degraded back to the
//! layout's profiles; `mdadm --add` and waiting for recovery), and the layout's own scrub.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::super::LayoutError;
use super::super::scrub::{self, ScrubOutcome};
use super::super::state::Owned;
use super::super::{btrfs, fs, loopdev, mdadm, signature, zfs};
use super::{Built, DiskSource, Session, check_stop};
use crate::stack::{BtrfsProfile, FsKind, RaidLayer, Rebuild};

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
    /// `cache.fail`: what failing the cache device first did (issue 28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_failure: Option<crate::stack::cache::CacheFailure>,
}

impl Session {
    /// Fails one member (the last) and leaves the layout mounted and degraded: btrfs is
    /// unmounted, the member's loop device detached (a real device wiped), and mounted again
    /// with `-o degraded`; md gets `--fail`/`--remove`. With `cache.fail` the cache device
    /// fails first.
    pub fn degrade(&mut self, b: &mut Built) -> Result<DegradeInfo, LayoutError> {
        let cache_failure = self.fail_cache(b)?;
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
        let mnt = b.mount_point.to_string_lossy().into_owned();
        match b.stack.raid() {
            RaidLayer::Btrfs { .. } => {
                // A file closed a moment ago (an io_uring ring being torn down) can keep the
                // mount busy for a few milliseconds: retry before giving up.
                let mut tries = 0;
                while let Err(e) = self.runner.run(&["umount", &mnt]) {
                    tries += 1;
                    if tries >= 20 {
                        return Err(e);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                for (&idx, victim) in idxs.iter().zip(&victims) {
                    let v = victim.to_string_lossy().into_owned();
                    let _ = self
                        .runner
                        .run(&["btrfs", "device", "scan", "--forget", &v]);
                    if let Some(file) = b.backing[idx].clone() {
                        loopdev::detach(&self.runner, victim)?;
                        // The file stays (removed at teardown); no device is attached to it now.
                        if let Some(i) = self.objects.iter().position(
                            |o| matches!(o, Owned::Loop { backing, .. } if *backing == file),
                        ) {
                            self.set(
                                i,
                                Owned::Loop {
                                    backing: file,
                                    dev: None,
                                },
                            )?;
                        }
                    } else {
                        signature::wipe(&self.runner, victim)?;
                    }
                }
                let remaining: Vec<PathBuf> = b
                    .members
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !idxs.contains(i) && !b.failed.contains(i))
                    .map(|(_, d)| d.clone())
                    .collect();
                // From here on the members are gone whether or not the mount works: a refused
                // degraded mount leaves the layout unmounted and degraded.
                b.failed.extend(&idxs);
                b.degraded_at = Some(Instant::now());
                self.runner.run(&fs::mount_argv(
                    FsKind::Btrfs,
                    &remaining[0],
                    &remaining[1..],
                    &b.mount_point,
                    b.stack.mount_options(),
                    true,
                ))?;
                b.fs_device = remaining[0].clone();
            }
            RaidLayer::Md(_) => {
                let md = b.md.clone().ok_or_else(|| {
                    LayoutError::Unexpected(format!("{} has no md array", b.name))
                })?;
                for victim in &victims {
                    self.md_fail(&md, victim)?;
                }
                b.failed.extend(&idxs);
                b.degraded_at = Some(Instant::now());
            }
            RaidLayer::Zfs(_) => {
                let pool = zfs::pool_name(&self.lab_id, b.index);
                for victim in &victims {
                    zfs::degrade(&self.runner, &pool, victim, false)?;
                }
                b.failed.extend(&idxs);
                b.degraded_at = Some(Instant::now());
            }
            RaidLayer::None => unreachable!("tolerated_failures is 0 without RAID"),
        }
        Ok(DegradeInfo {
            failed_member: victims[0].clone(),
            failed_members: victims,
            seconds: t.elapsed().as_secs_f64(),
            cache_failure: None,
        })
    }

    fn md_fail(&mut self, md: &Path, victim: &Path) -> Result<(), LayoutError> {
        if let Err(e) = self.runner.run(&mdadm::fail_remove_argv(md, victim)) {
            // md may still hold the just-failed member for a moment: retry the remove.
            let remove = [
                "mdadm".to_string(),
                md.to_string_lossy().into_owned(),
                "--remove".into(),
                victim.to_string_lossy().into_owned(),
            ];
            for _ in 0..10 {
                std::thread::sleep(Duration::from_millis(200));
                if self.runner.run(&remove).is_ok() {
                    return Ok(());
                }
            }
            return Err(e);
        }
        Ok(())
    }

    /// A fresh disk to replace member `idx`: a new loop disk, the next real device nobody uses
    /// (after the layout's own), or the wiped failed device itself.
    fn replacement(
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
                    !b.members.contains(d) && !b.spares.contains(d) && !taken.contains(d)
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
        match b.stack.raid() {
            RaidLayer::Btrfs { data, metadata } => {
                let (data, metadata) = (*data, *metadata);
                self.rebuild_btrfs(b, disks, &failed, data, metadata)
            }
            RaidLayer::Md(_) => self.rebuild_md(b, disks, &failed),
            RaidLayer::Zfs(z) => {
                let (vdev, width) = (z.vdev, z.width);
                let mut new_members = Vec::new();
                let (seconds, bytes) =
                    self.zfs_resilver(b, vdev, width, &failed, disks, &mut new_members)?;
                Ok(Rebuild {
                    new_member: new_members.first().cloned().unwrap_or_default(),
                    new_members,
                    seconds,
                    bytes,
                    data_verified: false,
                    converted: Vec::new(),
                    balance_seconds: None,
                    retried: Vec::new(),
                })
            }
            RaidLayer::None => unreachable!("a layout without RAID is never degraded"),
        }
    }

    /// btrfs: `btrfs replace` each missing device with a fresh disk, then convert what was
    /// written while degraded back to the layout's profiles.
    fn rebuild_btrfs(
        &mut self,
        b: &mut Built,
        disks: &DiskSource,
        failed: &[usize],
        data: BtrfsProfile,
        metadata: BtrfsProfile,
    ) -> Result<Rebuild, LayoutError> {
        let dry = self.runner.is_dry_run();
        let missing = self.missing_devids(b, failed)?;
        let mut new_members: Vec<PathBuf> = Vec::new();
        let mut total_secs = 0.0;
        let mut total_bytes = 0;
        let mut retried = Vec::new();
        for (&idx, &devid) in failed.iter().zip(&missing) {
            let (new, new_backing) = self.replacement(b, idx, disks, &new_members)?;
            check_stop()?;

            self.push(Owned::Btrfs {
                devices: vec![new.clone()],
            })?;
            total_secs += self.btrfs_replace(b, devid, &new, &mut retried)?;
            if !dry {
                total_bytes += btrfs::show(&self.runner, &b.mount_point)?
                    .iter()
                    .find(|d| d.devid == devid)
                    .map_or(0, |d| d.used);
            }
            b.put_in_place(idx, new.clone(), new_backing);
            new_members.push(new);
        }
        let (converted, balance_seconds) = if dry {
            (Vec::new(), None)
        } else {
            self.convert_degraded_writes(b, data, metadata)?
        };
        Ok(Rebuild {
            new_member: new_members[0].clone(),
            new_members,
            seconds: total_secs,
            bytes: total_bytes,
            data_verified: false,
            converted,
            balance_seconds,
            retried,
        })
    }

    /// The devids btrfs lists as missing, which must be as many as the members failed. Missing
    /// devices keep their devid; the failed members, in order, are the missing devids in order.
    fn missing_devids(&self, b: &Built, failed: &[usize]) -> Result<Vec<u64>, LayoutError> {
        let missing: Vec<u64> = if self.runner.is_dry_run() {
            failed.iter().map(|&i| i as u64 + 1).collect()
        } else {
            btrfs::show(&self.runner, &b.mount_point)?
                .iter()
                .filter(|d| d.path.is_none())
                .map(|d| d.devid)
                .collect()
        };
        if missing.len() != failed.len() {
            return Err(LayoutError::Unexpected(format!(
                "btrfs on {} lists {} missing device{}, {} were failed",
                b.mount_point.display(),
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                failed.len()
            )));
        }
        Ok(missing)
    }

    /// One `btrfs replace` of `devid` by `new`, retried once after packing data block groups
    /// when it finds no space (the first failure is added to `retried`); returns its seconds.
    fn btrfs_replace(
        &mut self,
        b: &Built,
        devid: u64,
        new: &Path,
        retried: &mut Vec<String>,
    ) -> Result<f64, LayoutError> {
        let mnt = b.mount_point.to_string_lossy().into_owned();
        let t = Instant::now();
        let replace = btrfs::replace_argv(devid, new, &b.mount_point);
        let cancel = ["btrfs", "replace", "cancel", mnt.as_str()];
        match self.runner.run_interruptible(&replace, Some(&cancel)) {
            Ok(_) => {}
            // Data block groups the workloads filled stay allocated, mostly empty,
            // after their files are deleted; without unallocated space the
            // replace cannot get the metadata chunk it needs (see
            // `btrfs::reclaim_argv`). Pack them, as an admin would, and try once
            // more; the first failure stays in the report.
            Err(LayoutError::Command { msg, .. }) if msg.contains("No space left on device") => {
                self.runner.run_interruptible(
                    &btrfs::reclaim_argv(&b.mount_point),
                    Some(&["btrfs", "balance", "cancel", mnt.as_str()]),
                )?;
                self.runner.run_interruptible(&replace, Some(&cancel))?;
                retried.push(msg);
            }
            Err(e) => return Err(e),
        }
        Ok(t.elapsed().as_secs_f64())
    }

    /// Writes while degraded went to new `single` block groups, which the replace leaves as
    /// they are: one more failure would lose them. Converts them back, as the btrfs manual
    /// says to after a degraded mount; returns what was converted and the balance's seconds.
    fn convert_degraded_writes(
        &mut self,
        b: &Built,
        data: BtrfsProfile,
        metadata: BtrfsProfile,
    ) -> Result<(Vec<String>, Option<f64>), LayoutError> {
        let mnt = b.mount_point.to_string_lossy().into_owned();
        let df = self
            .runner
            .run(&["btrfs", "filesystem", "df", "-b", mnt.as_str()])?;
        let stray = btrfs::stray_profiles(&btrfs::parse_df(&df.stdout), data, metadata);
        if stray.is_empty() {
            return Ok((Vec::new(), None));
        }
        let converted = stray
            .iter()
            .filter(|d| d.used > 0)
            .map(|d| {
                format!(
                    "{} {} {} used",
                    d.kind,
                    d.profile,
                    crate::units::format_bytes(d.used)
                )
            })
            .collect();
        let t = Instant::now();
        self.runner.run_interruptible(
            &btrfs::balance_convert_argv(data, metadata, &b.mount_point),
            Some(&["btrfs", "balance", "cancel", mnt.as_str()]),
        )?;
        Ok((converted, Some(t.elapsed().as_secs_f64())))
    }

    /// md: `mdadm --add` a fresh disk for each failed member and wait for recovery.
    fn rebuild_md(
        &mut self,
        b: &mut Built,
        disks: &DiskSource,
        failed: &[usize],
    ) -> Result<Rebuild, LayoutError> {
        let md =
            b.md.clone()
                .ok_or_else(|| LayoutError::Unexpected(format!("{} has no md array", b.name)))?;
        // With a hot spare md started recovering at the failure: count from then.
        // The write journal's disk sits with the spares but is none.
        let t = if b.spares.len() <= b.stack.journal_disks() {
            Instant::now()
        } else {
            b.degraded_at.unwrap_or_else(Instant::now)
        };
        let mut new_members: Vec<PathBuf> = Vec::new();
        // Faults armed for this rebuild: md's recovery is held at the first one's point
        // before it starts (md refuses a lower `sync_max` once it runs).
        let holds = self.md_hold_first(&md)?;
        let added = self.md_add_all(b, disks, failed, &md, &mut new_members);
        if let Err(e) = added {
            if !holds.is_empty() {
                let _ = self
                    .runner
                    .write_file(&scrub::md_sysfs(&md, "sync_max"), "max");
            }
            return Err(e);
        }
        if !holds.is_empty() {
            self.md_strike(b, &md, holds);
        }
        mdadm::wait_idle(&self.runner, &md)?;
        let seconds = t.elapsed().as_secs_f64();
        let bytes = mdadm::component_bytes(&md).unwrap_or(0) * new_members.len() as u64;
        Ok(Rebuild {
            new_member: new_members[0].clone(),
            new_members,
            seconds,
            bytes,
            data_verified: false,
            converted: Vec::new(),
            balance_seconds: None,
            retried: Vec::new(),
        })
    }

    /// `mdadm --add`s a fresh disk for each failed member, in place of it.
    fn md_add_all(
        &mut self,
        b: &mut Built,
        disks: &DiskSource,
        failed: &[usize],
        md: &Path,
        new_members: &mut Vec<PathBuf>,
    ) -> Result<(), LayoutError> {
        for &idx in failed {
            let (new, new_backing) = self.replacement(b, idx, disks, new_members)?;
            check_stop()?;
            if new == b.members[idx] {
                let _ = self.runner.run(&mdadm::zero_argv(&new));
            }
            self.runner.run(&mdadm::add_argv(md, &new))?;
            b.put_in_place(idx, new.clone(), new_backing);
            new_members.push(new);
        }
        Ok(())
    }

    /// Runs the layout's own consistency check on a complete (not degraded) layout: md's
    /// `check` action when there is an md array, `btrfs scrub` when the filesystem is btrfs.
    /// `written_under`: the lab wrote garbage onto a member (a `corrupt` fault), so mirrors that
    /// disagree are its doing and count as errors (see [`scrub::md_check`]).
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
        if let Some(md) = &b.md {
            out.push(scrub::md_check(&self.runner, md, written_under)?);
        }
        if b.stack.fs() == FsKind::Btrfs {
            out.push(scrub::btrfs_scrub(&self.runner, &b.mount_point)?);
        }
        if matches!(b.stack.raid(), RaidLayer::Zfs(_)) {
            let pool = zfs::pool_name(&self.lab_id, b.index);
            out.push(zfs_outcome(&zfs::scrub(&self.runner, &pool)?));
        }
        Ok(out)
    }
}

impl Session {
    /// Replaces the failed members of a pool one after the other (`zpool replace`, `zpool wait
    /// -t resilver`); a dRAID resilvers onto its distributed spares while it has them
    /// (`zpool replace -s POOL OLD draidP-0-K`). Returns seconds and bytes resilvered.
    fn zfs_resilver(
        &mut self,
        b: &mut Built,
        vdev: zfs::VdevKind,
        width: usize,
        failed: &[usize],
        disks: &DiskSource,
        new_members: &mut Vec<PathBuf>,
    ) -> Result<(f64, u64), LayoutError> {
        let pool = zfs::pool_name(&self.lab_id, b.index);
        let (mut secs, mut bytes) = (0.0, 0);
        for (k, &idx) in failed.iter().enumerate() {
            let old = b.members[idx].clone();
            let (new, new_backing, sequential) = match vdev {
                zfs::VdevKind::Draid { parity, spares, .. } if (k as u32) < spares => {
                    let vd = idx / width.max(1);
                    (
                        PathBuf::from(zfs::draid_spare_name(parity, vd, k)),
                        None,
                        true,
                    )
                }
                _ => {
                    let (d, f) = self.replacement(b, idx, disks, new_members)?;
                    (d, f, false)
                }
            };
            check_stop()?;
            if new == old {
                let _ = self.runner.run(&zfs::labelclear_argv(&new));
            }
            if !sequential {
                self.zpool_member_added(&pool, &new)?;
            }
            let faults = std::mem::take(&mut self.rebuild_faults);
            let r = if faults.is_empty() {
                zfs::resilver(
                    &self.runner,
                    &pool,
                    &old,
                    &new.to_string_lossy(),
                    sequential,
                )?
            } else {
                self.zfs_resilver_struck(
                    b,
                    &pool,
                    &old,
                    &new.to_string_lossy(),
                    sequential,
                    &faults,
                )?
            };
            secs += r.seconds;
            bytes += r.bytes;
            b.members[idx] = new.clone();
            b.backing[idx] = new_backing;
            b.failed.retain(|&i| i != idx);
            b.replaced += 1;
            new_members.push(new);
        }
        Ok((secs, bytes))
    }
}

impl Session {
    /// Records `dev` as a device of `pool` before it joins it, so teardown clears its label.
    fn zpool_member_added(&mut self, pool: &str, dev: &Path) -> Result<(), LayoutError> {
        let at = self
            .objects
            .iter()
            .position(|o| matches!(o, Owned::Zpool { name, .. } if name == pool));
        if let Some(i) = at {
            if let Owned::Zpool { name, members } = &self.objects[i] {
                if !members.iter().any(|m| m == dev) {
                    let mut members = members.clone();
                    members.push(dev.to_path_buf());
                    let o = Owned::Zpool {
                        name: name.clone(),
                        members,
                    };
                    self.set(i, o)?;
                }
            }
        }
        Ok(())
    }
}

/// A `zpool scrub` in the shape of the other layers' checks: unrepaired errors (the scan
/// line's, or 1 when `errors:` lists damaged files), checksum errors found and repaired.
fn zfs_outcome(s: &zfs::Scrub) -> ScrubOutcome {
    let errors = s.errors.max(s.permanent);
    let counters = [
        ("cksum_errors", s.cksum),
        ("read_errors", s.read),
        ("write_errors", s.write),
        ("repaired_bytes", s.repaired),
        ("errors", s.errors),
        ("permanent_errors", s.permanent),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    ScrubOutcome {
        tool: "zpool scrub".into(),
        errors,
        corrected: if errors == 0 { s.cksum } else { 0 },
        counters,
        note: None,
    }
}

/// Waits (up to 10 s) until md is recovering onto the new member, so a fault lands inside
/// the rebuild rather than before it.
pub(super) fn wait_recovery_started(runner: &super::super::cmd::Runner, md: &Path) {
    if runner.is_dry_run() {
        return;
    }
    let action = scrub::md_sysfs(md, "sync_action");
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let a = std::fs::read_to_string(&action).unwrap_or_default();
        if matches!(a.trim(), "recover" | "resync") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Built {
    /// Puts a replacement in failed member `idx`'s place: it is a member again, no longer
    /// failed, and one more replacement was made.
    fn put_in_place(&mut self, idx: usize, new: PathBuf, backing: Option<PathBuf>) {
        self.members[idx] = new;
        self.backing[idx] = backing;
        self.failed.retain(|&i| i != idx);
        self.replaced += 1;
    }
}
