//! btrfs RAID's steps: one filesystem made across the members; a member failed by unmounting,
//! detaching it (a real device: wiping it) and mounting `-o degraded`; replaced with `btrfs
//! replace`, then what was written while degraded converted back to the layout's profiles.
//! (Its check, `btrfs scrub`, belongs to the filesystem: see `fs.rs`.)

use super::super::btrfs::Btrfs;
use super::super::layer::{self, GuestTool};
use crate::stack::{FsKind, Layer, RaidLayer};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::super::LayoutError;
use super::super::state::Owned;
use super::super::{btrfs, fs, loopdev, signature};
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, DiskSource, OnDisk, Session, check_stop};
use crate::stack::{BtrfsProfile, Rebuild};

/// A btrfs RAID with these profiles.
pub(super) struct BtrfsSteps {
    /// Data profile.
    pub data: BtrfsProfile,
    /// Metadata profile.
    pub metadata: BtrfsProfile,
}

impl Session {
    /// btrfs's error counters of a btrfs layout (`None` for other layouts, dry runs, or when
    /// btrfs does not answer).
    pub fn btrfs_stats(&self, b: &Built) -> Option<Vec<btrfs::DevStats>> {
        if self.runner.is_dry_run() || b.stack.fs() != FsKind::Btrfs {
            return None;
        }
        btrfs::device_stats(&self.runner, &b.mount_point).ok()
    }
}

