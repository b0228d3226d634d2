//! The agent's line protocol (`hosts::protocol::parse_line`), fed whatever a broken or hostile
//! far side could send. A line that parses must serialise to one line and parse back to the
//! same kind of message.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = iolab::hosts::protocol::parse_line(s) {
        let line = m.to_line();
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'), "{line}");
        let back = iolab::hosts::protocol::parse_line(&line)
            .unwrap_or_else(|e| panic!("a parsed message does not parse back: {e}: {line}"));
        assert_eq!(back.kind(), m.kind());
    }
});
