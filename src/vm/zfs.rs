//! ZFS inside the VM: the kernel module built once per machine for the guest's kernel (by
//! `scripts/zfs-module`, cached under `/var/cache/iolab/zfs/<kernel>-<zfs version>/`), the
//! host's `zpool`/`zfs` with their libraries, and the udev database libzfs reads.
//!
//! libzfs asks udev whether a disk and the partitions it writes are ready; the guest has no udev,
//! so a small loop ([`UDEV_SCRIPT`]) writes the entries (`/run/udev/data/b<maj>:<min>` with the
//! `disk/by-id/virtio-<serial>` link) for every virtio disk and partition as they appear.
//! Without them `zpool create` waits ~31 s and fails ("failed to detect device partitions").

use std::path::{Path, PathBuf};

use super::VmError;
use crate::lab::{LabSpec, LayoutKind};
use crate::layout::RaidLayer;

/// The module files for one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZfsModules {
    /// The cache directory they are in (`.../6.1.0-56-amd64-2.3.2`).
    pub dir: PathBuf,
    /// `spl.ko`.
    pub spl: PathBuf,
    /// `zfs.ko`.
    pub zfs: PathBuf,
    /// The zfs version from the directory name (`2.3.2`).
    pub version: String,
}

/// Where built modules are cached: `$IOLAB_ZFS_CACHE`, else `/var/cache/iolab/zfs` (the
/// default of `scripts/zfs-module`).
pub fn cache_root() -> PathBuf {
    std::env::var_os("IOLAB_ZFS_CACHE")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/var/cache/iolab/zfs"), PathBuf::from)
}

/// Whether any layout of the spec is a ZFS pool (then the guest needs the module and tools).
pub fn spec_needs_zfs(spec: &LabSpec) -> bool {
    spec.layouts
        .iter()
        .any(|l| matches!(&l.kind, LayoutKind::Stack(s) if matches!(s.raid(), RaidLayer::Zfs(_))))
}

/// The cached modules for `kernel` under `root` (the newest zfs version when several are
/// cached); the error says how to build them.
pub fn find(root: &Path, kernel: &str) -> Result<ZfsModules, VmError> {
    let prefix = format!("{kernel}-");
    let mut found: Vec<ZfsModules> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix(&prefix)?.to_string();
            let dir = e.path();
            let (spl, zfs) = (dir.join("spl.ko"), dir.join("zfs.ko"));
            let nonempty = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() > 0);
            (nonempty(&spl) && nonempty(&zfs)).then_some(ZfsModules {
                dir,
                spl,
                zfs,
                version,
            })
        })
        .collect();
    found.sort_by_key(|m| {
        m.version
            .split(|c: char| !c.is_ascii_digit())
            .map(|p| p.parse::<u64>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    found.pop().ok_or_else(|| {
        VmError::Missing(format!(
            "the spec has zfs layouts and no zfs module is built for the VM's kernel {kernel} (looked in {}): run scripts/zfs-module as root once (it adds Debian contrib + bookworm-backports and builds zfs-dkms: ~5-15 min, then cached)",
            root.display()
        ))
    })
}

/// The host's ZFS tools the guest runs (their libraries are copied with them; zdb maps a
/// file's blocks for faults placed under file data).
pub const TOOLS: &[&str] = &["zpool", "zfs", "zdb"];

/// Finds the host's `zpool` and `zfs`; the error names the package.
pub fn tools() -> Result<Vec<(String, PathBuf)>, VmError> {
    TOOLS
        .iter()
        .map(|t| {
            crate::system::which(t)
                .map(|p| ((*t).to_string(), p))
                .ok_or_else(|| {
                    VmError::Missing(format!(
                        "zfs layouts in the VM need {t} on the host: run scripts/zfs-module (installs zfsutils-linux from bookworm-backports)"
                    ))
                })
        })
        .collect()
}

/// Where the udev loop is in the guest.
pub const UDEV_PATH: &str = "sbin/iolab-udev";

/// Keeps udev's database and `/dev/disk/by-id` links for the virtio disks and their
/// partitions, as udev would (libzfs waits for them). Runs in the background for the whole
/// guest life; an entry is written once per device number.
pub const UDEV_SCRIPT: &str = r#"#!/bin/sh
mkdir -p /run/udev/data /dev/disk/by-id /etc/zfs
while :; do
  for s in /sys/class/block/vd*; do
    [ -e "$s/dev" ] || continue
    read -r d < "$s/dev"
    f="/run/udev/data/b$d"
    n="${s##*/}"
    if [ -f "$s/partition" ]; then
      read -r p < "$s/partition"
      parent="${n%%[0-9]*}"
      ser=$(cat "/sys/block/$parent/serial" 2>/dev/null)
      id="virtio-$ser-part$p"; type=partition
    else
      ser=$(cat "$s/serial" 2>/dev/null)
      id="virtio-$ser"; type=disk
    fi
    [ -n "$ser" ] || continue
    if [ ! -f "$f" ] || [ ! -L "/dev/disk/by-id/$id" ]; then
      ln -sfn "../../$n" "/dev/disk/by-id/$id"
      printf 'S:disk/by-id/%s\nE:DEVTYPE=%s\nE:ID_SERIAL=%s\nE:ID_BUS=virtio\nG:systemd\n' "$id" "$type" "$ser" > "$f"
    fi
  done
  sleep 0.2
done
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_complete_build_for_the_kernel_is_chosen() {
        let root = tempfile::tempdir().unwrap();
        let mk = |name: &str, files: &[&str]| {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            for f in files {
                std::fs::write(d.join(f), b"ko").unwrap();
            }
        };
        mk("6.1.0-56-amd64-2.1.11", &["spl.ko", "zfs.ko"]);
        mk("6.1.0-56-amd64-2.3.2", &["spl.ko", "zfs.ko"]);
        mk("6.1.0-56-amd64-2.3.10", &["spl.ko"]);
        mk("6.1.0-99-amd64-2.3.9", &["spl.ko", "zfs.ko"]);
        let m = find(root.path(), "6.1.0-56-amd64").unwrap();
        assert_eq!(m.version, "2.3.2");
        assert!(m.zfs.ends_with("6.1.0-56-amd64-2.3.2/zfs.ko"));
        let e = find(root.path(), "6.1.0-57-amd64").unwrap_err().to_string();
        assert!(
            e.contains("scripts/zfs-module") && e.contains("6.1.0-57-amd64"),
            "{e}"
        );
    }

    #[test]
    fn the_udev_loop_names_disks_and_partitions_by_serial() {
        assert!(UDEV_SCRIPT.contains("S:disk/by-id/%s"));
        assert!(UDEV_SCRIPT.contains("virtio-$ser-part$p"));
        assert!(UDEV_SCRIPT.contains("/run/udev/data/b$d"));
    }
}
