//! One lab's building session: it owns the command runner and the state file, builds stacks on
//! loop disks or real devices, degrades and rebuilds them, and tears down everything it made —
//! explicitly after each layout, and again on drop (errors, panics, Ctrl-C).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::LayoutError;
use super::cmd::Runner;
use super::fault::{self, DmWrap, Fault, FaultKind};
use super::state::{Owned, StateFile};
use super::{loopdev, signature};
use crate::stack::Stack;

mod align;
mod assemble;
mod btrfs;
mod build;
mod cache;
mod failure;
mod fs;
mod layers;
mod lvm;
mod md;
mod member;
mod retune;
mod steps;
pub(crate) use steps::StorageLayer;
mod strike;
mod zfs;

pub use assemble::{Assembled, OnDisk};
pub use failure::{DegradeInfo, Repair};
pub use retune::CacheCaps;
pub use steps::Made;

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
    /// The disks the layers over the pooling layer take for their own (an SSD cache's), after
    /// the members, spares and journal disk.
    pub layer_disks: Vec<PathBuf>,
    /// Backing files of loop members (same order as `members`).
    backing: Vec<Option<PathBuf>>,
    /// What the layers named (an md array, a volume group), each under its layer's key.
    pub made: Made,
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
    /// Disks put under device-mapper at build time (faults, emulated latency).
    wrapped: Vec<Wrapped>,
    /// Each member's (and spare's, and replacement's) layers under the pooling layer, with
    /// the disk under them (empty when the stack has none).
    under: Vec<member::Under>,
    /// Indexes in `members` of the failed members while degraded.
    failed: Vec<usize>,
    /// Members replaced so far (names the next replacement's backing file).
    replaced: usize,
    degraded_at: Option<Instant>,
    mark: usize,
    log_mark: usize,
    index: usize,
}

fn not_wrapped(b: &Built, f: &Fault) -> LayoutError {
    LayoutError::Unexpected(format!(
        "{}: member {} ({}) is not on a dm device (was it replaced?); cannot inject {}",
        b.name,
        f.member,
        b.members
            .get(f.member)
            .map_or(String::new(), |m| m.display().to_string()),
        f.kind.name()
    ))
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

    /// The dm device member `idx` was built on, when it was put under device-mapper.
    pub fn wrapped_device(&self, idx: usize) -> Option<&Path> {
        let m = self.disk_under(self.members.get(idx)?);
        self.wrapped
            .iter()
            .find(|w| w.path == m)
            .map(|w| w.path.as_path())
    }

    /// The dm device `path` is, when it is one this layout put a disk under.
    pub fn wrapped_device_of(&self, path: &Path) -> Option<&Path> {
        self.wrapped
            .iter()
            .find(|w| w.path == path)
            .map(|w| w.path.as_path())
    }

    /// True when `path` is a disk this layout put under a plain dm `linear` table (no added
    /// latency): only so a fault could be struck on it. An extra layer the report names when
    /// that member reads slower than the rest (under TCG every layer costs emulated CPU).
    pub fn is_wrapped_for_a_fault(&self, path: &Path) -> bool {
        self.wrapped
            .iter()
            .any(|w| w.path == path && w.wrap.delay_ms == 0)
    }

    /// Backing files of loop members, in the order of `members` (`None` for real devices) —
    /// what a test damages to check that the lab notices.
    pub fn backing_files(&self) -> &[Option<PathBuf>] {
        &self.backing
    }
}

/// A disk of a layout on a dm device: the faults and the latency go in its table.
#[derive(Debug, Clone)]
struct Wrapped {
    /// `/dev/mapper/NAME`: what the layout uses as the member.
    path: PathBuf,
    /// The dm name.
    name: String,
    /// The disk under it.
    under: PathBuf,
    /// Its size in 512-byte sectors.
    sectors: u64,
    /// Its base mapping.
    wrap: DmWrap,
}

/// A lab's building session.
#[derive(Debug)]
pub struct Session {
    runner: Runner,
    state: Option<StateFile>,
    objects: Vec<Owned>,
    lab_id: String,
    mount_base: PathBuf,
    /// Disks (by index in the layout's disks) the next build puts under device-mapper.
    dm_plan: std::collections::BTreeMap<usize, DmWrap>,
    /// Faults to inject once the next md rebuild has started.
    rebuild_faults: Vec<Fault>,
    /// What each injected fault did (`Ok`) or why it could not be injected.
    fault_log: Vec<Struck>,
}

