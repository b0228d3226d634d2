//! cgroup IO throttles that apply to this process on a device: a figure measured under one is
//! the throttle's, not the device's, and the run must say so.
//!
//! Both cgroup versions: v1's `blkio.throttle.{read,write}_{iops,bps}_device` files (the blkio
//! hierarchy, as older distributions mount it) and v2's `io.max` (the unified hierarchy: the
//! default of current distributions, and of Kubernetes pods). The kernel binds the IO
//! controller to one of the two, so at most one has limits; both are read, and a cgroup's
//! ancestors too (a parent's limit applies to its children).

use std::path::{Path, PathBuf};

use super::mounts::MountInfo;

/// Which cgroup interface a throttle is set through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cgroup {
    /// cgroup v1, the blkio controller's `blkio.throttle.*_device` files.
    V1,
    /// cgroup v2, the io controller's `io.max` file.
    V2,
}

impl Cgroup {
    /// The interface in words, for notes.
    pub fn words(self) -> &'static str {
        match self {
            Cgroup::V1 => "cgroup v1 blkio",
            Cgroup::V2 => "cgroup v2 io.max",
        }
    }
}

/// What each limit limits, in words (in the order of [`V1_FILES`] and [`V2_KEYS`]).
const WHAT: [&str; 4] = ["read IOPS", "write IOPS", "read bytes/s", "write bytes/s"];
/// cgroup v1's file for each limit.
const V1_FILES: [&str; 4] = [
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
];
/// cgroup v2's `io.max` key for each limit.
const V2_KEYS: [&str; 4] = ["riops", "wiops", "rbps", "wbps"];

/// One throttle on a device for this process: the lowest limit of its kind over the cgroup
/// and its ancestors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    /// What it limits: `read IOPS`, `write IOPS`, `read bytes/s`, `write bytes/s`.
    pub what: &'static str,
    /// The limit, IOs or bytes per second.
    pub limit: u64,
    /// Where it is set.
    pub cgroup: Cgroup,
}

/// The cgroup paths of this process from `/proc/self/cgroup` text: the v1 blkio hierarchy's
/// (`7:blkio:/a/b`) and the v2 unified hierarchy's (`0::/a/b`).
fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let (mut v1, mut v2) = (None, None);
    for l in text.lines() {
        let mut f = l.splitn(3, ':');
        let (Some(id), Some(ctrl), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if id == "0" && ctrl.is_empty() {
            v2 = Some(path.to_string());
        } else if ctrl.split(',').any(|c| c == "blkio") {
            v1 = Some(path.to_string());
        }
    }
    (v1, v2)
}

/// The directories of cgroup `path` in each mount of its hierarchy (`mounts`), the cgroup's
/// own first, then its ancestors up to the mount's root. A mount whose root is not above the
/// cgroup (another container's) does not show it.
fn dirs_in(path: &str, mounts: &[&MountInfo]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for m in mounts {
        let root = m.root.trim_end_matches('/');
        let Some(rel) = path.strip_prefix(root) else {
            continue;
        };
        if !(rel.is_empty() || rel.starts_with('/')) {
            continue;
        }
        let mut p = Some(Path::new(rel.trim_start_matches('/')));
        while let Some(d) = p {
            dirs.push(m.mount_point.join(d));
            p = d.parent();
        }
    }
    dirs
}

/// This process's cgroup directories (and their ancestors) in the v1 blkio hierarchy and in
/// the v2 unified one, from `/proc/self/cgroup` text and the mounts.
fn cgroup_dirs(proc_cgroup: &str, mounts: &[MountInfo]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (v1, v2) = parse_proc_cgroup(proc_cgroup);
    let blkio: Vec<&MountInfo> = mounts
        .iter()
        .filter(|m| m.fs_type == "cgroup" && m.options.split(',').any(|o| o == "blkio"))
        .collect();
    let unified: Vec<&MountInfo> = mounts.iter().filter(|m| m.fs_type == "cgroup2").collect();
    (
        v1.map(|p| dirs_in(&p, &blkio)).unwrap_or_default(),
        v2.map(|p| dirs_in(&p, &unified)).unwrap_or_default(),
    )
}

/// The limit on device `dev` (`8:16`) in a v1 `blkio.throttle.*_device` file's text
/// (`8:16 2000` lines; 0 or no line: none).
pub fn parse_v1(text: &str, dev: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| {
            let (d, v) = l.split_once(' ')?;
            (d == dev).then(|| v.trim().parse::<u64>().ok()).flatten()
        })
        .find(|v| *v > 0)
}

