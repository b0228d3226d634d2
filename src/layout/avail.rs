//! What this machine can build: kernel support (filesystems, md, device-mapper, loop) and the
//! tools (mkfs.*, btrfs, mdadm, lvm). A layout that needs something missing is skipped with
//! `unavailable here: <reason>` instead of failing the whole lab.

use std::path::Path;

use crate::stack::cache::CacheKind;
use crate::stack::{FsKind, RaidLayer, Stack};
use crate::system::which;

/// What a layout the kernel cannot build should try instead.
pub const VM_HINT: &str = "run with --vm to build it in a virtual machine";

/// Why each building block is or is not usable here (`Err` holds the reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    /// Running as root (every builder needs it).
    pub root: Result<(), String>,
    /// Loop devices and losetup.
    pub loop_disks: Result<(), String>,
    /// btrfs in the kernel and btrfs-progs.
    pub btrfs: Result<(), String>,
    /// xfs in the kernel and xfsprogs.
    pub xfs: Result<(), String>,
    /// ext4 in the kernel and e2fsprogs.
    pub ext4: Result<(), String>,
    /// md in the kernel and mdadm.
    pub md: Result<(), String>,
    /// device-mapper in the kernel and lvm2.
    pub lvm: Result<(), String>,
    /// wipefs (signature checks and wiping of real devices).
    pub wipefs: Result<(), String>,
    /// The zfs module (loaded, or loadable by the running kernel) and zpool/zfs.
    pub zfs: Result<(), String>,
    /// dm-cache in the kernel, LVM and `cache_check` (lvmcache).
    pub lvmcache: Result<(), String>,
    /// bcache in the kernel and `make-bcache`.
    pub bcache: Result<(), String>,
}

/// Whether the running kernel has a module for `needle` (e.g. `/btrfs.ko`): loadable on demand
/// even when not loaded yet.
fn kernel_module(needle: &str) -> bool {
    let Some(rel) = crate::system::read_trim("/proc/sys/kernel/osrelease") else {
        return false;
    };
    ["modules.dep", "modules.builtin"].iter().any(|f| {
        std::fs::read_to_string(format!("/lib/modules/{rel}/{f}")).is_ok_and(|t| t.contains(needle))
    })
}

/// Whether the kernel mounts filesystem `name` (listed in /proc/filesystems, or a module exists).
pub fn kernel_has_fs(name: &str) -> bool {
    let listed = std::fs::read_to_string("/proc/filesystems")
        .is_ok_and(|t| t.lines().any(|l| l.split_whitespace().last() == Some(name)));
    listed || kernel_module(&format!("/{name}.ko"))
}

fn tools(names: &[&str], package: &str) -> Result<(), String> {
    for n in names {
        if which(n).is_none() {
            return Err(format!("{n} is not installed (apt-get install {package})"));
        }
    }
    Ok(())
}

fn fs(name: &str, tool_names: &[&str], package: &str) -> Result<(), String> {
    if !kernel_has_fs(name) {
        return Err(format!("the kernel has no {name} support"));
    }
    tools(tool_names, package)
}

impl Availability {
    /// Probes this machine.
    pub fn detect() -> Availability {
        let md = if !Path::new("/proc/mdstat").exists() && !kernel_module("/md-mod.ko") {
            Err(format!(
                "the kernel has no md RAID support (no /proc/mdstat, no md-mod module); {VM_HINT}"
            ))
        } else {
            tools(&["mdadm"], "mdadm")
        };
        let dm = Path::new("/sys/class/misc/device-mapper").exists()
            || Path::new("/dev/mapper/control").exists()
            || kernel_module("/dm-mod.ko");
        let lvm = if dm {
            tools(&["lvm"], "lvm2")
        } else {
            Err(format!(
                "the kernel has no device-mapper (no /dev/mapper/control, no dm-mod module), which LVM needs; {VM_HINT}"
            ))
        };
        Availability {
            root: if crate::system::is_root() {
                Ok(())
            } else {
                Err("building layouts needs root".into())
            },
            loop_disks: super::loopdev::available(),
            btrfs: fs("btrfs", &["mkfs.btrfs", "btrfs"], "btrfs-progs"),
            xfs: fs("xfs", &["mkfs.xfs"], "xfsprogs"),
            ext4: fs("ext4", &["mkfs.ext4"], "e2fsprogs"),
            md,
            wipefs: tools(&["wipefs"], "util-linux"),
            zfs: zfs(),
            lvmcache: lvm.clone().and_then(|()| cache(CacheKind::Lvmcache)),
            bcache: cache(CacheKind::Bcache),
            lvm,
        }
    }

    /// Everything available (for tests of command lines on any machine).
    pub fn everything() -> Availability {
        Availability {
            root: Ok(()),
            loop_disks: Ok(()),
            btrfs: Ok(()),
            xfs: Ok(()),
            ext4: Ok(()),
            md: Ok(()),
            lvm: Ok(()),
            wipefs: Ok(()),
            zfs: Ok(()),
            lvmcache: Ok(()),
            bcache: Ok(()),
        }
    }

