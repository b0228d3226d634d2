//! The thing under test: a directory (a test file is made in it), a regular file, or a block
//! device. Resolving a target is where the safety rules live: a device is only written with
//! `--destroy` naming it, and never when it or a partition of it is mounted or holds `/`.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::system::{self, BlockDevice, MountInfo};

/// Why a target cannot be used. Each message is one line naming the target and the fix.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The path does not exist.
    #[error("target {0} does not exist; give an existing directory, file or block device")]
    NotFound(PathBuf),
    /// The path exists but this user may not use it.
    #[error("no permission to use {0}; run as a user who can read and write it (or as root)")]
    PermissionDenied(PathBuf),
    /// A character device, socket, fifo...
    #[error("{0} is not a directory, regular file or block device")]
    Unsupported(PathBuf),
    /// Writes to a device not named by `--destroy`.
    #[error(
        "refusing to write to block device {dev}: {found}; pass --destroy {given} to allow writes"
    )]
    NeedsDestroy {
        /// The device (and the node it resolves to).
        dev: PathBuf,
        /// The path the user gave, for the fix.
        given: PathBuf,
        /// What libblkid found on it.
        found: String,
    },
    /// `--destroy` names another device than the target.
    #[error("--destroy {given} does not match the target {target}; they must name the same device")]
    DestroyMismatch {
        /// What `--destroy` named.
        given: PathBuf,
        /// The target.
        target: PathBuf,
    },
    /// The device or one of its partitions is mounted.
    #[error("refusing to use block device {dev}: {part} is mounted on {mount}; unmount it first")]
    Mounted {
        /// The device.
        dev: PathBuf,
        /// Which device node is mounted (the device or a partition).
        part: String,
        /// Where.
        mount: PathBuf,
    },
    /// The device is part of the root filesystem's stack.
    #[error("refusing to write to block device {0}: it holds the root filesystem")]
    RootFilesystem(PathBuf),
    /// The device is in use: holders, swap, a loop backed on it, a busy exclusive open.
    #[error("refusing to write to block device {dev}: {holders}; stop that first")]
    InUse {
        /// The device.
        dev: PathBuf,
        /// Devices stacked on it.
        holders: String,
    },
    /// Block size not a multiple of the O_DIRECT alignment.
    #[error(
        "block size {bs} is not a multiple of {align} bytes, the O_DIRECT alignment of {path}; use a multiple of {align} or --buffered"
    )]
    Misaligned {
        /// Requested block size.
        bs: u64,
        /// Required alignment.
        align: u32,
        /// The target.
        path: PathBuf,
    },
    /// Holes (`skip`) that would put O_DIRECT IOs off the alignment.
    #[error(
        "skip {skip} is not a multiple of {align} bytes, the O_DIRECT alignment of {path}; use a multiple of {align} or --buffered"
    )]
    MisalignedSkip {
        /// The bytes skipped after each IO.
        skip: i64,
        /// Required alignment.
        align: u32,
        /// The target.
        path: PathBuf,
    },
    /// The working set does not fit.
    #[error("working set {want} bytes is larger than {path} ({have} bytes); lower --size")]
    TooSmall {
        /// Requested working set.
        want: u64,
        /// What the device holds.
        have: u64,
        /// The target.
        path: PathBuf,
    },
    /// The working set would fill the filesystem (or eat into the reserve).
    #[error(transparent)]
    NoSpace(#[from] crate::system::space::NoSpace),
    /// An OS error while preparing the target.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl TargetError {
    /// Whether the user can fix this by changing what they typed (exit 2) rather than the run
    /// failing (exit 1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, TargetError::Io { .. })
    }
    fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        match source.kind() {
            std::io::ErrorKind::PermissionDenied => {
                TargetError::PermissionDenied(path.to_path_buf())
            }
            std::io::ErrorKind::NotFound => TargetError::NotFound(path.to_path_buf()),
            _ => TargetError::Io {
                what,
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

/// What kind of thing the target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A directory: IO goes to a test file created in it; small files go in it.
    Directory,
    /// A regular file, used as it is (extended to the working set when shorter).
    File,
    /// A whole block device or partition.
    BlockDevice,
}

/// What the result document records about the target.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TargetInfo {
    /// The target as the user gave it (or the temporary directory made for them).
    pub path: PathBuf,
    /// Directory, file or block device.
    pub kind: TargetKind,
    /// Filesystem holding it (`None` for a raw device).
    pub fs_type: Option<String>,
    /// Mount point of that filesystem.
    pub mount_point: Option<PathBuf>,
    /// Its mount options.
    pub mount_options: Option<String>,
    /// Mount source (`/dev/loop3`).
    pub mount_source: Option<String>,
    /// The block devices under it, top of the stack first.
    pub devices: Vec<BlockDevice>,
}

