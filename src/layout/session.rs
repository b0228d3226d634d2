//! One lab's building session: it owns the command runner and the state file, builds stacks on
//! loop disks or real devices, degrades and rebuilds them, and tears down everything it made —
//! explicitly after each layout, and again on drop (errors, panics, Ctrl-C).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::LayoutError;
use super::cmd::Runner;
use super::scrub::{self, ScrubOutcome};
use super::stack::{FsKind, RaidLayer, Stack};
use super::state::{Owned, StateFile};
use super::{btrfs, fs, loopdev, lvm, mdadm, signature};

/// Where a layout's disks come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskSource {
    /// Fresh sparse files in `dir`, `size` bytes each, attached as loop devices for each layout.
    Loop {
        /// Directory of the backing files (made if missing, removed after if we made it).
        dir: PathBuf,
        /// Size of each disk, bytes.
        size: u64,
        /// Attach with `--direct-io=on` (the backing filesystem takes O_DIRECT).
        direct_io: bool,
    },
    /// Real devices the user handed over with `--destroy`; each layout takes them from the front
    /// and a rebuild takes the next unused one.
    Devices(Vec<PathBuf>),
}

impl DiskSource {
    /// True for loop disks.
    pub fn is_loop(&self) -> bool {
        matches!(self, DiskSource::Loop { .. })
    }
}

/// A built, mounted layout.
#[derive(Debug)]
pub struct Built {
    /// Layout name.
    pub name: String,
    /// What was built.
    pub stack: Stack,
    /// Data members in order (md raid devices, btrfs devices, the one disk).
    pub members: Vec<PathBuf>,
    /// md spares.
    pub spares: Vec<PathBuf>,
    /// Backing files of loop members (same order as `members`).
    backing: Vec<Option<PathBuf>>,
    /// The md array, when there is one.
    pub md: Option<PathBuf>,
    /// The LVM volume group, when there is one.
    pub vg: Option<String>,
    /// The device mkfs ran on (first member for btrfs RAID).
    pub fs_device: PathBuf,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Size of one member, bytes.
    pub member_size: u64,
    /// Time from the first command to mounted (md resync included).
    pub build_time: Duration,
    /// Usable bytes as the filesystem reports them right after mkfs.
    pub usable_bytes: u64,
    /// Indexes in `members` of the failed members while degraded.
    failed: Vec<usize>,
    /// Members replaced so far (names the next replacement's backing file).
    replaced: usize,
    degraded_at: Option<Instant>,
    mark: usize,
    log_mark: usize,
    index: usize,
}

impl Built {
    /// The commands run for this layout so far.
    pub fn commands(&self, runner: &Runner) -> Vec<String> {
        runner.log_since(self.log_mark)
    }

    /// True while a member is failed.
    pub fn is_degraded(&self) -> bool {
        !self.failed.is_empty()
    }

    /// The members failed now (their paths as they were before failing).
    pub fn failed_members(&self) -> Vec<PathBuf> {
        self.failed
            .iter()
            .map(|&i| self.members[i].clone())
            .collect()
    }

    /// Backing files of loop members, in the order of `members` (`None` for real devices) —
    /// what a test damages to check that the lab notices.
    pub fn backing_files(&self) -> &[Option<PathBuf>] {
        &self.backing
    }
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
}

/// What rebuilding did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebuildInfo {
    /// The device that replaced the failed member (the first, when several were replaced).
    pub new_member: PathBuf,
    /// Every device that replaced a failed member, in the order of the failed members.
    #[serde(default)]
    pub new_members: Vec<PathBuf>,
    /// Time to rebuild to completion, seconds (md with a spare: from the failure).
    pub seconds: f64,
    /// Bytes written to the new members: btrfs' allocated chunks on them, md's component size
    /// per member.
    pub bytes: u64,
    /// btrfs block groups holding data that were not in the layout's profiles after the
    /// replace (written while degraded, as `single`), converted back by a balance:
    /// `System single 16KiB used`.
    #[serde(default)]
    pub converted: Vec<String>,
    /// Seconds that balance took.
    #[serde(default)]
    pub balance_seconds: Option<f64>,
    /// Replaces that first failed with ENOSPC and worked after the half-empty data block
    /// groups were packed (`btrfs balance start -dusage=50`): the first failure's message.
    #[serde(default)]
    pub retried: Vec<String>,
}

