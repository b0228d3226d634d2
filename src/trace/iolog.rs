//! fio iolog files, versions 2 and 3: imported into a trace, and written from one (so fio's
//! `read_iolog` can replay the same IOs as iolab, `bench/replay.sh`).
//!
//! ```text
//! fio version 2 iolog              fio version 3 iolog
//! /dev/sdb add                     0 /dev/sdb add
//! /dev/sdb open                    0 /dev/sdb open
//! /dev/sdb read 0 4096             127 /dev/sdb read 0 4096      (time: us since start)
//! /dev/sdb wait 1000 0             36598 /dev/sdb write 8192 4096
//! /dev/sdb write 8192 4096         36610 /dev/sdb sync 0 0
//! /dev/sdb close                   40000 /dev/sdb close
//! ```
//!
//! Actions: `read`, `write`, `trim`, `sync`, `datasync`, `sync_file_range` (flushes), `wait`
//! (version 2 only: the offset field is a pause in microseconds) and the file actions `add`,
//! `open`, `close`. An iolog records what fio issued, not when it completed: imported IOs
//! have no completion time. Version 2 has no times at all: IOs between two waits share one.

use super::{NO_COMPLETION, NO_PROCESS, Op, Trace, TraceError, TraceHeader, TraceIo};

/// Parses an iolog's text (`name` is used in messages).
pub fn parse_iolog(text: &str, name: &str) -> Result<Trace, TraceError> {
    let err = |line: usize, why: String| TraceError::Import {
        at: format!("{name}:{line}"),
        why,
    };
    let mut lines = text.lines().enumerate();
    let version = version_of(lines.next().map(|(_, l)| l.trim()), &err)?;
    let mut ios = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut now_ns = 0u64;
    let mut last_ns = 0u64;
    for (i, line) in lines {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut f: Vec<&str> = line.split_whitespace().collect();
        if version == 3 {
            now_ns = line_time_ns(&f, line, n, &err)?;
            f.remove(0);
        }
        let (file, action) = match f.as_slice() {
            [file, action, ..] => (*file, *action),
            _ => {
                return Err(err(
                    n,
                    format!("'{line}': expected FILE ACTION [OFFSET LENGTH]"),
                ));
            }
        };
        let nums = |f: &[&str]| offset_len(f, action, n, &err);
        let op = match action {
            "add" | "open" | "close" => {
                if action == "add" && !files.iter().any(|x| x == file) {
                    files.push(file.to_string());
                }
                continue;
            }
            "wait" if version == 2 => {
                let (us, _) = nums(&f)?;
                now_ns = now_ns.saturating_add(us.saturating_mul(1000));
                continue;
            }
            "read" => Op::Read,
            "write" => Op::Write,
            "trim" => Op::Discard,
            "sync" | "datasync" | "sync_file_range" => Op::Flush,
            other => {
                return Err(err(
                    n,
                    format!(
                        "unknown action '{other}' (fio iologs have read, write, trim, sync, datasync, wait, add, open, close)"
                    ),
                ));
            }
        };
        let (offset, len) = if op == Op::Flush { (0, 0) } else { nums(&f)? };
        let len = u32::try_from(len).map_err(|_| {
            err(
                n,
                format!("length {len} is larger than one IO can be (4 GiB)"),
            )
        })?;
        if !files.iter().any(|x| x == file) {
            files.push(file.to_string());
        }
        if files.len() > 1 {
            return Err(err(
                n,
                format!(
                    "IO on a second file '{file}' (after '{}'): a trace is one device; split the iolog per file",
                    files[0]
                ),
            ));
        }
        last_ns = last_ns.max(now_ns);
        ios.push(TraceIo {
            issue_ns: now_ns,
            offset,
            latency_ns: NO_COMPLETION,
            len,
            op,
            flags: 0,
            process: NO_PROCESS,
        });
    }
    Ok(finish(ios, version, files.first().cloned(), last_ns))
}

/// A version 3 line's leading time (microseconds since the start), in nanoseconds.
fn line_time_ns(
    f: &[&str],
    line: &str,
    n: usize,
    err: &impl Fn(usize, String) -> TraceError,
) -> Result<u64, TraceError> {
    let t = f
        .first()
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or_else(|| {
            err(
                n,
                format!("'{line}': a version 3 line starts with a time in microseconds"),
            )
        })?;
    Ok(t.saturating_mul(1000))
}

/// The two numbers after FILE ACTION on line `n`: an IO's offset and length, or a version 2
/// wait's pause in microseconds (and an unused 0).
fn offset_len(
    f: &[&str],
    action: &str,
    n: usize,
    err: &impl Fn(usize, String) -> TraceError,
) -> Result<(u64, u64), TraceError> {
    match f {
        [_, _, o, l] => Ok((
            o.parse::<u64>()
                .map_err(|_| err(n, format!("offset '{o}' is not a number")))?,
            l.parse::<u64>()
                .map_err(|_| err(n, format!("length '{l}' is not a number")))?,
        )),
        _ => Err(err(n, format!("'{action}' needs an offset and a length"))),
    }
}

