//! Injected faults and emulated slow members, through device-mapper: a member that may get a
//! fault is built on a dm device (`linear`, or `delay` when it is slow) over the disk, and at
//! the fault's step its table is reloaded (`dmsetup suspend/load/resume`) with an `error`
//! segment over a range (unreadable sectors) or over all of it (a dead disk). Silent corruption
//! writes garbage straight onto the member, under the filesystem and the RAID layer. What the
//! RAID layer did about it is read back from md's sysfs, not assumed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::LayoutError;
use super::cmd::Runner;

pub use crate::stack::fault::{Fault, FaultKind, FaultStep, Under};

/// How one disk of a layout is put under device-mapper at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DmWrap {
    /// Milliseconds added to every IO (dm-delay); 0: a plain `linear` mapping.
    pub delay_ms: u32,
}

/// The base table of a wrapped disk of `sectors` 512-byte sectors: `linear`, or `delay`.
pub fn base_table(dev: &Path, sectors: u64, w: DmWrap) -> String {
    format!("0 {sectors} {}", base_target(dev, 0, w))
}

/// The target and its arguments mapping onto `dev` from sector `at`.
fn base_target(dev: &Path, at: u64, w: DmWrap) -> String {
    let d = dev.display();
    if w.delay_ms > 0 {
        format!("delay {d} {at} {}", w.delay_ms)
    } else {
        format!("linear {d} {at}")
    }
}

/// The table of a wrapped disk with `error` over `[start, start+len)` sectors and its base
/// mapping on both sides (each side left out when empty).
pub fn error_range_table(dev: &Path, sectors: u64, w: DmWrap, start: u64, len: u64) -> String {
    let start = start.min(sectors);
    let end = start.saturating_add(len).min(sectors);
    let mut lines = Vec::new();
    if start > 0 {
        lines.push(format!("0 {start} {}", base_target(dev, 0, w)));
    }
    if end > start {
        lines.push(format!("{start} {} error", end - start));
    }
    if end < sectors {
        lines.push(format!(
            "{end} {} {}",
            sectors - end,
            base_target(dev, end, w)
        ));
    }
    lines.join("\n")
}

/// The dm name of disk `k` of layout `index` in lab `lab`.
pub fn dm_name(lab: &str, index: usize, k: usize) -> String {
    format!("iolab-{lab}-{index}-d{k}")
}

/// Creates dm device `name` with `table`; returns `/dev/mapper/NAME`.
pub fn create(runner: &Runner, name: &str, table: &str) -> Result<PathBuf, LayoutError> {
    runner.run(&["dmsetup", "create", name, "--table", table])?;
    // Without udev nothing makes the node: `mknodes` does.
    let _ = runner.run(&["dmsetup", "mknodes", name]);
    Ok(Path::new("/dev/mapper").join(name))
}

/// Swaps the live table of `name` for `table` (IO in flight finishes first).
pub fn reload(runner: &Runner, name: &str, table: &str) -> Result<(), LayoutError> {
    runner.run(&["dmsetup", "suspend", name])?;
    let loaded = runner.run(&["dmsetup", "load", name, "--table", table]);
    // Resume whatever happened: a suspended member would hang the array.
    let resumed = runner.run(&["dmsetup", "resume", name]);
    loaded?;
    resumed.map(|_| ())
}

/// Removes dm device `name` if it exists.
pub fn remove(runner: &Runner, name: &str) -> Result<(), LayoutError> {
    if !runner.is_dry_run() && !Path::new("/dev/mapper").join(name).exists() {
        let listed = runner
            .run(&["dmsetup", "info", "-c", "--noheadings", "-o", "name", name])
            .is_ok();
        if !listed {
            return Ok(());
        }
    }
    let mut last = None;
    for _ in 0..10 {
        match runner.run(&["dmsetup", "remove", name]) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    last.map_or(Ok(()), Err)
}

/// Writes `length` bytes of garbage (a fixed pseudo-random stream) at `offset` of `dev` and
/// flushes them to the device.
pub fn corrupt(dev: &Path, offset: u64, length: u64) -> Result<(), LayoutError> {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev)
        .map_err(|e| LayoutError::io("cannot open", dev, e))?;
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| LayoutError::io("cannot seek", dev, e))?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ offset;
    let mut left = length;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        for b in buf.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.copy_from_slice(&x.to_le_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])
            .map_err(|e| LayoutError::io("cannot write", dev, e))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| LayoutError::io("cannot flush", dev, e))
}

/// What md says about one member in sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdMember {
    /// The kernel's name of the member (`vda`, `dm-0`) and, for dm, its dm name.
    pub device: String,
    /// `md/dev-*/state`: `in_sync`, `faulty`, `spare`, `write_error`...
    pub state: String,
    /// `md/dev-*/bad_blocks`: one `sector length` pair per recorded range.
    pub bad_blocks: Vec<(u64, u64)>,
    /// `md/dev-*/errors`: read errors corrected or counted on it.
    pub errors: u64,
}

/// md's own view of an array, read from sysfs: what the lab reports after a fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MdObservation {
    /// `md/array_state`: `clean`, `active`, `broken`, `inactive`...
    pub array_state: String,
    /// `md/degraded`: members missing.
    pub degraded: u64,
    /// `md/sync_action`: `idle`, `recover`, `check`...
    pub sync_action: String,
    /// Every member md lists, in sysfs order.
    pub members: Vec<MdMember>,
}

impl MdObservation {
    /// Bad-block ranges recorded over all members.
    pub fn bad_block_ranges(&self) -> usize {
        self.members.iter().map(|m| m.bad_blocks.len()).sum()
    }

