//! Runners: turn a validated workload into operations on a target and a [`TrialSample`].
//!
//! `io` drives the engines over one file or device; `prepare` makes and lays out the test file;
//! `suite` runs a list of workloads with repeated trials and pushes every finished trial into a
//! sink (the store, the terminal) so nothing measured is lost if a later trial fails;
//! `request` builds the suite `iolab run` asks for from its parsed flags.
//!
//! [`TrialSample`]: crate::sample::TrialSample

pub mod cached;
pub mod data;
pub mod interval;
pub mod io;
pub mod leftovers;
pub mod offsets;
pub mod pace;
pub mod prepare;
pub mod replay;
pub mod request;
pub mod slo;
pub mod smallfile;
pub mod suite;
pub mod trial;
pub mod verify;
mod worker;
