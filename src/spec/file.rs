//! Spec files: a TOML list of named workloads, with optional shared defaults.
//!
//! ```toml
//! name = "my-suite"
//! [defaults]          # applies to every workload below
//! size = "2GiB"
//! [[workload]]
//! name = "oltp"
//! pattern = "randrw"
//! bs = "8k"
//! qd = 32
//! read_pct = 70
//! time = "30s"
//! ```

use serde::{Deserialize, Serialize};

use super::SpecError;
use super::raw::RawWorkload;
use super::workload::Suite;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    #[serde(default)]
    defaults: Option<toml::Spanned<RawWorkload>>,
    #[serde(default)]
    workload: Vec<toml::Spanned<RawWorkload>>,
}

#[derive(Serialize)]
struct OutSpec<'a> {
    name: &'a str,
    workload: Vec<RawWorkload>,
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// The line of `key = ...` inside a table's byte range, or the table's first line.
fn line_of_key(text: &str, span: std::ops::Range<usize>, key: &str) -> usize {
    // A table's span may cover only its header: the body runs to the next header line.
    let start = span.start.min(text.len());
    let after_header = text[start..]
        .find('\n')
        .map_or(text.len(), |i| start + i + 1);
    let end = text[after_header..]
        .match_indices('\n')
        .map(|(i, _)| after_header + i + 1)
        .find(|&i| text[i..].trim_start().starts_with('['))
        .unwrap_or(text.len())
        .max(span.end.min(text.len()));
    let body = &text[start..end];
    let mut off = 0;
    for l in body.split_inclusive('\n') {
        let t = l.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                return line_of(text, start + off);
            }
        }
        off += l.len();
    }
    line_of(text, start)
}

/// Parses a spec from text; `file` names it in errors.
pub fn parse_spec(text: &str, file: &str) -> Result<Suite, SpecError> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        let msg = e.message().trim().replace('\n', " ");
        SpecError {
            file: Some(file.to_string()),
            line,
            key: String::new(),
            msg,
        }
    })?;
    if raw.workload.is_empty() {
        return Err(SpecError {
            file: Some(file.to_string()),
            line: None,
            key: "workload".into(),
            msg: "the spec has no [[workload]] table; add at least one".into(),
        });
    }
    let defaults = raw
        .defaults
        .as_ref()
        .map(|d| d.get_ref().clone())
        .unwrap_or_default();
    let mut workloads = Vec::new();
    for (i, w) in raw.workload.iter().enumerate() {
        let span = w.span();
        let merged = w.get_ref().clone().or(&defaults);
        let valid = merged.validate().map_err(|mut e| {
            let in_item = w.get_ref().clone().or(&RawWorkload::default());
            let key_in_item = key_is_set(&in_item, &e.key);
            e.line = Some(if key_in_item {
                line_of_key(text, span.clone(), &e.key)
            } else if let Some(d) = &raw.defaults {
                line_of_key(text, d.span(), &e.key)
            } else {
                line_of(text, span.start)
            });
            e.file = Some(file.to_string());
            e.key = format!("workload[{}].{}", i + 1, e.key);
            e
        })?;
        workloads.push(valid);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, w) in workloads.iter().enumerate() {
        if !seen.insert(w.name.clone()) {
            return Err(SpecError {
                file: Some(file.to_string()),
                line: Some(line_of_key(text, raw.workload[i].span(), "name")),
                key: format!("workload[{}].name", i + 1),
                msg: format!("duplicate workload name '{}'; names must be unique", w.name),
            });
        }
    }
    let name = raw.name.unwrap_or_else(|| {
        std::path::Path::new(file)
            .file_stem()
            .map_or_else(|| "spec".to_string(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Suite { name, workloads })
}

fn key_is_set(r: &RawWorkload, key: &str) -> bool {
    // Serialize the raw item and look for the key: cheap, and stays right as fields are added.
    toml::to_string(r)
        .map(|s| s.lines().any(|l| l.starts_with(&format!("{key} "))))
        .unwrap_or(false)
}

/// Reads and parses a spec file.
pub fn parse_spec_file(path: &std::path::Path) -> Result<Suite, SpecError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SpecError {
        file: Some(name.clone()),
        line: None,
        key: String::new(),
        msg: format!("cannot read spec file: {e}"),
    })?;
    parse_spec(&text, &name)
}

/// A suite as a spec file: what `iolab profiles --show NAME` prints, and what `parse_spec` reads back.
pub fn suite_to_toml(s: &Suite) -> String {
    let out = OutSpec {
        name: &s.name,
        workload: s.workloads.iter().map(RawWorkload::from_workload).collect(),
    };
    toml::to_string(&out).unwrap_or_else(|e| format!("# cannot render spec: {e}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_spec_with_defaults() {
        let s = parse_spec(
            "name = \"t\"\n[defaults]\nsize = \"64MiB\"\n[[workload]]\nname = \"a\"\npattern = \"randrw\"\nbs = \"8k\"\nqd = 32\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(s.workloads.len(), 1);
        let io = s.workloads[0].io().unwrap();
        assert_eq!(io.size, Some(64 << 20));
        assert_eq!(io.block_size, 8192);
    }

    #[test]
    fn errors_carry_file_line_and_key() {
        let e = parse_spec("[[workload]]\nname = \"a\"\n\nqd = 0\n", "x.toml").unwrap_err();
        assert_eq!(e.line, Some(4));
        assert_eq!(e.key, "workload[1].qd");
        assert!(
            e.to_string().starts_with("x.toml:4: workload[1].qd:"),
            "{e}"
        );

        let e = parse_spec("[[workload]]\nbogus = 1\n", "x.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.msg.contains("bogus"), "{e}");

        let e = parse_spec("[[workload]]\nqd = \"many\"\n", "x.toml").unwrap_err();
        assert_eq!(e.line, Some(2));

        let e = parse_spec("name = \"x\"\n", "x.toml").unwrap_err();
        assert_eq!(e.key, "workload");
    }

    #[test]
    fn duplicate_names_are_refused() {
        let e = parse_spec(
            "[[workload]]\nname = \"a\"\n[[workload]]\nname = \"a\"\n",
            "d.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(4));
    }
}
