//! A loop device throttled by a cgroup to a known rate (blk-throttle: a token bucket refilled
//! in 100 ms slices, like a cloud volume's): the ground truth of tests/truth.rs, tests/slo.rs
//! and tests/disks.rs. Through cgroup v1 blkio where the IO controller is bound to v1 (this
//! development machine, CI's), else through cgroup v2 io.max (current distributions'
//! default): the kernel's throttle is the same code behind both.

use std::path::{Path, PathBuf};

use super::{Iolab, LoopDev, kind, skip};

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// The cgroup interface a throttle is set through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// v1: `blkio.throttle.*_device` files under the blkio hierarchy.
    V1,
    /// v2: the `io.max` file of a unified-hierarchy cgroup with the io controller.
    V2,
}

/// Where a throttled child cgroup can be made, and through which interface: the v1 blkio
/// hierarchy when it is mounted with its throttle files, else a cgroup v2 mount whose root
/// offers the io controller (enabled for its children here when it is not yet; it is left
/// enabled, as other cgroups may use it by then).
pub(crate) fn hierarchy() -> Option<(PathBuf, Version)> {
    if Path::new(BLKIO)
        .join("blkio.throttle.read_iops_device")
        .exists()
    {
        return Some((PathBuf::from(BLKIO), Version::V1));
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split(' ').next() != Some("cgroup2") {
            continue;
        }
        let Some(point) = left.split(' ').nth(4).map(PathBuf::from) else {
            continue;
        };
        let has_io = |f: &str| {
            std::fs::read_to_string(point.join(f))
                .is_ok_and(|t| t.split_whitespace().any(|c| c == "io"))
        };
        if !has_io("cgroup.controllers") {
            continue;
        }
        if has_io("cgroup.subtree_control")
            || std::fs::write(point.join("cgroup.subtree_control"), "+io").is_ok()
        {
            return Some((point, Version::V2));
        }
    }
    None
}

/// True when a cgroup can throttle a device here (v1 or v2); otherwise records a skip CI must
/// not make (its machine has cgroup v1 blkio).
pub(crate) fn need_throttle() -> bool {
    let ok = hierarchy().is_some();
    if !ok {
        skip(
            &kind::host("io-throttle"),
            "no cgroup IO throttle: neither cgroup v1 blkio (/sys/fs/cgroup/blkio) nor a cgroup v2 mount offering the io controller",
        );
    }
    ok
}

/// A child cgroup with throttles on one device; removed on drop.
pub(crate) struct Throttled {
    dir: PathBuf,
    dev: String,
    version: Version,
}

impl Throttled {
    pub(crate) fn new(tag: &str, loopdev: &LoopDev) -> Throttled {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(&loopdev.dev).expect("stat loop").rdev();
        Throttled::on_device(tag, &format!("{}:{}", libc::major(rdev), libc::minor(rdev)))
    }

    /// A cgroup throttling device `dev` (`major:minor`), no limit set yet.
    pub(crate) fn on_device(tag: &str, dev: &str) -> Throttled {
        let (parent, version) =
            hierarchy().expect("no cgroup IO throttle here (require_throttle! skips first)");
        let dir = parent.join(format!("iolab-test-throttle-{tag}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("create the throttle's cgroup");
        Throttled {
            dir,
            dev: dev.to_string(),
            version,
        }
    }

    /// Which interface the throttle is set through.
    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// The words iolab's note names this throttle's interface with.
    pub(crate) fn note_words(&self) -> &'static str {
        match self.version {
            Version::V1 => "cgroup v1 blkio",
            Version::V2 => "cgroup v2 io.max",
        }
    }

    /// Sets one limit (`read_iops`, `write_iops`, `read_bps`, `write_bps`), clearing the others.
    pub(crate) fn limit(&self, kind: &str, value: u64) {
        const KINDS: [(&str, &str); 4] = [
            ("read_iops", "riops"),
            ("write_iops", "wiops"),
            ("read_bps", "rbps"),
            ("write_bps", "wbps"),
        ];
        assert!(KINDS.iter().any(|(k, _)| *k == kind), "no limit {kind}");
        match self.version {
            Version::V1 => {
                for (k, _) in KINDS {
                    let v = if k == kind { value } else { 0 };
                    std::fs::write(
                        self.dir.join(format!("blkio.throttle.{k}_device")),
                        format!("{} {v}", self.dev),
                    )
                    .expect("set throttle");
                }
            }
            Version::V2 => {
                let keys: Vec<String> = KINDS
                    .iter()
                    .map(|(k, key)| {
                        if *k == kind {
                            format!("{key}={value}")
                        } else {
                            format!("{key}=max")
                        }
                    })
                    .collect();
                std::fs::write(
                    self.dir.join("io.max"),
                    format!("{} {}", self.dev, keys.join(" ")),
                )
                .expect("set io.max");
            }
        }
    }

    /// iolab, to run inside this cgroup (so its IO is throttled): a shell joins the cgroup,
    /// then execs the binary.
    pub(crate) fn command(&self) -> Iolab {
        let procs = format!("{}/cgroup.procs", self.dir.display());
        Iolab::new().wrap(
            "sh",
            ["-c", &format!("echo $$ > {procs} && exec \"$@\""), "x"],
        )
    }

    /// iolab with `args` inside this cgroup (its own JSON, exit status checked by the caller).
    pub(crate) fn iolab(&self, args: &[&str]) -> super::Out {
        self.command().no_db().args(args).run()
    }

    /// iolab run inside this cgroup, returning each trial's (ops/s, bytes/s) and the notes.
    pub(crate) fn run(&self, target: &LoopDev, args: &[&str]) -> (Vec<(f64, f64)>, Vec<String>) {
        let mut all = vec![
            "run",
            target.path(),
            "--json",
            "--no-save",
            "--size",
            "512MiB",
        ];
        all.extend_from_slice(args);
        let out = self.command().no_db().args(all).run();
        out.success();
        let j = out.json();
        let w = &j["run"]["workloads"][0];
        let mut figures = Vec::new();
        let mut notes = Vec::new();
        for t in w["trials"].as_array().expect("trials") {
            let secs = t["elapsed_ns"].as_f64().expect("elapsed") / 1e9;
            let (mut ops, mut bytes) = (0.0, 0.0);
            for o in t["ops"].as_array().expect("ops") {
                if o["op"] != "sync" {
                    ops += o["count"].as_f64().expect("count");
                    bytes += o["bytes"].as_f64().expect("bytes");
                }
            }
            figures.push((ops / secs, bytes / secs));
            for n in t["notes"].as_array().into_iter().flatten() {
                notes.push(n.as_str().unwrap_or_default().to_string());
            }
        }
        (figures, notes)
    }
}

impl Drop for Throttled {
    fn drop(&mut self) {
        // The runs have exited and been waited for: the cgroup empties (the kernel may take a
        // moment to say so) and can go.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
