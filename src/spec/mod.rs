//! What to run and on what: workloads (IO patterns and small-file phases), the built-in
//! profiles, workload spec files, and the [`lab`] spec (disks, layouts, workloads). Raw input
//! (flags or TOML) is validated once into these types; nothing later re-checks it.
//!
//! Both spec files share [`locate`]: the values a field may be written as and the line lookup
//! behind every `file:line: key: message` error. [`parse_spec`] and [`lab::parse_lab_spec`] read
//! a spec from a string alone (no filesystem, no process) and never panic.

mod access;
pub mod decide;
mod file;
pub mod holes;
pub mod lab;
pub mod locate;
pub mod profiles;
mod raw;
mod raw_access;
mod replay;
mod workload;

#[cfg(test)]
mod fuzz_tests;

pub use access::{BsSplit, Distribution, SizeShare, Zone};
pub use file::{parse_spec, parse_spec_file, suite_to_toml};
pub use lab::parse_lab_spec;
pub use locate::{SizeValue, TimeValue};
pub use raw::{RawWorkload, SteadyValue};
pub use replay::{OffsetMap, Replay};
pub use workload::*;

use std::fmt;

/// A field of a spec (file or flags) that is wrong; displays as one line naming where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The file the field came from, when it came from a file.
    pub file: Option<String>,
    /// 1-based line in that file, when known.
    pub line: Option<usize>,
    /// The field (`qd`, `workload[2].bs`, `--bs`).
    pub key: String,
    /// What is wrong and what to do.
    pub msg: String,
}

impl SpecError {
    /// An error about a field with no file position (a command-line flag, a built-in profile).
    pub fn field(key: impl Into<String>, msg: impl Into<String>) -> Self {
        SpecError {
            file: None,
            line: None,
            key: key.into(),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        if self.key.is_empty() {
            write!(f, "{}", self.msg)
        } else {
            write!(f, "{}: {}", self.key, self.msg)
        }
    }
}

impl std::error::Error for SpecError {}
