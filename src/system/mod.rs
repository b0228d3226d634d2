//! Facts about the machine and the storage under a path, read from /proc and /sys.
//!
//! Every result carries these so a figure can be traced to the exact setup that produced it.
//! Reading never fails loudly: a fact that cannot be read is `None`, shown as "-".

pub mod blockdev;
pub mod md_super;
pub mod mounts;
pub mod probe;
pub mod sched;
pub mod space;
pub mod throttle;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use blockdev::BlockDevice;
pub use mounts::MountInfo;

/// The machine a run ran on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SystemInfo {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Physical memory, bytes.
    pub ram_bytes: u64,
    /// iolab version.
    pub iolab_version: String,
    /// Git revision iolab was built from.
    pub iolab_git_rev: String,
}

impl SystemInfo {
    /// Reads the facts of this machine.
    pub fn collect() -> SystemInfo {
        SystemInfo {
            hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
            kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
            cpu_model: cpu_model().unwrap_or_default(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            ram_bytes: ram_bytes().unwrap_or(0),
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            iolab_git_rev: env!("IOLAB_GIT_REV").to_string(),
        }
    }
}

/// Reads a small text file and trims it; `None` when absent or unreadable.
pub fn read_trim(path: impl AsRef<std::path::Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn cpu_model() -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    s.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Physical memory in bytes, from /proc/meminfo.
pub fn ram_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let l = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// True when running as root (needed for dropping caches, loop devices, mounts).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Drops the page cache (sync first). Returns why not when it cannot.
pub fn drop_caches() -> Result<(), String> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        if is_root() {
            format!("cannot drop caches: {e}")
        } else {
            "cannot drop the page cache (needs root): figures may include cached data".to_string()
        }
    })
}

/// Finds a program on `$PATH` or in the sbin directories (where mkfs and mdadm live, and which
/// a non-login root shell may lack on its path).
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
