//! The built-in profiles: each is just a spec (`iolab profiles --show NAME` prints its TOML).
//!
//! `default` and `quick` are the general suite; `mail`, `db`, `backup` and `hdparm` are what the
//! posts our users wrote ran by hand (bonnie++ `-n`, fio 8k QD 128, dd, hdparm `-tT`).

use std::time::Duration;

use super::workload::{
    CachedReadWorkload, IoWorkload, Pattern, SmallFileWorkload, Suite, SyncKind, Workload,
    WorkloadKind,
};

/// A built-in profile: name, one line of what it is for, and how to build it.
pub struct Profile {
    /// Name for `--profile`.
    pub name: &'static str,
    /// What it is for, one line.
    pub about: &'static str,
}

/// Every built-in profile, in the order `iolab profiles` lists them.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "default",
        about: "the general suite: sequential 1MiB, random 4k at QD 1 and 32, 70/30 mix, commit latency (~1 min)",
    },
    Profile {
        name: "quick",
        about: "the general suite, short (~15 s, one trial): a smoke test",
    },
    Profile {
        name: "mail",
        about: "mail spool: bonnie++ -b -n 128:25000:500:16 small files with fsync, scaled by --scale (default 1/32)",
    },
    Profile {
        name: "db",
        about: "database: 8k random read, random write and 70/30 mix at QD 128, as fio in the MongoDB post",
    },
    Profile {
        name: "backup",
        about: "backup target: 1MiB sequential write of 2 x RAM (or --size) with fdatasync, then read it back cold: dd done right",
    },
    Profile {
        name: "hdparm",
        about: "hdparm -tT: cached reads of one 2MiB block, and ~3 s of sequential device reads bypassing the cache",
    },
    Profile {
        name: "pts-iops",
        about: "SNIA PTS IOPS: 4k random writes in 60 s rounds until steady, then 4k..1M x 100/0..0/100 read/write, 60 s each (--time shortens)",
    },
    Profile {
        name: "pts-throughput",
        about: "SNIA PTS throughput: 128KiB and 1MiB sequential write and read, each in 60 s rounds until its bandwidth is steady",
    },
];

/// PTS's IOPS test block sizes, bytes, in its order (the summary table's rows).
pub const PTS_BLOCK_SIZES: [u64; 7] = [
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    1 << 20,
];

/// A block size as PTS's tables write it: `4k`, `128k`, `1m`.
pub fn bs_name(bs: u64) -> String {
    if bs >= 1 << 20 && bs % (1 << 20) == 0 {
        format!("{}m", bs >> 20)
    } else {
        format!("{}k", bs >> 10)
    }
}

/// PTS's IOPS test read/write mixes, read percentage, in its order (the table's columns).
pub const PTS_READ_PCTS: [u8; 7] = [100, 95, 65, 50, 35, 5, 0];

/// The name of the `pts-iops` workload of block size `bs` and read share `read_pct`
/// (`pts-4k-r65w35`): what the summary table finds its cells by.
pub fn pts_iops_name(bs: u64, read_pct: u8) -> String {
    format!("pts-{}-r{read_pct}w{}", bs_name(bs), 100 - read_pct)
}

/// The mail profile's default scale: 1/32 of the post's 131072 files (4096), about a minute
/// here with three trials.
pub const MAIL_DEFAULT_SCALE: f64 = 1.0 / 32.0;

/// Knobs that scale a profile: the working set and the run time per workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileScale {
    /// Working-set override (`--size`).
    pub size: Option<u64>,
    /// Run-time override per workload (`--time`).
    pub runtime: Option<Duration>,
    /// Fraction of the full-size profile (`--scale`; `mail` only: 1.0 is the post's 131072 files).
    pub scale: Option<f64>,
}

