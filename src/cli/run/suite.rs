//! The flags of `iolab run` (and `iolab run --hosts`) turned into a suite: a spec file, a
//! profile or one custom workload, with the workload flags laid over every workload, replays
//! filled from their traces, a fio job file's extras taken in.

use super::{RunArgs, usage};
use crate::runner::suite::VerifyMode;
use crate::spec::profiles::{ProfileScale, profile, profile_names};
use crate::spec::{RawWorkload, SpecError, Suite, Workload, WorkloadKind};

/// `--verify` checks blocks of one size: a block-size mix (or a replay's sizes) is refused.
pub(super) fn verify_one_size(a: &RunArgs, suite: &Suite) -> anyhow::Result<()> {
    if a.verify.is_none() {
        return Ok(());
    }
    match suite.workloads.iter().find(|w| {
        w.io()
            .is_some_and(|io| io.bssplit.is_some() || io.replay.is_some())
    }) {
        Some(w) => Err(usage(format!(
            "--verify checks blocks of one size; workload '{}' mixes sizes (bssplit or a replay): drop one",
            w.name
        ))),
        None => Ok(()),
    }
}

/// Turns a flag-level spec error into a message naming the flag.
fn flag_error(e: SpecError) -> anyhow::Error {
    let flag = format!("--{}", e.key.replace('_', "-"));
    usage(format!("{flag}: {}", e.msg))
}

/// What `iolab run --fio-job` takes from the job file besides the workloads
/// ([`super::super::import::FioJobFlags`]): the target when none was given, `--verify` when a job
/// verifies, and the conversion notes appended to the run's note.
pub fn apply_fio_job(mut a: RunArgs) -> anyhow::Result<RunArgs> {
    let Some(path) = a.fio_job.clone() else {
        return Ok(a);
    };
    let job = super::super::import::fio_job_flags(&path, a.lenient, a.target.is_none())?;
    if a.target.is_none() {
        a.target = job.target;
    }
    if job.verify && a.verify.is_none() {
        a.verify = Some(VerifyMode::Both);
    }
    if let Some(skipped) = job.skipped {
        a.note = Some(match a.note.take() {
            Some(n) => format!("{n}; {skipped}"),
            None => skipped,
        });
    }
    Ok(a)
}

/// Builds the suite the flags ask for.
pub fn build_suite(a: &RunArgs) -> anyhow::Result<Suite> {
    let mut suite = build_suite_unprepared(a)?;
    prepare_replays(&mut suite)?;
    Ok(suite)
}

/// Fills every replay workload from its trace (pattern, block size, queue depth), so the
/// write-safety check sees a trace with writes as a writer.
pub(in crate::cli) fn prepare_replays(suite: &mut Suite) -> anyhow::Result<()> {
    for w in &mut suite.workloads {
        if let WorkloadKind::Io(io) = &mut w.kind {
            crate::runner::replay::prepare(io).map_err(|e| usage(format!("replay: {e}")))?;
        }
    }
    Ok(())
}