/// A lab's building session.
#[derive(Debug)]
pub struct Session {
    runner: Runner,
    state: Option<StateFile>,
    objects: Vec<Owned>,
    lab_id: String,
    mount_base: PathBuf,
}

fn check_stop() -> Result<(), LayoutError> {
    if crate::signals::stop_requested() {
        Err(LayoutError::Interrupted)
    } else {
        Ok(())
    }
}

impl Session {
    /// Starts a session. With `state_dir` the state file is written now, before anything is
    /// touched; without it (dry runs) nothing is recorded on disk.
    pub fn new(
        runner: Runner,
        lab_id: &str,
        state_dir: Option<&Path>,
        spec: &str,
    ) -> Result<Session, LayoutError> {
        let state = match state_dir {
            Some(d) if !runner.is_dry_run() => Some(StateFile::create(d, lab_id, spec)?),
            _ => None,
        };
        Ok(Session {
            runner,
            state,
            objects: Vec::new(),
            lab_id: lab_id.to_string(),
            mount_base: std::env::temp_dir(),
        })
    }

    /// Makes mount points under `dir` instead of the system temp dir.
    pub fn with_mount_base(mut self, dir: PathBuf) -> Session {
        self.mount_base = dir;
        self
    }

    /// The lab id.
    pub fn lab_id(&self) -> &str {
        &self.lab_id
    }

    /// The command runner (its log holds every command so far).
    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    /// The state file's path, when there is one.
    pub fn state_path(&self) -> Option<&Path> {
        self.state.as_ref().map(StateFile::path)
    }

    /// Objects currently owned, in creation order.
    pub fn objects(&self) -> &[Owned] {
        &self.objects
    }

    fn save(&mut self) -> Result<(), LayoutError> {
        if let Some(sf) = &mut self.state {
            sf.state.objects = self.objects.clone();
            sf.save()?;
        }
        Ok(())
    }

    /// Records an object before it is created.
    fn push(&mut self, o: Owned) -> Result<usize, LayoutError> {
        self.objects.push(o);
        self.save()?;
        Ok(self.objects.len() - 1)
    }

    fn set(&mut self, i: usize, o: Owned) -> Result<(), LayoutError> {
        self.objects[i] = o;
        self.save()
    }

