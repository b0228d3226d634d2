//! A loop device throttled by cgroup v1 blkio to a known rate (a token bucket refilled in
//! 100 ms slices, like a cloud volume's): the ground truth of tests/truth.rs and tests/slo.rs.

use std::path::PathBuf;

use super::{Iolab, LoopDev};

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A child blkio cgroup with throttles on one device; removed on drop.
pub(crate) struct Throttled {
    dir: PathBuf,
    dev: String,
}

impl Throttled {
    pub(crate) fn new(tag: &str, loopdev: &LoopDev) -> Throttled {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(&loopdev.dev).expect("stat loop").rdev();
        let dir = PathBuf::from(format!(
            "{BLKIO}/iolab-test-throttle-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).expect("create blkio cgroup");
        Throttled {
            dir,
            dev: format!("{}:{}", libc::major(rdev), libc::minor(rdev)),
        }
    }

    /// Sets one limit (`read_iops`, `write_iops`, `read_bps`, `write_bps`), clearing the others.
    pub(crate) fn limit(&self, kind: &str, value: u64) {
        for k in ["read_iops", "write_iops", "read_bps", "write_bps"] {
            let v = if k == kind { value } else { 0 };
            std::fs::write(
                self.dir.join(format!("blkio.throttle.{k}_device")),
                format!("{} {v}", self.dev),
            )
            .expect("set throttle");
        }
    }

    /// iolab with `args` inside this cgroup (its own JSON, exit status checked by the caller).
    pub(crate) fn iolab(&self, args: &[&str]) -> super::Out {
        let procs = format!("{}/cgroup.procs", self.dir.display());
        Iolab::new()
            .no_db()
            .wrap(
                "sh",
                ["-c", &format!("echo $$ > {procs} && exec \"$@\""), "x"],
            )
            .args(args)
            .run()
    }

    /// iolab run inside this cgroup, returning each trial's (ops/s, bytes/s) and the notes.
    pub(crate) fn run(&self, target: &LoopDev, args: &[&str]) -> (Vec<(f64, f64)>, Vec<String>) {
        let procs = format!("{}/cgroup.procs", self.dir.display());
        let mut all = vec![
            "run",
            target.path(),
            "--json",
            "--no-save",
            "--size",
            "512MiB",
        ];
        all.extend_from_slice(args);
        let out = Iolab::new()
            .no_db()
            .wrap(
                "sh",
                ["-c", &format!("echo $$ > {procs} && exec \"$@\""), "x"],
            )
            .args(all)
            .run();
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
        // The runs have exited: the cgroup is empty and can go.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

pub(crate) fn blkio_v1() -> bool {
    std::path::Path::new(BLKIO)
        .join("blkio.throttle.read_iops_device")
        .exists()
}
