//! The lab lifecycle: for each layout, check it can be built here, build it, mount it, run the
//! workloads (a callback), optionally degrade it and run them again, optionally rebuild and time
//! it, then tear it down — whatever happened — and report.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::dataset::DataSet;
use super::integrity::Verdict;
use super::report::{LabReport, LayoutReport, LayoutStatus};
use super::spec::{Disks, LabSpec, LayoutKind, LayoutSpec};
use crate::layout::{
    Availability, Built, CacheCaps, DiskSource, LayoutError, Runner, Session, Stack,
};

pub use crate::sample::layout_record::Phase;

mod faults;
mod members;
mod placement;
mod steps;

/// How the lab runs.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Devices `--destroy` named (must match the spec's `disks.devices`).
    pub destroy: Vec<PathBuf>,
    /// Record and print the commands only; build nothing.
    pub dry_run: bool,
    /// Print every command as it runs.
    pub verbose: bool,
    /// Where the state file goes.
    pub state_dir: PathBuf,
    /// What this machine can build.
    pub availability: Availability,
    /// Test hooks (the command line never sets them).
    pub hooks: LabHooks,
    /// The VM's share directory for power cuts (`--powercut-dir`, given by `iolab lab --vm`
    /// to the guest's lab): where the power-cut state and the writer's durable log outlive a
    /// cut. `None` outside the VM.
    pub powercut_dir: Option<PathBuf>,
}

/// What a hook gets once the data set is on a layout.
#[derive(Debug)]
pub struct DataWritten<'a> {
    /// The layout's name.
    pub layout: &'a str,
    /// Where it is mounted.
    pub mount_point: &'a Path,
    /// Its members, in order.
    pub members: &'a [PathBuf],
    /// Backing files of loop members, in the same order.
    pub backing_files: &'a [Option<PathBuf>],
    /// The data set just written (and flushed to the disks).
    pub data: &'a DataSet,
}

/// A hook called after the data set is written.
pub type DataHook = Arc<dyn Fn(&DataWritten) -> Result<(), String> + Send + Sync>;

/// Points where a test can step into the lab flow through the library; the command line has
/// no way to set them.
#[derive(Clone, Default)]
pub struct LabHooks {
    /// Called after the data set is written and flushed, before it is first read back: a test
    /// damages a member's backing file here to prove the lab reports the loss.
    pub after_data_written: Option<DataHook>,
}

impl std::fmt::Debug for LabHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabHooks")
            .field("after_data_written", &self.after_data_written.is_some())
            .finish()
    }
}

impl LabOptions {
    /// Options for a real run on this machine.
    pub fn new() -> LabOptions {
        LabOptions {
            destroy: Vec::new(),
            dry_run: false,
            verbose: false,
            state_dir: crate::layout::state::state_dir(),
            availability: Availability::detect(),
            hooks: LabHooks::default(),
            powercut_dir: None,
        }
    }
}

impl Default for LabOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// A layout ready for workloads: what the workload callback gets.
#[derive(Debug)]
pub struct MountedLayout<'a> {
    /// The lab id (tag every run with it).
    pub lab_id: &'a str,
    /// The layout (its name labels the runs).
    pub layout: &'a LayoutSpec,
    /// One line describing the stack.
    pub description: String,
    /// The directory to run in (the mount point, or the directory of a dir layout).
    pub path: &'a Path,
    /// Healthy or degraded.
    pub phase: Phase,
    /// Usable bytes of the layout.
    pub usable_bytes: Option<u64>,
}

/// Progress of a lab, for a terminal.
#[derive(Debug)]
pub enum LabEvent<'a> {
    /// A layout starts.
    LayoutStart {
        /// 0-based position.
        index: usize,
        /// Number of layouts.
        total: usize,
        /// Its name.
        name: &'a str,
    },
    /// A step inside the current layout (`building`, `degrading`, ...).
    Step {
        /// The layout.
        name: &'a str,
        /// What is happening.
        what: String,
    },
    /// A layout is done (torn down).
    LayoutDone {
        /// Its report.
        report: &'a LayoutReport,
    },
}

/// Why a lab could not start.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A device may not be used; nothing was touched (exit 2).
    #[error("{0}")]
    Refused(String),
    /// The state file could not be written (nothing was touched).
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// The workload callback: runs the workloads on a mounted layout.
pub type WorkloadFn<'a> = dyn FnMut(&MountedLayout) -> anyhow::Result<()> + 'a;

