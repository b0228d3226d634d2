//! Judging what came back after a power cut: the writer's durable log (what was acknowledged
//! before the cut) against every block of every file read back. A durable block must read back
//! at its acknowledged version or a later one; a block not yet durable may be old, new or zeros;
//! no block may hold garbage or another block's data, and none of that may come without an
//! error (`silent_wrong`: the RAID5 write hole shows there).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::block::{self, BLOCK, Seen};
use super::writer::{file_id, file_path};
use crate::sample::power::Judgement;

/// Findings kept word for word (the counts hold the rest).
const MAX_FINDINGS: usize = 12;

/// What the writer logged as durable before the cut.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Durable {
    /// Overwritten blocks of the data set: (file, block) -> (version, checksum) of the last
    /// durable write.
    pub blocks: BTreeMap<(u64, u64), (u64, u64)>,
    /// Files created and made durable: file -> (blocks, version).
    pub created: BTreeMap<u64, (u64, u64)>,
    /// Files whose deletion was made durable.
    pub deleted: BTreeSet<u64>,
    /// Durable operations logged.
    pub operations: u64,
    /// Of those, overwrites of one block.
    pub writes: u64,
    /// Errors the writer threads logged before they stopped (`E ...` lines).
    pub errors: Vec<String>,
}

impl Durable {
    /// Reads one log's lines into the record; a line the cut tore (the last, unfinished) is
    /// skipped: nothing was acknowledged by it.
    pub fn add_log(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(e) = line.strip_prefix("E ") {
                self.errors.push(e.to_string());
                continue;
            }
            let w: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| w.get(i).and_then(|s| s.parse::<u64>().ok());
            match (w.first().copied(), w.len()) {
                (Some("W"), 5) => {
                    let (Some(f), Some(b), Some(v), Ok(sum)) =
                        (num(1), num(2), num(3), u64::from_str_radix(w[4], 16))
                    else {
                        continue;
                    };
                    self.writes += 1;
                    let e = self.blocks.entry((f, b)).or_insert((v, sum));
                    if v >= e.0 {
                        *e = (v, sum);
                    }
                }
                (Some("C"), 4) => {
                    let (Some(f), Some(n), Some(v)) = (num(1), num(2), num(3)) else {
                        continue;
                    };
                    self.created.insert(f, (n, v));
                }
                (Some("d"), 2) => {
                    // Being deleted when the power went: it may be there or not.
                    let Some(f) = num(1) else { continue };
                    self.created.remove(&f);
                    continue;
                }
                (Some("D"), 2) => {
                    let Some(f) = num(1) else { continue };
                    self.deleted.insert(f);
                    self.created.remove(&f);
                }
                _ => continue,
            }
            self.operations += 1;
        }
    }

    /// Reads every log of a cut (`PREFIX-t*.log` in `dir`).
    pub fn read(dir: &Path, prefix: &str) -> Durable {
        let mut d = Durable::default();
        let start = format!("{prefix}-t");
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&start) && name.ends_with(".log") {
                if let Ok(t) = std::fs::read_to_string(e.path()) {
                    d.add_log(&t);
                }
            }
        }
        d
    }
}

/// The data set the writer started from.
#[derive(Debug, Clone, Copy)]
pub struct Base {
    /// The cut's tag.
    pub tag: u64,
    /// Files of the data set.
    pub files: u64,
    /// Blocks in each.
    pub blocks: u64,
}

/// What one block had to be.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// At least this version, and this checksum when exactly at it.
    AtLeast(u64, Option<u64>),
    /// Exactly this version (a created file is written once).
    Exactly(u64),
    /// Not durable: any version of this block, or zeros.
    Any,
}

struct Judge<'a> {
    j: Judgement,
    base: Base,
    durable: &'a Durable,
}

