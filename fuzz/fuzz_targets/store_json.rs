//! The store's reading of exported and stored JSON: an `iolab export` document
//! (`iolab-runs/1`, runs as stored), a single run record, a layout record, and the v1 -> v2
//! layout migration, on arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use iolab::sample::{LayoutRecord, RunRecord};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let runs: Vec<serde_json::Value> = match v.get("runs").and_then(|r| r.as_array()) {
        Some(a) => a.clone(),
        None => vec![v.clone()],
    };
    for r in runs {
        if let Ok(rec) = serde_json::from_value::<RunRecord>(r) {
            let _ = iolab::report::terminal::run_table(&rec);
            let text = serde_json::to_string(&rec).expect("a parsed record serialises");
            serde_json::from_str::<RunRecord>(&text).expect("and parses back");
        }
    }
    let _ = serde_json::from_value::<LayoutRecord>(v.clone());
    let r = iolab::store::schema::v2::from_v1(&v);
    let _ = serde_json::to_string(&r);
});
