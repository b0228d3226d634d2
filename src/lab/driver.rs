//! The lab lifecycle: for each layout, check it can be built here, build it, mount it, run the
//! workloads (a callback), optionally degrade it and run them again, optionally rebuild and time
//! it, then tear it down — whatever happened — and report.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::dataset::DataSet;
use super::integrity::{IntegrityReport, ScrubCheck, Step, Verdict};
use super::report::{
    DegradedReport, LabReport, LayoutReport, LayoutStatus, RebuildReport, SecondFailureReport,
};
use super::spec::{Disks, LabSpec, LayoutKind, LayoutSpec};
use crate::layout::{Availability, Built, DiskSource, LayoutError, Runner, Session, Stack};

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
        }
    }
}

impl Default for LabOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether the workloads run on the healthy layout or with one member failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// All members present.
    Healthy,
    /// One member failed (the runs are labelled as degraded).
    Degraded,
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
    let mut source: Option<DiskSource> = None;
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
        let lr = match &l.kind {
            LayoutKind::Directory(dir) => run_dir(&lab_id, l, dir, opts, workload),
            LayoutKind::Stack(stack) => {
                let mut ctx = StackRun {
                    session: &mut session,
                    spec,
                    opts,
                    source: &mut source,
                    workload: &mut *workload,
                    progress: &mut *progress,
                    lab_id: &lab_id,
                };
                ctx.run(index, l, stack)
            }
        };
        if lr.reason.as_deref() == Some("interrupted") {
            report.interrupted = true;
        }
        progress(LabEvent::LayoutDone { report: &lr });
        report.layouts.push(lr);
    }
    if crate::signals::stop_requested() {
        report.interrupted = true;
    }
    if let Err(left) = session.finish() {
        report.leftovers = left;
    }
    Ok(report)
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

    fn run(&mut self, index: usize, l: &LayoutSpec, stack: &Stack) -> LayoutReport {
        let mut lr = LayoutReport::new(&l.name, stack.describe(), Some(stack.clone()));
        let msize = member_size(self.spec, stack);
        lr.member_bytes = msize;
        lr.expected_usable_bytes = msize.map(|s| stack.expected_usable(s));
        let is_loop = matches!(self.spec.disks, Disks::Loop { .. });
        if let Err(reason) = self.opts.availability.check(stack, is_loop) {
            lr.status = LayoutStatus::Unavailable;
            lr.reason = Some(reason);
            return lr;
        }
        let log_mark = self.session.runner().log_len();
        let result = self.source().and_then(|src| {
            self.step(&l.name, format!("building {}", stack.describe()));
            self.session
                .build(index, &l.name, stack, &src)
                .map(|b| (b, src))
        });
        let (mut built, src) = match result {
            Ok(x) => x,
            Err(e) => {
                lr.status = LayoutStatus::Failed;
                lr.reason = Some(error_text(&e));
                lr.commands = self.session.runner().log_since(log_mark);
                return lr;
            }
        };
        lr.members = built
            .members
            .iter()
            .chain(&built.spares)
            .map(|d| d.display().to_string())
            .collect();
        if !self.opts.dry_run {
            lr.build_seconds = Some(built.build_time.as_secs_f64());
            lr.usable_bytes = Some(built.usable_bytes);
        }
        let res = self.exercise(l, &mut built, &src, &mut lr);
        if let Some(i) = lr.integrity.as_mut() {
            if let Err(msg) = &res {
                // Every integrity step records its own failure; what is left is a workload
                // error or an interruption, after which the check is incomplete.
                let step = if msg == "interrupted" {
                    "interrupted"
                } else {
                    "workloads"
                };
                i.fail(step, msg.clone());
            }
            i.conclude();
            // The checksums outlive the layout only as evidence of a loss.
            if !matches!(i.verdict, Verdict::DataLoss { .. }) {
                if let Some(m) = i.manifest.take() {
                    let _ = std::fs::remove_file(m);
                }
            }
        }
        self.step(&l.name, "tearing down".into());
        let left = self.session.teardown(built);
        lr.commands = self.session.runner().log_since(log_mark);
        if let Err(msg) = res {
            lr.status = LayoutStatus::Failed;
            lr.reason = Some(msg);
        }
        if !left.is_empty() {
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
        lr
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

    /// Writes the data set (when the layout checks data) and reads it back once from the
    /// disks; records it all in `lr.integrity`.
    fn write_data(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
    ) -> Result<Option<DataSet>, String> {
        if !l.checks_data() || self.opts.dry_run {
            return Ok(None);
        }
        let bytes = l.fill_bytes(built.usable_bytes);
        self.step(
            &l.name,
            format!(
                "writing the data set: {} in files of 4KiB-4MiB",
                crate::units::format_bytes(bytes)
            ),
        );
        let seed = xxhash_rust::xxh3::xxh3_64(self.lab_id.as_bytes())
            ^ xxhash_rust::xxh3::xxh3_64(l.name.as_bytes());
        let set = match DataSet::write(&built.mount_point, bytes, seed) {
            Ok(s) => s,
            Err(e) => {
                let mut i = IntegrityReport::new(0, 0);
                i.fail("write", e.clone());
                lr.integrity = Some(i);
                return Err(interrupted_or(format!("cannot write the data set: {e}")));
            }
        };
        lr.fill_bytes = Some(set.bytes);
        let mut integ = IntegrityReport::new(set.files.len() as u64, set.bytes);
        let manifest = self
            .opts
            .state_dir
            .join(format!("manifest-{}-{}.xxh3", self.lab_id, l.name));
        if set.write_manifest(&manifest).is_ok() {
            integ.manifest = Some(manifest.display().to_string());
        }
        lr.integrity = Some(integ);
        if let Some(hook) = &self.opts.hooks.after_data_written {
            hook(&DataWritten {
                layout: &l.name,
                mount_point: &built.mount_point,
                members: &built.members,
                backing_files: built.backing_files(),
                data: &set,
            })
            .map_err(|e| {
                let msg = format!("test hook: {e}");
                if let Some(i) = lr.integrity.as_mut() {
                    i.fail("write", msg.clone());
                }
                msg
            })?;
        }
        self.check(l, &set, lr, Step::Healthy)?;
        Ok(Some(set))
    }

    /// Reads the data set back from the disks (the page cache dropped first); true when every
    /// file came back intact.
    fn check(
        &mut self,
        l: &LayoutSpec,
        set: &DataSet,
        lr: &mut LayoutReport,
        step: Step,
    ) -> Result<bool, String> {
        self.step(
            &l.name,
            format!(
                "reading the data set back ({}): {} files",
                step.name(),
                set.files.len()
            ),
        );
        let _ = crate::system::drop_caches();
        let v = set.verify();
        if crate::signals::stop_requested() {
            return Err("interrupted".into());
        }
        let intact = v.bad() == 0;
        if !intact {
            self.step(
                &l.name,
                format!(
                    "{}: {} of {} files did not come back intact",
                    step.name(),
                    v.bad(),
                    set.files.len()
                ),
            );
        }
        if let Some(i) = lr.integrity.as_mut() {
            i.add(step, v);
        }
        Ok(intact)
    }

    /// Writes more of the data set while degraded (an eighth of it, at least 4MiB): data
    /// written in the window before the rebuild has to survive it too. A write the layout
    /// refuses is a finding, not a lab failure.
    fn write_degraded(
        &mut self,
        l: &LayoutSpec,
        set: &mut DataSet,
        lr: &mut LayoutReport,
        step: Step,
    ) {
        let base = lr.fill_bytes.unwrap_or(set.bytes);
        let bytes = (base / 8).max(4 << 20) & !((1 << 20) - 1);
        self.step(
            &l.name,
            format!(
                "writing {} more while {}",
                crate::units::format_bytes(bytes),
                step.name()
            ),
        );
        let seed =
            set.files.first().map_or(0, |f| f.seed) ^ (step as u64 + 1).wrapping_mul(0x9E37_79B9);
        let dir = format!("{}/{}", super::dataset::DATA_DIR, step.name());
        let (files, written, err) = set.append(bytes, seed, &dir, true);
        if let Some(i) = lr.integrity.as_mut() {
            i.wrote(step, files, written, err);
            if let Some(m) = &i.manifest {
                let _ = set.write_manifest(Path::new(m));
            }
        }
    }

    /// Records a step that could not be done in the integrity record and returns the message
    /// as the layout's failure.
    fn failed(lr: &mut LayoutReport, step: &str, e: &LayoutError) -> String {
        let msg = error_text(e);
        if let Some(i) = lr.integrity.as_mut() {
            i.fail(step, msg.clone());
        }
        msg
    }

    fn exercise(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        lr: &mut LayoutReport,
    ) -> Result<(), String> {
        let dry = self.opts.dry_run;
        let mut data = self.write_data(l, built, lr)?;
        if !dry {
            self.step(&l.name, "workloads (healthy)".into());
            lr.workload_seconds =
                Some(self.call_workload(l, built, Phase::Healthy, lr.usable_bytes)?);
        }
        if l.degrade {
            self.degrade_and_rebuild(l, built, src, lr, data.as_mut())?;
        } else {
            self.scrub(l, built, lr, Step::Healthy)?;
        }
        Ok(())
    }

    /// Runs the layout's own scrub or check (layouts with a data set; commands only in a dry
    /// run) and records it after `step`.
    fn scrub(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
        step: Step,
    ) -> Result<(), String> {
        let dry = self.opts.dry_run;
        if !(lr.integrity.is_some() || dry && l.checks_data()) {
            return Ok(());
        }
        self.step(&l.name, format!("scrubbing ({})", step.name()));
        match self.session.scrub(built) {
            Ok(s) => {
                if let Some(i) = lr.integrity.as_mut() {
                    i.scrubs.extend(s.into_iter().map(|outcome| ScrubCheck {
                        after: step,
                        outcome,
                    }));
                    i.conclude();
                }
                Ok(())
            }
            Err(e) => Err(Self::failed(lr, "scrub", &e)),
        }
    }

    fn degrade_and_rebuild(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        lr: &mut LayoutReport,
        mut data: Option<&mut DataSet>,
    ) -> Result<(), String> {
        let dry = self.opts.dry_run;
        self.step(
            &l.name,
            format!(
                "degrading: failing {}",
                built
                    .members
                    .last()
                    .map_or(String::new(), |m| m.display().to_string())
            ),
        );
        let d = self
            .session
            .degrade(built)
            .map_err(|e| Self::failed(lr, "degrade", &e))?;
        let verified = match data.as_deref_mut() {
            Some(set) => {
                self.write_degraded(l, set, lr, Step::Degraded);
                self.check(l, set, lr, Step::Degraded)?
            }
            None => false,
        };
        let mut dr = DegradedReport {
            failed_member: d.failed_member.display().to_string(),
            degrade_seconds: d.seconds,
            workload_seconds: None,
            data_verified: verified,
            perf_ratio: None,
            workload_error: None,
        };
        if !dry {
            self.step(&l.name, "workloads (degraded)".into());
            match self.call_workload(l, built, Phase::Degraded, lr.usable_bytes) {
                Ok(s) => dr.workload_seconds = Some(s),
                Err(e) if e == "interrupted" => {
                    lr.degraded = Some(dr);
                    return Err(e);
                }
                // IO failing while degraded is what the layout does, not a lab failure: keep
                // it as a finding and go on to the rebuild.
                Err(e) => dr.workload_error = Some(e),
            }
        }
        lr.degraded = Some(dr);
        if l.rebuild {
            self.step(&l.name, "rebuilding".into());
            let r = self
                .session
                .rebuild(built, src)
                .map_err(|e| Self::failed(lr, "rebuild", &e))?;
            let verified = match data.as_deref() {
                Some(set) => self.check(l, set, lr, Step::Rebuilt)?,
                None => false,
            };
            lr.rebuild = Some(RebuildReport {
                new_member: r.new_member.display().to_string(),
                seconds: r.seconds,
                bytes: r.bytes,
                data_verified: verified,
                converted: r.converted,
                balance_seconds: r.balance_seconds,
                retried: r.retried,
            });
            self.scrub(l, built, lr, Step::Rebuilt)?;
        }
        if l.failures < 2 {
            return Ok(());
        }
        // Two members at once. After a rebuild: the first two, so the data has to come from
        // the rest — the replaced member among them. Still degraded: one more on top.
        let victims: Vec<usize> = if built.is_degraded() {
            vec![0]
        } else {
            vec![0, 1]
        };
        self.step(
            &l.name,
            format!(
                "second failure: failing {}",
                victims
                    .iter()
                    .map(|&i| built.members[i].display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        );
        let d2 = self
            .session
            .fail_members(built, &victims)
            .map_err(|e| Self::failed(lr, "degrade2", &e))?;
        let mut sf = SecondFailureReport {
            failed_members: d2
                .failed_members
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            degrade_seconds: d2.seconds,
            new_members: Vec::new(),
            rebuild_seconds: None,
            rebuild_bytes: None,
            converted: Vec::new(),
            retried: Vec::new(),
        };
        if let Some(set) = data.as_deref_mut() {
            self.write_degraded(l, set, lr, Step::Degraded2);
            if let Err(e) = self.check(l, set, lr, Step::Degraded2) {
                lr.second_failure = Some(sf);
                return Err(e);
            }
        }
        if l.rebuild {
            self.step(&l.name, "rebuilding both".into());
            match self.session.rebuild(built, src) {
                Ok(r) => {
                    sf.new_members = r
                        .new_members
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect();
                    sf.rebuild_seconds = Some(r.seconds);
                    sf.rebuild_bytes = Some(r.bytes);
                    sf.converted = r.converted;
                    sf.retried = r.retried;
                }
                Err(e) => {
                    lr.second_failure = Some(sf);
                    return Err(Self::failed(lr, "rebuild2", &e));
                }
            }
            lr.second_failure = Some(sf);
            if let Some(set) = data.as_deref() {
                self.check(l, set, lr, Step::Rebuilt2)?;
            }
            self.scrub(l, built, lr, Step::Rebuilt2)?;
        } else {
            lr.second_failure = Some(sf);
        }
        Ok(())
    }
}

fn error_text(e: &LayoutError) -> String {
    match e {
        LayoutError::Interrupted => "interrupted".into(),
        other => other.to_string(),
    }
}
