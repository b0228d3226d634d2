//! Ground truth: a loop device throttled by cgroup v1 blkio to a known rate (a token bucket
//! refilled in 100 ms slices, like a cloud volume's) must read as that rate, within 1%, at every
//! queue depth, thread count and trial length from 1 s, on every trial of a run (a trial that
//! follows another must not inherit the throttle's slice). See docs/accuracy.md.
//! `bench/truth.sh` runs fio beside iolab on the same cases.

mod common;

use std::path::PathBuf;

use common::{Iolab, LoopDev, require_kernel, require_root};

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A child blkio cgroup with throttles on one device; removed on drop.
struct Throttled {
    dir: PathBuf,
    dev: String,
}

impl Throttled {
    fn new(tag: &str, loopdev: &LoopDev) -> Throttled {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(&loopdev.dev).expect("stat loop").rdev();
        let dir = PathBuf::from(format!(
            "{BLKIO}/iolab-test-truth-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).expect("create blkio cgroup");
        Throttled {
            dir,
            dev: format!("{}:{}", libc::major(rdev), libc::minor(rdev)),
        }
    }

    /// Sets one limit (`read_iops`, `write_iops`, `read_bps`, `write_bps`), clearing the others.
    fn limit(&self, kind: &str, value: u64) {
        for k in ["read_iops", "write_iops", "read_bps", "write_bps"] {
            let v = if k == kind { value } else { 0 };
            std::fs::write(
                self.dir.join(format!("blkio.throttle.{k}_device")),
                format!("{} {v}", self.dev),
            )
            .expect("set throttle");
        }
    }

    /// iolab run inside this cgroup, returning each trial's (ops/s, bytes/s) and the notes.
    fn run(&self, target: &LoopDev, args: &[&str]) -> (Vec<(f64, f64)>, Vec<String>) {
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

fn blkio_v1() -> bool {
    std::path::Path::new(BLKIO)
        .join("blkio.throttle.read_iops_device")
        .exists()
}

/// Runs each case (limit kind, limit, iolab flags; IOPS or bytes/s) and checks every trial.
fn check_cases(tag: &str, cases: &[(&str, u64, &[&str], bool)]) {
    let target = LoopDev::new(&format!("truth-{tag}"), 1 << 30);
    let cg = Throttled::new(tag, &target);
    let mut failures = Vec::new();
    for (kind, limit, args, iops) in cases {
        cg.limit(kind, *limit);
        let mut a = args.to_vec();
        if kind.starts_with("write") {
            a.extend_from_slice(&["--destroy", target.path()]);
        }
        let (figures, notes) = cg.run(&target, &a);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("throttled by a cgroup blkio limit")),
            "{args:?}: no throttle note in {notes:?}"
        );
        for (i, (ops, bytes)) in figures.iter().enumerate() {
            let ratio = if *iops { ops } else { bytes } / *limit as f64;
            eprintln!("{kind} {limit} {args:?} trial {}: {ratio:.4}", i + 1);
            if (ratio - 1.0).abs() > 0.01 {
                failures.push(format!(
                    "{kind}={limit} {args:?} trial {}: {ratio:.4}",
                    i + 1
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "off the throttle by more than 1%: {failures:?}"
    );
}

#[test]
fn reads_are_exact_against_an_iops_throttle() {
    require_root!();
    require_kernel!("blkio-v1", blkio_v1(), "cgroup v1 blkio is not mounted");
    check_cases(
        "riops",
        &[
            (
                "read_iops",
                2000,
                &[
                    "--pattern",
                    "randread",
                    "--bs",
                    "4k",
                    "--qd",
                    "1",
                    "--time",
                    "1s",
                    "--repeat",
                    "2",
                ],
                true,
            ),
            (
                "read_iops",
                2000,
                &[
                    "--pattern",
                    "randread",
                    "--bs",
                    "4k",
                    "--qd",
                    "8",
                    "--time",
                    "1s",
                    "--repeat",
                    "2",
                ],
                true,
            ),
            (
                "read_iops",
                2000,
                &[
                    "--pattern",
                    "randread",
                    "--bs",
                    "4k",
                    "--qd",
                    "32",
                    "--time",
                    "2s",
                    "--repeat",
                    "1",
                ],
                true,
            ),
            (
                "read_iops",
                2000,
                &[
                    "--pattern",
                    "randread",
                    "--bs",
                    "4k",
                    "--qd",
                    "8",
                    "--threads",
                    "4",
                    "--time",
                    "1s",
                    "--repeat",
                    "1",
                ],
                true,
            ),
        ],
    );
}

#[test]
fn writes_are_exact_against_an_iops_throttle() {
    require_root!();
    require_kernel!("blkio-v1", blkio_v1(), "cgroup v1 blkio is not mounted");
    check_cases(
        "wiops",
        &[
            (
                "write_iops",
                2000,
                &[
                    "--pattern",
                    "randwrite",
                    "--bs",
                    "4k",
                    "--qd",
                    "8",
                    "--time",
                    "1s",
                    "--repeat",
                    "2",
                ],
                true,
            ),
            (
                "write_iops",
                1000,
                &[
                    "--pattern",
                    "write",
                    "--bs",
                    "4k",
                    "--qd",
                    "1",
                    "--time",
                    "1s",
                    "--repeat",
                    "1",
                ],
                true,
            ),
        ],
    );
}

#[test]
fn reads_are_exact_against_a_bandwidth_throttle() {
    require_root!();
    require_kernel!("blkio-v1", blkio_v1(), "cgroup v1 blkio is not mounted");
    check_cases(
        "rbps",
        &[
            (
                "read_bps",
                100 << 20,
                &[
                    "--pattern",
                    "read",
                    "--bs",
                    "1m",
                    "--qd",
                    "4",
                    "--time",
                    "2s",
                    "--repeat",
                    "2",
                ],
                false,
            ),
            (
                "read_bps",
                100 << 20,
                &[
                    "--pattern",
                    "randread",
                    "--bs",
                    "64k",
                    "--qd",
                    "16",
                    "--time",
                    "1s",
                    "--repeat",
                    "1",
                ],
                false,
            ),
        ],
    );
}
