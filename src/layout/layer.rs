//! What the storage layers share to say what they need: a kernel module present, a filesystem
//! the kernel mounts, a program installed, a program a VM guest runs. Each layer's one trait
//! (`StorageLayer`, in `session/steps.rs`) answers with these in the layer's own file under
//! `session/`, and is registered once in `registry.rs`.
//!
//! Also the probes the layers share: a kernel module present, a filesystem the kernel mounts,
//! a program installed.

use crate::system::which;

/// What a layout the kernel cannot build should try instead.
pub const VM_HINT: &str = "run with --vm to build it in a virtual machine";

/// A program a VM guest runs for a layer, and the Debian package that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestTool {
    /// Program name.
    pub name: &'static str,
    /// Debian package.
    pub package: &'static str,
    /// Every VM lab needs it (missing on the host: `--vm` refuses to start); otherwise it is
    /// copied into the guest only when the host has it, and a layout that needs it fails at
    /// its build.
    pub required: bool,
}

/// One plain disk, no RAID: the filesystem goes on the one member as it is.
pub struct PlainDisk;

/// Whether the running kernel has a module for `needle` (e.g. `/btrfs.ko`): loadable on demand
/// even when not loaded yet.
pub fn kernel_module(needle: &str) -> bool {
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

/// Every program in `names` is installed, or the first missing one with its package.
pub fn tools(names: &[&str], package: &str) -> Result<(), String> {
    for n in names {
        if which(n).is_none() {
            return Err(format!("{n} is not installed (apt-get install {package})"));
        }
    }
    Ok(())
}

/// The kernel mounts `name` and its tools are installed.
pub fn filesystem(name: &str, tool_names: &[&str], package: &str) -> Result<(), String> {
    if !kernel_has_fs(name) {
        return Err(format!("the kernel has no {name} support"));
    }
    tools(tool_names, package)
}

/// Whether device-mapper is in the kernel (loaded, or loadable).
pub fn device_mapper() -> bool {
    std::path::Path::new("/sys/class/misc/device-mapper").exists()
        || std::path::Path::new("/dev/mapper/control").exists()
        || kernel_module("/dm-mod.ko")
}
