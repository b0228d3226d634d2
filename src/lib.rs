//! iolab: a storage lab in one binary.
//!
//! Data flows one way, one module per stage:
//! `spec` (what to run) -> `layout`/`lab` (what to run it on) -> `engine` + `runner` (doing the IO)
//! -> `sample` (what one trial measured) -> `stats` (what many trials say) -> `store` (kept with
//! the exact setup) -> `report` (what people read). `system` and `target` describe the machine and
//! the thing under test; `disks` and `plan` are commands of their own built on the same stages.
//! A module imports only from the stages before it; `error` (usage errors, exit codes, one-line
//! messages) and `csv` (quoting) import nothing and sit under every stage.
#![deny(unsafe_code)]

pub mod csv;
pub mod error;
pub mod units;

pub mod spec;
pub mod system;
pub mod target;

#[allow(unsafe_code)] // io_uring, aligned and huge-page buffers: the engines' own contracts.
pub mod engine;
pub mod runner;
pub mod sample;

pub mod stats;
pub mod store;

pub mod session;

pub mod decide;

pub mod report;

pub mod disks;
pub mod fio;
pub mod hosts;
pub mod lab;
pub mod layout;
pub mod plan;
pub mod vm;

pub mod pause;
pub mod progress;
pub mod signals;
#[allow(unsafe_code)] // the few syscalls no safe crate wraps.
pub mod sys;

pub mod cli;