impl LayerSteps for BtrfsSteps {
    fn name(&self) -> &'static str {
        "btrfs"
    }

    /// mkfs.btrfs across the members: the filesystem is made with the RAID.
    fn pools_members(&self) -> bool {
        true
    }

    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        s.push(Owned::Btrfs {
            devices: on.members.to_vec(),
        })?;
        let argv = btrfs::mkfs_argv(
            self.data,
            self.metadata,
            on.stack.mkfs_options(),
            on.members,
        );
        s.runner.run_interruptible(&argv, None::<&[&str]>)?;
        vol.mkfs_done = true;
        vol.mount_with = on.members[1..].to_vec();
        Ok(())
    }

    /// Nothing to assemble: the kernel finds the filesystem from its devices at the mount,
    /// which names the other members (and the devices are journalled for teardown again).
    fn assemble(
        &self,
        s: &mut Session,
        d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        s.push(Owned::Btrfs {
            devices: d.members.to_vec(),
        })?;
        vol.mount_with = d.members[1..].to_vec();
        Ok(())
    }

    fn fail(
        &self,
        s: &mut Session,
        b: &mut Built,
        idxs: &[usize],
        victims: &[PathBuf],
    ) -> Result<(), LayoutError> {
        let mnt = b.mount_point.to_string_lossy().into_owned();
        // A file closed a moment ago (an io_uring ring being torn down) can keep the mount
        // busy for a few milliseconds: retry before giving up.
        let mut tries = 0;
        while let Err(e) = s.runner.run(&["umount", &mnt]) {
            tries += 1;
            if tries >= 20 {
                return Err(e);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        for (&idx, victim) in idxs.iter().zip(victims) {
            let v = victim.to_string_lossy().into_owned();
            let _ = s.runner.run(&["btrfs", "device", "scan", "--forget", &v]);
            if let Some(file) = b.backing[idx].clone() {
                loopdev::detach(&s.runner, victim)?;
                // The file stays (removed at teardown); no device is attached to it now.
                if let Some(i) = s
                    .objects
                    .iter()
                    .position(|o| matches!(o, Owned::Loop { backing, .. } if *backing == file))
                {
                    s.set(
                        i,
                        Owned::Loop {
                            backing: file,
                            dev: None,
                        },
                    )?;
                }
            } else {
                signature::wipe(&s.runner, victim)?;
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
        b.mark_failed(idxs);
        s.runner.run(&fs::mount_argv(
            FsKind::Btrfs,
            &remaining[0],
            &remaining[1..],
            &b.mount_point,
            b.stack.mount_options(),
            true,
        ))?;
        b.fs_device = remaining[0].clone();
        Ok(())
    }

    /// `btrfs replace` each missing device with a fresh disk, then convert what was written
    /// while degraded back to the layout's profiles.
    fn rebuild(
        &self,
        s: &mut Session,
        b: &mut Built,
        disks: &DiskSource,
        failed: &[usize],
    ) -> Result<Rebuild, LayoutError> {
        let dry = s.runner.is_dry_run();
        let missing = missing_devids(s, b, failed)?;
        let mut new_members: Vec<PathBuf> = Vec::new();
        let mut total_secs = 0.0;
        let mut total_bytes = 0;
        let mut retried = Vec::new();
        for (&idx, &devid) in failed.iter().zip(&missing) {
            let (new, new_backing) = s.replacement(b, idx, disks, &new_members)?;
            check_stop()?;

            s.push(Owned::Btrfs {
                devices: vec![new.clone()],
            })?;
            total_secs += replace(s, b, devid, &new, &mut retried)?;
            if !dry {
                total_bytes += btrfs::show(&s.runner, &b.mount_point)?
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
            self.convert_degraded_writes(s, b)?
        };
        Ok(Rebuild {
            converted,
            balance_seconds,
            retried,
            ..Rebuild::onto(new_members, total_secs, total_bytes)
        })
    }
}

impl BtrfsSteps {
    /// Writes while degraded went to new `single` block groups, which the replace leaves as
    /// they are: one more failure would lose them. Converts them back, as the btrfs manual
    /// says to after a degraded mount; returns what was converted and the balance's seconds.
    fn convert_degraded_writes(
        &self,
        s: &mut Session,
        b: &Built,
    ) -> Result<(Vec<String>, Option<f64>), LayoutError> {
        let mnt = b.mount_point.to_string_lossy().into_owned();
        let df = s
            .runner
            .run(&["btrfs", "filesystem", "df", "-b", mnt.as_str()])?;
        let stray = btrfs::stray_profiles(&btrfs::parse_df(&df.stdout), self.data, self.metadata);
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
        s.runner.run_interruptible(
            &btrfs::balance_convert_argv(self.data, self.metadata, &b.mount_point),
            Some(&["btrfs", "balance", "cancel", mnt.as_str()]),
        )?;
        Ok((converted, Some(t.elapsed().as_secs_f64())))
    }
}

/// The devids btrfs lists as missing, which must be as many as the members failed. Missing
/// devices keep their devid; the failed members, in order, are the missing devids in order.
fn missing_devids(s: &Session, b: &Built, failed: &[usize]) -> Result<Vec<u64>, LayoutError> {
    let missing: Vec<u64> = if s.runner.is_dry_run() {
        failed.iter().map(|&i| i as u64 + 1).collect()
    } else {
        btrfs::show(&s.runner, &b.mount_point)?
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
fn replace(
    s: &mut Session,
    b: &Built,
    devid: u64,
    new: &Path,
    retried: &mut Vec<String>,
) -> Result<f64, LayoutError> {
    let mnt = b.mount_point.to_string_lossy().into_owned();
    let t = Instant::now();
    let replace = btrfs::replace_argv(devid, new, &b.mount_point);
    let cancel = ["btrfs", "replace", "cancel", mnt.as_str()];
    match s.runner.run_interruptible(&replace, Some(&cancel)) {
        Ok(_) => {}
        // Data block groups the workloads filled stay allocated, mostly empty, after their
        // files are deleted; without unallocated space the replace cannot get the metadata
        // chunk it needs (see `btrfs::reclaim_argv`). Pack them, as an admin would, and try
        // once more; the first failure stays in the report.
        Err(LayoutError::Command { msg, .. }) if msg.contains("No space left on device") => {
            s.runner.run_interruptible(
                &btrfs::reclaim_argv(&b.mount_point),
                Some(&["btrfs", "balance", "cancel", mnt.as_str()]),
            )?;
            s.runner.run_interruptible(&replace, Some(&cancel))?;
            retried.push(msg);
        }
        Err(e) => return Err(e),
    }
    Ok(t.elapsed().as_secs_f64())
}

impl StorageLayer for Btrfs {
    fn name(&self) -> &'static str {
        "btrfs"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        match layer {
            Layer::Raid(RaidLayer::Btrfs { data, metadata }) => Some(Box::new(BtrfsSteps {
                data: *data,
                metadata: *metadata,
            })),
            Layer::Fs(f) if f.kind == FsKind::Btrfs => Some(Box::new(super::fs::FsSteps(f))),
            _ => None,
        }
    }

    fn detect(&self) -> Result<(), String> {
        layer::filesystem("btrfs", &["mkfs.btrfs", "btrfs"], "btrfs-progs")
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        &["btrfs"]
    }

    fn vm_tools(&self) -> &'static [GuestTool] {
        &[
            GuestTool {
                name: "mkfs.btrfs",
                package: "btrfs-progs",
                required: true,
            },
            GuestTool {
                name: "btrfs",
                package: "btrfs-progs",
                required: true,
            },
        ]
    }
}