/// The iolog's version from its first line.
fn version_of(
    first: Option<&str>,
    err: &impl Fn(usize, String) -> TraceError,
) -> Result<u8, TraceError> {
    match first {
        Some("fio version 2 iolog") => Ok(2),
        Some("fio version 3 iolog") => Ok(3),
        Some(l) if l.starts_with("fio version") => Err(err(
            1,
            format!("'{l}': iolab reads iolog versions 2 and 3"),
        )),
        _ => Err(err(
            1,
            "not a fio iolog (the first line must be 'fio version 2 iolog' or 'fio version 3 iolog')"
                .into(),
        )),
    }
}

/// The trace of an iolog's IOs, in issue order (a version 3 log may go back in time: jobs
/// merged by hand).
fn finish(mut ios: Vec<TraceIo>, version: u8, file: Option<String>, last_ns: u64) -> Trace {
    ios.sort_by_key(|io| io.issue_ns);
    let mut notes = vec!["an iolog records issues only: no completion times".to_string()];
    if version == 2 {
        notes.push("iolog version 2 has no times: IOs between two waits share one".into());
    }
    Trace {
        header: TraceHeader {
            source: format!("fio-iolog-v{version}"),
            target: file.unwrap_or_default(),
            duration_ns: last_ns,
            ios: ios.len() as u64,
            unmatched: ios.len() as u64,
            notes,
            ..Default::default()
        },
        ios,
    }
}

/// The trace as a fio iolog version 3 naming `file` (times in microseconds; flushes as
/// `sync`, discards as `trim`; other ops are left out, and counted in the return value).
pub fn to_iolog_v3(trace: &Trace, file: &str) -> (String, u64) {
    let mut s = String::with_capacity(trace.ios.len() * 40 + 64);
    s.push_str("fio version 3 iolog\n");
    s.push_str(&format!("0 {file} add\n0 {file} open\n"));
    let mut skipped = 0;
    let mut last = 0;
    for io in &trace.ios {
        let us = io.issue_ns / 1000;
        last = us;
        let (act, off, len) = match io.op {
            Op::Read => ("read", io.offset, io.len),
            Op::Write => ("write", io.offset, io.len),
            Op::Discard => ("trim", io.offset, io.len),
            Op::Flush => ("sync", 0, 0),
            Op::Other => {
                skipped += 1;
                continue;
            }
        };
        s.push_str(&format!("{us} {file} {act} {off} {len}\n"));
    }
    s.push_str(&format!("{last} {file} close\n"));
    (s, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_3_gives_times_ops_offsets_and_lengths() {
        let t = parse_iolog(
            "fio version 3 iolog\n18 /tmp/f add\n123 /tmp/f open\n127 /tmp/f read 61440 4096\n36598 /tmp/f write 774144 8192\n36600 /tmp/f sync 0 0\n36700 /tmp/f trim 0 4096\n44040 /tmp/f close\n",
            "x.log",
        )
        .unwrap();
        let got: Vec<(u64, Op, u64, u32)> = t
            .ios
            .iter()
            .map(|i| (i.issue_ns, i.op, i.offset, i.len))
            .collect();
        assert_eq!(
            got,
            vec![
                (127_000, Op::Read, 61440, 4096),
                (36_598_000, Op::Write, 774_144, 8192),
                (36_600_000, Op::Flush, 0, 0),
                (36_700_000, Op::Discard, 0, 4096),
            ]
        );
        assert_eq!(t.header.source, "fio-iolog-v3");
        assert_eq!(t.header.target, "/tmp/f");
    }

    #[test]
    fn version_2_waits_advance_the_clock() {
        let t = parse_iolog(
            "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n/dev/sdb read 4096 4096\n/dev/sdb wait 1500 0\n/dev/sdb write 0 512\n/dev/sdb close\n",
            "x",
        )
        .unwrap();
        let times: Vec<u64> = t.ios.iter().map(|i| i.issue_ns).collect();
        assert_eq!(times, vec![0, 0, 1_500_000]);
    }

    #[test]
    fn bad_lines_are_named_with_file_and_line() {
        for (text, want) in [
            ("hello\n", "x:1: not a fio iolog"),
            ("fio version 1 iolog\n", "versions 2 and 3"),
            ("fio version 3 iolog\nx /f read 0 1\n", "x:2:"),
            (
                "fio version 2 iolog\n/f frob 0 1\n",
                "unknown action 'frob'",
            ),
            ("fio version 2 iolog\n/f read zero 1\n", "offset 'zero'"),
            ("fio version 2 iolog\n/f read 0\n", "needs an offset"),
            (
                "fio version 2 iolog\n/f read 0 1\n/g read 0 1\n",
                "second file",
            ),
            (
                "fio version 2 iolog\n/f read 0 99999999999\n",
                "larger than one IO",
            ),
        ] {
            let e = parse_iolog(text, "x").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_trace_written_as_iolog_v3_reads_back() {
        let t = parse_iolog(
            "fio version 3 iolog\n0 /f add\n5 /f read 0 4096\n9 /f write 8192 4096\n10 /f sync 0 0\n",
            "x",
        )
        .unwrap();
        let (text, skipped) = to_iolog_v3(&t, "/dev/loop9");
        assert_eq!(skipped, 0);
        assert!(text.contains("9 /dev/loop9 write 8192 4096\n"), "{text}");
        let back = parse_iolog(&text, "y").unwrap();
        assert_eq!(back.ios, t.ios);
    }
}
