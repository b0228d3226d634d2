//! The lab spec (TOML): which disks, which layouts, which workloads. Validated completely before
//! anything is touched; every error is one line `file:line: field: what and how to fix`, the
//! field naming the layout (`layout[md-raid6].mdadm.level`).
//!
//! ```toml
//! name = "raid-levels"
//! [disks]
//! loop = { count = 6, size = "1GiB", dir = "/var/tmp/iolab-disks" }
//! # or: devices = ["/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde"]
//!
//! [[layout]]
//! name = "btrfs-raid5"
//! btrfs = { data = "raid5", metadata = "raid1", members = 4 }
//! mount_options = "noatime"
//! degrade = true
//! rebuild = true
//!
//! [[layout]]
//! name = "md-raid6-lvm-xfs"
//! mdadm = { level = 6, members = 5, spares = 1, chunk = "512k", bitmap = "internal", bitmap_chunk = "64M" }
//! lvm = true
//! fs = "xfs"
//!
//! [[layout]]
//! name = "old-server"
//! dir = "/srv/data"
//!
//! [workloads]
//! profiles = ["quick"]
//! repeat = 3
//! baseline = "old-server"
//! ```
//!
//! Each part of a `[[layout]]` is a section of its own (`btrfs.rs`, `mdadm.rs`, `lvm.rs`,
//! `fs.rs`, `failures.rs`, `fill.rs`) behind one trait in `section.rs`; `layout.rs` runs them.
//! A new part (a `zfs` RAID layer, a `vm`) is a new file holding its `impl Section`, plus
//! `mod zfs;` here, its raw table and its field in `raw::RawLayout` (`raw.rs` declares every
//! table as written, so it imports no section) and its line in `layout::SECTIONS`. What needs
//! the machine (devices, directories) goes through a [`Host`]: [`parse_lab`] asks this
//! machine, [`parse_lab_spec`] the text alone.

mod align;
mod btrfs;
mod cache;
mod decide;
mod disks;
mod failures;
mod faults;
mod fill;
mod fs;
mod host;
mod integrity;
mod layout;
mod lvm;
mod mdadm;
mod powercut;
mod raw;
mod section;
mod vary;
mod workloads;
mod zfs;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::spec::locate::Locator;
use crate::spec::profiles::{self, ProfileScale};
use crate::spec::{SpecError, Suite};
use crate::stack::Stack;
use crate::units;

pub use host::{DeviceProblem, Host, TextOnly, ThisMachine};
pub use powercut::{AfterCut, CacheModel, DiskCache, PowerCutSpec};
use raw::RawLab;

/// Where backing files go when the spec does not say.
pub const DEFAULT_DISK_DIR: &str = "/var/tmp/iolab-disks";
/// Most loop disks a lab may make.
pub const MAX_LOOP_DISKS: usize = 64;
/// Smallest loop disk (btrfs needs ~114MiB per device for its first chunks).
pub const MIN_LOOP_SIZE: u64 = 128 << 20;

/// The disks layouts are built on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disks {
    /// Emulated disks: sparse files attached as loop devices, fresh for each layout.
    Loop {
        /// How many disks the pool has.
        count: usize,
        /// Bytes per disk.
        size: u64,
        /// Directory of the backing files.
        dir: PathBuf,
        /// `--direct-io=on` for the loop devices (`None`: when the directory takes O_DIRECT).
        direct_io: Option<bool>,
    },
    /// Real block devices (need `--destroy` naming all of them).
    Devices(Vec<PathBuf>),
    /// No disks: every layout is an existing directory.
    None,
}

impl Disks {
    /// How many disks the pool has.
    pub fn count(&self) -> usize {
        match self {
            Disks::Loop { count, .. } => *count,
            Disks::Devices(d) => d.len(),
            Disks::None => 0,
        }
    }

