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
use super::locate::Locator;
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

/// Parses a workload spec from text; `file` names it in errors. Pure: no filesystem, no
/// process, and no panic on any input (a fuzzing target).
pub fn parse_spec(text: &str, file: &str) -> Result<Suite, SpecError> {
    let loc = Locator { text, file };
    let raw: RawSpec = toml::from_str(text).map_err(|e| loc.toml_err(&e))?;
    if raw.workload.is_empty() {
        return Err(loc.err(
            None,
            "workload",
            "the spec has no [[workload]] table; add at least one",
        ));
    }
    let defaults = raw
        .defaults
        .as_ref()
        .map(|d| d.get_ref().clone())
        .unwrap_or_default();
    let mut workloads = Vec::new();
    for (i, w) in raw.workload.iter().enumerate() {
        let start = w.span().start;
        let merged = w.get_ref().clone().or(&defaults);
        let valid = merged.validate().map_err(|e| {
            let line = if key_is_set(w.get_ref(), &e.key) {
                loc.line_of_key(start, "workload", &e.key)
            } else if let Some(d) = &raw.defaults {
                loc.line_of_key(d.span().start, "defaults", &e.key)
            } else {
                loc.line_of(start)
            };
            loc.err(Some(line), format!("workload[{}].{}", i + 1, e.key), e.msg)
        })?;
        workloads.push(valid);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, w) in workloads.iter().enumerate() {
        if !seen.insert(w.name.clone()) {
            return Err(loc.err(
                Some(loc.line_of_key(raw.workload[i].span().start, "workload", "name")),
                format!("workload[{}].name", i + 1),
                format!("duplicate workload name '{}'; names must be unique", w.name),
            ));
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
    toml::to_string(r).is_ok_and(|s| s.lines().any(|l| l.starts_with(&format!("{key} "))))
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
