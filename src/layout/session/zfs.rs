//! ZFS's steps: a pool on the members and its dataset mounted on the layout's mount point; a
//! member failed with `zpool offline` (or its device pulled); replaced one after the other
//! (`zpool replace`, `zpool wait -t resilver`; a dRAID onto its distributed spares while it
//! has them); `zpool scrub` as its check.

use super::super::layer;
use super::super::zfs::{NO_ZFS, Zfs};
use crate::stack::{FsKind, Layer, RaidLayer};
use std::path::{Path, PathBuf};

use super::super::LayoutError;
use super::super::scrub::ScrubOutcome;
use super::super::state::Owned;
use super::super::zfs;
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, DiskSource, OnDisk, Session, check_stop};
use crate::stack::Rebuild;
use crate::stack::zfs::ZfsOptions;

/// A ZFS pool with these options.
pub(super) struct ZfsSteps<'a>(pub &'a ZfsOptions);

/// ZFS's key in [`super::Made`]: the pool's name (a power cut's assembly imports it by it).
const POOL: &str = "zfs.pool";

impl Session {
    /// ZFS's view of `b`'s pool now (`zpool status -p -P -v`); `None` without a pool, in a
    /// dry run, or when zpool does not answer.
    pub fn zpool_status(&self, b: &Built) -> Option<zfs::PoolStatus> {
        if self.runner.is_dry_run() {
            return None;
        }
        let pool = self.zfs_pool(b)?;
        let mut argv = zfs::status_argv(&pool);
        argv.insert(4, "-v".into());
        let out = self.runner.run(&argv).ok()?;
        Some(zfs::parse_status(&out.stdout))
    }

    /// The name of `b`'s ZFS pool (`None` for other layouts).
    pub fn zfs_pool(&self, b: &Built) -> Option<String> {
        b.made.get(POOL).map(str::to_string)
    }
}

impl LayerSteps for ZfsSteps<'_> {
    fn name(&self) -> &'static str {
        "zfs"
    }

    /// The pool and its dataset mounted on the layout's mount point, each recorded before it
    /// is made (`zpool destroy` unmounts the dataset at teardown).
    /// The dataset properties the layout set, as ZFS holds them.
    fn tunables(&self, s: &Session, b: &Built) -> Option<String> {
        let z = self.0;
        if z.dataset.is_empty() {
            return None;
        }
        let ds = zfs::dataset_name(&s.zfs_pool(b)?);
        let keys: Vec<&str> = z.dataset.iter().map(|(k, _)| k.as_str()).collect();
        let out = s
            .runner
            .run(&[
                "zfs",
                "get",
                "-H",
                "-o",
                "property,value",
                &keys.join(","),
                &ds,
            ])
            .ok()?;
        let pairs: Vec<String> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| format!("{k} {}", v.trim()))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join(", "))
    }

    fn pools_members(&self) -> bool {
        true
    }

    /// The ARC capped while the layout is measured (it is shared with the host's other
    /// pools, so it is put back after).
    fn cap_cache(&self, s: &Session) -> Option<Result<String, LayoutError>> {
        Some(zfs::cap_arc(&s.runner))
    }

    fn restore_cache(&self, s: &Session, prev: &str) -> Result<(), LayoutError> {
        zfs::set_arc_max_text(&s.runner, prev)
    }

    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        let mnt = s.mount_point(on.index, on.name);
        s.make_mount_point(&mnt)?;
        let pool = zfs::pool_name(&s.lab_id, on.index);
        s.push(Owned::Zpool {
            name: pool.clone(),
            members: on.devs.to_vec(),
        })?;
        zfs::build(&s.runner, &pool, self.0, on.devs, &mnt)?;
        vol.made.set(POOL, pool);
        vol.mkfs_done = true;
        vol.mounted = Some(mnt);
        Ok(())
    }

    /// The pool owns its dataset's mount: made with the pool at build; after an import under
    /// this session's name, mounted here (`zpool destroy` unmounts it at teardown).
    fn mount(
        &self,
        s: &mut Session,
        index: usize,
        vol: &Volume,
        mnt: &Path,
    ) -> Result<bool, LayoutError> {
        if vol.mounted.is_none() {
            s.make_mount_point(mnt)?;
            zfs::mount_at(&s.runner, &zfs::pool_name(&s.lab_id, index), mnt)?;
        }
        Ok(true)
    }

    /// The pool imported under this session's name (its dataset is mounted with the rest).
    fn assemble(
        &self,
        s: &mut Session,
        d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        let pool = d.made.get(POOL).ok_or_else(|| {
            LayoutError::Unexpected(format!("{}: the ZFS pool's name is unknown", d.name))
        })?;
        let ours = zfs::pool_name(&s.lab_id, d.index);
        s.push(Owned::Zpool {
            name: ours.clone(),
            members: d.members.iter().chain(d.spares).cloned().collect(),
        })?;
        s.runner.run(&zfs::import_argv(pool, &ours))?;
        vol.made.set(POOL, ours);
        Ok(())
    }

    fn fail(
        &self,
        s: &mut Session,
        b: &mut Built,
        idxs: &[usize],
        victims: &[PathBuf],
    ) -> Result<(), LayoutError> {
        let pool = zfs::pool_name(&s.lab_id, b.index);
        for victim in victims {
            zfs::degrade(&s.runner, &pool, victim, false)?;
        }
        b.mark_failed(idxs);
        Ok(())
    }

    fn rebuild(
        &self,
        s: &mut Session,
        b: &mut Built,
        disks: &DiskSource,
        failed: &[usize],
    ) -> Result<Rebuild, LayoutError> {
        let mut new_members = Vec::new();
        let (seconds, bytes) = self.resilver(s, b, failed, disks, &mut new_members)?;
        Ok(Rebuild::onto(new_members, seconds, bytes))
    }

    fn check(
        &self,
        s: &mut Session,
        b: &Built,
        _written_under: bool,
    ) -> Result<Option<ScrubOutcome>, LayoutError> {
        let pool = zfs::pool_name(&s.lab_id, b.index);
        Ok(Some(outcome(&zfs::scrub(&s.runner, &pool)?)))
    }
}

