//! The workload spec parser (`iolab run --spec FILE`): any text is `Ok` or a one-line error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match iolab::spec::parse_spec(text, "fuzz.toml") {
            Ok(suite) => {
                // What parses must also print back as a spec that parses.
                let back = iolab::spec::suite_to_toml(&suite);
                let _ = iolab::spec::parse_spec(&back, "back.toml");
            }
            Err(e) => assert!(!e.to_string().contains('\n') || e.to_string().len() < 4096),
        }
    }
});