/// One fault struck during a rebuild: whether it could be injected, and how far the rebuild
/// was when it struck.
#[derive(Debug, Clone, PartialEq)]
pub struct Struck {
    /// The fault.
    pub fault: Fault,
    /// `Ok`, or why it could not be injected.
    pub outcome: Result<(), String>,
    /// Percent of the rebuild done when it struck, as md's `sync_completed` or the resilver's
    /// scan line said (`None` when neither said).
    pub at_pct: Option<f64>,
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
            dm_plan: std::collections::BTreeMap::new(),
            rebuild_faults: Vec::new(),
            fault_log: Vec::new(),
        })
    }

    /// Puts the disks at these indexes (members first, then spares) of the next layout built
    /// under device-mapper: `linear`, or `delay` with the added milliseconds. Faults other than
    /// corruption can only be injected on such a member.
    pub fn set_dm_plan(&mut self, plan: std::collections::BTreeMap<usize, DmWrap>) {
        self.dm_plan = plan;
    }

    /// Faults the next md rebuild or zfs resilver gets once it has started (md: at each
    /// fault's `progress`).
    pub fn set_rebuild_faults(&mut self, faults: Vec<Fault>) {
        self.rebuild_faults = faults;
    }

    /// What the faults injected so far did, emptied.
    pub fn take_fault_log(&mut self) -> Vec<Struck> {
        std::mem::take(&mut self.fault_log)
    }

    /// Injects `f` on its member of `b` now: reloads the member's dm table with an `error`
    /// range (unreadable) or all `error` (a dead disk), or writes garbage onto it (corrupt).
    pub fn inject(&mut self, b: &Built, f: &Fault) -> Result<(), LayoutError> {
        let member = b.members.get(f.member).ok_or_else(|| {
            LayoutError::Unexpected(format!("{}: no member {}", b.name, f.member))
        })?;
        // Faults strike the disk, under the member's own layers: the offset on the member
        // is carried down through them.
        let (disk, offset_on_disk) = match f.kind.range() {
            Some((offset, _)) => self.disk_offset(b, member, offset)?,
            None => (b.disk_under(member), 0),
        };
        let w = b.wrapped.iter().find(|w| w.path == disk);
        match f.kind {
            FaultKind::Corrupt { length, .. } => {
                let offset = offset_on_disk;
                self.runner.record(&[
                    "iolab-corrupt".to_string(),
                    disk.to_string_lossy().into_owned(),
                    format!("offset={offset}"),
                    format!("length={length}"),
                ]);
                if self.runner.is_dry_run() {
                    return Ok(());
                }
                fault::corrupt(&disk, offset, length)
            }
            FaultKind::Unreadable { length, .. } => {
                let offset = offset_on_disk;
                let w = w.ok_or_else(|| not_wrapped(b, f))?;
                let t = fault::error_range_table(
                    &w.under,
                    w.sectors,
                    w.wrap,
                    offset / 512,
                    length.div_ceil(512),
                );
                fault::reload(&self.runner, &w.name, &t)
            }
            FaultKind::Fail => {
                let w = w.ok_or_else(|| not_wrapped(b, f))?;
                fault::reload(&self.runner, &w.name, &format!("0 {} error", w.sectors))
            }
        }
    }

    /// [`Session::inject`], the outcome and the rebuild's progress then kept in the fault log.
    pub fn inject_logged(&mut self, b: &Built, f: &Fault, at_pct: Option<f64>) {
        let r = self.inject(b, f).map_err(|e| e.to_string());
        self.fault_log.push(Struck {
            fault: f.clone(),
            outcome: r,
            at_pct,
        });
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

    /// Where layout `index` is mounted: a private directory under the mount base.
    fn mount_point(&self, index: usize, name: &str) -> PathBuf {
        self.mount_base
            .join(format!("iolab-{}-{index}-{name}", self.lab_id))
    }

    /// Records and creates the private mount point (mode 0700).
    fn make_mount_point(&mut self, mnt: &Path) -> Result<(), LayoutError> {
        self.push(Owned::Dir {
            path: mnt.to_path_buf(),
        })?;
        if !self.runner.is_dry_run() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(mnt)
                .map_err(|e| LayoutError::io("cannot create mount point", mnt, e))?;
        }
        Ok(())
    }

    /// Tears down one layout (everything made since it was built); returns what could not go.
    pub fn teardown(&mut self, b: Built) -> Vec<(Owned, LayoutError)> {
        let failed = self.teardown_to(b.mark);
        if !b.backing.iter().any(Option::is_some) && failed.is_empty() {
            // Real devices: leave them without our signatures (udev would otherwise keep
            // registering a stale btrfs or assembling a stale array).
            // A dRAID's distributed spare (`draid1-0-0`) stands in a member's place: no device.
            // The disks under any member layers (their LUKS or dm-integrity superblocks).
            for d in b
                .disks_under(&b.members)
                .iter()
                .chain(&b.disks_under(&b.spares))
                .chain(&b.layer_disks)
                .filter(|d| d.is_absolute())
            {
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
