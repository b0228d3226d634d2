//! `iolab lab SPEC --vm`: the whole lab inside a small throwaway virtual machine, so md and
//! device-mapper layouts build for real on a host whose kernel has neither (or where the user
//! will not give root over real disks).
//!
//! The pieces, in the order a run uses them: [`prereq`] checks the host has qemu, a stock kernel
//! and the tools (one-line errors naming the Debian package); [`kernel`] extracts the
//! uncompressed `vmlinux` from the installed `linux-image-amd64` once per machine;
//! [`initramfs`] assembles an uncompressed cpio from the host's own busybox, mdadm, lvm2, mkfs
//! tools, kernel modules and this very iolab binary; [`qemu`] boots it with one virtio disk per
//! lab disk (sparse files) and a 9p share for the spec in and the results out, [`boot`] trying
//! KVM for a few seconds before software emulation; [`guest`] writes
//! the guest's copy of the spec and its script; the host then copies the stored runs into its
//! own store ([`crate::store::transfer`]).
//!
//! [`script`] boots the same VM to run a script of one's own (a check the lab does not make,
//! such as `iolab capture` against blktrace) and hands back the share.
//!
//! Speeds measured under emulation are not the hardware's: every run is labelled
//! `environment: vm (tcg)` (or `vm (kvm)`).

pub mod boot;
pub mod cpio;
pub mod guest;
pub mod initramfs;
pub mod kernel;
pub mod prereq;
pub mod qemu;
pub mod run;
pub mod script;
pub mod writelog;
pub mod zfs;

use std::path::PathBuf;

pub use run::{VmOptions, VmOutcome, run_lab_in_vm};

/// What went wrong preparing, booting or reading back a VM.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// A host program or package is missing; the message names the package to install.
    #[error("{0}")]
    Missing(String),
    /// The spec cannot run in a VM as written (the message names the field).
    #[error("{0}")]
    Spec(String),
    /// A file operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A host tool (xz, ldd, qemu) failed.
    #[error("{0}")]
    Tool(String),
    /// The VM did not boot or died; the message carries the last console lines.
    #[error("{0}")]
    Boot(String),
    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// The lab's state file could not be written.
    #[error(transparent)]
    Layout(#[from] crate::layout::LayoutError),
    /// The guest's results could not be copied into the host store.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl VmError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        VmError::Io {
            what,
            path: path.into(),
            source,
        }
    }

    /// Whether this is the user's to fix (a missing package, a spec that cannot run): exit 2.
    pub fn is_usage(&self) -> bool {
        matches!(self, VmError::Missing(_) | VmError::Spec(_))
    }
}

/// Where kernels and initramfs parts are cached, once per machine: `$IOLAB_VM_CACHE`, else
/// `/var/cache/iolab/vm` as root, else `$XDG_CACHE_HOME/iolab/vm` (or `~/.cache/iolab/vm`).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("IOLAB_VM_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if crate::system::is_root() {
        return PathBuf::from("/var/cache/iolab/vm");
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("iolab/vm");
    }
    std::env::var_os("HOME").map_or_else(
        || std::env::temp_dir().join("iolab-vm-cache"),
        |h| PathBuf::from(h).join(".cache/iolab/vm"),
    )
}