impl ZfsSteps<'_> {
    /// Replaces the failed members one after the other; returns seconds and bytes resilvered.
    fn resilver(
        &self,
        s: &mut Session,
        b: &mut Built,
        failed: &[usize],
        disks: &DiskSource,
        new_members: &mut Vec<PathBuf>,
    ) -> Result<(f64, u64), LayoutError> {
        let (vdev, width) = (self.0.vdev, self.0.width);
        let pool = zfs::pool_name(&s.lab_id, b.index);
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
                    let (d, f) = s.replacement(b, idx, disks, new_members)?;
                    (d, f, false)
                }
            };
            check_stop()?;
            if new == old {
                let _ = s.runner.run(&zfs::labelclear_argv(&new));
            }
            if !sequential {
                member_added(s, &pool, &new)?;
            }
            let faults = std::mem::take(&mut s.rebuild_faults);
            let r = if faults.is_empty() {
                zfs::resilver(&s.runner, &pool, &old, &new.to_string_lossy(), sequential)?
            } else {
                s.zfs_resilver_struck(b, &pool, &old, &new.to_string_lossy(), sequential, &faults)?
            };
            secs += r.seconds;
            bytes += r.bytes;
            b.put_in_place(idx, new.clone(), new_backing);
            new_members.push(new);
        }
        Ok((secs, bytes))
    }
}

/// Records `dev` as a device of `pool` before it joins it, so teardown clears its label.
fn member_added(s: &mut Session, pool: &str, dev: &Path) -> Result<(), LayoutError> {
    let at = s
        .objects
        .iter()
        .position(|o| matches!(o, Owned::Zpool { name, .. } if name == pool));
    if let Some(i) = at {
        if let Owned::Zpool { name, members } = &s.objects[i] {
            if !members.iter().any(|m| m == dev) {
                let mut members = members.clone();
                members.push(dev.to_path_buf());
                let o = Owned::Zpool {
                    name: name.clone(),
                    members,
                };
                s.set(i, o)?;
            }
        }
    }
    Ok(())
}

/// A `zpool scrub` in the shape of the other layers' checks: unrepaired errors (the scan
/// line's, or 1 when `errors:` lists damaged files), checksum errors found and repaired.
fn outcome(s: &zfs::Scrub) -> ScrubOutcome {
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

impl StorageLayer for Zfs {
    fn name(&self) -> &'static str {
        "zfs"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        match layer {
            Layer::Raid(RaidLayer::Zfs(z)) => Some(Box::new(ZfsSteps(z))),
            // The pool made its filesystem: the fs layer's steps mount nothing and make nothing.
            Layer::Fs(f) if f.kind == FsKind::Zfs => Some(Box::new(super::fs::FsSteps(f))),
            _ => None,
        }
    }

    /// The reason a zfs layout is `unavailable here: no zfs module; run with --vm` (the
    /// running kernel has no zfs module loaded or installed), or that zpool/zfs are missing.
    fn detect(&self) -> Result<(), String> {
        let loaded = Path::new("/sys/module/zfs").exists();
        if !loaded && !layer::kernel_module("/zfs.ko") {
            return Err(NO_ZFS.into());
        }
        layer::tools(&["zpool", "zfs"], "zfsutils-linux")
    }
}