    /// Makes `dir` (and records it) when it does not exist yet; a directory that already
    /// existed is left alone at teardown.
    pub fn ensure_dir(&mut self, dir: &Path) -> Result<(), LayoutError> {
        if self.runner.is_dry_run() || dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            if !parent.as_os_str().is_empty() && !parent.is_dir() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| LayoutError::io("cannot create directory", parent, e))?;
            }
        }
        self.push(Owned::Dir {
            path: dir.to_path_buf(),
        })?;
        std::fs::create_dir(dir).map_err(|e| LayoutError::io("cannot create directory", dir, e))
    }

    /// Creates one loop disk: records, then creates, the backing file, then attaches it.
    fn loop_disk(
        &mut self,
        dir: &Path,
        size: u64,
        direct_io: bool,
        tag: &str,
    ) -> Result<(PathBuf, PathBuf), LayoutError> {
        let backing = dir.join(format!("iolab-{}-{tag}.img", self.lab_id));
        self.push(Owned::BackingFile {
            path: backing.clone(),
        })?;
        if !self.runner.is_dry_run() {
            loopdev::create_backing(&backing, size)?;
        }
        let i = self.push(Owned::Loop {
            backing: backing.clone(),
            dev: None,
        })?;
        let dev = loopdev::attach(&self.runner, &backing, direct_io)?;
        self.set(
            i,
            Owned::Loop {
                backing: backing.clone(),
                dev: Some(dev.clone()),
            },
        )?;
        Ok((dev, backing))
    }

    /// Builds `stack` for layout number `index` and mounts it in a private directory. On error
    /// everything made so far for it is torn down before the error returns.
    pub fn build(
        &mut self,
        index: usize,
        name: &str,
        stack: &Stack,
        disks: &DiskSource,
    ) -> Result<Built, LayoutError> {
        let mark = self.objects.len();
        let log_mark = self.runner.log_len();
        match self.build_inner(index, name, stack, disks, mark, log_mark) {
            Ok(b) => Ok(b),
            Err(e) => {
                self.teardown_to(mark);
                Err(e)
            }
        }
    }

    fn build_inner(
        &mut self,
        index: usize,
        name: &str,
        stack: &Stack,
        disks: &DiskSource,
        mark: usize,
        log_mark: usize,
    ) -> Result<Built, LayoutError> {
        let t0 = Instant::now();
        let dry = self.runner.is_dry_run();
        let need = stack.disks();
        let mut devs = Vec::new();
        let mut backing = Vec::new();
        let member_size;
        match disks {
            DiskSource::Loop {
                dir,
                size,
                direct_io,
            } => {
                member_size = *size;
                for k in 0..need {
                    check_stop()?;
                    let (d, b) = self.loop_disk(dir, *size, *direct_io, &format!("{index}-{k}"))?;
                    devs.push(d);
                    backing.push(Some(b));
                }
            }
            DiskSource::Devices(list) => {
                if list.len() < need {
                    return Err(LayoutError::Refused(format!(
                        "layout {name} needs {need} devices, {} given",
                        list.len()
                    )));
                }
                devs = list[..need].to_vec();
                backing = vec![None; need];
                member_size = devs
                    .iter()
                    .map(|d| crate::system::BlockDevice::from_path(d).map_or(0, |b| b.size_bytes))
                    .min()
                    .unwrap_or(0);
                for d in &devs {
                    if !dry {
                        signature::check_device(&self.runner, d, true)?;
                    }
                    signature::wipe(&self.runner, d)?;
                }
            }
        }
        let members: Vec<PathBuf> = devs[..stack.members].to_vec();
        let spares: Vec<PathBuf> = devs[stack.members..].to_vec();
        check_stop()?;
        let mut md = None;
        let mut vg = None;
        let mut base: PathBuf = members[0].clone();
        let mut mkfs_done = false;
        match &stack.raid {
            RaidLayer::None => {}
            RaidLayer::Btrfs { data, metadata } => {
                self.push(Owned::Btrfs {
                    devices: members.clone(),
                })?;
                let argv = btrfs::mkfs_argv(*data, *metadata, &stack.mkfs_options, &members);
                self.runner.run_interruptible(&argv, None::<&[&str]>)?;
                mkfs_done = true;
            }
            RaidLayer::Md(o) => {
                let dev = mdadm::free_device();
                let md_name = format!("iolab-{}-{index}", self.lab_id);
                self.push(Owned::Md {
                    dev: dev.clone(),
                    name: md_name.clone(),
                    members: devs.clone(),
                })?;
                self.runner
                    .run(&mdadm::create_argv(&dev, &md_name, o, &members, &spares))?;
                mdadm::wait_idle(&self.runner, &dev)?;
                base = dev.clone();
                md = Some(dev);
            }
        }
        check_stop()?;
        if stack.lvm {
            let name = format!("iolab_{}_{index}", self.lab_id);
            self.push(Owned::Vg {
                name: name.clone(),
                pvs: vec![base.clone()],
            })?;
            base = lvm::create(&self.runner, &name, &base)?;
            vg = Some(name);
        }
        check_stop()?;
        if !mkfs_done {
            if stack.fs == FsKind::Btrfs {
                self.push(Owned::Btrfs {
                    devices: vec![base.clone()],
                })?;
            }
            let argv = fs::mkfs_argv(stack.fs, &stack.mkfs_options, &base);
            self.runner.run_interruptible(&argv, None::<&[&str]>)?;
        }
        check_stop()?;
        let mnt = self
            .mount_base
            .join(format!("iolab-{}-{index}-{name}", self.lab_id));
        self.push(Owned::Dir { path: mnt.clone() })?;
        if !dry {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&mnt)
                .map_err(|e| LayoutError::io("cannot create mount point", &mnt, e))?;
        }
        self.push(Owned::Mount { path: mnt.clone() })?;
        let others: Vec<PathBuf> = if matches!(stack.raid, RaidLayer::Btrfs { .. }) {
            members[1..].to_vec()
        } else {
            Vec::new()
        };
        self.runner.run(&fs::mount_argv(
            stack.fs,
            &base,
            &others,
            &mnt,
            &stack.mount_options,
            false,
        ))?;
        let build_time = t0.elapsed();
        let usable_bytes = if dry {
            0
        } else if stack.fs == FsKind::Btrfs {
            btrfs::usable_bytes(&self.runner, &mnt)?
        } else {
            fs::statvfs_bytes(&mnt)?.0
        };
        Ok(Built {
            name: name.to_string(),
            stack: stack.clone(),
            members,
            spares,
            backing,
            md,
            vg,
            fs_device: base,
            mount_point: mnt,
            member_size,
            build_time,
            usable_bytes,
            failed: Vec::new(),
            replaced: 0,
            degraded_at: None,
            mark,
            log_mark,
            index,
        })
    }

    /// Fails one member (the last) and leaves the layout mounted and degraded: btrfs is
    /// unmounted, the member's loop device detached (a real device wiped), and mounted again
    /// with `-o degraded`; md gets `--fail`/`--remove`.
    pub fn degrade(&mut self, b: &mut Built) -> Result<DegradeInfo, LayoutError> {
        let last = b.members.len().saturating_sub(1);
        self.fail_members(b, &[last])
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
        match &b.stack.raid {
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
                    &b.stack.mount_options,
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
            RaidLayer::None => unreachable!("tolerated_failures is 0 without RAID"),
        }
        Ok(DegradeInfo {
            failed_member: victims[0].clone(),
            failed_members: victims,
            seconds: t.elapsed().as_secs_f64(),
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
    pub fn rebuild(
        &mut self,
        b: &mut Built,
        disks: &DiskSource,
    ) -> Result<RebuildInfo, LayoutError> {
        if b.failed.is_empty() {
            return Err(LayoutError::Unexpected(format!(
                "{} is not degraded; nothing to rebuild",
                b.name
            )));
        }
        let mut failed = b.failed.clone();
        failed.sort_unstable();
        let dry = self.runner.is_dry_run();
        let mut new_members: Vec<PathBuf> = Vec::new();
        let mut total_secs = 0.0;
        let mut total_bytes = 0;
        let mut converted = Vec::new();
        let mut balance_seconds = None;
        let mut retried = Vec::new();
        match &b.stack.raid {
            RaidLayer::Btrfs { data, metadata } => {
                let (data, metadata) = (*data, *metadata);
                // Missing devices keep their devid; the failed members, in order, are the
                // missing devids in order.
                let missing: Vec<u64> = if dry {
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
                for (&idx, &devid) in failed.iter().zip(&missing) {
                    let (new, new_backing) = self.replacement(b, idx, disks, &new_members)?;
                    check_stop()?;

                    self.push(Owned::Btrfs {
                        devices: vec![new.clone()],
                    })?;
                    let mnt = b.mount_point.to_string_lossy().into_owned();
                    let t = Instant::now();
                    let replace = btrfs::replace_argv(devid, &new, &b.mount_point);
                    let cancel = ["btrfs", "replace", "cancel", mnt.as_str()];
                    match self.runner.run_interruptible(&replace, Some(&cancel)) {
                        Ok(_) => {}
                        // Data block groups the workloads filled stay allocated, mostly empty,
                        // after their files are deleted; without unallocated space the
                        // replace cannot get the metadata chunk it needs (see
                        // `btrfs::reclaim_argv`). Pack them, as an admin would, and try once
                        // more; the first failure stays in the report.
                        Err(LayoutError::Command { msg, .. })
                            if msg.contains("No space left on device") =>
                        {
                            self.runner.run_interruptible(
                                &btrfs::reclaim_argv(&b.mount_point),
                                Some(&["btrfs", "balance", "cancel", mnt.as_str()]),
                            )?;
                            self.runner.run_interruptible(&replace, Some(&cancel))?;
                            retried.push(msg);
                        }
                        Err(e) => return Err(e),
                    }
                    total_secs += t.elapsed().as_secs_f64();
                    if !dry {
                        total_bytes += btrfs::show(&self.runner, &b.mount_point)?
                            .iter()
                            .find(|d| d.devid == devid)
                            .map_or(0, |d| d.used);
                    }
                    b.members[idx] = new.clone();
                    b.backing[idx] = new_backing;
                    b.failed.retain(|&i| i != idx);
                    b.replaced += 1;
                    new_members.push(new);
                }
                // Writes while degraded went to new `single` block groups, which the replace
                // leaves as they are: one more failure would lose them. Convert them back, as
                // the btrfs manual says to after a degraded mount.
                if !dry {
                    let mnt = b.mount_point.to_string_lossy().into_owned();
                    let df = self
                        .runner
                        .run(&["btrfs", "filesystem", "df", "-b", mnt.as_str()])?;
                    let stray = btrfs::stray_profiles(&btrfs::parse_df(&df.stdout), data, metadata);
                    if !stray.is_empty() {
                        converted = stray
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
                        balance_seconds = Some(t.elapsed().as_secs_f64());
                    }
                }
            }
            RaidLayer::Md(_) => {
                let md = b.md.clone().ok_or_else(|| {
                    LayoutError::Unexpected(format!("{} has no md array", b.name))
                })?;
                // With a hot spare md started recovering at the failure: count from then.
                let t = if b.spares.is_empty() {
                    Instant::now()
                } else {
                    b.degraded_at.unwrap_or_else(Instant::now)
                };
                for &idx in &failed {
                    let (new, new_backing) = self.replacement(b, idx, disks, &new_members)?;
                    check_stop()?;
                    if new == b.members[idx] {
                        let _ = self.runner.run(&mdadm::zero_argv(&new));
                    }
                    self.runner.run(&mdadm::add_argv(&md, &new))?;
                    b.members[idx] = new.clone();
                    b.backing[idx] = new_backing;
                    b.failed.retain(|&i| i != idx);
                    b.replaced += 1;
                    new_members.push(new);
                }
                mdadm::wait_idle(&self.runner, &md)?;
                total_secs = t.elapsed().as_secs_f64();
                total_bytes = mdadm::component_bytes(&md).unwrap_or(0) * new_members.len() as u64;
            }
            RaidLayer::None => unreachable!("a layout without RAID is never degraded"),
        }
        Ok(RebuildInfo {
            new_member: new_members[0].clone(),
            new_members,
            seconds: total_secs,
            bytes: total_bytes,
            converted,
            balance_seconds,
            retried,
        })
    }

    /// Runs the layout's own consistency check on a complete (not degraded) layout: md's
    /// `check` action when there is an md array, `btrfs scrub` when the filesystem is btrfs.
    pub fn scrub(&mut self, b: &Built) -> Result<Vec<ScrubOutcome>, LayoutError> {
        if b.is_degraded() {
            return Err(LayoutError::Refused(format!(
                "{} is degraded; scrub it after the rebuild",
                b.name
            )));
        }
        let mut out = Vec::new();
        if let Some(md) = &b.md {
            out.push(scrub::md_check(&self.runner, md)?);
        }
        if b.stack.fs == FsKind::Btrfs {
            out.push(scrub::btrfs_scrub(&self.runner, &b.mount_point)?);
        }
        Ok(out)
    }

    /// Tears down one layout (everything made since it was built); returns what could not go.
    pub fn teardown(&mut self, b: Built) -> Vec<(Owned, LayoutError)> {
        let failed = self.teardown_to(b.mark);
        if !b.backing.iter().any(Option::is_some) && failed.is_empty() {
            // Real devices: leave them without our signatures (udev would otherwise keep
            // registering a stale btrfs or assembling a stale array).
            for d in b.members.iter().chain(&b.spares) {
                let _ = signature::wipe(&self.runner, d);
            }
        }
        failed
    }

    /// Removes every object made after the first `mark` ones, in teardown order.
    pub fn teardown_to(&mut self, mark: usize) -> Vec<(Owned, LayoutError)> {
        if mark >= self.objects.len() {
            return Vec::new();
        }
        let tail: Vec<Owned> = self.objects[mark..].to_vec();
        let failed = super::state::teardown(&self.runner, &tail, false);
        // Keep in the state only what is still there, so --cleanup can try again.
        self.objects.truncate(mark);
        self.objects.extend(failed.iter().map(|(o, _)| o.clone()));
        let _ = self.save();
        failed
    }

    /// Number of objects owned now (a mark for [`Session::teardown_to`]).
    pub fn mark(&self) -> usize {
        self.objects.len()
    }

    /// Tears down everything and removes the state file. Errors list what is left behind
    /// (the state file then stays for `iolab lab --cleanup`).
    pub fn finish(mut self) -> Result<(), Vec<String>> {
        let failed = self.teardown_to(0);
        if !failed.is_empty() {
            return Err(failed
                .iter()
                .map(|(o, e)| format!("{}: {e}", o.label()))
                .collect());
        }
        if let Some(sf) = self.state.take() {
            sf.remove().map_err(|e| vec![e.to_string()])?;
        }
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let failed = self.teardown_to(0);
        for (o, e) in &failed {
            eprintln!("iolab: warning: could not remove {}: {e}", o.label());
        }
        if failed.is_empty() {
            if let Some(sf) = self.state.take() {
                let _ = sf.remove();
            }
        } else if let Some(sf) = &self.state {
            eprintln!(
                "iolab: warning: left state in {}; run `iolab lab --cleanup`",
                sf.path().display()
            );
        }
    }
}