impl TargetInfo {
    /// A directory known only by its path: what a record says of a target it has not resolved
    /// (a multi-host run's placeholder before any host answered).
    pub fn directory(path: PathBuf) -> TargetInfo {
        TargetInfo {
            path,
            kind: TargetKind::Directory,
            fs_type: None,
            mount_point: None,
            mount_options: None,
            mount_source: None,
            devices: Vec::new(),
        }
    }
}

/// A resolved target with the cleanup it owes: the temporary directory it made, if any.
#[derive(Debug)]
pub struct Target {
    /// Facts for the result document.
    pub info: TargetInfo,
    /// Size of a block device in bytes.
    pub device_size: Option<u64>,
    /// Alignment O_DIRECT needs for offsets and lengths, bytes.
    pub direct_align: u32,
    /// Writes are allowed (never false for files and directories).
    pub writable: bool,
    /// The temporary directory made when no target was given; removed on drop.
    tempdir_held: Option<tempfile::TempDir>,
}

/// What the caller intends, so resolution can refuse early.
#[derive(Debug, Clone, Default)]
pub struct TargetRequest {
    /// The target path; `None` makes a temporary directory under the current one.
    pub path: Option<PathBuf>,
    /// The suite writes (so a device needs `--destroy`).
    pub writes: bool,
    /// The device `--destroy` named.
    pub destroy: Option<PathBuf>,
}

impl Target {
    /// Checks the target against the safety rules and collects its facts.
    pub fn resolve(req: &TargetRequest) -> Result<Target, TargetError> {
        let (path, tempdir) = if let Some(p) = &req.path {
            (p.clone(), None)
        } else {
            let cwd = std::env::current_dir()
                .map_err(|e| TargetError::io("cannot read current directory", Path::new("."), e))?;
            let td = tempfile::Builder::new()
                .prefix(".iolab-")
                .tempdir_in(&cwd)
                .map_err(|e| TargetError::io("cannot create a temporary directory in", &cwd, e))?;
            (td.path().to_path_buf(), Some(td))
        };
        let meta =
            std::fs::metadata(&path).map_err(|e| TargetError::io("cannot stat", &path, e))?;
        let ft = meta.file_type();
        let kind = if ft.is_dir() {
            TargetKind::Directory
        } else if ft.is_file() {
            TargetKind::File
        } else if ft.is_block_device() {
            TargetKind::BlockDevice
        } else {
            return Err(TargetError::Unsupported(path));
        };
        let devices = system::blockdev::devices_under(&path);
        let mut device_size = None;
        let mut writable = true;
        let mount: Option<MountInfo> = if kind == TargetKind::BlockDevice {
            None
        } else {
            system::mounts::mount_of(&path)
        };
        let mut direct_align = 512;
        if kind == TargetKind::BlockDevice {
            let dev = BlockDevice::from_path(&path)
                .ok_or_else(|| TargetError::Unsupported(path.clone()))?;
            check_device(&path, &dev, req)?;
            device_size = Some(dev.size_bytes);
            direct_align = dev.logical_block_size.max(512);
            writable = req.writes;
            // Reading needs the node to open; say "no permission" now rather than mid-run.
            File::open(&path).map_err(|e| TargetError::io("cannot open", &path, e))?;
        } else {
            let zfs = mount.as_ref().is_some_and(|m| m.fs_type == "zfs");
            if let Some(a) = dio_alignment(&path) {
                // ZFS reports its recordsize, but takes any page-aligned O_DIRECT IO (a
                // smaller one reads the whole record, as a buffered read of it would).
                direct_align = if zfs { a.min(4096) } else { a };
            } else if let Some(d) = devices.first() {
                direct_align = d.logical_block_size.max(512);
            }
            check_access(&path, kind, req.writes)?;
        }
        Ok(Target {
            info: TargetInfo {
                path: path.clone(),
                kind,
                fs_type: mount.as_ref().map(|m| m.fs_type.clone()),
                mount_point: mount.as_ref().map(|m| m.mount_point.clone()),
                mount_options: mount.as_ref().map(|m| m.options.clone()),
                mount_source: mount.as_ref().map(|m| m.source.clone()),
                devices,
            },
            device_size,
            direct_align,
            writable,
            tempdir_held: tempdir,
        })
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        &self.info.path
    }

