//! fio job files (`iolab run --fio-job`, `iolab spec --from-fio`): parse, then convert.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        // No include directive may reach outside an empty directory.
        let dir = std::path::Path::new("/nonexistent-iolab-fuzz");
        if let Ok(jf) = iolab::fio::parse_job_text(text, "fuzz.fio", dir) {
            let _ = iolab::fio::convert(&jf, "fuzz", true);
            let _ = iolab::fio::convert(&jf, "fuzz", false);
        }
    }
});