/// Builds a profile by name, or `None` when there is no such profile.
pub fn profile(name: &str, scale: ProfileScale) -> Option<Suite> {
    match name {
        "default" => Some(general(
            name,
            Duration::from_secs(2),
            Duration::from_millis(500),
            scale,
        )),
        "quick" => Some(general(
            name,
            Duration::from_millis(1500),
            Duration::from_millis(500),
            scale,
        )),
        "mail" => Some(mail(scale)),
        "db" => Some(db(scale)),
        "backup" => Some(backup(scale)),
        "hdparm" => Some(hdparm(scale)),
        "pts-iops" => Some(pts_iops(scale)),
        "pts-throughput" => Some(pts_throughput(scale)),
        _ => None,
    }
}

/// The post's bonnie++ line, `-b -n 128:25000:500:16`, as iolab parameters at a scale.
///
/// bonnie++ `-n N:max:min:dirs` means N*1024 files, sizes uniform in [min, max] bytes, spread
/// over `dirs` directories; `-b` fsyncs each file after writing it.
pub fn bonnie_mail(scale: f64) -> SmallFileWorkload {
    SmallFileWorkload {
        files: ((128.0 * 1024.0 * scale).round() as u64).max(16),
        dirs: 16,
        min_size: 500,
        max_size: 25000,
        fsync: true,
        fsync_dir: false,
        threads: 1,
        seed: IoWorkload::default().seed,
    }
}

fn mail(scale: ProfileScale) -> Suite {
    let w = bonnie_mail(scale.scale.unwrap_or(MAIL_DEFAULT_SCALE));
    Suite {
        name: "mail".into(),
        workloads: vec![Workload {
            name: "mail-smallfiles".into(),
            drop_caches: false,
            kind: WorkloadKind::SmallFiles(w),
        }],
    }
}

fn db(scale: ProfileScale) -> Suite {
    let rt = Duration::from_secs(5);
    let ramp = Duration::from_secs(1);
    let mut w = vec![
        io(
            "db-randread-8k-qd128",
            Pattern::RandRead,
            8192,
            128,
            rt,
            ramp,
            scale,
        ),
        io(
            "db-randwrite-8k-qd128",
            Pattern::RandWrite,
            8192,
            128,
            rt,
            ramp,
            scale,
        ),
        io(
            "db-mixed-70-30-8k-qd128",
            Pattern::RandRw,
            8192,
            128,
            rt,
            ramp,
            scale,
        ),
    ];
    if let WorkloadKind::Io(m) = &mut w[2].kind {
        m.read_pct = 70;
    }
    Suite {
        name: "db".into(),
        workloads: w,
    }
}

fn backup(scale: ProfileScale) -> Suite {
    let size = scale.size.unwrap_or_else(|| {
        (2 * crate::system::ram_bytes().unwrap_or(4 << 30)).div_ceil(1 << 20) << 20
    });
    let seq = |name: &str, pattern: Pattern, drop: bool, sync: bool| Workload {
        name: name.into(),
        drop_caches: drop,
        kind: WorkloadKind::Io(IoWorkload {
            pattern,
            block_size: 1 << 20,
            queue_depth: 1,
            size: Some(size),
            total_bytes: Some(size),
            fsync_at_end: sync,
            ..IoWorkload::default()
        }),
    };
    Suite {
        name: "backup".into(),
        workloads: vec![
            seq("backup-write-1m-fdatasync", Pattern::Write, false, true),
            seq("backup-read-1m-cold", Pattern::Read, true, false),
        ],
    }
}

fn hdparm(scale: ProfileScale) -> Suite {
    Suite {
        name: "hdparm".into(),
        workloads: vec![
            Workload {
                name: "hdparm-T-cached-reads".into(),
                drop_caches: false,
                kind: WorkloadKind::CachedRead(CachedReadWorkload {
                    block_size: 2 << 20,
                    runtime: scale.runtime.unwrap_or(Duration::from_secs(2)),
                }),
            },
            Workload {
                name: "hdparm-t-device-reads".into(),
                drop_caches: true,
                kind: WorkloadKind::Io(IoWorkload {
                    pattern: Pattern::Read,
                    block_size: 2 << 20,
                    queue_depth: 1,
                    size: scale.size,
                    runtime: Some(scale.runtime.unwrap_or(Duration::from_secs(3))),
                    ..IoWorkload::default()
                }),
            },
        ],
    }
}