impl Judge<'_> {
    fn finding(&mut self, s: String) {
        if self.j.findings.len() < MAX_FINDINGS {
            self.j.findings.push(s);
        }
    }

    fn want(&self, f: u64, b: u64) -> Option<Want> {
        if f < self.base.files {
            if b >= self.base.blocks {
                return None;
            }
            return Some(match self.durable.blocks.get(&(f, b)) {
                Some(&(v, sum)) => Want::AtLeast(v, Some(sum)),
                None => Want::AtLeast(0, None),
            });
        }
        match self.durable.created.get(&f) {
            Some(&(n, v)) if b < n => Some(Want::Exactly(v)),
            Some(_) => None,
            None => Some(Want::Any),
        }
    }

    /// Judges one block read back; true when it is wrong without an error.
    fn block(&mut self, f: u64, b: u64, buf: &[u8]) -> bool {
        self.j.blocks += 1;
        let want = self.want(f, b).unwrap_or(Want::Any);
        let durable = !matches!(want, Want::Any);
        if durable {
            self.j.durable_blocks += 1;
        }
        let seen = block::see(buf);
        let wrong = match seen {
            Seen::Zero => {
                if durable {
                    self.j.durable_lost += 1;
                    self.finding(format!("f{f} block {b}: zeros, but it was durable"));
                } else {
                    self.j.zero_not_durable += 1;
                }
                return false;
            }
            Seen::Garbage => "garbage".to_string(),
            Seen::Block(h) if h.tag != self.base.tag => {
                self.j.foreign += 1;
                "data from before this layout".to_string()
            }
            Seen::Block(h) if (h.file, h.block) != (f, b) => {
                self.j.foreign += 1;
                format!("the data of f{} block {}", h.file, h.block)
            }
            Seen::Block(h) => {
                self.version(f, b, h.version, want, buf);
                return false;
            }
        };
        self.j.silent_wrong += 1;
        self.finding(format!(
            "f{f} block {b}: {wrong}, read without an error{}",
            if durable { " (durable)" } else { "" }
        ));
        true
    }

    /// An intact block of the right place: is its version one the log allows?
    fn version(&mut self, f: u64, b: u64, v: u64, want: Want, buf: &[u8]) {
        match want {
            Want::AtLeast(min, _) if v < min => {
                self.j.durable_lost += 1;
                self.finding(format!(
                    "f{f} block {b}: version {v:#x}, older than the durable {min:#x}"
                ));
            }
            Want::AtLeast(min, Some(sum)) if v == min && block::checksum(buf) != sum => {
                self.j.durable_lost += 1;
                self.finding(format!(
                    "f{f} block {b}: checksum differs from the one logged"
                ));
            }
            Want::Exactly(want) if v != want => {
                self.j.durable_lost += 1;
                self.finding(format!("f{f} block {b}: version {v:#x}, not {want:#x}"));
            }
            _ => {}
        }
    }

    /// Judges one file; `name` as found in the directory.
    fn file(&mut self, dir: &Path, f: u64) {
        let path = file_path(dir, f);
        let data = match read_all(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.missing(f);
                return;
            }
            Err(_) => {
                self.unreadable(&path, f);
                return;
            }
        };
        self.j.files += 1;
        let mut silent = false;
        let mut n = 0u64;
        for (b, chunk) in data.chunks(BLOCK).enumerate() {
            n += 1;
            if chunk.len() < BLOCK {
                // A torn tail: only a file not yet durable may have one.
                if !matches!(self.want(f, b as u64), None | Some(Want::Any)) {
                    self.j.durable_lost += 1;
                    self.finding(format!("f{f} block {b}: cut short"));
                }
                continue;
            }
            silent |= self.block(f, b as u64, chunk);
        }
        let need = if f < self.base.files {
            self.base.blocks
        } else {
            self.durable.created.get(&f).map_or(0, |c| c.0)
        };
        if n < need {
            self.j.durable_lost += need - n;
            self.finding(format!("f{f}: {n} blocks of {need} durable ones"));
        }
        if silent {
            self.j.files_silently_wrong += 1;
        }
    }

    fn missing(&mut self, f: u64) {
        let durable = f < self.base.files || self.durable.created.contains_key(&f);
        if durable {
            self.j.files_missing += 1;
            self.finding(format!("f{f}: missing, but it was durable"));
        }
    }

    /// A file that fails to read: block by block, each failure counted as a read error.
    fn unreadable(&mut self, path: &Path, f: u64) {
        self.j.files += 1;
        let Ok(file) = std::fs::File::open(path) else {
            self.j.read_errors += 1;
            self.finding(format!("f{f}: cannot be opened"));
            return;
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let mut buf = vec![0u8; BLOCK];
        let mut silent = false;
        for b in 0..len.div_ceil(BLOCK as u64) {
            if file.read_exact_at(&mut buf, b * BLOCK as u64).is_ok() {
                silent |= self.block(f, b, &buf);
            } else {
                self.j.blocks += 1;
                self.j.read_errors += 1;
                self.finding(format!("f{f} block {b}: read error"));
            }
        }
        if silent {
            self.j.files_silently_wrong += 1;
        }
    }
}

fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut v = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut v)?;
    Ok(v)
}

/// Reads back every file in `dir` and the ones the log says must be there, and judges them.
pub fn judge(dir: &Path, base: Base, durable: &Durable) -> Judgement {
    let mut jd = Judge {
        j: Judgement::default(),
        base,
        durable,
    };
    let mut ids: BTreeSet<u64> = (0..base.files).collect();
    ids.extend(durable.created.keys());
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        match file_id(&name) {
            Some(id) => {
                ids.insert(id);
            }
            None => jd.finding(format!("{name}: a file the writer did not make")),
        }
    }
    for f in ids {
        jd.file(dir, f);
    }
    jd.j
}

