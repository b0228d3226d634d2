//! What to run: workloads (IO patterns and small-file phases), the built-in profiles, and
//! spec files. Raw input (flags or TOML) is validated once into these types; nothing later
//! re-checks it.

mod file;
pub mod profiles;
mod raw;
mod workload;

pub use file::{parse_spec, parse_spec_file, suite_to_toml};
pub use raw::{RawWorkload, SizeValue, TimeValue};
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