/// The limits on device `dev` in a v2 `io.max` file's text (`8:16 rbps=2097152 wbps=max
/// riops=max wiops=120` lines; `max` or no line: none), in the order of [`WHAT`].
pub fn parse_io_max(text: &str, dev: &str) -> [Option<u64>; 4] {
    let mut out = [None; 4];
    for l in text.lines() {
        let mut f = l.split_whitespace();
        if f.next() != Some(dev) {
            continue;
        }
        for kv in f {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            if let Some(i) = V2_KEYS.iter().position(|key| *key == k) {
                out[i] = v.parse::<u64>().ok().filter(|v| *v > 0);
            }
        }
    }
    out
}

/// The throttles on device `major:minor` for this process: for each kind of limit, the lowest
/// over its cgroup and the cgroup's ancestors, in either version.
pub fn throttles_on(major: u32, minor: u32) -> Vec<Throttle> {
    let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let (v1, v2) = cgroup_dirs(&proc_cgroup, &super::mounts::mounts());
    lowest_limits(&format!("{major}:{minor}"), &v1, &v2, |p| {
        std::fs::read_to_string(p).ok()
    })
}

/// [`throttles_on`] with the files read through `read` (a test gives them).
fn lowest_limits(
    dev: &str,
    v1: &[PathBuf],
    v2: &[PathBuf],
    read: impl Fn(&Path) -> Option<String>,
) -> Vec<Throttle> {
    let mut lowest: [Option<(u64, Cgroup)>; 4] = [None; 4];
    let mut offer = |i: usize, v: u64, cgroup: Cgroup| {
        if lowest[i].is_none_or(|(l, _)| v < l) {
            lowest[i] = Some((v, cgroup));
        }
    };
    for d in v1 {
        for (i, file) in V1_FILES.iter().enumerate() {
            if let Some(v) = read(&d.join(file)).and_then(|t| parse_v1(&t, dev)) {
                offer(i, v, Cgroup::V1);
            }
        }
    }
    for d in v2 {
        let Some(text) = read(&d.join("io.max")) else {
            continue;
        };
        for (i, v) in parse_io_max(&text, dev).into_iter().enumerate() {
            if let Some(v) = v {
                offer(i, v, Cgroup::V2);
            }
        }
    }
    lowest
        .iter()
        .zip(WHAT)
        .filter_map(|(l, what)| {
            l.map(|(limit, cgroup)| Throttle {
                what,
                limit,
                cgroup,
            })
        })
        .collect()
}

/// A note for a run on `path` when a cgroup throttle applies to the device under it, or `None`.
pub fn throttle_note(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    note(major, minor, &throttles_on(major, minor))
}

