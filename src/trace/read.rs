//! Reading a trace file: every check a damaged or foreign file can fail, each one line.

use std::path::Path;

use super::format::{MAGIC, MAX_HEADER_BYTES, PREAMBLE_BYTES, RECORD_BYTES, VERSION, decode};
use super::{NO_PROCESS, Trace, TraceError, TraceHeader, TraceIo};

/// Reads and checks a whole trace file.
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| TraceError::Read {
        path: name.clone(),
        why: e.to_string(),
    })?;
    read_trace_bytes(&bytes, &name)
}

/// Parses a trace from its bytes (`name` is used in messages). Never panics, whatever the
/// bytes: the fuzz target `trace_file` holds it to that.
pub fn read_trace_bytes(bytes: &[u8], name: &str) -> Result<Trace, TraceError> {
    let path = || name.to_string();
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(TraceError::NotATrace { path: path() });
    }
    if bytes.len() < PREAMBLE_BYTES {
        return Err(TraceError::Truncated {
            path: path(),
            why: format!("{} bytes, shorter than the 16-byte preamble", bytes.len()),
        });
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != VERSION {
        return Err(TraceError::Version {
            path: path(),
            found: version,
        });
    }
    let rec = u16::from_le_bytes([bytes[10], bytes[11]]);
    if usize::from(rec) != RECORD_BYTES {
        return Err(TraceError::Corrupt {
            path: path(),
            why: format!("record size {rec}, version {VERSION} has {RECORD_BYTES}"),
        });
    }
    let hlen = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if hlen > MAX_HEADER_BYTES {
        return Err(TraceError::Corrupt {
            path: path(),
            why: format!("header length {hlen} bytes"),
        });
    }
    let hend = PREAMBLE_BYTES + hlen as usize;
    let Some(hbytes) = bytes.get(PREAMBLE_BYTES..hend) else {
        return Err(TraceError::Truncated {
            path: path(),
            why: format!(
                "the header needs {hlen} bytes, the file has {}",
                bytes.len() - PREAMBLE_BYTES
            ),
        });
    };
    let header: TraceHeader = serde_json::from_slice(hbytes).map_err(|e| TraceError::Corrupt {
        path: path(),
        why: format!("header: {e}"),
    })?;
    let body = &bytes[hend..];
    let want = u128::from(header.ios) * RECORD_BYTES as u128;
    if (body.len() as u128) < want {
        return Err(TraceError::Truncated {
            path: path(),
            why: format!(
                "the header says {} IOs ({want} bytes of records), the file has {} bytes of them",
                header.ios,
                body.len()
            ),
        });
    }
    if body.len() as u128 > want {
        return Err(TraceError::Corrupt {
            path: path(),
            why: format!(
                "{} bytes after the last of {} records",
                body.len() as u128 - want,
                header.ios
            ),
        });
    }
    let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(body));
    if hash != header.records_xxh3 {
        return Err(TraceError::Corrupt {
            path: path(),
            why: format!(
                "records hash to {hash}, the header says {} (the file was changed or damaged)",
                header.records_xxh3
            ),
        });
    }
    if header.ios == 0 {
        return Err(TraceError::Empty {
            path: path(),
            why: "no IO reached the device while it was recorded".into(),
        });
    }
    let ios = decode_records(body, &header, name)?;
    Ok(Trace { header, ios })
}

/// Decodes the checked records of a trace (`body`, a whole number of them), refusing any that
/// is out of issue order or names a process the header does not list.
fn decode_records(
    body: &[u8],
    header: &TraceHeader,
    name: &str,
) -> Result<Vec<TraceIo>, TraceError> {
    let path = || name.to_string();
    let mut ios = Vec::with_capacity(header.ios as usize);
    let mut last = 0u64;
    for (i, chunk) in body.chunks_exact(RECORD_BYTES).enumerate() {
        let mut b = [0u8; RECORD_BYTES];
        b.copy_from_slice(chunk);
        let io = decode(&b).map_err(|why| TraceError::Corrupt {
            path: path(),
            why: format!("record {i}: {why}"),
        })?;
        if io.issue_ns < last {
            return Err(TraceError::Corrupt {
                path: path(),
                why: format!("record {i} is issued before the one before it"),
            });
        }
        if io.process != NO_PROCESS && usize::from(io.process) >= header.processes.len() {
            return Err(TraceError::Corrupt {
                path: path(),
                why: format!(
                    "record {i} names process {} of {}",
                    io.process,
                    header.processes.len()
                ),
            });
        }
        last = io.issue_ns;
        ios.push(io);
    }
    Ok(ios)
}
