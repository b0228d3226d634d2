//! Size and time units (`--size 1EiB`, `--time 2m`, fio's `bs=4k`, `runtime=10s`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(n) = iolab::units::parse_bytes(s) {
            let _ = iolab::units::format_bytes(n);
            let _ = iolab::units::format_bytes_si(n);
        }
        if let Ok(d) = iolab::units::parse_duration(s) {
            let _ = iolab::units::format_duration(d);
        }
        let _ = iolab::units::Bytes::parse(s);
        let _ = iolab::fio::jobfile::parse_fio_size(s);
        let _ = iolab::fio::jobfile::parse_fio_time_ns(s, 1_000_000_000);
    }
});