/// The note for throttles `t` on device `major:minor`.
fn note(major: u32, minor: u32, t: &[Throttle]) -> Option<String> {
    let first = t.first()?;
    let limits: Vec<String> = t
        .iter()
        .map(|t| {
            if t.what.ends_with("bytes/s") {
                format!("{} {}", crate::units::format_bytes(t.limit), t.what)
            } else {
                format!("{} {}", t.limit, t.what)
            }
        })
        .collect();
    // The IO controller is bound to one version, so every limit comes from the same one.
    Some(format!(
        "device {major}:{minor} is throttled by a {} limit ({}): figures are capped by the throttle, not the device's",
        first.cgroup.words(),
        limits.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::mounts::parse_mountinfo;

    /// A host with both hierarchies (systemd's hybrid mode, this development machine's): the
    /// blkio controller on v1, the unified hierarchy without the io controller.
    const HYBRID_MOUNTS: &str = "\
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_CGROUP: &str = "9:name=systemd:/\n7:blkio:/iolab-t\n6:freezer:/\n0::/\n";

    /// A Kubernetes pod on a cgroup v2 node: the pod's own cgroup mounted as the container's
    /// /sys/fs/cgroup (its mountinfo root), the process in it.
    const POD_MOUNTS: &str = "\
1108 1101 0:30 /kubepods.slice/kubepods-pod1.slice/cri-c1.scope /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate,memory_recursiveprot
";
    const POD_CGROUP: &str = "0::/kubepods.slice/kubepods-pod1.slice/cri-c1.scope\n";

    #[test]
    fn finds_the_blkio_and_unified_directories_with_their_ancestors() {
        let (v1, v2) = cgroup_dirs(HYBRID_CGROUP, &parse_mountinfo(HYBRID_MOUNTS));
        assert_eq!(
            v1,
            [
                PathBuf::from("/sys/fs/cgroup/blkio/iolab-t"),
                PathBuf::from("/sys/fs/cgroup/blkio")
            ]
        );
        assert_eq!(v2, [PathBuf::from("/sys/fs/cgroup/unified")]);
    }

    #[test]
    fn a_pods_own_cgroup_is_the_root_of_its_mount() {
        let (v1, v2) = cgroup_dirs(POD_CGROUP, &parse_mountinfo(POD_MOUNTS));
        assert!(v1.is_empty());
        assert_eq!(v2, [PathBuf::from("/sys/fs/cgroup")]);
        // A cgroup outside what the mount shows is not looked for there.
        let (_, v2) = cgroup_dirs("0::/system.slice/x.service\n", &parse_mountinfo(POD_MOUNTS));
        assert!(v2.is_empty(), "{v2:?}");
        // Nor one whose name only starts like the mount's root.
        let (_, v2) = cgroup_dirs(
            "0::/kubepods.slice/kubepods-pod1.slice/cri-c1.scopeX\n",
            &parse_mountinfo(POD_MOUNTS),
        );
        assert!(v2.is_empty(), "{v2:?}");
    }

    /// The kernel's own formats (blk-throttle's `tg_print_limit` and `tg_prfill_limit`), as
    /// read back from a 6.1 guest after `echo "254:16 riops=200" > io.max` and from this host's
    /// blkio files.
    #[test]
    fn parses_the_kernels_v1_and_v2_files() {
        assert_eq!(parse_v1("7:3 2000\n7:4 10\n", "7:3"), Some(2000));
        assert_eq!(parse_v1("7:4 10\n", "7:3"), None);
        assert_eq!(parse_v1("", "7:3"), None);
        let io_max = "254:0 rbps=max wbps=max riops=max wiops=50\n\
                      254:16 rbps=1048576 wbps=max riops=200 wiops=max\n";
        assert_eq!(
            parse_io_max(io_max, "254:16"),
            [Some(200), None, Some(1048576), None]
        );
        assert_eq!(parse_io_max(io_max, "254:0"), [None, Some(50), None, None]);
        assert_eq!(parse_io_max(io_max, "254:1"), [None; 4]);
    }

    #[test]
    fn the_lowest_limit_of_a_cgroup_and_its_ancestors_counts() {
        let v2 = [
            PathBuf::from("/cg/t/u"),
            PathBuf::from("/cg/t"),
            PathBuf::from("/cg"),
        ];
        let read = |p: &Path| match p.to_str()? {
            "/cg/t/u/io.max" => Some("254:16 rbps=1048576 wbps=max riops=max wiops=max\n".into()),
            "/cg/t/io.max" => Some("254:16 rbps=4194304 wbps=max riops=200 wiops=max\n".into()),
            _ => None,
        };
        let t = lowest_limits("254:16", &[], &v2, read);
        assert_eq!(
            t,
            [
                Throttle {
                    what: "read IOPS",
                    limit: 200,
                    cgroup: Cgroup::V2
                },
                Throttle {
                    what: "read bytes/s",
                    limit: 1048576,
                    cgroup: Cgroup::V2
                },
            ]
        );
        assert_eq!(
            note(254, 16, &t).unwrap(),
            "device 254:16 is throttled by a cgroup v2 io.max limit (200 read IOPS, 1MiB read bytes/s): figures are capped by the throttle, not the device's"
        );
        let v1 = [PathBuf::from("/b/x"), PathBuf::from("/b")];
        let read = |p: &Path| match p.to_str()? {
            "/b/x/blkio.throttle.write_iops_device" => Some("7:3 500\n".into()),
            "/b/blkio.throttle.write_iops_device" => Some("7:3 300\n".into()),
            _ => Some(String::new()),
        };
        let t = lowest_limits("7:3", &v1, &[], read);
        assert_eq!(t.len(), 1);
        assert_eq!(
            (t[0].what, t[0].limit, t[0].cgroup),
            ("write IOPS", 300, Cgroup::V1)
        );
        assert!(lowest_limits("7:4", &v1, &[], read).is_empty());
    }
}
