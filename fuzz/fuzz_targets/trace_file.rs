//! Trace files (`iolab capture --show`, `--replay`): any bytes are refused with an error or
//! read into a trace whose model can be computed — never a panic, never a huge allocation
//! from a header's claim.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = iolab::trace::read_trace_bytes(data, "fuzz.trace") {
        let m = iolab::trace::model::Model::of(&t);
        let _ = m.table();
        let _ = iolab::trace::to_spec::from_model(&m, "fuzz");
    }
});
