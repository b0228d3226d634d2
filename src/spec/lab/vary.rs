//! Sweeps: `vary = { "mdadm.chunk" = ["64KiB", "256KiB"], fs = ["xfs", "ext4"] }`
//! on a layout expands it into the product of the values, one layout per combination, named
//! `NAME[chunk=64KiB,fs=xfs]`. The expansion works on the layout's table as written: each
//! combination is that table with the keys set, read again exactly as any layout is, so any
//! key of any section can vary, and a value its section refuses is refused as if written out.

use serde::Deserialize;
use toml::{Spanned, Table, Value};

use super::raw::RawLayout;
use crate::spec::SpecError;
use crate::spec::locate::Locator;

/// The most layouts one sweep expands into unless its layout raises `max_layouts`.
pub(super) const MAX_LAYOUTS: usize = 64;

/// Keys a sweep cannot vary: the name (each combination gets its own), the sweep itself, and
/// `dir` (an existing directory is one place, not a setting).
const FIXED: [&str; 4] = ["name", "vary", "max_layouts", "dir"];

/// One layout of a sweep: the name it is shown under, and the base name its errors would give.
pub(super) struct Expanded {
    /// The layout as read from its combination's table.
    pub(super) raw: Spanned<RawLayout>,
    /// `NAME[key=value,...]`, or `None` for a layout that does not vary.
    pub(super) name: Option<String>,
}

/// Every layout of the spec, sweeps expanded in place, in order.
pub(super) fn expand(
    loc: &Locator,
    layouts: Vec<Spanned<RawLayout>>,
) -> Result<Vec<Expanded>, SpecError> {
    if layouts.iter().all(|l| l.get_ref().vary.is_none()) {
        return Ok(layouts
            .into_iter()
            .map(|raw| Expanded { raw, name: None })
            .collect());
    }
    // The layout tables as written: serde has already checked their shape.
    let doc: Table = loc.text.parse().map_err(|e| loc.toml_err(&e))?;
    let tables: Vec<Value> = doc
        .get("layout")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, l) in layouts.into_iter().enumerate() {
        let Some(vary) = l.get_ref().vary.clone() else {
            out.push(Expanded { raw: l, name: None });
            continue;
        };
        let Some(Value::Table(table)) = tables.get(i) else {
            return Err(loc.err(None, format!("layout[{}].vary", i + 1), "not a table"));
        };
        out.extend(expand_one(loc, i, &l, table, &vary)?);
    }
    Ok(out)
}

/// One layout's sweep.
fn expand_one(
    loc: &Locator,
    i: usize,
    l: &Spanned<RawLayout>,
    table: &Table,
    vary: &Table,
) -> Result<Vec<Expanded>, SpecError> {
    let start = l.span().start;
    let base = l
        .get_ref()
        .name
        .clone()
        .unwrap_or_else(|| format!("{}", i + 1));
    let line = Some(loc.line_of_key(start, "layout", "vary"));
    let err = |key: &str, msg: String| {
        let k = if key.is_empty() {
            format!("layout[{base}].vary")
        } else {
            format!("layout[{base}].vary.{key}")
        };
        loc.err(line, k, msg)
    };
    let axes = axes(vary, &err)?;
    let limit = limit(loc, start, &base, l.get_ref().max_layouts)?;
    let total = axes
        .iter()
        .try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()))
        .unwrap_or(usize::MAX);
    if total > limit {
        return Err(err(
            "",
            format!(
                "{total} combinations, over the limit of {limit}; drop values, or raise max_layouts = {total} if you mean it"
            ),
        ));
    }
    let mut out = Vec::with_capacity(total);
    for k in 0..total {
        let picks = pick(&axes, k);
        let (name, raw) = combination(table, &picks, &base, &err)?;
        out.push(Expanded {
            raw: Spanned::new(l.span(), raw),
            name: Some(name),
        });
    }
    Ok(out)
}