#[cfg(test)]
mod tests {
    use super::super::block::Header;
    use super::*;

    fn write(dir: &Path, f: u64, blocks: &[(u64, u64)], tag: u64) {
        let mut buf = vec![0u8; blocks.len() * BLOCK];
        for (chunk, &(b, v)) in buf.chunks_mut(BLOCK).zip(blocks) {
            block::fill(
                chunk,
                Header {
                    tag,
                    file: f,
                    block: b,
                    version: v,
                },
            );
        }
        std::fs::write(file_path(dir, f), buf).unwrap();
    }

    /// The judge tells apart what a cut may leave (older versions of blocks not yet durable,
    /// newer ones, zeros where nothing was durable) from what it must not (a durable write
    /// gone, garbage or another file's data read without an error, a durable file missing).
    #[test]
    fn durable_writes_must_be_there_and_nothing_may_be_foreign() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let base = Base {
            tag: 9,
            files: 3,
            blocks: 4,
        };
        let mut log = Durable::default();
        log.add_log("W 0 1 100 0\nW 1 2 200 0\nC 5 2 300\nC 6 2 301\nD 6\nW 2 0 5");
        assert_eq!(log.operations, 5, "the torn last line acknowledged nothing");
        // Fix the logged checksums to the real ones.
        let mut b = vec![0u8; BLOCK];
        for (&(f, blk), e) in &mut log.blocks {
            e.1 = block::fill(
                &mut b,
                Header {
                    tag: 9,
                    file: f,
                    block: blk,
                    version: e.0,
                },
            );
        }
        // f0: block 1 at its durable version, block 3 newer than the base: fine.
        write(d, 0, &[(0, 0), (1, 100), (2, 0), (3, 7)], 9);
        // f1: block 2 older than the durable write: lost.
        write(d, 1, &[(0, 0), (1, 0), (2, 0), (3, 0)], 9);
        // f2 is missing.
        // f5 (created, durable): its second block holds f0's data.
        write(d, 5, &[(0, 300), (0, 0)], 9);
        let mut five = std::fs::read(file_path(d, 5)).unwrap();
        let f0 = std::fs::read(file_path(d, 0)).unwrap();
        five[BLOCK..].copy_from_slice(&f0[..BLOCK]);
        std::fs::write(file_path(d, 5), &five).unwrap();
        // f8: created, not durable: zeros and its own block are both fine.
        write(d, 8, &[(0, 400)], 9);
        std::fs::OpenOptions::new()
            .append(true)
            .open(file_path(d, 8))
            .unwrap()
            .write_all_at(&vec![0u8; BLOCK], BLOCK as u64)
            .unwrap();
        let j = judge(d, base, &log);
        assert_eq!(j.files, 4, "{j:#?}");
        assert_eq!(j.files_missing, 1, "{j:#?}");
        assert_eq!(j.durable_lost, 1, "{j:#?}");
        assert_eq!(j.silent_wrong, 1, "{j:#?}");
        assert_eq!(j.foreign, 1, "{j:#?}");
        assert_eq!(j.files_silently_wrong, 1, "{j:#?}");
        assert_eq!(j.zero_not_durable, 1, "{j:#?}");
        assert_eq!(j.durable_blocks, 4 + 4 + 2, "{j:#?}");
        assert!(
            j.findings
                .iter()
                .any(|l| l.contains("f5 block 1: the data of f0 block 0")),
            "{:?}",
            j.findings
        );
        // Garbage in a durable block of f0 (the write hole's mark).
        let mut z = std::fs::read(file_path(d, 0)).unwrap();
        z[10] ^= 1;
        std::fs::write(file_path(d, 0), &z).unwrap();
        let j = judge(d, base, &log);
        assert_eq!(j.silent_wrong, 2, "{j:#?}");
        assert_eq!(j.files_silently_wrong, 2, "{j:#?}");
    }
}

#[cfg(test)]
mod deleting {
    use super::*;

    /// Found by the volatile-cache VM test: a durable file the writer was deleting
    /// when the power went (the unlink done, its log line not yet written) may be gone; it is
    /// not a durable file lost. One whose deletion never started still is.
    #[test]
    fn a_file_being_deleted_may_be_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let base = Base {
            tag: 9,
            files: 0,
            blocks: 4,
        };
        let mut log = Durable::default();
        log.add_log("C 5 2 300\nC 6 2 301\nd 5\n");
        let j = judge(tmp.path(), base, &log);
        assert_eq!(j.files_missing, 1, "only f6: {j:#?}");
        assert!(
            j.findings.iter().any(|l| l.starts_with("f6: missing")),
            "{j:#?}"
        );
    }
}