    /// One line: `6 x 1GiB loop disks in /var/tmp/iolab-disks`.
    pub fn describe(&self) -> String {
        match self {
            Disks::Loop {
                count, size, dir, ..
            } => format!(
                "{count} x {} loop disks in {}",
                units::format_bytes(*size),
                dir.display()
            ),
            Disks::Devices(d) => format!(
                "devices {}",
                d.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Disks::None => "existing directories".into(),
        }
    }
}

/// A disk of the lab made slow on purpose (`[disks] slow = [...]`): the VM's drive throttles
/// its bandwidth and IOPS (qemu), and device-mapper adds latency to every IO (dm-delay), so a
/// lab can hold "five disks, one of them slow" without owning one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SlowDisk {
    /// Index of the disk (0 is the first; layouts take disks from the front, members first).
    pub disk: usize,
    /// Bytes per second, reads and writes together (qemu `throttling.bps-total`).
    pub bandwidth: Option<u64>,
    /// IOs per second (qemu `throttling.iops-total`).
    pub iops: Option<u64>,
    /// Milliseconds added to every IO (dm-delay).
    pub latency_ms: Option<u32>,
}

impl SlowDisk {
    /// One line: `disk 4: 20MiB/s, 150 IOPS, +8 ms`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.bandwidth {
            parts.push(format!("{}/s", units::format_bytes(b)));
        }
        if let Some(i) = self.iops {
            parts.push(format!("{i} IOPS"));
        }
        if let Some(l) = self.latency_ms {
            parts.push(format!("+{l} ms per IO"));
        }
        format!("disk {}: {}", self.disk, parts.join(", "))
    }
}

/// What a layout is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutKind {
    /// A stack built on the lab's disks.
    Stack(Stack),
    /// An existing directory, used as it is (the "old server" baseline).
    Directory(PathBuf),
}

/// One validated layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutSpec {
    /// Unique name (labels its runs in the store).
    pub name: String,
    /// What to build, or which directory.
    pub kind: LayoutKind,
    /// Fail one member after the healthy runs and run the workloads again.
    pub degrade: bool,
    /// Replace the failed member and time the rebuild.
    pub rebuild: bool,
    /// Run the workloads (and the SLO search) again while the rebuild runs: what the layout
    /// gives while it rebuilds, and how long the rebuild takes under that load.
    pub during_rebuild: bool,
    /// Members failed: 1, or 2 on a layout that survives two failures — after the first
    /// failure (and its rebuild) two members fail at once, and are replaced.
    pub failures: u8,
    /// Bytes of the verification data set written before degrading (`None`: a third of the
    /// usable space, at most [`DEFAULT_FILL_MAX`]), so the degraded reads and the rebuild have
    /// something to work on. Set on a layout that is not degraded, the set is written, read
    /// back and scrubbed all the same.
    pub fill: Option<u64>,
    /// Faults injected on named members at named steps (`faults = [...]`).
    pub faults: Vec<crate::stack::fault::Fault>,
    /// Power cuts in the VM lab (`powercut = {...}`), when asked for.
    pub powercut: Option<PowerCutSpec>,
}

/// Most bytes the default data set takes (a third of the usable space up to this).
pub const DEFAULT_FILL_MAX: u64 = 4 << 30;

impl LayoutSpec {
    /// Whether the lab writes and checks a data set on this layout: when it is degraded, or
    /// when the spec sets `fill`.
    pub fn checks_data(&self) -> bool {
        matches!(self.kind, LayoutKind::Stack(_)) && (self.degrade || self.fill.is_some())
    }

    /// Bytes of the data set on a layout with `usable` bytes: `fill`, else a third of the
    /// space (at most [`DEFAULT_FILL_MAX`]), in whole MiB, at least 4MiB.
    pub fn fill_bytes(&self, usable: u64) -> u64 {
        let b = self
            .fill
            .unwrap_or_else(|| (usable / 3).min(DEFAULT_FILL_MAX) & !((1 << 20) - 1));
        b.max(if self.fill.is_some() { 1 } else { 4 << 20 })
    }

    /// Whether `next`, run right after this layout, can run on this layout's build with only
    /// its runtime tunables set anew ([`Stack::retunable_to`]) instead of a build of its own.
    /// Conservative: neither may do anything that changes what is on the disks beyond the
    /// workloads' own files (degrade, rebuild, a data set, faults, power cuts), so the second
    /// finds the stack as the first found it.
    pub fn shares_build_with(&self, next: &LayoutSpec) -> bool {
        let (LayoutKind::Stack(a), LayoutKind::Stack(b)) = (&self.kind, &next.kind) else {
            return false;
        };
        let quiet = |l: &LayoutSpec| {
            !l.degrade
                && !l.rebuild
                && !l.during_rebuild
                && l.fill.is_none()
                && l.faults.is_empty()
                && l.powercut.is_none()
        };
        quiet(self) && quiet(next) && a.retunable_to(b)
    }

