//! iolab: a storage lab in one binary.
//!
//! Data flows one way, one module per stage:
//! `spec` (what to run) -> `layout`/`lab` (what to run it on) -> `engine` + `runner` (doing the IO)
//! -> `sample` (what one trial measured) -> `stats` (what many trials say) -> `store` (kept with
//! the exact setup) -> `report` (what people read). `system` and `target` describe the machine and
//! the thing under test; `stack` is the storage stack as plain data; `disks`, `hosts`, `lab`,
//! `vm` and `plan` are commands of their own built on the same stages.
//!
//! The modules are declared below in the stage order, bottom first, floor by floor: a module
//! imports only from the modules declared before it, and no two files import each other
//! (`tests/architecture.rs` reads every `crate::` and `super::` path and fails on one that
//! does; `docs/architecture.md` gives the same order):
//!
//! error < csv < units < output < sys < signals < pause < progress < system < target < stack <
//! spec < trace < layout < engine < sample < capture < stats < plan < fio < runner < store < session < disks <
//! hosts < lab < decide < vm < report < cli
#![deny(unsafe_code)]

// Under every stage: errors and exit codes, CSV quoting, units, medians and quantiles, the
// printed table, the few raw syscalls, Ctrl-C, the test pause hook, progress counters.
pub mod error;

pub mod csv;
pub mod units;

pub mod quantile;

pub mod output;
#[allow(unsafe_code)] // the few syscalls no safe crate wraps.
pub mod sys;

pub mod signals;

pub mod pause;
pub mod progress;

// The machine and the thing under test.
pub mod system;
pub mod target;

// What to build and what to run: the storage stack as plain data, the specs.
pub mod stack;

pub mod spec;

// Block IO traces (read by replay, made by capture).
pub mod trace;

// Doing it: building stacks on disks, the IO engines.
pub mod layout;

#[allow(unsafe_code)] // io_uring, aligned and huge-page buffers: the engines' own contracts.
pub mod engine;

// What was measured and what it says: records, statistics, the planner's model, fio's files.
pub mod sample;

// Recording a real server's IO: needs the sample clock and the trace file.
pub mod capture;

pub mod stats;

pub mod plan;

pub mod fio;

// Running suites and keeping every trial.
pub mod runner;

pub mod store;

pub mod session;

// Commands built on the stages: the disk census, many hosts, the lab, the lab in a VM.
pub mod disks;

pub mod hosts;

// The decision: which layout, from the lab's measurements, the planner and the needs (the
// lab decides at its end, so it comes first).
pub mod decide;

pub mod lab;

pub mod vm;

// What people read, and the command line.
pub mod report;

pub mod cli;