/// A PTS workload: closed loop at queue depth 32, O_DIRECT, random data, one round long
/// (`--time`, else PTS's 60 s); `steady` tracks a figure in rounds until steady.
fn pts(
    name: String,
    pattern: Pattern,
    bs: u64,
    read_pct: u8,
    scale: ProfileScale,
    steady: Option<super::SteadyFigure>,
) -> Workload {
    let round = scale.runtime.unwrap_or(super::STEADY_ROUND);
    Workload {
        name,
        drop_caches: false,
        kind: WorkloadKind::Io(IoWorkload {
            pattern,
            block_size: bs,
            queue_depth: 32,
            // The share only a mixed pattern reads (a spec names it only there).
            read_pct: if pattern.is_mixed() {
                read_pct
            } else {
                IoWorkload::default().read_pct
            },
            size: scale.size,
            runtime: Some(round),
            steady: steady.map(|figure| super::SteadyState {
                figure,
                round,
                max_rounds: super::STEADY_MAX_ROUNDS,
            }),
            ..IoWorkload::default()
        }),
    }
}

/// SNIA PTS's IOPS test: the device driven to steady state on 4k random writes (PTS's
/// tracked variable), then every block size x read/write mix measured once at that state.
/// PTS runs all 49 in every round and judges the 4k writes among them; here the rounds are
/// the 4k writes alone, which is where the device's state is set (docs/steady-state.md).
fn pts_iops(scale: ProfileScale) -> Suite {
    let mut w = vec![pts(
        "pts-steady-4k-r0w100".into(),
        Pattern::RandWrite,
        4 << 10,
        0,
        scale,
        Some(super::SteadyFigure::Iops),
    )];
    for &bs in &PTS_BLOCK_SIZES {
        for &rp in &PTS_READ_PCTS {
            let pattern = match rp {
                100 => Pattern::RandRead,
                0 => Pattern::RandWrite,
                _ => Pattern::RandRw,
            };
            w.push(pts(pts_iops_name(bs, rp), pattern, bs, rp, scale, None));
        }
    }
    Suite {
        name: "pts-iops".into(),
        workloads: w,
    }
}

/// SNIA PTS's throughput test: 128 KiB and 1 MiB sequential writes then reads, each in rounds
/// until its bandwidth is steady.
fn pts_throughput(scale: ProfileScale) -> Suite {
    let mut w = Vec::new();
    for bs in [128 << 10, 1 << 20] {
        for (pattern, op, rp) in [(Pattern::Write, "write", 0), (Pattern::Read, "read", 100)] {
            let name = format!("pts-seq-{op}-{}", bs_name(bs));
            w.push(pts(
                name,
                pattern,
                bs,
                rp,
                scale,
                Some(super::SteadyFigure::Bw),
            ));
        }
    }
    Suite {
        name: "pts-throughput".into(),
        workloads: w,
    }
}

/// The names of all profiles, for error messages.
pub fn profile_names() -> Vec<&'static str> {
    PROFILES.iter().map(|p| p.name).collect()
}

fn io(
    name: &str,
    pattern: Pattern,
    bs: u64,
    qd: u32,
    rt: Duration,
    ramp: Duration,
    scale: ProfileScale,
) -> Workload {
    Workload {
        name: name.to_string(),
        drop_caches: false,
        kind: WorkloadKind::Io(IoWorkload {
            pattern,
            block_size: bs,
            queue_depth: qd,
            size: scale.size,
            runtime: Some(scale.runtime.unwrap_or(rt)),
            ramp,
            ..IoWorkload::default()
        }),
    }
}