    /// One line saying what the layout is.
    pub fn describe(&self) -> String {
        match &self.kind {
            LayoutKind::Stack(s) => s.describe(),
            LayoutKind::Directory(d) => format!("existing directory {}", d.display()),
        }
    }
}

/// The workloads every layout runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabWorkloads {
    /// Profiles named in the spec (their workloads are in `suite`).
    pub profiles: Vec<String>,
    /// Every workload in order: profiles first, then inline ones.
    pub suite: Suite,
    /// Trials of each workload per layout.
    pub repeat: u32,
    /// The layout others are compared against.
    pub baseline: Option<String>,
    /// `workloads.size`: the working set (default: a quarter of each layout's usable space, at
    /// most 1GiB).
    pub size: Option<u64>,
    /// `workloads.time`: run time per trial.
    pub runtime: Option<std::time::Duration>,
    /// `workloads.model`: traces whose workload models (`iolab spec --from-trace`) run too;
    /// read by the command line, which adds them to `suite` (a spec is parsed without files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// `workloads.precondition`: each layout written twice over before its workloads (SNIA
    /// PTS), so a cache or an SSD is measured in the state it will be in use, not fresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition: Option<crate::spec::Precondition>,
    /// `workloads.steady_state`: every closed-loop block-IO workload runs in rounds until
    /// steady by PTS's rules (see [`LabWorkloads::suite_to_run`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::spec::SteadyState>,
}

impl LabWorkloads {
    /// The suite each layout runs: [`LabWorkloads::suite`] with the lab's steady-state rounds
    /// given to every closed-loop block-IO workload without its own (applied here, at run
    /// time, so `--quick`, the command line's overrides and trace models get them too).
    /// Open-loop, SLO and replay workloads keep their own timing: their figures are at a
    /// schedule, not a device's settled state.
    pub fn suite_to_run(&self) -> Suite {
        let mut suite = self.suite.clone();
        if let Some(st) = self.steady {
            for w in &mut suite.workloads {
                if let crate::spec::WorkloadKind::Io(io) = &mut w.kind {
                    let scheduled =
                        io.open_loop.is_some() || io.slo.is_some() || io.replay.is_some();
                    if !scheduled && io.steady.is_none() {
                        io.steady = Some(st);
                        io.total_bytes = None;
                    }
                }
            }
        }
        suite
    }
}

/// A validated lab spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabSpec {
    /// Lab name (the spec's `name`, else the file stem).
    pub name: String,
    /// The spec file, for messages.
    pub file: String,
    /// The disks.
    pub disks: Disks,
    /// Disks emulated as slow (`[disks] slow`).
    pub slow_disks: Vec<SlowDisk>,
    /// The layouts in order.
    pub layouts: Vec<LayoutSpec>,
    /// The workloads.
    pub workloads: LabWorkloads,
    /// `[decide]`: what the lab decides by at its end; `None` without the table.
    pub decide: Option<crate::spec::decide::DecideSpec>,
}

impl LabSpec {
    /// `--quick`: the quick profile, one trial — a smoke test of the layouts.
    pub fn quick(&mut self) {
        let scale = ProfileScale {
            size: self.workloads.size,
            runtime: self.workloads.runtime,
            scale: None,
        };
        if let Some(s) = profiles::profile("quick", scale) {
            self.workloads.profiles = vec!["quick".into()];
            self.workloads.suite = s;
            self.workloads.repeat = 1;
        }
    }

    /// Command-line overrides of the working set, run time and trials (`--size`, `--time`,
    /// `--repeat`), applied to every block-IO workload. Call before [`LabSpec::quick`].
    pub fn override_workloads(
        &mut self,
        size: Option<u64>,
        runtime: Option<std::time::Duration>,
        repeat: Option<u32>,
    ) {
        if size.is_some() {
            self.workloads.size = size;
        }
        if runtime.is_some() {
            self.workloads.runtime = runtime;
        }
        if let Some(r) = repeat {
            self.workloads.repeat = r;
        }
        for w in &mut self.workloads.suite.workloads {
            if let crate::spec::WorkloadKind::Io(io) = &mut w.kind {
                if let Some(s) = size {
                    io.size = Some(s);
                    if io.total_bytes.is_some() {
                        io.total_bytes = Some(s);
                    }
                }
                if let Some(t) = runtime {
                    if io.runtime.is_some() {
                        io.runtime = Some(t);
                        io.ramp = io.ramp.min(t / 4);
                    }
                }
            }
        }
    }

