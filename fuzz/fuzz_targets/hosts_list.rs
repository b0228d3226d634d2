//! The `--hosts` list and `--hosts-file` text (`parse_hosts`, each entry through `parse_host`)
//! and the `--launch` template that turns an entry into a shell command, on arbitrary bytes.
//! Invariants: a parsed host name is never empty, never starts with '-' and has no whitespace
//! or quote (it reaches `sh -c`), and `shell_quote` of it is a single shell word.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    // Before a NUL (when there is one): a launch template; the rest: a host list.
    let (template, list) = match s.split_once('\u{0}') {
        Some((t, l)) => (Some(t), l),
        None => (None, s),
    };
    let hosts = iolab::hosts::parse_hosts(list);
    if let Ok(hs) = &hosts {
        assert!(!hs.is_empty(), "an empty list parsed");
        for h in hs {
            assert!(!h.name.is_empty() && !h.name.starts_with('-'), "{h:?}");
            assert!(!h.name.chars().any(|c| c.is_whitespace() || c == '\''), "{h:?}");
            let q = iolab::hosts::shell_quote(&h.name);
            assert!(!q.chars().any(char::is_whitespace) || q.starts_with('\''), "{q}");
        }
    }
    let _ = iolab::hosts::parse_host(list);
    // `{control}` makes a temporary directory per template: keep the fuzzer off the disk.
    if let Some(t) = template.filter(|t| !t.contains("{control}")) {
        if let Ok(l) = iolab::hosts::launch::Launch::new(Some(t)) {
            for h in hosts.iter().flatten().take(4) {
                let _ = l.command(&h.name, None);
                let _ = l.command(&h.name, Some("/tmp/iolab-pushed agent --stdio"));
            }
        }
    }
});
