//! Reading a decision's JSON in the tests that decide a lab: tests/decide.rs on the
//! host, tests/vm_decide.rs in the VM.

use serde_json::Value;

/// The decision's row of layout `name`; panics with the whole decision when there is none.
pub(crate) fn row<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {d:#}"))
}

/// The needs a row misses, in order (`min_usable`, `max_loss_5y`, ...).
pub(crate) fn missed_needs(r: &Value) -> Vec<&str> {
    r["misses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["need"].as_str().unwrap())
        .collect()
}
