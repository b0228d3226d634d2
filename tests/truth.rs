//! Ground truth: a loop device throttled by a cgroup (v1 blkio or v2 io.max) to a known rate
//! (a token bucket refilled in 100 ms slices, like a cloud volume's) must read as that rate,
//! within 1%, at every queue depth, thread count and trial length from 1 s, on every trial of a
//! run (a trial that follows another must not inherit the throttle's slice). See
//! docs/accuracy.md.
//! `bench/truth.sh` runs fio beside iolab on the same cases.

mod common;

use common::throttle::Throttled;
use common::{LoopDev, require_root, require_throttle};

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
        let said = format!("throttled by a {} limit", cg.note_words());
        assert!(
            notes.iter().any(|n| n.contains(&said)),
            "{args:?}: no note '{said}' in {notes:?}"
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
    require_throttle!();
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
    require_throttle!();
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
    require_throttle!();
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
