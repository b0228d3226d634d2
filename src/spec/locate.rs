//! What the workload spec and the lab spec share: the values a field may be written as (a size
//! as bytes or `"4k"`, a time as seconds or `"30s"`, a word or a list) and the [`Locator`] that
//! finds the line a field sits on, so every error reads `file:line: key: what and how to fix`.
//!
//! Everything here works on any text: offsets past the end or inside a multi-byte character are
//! clamped, never sliced, so a garbled file gives an error, not a panic.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::SpecError;
use crate::units;

/// A size written as a number of bytes or as a human string (`4k`, `1MiB`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SizeValue {
    /// Plain bytes (TOML integers are signed: a negative one is refused by [`SizeValue::bytes`]).
    Bytes(i64),
    /// A string with a unit.
    Text(String),
}

impl SizeValue {
    /// The bytes, or why not (negative, bad unit); the caller names the field.
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            SizeValue::Bytes(b) => u64::try_from(*b).map_err(|_| "must not be negative".into()),
            SizeValue::Text(s) => units::parse_bytes(s).map_err(|e| e.to_string()),
        }
    }

    /// The exact value of `b` as a spec would write it: plain bytes, or text when it does not
    /// fit a TOML integer.
    pub fn from_bytes(b: u64) -> SizeValue {
        i64::try_from(b).map_or_else(|_| SizeValue::Text(b.to_string()), SizeValue::Bytes)
    }
}

/// A duration written as seconds or as a human string (`30s`, `2m`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TimeValue {
    /// Seconds.
    Secs(f64),
    /// A string with a unit.
    Text(String),
}

impl TimeValue {
    /// The duration, zero allowed (a workload's `ramp`); the caller names the field.
    pub fn duration(&self) -> Result<Duration, String> {
        match self {
            TimeValue::Secs(s) if s.is_finite() && *s >= 0.0 && *s < 1e12 => {
                Ok(Duration::from_secs_f64(*s))
            }
            TimeValue::Secs(_) => Err("must be a non-negative number of seconds".into()),
            TimeValue::Text(s) => units::parse_duration(s).map_err(|e| e.to_string()),
        }
    }

    /// The duration, where a number of seconds must be more than zero (the lab's run time).
    pub fn positive_duration(&self) -> Result<Duration, String> {
        match self {
            TimeValue::Secs(s) if s.is_finite() && *s > 0.0 && *s < 1e9 => {
                Ok(Duration::from_secs_f64(*s))
            }
            TimeValue::Secs(_) => Err("must be a positive number of seconds".into()),
            TimeValue::Text(s) => units::parse_duration(s).map_err(|e| e.to_string()),
        }
    }
}

/// A value written as a number or a word (`level = 6` or `level = "raid6"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IntOrStr {
    /// A number.
    Int(i64),
    /// A word.
    Text(String),
}

impl IntOrStr {
    /// The value as text, however it was written.
    pub fn text(&self) -> String {
        match self {
            IntOrStr::Int(n) => n.to_string(),
            IntOrStr::Text(s) => s.clone(),
        }
    }
}

/// Options written as one string (`"noatime,nodiratime"`) or as a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StrList {
    /// One string, split by the caller's rule.
    One(String),
    /// A list, taken as it is.
    Many(Vec<String>),
}

/// The items of an optional list; a single string is cut by `split`.
pub fn list_of(v: &Option<StrList>, split: fn(&str) -> Vec<String>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(StrList::One(s)) => split(s),
        Some(StrList::Many(v)) => v.clone(),
    }
}

/// Splits at whitespace (mkfs arguments).
pub fn split_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// Splits at commas, dropping empty items (mount options, profile names).
pub fn split_commas(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// One spec's text and file name: turns byte offsets and keys into lines, and builds the
/// errors that name them.
pub struct Locator<'a> {
    /// The whole spec.
    pub text: &'a str,
    /// The file, as errors name it.
    pub file: &'a str,
}

impl Locator<'_> {
    /// The 1-based line holding byte `byte` (the last line when past the end).
    pub fn line_of(&self, byte: usize) -> usize {
        let end = byte.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1
    }

    /// The line of `key = ...` in the table starting at byte `start`, else the table's first
    /// line. The table runs until the next header that is not one of its own sub-tables
    /// (`[subtable.mdadm]`); `key` is found at the start of a line or inside an inline table.
    pub fn line_of_key(&self, start: usize, subtable: &str, key: &str) -> usize {
        let start = self.floor(start);
        // Back up to the start of the line holding the header.
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let own = format!("[{subtable}.");
        let mut off = line_start;
        for (n, l) in self.text[line_start..].split_inclusive('\n').enumerate() {
            let t = l.trim_start();
            if n > 0 && t.starts_with('[') && !t.starts_with(&own) {
                break;
            }
            if find_key(t, key).is_some() {
                return self.line_of(off);
            }
            off += l.len();
        }
        self.line_of(start)
    }

    /// An error about `key` on `line` of this file.
    pub fn err(
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

    /// A TOML syntax or type error as one line, at the line the parser points to.
    pub fn toml_err(&self, e: &toml::de::Error) -> SpecError {
        let line = e.span().map(|s| self.line_of(s.start));
        self.err(line, "", e.message().trim().replace('\n', " "))
    }

    /// `byte` moved back to a character boundary inside the text.
    fn floor(&self, byte: usize) -> usize {
        let mut b = byte.min(self.text.len());
        while !self.text.is_char_boundary(b) {
            b -= 1;
        }
        b
    }
}

/// Where `key =` appears in a line as a key (start of line, or after `{` or `,` in an inline table).
pub fn find_key(line: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_in_their_own_table_only() {
        let text = "[[layout]]\nname = \"a\"\nmdadm = { level = 5 }\n[layout.fs]\nx = 1\n[[layout]]\nlevel = 6\n";
        let loc = Locator { text, file: "f" };
        assert_eq!(loc.line_of_key(0, "layout", "level"), 3);
        assert_eq!(loc.line_of_key(0, "layout", "x"), 5);
        // Not in this table: the table's own first line.
        assert_eq!(loc.line_of_key(0, "layout", "missing"), 1);
        assert_eq!(loc.line_of(usize::MAX), 8);
    }

    #[test]
    fn offsets_inside_a_character_do_not_panic() {
        let loc = Locator {
            text: "é = 1\n",
            file: "f",
        };
        assert_eq!(loc.line_of_key(1, "x", "é"), 1);
        assert_eq!(loc.line_of(1), 1);
    }

    #[test]
    fn values_say_what_is_wrong() {
        assert_eq!(
            SizeValue::Bytes(-1).bytes(),
            Err("must not be negative".into())
        );
        assert_eq!(SizeValue::Text("4k".into()).bytes(), Ok(4096));
        assert!(TimeValue::Secs(0.0).positive_duration().is_err());
        assert_eq!(TimeValue::Secs(0.0).duration(), Ok(Duration::ZERO));
        assert_eq!(SizeValue::from_bytes(u64::MAX).bytes(), Ok(u64::MAX));
    }
}
