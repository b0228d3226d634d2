//! Building and tearing down storage stacks: loop disks, btrfs, mdadm, LVM, mkfs and mounts.
//!
//! Everything here runs external tools (`losetup`, `mkfs.*`, `mdadm`, `lvm`, `btrfs`) through one
//! [`cmd::Runner`] that logs every argv, so a lab can show exactly what it did and tests can check
//! the exact command lines without running them ([`cmd::Runner::recording`]).
//!
//! Safety is structural: every object is recorded in a [`state::StateFile`] *before* it is
//! created, the [`session::Session`] that created it tears it down in a fixed order (unmount, then
//! btrfs forget, LVM, md, loop devices, files, directories), on success, on error and on drop, and
//! `iolab lab --cleanup` replays a dead lab's state file. Teardown only ever touches what the state
//! lists: a loop device is detached only when its backing file is one we created, a mount only
//! when it sits on a directory we made, an array only when its name carries our lab id.

pub mod align;
pub mod avail;
pub mod btrfs;
pub mod btrfsmap;
pub mod cache;
pub mod cmd;
pub mod fault;
pub mod fs;
pub mod layer;
pub mod loopdev;
pub mod lvm;
pub mod mdadm;
pub mod mdmap;
pub mod member;
pub mod probe;
pub mod registry;
pub mod scrub;
pub mod session;
pub mod signature;
pub mod state;
pub mod zfs;
pub mod zfsmap;

pub use crate::stack::{self, BtrfsProfile, FsKind, MdLevel, MdOptions, RaidLayer, Stack};
pub use avail::Availability;
pub use cmd::Runner;
pub use session::{Built, CacheCaps, DegradeInfo, DiskSource, Made, Session};

use std::path::PathBuf;

/// What went wrong while building, degrading or tearing down a layout.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A tool exited non-zero; the message carries the command and its last stderr line.
    #[error("`{cmd}` failed: {msg}")]
    Command {
        /// The command line, shell-quoted.
        cmd: String,
        /// Exit status and the tool's own words.
        msg: String,
    },
    /// A tool could not be started at all (not installed).
    #[error("cannot run `{cmd}`: {source}")]
    Spawn {
        /// The command line.
        cmd: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file or directory operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A device may not be used (mounted, holds `/`, in an array we did not make, has data).
    #[error("{0}")]
    Refused(String),
    /// The output of a tool did not say what we needed.
    #[error("{0}")]
    Unexpected(String),
    /// Ctrl-C or SIGTERM arrived while working.
    #[error("interrupted")]
    Interrupted,
}

impl LayoutError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LayoutError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}