    /// One line: `array_state clean, degraded 0, bad blocks: dm-0 2 ranges (16 sectors)`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "array_state {}, degraded {}",
            self.array_state, self.degraded
        );
        let faulty: Vec<&str> = self
            .members
            .iter()
            .filter(|m| m.state.contains("faulty"))
            .map(|m| m.device.as_str())
            .collect();
        if !faulty.is_empty() {
            s.push_str(&format!(", faulty {}", faulty.join(" ")));
        }
        let bad: Vec<String> = self
            .members
            .iter()
            .filter(|m| !m.bad_blocks.is_empty())
            .map(|m| {
                format!(
                    "{} {} range{} ({} sectors)",
                    m.device,
                    m.bad_blocks.len(),
                    if m.bad_blocks.len() == 1 { "" } else { "s" },
                    m.bad_blocks.iter().map(|b| b.1).sum::<u64>()
                )
            })
            .collect();
        if bad.is_empty() {
            s.push_str(", no bad blocks recorded");
        } else {
            s.push_str(&format!(", bad blocks: {}", bad.join(", ")));
        }
        s
    }
}

/// Parses `md/dev-*/bad_blocks` (`sector length` per line).
pub fn parse_bad_blocks(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// Reads md's view of `md` from sysfs under `sys` (`/sys` on a real machine).
pub fn observe_md(sys: &Path, md: &Path) -> MdObservation {
    let name = md
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = sys.join("block").join(&name).join("md");
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut members = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("dev-"))
        })
        .collect();
    entries.sort();
    for p in entries {
        let kname = p
            .file_name()
            .map(|n| n.to_string_lossy().trim_start_matches("dev-").to_string())
            .unwrap_or_default();
        let dm = read(sys.join("block").join(&kname).join("dm/name"));
        let device = if dm.is_empty() {
            kname
        } else {
            format!("{kname} ({dm})")
        };
        members.push(MdMember {
            device,
            state: read(p.join("state")),
            bad_blocks: parse_bad_blocks(&read(p.join("bad_blocks"))),
            errors: read(p.join("errors")).parse().unwrap_or(0),
        });
    }
    MdObservation {
        array_state: read(dir.join("array_state")),
        degraded: read(dir.join("degraded")).parse().unwrap_or(0),
        sync_action: read(dir.join("sync_action")),
        members,
    }
}

/// The kernel's name of a block device path (`/dev/mapper/x` -> `dm-3`, `/dev/vdb` -> `vdb`).
pub fn kernel_name(dev: &Path) -> Option<String> {
    // Without udev `/dev/mapper/NAME` is a node, not a link to `dm-N`: go by device number.
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(dev).ok()?.rdev();
    let link = std::fs::read_link(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ))
    .ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_cover_the_whole_disk() {
        let d = Path::new("/dev/vda");
        assert_eq!(
            base_table(d, 1000, DmWrap::default()),
            "0 1000 linear /dev/vda 0"
        );
        assert_eq!(
            base_table(d, 1000, DmWrap { delay_ms: 8 }),
            "0 1000 delay /dev/vda 0 8"
        );
        assert_eq!(
            error_range_table(d, 1000, DmWrap::default(), 100, 50),
            "0 100 linear /dev/vda 0\n100 50 error\n150 850 linear /dev/vda 150"
        );
        assert_eq!(
            error_range_table(d, 1000, DmWrap { delay_ms: 3 }, 0, 2000),
            "0 1000 error"
        );
        assert_eq!(
            error_range_table(d, 1000, DmWrap::default(), 900, 100),
            "0 900 linear /dev/vda 0\n900 100 error"
        );
    }

    #[test]
    fn steps_and_sysfs_parse() {
        assert_eq!(FaultStep::parse("rebuild"), Some(FaultStep::Rebuild));
        assert_eq!(FaultStep::parse("later"), None);
        assert_eq!(
            parse_bad_blocks("2048 8\n4096 16\n"),
            vec![(2048, 8), (4096, 16)]
        );
    }

    #[test]
    fn observation_reads_a_sysfs_tree() {
        let t = tempfile::tempdir().unwrap();
        let md = t.path().join("block/md5/md");
        std::fs::create_dir_all(md.join("dev-vda")).unwrap();
        std::fs::create_dir_all(md.join("dev-dm-0")).unwrap();
        std::fs::create_dir_all(t.path().join("block/dm-0/dm")).unwrap();
        std::fs::write(t.path().join("block/dm-0/dm/name"), "iolab-x-0-d0\n").unwrap();
        std::fs::write(md.join("array_state"), "clean\n").unwrap();
        std::fs::write(md.join("degraded"), "1\n").unwrap();
        std::fs::write(md.join("dev-dm-0/state"), "in_sync\n").unwrap();
        std::fs::write(md.join("dev-dm-0/bad_blocks"), "100 8\n").unwrap();
        std::fs::write(md.join("dev-vda/state"), "faulty\n").unwrap();
        let o = observe_md(t.path(), Path::new("/dev/md5"));
        assert_eq!(o.array_state, "clean");
        assert_eq!(o.degraded, 1);
        assert_eq!(o.bad_block_ranges(), 1);
        assert_eq!(o.members[0].device, "dm-0 (iolab-x-0-d0)");
        let d = o.describe();
        assert!(d.contains("faulty vda"), "{d}");
        assert!(
            d.contains("bad blocks: dm-0 (iolab-x-0-d0) 1 range (8 sectors)"),
            "{d}"
        );
    }
}
