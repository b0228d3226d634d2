//! A stack built once on sparse files of a real disk's size, to read the usable bytes it
//! reports there, then torn down. What a filesystem keeps for itself does not grow with the
//! disk (btrfs's first metadata chunks, the xfs log, ext4's journal), so a small lab's
//! efficiency says little about a 4 TB disk; building the same stack at 4 TB takes seconds,
//! since only metadata is written (`iolab decide` asks for it).
//!
//! It goes through the lab's own [`Session`]: the same build steps and command lines, every
//! object in the state file before it exists, all of it torn down after, on an error, and on
//! Ctrl-C (or by `iolab lab --cleanup` after a kill).

use std::path::{Path, PathBuf};

use super::LayoutError;
use super::cmd::Runner;
use super::session::{DiskSource, Session};
use crate::stack::{FsKind, Layer, Stack};

/// Directories tried for the backing files, in order: tmpfs first (nothing reaches a disk),
/// then a disk filesystem.
pub const DIRS: [&str; 2] = ["/dev/shm", "/var/tmp"];

/// Space a build may write into the backing files' filesystem: the xfs log is zeroed (up
/// to 2038 MiB), the rest is metadata.
pub const ROOM: u64 = 4 << 30;

/// A short id for the probe's names (backing files, mount point, state file).
fn probe_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = t ^ (u64::from(std::process::id()) << 32);
    x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    format!("cap{:05x}", (x >> 40) & 0xf_ffff)
}

/// Whether a file of `size` bytes can be made sparse in `dir` (the filesystem's largest file
/// is big enough: ext4 stops at 16 TiB) with [`ROOM`] to spare.
fn fits(dir: &Path, size: u64, id: &str) -> bool {
    let Ok((_, avail)) = super::fs::statvfs_bytes(dir) else {
        return false;
    };
    if avail < ROOM {
        return false;
    }
    let probe = dir.join(format!("iolab-{id}-probe"));
    let ok = super::loopdev::create_backing(&probe, size).is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// The first of [`DIRS`] that holds sparse files of `size` bytes.
pub fn sparse_dir(size: u64) -> Result<PathBuf, LayoutError> {
    let id = probe_id();
    DIRS.iter()
        .map(PathBuf::from)
        .find(|d| fits(d, size, &id))
        .ok_or_else(|| {
            LayoutError::Refused(format!(
                "no directory of {} takes sparse files of {size} bytes with {} free",
                DIRS.join(", "),
                crate::units::format_bytes(ROOM)
            ))
        })
}

/// The stack as the probe builds it: the same, but ext4's inode tables and journal are left
/// to be zeroed later (the lab zeroes them at mkfs so its timings are not disturbed; at 4 TB
/// that is 60 GB of zeros, and what ext4 reports does not change).
pub fn for_probe(stack: &Stack) -> Stack {
    let mut s = stack.clone();
    for l in &mut s.layers {
        if let Layer::Fs(f) = l {
            if f.kind == FsKind::Ext4 && !f.mkfs_options.iter().any(|o| o.starts_with("-E")) {
                f.mkfs_options
                    .extend(["-E".into(), "lazy_itable_init=1,lazy_journal_init=1".into()]);
            }
        }
    }
    s
}

/// Builds `stack` on fresh sparse files of `size` bytes each (in the first of [`DIRS`] that
/// takes them), reads the usable bytes it reports (as the lab does:
/// [`super::Built::usable_bytes`]) and tears everything down. The state file goes in
/// `state_dir`.
pub fn usable_at(stack: &Stack, size: u64, state_dir: &Path) -> Result<u64, LayoutError> {
    let base = sparse_dir(size)?;
    let id = probe_id();
    let mut session = Session::new(
        Runner::real(),
        &id,
        Some(state_dir),
        "iolab decide: usable bytes at the real disk size",
    )?;
    let dir = base.join(format!("iolab-{id}"));
    session.ensure_dir(&dir)?;
    let src = DiskSource::Loop {
        dir,
        size,
        direct_io: false,
    };
    let built = session.build(0, "capacity", &for_probe(stack), &src);
    let usable = match built {
        Ok(b) => {
            let u = b.usable_bytes;
            let left = session.teardown(b);
            if left.is_empty() {
                Ok(u)
            } else {
                Err(left_behind(
                    &left
                        .iter()
                        .map(|(o, e)| format!("{}: {e}", o.label()))
                        .collect::<Vec<_>>(),
                ))
            }
        }
        Err(e) => Err(e),
    };
    session.finish().map_err(|left| left_behind(&left))?;
    usable
}

fn left_behind(what: &[String]) -> LayoutError {
    LayoutError::Unexpected(format!(
        "teardown left {} (run `iolab lab --cleanup`)",
        what.join("; ")
    ))
}
