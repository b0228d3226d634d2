//! The spec as written (every field optional, unknown fields refused) and the helpers that
//! find where a field sits in the file for error messages.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::spec::{RawWorkload, SpecError};
use crate::units;

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum SizeVal {
    Bytes(i64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum TimeVal {
    Secs(f64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum IntOrStr {
    Int(i64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum StrList {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) name: Option<String>,
    pub(super) disks: Option<Spanned<RawDisks>>,
    #[serde(default)]
    pub(super) layout: Vec<Spanned<RawLayout>>,
    pub(super) workloads: Option<Spanned<RawWorkloads>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDisks {
    pub(super) devices: Option<Vec<String>>,
    #[serde(rename = "loop")]
    pub(super) loop_disks: Option<RawLoop>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoop {
    pub(super) count: Option<i64>,
    pub(super) size: Option<SizeVal>,
    pub(super) dir: Option<String>,
    pub(super) direct_io: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLayout {
    pub(super) name: Option<String>,
    pub(super) dir: Option<String>,
    pub(super) btrfs: Option<RawBtrfs>,
    pub(super) mdadm: Option<RawMd>,
    pub(super) lvm: Option<bool>,
    pub(super) fs: Option<String>,
    pub(super) mkfs_options: Option<StrList>,
    pub(super) mount_options: Option<StrList>,
    pub(super) degrade: Option<bool>,
    pub(super) rebuild: Option<bool>,
    pub(super) failures: Option<i64>,
    pub(super) fill: Option<SizeVal>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBtrfs {
    pub(super) data: Option<String>,
    pub(super) metadata: Option<String>,
    pub(super) members: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMd {
    pub(super) level: Option<IntOrStr>,
    pub(super) members: Option<i64>,
    pub(super) spares: Option<i64>,
    pub(super) chunk: Option<SizeVal>,
    pub(super) bitmap: Option<String>,
    pub(super) bitmap_chunk: Option<SizeVal>,
    pub(super) assume_clean: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkloads {
    pub(super) profiles: Option<StrList>,
    pub(super) repeat: Option<i64>,
    pub(super) baseline: Option<String>,
    pub(super) size: Option<SizeVal>,
    pub(super) time: Option<TimeVal>,
    pub(super) defaults: Option<RawWorkload>,
    #[serde(default)]
    pub(super) workload: Vec<Spanned<RawWorkload>>,
}

/// Finds the line of `key = ` in the table starting at byte `start`: the table runs until the
/// next header that is not one of its own sub-tables (`[layout.mdadm]`).
pub(super) struct Locator<'a> {
    pub(super) text: &'a str,
    pub(super) file: &'a str,
}

impl Locator<'_> {
    pub(super) fn line_of(&self, byte: usize) -> usize {
        self.text[..byte.min(self.text.len())]
            .bytes()
            .filter(|b| *b == b'\n')
            .count()
            + 1
    }

    pub(super) fn line_of_key(&self, start: usize, subtable: &str, key: &str) -> usize {
        let start = start.min(self.text.len());
        // Back up to the start of the line holding the header.
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let mut off = line_start;
        let mut first = true;
        for l in self.text[line_start..].split_inclusive('\n') {
            let t = l.trim_start();
            if !first && t.starts_with('[') && !t.starts_with(&format!("[{subtable}.")) {
                break;
            }
            first = false;
            if let Some(i) = find_key(t, key) {
                let _ = i;
                return self.line_of(off);
            }
            off += l.len();
        }
        self.line_of(start)
    }

    pub(super) fn err(
        &self,
        line: Option<usize>,
        key: impl Into<String>,
        msg: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: Some(self.file.to_string()),
            line,
            key: key.into(),
            msg: msg.into(),
        }
    }
}

/// Where `key =` appears in a line as a key (start of line, or after `{` or `,` in an inline table).
pub(super) fn find_key(line: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = line[from..].find(key) {
        let at = from + i;
        let before = line[..at].trim_end();
        let ok_before = before.is_empty() || before.ends_with('{') || before.ends_with(',');
        let after = line[at + key.len()..].trim_start();
        if ok_before && after.starts_with('=') && !after.starts_with("==") {
            return Some(at);
        }
        from = at + key.len();
    }
    None
}

pub(super) fn size_of(v: &SizeVal) -> Result<u64, String> {
    match v {
        SizeVal::Bytes(b) if *b >= 0 => Ok(*b as u64),
        SizeVal::Bytes(_) => Err("must not be negative".into()),
        SizeVal::Text(s) => units::parse_bytes(s).map_err(|e| e.to_string()),
    }
}

pub(super) fn time_of(v: &TimeVal) -> Result<Duration, String> {
    match v {
        TimeVal::Secs(s) if s.is_finite() && *s > 0.0 && *s < 1e9 => {
            Ok(Duration::from_secs_f64(*s))
        }
        TimeVal::Secs(_) => Err("must be a positive number of seconds".into()),
        TimeVal::Text(s) => units::parse_duration(s).map_err(|e| e.to_string()),
    }
}

pub(super) fn list_of(v: &Option<StrList>, split: fn(&str) -> Vec<String>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(StrList::One(s)) => split(s),
        Some(StrList::Many(v)) => v.clone(),
    }
}

pub(super) fn split_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

pub(super) fn split_commas(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}
