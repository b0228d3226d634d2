//! Run records to store and read back: the fixtures the store tests on SQLite (tests/store.rs)
//! and on PostgreSQL (tests/store_pg.rs) share, and the child-process harness both use to
//! write to one database from several processes at once.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use iolab::sample::{
    IoAccounting, OpSample, RunRecord, RunStatus, SeriesPoint, TrialSample, WorkloadRecord,
};
use iolab::spec::{IoWorkload, Pattern, SmallFileWorkload, Workload, WorkloadKind};
use iolab::store::Store;
use iolab::system::{BlockDevice, SystemInfo};
use iolab::target::{TargetInfo, TargetKind};

pub(crate) fn io_workload(name: &str) -> Workload {
    Workload {
        name: name.to_string(),
        drop_caches: true,
        kind: WorkloadKind::Io(IoWorkload {
            pattern: Pattern::RandRw,
            block_size: 8192,
            queue_depth: 128,
            threads: 4,
            size: Some(1 << 30),
            runtime: Some(Duration::from_secs(30)),
            read_pct: 70,
            ..IoWorkload::default()
        }),
    }
}

pub(crate) fn small_file_workload() -> Workload {
    Workload {
        name: "mail".to_string(),
        drop_caches: false,
        kind: WorkloadKind::SmallFiles(SmallFileWorkload {
            files: 2048,
            dirs: 16,
            min_size: 500,
            max_size: 25_000,
            fsync: true,
            fsync_dir: false,
            threads: 1,
            seed: 7,
        }),
    }
}

/// A data trial whose read IOPS is `iops` over a 2-second window, with latency and a series.
pub(crate) fn io_trial(workload: &str, n: u32, iops: f64) -> TrialSample {
    let count = (iops * 2.0).round() as u64;
    let mut r = OpSample::new("read");
    r.count = count;
    r.bytes = count * 8192;
    r.elapsed_ns = 2_000_000_000;
    let mut w = OpSample::new("write");
    w.count = count / 2;
    w.bytes = w.count * 8192;
    w.elapsed_ns = 2_000_000_000;
    for i in 0..500u64 {
        r.latency.record(50_000 + i * 100);
        w.latency.record(80_000 + i * 300);
    }
    // The second point carries its percentiles (as the runner's seconds do), the first
    // not (as older stored rows): the store keeps both shapes.
    let series = (0..2)
        .map(|t| SeriesPoint {
            t,
            bytes: count * 8192 / 2,
            ops: count / 2,
            p50_ns: (t == 1).then_some(60_000),
            p99_ns: (t == 1).then_some(99_000),
        })
        .collect();
    TrialSample {
        workload: workload.to_string(),
        trial: n,
        started_unix_ms: 1_700_000_000_000 + u64::from(n) * 3000,
        elapsed_ns: 2_000_000_000,
        ops: vec![r, w],
        series,
        accounting: IoAccounting {
            submitted: count * 3 / 2 + 5,
            completed: count * 3 / 2 + 5,
            short: 0,
            errors: 0,
            syncs: 3,
            after_window: 0,
        },
        cpu_user_ns: 12_345_678,
        cpu_sys_ns: 98_765_432,
        notes: vec![format!("trial {n} note").into()],
        verify: None,
        open_loop: None,
    }
}

/// A metadata trial (no bytes): create ops per second.
pub(crate) fn meta_trial(n: u32, ops: u64, series: &[u64]) -> TrialSample {
    let mut c = OpSample::new("create");
    c.count = ops * 10;
    c.elapsed_ns = 10_000_000_000;
    c.latency.record(1_000_000);
    TrialSample {
        workload: "mail".to_string(),
        trial: n,
        started_unix_ms: 1_700_000_100_000,
        elapsed_ns: 10_000_000_000,
        ops: vec![c],
        series: series
            .iter()
            .enumerate()
            .map(|(t, &o)| SeriesPoint {
                t: t as u32,
                bytes: 0,
                ops: o,
                ..Default::default()
            })
            .collect(),
        accounting: IoAccounting::default(),
        cpu_user_ns: 1,
        cpu_sys_ns: 2,
        notes: Vec::new(),
        verify: None,
        open_loop: None,
    }
}

pub(crate) fn device(name: &str) -> BlockDevice {
    BlockDevice {
        name: name.to_string(),
        path: PathBuf::from(format!("/dev/{name}")),
        devnum: "8:0".to_string(),
        size_bytes: 2_000_398_934_016,
        logical_block_size: 512,
        physical_block_size: 4096,
        rotational: Some(true),
        vendor: Some("ATA".to_string()),
        model: Some("WDC WD20EARS".to_string()),
        serial: Some("WD-WCAZA1234567".to_string()),
        firmware: Some("80.00A80".to_string()),
        scheduler: Some("mq-deadline".to_string()),
        queue_depth: Some(32),
        transport: Some("sata".to_string()),
        md_level: Some("raid6".to_string()),
        md_chunk_bytes: Some(512 * 1024),
        ..BlockDevice::default()
    }
}

