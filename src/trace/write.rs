//! Writing a trace file without ever leaving a half-written one under the asked name.
//!
//! Records stream into a hidden partial file beside the target (`.iolab-trace-PID-NAME.partial`,
//! so a capture of hours never holds its IOs in memory); [`TraceWriter::finish`] writes the
//! preamble, the header and the records into a second hidden file and renames it into place.
//! A writer dropped unfinished (an error, a panic) removes its partial file; one killed by
//! SIGKILL leaves it, and `iolab run --cleanup DIR` removes it once the pid is gone.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::format::{RECORD_BYTES, encode, preamble};
use super::{NO_PROCESS, Trace, TraceError, TraceHeader, TraceIo};

/// The prefix of a writer's hidden files (`.iolab-trace-PID-...`).
pub const PARTIAL_PREFIX: &str = ".iolab-trace-";

/// A trace being written, record by record, in issue order.
pub struct TraceWriter {
    target: PathBuf,
    partial: PathBuf,
    out: Option<BufWriter<File>>,
    hasher: xxhash_rust::xxh3::Xxh3,
    count: u64,
    last_issue: u64,
    processes: Vec<String>,
    index: HashMap<String, u16>,
}

fn hidden_beside(target: &Path, suffix: &str) -> PathBuf {
    let stem = target
        .file_name()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    dir.join(format!(
        "{PARTIAL_PREFIX}{}-{stem}.{suffix}",
        std::process::id()
    ))
}

impl TraceWriter {
    /// Starts a trace that will be `target` once finished (nothing appears there before).
    pub fn create(target: &Path) -> Result<TraceWriter, TraceError> {
        let partial = hidden_beside(target, "partial");
        let f = File::create(&partial).map_err(|e| TraceError::Write {
            path: target.display().to_string(),
            why: e.to_string(),
        })?;
        Ok(TraceWriter {
            target: target.to_path_buf(),
            partial,
            out: Some(BufWriter::with_capacity(1 << 20, f)),
            hasher: xxhash_rust::xxh3::Xxh3::new(),
            count: 0,
            last_issue: 0,
            processes: Vec::new(),
            index: HashMap::new(),
        })
    }

    fn werr(&self, e: &std::io::Error) -> TraceError {
        TraceError::Write {
            path: self.target.display().to_string(),
            why: e.to_string(),
        }
    }

    /// The record index of a process name (new names are added; past 65535 names, unknown).
    pub fn process_index(&mut self, name: &str) -> u16 {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        if self.processes.len() >= usize::from(NO_PROCESS) {
            return NO_PROCESS;
        }
        let i = self.processes.len() as u16;
        self.processes.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    /// Appends one IO; IOs must come in issue order (an earlier one is moved to the time of
    /// the one before it, so the file stays ordered).
    pub fn push(&mut self, io: &TraceIo) -> Result<(), TraceError> {
        let mut io = *io;
        io.issue_ns = io.issue_ns.max(self.last_issue);
        self.last_issue = io.issue_ns;
        let b = encode(&io);
        self.hasher.update(&b);
        let r = match self.out.as_mut() {
            Some(out) => out.write_all(&b),
            None => Ok(()),
        };
        r.map_err(|e| self.werr(&e))?;
        self.count += 1;
        Ok(())
    }

    /// IOs written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes the file under its name and returns the header as written (with the count,
    /// the hash, the process names and the version filled in). No IO at all is an error and
    /// leaves nothing behind.
    pub fn finish(mut self, mut header: TraceHeader) -> Result<TraceHeader, TraceError> {
        header.ios = self.count;
        header.records_xxh3 = format!("{:016x}", self.hasher.digest());
        header.processes = std::mem::take(&mut self.processes);
        header.iolab_version = env!("CARGO_PKG_VERSION").to_string();
        if self.count == 0 {
            return Err(TraceError::Empty {
                path: self.target.display().to_string(),
                why: format!(
                    "no IO reached {} while it was recorded; nothing written (was the device idle? record longer, or while the workload runs)",
                    header
                        .device
                        .as_ref()
                        .map_or(header.target.as_str(), |d| d.name.as_str())
                ),
            });
        }
        if let Some(mut out) = self.out.take() {
            out.flush().map_err(|e| self.werr(&e))?;
        }
        let json = serde_json::to_vec(&header).map_err(|e| TraceError::Write {
            path: self.target.display().to_string(),
            why: e.to_string(),
        })?;
        let tmp = hidden_beside(&self.target, "tmp");
        let r = (|| -> std::io::Result<()> {
            let mut f = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
            f.write_all(&preamble(json.len() as u32))?;
            f.write_all(&json)?;
            let mut src = File::open(&self.partial)?;
            let mut buf = vec![0u8; 1 << 20];
            let mut copied = 0u64;
            loop {
                let n = src.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                f.write_all(&buf[..n])?;
                copied += n as u64;
            }
            if copied != self.count * RECORD_BYTES as u64 {
                return Err(std::io::Error::other(format!(
                    "the partial file holds {copied} bytes, {} expected",
                    self.count * RECORD_BYTES as u64
                )));
            }
            f.into_inner()
                .map_err(std::io::IntoInnerError::into_error)?
                .sync_all()?;
            std::fs::rename(&tmp, &self.target)
        })();
        if let Err(e) = r {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.werr(&e));
        }
        Ok(header)
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        drop(self.out.take());
        let _ = std::fs::remove_file(&self.partial);
    }
}

/// Writes a whole trace held in memory (imports); its IOs are sorted by issue time first.
pub fn write_trace(path: &Path, trace: &Trace) -> Result<TraceHeader, TraceError> {
    let mut ios = trace.ios.clone();
    ios.sort_by_key(|io| io.issue_ns);
    let mut w = TraceWriter::create(path)?;
    // Keep the trace's own process table: records index into it.
    for p in &trace.header.processes {
        w.process_index(p);
    }
    for io in &ios {
        w.push(io)?;
    }
    w.finish(trace.header.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Op, TraceDevice, read_trace};

    fn io(t: u64, op: Op, off: u64) -> TraceIo {
        TraceIo {
            issue_ns: t,
            offset: off,
            latency_ns: 1000,
            len: if op == Op::Flush { 0 } else { 4096 },
            op,
            flags: 0,
            process: 0,
        }
    }

    #[test]
    fn a_written_trace_reads_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.trace");
        let mut w = TraceWriter::create(&p).unwrap();
        assert_eq!(w.process_index("fio"), 0);
        assert_eq!(w.process_index("kworker"), 1);
        assert_eq!(w.process_index("fio"), 0);
        let ios = vec![
            io(0, Op::Read, 0),
            io(10, Op::Write, 4096),
            io(20, Op::Flush, 0),
        ];
        for i in &ios {
            w.push(i).unwrap();
        }
        assert!(!p.exists(), "nothing under the name before finish");
        let h = w
            .finish(TraceHeader {
                source: "test".into(),
                device: Some(TraceDevice {
                    name: "loop9".into(),
                    size_bytes: 1 << 20,
                    ..Default::default()
                }),
                duration_ns: 30,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(h.ios, 3);
        let t = read_trace(&p).unwrap();
        assert_eq!(t.ios, ios);
        assert_eq!(t.header.processes, vec!["fio", "kworker"]);
        assert_eq!(t.header, h);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "only the trace is left: {left:?}");
    }

    #[test]
    fn an_empty_capture_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.trace");
        let w = TraceWriter::create(&p).unwrap();
        let e = w.finish(TraceHeader::default()).unwrap_err();
        assert!(e.to_string().contains("no IO"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
