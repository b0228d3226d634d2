//! `--disk-from` and `DiskPerf::from_run`: per-disk speeds from a run record of one disk, and
//! `predict`, the entry point `iolab lab` uses.

use iolab::plan::{Caps, DiskPerf, LayoutSpec, MeasuredPerf};
use iolab::sample::{
    IoAccounting, LatencyHistogram, OpSample, RunRecord, RunStatus, TrialSample, WorkloadRecord,
};
use iolab::spec::{IoWorkload, Pattern, Workload, WorkloadKind};

use super::common::Iolab;
use super::{f, layout, run_json, with};

fn op(name: &str, count: u64, bytes: u64, secs: f64) -> OpSample {
    OpSample {
        op: name.into(),
        count,
        bytes,
        elapsed_ns: (secs * 1e9) as u64,
        latency: LatencyHistogram::new(),
        service: None,
    }
}

fn workload(name: &str, pattern: Pattern, bs: u64, trials: &[OpSample]) -> WorkloadRecord {
    WorkloadRecord {
        workload: Workload {
            name: name.into(),
            drop_caches: false,
            kind: WorkloadKind::Io(IoWorkload {
                pattern,
                block_size: bs,
                ..IoWorkload::default()
            }),
        },
        trials: trials
            .iter()
            .enumerate()
            .map(|(i, o)| TrialSample {
                workload: name.into(),
                trial: i as u32 + 1,
                started_unix_ms: 0,
                elapsed_ns: o.elapsed_ns,
                ops: vec![o.clone()],
                series: vec![],
                accounting: IoAccounting::default(),
                cpu_user_ns: 0,
                cpu_sys_ns: 0,
                notes: vec![],
                verify: None,
                open_loop: None,
            })
            .collect(),
    }
}

fn record(workloads: Vec<WorkloadRecord>) -> RunRecord {
    RunRecord {
        id: "r1".into(),
        status: RunStatus::Complete,
        started_unix_ms: 0,
        ended_unix_ms: Some(1),
        command_line: vec!["iolab".into(), "run".into()],
        label: Some("sda".into()),
        note: None,
        lab_id: None,
        layout: None,
        suite_name: "disk".into(),
        system: Default::default(),
        target: iolab::target::TargetInfo {
            path: "/dev/sda".into(),
            kind: iolab::target::TargetKind::BlockDevice,
            fs_type: None,
            mount_point: None,
            mount_options: None,
            mount_source: None,
            devices: vec![],
        },
        workloads,
        notes: vec![],
        error: None,
    }
}

const MB: u64 = 1_000_000;

/// Sequential read: trials at 180, 200, 190 MB/s (median 190); sequential write at 170;
/// random read 4k: 300, 320, 310 IOPS (median 310), and a second random read workload that is
/// slower (QD1, 90) which must not win; random write 250.
fn full_run() -> RunRecord {
    record(vec![
        workload(
            "seq-read",
            Pattern::Read,
            1 << 20,
            &[
                op("read", 180, 180 * MB, 1.0),
                op("read", 400, 400 * MB, 2.0),
                op("read", 190, 190 * MB, 1.0),
            ],
        ),
        workload(
            "seq-write",
            Pattern::Write,
            1 << 20,
            &[op("write", 170, 170 * MB, 1.0)],
        ),
        workload(
            "rand-read-qd32",
            Pattern::RandRead,
            4096,
            &[
                op("read", 300, 300 * 4096, 1.0),
                op("read", 640, 640 * 4096, 2.0),
                op("read", 310, 310 * 4096, 1.0),
            ],
        ),
        workload(
            "rand-read-qd1",
            Pattern::RandRead,
            4096,
            &[op("read", 90, 90 * 4096, 1.0)],
        ),
        workload(
            "rand-write",
            Pattern::RandWrite,
            4096,
            &[op("write", 500, 500 * 4096, 2.0)],
        ),
        workload(
            "mixed",
            Pattern::RandRw,
            4096,
            &[op("read", 9999, 9999 * 4096, 1.0)],
        ),
    ])
}

#[test]
fn disk_perf_from_a_run_takes_medians_and_the_best_workload() {
    let p = DiskPerf::from_run(&full_run()).unwrap();
    assert!((p.seq_read_mbps - 190.0).abs() < 1e-9, "{p:?}");
    assert!((p.seq_write_mbps - 170.0).abs() < 1e-9, "{p:?}");
    assert!((p.rand_read_iops - 310.0).abs() < 1e-9, "{p:?}");
    assert!((p.rand_write_iops - 250.0).abs() < 1e-9, "{p:?}");
    let m = MeasuredPerf::from_run(&full_run()).unwrap();
    assert!(
        m.sources.iter().any(|s| s.contains("rand-read-qd32")),
        "{:?}",
        m.sources
    );
}