fn general(name: &str, rt: Duration, ramp: Duration, scale: ProfileScale) -> Suite {
    // A short --time keeps the warm-up in proportion.
    let ramp = scale.runtime.map_or(ramp, |t| ramp.min(t / 4));
    const K: u64 = 1024;
    let mut w = vec![
        io(
            "seq-write-1m",
            Pattern::Write,
            1024 * K,
            32,
            rt,
            ramp,
            scale,
        ),
        io("seq-read-1m", Pattern::Read, 1024 * K, 32, rt, ramp, scale),
        io(
            "rand-read-4k-qd1",
            Pattern::RandRead,
            4 * K,
            1,
            rt,
            ramp,
            scale,
        ),
        io(
            "rand-read-4k-qd32",
            Pattern::RandRead,
            4 * K,
            32,
            rt,
            ramp,
            scale,
        ),
        io(
            "rand-write-4k-qd32",
            Pattern::RandWrite,
            4 * K,
            32,
            rt,
            ramp,
            scale,
        ),
        io(
            "mixed-70-30-8k-qd32",
            Pattern::RandRw,
            8 * K,
            32,
            rt,
            ramp,
            scale,
        ),
        io(
            "commit-4k-qd1-fdatasync",
            Pattern::RandWrite,
            4 * K,
            1,
            rt,
            ramp,
            scale,
        ),
    ];
    if let WorkloadKind::Io(m) = &mut w[5].kind {
        m.read_pct = 70;
    }
    if let WorkloadKind::Io(c) = &mut w[6].kind {
        c.fsync_every = 1;
        c.sync_kind = SyncKind::Fdatasync;
    }
    Suite {
        name: name.to_string(),
        workloads: w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_profile_builds_and_round_trips() {
        for p in PROFILES {
            let s = profile(p.name, ProfileScale::default()).unwrap();
            assert!(!s.workloads.is_empty());
            let text = super::super::suite_to_toml(&s);
            let back = super::super::parse_spec(&text, "x.toml").unwrap();
            assert_eq!(back, s, "{text}");
        }
        assert!(profile("nope", ProfileScale::default()).is_none());
    }

    /// `pts-iops`: the 4k random writes tracked first, in rounds, then PTS's 7 block sizes x
    /// 7 mixes, each one round long; `--time` shortens the round (for tests).
    #[test]
    fn pts_iops_is_the_tracked_writes_then_49_cells() {
        let s = profile("pts-iops", ProfileScale::default()).unwrap();
        assert_eq!(s.workloads.len(), 50);
        let first = s.workloads[0].io().unwrap();
        let st = first.steady.unwrap();
        assert_eq!(
            (first.pattern, first.block_size, st.figure, st.round),
            (
                Pattern::RandWrite,
                4096,
                crate::spec::SteadyFigure::Iops,
                Duration::from_secs(60)
            )
        );
        let names: Vec<&str> = s.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names[1], "pts-4k-r100w0");
        assert_eq!(names[3], "pts-4k-r65w35");
        assert_eq!(names[49], "pts-1m-r0w100");
        let c = s.workloads[3].io().unwrap();
        assert_eq!(
            (c.pattern, c.read_pct, c.steady),
            (Pattern::RandRw, 65, None)
        );
        let short = profile(
            "pts-iops",
            ProfileScale {
                runtime: Some(Duration::from_millis(200)),
                ..ProfileScale::default()
            },
        )
        .unwrap();
        let w = short.workloads[0].io().unwrap();
        assert_eq!(w.steady.unwrap().round, Duration::from_millis(200));
        assert_eq!(
            short.workloads[7].io().unwrap().runtime,
            Some(Duration::from_millis(200))
        );
        let tp = profile("pts-throughput", ProfileScale::default()).unwrap();
        let tpn: Vec<&str> = tp.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            tpn,
            [
                "pts-seq-write-128k",
                "pts-seq-read-128k",
                "pts-seq-write-1m",
                "pts-seq-read-1m"
            ]
        );
        assert!(
            tp.workloads
                .iter()
                .all(|w| w.io().unwrap().steady.unwrap().figure == crate::spec::SteadyFigure::Bw)
        );
    }
}
