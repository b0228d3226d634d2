//! Runs to report on: records shaped like what `iolab run` and `iolab lab` store (block and
//! small-file workloads, repeated trials with noise, latency histograms, per-second series
//! with an optional cliff, devices with model and firmware), saved into a real SQLite store.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab::sample::{
    IoAccounting, OpSample, RunRecord, RunStatus, SeriesPoint, TrialSample, WorkloadRecord,
};
use iolab::spec::{IoWorkload, Pattern, SmallFileWorkload, Workload, WorkloadKind};
use iolab::store::Store;
use iolab::system::{BlockDevice, SystemInfo};
use iolab::target::{TargetInfo, TargetKind};

/// A small deterministic generator (xorshift64*), so fixtures are the same on every run.
pub(crate) struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [0, 1).
    pub(crate) fn f(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A block workload.
pub(crate) fn io(name: &str, pattern: Pattern, bs: u64, qd: u32) -> Workload {
    Workload {
        name: name.into(),
        drop_caches: true,
        kind: WorkloadKind::Io(IoWorkload {
            pattern,
            block_size: bs,
            queue_depth: qd,
            threads: 1,
            size: Some(4 << 30),
            runtime: Some(Duration::from_secs(30)),
            ..IoWorkload::default()
        }),
    }
}

/// A small-file workload (bonnie++ -n phases).
pub(crate) fn mail(name: &str) -> Workload {
    Workload {
        name: name.into(),
        drop_caches: false,
        kind: WorkloadKind::SmallFiles(SmallFileWorkload {
            files: 4096,
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

/// The four workloads of the seed posts: dd-style sequential write, fio-style random read and
/// 70/30 mix, bonnie++-style small files.
pub(crate) fn four_workloads() -> Vec<Workload> {
    vec![
        io("seq-write-1m", Pattern::Write, 1 << 20, 8),
        io("rand-read-4k", Pattern::RandRead, 4096, 32),
        io("mix-8k", Pattern::RandRw, 8192, 32),
        mail("mail"),
    ]
}

/// `n` workloads cycling through the four kinds, with distinct names.
pub(crate) fn many_workloads(n: usize) -> Vec<Workload> {
    (0..n)
        .map(|i| {
            let mut w = four_workloads()[i % 4].clone();
            w.name = format!("{}-{}", w.name, i / 4 + 1);
            w
        })
        .collect()
}

fn latency(h: &mut OpSample, base_ns: f64, samples: u64, rng: &mut Rng) {
    for _ in 0..samples {
        let u = rng.f();
        let mut v = base_ns * (0.6 + 0.8 * rng.f());
        if u > 0.99 {
            v *= 5.0;
        }
        if u > 0.999 {
            v *= 4.0;
        }
        h.latency.record(v as u64);
    }
}

/// How a fixture trial behaves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Headline operations per second (IOPS, or ops/s of creates).
    pub rate: f64,
    /// Seconds in the measured window (one series point each).
    pub secs: u32,
    /// Second where throughput falls to a third (an SSD's cache filling).
    pub cliff_at: Option<u32>,
    /// Relative trial-to-trial noise (0.02 = 2%).
    pub noise: f64,
    /// Latency samples recorded per op.
    pub samples: u64,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            rate: 1000.0,
            secs: 30,
            cliff_at: None,
            noise: 0.02,
            samples: 2000,
        }
    }
}

/// One trial of `w` shaped by `s`.
pub(crate) fn trial(w: &Workload, n: u32, s: Shape, rng: &mut Rng) -> TrialSample {
    let level = s.rate * (1.0 + s.noise * (rng.f() * 2.0 - 1.0));
    let per_sec: Vec<u64> = (0..s.secs)
        .map(|t| {
            let down = s.cliff_at.is_some_and(|c| t >= c);
            let v = level * (1.0 + 0.03 * (rng.f() - 0.5)) * if down { 0.33 } else { 1.0 };
            v.max(1.0) as u64
        })
        .collect();
    let total: u64 = per_sec.iter().sum();
    let elapsed_ns = u64::from(s.secs) * 1_000_000_000;
    let (ops, bs, moves_bytes) = if let WorkloadKind::Io(io) = &w.kind {
        let mut v = Vec::new();
        let (r, wr) = match io.pattern {
            Pattern::Read | Pattern::RandRead => (total, 0),
            Pattern::Write | Pattern::RandWrite => (0, total),
            Pattern::RandRw | Pattern::Rw => {
                let r = total * u64::from(io.read_pct) / 100;
                (r, total - r)
            }
        };
        let base = f64::from(io.queue_depth) * 1e9 / level.max(1.0);
        for (name, count) in [("read", r), ("write", wr)] {
            if count > 0 || (name == "read" && io.pattern.reads()) {
                let mut o = OpSample::new(name);
                o.count = count;
                o.bytes = count * io.block_size;
                o.elapsed_ns = elapsed_ns;
                latency(
                    &mut o,
                    base * if name == "write" { 1.6 } else { 1.0 },
                    s.samples,
                    rng,
                );
                v.push(o);
            }
        }
        (v, io.block_size, true)
    } else {
        let mut v = Vec::new();
        for (i, phase) in ["create", "stat", "read_file", "delete"].iter().enumerate() {
            let mut o = OpSample::new(phase);
            o.count = total * (i as u64 + 1);
            o.bytes = if *phase == "create" || *phase == "read_file" {
                o.count * 12_000
            } else {
                0
            };
            o.elapsed_ns = elapsed_ns;
            latency(&mut o, 1e9 / level.max(1.0), s.samples / 2, rng);
            v.push(o);
        }
        (v, 0, false)
    };
    let series = per_sec
        .iter()
        .enumerate()
        .map(|(t, &o)| SeriesPoint {
            t: t as u32,
            bytes: if moves_bytes { o * bs } else { 0 },
            ops: o,
            ..Default::default()
        })
        .collect();
    let n_ops: u64 = ops.iter().map(|o: &OpSample| o.count).sum();
    TrialSample {
        workload: w.name.clone(),
        trial: n,
        started_unix_ms: 1_767_000_000_000 + u64::from(n) * 40_000,
        elapsed_ns,
        ops,
        series,
        accounting: IoAccounting {
            submitted: n_ops,
            completed: n_ops,
            short: 0,
            errors: 0,
            syncs: 0,
            after_window: 0,
        },
        cpu_user_ns: 1_000_000,
        cpu_sys_ns: 5_000_000,
        notes: Vec::new(),
        verify: None,
        open_loop: None,
    }
}

/// A disk as /sys describes it.
pub(crate) fn disk(name: &str, model: &str, fw: &str, serial: &str) -> BlockDevice {
    BlockDevice {
        name: name.into(),
        path: PathBuf::from(format!("/dev/{name}")),
        devnum: "8:0".into(),
        size_bytes: 4_000_787_030_016,
        logical_block_size: 512,
        physical_block_size: 4096,
        rotational: Some(true),
        vendor: Some("ATA".into()),
        model: Some(model.into()),
        serial: Some(serial.into()),
        firmware: Some(fw.into()),
        scheduler: Some("mq-deadline".into()),
        queue_depth: Some(32),
        transport: Some("sata".into()),
        ..BlockDevice::default()
    }
}

/// An md array over `members`.
pub(crate) fn md(name: &str, level: &str, members: &[BlockDevice]) -> BlockDevice {
    BlockDevice {
        name: name.into(),
        path: PathBuf::from(format!("/dev/{name}")),
        devnum: "9:0".into(),
        size_bytes: members.iter().map(|d| d.size_bytes).sum(),
        transport: Some("md".into()),
        slaves: members.iter().map(|d| d.name.clone()).collect(),
        md_level: Some(level.into()),
        md_chunk_bytes: Some(512 * 1024),
        ..BlockDevice::default()
    }
}

/// The machine of the fixtures.
pub(crate) fn system() -> SystemInfo {
    SystemInfo {
        hostname: "flurry".into(),
        kernel: "6.12.0-test".into(),
        cpu_model: "Xeon E5-2650 v2".into(),
        cpus: 16,
        ram_bytes: 64 << 30,
        iolab_version: "0.1.0".into(),
        iolab_git_rev: "abc123".into(),
    }
}

/// A run over `workloads` with `trials` trials each; `speed` scales every rate.
pub(crate) fn run(
    label: &str,
    speed: f64,
    workloads: &[Workload],
    trials: u32,
    seed: u64,
) -> RunRecord {
    run_shaped(label, workloads, trials, seed, |_, s| Shape {
        rate: s.rate * speed,
        ..s
    })
}

/// A run whose trial shape per workload comes from `shape(workload index, default shape)`.
pub(crate) fn run_shaped(
    label: &str,
    workloads: &[Workload],
    trials: u32,
    seed: u64,
    shape: impl Fn(usize, Shape) -> Shape,
) -> RunRecord {
    let mut rng = Rng::new(seed);
    let disks: Vec<BlockDevice> = (0..4)
        .map(|i| {
            disk(
                &format!("sd{}", (b'a' + i) as char),
                "ST4000NM0033-9ZM170",
                if i == 3 { "SN04" } else { "SN03" },
                &format!("Z1Z0{i:04}"),
            )
        })
        .collect();
    let mut devices = vec![md("md0", "raid6", &disks)];
    devices.extend(disks);
    let defaults = [500.0, 40_000.0, 20_000.0, 900.0];
    RunRecord {
        id: String::new(),
        status: RunStatus::Complete,
        started_unix_ms: 1_767_000_000_000 + seed * 1000,
        ended_unix_ms: Some(1_767_000_000_000 + seed * 1000 + 480_000),
        command_line: vec!["iolab".into(), "run".into(), "/mnt/array".into()],
        label: Some(label.into()),
        note: None,
        lab_id: None,
        layout: None,
        suite_name: "seeds".into(),
        system: system(),
        target: TargetInfo {
            path: PathBuf::from("/mnt/array/iolab"),
            kind: TargetKind::Directory,
            fs_type: Some("xfs".into()),
            mount_point: Some(PathBuf::from("/mnt/array")),
            mount_options: Some("rw,noatime,inode64".into()),
            mount_source: Some("/dev/md0".into()),
            devices,
        },
        workloads: workloads
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let s = shape(
                    i,
                    Shape {
                        rate: defaults[i % 4],
                        ..Shape::default()
                    },
                );
                WorkloadRecord {
                    workload: w.clone(),
                    trials: (1..=trials).map(|n| trial(w, n, s, &mut rng)).collect(),
                }
            })
            .collect(),
        notes: Vec::new(),
        error: None,
    }
}

/// Saves runs into a new store at `db`; returns their ids in order.
pub(crate) fn save(db: &Path, runs: &[RunRecord]) -> Vec<String> {
    let mut store = Store::open(db).expect("open store");
    runs.iter()
        .map(|r| store.save_run(r).expect("save run"))
        .collect()
}
