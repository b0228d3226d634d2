//! The built-in profiles: each is just a spec (`iolab profiles --show NAME` prints its TOML).
//!
//! `default` and `quick` are the general suite; `mail`, `db`, `backup` and `hdparm` are what the
//! posts our users wrote ran by hand (bonnie++ `-n`, fio 8k QD 128, dd, hdparm `-tT`).

use std::time::Duration;

use super::workload::*;

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
        about: "the general suite, short (~15 s): a smoke test",
    },
];

/// Knobs that scale a profile: the working set and the run time per workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileScale {
    /// Working-set override (`--size`).
    pub size: Option<u64>,
    /// Run-time override per workload (`--time`).
    pub runtime: Option<Duration>,
}

/// Builds a profile by name, or `None` when there is no such profile.
pub fn profile(name: &str, scale: ProfileScale) -> Option<Suite> {
    match name {
        "default" => Some(general(
            name,
            Duration::from_secs(7),
            Duration::from_secs(1),
            scale,
        )),
        "quick" => Some(general(
            name,
            Duration::from_millis(1500),
            Duration::from_millis(500),
            scale,
        )),
        _ => None,
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
}
