//! The lab spec lives with the workload spec in [`crate::spec::lab`]; this re-export keeps the
//! `lab::spec` paths the driver, report and CLI use.

pub use crate::spec::lab::*;
