//! What this machine can build: root, loop disks, and each registered storage layer's own
//! answer (kernel support and tools: each layer's `StorageLayer::detect`). A layout that
//! needs something missing is skipped with `unavailable here: <reason>` instead of failing the
//! whole lab.

use super::layer;
use super::registry::LAYERS;
use crate::stack::Stack;

/// Why each building block is or is not usable here (`Err` holds the reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    /// Running as root (every builder needs it).
    pub root: Result<(), String>,
    /// Loop devices and losetup.
    pub loop_disks: Result<(), String>,
    /// wipefs (signature checks and wiping of real devices).
    pub wipefs: Result<(), String>,
    /// Each registered layer's answer, by name, in the registry's order (`registry::LAYERS`).
    pub layers: Vec<(&'static str, Result<(), String>)>,
}

impl Availability {
    /// Probes this machine.
    pub fn detect() -> Availability {
        Availability {
            root: if crate::system::is_root() {
                Ok(())
            } else {
                Err("building layouts needs root".into())
            },
            loop_disks: super::loopdev::available(),
            wipefs: layer::tools(&["wipefs"], "util-linux"),
            layers: LAYERS.iter().map(|l| (l.name(), l.detect())).collect(),
        }
    }

    /// Everything available (for tests of command lines on any machine).
    pub fn everything() -> Availability {
        Availability {
            root: Ok(()),
            loop_disks: Ok(()),
            wipefs: Ok(()),
            layers: LAYERS.iter().map(|l| (l.name(), Ok(()))).collect(),
        }
    }

    /// The answer for the layer called `name` (`Ok` for a name nobody registered).
    pub fn layer(&self, name: &str) -> Result<(), String> {
        self.layers
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(Ok(()), |(_, r)| r.clone())
    }

    /// Sets the answer for the layer called `name` (tests, and a lab that knows better).
    pub fn set(&mut self, name: &'static str, answer: Result<(), String>) {
        match self.layers.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = answer,
            None => self.layers.push((name, answer)),
        }
    }

    /// Whether `stack` can be built here on loop disks (`loop_disks`) or real devices; the
    /// error is the reason, shown as `unavailable here: <reason>`: the first missing piece,
    /// bottom layer first.
    pub fn check(&self, stack: &Stack, loop_disks: bool) -> Result<(), String> {
        self.root.clone()?;
        if loop_disks {
            self.loop_disks.clone()?;
        } else {
            self.wipefs.clone()?;
        }
        for l in LAYERS.iter().filter(|l| l.in_stack(stack)) {
            self.layer(l.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::layer::{VM_HINT, kernel_has_fs};
    use super::super::zfs::NO_ZFS;
    use super::*;
    use crate::stack::{FsKind, FsLayer, Layer, MdLevel, MdOptions, RaidLayer};

    fn md_stack() -> Stack {
        Stack::over(RaidLayer::Md(MdOptions::new(MdLevel::Raid5)), 3)
            .with(Layer::Lvm)
            .fs(FsLayer::plain(FsKind::Xfs))
    }

    #[test]
    fn the_first_missing_piece_is_the_reason() {
        let mut a = Availability::everything();
        assert!(a.check(&md_stack(), true).is_ok());
        a.set("lvm", Err("no dm".into()));
        assert_eq!(a.check(&md_stack(), true), Err("no dm".into()));
        a.set("md", Err("no md".into()));
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
        a.set("zfs", Err(NO_ZFS.into()));
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
        if !std::path::Path::new("/proc/mdstat").exists() && !layer::kernel_module("/md-mod.ko") {
            let why = a.layer("md").unwrap_err();
            assert!(why.contains("md"), "{why}");
            assert!(why.ends_with(VM_HINT), "{why}");
        }
        assert!(
            crate::system::which("sh").is_some(),
            "which() cannot find sh"
        );
        assert!(kernel_has_fs("proc") || !std::path::Path::new("/proc/self").exists());
        assert_eq!(a.layers.len(), LAYERS.len());
    }
}
