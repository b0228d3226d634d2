//! `iolab disks`: the census of block devices, the per-disk read test and the slow-disk finder.
//!
//! In `raid-vs-lvm-hdparm-dd.txt` two disks of the same model and firmware read at 59 and
//! 83 MB/s, and that was only found by reading every member by hand, with temperatures from
//! another tool. This module does all of it in one command:
//!
//! - [`census`](mod@census): every block device with model, serial, firmware, size, block sizes, transport,
//!   scheduler, queue depth, temperature, holders, mountpoints and membership (md, btrfs, LVM),
//!   read from /sys, /proc, udev data and structured tool output (`blkid -o export`,
//!   `smartctl -j`, `pvs --reportformat json`), never from text meant for people.
//! - [`temperature`] and [`membership`]: the two facts /sys does not hand over in one file.
//! - [`bench`](mod@bench): the read test: O_DIRECT 1 MiB sequential reads at the start, middle and end of
//!   each device, alone and optionally all at once, through the normal IO runner, so the result
//!   is a [`crate::sample::RunRecord`] like any run. It only ever reads.
//! - [`outliers`]: grouping by model and firmware and the `SLOW` / `HOT` / `ERROR` flags, as
//!   pure functions; [`outliers::slow_by_busy`] is the rule for devices loaded together (the
//!   members of a lab's array), judged per second of their own busy time.
//! - [`counters`]: the error counters the storage layers keep per member (btrfs device stats,
//!   md mismatch_cnt, dm-integrity mismatches, ZFS CKSUM): silent corruption caught or not.
//! - [`stat`]: a device's own counters (`/sys/class/block/NAME/stat`), busy time included.
//! - The terminal tables are drawn by `report::text::disks`, the one home of text renderers.

pub mod bench;
pub mod census;
pub mod counters;
pub mod membership;
pub mod outliers;
pub mod stat;
pub mod temperature;
pub mod tools;

use std::path::{Path, PathBuf};

pub use bench::{BenchOptions, BenchOutcome, BenchReport, run_bench};
pub use census::{DeviceKind, DiskInfo, census, describe_all};
pub use membership::Membership;
pub use outliers::{Flag, FlagKind, Group};

/// Why a device named on the command line cannot be used. Each message is one line naming the
/// device and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DisksError {
    /// Nothing at that path.
    #[error(
        "device {0} does not exist; name a block device such as /dev/sda (see `iolab disks --all`)"
    )]
    NotFound(PathBuf),
    /// A file, directory or character device.
    #[error("{0} is not a block device; name a disk such as /dev/sda (see `iolab disks --all`)")]
    NotBlockDevice(PathBuf),
    /// A block device /sys does not describe (should not happen outside containers).
    #[error("{0} is a block device but /sys/class/block has no entry for it; is /sys mounted?")]
    NotInSys(PathBuf),
    /// Too small for three read regions of one block each.
    #[error(
        "{path} holds {size} bytes: too small to read at three places; it needs at least {need} bytes"
    )]
    TooSmall {
        /// The device.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The least it must hold.
        need: u64,
    },
    /// The device cannot be opened for reading.
    #[error("cannot open {path} for reading: {source}")]
    Open {
        /// The device.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Resolves what the user typed (`/dev/sdb`, `sdb`, a `/dev/disk/by-id/...` link) to the
/// device it names, with a one-line error when it is not a block device.
pub fn resolve_device(arg: &Path) -> Result<crate::system::BlockDevice, DisksError> {
    use std::os::unix::fs::FileTypeExt;
    let path = if arg.components().count() == 1 && !arg.exists() {
        // A bare kernel name: `sdb` means /dev/sdb.
        Path::new("/dev").join(arg)
    } else {
        arg.to_path_buf()
    };
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DisksError::NotFound(arg.to_path_buf()));
        }
        Err(source) => return Err(DisksError::Open { path, source }),
    };
    if !meta.file_type().is_block_device() {
        return Err(DisksError::NotBlockDevice(arg.to_path_buf()));
    }
    crate::system::BlockDevice::from_path(&path)
        .ok_or_else(|| DisksError::NotInSys(arg.to_path_buf()))
}
