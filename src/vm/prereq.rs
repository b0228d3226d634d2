//! Host prerequisites of `--vm`, checked before anything is made: each missing piece is one
//! line naming the Debian package that brings it.

use std::path::PathBuf;

use super::VmError;
use crate::layout::layer::GuestTool;
use crate::layout::registry::LAYERS;
use crate::system::which;

/// A program the host needs, and the package that has it.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// Program name.
    pub name: &'static str,
    /// Debian package.
    pub package: &'static str,
    /// Copied into the guest (else only the host runs it).
    pub guest: bool,
}

/// The programs `--vm` uses besides the storage layers' own: the host's (qemu, xz, ldd), and
/// those every guest needs (device-mapper for faults, wiping, mounting). Each layer's guest
/// programs come from its registration (`layout::registry::LAYERS`).
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "qemu-system-x86_64",
        package: "qemu-system-x86",
        guest: false,
    },
    Tool {
        name: "xz",
        package: "xz-utils",
        guest: false,
    },
    Tool {
        name: "ldd",
        package: "libc-bin",
        guest: false,
    },
    Tool {
        name: "dmsetup",
        package: "dmsetup",
        guest: true,
    },
    Tool {
        name: "wipefs",
        package: "util-linux",
        guest: true,
    },
    Tool {
        name: "blkdiscard",
        package: "util-linux",
        guest: true,
    },
    Tool {
        name: "blkid",
        package: "util-linux",
        guest: true,
    },
    Tool {
        name: "mount",
        package: "mount",
        guest: true,
    },
    Tool {
        name: "umount",
        package: "mount",
        guest: true,
    },
];

/// The statically linked busybox (the guest's shell and coreutils).
pub const BUSYBOX: &str = "/bin/busybox";

/// What the host has: the path of every tool, [`TOOLS`] first, then the layers' own.
#[derive(Debug, Clone)]
pub struct HostTools {
    /// `(tool, path)` pairs.
    pub found: Vec<(Tool, PathBuf)>,
    /// busybox-static's binary.
    pub busybox: PathBuf,
}

impl HostTools {
    /// The path of `name`, when it was found.
    pub fn path(&self, name: &str) -> Option<&PathBuf> {
        self.found
            .iter()
            .find(|(t, _)| t.name == name)
            .map(|(_, p)| p)
    }
}

/// Checks every program; the first missing one is the error.
pub fn check() -> Result<HostTools, VmError> {
    let mut found = Vec::new();
    let layers = LAYERS.iter().flat_map(|l| l.vm_tools());
    let (required, optional): (Vec<&GuestTool>, Vec<&GuestTool>) = layers.partition(|t| t.required);
    let guest = |t: &GuestTool| Tool {
        name: t.name,
        package: t.package,
        guest: true,
    };
    for t in TOOLS.iter().copied().chain(required.into_iter().map(guest)) {
        let p = which(t.name).ok_or_else(|| {
            VmError::Missing(format!(
                "--vm needs {} on the host: apt-get install {}",
                t.name, t.package
            ))
        })?;
        found.push((t, p));
    }
    // A layer's optional programs: copied when the host has them; a layout that needs one in
    // a guest without it fails at its build (`cannot run make-bcache`), and CI installs them.
    for t in optional.into_iter().map(guest) {
        if let Some(p) = which(t.name) {
            found.push((t, p));
        }
    }
    let busybox = static_busybox().ok_or_else(|| {
        VmError::Missing(
            "--vm needs a statically linked busybox on the host: apt-get install busybox-static"
                .into(),
        )
    })?;
    Ok(HostTools { found, busybox })
}

/// One more program, not in [`TOOLS`] (a tool only some guests need, such as blktrace); the
/// error is one line naming its package.
pub fn find(t: &Tool) -> Result<PathBuf, VmError> {
    which(t.name).ok_or_else(|| {
        VmError::Missing(format!(
            "the VM needs {} on the host: apt-get install {}",
            t.name, t.package
        ))
    })
}

/// busybox-static's binary: `/bin/busybox` when it is static (the dynamic `busybox` package
/// installs the same path).
fn static_busybox() -> Option<PathBuf> {
    let p = which("busybox").unwrap_or_else(|| PathBuf::from(BUSYBOX));
    let data = std::fs::read(&p).ok()?;
    // A dynamically linked ELF has a PT_INTERP naming the loader.
    let dynamic = data
        .windows(b"ld-linux".len())
        .take(64 << 10)
        .any(|w| w == b"ld-linux");
    (!dynamic).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool only some guests need (blktrace) is found on the host, or missing with one line
    /// naming its package.
    #[test]
    fn a_missing_extra_tool_names_its_package() {
        let t = Tool {
            name: "iolab-no-such-tool",
            package: "iolab-no-such-package",
            guest: true,
        };
        let e = find(&t).unwrap_err();
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            "the VM needs iolab-no-such-tool on the host: apt-get install iolab-no-such-package"
        );
        if which("sh").is_some() {
            let sh = Tool {
                name: "sh",
                package: "dash",
                guest: true,
            };
            assert!(find(&sh).is_ok());
        }
    }
}