/// A run with two workloads, `iops` giving the read IOPS of each trial of the first.
pub(crate) fn record(label: Option<&str>, iops: &[f64]) -> RunRecord {
    let w0 = io_workload("db-8k");
    let w1 = small_file_workload();
    RunRecord {
        id: String::new(),
        status: RunStatus::Complete,
        started_unix_ms: 1_700_000_000_000,
        ended_unix_ms: Some(1_700_000_200_000),
        command_line: vec![
            "iolab".into(),
            "run".into(),
            "--profile".into(),
            "db".into(),
        ],
        label: label.map(str::to_string),
        note: Some("bitmap on, 2 hot spares".to_string()),
        lab_id: Some("lab-1".to_string()),
        layout: Some(iolab::store::schema::v2::from_v1(
            &serde_json::json!({"raid": "raid6", "chunk": "512k", "fs": "xfs"}),
        )),
        suite_name: "db".to_string(),
        system: SystemInfo {
            hostname: "flurry".to_string(),
            kernel: "6.8.0-test".to_string(),
            cpu_model: "Xeon E5-2650".to_string(),
            cpus: 16,
            ram_bytes: 64 << 30,
            iolab_version: "0.1.0".to_string(),
            iolab_git_rev: "abc123".to_string(),
        },
        target: TargetInfo {
            path: PathBuf::from("/mnt/array/iolab"),
            kind: TargetKind::Directory,
            fs_type: Some("xfs".to_string()),
            mount_point: Some(PathBuf::from("/mnt/array")),
            mount_options: Some("rw,noatime,inode64".to_string()),
            mount_source: Some("/dev/md0".to_string()),
            devices: vec![device("md0"), device("sda")],
        },
        workloads: vec![
            WorkloadRecord {
                trials: iops
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| io_trial(&w0.name, i as u32 + 1, v))
                    .collect(),
                workload: w0,
            },
            WorkloadRecord {
                trials: vec![meta_trial(1, 900, &[900, 910, 890])],
                workload: w1,
            },
        ],
        notes: vec!["working set fits in RAM".to_string()],
        error: None,
    }
}

/// Stores a run the way the run loop will: begin, one call per trial, finish.
pub(crate) fn store_like_run_loop(store: &mut Store, rec: &RunRecord) -> String {
    let mut bare = rec.clone();
    for w in &mut bare.workloads {
        w.trials.clear();
    }
    let id = store.begin_run(&bare).unwrap();
    for (i, w) in rec.workloads.iter().enumerate() {
        for t in &w.trials {
            store.add_trial(&id, i, &w.workload, t).unwrap();
        }
    }
    store
        .finish_run(
            &id,
            rec.status,
            rec.ended_unix_ms.unwrap(),
            &rec.notes,
            rec.error.as_deref(),
        )
        .unwrap();
    id
}

// ---------------------------------------------------------------------------------------------
// Child processes: a second writer is this test binary run again

/// The environment variable that gives a child process its role.
const CHILD_ROLE: &str = "IOLAB_STORE_CHILD";
/// The environment variable that gives a child process its database (a path or a URL).
const CHILD_DB: &str = "IOLAB_STORE_CHILD_DB";

/// Runs this test binary again as a separate process that executes only the ignored test
/// `test` (whose body calls [`child_role`]) as `role` on `db`, so writers race from different
/// processes, not threads. Its stdout and stderr are piped for the parent to read.
pub(crate) fn spawn_child(test: &str, role: &str, db: impl AsRef<OsStr>) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ROLE, role)
        .env(CHILD_DB, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// In a child started by [`spawn_child`]: its role and database. `None` in an ordinary test
/// run, where the child test then does nothing.
pub(crate) fn child_role() -> Option<(String, OsString)> {
    let role = std::env::var(CHILD_ROLE).ok()?;
    Some((role, std::env::var_os(CHILD_DB).unwrap()))
}

/// The body of a writer child: `runs` complete runs labelled `role`, each stored the way the
/// run loop does (begin, three trials, finish), then `CHILD DONE` on stdout for the parent.
pub(crate) fn write_runs(store: &mut Store, role: &str, runs: usize) {
    let mut iops = 0.0;
    for _ in 0..runs {
        // 100, 200, ... read IOPS: each run of a child differs from the one before.
        iops += 100.0;
        let mut rec = record(Some(role), &[]);
        for w in &mut rec.workloads {
            w.trials.clear();
        }
        let id = store.begin_run(&rec).unwrap();
        let w = rec.workloads[0].workload.clone();
        for t in 1..=3 {
            let trial = io_trial(&w.name, t, iops);
            store.add_trial(&id, 0, &w, &trial).unwrap();
        }
        store
            .finish_run(&id, RunStatus::Complete, 1_700_000_300_000, &[], None)
            .unwrap();
    }
    println!("CHILD DONE");
}