#[test]
fn disk_perf_from_a_partial_run_names_what_is_missing() {
    let run = record(vec![workload(
        "seq-read",
        Pattern::Read,
        1 << 20,
        &[op("read", 150, 150 * MB, 1.0)],
    )]);
    let e = DiskPerf::from_run(&run).unwrap_err().to_string();
    assert!(
        e.starts_with("run 'sda' has no sequential write (--disk-write-mbps)"),
        "{e}"
    );
    let empty = record(vec![]);
    assert!(MeasuredPerf::from_run(&empty).is_err());
}

#[test]
fn disk_from_file_drives_the_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sda.json");
    std::fs::write(&path, serde_json::to_string(&full_run()).unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let doc = run_json(
        &[
            "plan",
            "--disks",
            "6",
            "--disk-size",
            "4TB",
            "--layouts",
            "raid6,raid10",
            "--disk-from",
            p,
            "--json",
        ]
        .map(String::from),
    );
    assert!((f(&doc["inputs"]["disk"], "seq_read_mbps") - 190.0).abs() < 1e-9);
    let r6 = layout(&doc, "raid6");
    assert!((f(r6, "seq_read_mbps") - 4.0 * 190.0).abs() < 1e-9);
    // 6 / (3/310 + 3/250) = 276.8 random writes per second.
    assert!((f(r6, "rand_write_iops") - 6.0 / (3.0 / 310.0 + 3.0 / 250.0)).abs() < 1e-9);
    assert!(
        doc["inputs"]["disk_source"]
            .as_str()
            .unwrap()
            .contains("measured in")
    );
    // A flag wins over the run.
    let doc = run_json(
        &[
            "plan",
            "--disks",
            "6",
            "--disk-size",
            "4TB",
            "--layouts",
            "raid6",
            "--disk-from",
            p,
            "--disk-read-mbps",
            "100",
            "--json",
        ]
        .map(String::from),
    );
    assert!((f(&doc["inputs"]["disk"], "seq_read_mbps") - 100.0).abs() < 1e-9);

    // A run without writes: refused until the missing figures are given.
    let reads_only = record(vec![workload(
        "seq-read",
        Pattern::Read,
        1 << 20,
        &[op("read", 150, 150 * MB, 1.0)],
    )]);
    std::fs::write(&path, serde_json::to_string(&reads_only).unwrap()).unwrap();
    let base = [
        "plan",
        "--disks",
        "6",
        "--disk-size",
        "4TB",
        "--layouts",
        "raid6",
        "--disk-from",
        p,
    ];
    let out = Iolab::new().args(base).run();
    let err = &out.stderr;
    assert_eq!(out.code, 2, "{err}");
    assert!(
        err.contains("--disk-write-mbps")
            && err.contains("--disk-write-iops")
            && err.lines().count() == 1,
        "{err}"
    );
    let filled: Vec<String> = with(
        &base,
        &[
            "--disk-write-mbps",
            "140",
            "--disk-read-iops",
            "200",
            "--disk-write-iops",
            "180",
            "--json",
        ],
    );
    let doc = run_json(&filled);
    assert!((f(&doc["inputs"]["disk"], "seq_read_mbps") - 150.0).abs() < 1e-9);

    // Not a run record at all.
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let out = Iolab::new().args(base).run();
    let err = &out.stderr;
    assert_eq!(out.code, 2, "{err}");
    assert!(
        err.contains("not a JSON run record") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn predict_is_the_pure_entry_point_for_the_lab() {
    let spec = LayoutSpec::parse("btrfs-raid10").unwrap();
    let perf = DiskPerf {
        seq_read_mbps: 1000.0,
        seq_write_mbps: 800.0,
        rand_read_iops: 50_000.0,
        rand_write_iops: 40_000.0,
    };
    let p = iolab::plan::predict(&spec, 4, &perf, &Caps::default()).unwrap();
    assert!((p.seq_read.value - 2000.0).abs() < 1e-9);
    assert!((p.seq_write.value - 1600.0).abs() < 1e-9);
    assert!((p.rand_write.value - 80_000.0).abs() < 1e-9);
    let e = iolab::plan::predict(
        &LayoutSpec::parse("raid6").unwrap(),
        3,
        &perf,
        &Caps::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("at least 4"), "{e}");
}