    /// Replaces the loop disks' directory (`--disk-dir`).
    pub fn set_disk_dir(&mut self, d: PathBuf) {
        if let Disks::Loop { dir, .. } = &mut self.disks {
            *dir = d;
        }
    }

    /// Checks `[decide]` (with any flags laid over it) against this lab's layouts and
    /// workloads; the error reads `decide.KEY: what and how to fix`.
    pub fn check_decide(&self) -> Result<(), String> {
        match &self.decide {
            None => Ok(()),
            Some(d) => decide::check(d, &self.layouts, &self.workloads)
                .map_err(|e| format!("decide.{}: {}", e.key, e.msg)),
        }
    }

    /// The layout named `name`.
    pub fn layout(&self, name: &str) -> Option<&LayoutSpec> {
        self.layouts.iter().find(|l| l.name == name)
    }
}

/// Parses and validates a lab spec against this machine (devices, directories); `file` names
/// it in errors.
pub fn parse_lab(text: &str, file: &str) -> Result<LabSpec, SpecError> {
    parse_lab_with(text, file, &ThisMachine)
}

/// Parses and validates a lab spec from the text alone: no filesystem, no process, and no panic
/// on any input (a fuzzing target). Devices are taken to be block devices of unknown size and
/// directories to exist; everything else is checked as [`parse_lab`] checks it.
pub fn parse_lab_spec(text: &str, file: &str) -> Result<LabSpec, SpecError> {
    parse_lab_with(text, file, &TextOnly)
}

/// Parses and validates a lab spec, asking `host` about devices and directories.
pub fn parse_lab_with(text: &str, file: &str, host: &dyn Host) -> Result<LabSpec, SpecError> {
    let loc = Locator { text, file };
    let raw: RawLab = toml::from_str(text).map_err(|e| loc.toml_err(&e))?;
    let disks = disks::parse_disks(&loc, raw.disks.as_ref(), host)?;
    let slow_disks = disks::parse_slow(&loc, raw.disks.as_ref(), &disks)?;
    if raw.layout.is_empty() {
        return Err(loc.err(
            None,
            "layout",
            "the lab has no [[layout]]; add at least one (a name and a stack, or dir = \"...\")",
        ));
    }
    let mut layouts: Vec<LayoutSpec> = Vec::new();
    for (i, e) in vary::expand(&loc, raw.layout)?.iter().enumerate() {
        let l = &e.raw;
        let mut lay = layout::parse_layout(&loc, i, l, &disks, host).map_err(|mut err| {
            // A combination's error names the combination, not the layout it came from.
            if let (Some(n), Some(base)) = (&e.name, &l.get_ref().name) {
                err.key = err
                    .key
                    .replacen(&format!("layout[{base}]"), &format!("layout[{n}]"), 1);
            }
            err
        })?;
        if let Some(n) = &e.name {
            lay.name.clone_from(n);
        }
        if layouts.iter().any(|o| o.name == lay.name) {
            return Err(loc.err(
                Some(loc.line_of_key(l.span().start, "layout", "name")),
                format!("layout[{}].name", lay.name),
                format!("duplicate layout name '{}'; names must be unique", lay.name),
            ));
        }
        layouts.push(lay);
    }
    let workloads = workloads::parse_workloads(&loc, raw.workloads.as_ref(), &layouts)?;
    let decide = decide::parse_decide(&loc, raw.decide.as_ref(), &layouts, &workloads)?;
    let name = raw.name.unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or_else(|| "lab".to_string(), |s| s.to_string_lossy().into_owned())
    });
    Ok(LabSpec {
        name,
        file: file.to_string(),
        disks,
        slow_disks,
        layouts,
        workloads,
        decide,
    })
}

/// Reads and validates a lab spec file.
pub fn parse_lab_file(path: &Path) -> Result<LabSpec, SpecError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SpecError {
        file: Some(name.clone()),
        line: None,
        key: String::new(),
        msg: format!("cannot read lab spec: {e}"),
    })?;
    parse_lab(&text, &name)
}

#[cfg(test)]
mod tests;