/// A short id, different for every lab (time and pid), used in every name the lab gives.
pub fn new_lab_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = t ^ (u64::from(std::process::id()) << 32);
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    format!("{:06x}", x & 0xff_ffff)
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Checks real devices against the safety rules before anything is touched: never a mounted
/// device, the root disk, or a member of someone else's array; a device with a signature only
/// with `--destroy`; and `--destroy` must name exactly the spec's devices.
pub fn check_devices(spec: &LabSpec, destroy: &[PathBuf]) -> Result<(), LabError> {
    let builds = spec
        .layouts
        .iter()
        .any(|l| matches!(l.kind, LayoutKind::Stack(_)));
    let Disks::Devices(devs) = &spec.disks else {
        if !destroy.is_empty() {
            return Err(LabError::Refused(
                "--destroy is for labs on real devices (disks.devices); this lab uses no real devices".into(),
            ));
        }
        return Ok(());
    };
    if !builds {
        return Ok(());
    }
    let runner = Runner::real();
    for d in devs {
        crate::layout::signature::check_device(&runner, d, !destroy.is_empty())
            .map_err(|e| LabError::Refused(e.to_string()))?;
    }
    let listed = || {
        devs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    if destroy.is_empty() {
        return Err(LabError::Refused(format!(
            "this lab erases real devices; pass --destroy {} to allow it",
            listed()
        )));
    }
    let mut want: Vec<PathBuf> = devs.iter().map(|d| canon(d)).collect();
    let mut got: Vec<PathBuf> = destroy.iter().map(|d| canon(d)).collect();
    want.sort();
    got.sort();
    got.dedup();
    if want != got {
        return Err(LabError::Refused(format!(
            "--destroy {} does not match the spec's devices {}; name exactly the same devices",
            destroy
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
            listed()
        )));
    }
    Ok(())
}

/// Loop disks are sparse files that can grow to their full size (fill data, working sets,
/// rebuilds): all of them together must fit beside the reserve in their directory.
fn check_loop_space(spec: &LabSpec) -> Result<(), LabError> {
    if let Disks::Loop {
        count, size, dir, ..
    } = &spec.disks
    {
        let need = (*count as u64).saturating_mul(*size);
        crate::system::space::check(
            dir,
            need,
            true,
            &format!(
                "{count} loop disks of {} (sparse files that can grow to {})",
                crate::units::format_bytes(*size),
                crate::units::format_bytes(need)
            ),
            "use fewer or smaller disks (disks.loop) or --disk-dir on a filesystem with room",
        )
        .map_err(|e| LabError::Refused(e.to_string()))?;
    }
    Ok(())
}

fn member_size(spec: &LabSpec, stack: &Stack) -> Option<u64> {
    match &spec.disks {
        Disks::Loop { size, .. } => Some(*size),
        Disks::Devices(d) => d
            .iter()
            .take(stack.disks())
            .filter_map(|p| crate::system::BlockDevice::from_path(p).map(|b| b.size_bytes))
            .min(),
        Disks::None => None,
    }
}

/// Runs a lab: every layout in order, each torn down before the next starts.
///
/// Returns the report also when layouts failed or the lab was interrupted (see
/// [`LabReport::interrupted`]); an error only when the lab could not start.
pub fn run_lab(
    spec: &LabSpec,
    opts: &LabOptions,
    workload: &mut WorkloadFn,
    progress: &mut dyn FnMut(LabEvent),
) -> Result<LabReport, LabError> {
    check_devices(spec, &opts.destroy)?;
    if !opts.dry_run {
        check_loop_space(spec)?;
    }
    let lab_id = new_lab_id();
    let runner = if opts.dry_run {
        Runner::recording()
    } else {
        Runner::real()
    }
    .with_echo(opts.verbose);
    let mut session = Session::new(runner, &lab_id, Some(&opts.state_dir), &spec.file)?;
    let mut report = LabReport {
        lab_id: lab_id.clone(),
        name: spec.name.clone(),
        spec_file: spec.file.clone(),
        disks: spec.disks.describe(),
        baseline: spec.workloads.baseline.clone(),
        interrupted: false,
        dry_run: opts.dry_run,
        layouts: Vec::new(),
        leftovers: Vec::new(),
        runs: Vec::new(),
    };
    let mut power = match &opts.powercut_dir {
        Some(dir) if !opts.dry_run && super::powercut::wanted(spec) => {
            super::powercut::run_cuts(spec, &mut session, dir, &mut |name, what| {
                progress(LabEvent::Step { name, what });
            })
        }
        _ => std::collections::BTreeMap::new(),
    };
    let mut source: Option<DiskSource> = None;
    let mut held: Option<Held> = None;
    let total = spec.layouts.len();
    for (index, l) in spec.layouts.iter().enumerate() {
        if crate::signals::stop_requested() {
            report.interrupted = true;
            let mut lr = LayoutReport::new(&l.name, l.describe(), stack_of(l));
            lr.status = LayoutStatus::Skipped;
            lr.reason = Some("the lab was interrupted".into());
            report.layouts.push(lr);
            continue;
        }
        progress(LabEvent::LayoutStart {
            index,
            total,
            name: &l.name,
        });
        // The build the layout before left for this one (a sweep over runtime tunables).
        let prev = held
            .take()
            .filter(|h| h.last + 1 == index && shares_build(spec, &spec.layouts[h.last], l));
        if prev.is_none() {
            release(&mut session, &mut held);
        }
        let lr = match &l.kind {
            LayoutKind::Directory(dir) => run_dir(&lab_id, l, dir, opts, workload),
            LayoutKind::Stack(stack) => {
                let keep = spec
                    .layouts
                    .get(index + 1)
                    .is_some_and(|next| shares_build(spec, l, next));
                let mut ctx = StackRun {
                    session: &mut session,
                    spec,
                    opts,
                    source: &mut source,
                    workload: &mut *workload,
                    progress: &mut *progress,
                    lab_id: &lab_id,
                };
                let (lr, kept) = ctx.run(index, l, stack, prev, keep);
                held = kept;
                lr
            }
        };
        let mut lr = lr;
        lr.power = power.remove(&l.name);
        if lr.reason.as_deref() == Some("interrupted") {
            report.interrupted = true;
        }
        progress(LabEvent::LayoutDone { report: &lr });
        report.layouts.push(lr);
    }
    release(&mut session, &mut held);
    if crate::signals::stop_requested() {
        report.interrupted = true;
    }
    if let Err(left) = session.finish() {
        report.leftovers = left;
    }
    Ok(report)
}

/// Tears down a build kept for a layout that did not come (the lab was interrupted); what it
/// leaves, `session.finish` reports.
fn release(session: &mut Session, held: &mut Option<Held>) {
    if let Some(h) = held.take() {
        let _ = session.teardown(h.built);
    }
}

fn stack_of(l: &LayoutSpec) -> Option<Stack> {
    match &l.kind {
        LayoutKind::Stack(s) => Some(s.clone()),
        LayoutKind::Directory(_) => None,
    }
}

fn run_dir(
    lab_id: &str,
    l: &LayoutSpec,
    dir: &Path,
    opts: &LabOptions,
    workload: &mut WorkloadFn,
) -> LayoutReport {
    let mut lr = LayoutReport::new(&l.name, l.describe(), None);
    lr.usable_bytes = crate::layout::fs::statvfs_bytes(dir).ok().map(|t| t.0);
    if opts.dry_run {
        return lr;
    }
    let t = Instant::now();
    let m = MountedLayout {
        lab_id,
        layout: l,
        description: lr.stack.clone(),
        path: dir,
        phase: Phase::Healthy,
        usable_bytes: lr.usable_bytes,
    };
    match workload(&m) {
        Ok(()) => lr.workload_seconds = Some(t.elapsed().as_secs_f64()),
        Err(e) => {
            lr.status = LayoutStatus::Failed;
            lr.reason = Some(interrupted_or(format!("{e:#}")));
        }
    }
    lr
}

fn interrupted_or(msg: String) -> String {
    if crate::signals::stop_requested() {
        "interrupted".into()
    } else {
        msg
    }
}

struct StackRun<'a, 'f> {
    session: &'a mut Session,
    spec: &'a LabSpec,
    opts: &'a LabOptions,
    source: &'a mut Option<DiskSource>,
    workload: &'a mut WorkloadFn<'f>,
    progress: &'a mut dyn FnMut(LabEvent),
    lab_id: &'a str,
}

impl StackRun<'_, '_> {
    fn step(&mut self, name: &str, what: String) {
        (self.progress)(LabEvent::Step { name, what });
    }

    /// The disk source, made on first use (the disk directory is created only when a layout
    /// is really built).
    fn source(&mut self) -> Result<DiskSource, LayoutError> {
        if let Some(s) = self.source {
            return Ok(s.clone());
        }
        let s = match &self.spec.disks {
            Disks::Loop {
                size,
                dir,
                direct_io,
                ..
            } => {
                self.session.ensure_dir(dir)?;
                let dir = if self.opts.dry_run {
                    dir.clone()
                } else {
                    canon(dir)
                };
                let direct = direct_io
                    .unwrap_or_else(|| !self.opts.dry_run && crate::target::probe_direct(&dir));
                DiskSource::Loop {
                    dir,
                    size: *size,
                    direct_io: direct,
                }
            }
            Disks::Devices(d) => DiskSource::Devices(d.clone()),
            Disks::None => {
                return Err(LayoutError::Unexpected("the lab has no disks".into()));
            }
        };
        *self.source = Some(s.clone());
        Ok(s)
    }

    /// Runs layout `l`: built anew, or — `held`, the build the layout before it left — re-tuned
    /// ([`Session::retune`]); then its workloads and steps. The build is torn down after,
    /// unless `keep` (the next layout re-tunes it) and all went well: then it is returned.
    fn run(
        &mut self,
        index: usize,
        l: &LayoutSpec,
        stack: &Stack,
        held: Option<Held>,
        keep: bool,
    ) -> (LayoutReport, Option<Held>) {
        let mut lr = LayoutReport::new(&l.name, stack.describe(), Some(stack.clone()));
        let msize = member_size(self.spec, stack);
        lr.member_bytes = msize;
        lr.expected_usable_bytes = msize.map(|s| stack.expected_usable(s));
        let log_mark = self.session.runner().log_len();
        let got = match held {
            Some(h) => self.retuned(l, stack, h, &mut lr),
            None => self.built(index, l, stack, &mut lr),
        };
        let Some((mut built, src, caps)) = got else {
            lr.commands = self.session.runner().log_since(log_mark);
            return (lr, None);
        };
        let res = match self.session.check_tunables(&built) {
            Ok(ra) => {
                lr.read_ahead_sectors = ra;
                self.exercise(l, &mut built, &src, &mut lr)
            }
            Err(e) => Err(error_text(&e)),
        };
        self.observe_final(l, &built, &mut lr);
        conclude_integrity(&mut lr, res.as_ref().err());
        if keep && res.is_ok() && !crate::signals::stop_requested() {
            lr.commands = self.session.runner().log_since(log_mark);
            let of = lr.reused_build_of.clone().unwrap_or_else(|| l.name.clone());
            let alignment = lr.alignment.clone();
            return (
                lr,
                Some(Held {
                    built,
                    src,
                    of,
                    last: index,
                    alignment,
                }),
            );
        }
        self.step(&l.name, "tearing down".into());
        crate::pause::at("teardown");
        let left = self.session.teardown(built);
        self.session.restore_caches(&caps);
        lr.commands = self.session.runner().log_since(log_mark);
        if let Err(msg) = res {
            lr.status = LayoutStatus::Failed;
            lr.reason = Some(msg);
        }
        note_leftovers(&mut lr, &left);
        (lr, None)
    }

    /// Builds `l`'s stack anew (its availability checked first) and records what the build
    /// gave; `None` (the report says why) when it could not be built here.
    fn built(
        &mut self,
        index: usize,
        l: &LayoutSpec,
        stack: &Stack,
        lr: &mut LayoutReport,
    ) -> Option<(Built, DiskSource, CacheCaps)> {
        let is_loop = matches!(self.spec.disks, Disks::Loop { .. });
        let dm = if faults::needs_dm(self.spec, l, stack) {
            self.opts.availability.layer("lvm")
        } else {
            Ok(())
        };
        if let Err(reason) =
            self.opts.availability.check(stack, is_loop).and(
                dm.map_err(|e| format!("injected faults and slow disks use device-mapper: {e}")),
            )
        {
            lr.status = LayoutStatus::Unavailable;
            lr.reason = Some(reason);
            return None;
        }
        self.plan_dm(l, stack);
        let result = self.source().and_then(|src| {
            self.step(&l.name, format!("building {}", stack.describe()));
            self.session
                .build(index, &l.name, stack, &src)
                .map(|b| (b, src))
        });
        // A read figure from a host-wide cache (ZFS's ARC) is not a disk figure: each layer
        // caps its own while this layout runs, put back after.
        let caps = if result.is_ok() {
            self.session.cap_caches(stack)
        } else {
            CacheCaps::default()
        };
        let (built, src) = match result {
            Ok(x) => {
                crate::pause::at("layout built");
                x
            }
            Err(e) => {
                lr.status = LayoutStatus::Failed;
                lr.reason = Some(error_text(&e));
                return None;
            }
        };
        record_members(lr, &built);
        if !self.opts.dry_run {
            lr.build_seconds = Some(built.build_time.as_secs_f64());
            lr.usable_bytes = Some(built.usable_bytes);
            lr.md_tunables = self.session.tunables(&built);
            lr.alignment = Some(self.session.alignment(&built));
        }
        Some((built, src, caps))
    }

    /// Re-tunes the build the layout before `l` left for `l`'s runtime tunables: no build,
    /// its commands the tuning commands alone. `None` (the build torn down, the report
    /// saying why) when the kernel refused them.
    fn retuned(
        &mut self,
        l: &LayoutSpec,
        stack: &Stack,
        h: Held,
        lr: &mut LayoutReport,
    ) -> Option<(Built, DiskSource, CacheCaps)> {
        let Held {
            mut built,
            src,
            of,
            alignment,
            ..
        } = h;
        self.step(
            &l.name,
            format!(
                "re-tuning the build of {of} (not rebuilt): {}",
                stack.describe()
            ),
        );
        if let Err(e) = self.session.retune(&mut built, &l.name, stack) {
            lr.status = LayoutStatus::Failed;
            lr.reason = Some(error_text(&e));
            let left = self.session.teardown(built);
            note_leftovers(lr, &left);
            return None;
        }
        lr.reused_build_of = Some(of);
        record_members(lr, &built);
        if !self.opts.dry_run {
            lr.usable_bytes = Some(built.usable_bytes);
            lr.md_tunables = self.session.tunables(&built);
            lr.alignment = alignment;
        }
        Some((built, src, CacheCaps::default()))
    }

    fn call_workload(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        phase: Phase,
        usable: Option<u64>,
    ) -> Result<f64, String> {
        let t = Instant::now();
        let m = MountedLayout {
            lab_id: self.lab_id,
            layout: l,
            description: built.stack.describe(),
            path: &built.mount_point,
            phase,
            usable_bytes: usable,
        };
        (self.workload)(&m).map_err(|e| interrupted_or(format!("{e:#}")))?;
        Ok(t.elapsed().as_secs_f64())
    }
}

/// A build the lab keeps for the next layout, which re-tunes it instead of building anew.
#[derive(Debug)]
struct Held {
    /// The build.
    built: Built,
    /// Where its disks came from.
    src: DiskSource,
    /// The layout it was built for (the one every re-tuned layout names).
    of: String,
    /// The index of the layout that ran on it last.
    last: usize,
    /// Its alignment as read after the build (the same build: not probed again).
    alignment: Option<crate::layout::align::AlignmentReport>,
}

/// Whether layout `b`, right after `a`, runs on `a`'s build re-tuned
/// ([`LayoutSpec::shares_build_with`]); never when either is put under device-mapper (its
/// faults, slow disks), which is part of the build.
fn shares_build(spec: &LabSpec, a: &LayoutSpec, b: &LayoutSpec) -> bool {
    let (LayoutKind::Stack(sa), LayoutKind::Stack(sb)) = (&a.kind, &b.kind) else {
        return false;
    };
    a.shares_build_with(b) && !faults::needs_dm(spec, a, sa) && !faults::needs_dm(spec, b, sb)
}

/// The layout's members and spares, as built.
fn record_members(lr: &mut LayoutReport, built: &Built) {
    lr.members = built
        .members
        .iter()
        .chain(&built.spares)
        .map(|d| d.display().to_string())
        .collect();
}

/// Closes the layout's integrity check: a workload error or an interruption leaves it
/// incomplete; the checksums outlive the layout only as evidence of a loss.
fn conclude_integrity(lr: &mut LayoutReport, err: Option<&String>) {
    let Some(i) = lr.integrity.as_mut() else {
        return;
    };
    if let Some(msg) = err {
        // Every integrity step records its own failure; what is left is a workload error or
        // an interruption, after which the check is incomplete.
        let step = if msg == "interrupted" {
            "interrupted"
        } else {
            "workloads"
        };
        i.fail(step, msg.clone());
    }
    i.conclude();
    if !matches!(i.verdict, Verdict::DataLoss { .. }) {
        if let Some(m) = i.manifest.take() {
            let _ = std::fs::remove_file(m);
        }
    }
}

/// A teardown that left objects fails the layout, naming them.
fn note_leftovers(lr: &mut LayoutReport, left: &[(crate::layout::state::Owned, LayoutError)]) {
    if left.is_empty() {
        return;
    }
    lr.status = LayoutStatus::Failed;
    let what: Vec<String> = left
        .iter()
        .map(|(o, e)| format!("{}: {e}", o.label()))
        .collect();
    let prev = lr
        .reason
        .take()
        .map(|r| format!("{r}; "))
        .unwrap_or_default();
    lr.reason = Some(format!("{prev}teardown left {}", what.join("; ")));
}

fn error_text(e: &LayoutError) -> String {
    match e {
        LayoutError::Interrupted => "interrupted".into(),
        other => other.to_string(),
    }
}
