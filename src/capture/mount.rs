//! tracefs's mount: found where it is, or mounted by iolab at `/sys/kernel/tracing` (where
//! trace-cmd and perf mount it) when nobody has, and unmounted again when the last capture that
//! could use it ends.
//!
//! The journal is the mount itself: iolab mounts tracefs with the source name
//! [`MOUNT_SOURCE`], so `/proc/self/mountinfo` says, in the mount namespace the mount is in,
//! which tracefs mount is iolab's. A tracefs someone else mounted (systemd, a script, `mount -t
//! tracefs nodev ...`) has another source and is never unmounted. A capture killed with SIGKILL
//! leaves its instance and the mount; `iolab capture --cleanup` (or `iolab run --cleanup`)
//! removes the instance and then the mount.
//!
//! Every capture of the machine takes one lock ([`Lock`]) while it finds or mounts tracefs
//! and makes its instance, and again while it decides to unmount, so a capture ending never
//! unmounts tracefs between another's finding it and making its instance in it.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::CaptureError;

/// Where iolab mounts tracefs when it is not mounted.
pub const MOUNT_POINT: &str = "/sys/kernel/tracing";

/// The source iolab mounts tracefs with (a pseudo filesystem takes any name there): the mark
/// that the mount is iolab's, to unmount.
pub const MOUNT_SOURCE: &str = "iolab-tracefs";

/// The prefix of the names of captures' instances (`instances/iolab-PID`).
pub const INSTANCE_PREFIX: &str = "iolab-";

/// Where tracefs is mounted with its instances: `/sys/kernel/tracing`, or the older
/// `/sys/kernel/debug/tracing` (debugfs mounts it there when that path is looked at).
pub fn find() -> Option<PathBuf> {
    [MOUNT_POINT, "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("instances").is_dir())
}

/// An exclusive lock shared by every iolab process of the machine (`flock` on
/// `/run/iolab-tracefs.lock`), released on drop (the file is closed).
pub struct Lock(#[allow(dead_code)] File);

/// Takes the lock, waiting for it (holders keep it for milliseconds). `None` when the file
/// cannot be opened: not root, and such a process can neither mount, unmount nor make an
/// instance, so it has nothing to serialize.
pub fn lock() -> Option<Lock> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = if Path::new("/run").is_dir() {
        PathBuf::from("/run")
    } else {
        std::env::temp_dir()
    };
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(dir.join("iolab-tracefs.lock"))
        .ok()?;
    loop {
        match rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => return Some(Lock(f)),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// The topmost mount at [`MOUNT_POINT`] is a tracefs iolab mounted.
pub fn ours_is_mounted() -> bool {
    crate::system::mounts::mounts()
        .into_iter()
        .rfind(|m| m.mount_point == Path::new(MOUNT_POINT))
        .is_some_and(|m| m.fs_type == "tracefs" && m.source == MOUNT_SOURCE)
}

/// tracefs where it is, or mounted at [`MOUNT_POINT`] when it is nowhere (as root). The caller
/// holds the [`lock`]. `Ok((root, true))` when this call mounted it.
pub fn find_or_mount() -> Result<(PathBuf, bool), CaptureError> {
    if let Some(p) = find() {
        return Ok((p, false));
    }
    if !crate::system::is_root() {
        return Err(CaptureError::Tracefs(
            "tracefs is not readable: capturing needs root (run iolab capture as root)".into(),
        ));
    }
    let manual = "mount it with `mount -t tracefs nodev /sys/kernel/tracing`";
    let in_kernel = std::fs::read_to_string("/proc/filesystems").is_ok_and(|t| {
        t.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    });
    if !in_kernel {
        return Err(CaptureError::Tracefs(
            "this kernel has no tracefs (not in /proc/filesystems): capturing needs a kernel built with CONFIG_TRACING".into(),
        ));
    }
    let point = Path::new(MOUNT_POINT);
    use rustix::mount::MountFlags;
    rustix::mount::mount(
        MOUNT_SOURCE,
        point,
        "tracefs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| {
        CaptureError::Tracefs(format!(
            "tracefs is not mounted and mounting it at {MOUNT_POINT} failed ({e}); {manual}"
        ))
    })?;
    if !point.join("instances").is_dir() {
        let _ = rustix::mount::unmount(point, rustix::mount::UnmountFlags::empty());
        return Err(CaptureError::Tracefs(format!(
            "tracefs mounted at {MOUNT_POINT} has no instances directory (a kernel before 3.19?): capturing needs tracing instances"
        )));
    }
    Ok((point.to_path_buf(), true))
}

/// What a capture's end did with the tracefs iolab mounted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Release {
    /// This capture mounted tracefs (it was mounted nowhere).
    pub mounted: bool,
    /// tracefs was unmounted from [`MOUNT_POINT`].
    pub unmounted: bool,
    /// Why iolab's mount stays, when it does: what is still in it.
    pub kept_for: Option<String>,
}

/// Unmounts the tracefs iolab mounted at [`MOUNT_POINT`] once nothing needs it: no live
/// capture of this mount namespace has an instance there, no killed capture's instance waits
/// for `--cleanup`, no other tool has an instance, and no file in it is open (the kernel
/// refuses a busy unmount). Nothing when the mount there is not iolab's. Takes the [`lock`].
pub fn release() -> Release {
    let _lock = lock();
    if !ours_is_mounted() {
        return Release::default();
    }
    if let Some(why) = in_use(&Path::new(MOUNT_POINT).join("instances")) {
        return Release {
            kept_for: Some(why),
            ..Release::default()
        };
    }
    match rustix::mount::unmount(MOUNT_POINT, rustix::mount::UnmountFlags::empty()) {
        Ok(()) => Release {
            unmounted: true,
            ..Release::default()
        },
        Err(e) => Release {
            kept_for: Some(format!(
                "unmounting it failed ({e}): a program has a file open in it"
            )),
            ..Release::default()
        },
    }
}

/// Why the instances in `dir` keep the mount, or `None`. A live capture in another mount
/// namespace uses its own namespace's mount (tracefs shows every instance in every mount of
/// it), so it does not count; a killed capture's does (its cleanup needs the mount).
fn in_use(dir: &Path) -> Option<String> {
    let ours = mount_ns(std::process::id());
    let rd = std::fs::read_dir(dir).ok()?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(INSTANCE_PREFIX)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            return Some(format!(
                "{} is another program's tracing instance",
                e.path().display()
            ));
        };
        if pid == std::process::id() {
            continue;
        }
        if !alive(pid) {
            return Some(format!(
                "{} is a killed capture's instance (iolab capture --cleanup removes it and the mount)",
                e.path().display()
            ));
        }
        if ours.is_none() || mount_ns(pid) == ours {
            return Some(format!("capture {pid} is using it"));
        }
    }
    None
}

/// The mount namespace of process `pid` (`mnt:[4026531841]`), `None` when unreadable.
fn mount_ns(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok()
}

/// Whether process `pid` is alive. Any live process keeps its instance, even one that only
/// reuses a dead capture's pid: a capture running inside a test binary is not named iolab,
/// and an instance left a little longer costs nothing.
pub fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}
