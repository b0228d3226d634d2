//! Filesystems on top of the stack: mkfs with the user's options, mount with theirs, and the
//! size the filesystem reports.

use std::path::{Path, PathBuf};

use super::LayoutError;
use super::layer::GuestTool;
use crate::stack::FsKind;

/// A filesystem made on top of the stack by its own mkfs (xfs, ext4): one layer type, a value
/// per filesystem (its kind names it and its mkfs; the module and the package are its own).
pub struct Filesystem {
    /// The stack's filesystem this is.
    pub(crate) kind: FsKind,
    /// The Debian package that has its mkfs.
    pub(crate) package: &'static str,
    /// Its kernel module in a VM guest.
    pub(crate) modules: &'static [&'static str],
    /// Its mkfs as a guest tool (every VM lab may make it).
    pub(crate) tools: &'static [GuestTool],
}

/// XFS on top of the stack.
pub static XFS: Filesystem = Filesystem {
    kind: FsKind::Xfs,
    package: "xfsprogs",
    modules: &["xfs"],
    tools: &[
        GuestTool {
            name: "mkfs.xfs",
            package: "xfsprogs",
            required: true,
        },
        // What `xfs_info` runs on a mount: the alignment check reads sunit/swidth with it.
        GuestTool {
            name: "xfs_spaceman",
            package: "xfsprogs",
            required: false,
        },
    ],
};

/// ext4 on top of the stack.
pub static EXT4: Filesystem = Filesystem {
    kind: FsKind::Ext4,
    package: "e2fsprogs",
    modules: &["ext4"],
    tools: &[
        GuestTool {
            name: "mkfs.ext4",
            package: "e2fsprogs",
            required: true,
        },
        // The alignment check reads `RAID stride` / `RAID stripe width` with it.
        GuestTool {
            name: "dumpe2fs",
            package: "e2fsprogs",
            required: false,
        },
    ],
};

/// The mkfs command for `fs` on `dev`, forcing over old signatures (members are wiped or fresh).
///
/// ext4 gets `-E lazy_itable_init=0,lazy_journal_init=0` unless the options set `-E` themselves:
/// otherwise the kernel initialises inode tables in the background after mount and that writing
/// lands in the first benchmarks.
pub fn mkfs_argv(fs: FsKind, options: &[String], dev: &Path) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    match fs {
        FsKind::Xfs => a.extend(["mkfs.xfs", "-f"].map(String::from)),
        FsKind::Ext4 => {
            a.extend(["mkfs.ext4", "-F", "-q"].map(String::from));
            if !options.iter().any(|o| o.starts_with("-E")) {
                a.extend(["-E", "lazy_itable_init=0,lazy_journal_init=0"].map(String::from));
            }
        }
        FsKind::Btrfs => a.extend(["mkfs.btrfs", "-f"].map(String::from)),
        // A pool is made by `zfs::create_argv`; nothing formats a ZFS device alone.
        FsKind::Zfs => a.extend(["zpool", "labelclear", "-f"].map(String::from)),
    }
    a.extend(options.iter().cloned());
    a.push(dev.to_string_lossy().into_owned());
    a
}

/// `mount -t FS -o OPTS DEV MNT`. For a multi-device btrfs, the other members go in `device=`
/// options so the mount needs no prior `btrfs device scan`; `degraded` mounts with one missing.
pub fn mount_argv(
    fs: FsKind,
    dev: &Path,
    other_devices: &[PathBuf],
    mnt: &Path,
    options: &[String],
    degraded: bool,
) -> Vec<String> {
    let mut opts: Vec<String> = options.to_vec();
    if degraded {
        opts.push("degraded".into());
    }
    for d in other_devices {
        opts.push(format!("device={}", d.display()));
    }
    let mut a: Vec<String> = vec!["mount".into(), "-t".into(), fs.name().into()];
    if !opts.is_empty() {
        a.push("-o".into());
        a.push(opts.join(","));
    }
    a.push(dev.to_string_lossy().into_owned());
    a.push(mnt.to_string_lossy().into_owned());
    a
}

/// Total and available bytes of the filesystem holding `path` (what `df` shows).
pub fn statvfs_bytes(path: &Path) -> Result<(u64, u64), LayoutError> {
    let st =
        rustix::fs::statvfs(path).map_err(|e| LayoutError::io("cannot statvfs", path, e.into()))?;
    let f = st.f_frsize as u64;
    Ok((st.f_blocks as u64 * f, st.f_bavail as u64 * f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_command_lines() {
        let d = Path::new("/dev/md100");
        assert_eq!(
            mkfs_argv(FsKind::Xfs, &["-K".into()], d).join(" "),
            "mkfs.xfs -f -K /dev/md100"
        );
        assert_eq!(
            mkfs_argv(FsKind::Ext4, &[], d).join(" "),
            "mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/md100"
        );
        assert_eq!(
            mkfs_argv(FsKind::Ext4, &["-E".into(), "stride=128".into()], d).join(" "),
            "mkfs.ext4 -F -q -E stride=128 /dev/md100"
        );
    }

    #[test]
    fn mount_command_lines() {
        assert_eq!(
            mount_argv(
                FsKind::Btrfs,
                Path::new("/dev/loop1"),
                &["/dev/loop3".into()],
                Path::new("/tmp/m"),
                &["noatime".into()],
                true
            )
            .join(" "),
            "mount -t btrfs -o noatime,degraded,device=/dev/loop3 /dev/loop1 /tmp/m"
        );
        assert_eq!(
            mount_argv(
                FsKind::Xfs,
                Path::new("/dev/loop1"),
                &[],
                Path::new("/tmp/m"),
                &[],
                false
            )
            .join(" "),
            "mount -t xfs /dev/loop1 /tmp/m"
        );
    }

    #[test]
    fn statvfs_of_root() {
        let (total, avail) = statvfs_bytes(Path::new("/")).unwrap();
        assert!(total > 0 && avail <= total);
    }
}