    /// True when this run made the directory itself (it is removed afterwards).
    pub fn is_temporary(&self) -> bool {
        self.tempdir_held.is_some()
    }
}

/// A directory must take a new file; a file must be readable, and writable only when the suite
/// writes.
fn check_access(path: &Path, kind: TargetKind, writes: bool) -> Result<(), TargetError> {
    use rustix::fs::Access;
    let mode = match kind {
        TargetKind::Directory => Access::WRITE_OK | Access::EXEC_OK,
        _ if writes => Access::READ_OK | Access::WRITE_OK,
        _ => Access::READ_OK,
    };
    rustix::fs::access(path, mode).map_err(|e| TargetError::io("cannot use", path, e.into()))
}

fn same_device(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn check_device(path: &Path, dev: &BlockDevice, req: &TargetRequest) -> Result<(), TargetError> {
    let shown = if dev.path == path {
        path.to_path_buf()
    } else {
        PathBuf::from(format!("{} ({})", path.display(), dev.path.display()))
    };
    // Mounted (device or any partition) is refused for reads too: we would read a moving target
    // and, worse, a later write flag would corrupt a live filesystem.
    if let Some(m) = system::blockdev::mounts_of_device(&dev.name)
        .into_iter()
        .next()
    {
        return Err(TargetError::Mounted {
            dev: shown,
            part: m.source.clone(),
            mount: m.mount_point.clone(),
        });
    }
    if !req.writes {
        return Ok(());
    }
    // Swap, a loop device backed by a file on it, holders, a busy exclusive open: refused even
    // with --destroy, since writing would corrupt something live.
    if let Some(why) = system::probe::in_use(dev) {
        return Err(TargetError::InUse {
            dev: shown,
            holders: why,
        });
    }
    let root_devs: Vec<String> = system::blockdev::devices_under(Path::new("/"))
        .into_iter()
        .map(|d| d.whole_disk())
        .collect();
    if root_devs
        .iter()
        .any(|r| *r == dev.whole_disk() || *r == dev.name)
    {
        return Err(TargetError::RootFilesystem(shown));
    }
    match &req.destroy {
        None => {
            // Say what is on it, as libblkid sees it, so the user knows what --destroy would cost.
            let found = match system::probe::signatures(path) {
                Ok(s) if s.is_empty() => {
                    "no signature libblkid knows; it may still hold data".into()
                }
                Ok(s) => format!("it holds {}", system::probe::describe(&s)),
                Err(e) => e.to_string(),
            };
            return Err(TargetError::NeedsDestroy {
                dev: shown,
                given: path.to_path_buf(),
                found,
            });
        }
        Some(d) if !same_device(d, path) => {
            return Err(TargetError::DestroyMismatch {
                given: d.clone(),
                target: path.to_path_buf(),
            });
        }
        Some(_) => {}
    }
    Ok(())
}

/// The O_DIRECT offset alignment the kernel reports for a path (statx DIOALIGN), when it does.
pub fn dio_alignment(path: &Path) -> Option<u32> {
    use rustix::fs::{AtFlags, CWD, StatxFlags};
    let st = rustix::fs::statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN).ok()?;
    if st.stx_mask & StatxFlags::DIOALIGN.bits() == 0 || st.stx_dio_offset_align == 0 {
        return None;
    }
    Some(st.stx_dio_offset_align)
}

/// Whether the filesystem holding `dir` accepts O_DIRECT (tmpfs does not): tries a probe file.
pub fn probe_direct(dir: &Path) -> bool {
    let p = dir.join(format!(".iolab-dio-probe-{}", std::process::id()));
    let r = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&p);
    let ok = r.is_ok();
    let _ = std::fs::remove_file(&p);
    ok
}
