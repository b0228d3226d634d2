//! The lab spec parser, every layer (disks, mdadm, lvm, btrfs, zfs, fs, failures, fill,
//! workloads), from the text alone: any text is `Ok` or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(spec) = iolab::spec::lab::parse_lab_spec(text, "fuzz.toml") {
            // What the lab prints and plans from a parsed spec must not panic either.
            for l in &spec.layouts {
                let _ = l.describe();
            }
        }
    }
});