fn build_suite_unprepared(a: &RunArgs) -> anyhow::Result<Suite> {
    let flags = a.flags();
    if a.pattern.is_some() || a.replay.is_some() {
        let mut flags = flags;
        if let Some(t) = &a.replay
            && flags.name.is_none()
        {
            let stem = t
                .file_stem()
                .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
            flags.name = Some(format!("replay-{stem}"));
        }
        let w = flags.validate().map_err(flag_error)?;
        return Ok(Suite {
            name: "custom".into(),
            workloads: vec![w],
        });
    }
    let base = if let Some(t) = &a.replay_model {
        let f = super::super::capture::trace_spec(
            t,
            "model-",
            &format!("--replay-model {}", t.display()),
        )?
        .spec;
        for n in &f.notes {
            eprintln!("iolab: note: the model leaves out {n}");
        }
        f.suite
    } else if let Some(spec) = &a.spec {
        crate::spec::parse_spec_file(spec)?
    } else if let Some(job) = &a.fio_job {
        super::super::import::fio_job_suite(job, a.lenient)?
    } else {
        let name = if a.quick {
            "quick"
        } else {
            a.profile.as_deref().unwrap_or("default")
        };
        if let Some(sc) = a.scale {
            if !(sc > 0.0 && sc <= 64.0) {
                return Err(usage(
                    "--scale: give a fraction greater than 0 (1 is the full-size profile), e.g. 0.25",
                ));
            }
        }
        let size = a
            .size
            .as_deref()
            .map(crate::units::parse_bytes)
            .transpose()
            .map_err(|e| usage(format!("--size: {e}")))?;
        let runtime = a
            .time
            .as_deref()
            .map(crate::units::parse_duration)
            .transpose()
            .map_err(|e| usage(format!("--time: {e}")))?;
        profile(
            name,
            ProfileScale {
                size,
                runtime,
                scale: a.scale,
            },
        )
        .ok_or_else(|| {
            usage(format!(
                "--profile: unknown profile '{name}' (known: {})",
                profile_names().join(", ")
            ))
        })?
    };
    // Flags override every workload of the suite. Two workloads the flags made identical (the
    // quick suite's QD 1 and QD 32 random reads under `--qd 4`) run once, under their one name.
    let mut workloads: Vec<Workload> = Vec::new();
    for w in &base.workloads {
        let eff = apply_overrides(w, &flags)?;
        match workloads.iter().find(|x| x.name == eff.name) {
            Some(x) if *x == eff => eprintln!(
                "note: with these flags '{}' is the same workload as another one: it runs once",
                w.name
            ),
            Some(_) => {
                let n = (2..u32::MAX)
                    .map(|i| format!("{}-{i}", eff.name))
                    .find(|n| workloads.iter().all(|x| &x.name != n));
                let mut eff = eff;
                eff.name = n.unwrap_or_default();
                workloads.push(eff);
            }
            None => workloads.push(eff),
        }
    }
    Ok(Suite {
        name: base.name,
        workloads,
    })
}

fn apply_overrides(w: &Workload, flags: &RawWorkload) -> anyhow::Result<Workload> {
    if *flags == RawWorkload::default() {
        return Ok(w.clone());
    }
    let base = RawWorkload::from_workload(w);
    let mut merged = flags.clone().or(&base);
    merged.name = base.name.clone();
    if matches!(w.kind, WorkloadKind::CachedRead(_)) {
        // Block-IO flags do not apply to cached reads.
        return Ok(w.clone());
    }
    let mut eff = merged.validate().map_err(flag_error)?;
    eff.name = effective_name(w, &eff);
    Ok(eff)
}

