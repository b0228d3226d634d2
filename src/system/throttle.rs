//! cgroup v1 blkio throttles that apply to this process on a device: a figure measured under
//! one is the throttle's, not the device's, and the run must say so.

use std::path::Path;

/// The blkio throttle files and what they limit, for notes.
const LIMITS: [(&str, &str); 4] = [
    ("blkio.throttle.read_iops_device", "read IOPS"),
    ("blkio.throttle.write_iops_device", "write IOPS"),
    ("blkio.throttle.read_bps_device", "read bytes/s"),
    ("blkio.throttle.write_bps_device", "write bytes/s"),
];

/// This process's blkio cgroup directory and its ancestors (a parent's limit applies too).
fn blkio_dirs() -> Vec<std::path::PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    let Some(rel) = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',')
            .any(|c| c == "blkio")
            .then(|| path.to_string())
    }) else {
        return Vec::new();
    };
    let root = Path::new("/sys/fs/cgroup/blkio");
    let mut dirs = Vec::new();
    let mut p = Some(Path::new(rel.trim_start_matches('/')));
    while let Some(d) = p {
        dirs.push(root.join(d));
        p = d.parent();
    }
    dirs
}

/// The throttles on device `major:minor` for this process, as `(what, limit)` pairs with the
/// lowest limit of the cgroup and its ancestors.
pub fn throttles_on(major: u32, minor: u32) -> Vec<(&'static str, u64)> {
    let dev = format!("{major}:{minor}");
    let dirs = blkio_dirs();
    let mut found = Vec::new();
    for (file, what) in LIMITS {
        let lowest = dirs
            .iter()
            .filter_map(|d| std::fs::read_to_string(d.join(file)).ok())
            .flat_map(|t| {
                t.lines()
                    .filter_map(|l| {
                        let (d, v) = l.split_once(' ')?;
                        (d == dev).then(|| v.trim().parse::<u64>().ok()).flatten()
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|v| *v > 0)
            .min();
        if let Some(v) = lowest {
            found.push((what, v));
        }
    }
    found
}

/// A note for a run on `path` when a blkio throttle applies to the device under it, or `None`.
pub fn throttle_note(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let t = throttles_on(major, minor);
    if t.is_empty() {
        return None;
    }
    let limits: Vec<String> = t
        .iter()
        .map(|(what, v)| {
            if what.ends_with("bytes/s") {
                format!("{} {what}", crate::units::format_bytes(*v))
            } else {
                format!("{v} {what}")
            }
        })
        .collect();
    Some(format!(
        "device {major}:{minor} is throttled by a cgroup blkio limit ({}): figures are capped by the throttle, not the device's",
        limits.join(", ")
    ))
}
