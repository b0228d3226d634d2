//! What validating a lab spec asks of the machine: do the devices exist and are they block
//! devices, how big are they, does a `dir` layout's directory exist. Behind a trait so the same
//! parser runs on the text alone ([`TextOnly`]: a fuzzing target, a dry check on another
//! machine) or against this machine ([`ThisMachine`]: what `iolab lab` uses).

use std::path::{Path, PathBuf};

/// Why a path named in `disks.devices` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceProblem {
    /// It cannot be read (the OS error, as text).
    Unreadable(String),
    /// It exists but is not a block device.
    NotBlock,
}

/// The machine a lab spec is checked against.
pub trait Host {
    /// Whether `path` is a block device.
    fn block_device(&self, path: &Path) -> Result<(), DeviceProblem>;
    /// The path with links resolved, to spot one device listed twice.
    fn canonical(&self, path: &Path) -> PathBuf;
    /// The device's size in bytes, when known.
    fn device_size(&self, path: &Path) -> Option<u64>;
    /// Whether `path` is an existing directory.
    fn is_dir(&self, path: &Path) -> bool;
}

/// This machine: asks the filesystem and the kernel.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThisMachine;

impl Host for ThisMachine {
    fn block_device(&self, path: &Path) -> Result<(), DeviceProblem> {
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::metadata(path).map_err(|e| DeviceProblem::Unreadable(e.to_string()))?;
        if meta.file_type().is_block_device() {
            Ok(())
        } else {
            Err(DeviceProblem::NotBlock)
        }
    }

    fn canonical(&self, path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    }

    fn device_size(&self, path: &Path) -> Option<u64> {
        crate::system::BlockDevice::from_path(path).map(|b| b.size_bytes)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
}

/// No machine: every named device is taken to be a block device of unknown size and every
/// directory to exist, so only what the text itself decides is checked.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOnly;

impl Host for TextOnly {
    fn block_device(&self, _: &Path) -> Result<(), DeviceProblem> {
        Ok(())
    }

    fn canonical(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }

    fn device_size(&self, _: &Path) -> Option<u64> {
        None
    }

    fn is_dir(&self, _: &Path) -> bool {
        true
    }
}
