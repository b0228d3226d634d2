//! Mounts, from /proc/self/mountinfo: which filesystem holds a path, and whether a block
//! device (or any partition of it) is mounted.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MountInfo {
    /// Device number "major:minor" of the filesystem.
    pub dev: String,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The directory of the filesystem that is mounted there: `/` for all of it, a
    /// subdirectory for a bind mount (a container's own cgroup, seen as its hierarchy's root).
    #[serde(default)]
    pub root: String,
    /// Filesystem type (`xfs`, `btrfs`, `tmpfs`...).
    pub fs_type: String,
    /// Mount source (`/dev/loop3`, `tmpfs`).
    pub source: String,
    /// Per-mount options and superblock options, comma-joined.
    pub options: String,
}

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo octal.
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or(""), 8)
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses mountinfo text (kept separate from reading so tests can feed it).
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 2 {
            continue;
        }
        // Per-mount options, then the superblock's, each said once ("rw" is in both).
        let mut opts: Vec<&str> = Vec::new();
        for o in l[5]
            .split(',')
            .chain(r.get(2).map_or("", |v| *v).split(','))
        {
            if !o.is_empty() && !opts.contains(&o) {
                opts.push(o);
            }
        }
        let options = opts.join(",");
        out.push(MountInfo {
            dev: l[2].to_string(),
            mount_point: PathBuf::from(unescape(l[4])),
            root: unescape(l[3]),
            fs_type: r[0].to_string(),
            source: unescape(r[1]),
            options,
        });
    }
    out
}

/// All mounts of this process's namespace.
pub fn mounts() -> Vec<MountInfo> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

/// The mount that holds `path` (the longest mount point that is a prefix of its real path).
pub fn mount_of(path: &Path) -> Option<MountInfo> {
    let real = std::fs::canonicalize(path).ok()?;
    mounts()
        .into_iter()
        .filter(|m| real.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mountinfo_lines() {
        let t = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro\n\
                 40 22 7:3 / /mnt/with\\040space rw,noatime - xfs /dev/loop3 rw,attr2\n";
        let m = parse_mountinfo(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!(m[1].fs_type, "xfs");
        assert_eq!(m[1].source, "/dev/loop3");
        assert_eq!(m[1].dev, "7:3");
        assert_eq!(m[1].root, "/");
        assert!(m[1].options.contains("noatime"));
    }

    #[test]
    fn root_is_mounted() {
        let m = mount_of(Path::new("/")).unwrap();
        assert_eq!(m.mount_point, PathBuf::from("/"));
    }
}
