//! `iolab lab`: build each candidate layout, run the workloads on it, degrade, rebuild, tear down.
//!
//! What our users did by hand — `makeraid5.sh`, `mkfs`, `mount`, `dd` three times, unmount,
//! repeat — as one command that cannot leave a mess. [`spec`] reads and validates the lab file
//! before anything is touched; [`driver`] walks the layouts through build -> workloads ->
//! degrade -> rebuild -> teardown on top of [`crate::layout`], writing a [`dataset`] before
//! degrading and reading it back after every step into an [`integrity`] verdict (kept with the
//! runs, so its types live in `sample`); [`report`] is what comes out (`report::text::lab`
//! draws it for a terminal), and [`summary`] what the lab concludes from its stored runs.
//! The driver takes the workloads as a callback; [`conduct()`] is the whole loop the command
//! line calls: each mounted layout's suite as one stored run, then conclude, save, decide.

pub mod conduct;
pub mod dataset;
pub mod driver;
pub mod held;
pub mod outcomes;
pub mod powercut;
pub mod report;
pub mod spec;
pub mod summary;

pub use crate::sample::integrity;

pub use conduct::{ConductOptions, LabNotes, LabOutcome, SaveError, conduct};
pub use driver::{
    DataHook, DataWritten, LabError, LabEvent, LabHooks, LabOptions, MountedLayout, Phase,
    WorkloadFn, check_devices, new_lab_id, run_lab,
};
pub use report::{LabReport, LayoutReport, LayoutStatus};
pub use spec::{Disks, LabSpec, LabWorkloads, LayoutKind, LayoutSpec, parse_lab, parse_lab_file};