    /// Whether `stack` can be built here on loop disks (`loop_disks`) or real devices; the
    /// error is the reason, shown as `unavailable here: <reason>`.
    pub fn check(&self, stack: &Stack, loop_disks: bool) -> Result<(), String> {
        self.root.clone()?;
        if loop_disks {
            self.loop_disks.clone()?;
        } else {
            self.wipefs.clone()?;
        }
        match &stack.raid() {
            RaidLayer::Md(_) => self.md.clone()?,
            RaidLayer::Zfs(_) => return self.zfs.clone(),
            RaidLayer::Btrfs { .. } | RaidLayer::None => {}
        }
        if stack.lvm() {
            self.lvm.clone()?;
        }
        match stack.cache().as_ref().map(|c| c.kind) {
            Some(CacheKind::Lvmcache) => self.lvmcache.clone()?,
            Some(CacheKind::Bcache) => self.bcache.clone()?,
            None => {}
        }
        match stack.fs() {
            FsKind::Xfs => self.xfs.clone(),
            FsKind::Ext4 => self.ext4.clone(),
            FsKind::Btrfs => self.btrfs.clone(),
            FsKind::Zfs => self.zfs.clone(),
        }
    }
}

/// Whether the kernel has the cache's modules (loaded, or loadable) and the tools are here.
fn cache(kind: CacheKind) -> Result<(), String> {
    let (loaded, module) = match kind {
        CacheKind::Lvmcache => ("/sys/module/dm_cache", "/dm-cache.ko"),
        CacheKind::Bcache => ("/sys/fs/bcache", "/bcache.ko"),
    };
    if !Path::new(loaded).exists() && !kernel_module(module) {
        return Err(format!(
            "the kernel has no {} module ({}); {VM_HINT}",
            kind.name(),
            module.trim_start_matches('/')
        ));
    }
    for (tool, package) in super::cache::tools(kind) {
        tools(&[tool], package)?;
    }
    Ok(())
}

/// The reason a zfs layout is `unavailable here: no zfs module; run with --vm` (the running
/// kernel has no zfs module loaded or installed), or that zpool/zfs are missing.
fn zfs() -> Result<(), String> {
    let loaded = Path::new("/sys/module/zfs").exists();
    if !loaded && !kernel_module("/zfs.ko") {
        return Err(NO_ZFS.into());
    }
    tools(&["zpool", "zfs"], "zfsutils-linux")
}

/// Why a zfs layout cannot run on a host without the module.
pub const NO_ZFS: &str = "no zfs module; run with --vm";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::{FsLayer, Layer, MdLevel, MdOptions};

    fn md_stack() -> Stack {
        Stack::new(
            RaidLayer::Md(MdOptions {
                level: MdLevel::Raid5,
                chunk: None,
                bitmap: None,
                bitmap_chunk: None,
                assume_clean: false,
                consistency_policy: None,
                sync_speed_min: None,
                sync_speed_max: None,
            }),
            3,
            0,
            true,
            None,
            FsLayer::plain(FsKind::Xfs),
        )
    }

    #[test]
    fn the_first_missing_piece_is_the_reason() {
        let mut a = Availability::everything();
        assert!(a.check(&md_stack(), true).is_ok());
        a.lvm = Err("no dm".into());
        assert_eq!(a.check(&md_stack(), true), Err("no dm".into()));
        a.md = Err("no md".into());
        assert_eq!(a.check(&md_stack(), true), Err("no md".into()));
        a.root = Err("root".into());
        assert_eq!(a.check(&md_stack(), true), Err("root".into()));
    }

    #[test]
    fn a_zfs_layout_needs_the_module() {
        let mut a = Availability::everything();
        let mut z = md_stack();
        z.set(Layer::Raid(RaidLayer::Zfs(
            crate::stack::zfs::ZfsOptions::simple(crate::stack::zfs::VdevKind::Raidz(2), 6),
        )));
        z.set(Layer::Fs(FsLayer::plain(FsKind::Zfs)));
        z.without_lvm();
        assert!(a.check(&z, true).is_ok());
        a.zfs = Err(NO_ZFS.into());
        assert_eq!(
            a.check(&z, true)
                .map_err(|e| format!("unavailable here: {e}")),
            Err("unavailable here: no zfs module; run with --vm".into())
        );
        // md layouts do not care.
        assert!(a.check(&md_stack(), true).is_ok());
    }

    #[test]
    fn detection_agrees_with_the_machine() {
        let a = Availability::detect();
        // md needs both the kernel and the tool; whatever the answer, it must say which.
        if !Path::new("/proc/mdstat").exists() && !kernel_module("/md-mod.ko") {
            let why = a.md.unwrap_err();
            assert!(why.contains("md"), "{why}");
            assert!(why.ends_with(VM_HINT), "{why}");
        }
        assert!(which("sh").is_some(), "which() cannot find sh");
        assert!(kernel_has_fs("proc") || !Path::new("/proc/self").exists());
    }
}
