//! fio JSON results (`iolab import`): parse, then build the run record that would be stored.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(out) = iolab::fio::parse_output(text, "fuzz.json") {
            let meta = iolab::fio::ImportMeta {
                file: "fuzz.json".into(),
                command_line: Vec::new(),
                label: None,
                note: None,
            };
            let rec = iolab::fio::to_run_record(&out, text, &meta);
            let _ = iolab::report::terminal::run_table(&rec);
        }
    }
});
