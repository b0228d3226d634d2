//! The flags of `iolab run` (and `iolab run --hosts`) as the typed request the library builds a
//! suite from ([`crate::runner::request`]), and its notes and errors as the command line
//! reports them.

use super::{RunArgs, usage};
use crate::runner::request::{self, SuiteError, SuiteRequest, SuiteSource};
use crate::spec::Suite;

/// A suite error as the command line reports it: a spec file's error keeps its type, a trace's
/// as [`super::super::capture::trace_spec_err`] says, every other one is a usage error (exit 2).
pub(in crate::cli) fn suite_err(e: SuiteError) -> anyhow::Error {
    match e {
        SuiteError::SpecFile(e) => e.into(),
        SuiteError::TraceSpec(e) => super::super::capture::trace_spec_err(e),
        other => usage(other.to_string()),
    }
}

/// `--verify` checks blocks of one size: a block-size mix (or a replay's sizes) is refused.
pub(super) fn verify_one_size(a: &RunArgs, suite: &Suite) -> anyhow::Result<()> {
    if a.verify.is_none() {
        return Ok(());
    }
    request::check_verify_one_size(suite).map_err(suite_err)
}

/// What `iolab run --fio-job` takes from the job file besides the workloads
/// ([`request::FioJobExtras`]): the target when none was given, `--verify` when a job
/// verifies, and the conversion notes appended to the run's note.
pub fn apply_fio_job(mut a: RunArgs) -> anyhow::Result<RunArgs> {
    let Some(path) = a.fio_job.clone() else {
        return Ok(a);
    };
    request::fio_job_extras(&path, a.lenient, a.target.is_none())
        .map_err(suite_err)?
        .apply(&mut a.target, &mut a.verify, &mut a.note);
    Ok(a)
}

/// Builds the suite the flags ask for, its notes printed on stderr as they come.
pub fn build_suite(a: &RunArgs) -> anyhow::Result<Suite> {
    request::build_suite(&suite_request(a), &mut |n| eprintln!("{n}")).map_err(suite_err)
}

/// The flags as a [`SuiteRequest`]: one workload of the flags when `--pattern` or `--replay`
/// is given, else a trace's model, a spec file, a fio job file or a profile, in that order.
fn suite_request(a: &RunArgs) -> SuiteRequest {
    let source = if a.pattern.is_some() || a.replay.is_some() {
        SuiteSource::Flags {
            replay: a.replay.clone(),
        }
    } else if let Some(t) = &a.replay_model {
        SuiteSource::ReplayModel(t.clone())
    } else if let Some(spec) = &a.spec {
        SuiteSource::SpecFile(spec.clone())
    } else if let Some(job) = &a.fio_job {
        SuiteSource::FioJob {
            path: job.clone(),
            lenient: a.lenient,
        }
    } else {
        let name = if a.quick {
            "quick"
        } else {
            a.profile.as_deref().unwrap_or("default")
        };
        SuiteSource::Profile {
            name: name.to_string(),
            size: a.size.clone(),
            time: a.time.clone(),
            scale: a.scale,
        }
    };
    SuiteRequest {
        source,
        flags: a.flags(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn request(args: &[&str]) -> SuiteRequest {
        let mut argv = vec!["iolab", "run"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(argv).expect("flags parse");
        let crate::cli::Command::Run(a) = cli.command else {
            panic!("not a run")
        };
        suite_request(&a)
    }

    #[test]
    fn quick_with_a_block_size_is_the_quick_profile_under_that_flag() {
        let r = request(&["--quick", "--bs", "3k", "--size", "64MiB"]);
        assert_eq!(
            r.source,
            SuiteSource::Profile {
                name: "quick".into(),
                size: Some("64MiB".into()),
                time: None,
                scale: None,
            }
        );
        assert_eq!(r.flags.bs, Some(crate::spec::SizeValue::Text("3k".into())));
    }

    #[test]
    fn a_pattern_or_a_replay_makes_one_workload_of_the_flags() {
        let r = request(&["--pattern", "randread", "--bs", "8k"]);
        assert_eq!(r.source, SuiteSource::Flags { replay: None });
        let r = request(&["--replay", "db.trace"]);
        assert_eq!(
            r.source,
            SuiteSource::Flags {
                replay: Some("db.trace".into())
            }
        );
    }
}
