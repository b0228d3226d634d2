//! The trace importers (`iolab capture --import`): blktrace's binary records and fio iologs.
//! The first byte picks the importer, the rest is the file (blktrace: split in two per-CPU
//! files at the second byte's position).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        if let Ok(text) = std::str::from_utf8(rest) {
            if let Ok(t) = iolab::trace::iolog::parse_iolog(text, "fuzz.iolog") {
                let _ = iolab::trace::iolog::to_iolog_v3(&t, "/dev/fuzz");
                let _ = iolab::trace::model::Model::of(&t);
            }
        }
    } else {
        let cut = rest.first().map_or(0, |c| usize::from(*c)).min(rest.len());
        let files = vec![
            ("f.blktrace.0".to_string(), rest[..cut].to_vec()),
            ("f.blktrace.1".to_string(), rest[cut..].to_vec()),
        ];
        if let Ok(t) = iolab::trace::blktrace::import(&files) {
            let _ = iolab::trace::model::Model::of(&t);
        }
    }
});