/// The keys a sweep varies with their values, in the order written: a fixed key, an empty
/// path segment or a key without a list of values is refused here, before any combination
/// is built, so the error names the key rather than a combination.
fn axes<'a>(
    vary: &'a Table,
    err: &impl Fn(&str, String) -> SpecError,
) -> Result<Vec<(&'a str, &'a Vec<Value>)>, SpecError> {
    if vary.is_empty() {
        return Err(err(
            "",
            "empty; give keys and their values, e.g. vary = { \"mdadm.chunk\" = [\"64KiB\", \"256KiB\"] }".into(),
        ));
    }
    let mut axes: Vec<(&str, &Vec<Value>)> = Vec::new();
    for (key, values) in vary {
        if FIXED.contains(&key.as_str()) || key.split('.').any(str::is_empty) {
            return Err(err(
                key,
                format!(
                    "'{key}' cannot vary; vary a setting such as \"mdadm.chunk\", \"fs\" or \"btrfs.data\""
                ),
            ));
        }
        match values {
            Value::Array(v) if !v.is_empty() => axes.push((key, v)),
            _ => {
                return Err(err(
                    key,
                    "give a list of the values to try, e.g. [\"64KiB\", \"256KiB\"]".into(),
                ));
            }
        }
    }
    Ok(axes)
}

/// The most combinations this layout may expand into: its `max_layouts` (at least 1) or
/// [`MAX_LAYOUTS`], so a sweep that multiplies out by mistake is stopped before it runs.
fn limit(
    loc: &Locator,
    start: usize,
    base: &str,
    max_layouts: Option<i64>,
) -> Result<usize, SpecError> {
    match max_layouts {
        None => Ok(MAX_LAYOUTS),
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(_) => Err(loc.err(
            Some(loc.line_of_key(start, "layout", "max_layouts")),
            format!("layout[{base}].max_layouts"),
            "must be at least 1",
        )),
    }
}

/// The `k`-th combination of the axes' values, one per axis: the first key varies slowest,
/// so the layouts come out in the order a reader would write them by hand.
fn pick<'a>(axes: &[(&'a str, &'a Vec<Value>)], k: usize) -> Vec<(&'a str, &'a Value)> {
    let mut rest = k;
    let mut picks: Vec<(&str, &Value)> = vec![("", &Value::Boolean(false)); axes.len()];
    for (slot, (key, values)) in axes.iter().enumerate().rev() {
        picks[slot] = (key, &values[rest % values.len()]);
        rest /= values.len();
    }
    picks
}

/// One combination's name and layout: the layout's table with the sweep's keys dropped and
/// the picked values set, read again exactly as a written-out layout is, so a value its
/// section refuses is refused the same way (named after the combination).
fn combination(
    table: &Table,
    picks: &[(&str, &Value)],
    base: &str,
    err: &impl Fn(&str, String) -> SpecError,
) -> Result<(String, RawLayout), SpecError> {
    let mut t = table.clone();
    t.remove("vary");
    t.remove("max_layouts");
    for (key, value) in picks {
        set(&mut t, key, (*value).clone()).map_err(|m| err(key, m))?;
    }
    let shown: Vec<String> = picks
        .iter()
        .map(|(key, v)| format!("{}={}", key.rsplit('.').next().unwrap_or(key), show(v)))
        .collect();
    let name = format!("{base}[{}]", shown.join(","));
    let raw = RawLayout::deserialize(Value::Table(t)).map_err(|e| {
        err(
            "",
            format!("{name}: {}", e.message().trim().replace('\n', " ")),
        )
    })?;
    Ok((name, raw))
}

/// Sets the dotted `key` (`mdadm.chunk`) in `t`, making the tables on the way.
fn set(t: &mut Table, key: &str, value: Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or(key);
    let mut at = t;
    for p in parts {
        let next = at
            .entry(p.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        at = match next {
            Value::Table(inner) => inner,
            _ => {
                return Err(format!(
                    "'{p}' is not a table here, so '{key}' cannot be set"
                ));
            }
        };
    }
    at.insert(last.to_string(), value);
    Ok(())
}

/// A value as a layout name shows it: strings bare, anything else as TOML writes it, and
/// characters a name must not hold (spaces, '/', quotes) as '_'.
fn show(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+-:".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