/// The workload's name with every flag override that changes what it measures written into it,
/// so a figure is never shown under a name that describes other IO: `seq-write-1m` run with
/// `--bs 3k` is `seq-write-3k`; a parameter the name does not carry is appended
/// (`rand-read-4k-qd32-t4`, `-psync`, `-buffered`). Working set, run time and seed do not change
/// what is measured and stay out of the name (they are in the stored parameters).
fn effective_name(base: &Workload, eff: &Workload) -> String {
    let mut tokens: Vec<String> = base.name.split('-').map(str::to_string).collect();
    // Replaces the token `old` by `new`, or appends `new` when the name does not carry `old`.
    let mut set = |old: String, new: String| match tokens.iter_mut().find(|t| **t == old) {
        Some(t) => *t = new,
        None => tokens.push(new),
    };
    let short = |b: u64| {
        crate::units::format_bytes(b)
            .trim_end_matches("iB")
            .to_lowercase()
    };
    match (&base.kind, &eff.kind) {
        (WorkloadKind::Io(a), WorkloadKind::Io(b)) => {
            if a.block_size != b.block_size {
                set(short(a.block_size), short(b.block_size));
            }
            if a.queue_depth != b.queue_depth {
                set(
                    format!("qd{}", a.queue_depth),
                    format!("qd{}", b.queue_depth),
                );
            }
            if a.threads != b.threads {
                set(format!("t{}", a.threads), format!("t{}", b.threads));
            }
            if a.read_pct != b.read_pct && b.pattern.is_mixed() {
                let (ra, rb) = (a.read_pct, b.read_pct);
                set(format!("{ra}r"), format!("{rb}r"));
            }
            if a.engine != b.engine {
                set(a.engine.name().into(), b.engine.name().into());
            }
            if a.wait != b.wait {
                set(String::new(), format!("wait-{}", b.wait.name()));
            }
            if a.direct != b.direct {
                set(
                    String::new(),
                    (if b.direct { "direct" } else { "buffered" }).into(),
                );
            }
            if a.data != b.data {
                let d = match b.data {
                    crate::spec::DataKind::Random => "random-data",
                    crate::spec::DataKind::Zero => "zero-data",
                };
                set(String::new(), d.into());
            }
            if (a.fsync_every, a.fsync_at_end, a.sync_kind)
                != (b.fsync_every, b.fsync_at_end, b.sync_kind)
            {
                let call = match b.sync_kind {
                    crate::spec::SyncKind::Fdatasync => "fdatasync",
                    crate::spec::SyncKind::Fsync => "fsync",
                };
                if b.fsync_every > 0 {
                    set(String::new(), format!("{call}{}", b.fsync_every));
                } else if b.fsync_at_end {
                    set(String::new(), format!("{call}-at-end"));
                }
            }
        }
        (WorkloadKind::SmallFiles(a), WorkloadKind::SmallFiles(b)) => {
            if a.threads != b.threads {
                set(format!("t{}", a.threads), format!("t{}", b.threads));
            }
            if a.files != b.files {
                set(String::new(), format!("{}files", b.files));
            }
            if (a.min_size, a.max_size) != (b.min_size, b.max_size) {
                set(String::new(), format!("{}-{}b", b.min_size, b.max_size));
            }
            if (a.fsync, a.fsync_dir) != (b.fsync, b.fsync_dir) {
                let f = match (b.fsync, b.fsync_dir) {
                    (true, true) => "fsync-dir",
                    (true, false) => "fsync",
                    (false, true) => "dir-fsync-only",
                    (false, false) => "no-fsync",
                };
                set(String::new(), f.into());
            }
        }
        _ => {}
    }
    tokens.join("-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn suite(args: &[&str]) -> Suite {
        let mut argv = vec!["iolab", "run"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(argv).expect("flags parse");
        let crate::cli::Command::Run(a) = cli.command else {
            panic!("not a run")
        };
        build_suite(&a).expect("suite builds")
    }

    fn names(s: &Suite) -> Vec<String> {
        s.workloads.iter().map(|w| w.name.clone()).collect()
    }

    #[test]
    fn an_override_shows_in_every_name_it_changes() {
        let plain = names(&suite(&["--quick"]));
        assert!(plain.iter().any(|n| n == "seq-write-1m"), "{plain:?}");
        let s = suite(&["--quick", "--bs", "3k"]);
        let n = names(&s);
        assert!(n.iter().any(|n| n == "seq-write-3k"), "{n:?}");
        assert!(n.iter().any(|n| n == "rand-read-3k-qd1"), "{n:?}");
        assert!(
            !n.iter().any(|n| n.contains("1m") || n.contains("4k")),
            "{n:?}"
        );
        for w in &s.workloads {
            if let WorkloadKind::Io(io) = &w.kind {
                assert_eq!(io.block_size, 3072, "{}", w.name);
            }
        }
    }

    #[test]
    fn parameters_the_name_lacks_are_appended() {
        let n = names(&suite(&[
            "--quick",
            "--threads",
            "4",
            "--engine",
            "psync",
            "--buffered",
        ]));
        assert!(
            n.iter().any(|n| n == "seq-write-1m-t4-psync-buffered"),
            "{n:?}"
        );
    }

    #[test]
    fn workloads_made_identical_run_once() {
        let n = names(&suite(&["--quick", "--qd", "4"]));
        let reads: Vec<_> = n.iter().filter(|n| n.starts_with("rand-read-4k")).collect();
        assert_eq!(reads, ["rand-read-4k-qd4"], "{n:?}");
    }

    #[test]
    fn size_and_time_do_not_rename() {
        let n = names(&suite(&["--quick", "--size", "64MiB", "--time", "1s"]));
        assert_eq!(n, names(&suite(&["--quick"])));
    }
}
