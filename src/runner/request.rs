//! The suite `iolab run` (and `iolab run --hosts`) runs, built from what was asked: a spec
//! file, a profile, a fio job file, a trace's workload model or one workload made of the flags,
//! with the workload flags laid over every workload and replays filled from their traces.
//!
//! The command line parses its flags into a [`SuiteRequest`] and prints what this module says
//! ([`SuiteNote`], [`SuiteError`]); everything between is here, so a test calls it directly.

use std::path::{Path, PathBuf};

use super::suite::VerifyMode;
use crate::fio::FioError;
use crate::spec::profiles::{ProfileScale, profile, profile_names};
use crate::spec::{RawWorkload, SpecError, Suite, Workload, WorkloadKind};
use crate::trace::TraceError;
use crate::trace::to_spec::TraceSpecError;
use crate::units::UnitError;

/// Where a run's workloads come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SuiteSource {
    /// One workload made of the flags alone (`--pattern`, `--replay`); a replay without a name
    /// is named `replay-` and the trace file's stem.
    Flags {
        /// The trace `--replay` names, for the default name.
        replay: Option<PathBuf>,
    },
    /// A trace's workload model (`--replay-model`).
    ReplayModel(PathBuf),
    /// A spec file (`--spec`).
    SpecFile(PathBuf),
    /// A fio job file (`--fio-job`); `lenient` skips options iolab does not support.
    FioJob {
        /// The job file.
        path: PathBuf,
        /// Skip unsupported options instead of refusing the file.
        lenient: bool,
    },
    /// A built-in profile, scaled.
    Profile {
        /// Its name (`default`, `quick`, ...).
        name: String,
        /// `--size`, as given (checked here).
        size: Option<String>,
        /// `--time`, as given (checked here).
        time: Option<String>,
        /// `--scale`: a fraction of the full-size profile.
        scale: Option<f64>,
    },
}

/// What the command line asks of a suite: its source, and the workload flags laid over every
/// workload of it (unset fields stay `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRequest {
    /// Where the workloads come from.
    pub source: SuiteSource,
    /// The workload flags as a raw workload.
    pub flags: RawWorkload,
}

/// Something the suite's build says on the way (printed on stderr by the command line, as it
/// happens, so it comes before an error that follows it). Displays as the whole line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteNote {
    /// What a trace's workload model leaves out.
    ModelLeavesOut(String),
    /// A fio job file's conversion note or skipped option.
    FioJob(String),
    /// The flags made this workload the same as another one: it runs once.
    RunsOnce(String),
}

impl std::fmt::Display for SuiteNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SuiteNote::ModelLeavesOut(n) => write!(f, "iolab: note: the model leaves out {n}"),
            SuiteNote::FioJob(n) => write!(f, "iolab: note: {n}"),
            SuiteNote::RunsOnce(w) => write!(
                f,
                "note: with these flags '{w}' is the same workload as another one: it runs once"
            ),
        }
    }
}

/// Why no suite was built. Every one is the user's to fix (exit 2) except a
/// [`TraceError::Write`] inside [`SuiteError::TraceSpec`] (never seen reading, kept apart).
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A workload flag is wrong (`--bs: ...`).
    #[error("--{}: {}", .0.key.replace('_', "-"), .0.msg)]
    Flag(SpecError),
    /// The spec file is wrong (its own `file:line` message).
    #[error(transparent)]
    SpecFile(SpecError),
    /// The fio job file cannot be read or converted.
    #[error(transparent)]
    Fio(#[from] FioError),
    /// A trace named for its model gives no workload.
    #[error(transparent)]
    TraceSpec(#[from] TraceSpecError),
    /// A replay's trace cannot be read.
    #[error("replay: {0}")]
    Replay(TraceError),
    /// `--scale` out of range.
    #[error("--scale: give a fraction greater than 0 (1 is the full-size profile), e.g. 0.25")]
    Scale,
    /// `--size` is no size.
    #[error("--size: {0}")]
    Size(UnitError),
    /// `--time` is no duration.
    #[error("--time: {0}")]
    Time(UnitError),
    /// No profile of that name.
    #[error("--profile: unknown profile '{name}' (known: {known})")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// `--verify` with a workload of many block sizes.
    #[error(
        "--verify checks blocks of one size; workload '{0}' mixes sizes (bssplit or a replay): drop one"
    )]
    VerifyMixesSizes(String),
    /// The job file's one `filename` is a new file that cannot be made.
    #[error("{job}: cannot create filename {file}: {why}")]
    FioTargetCreate {
        /// The job file.
        job: String,
        /// The file it names.
        file: String,
        /// The OS error.
        why: std::io::Error,
    },
    /// The job file's jobs name several files; iolab runs on one target.
    #[error(
        "{job}: jobs name {} different files ({}); iolab runs every workload on one target: give TARGET",
        .files.len(), .files.join(", ")
    )]
    FioManyTargets {
        /// The job file.
        job: String,
        /// The files its jobs name.
        files: Vec<String>,
    },
}

/// Builds the suite `request` asks for, replays filled from their traces; `note` hears what the
/// build says on the way, in order.
///
/// # Errors
/// A flag, the spec file, the fio job file, a trace or the profile is wrong ([`SuiteError`]).
pub fn build_suite(
    request: &SuiteRequest,
    note: &mut dyn FnMut(SuiteNote),
) -> Result<Suite, SuiteError> {
    let mut suite = build_unprepared(request, note)?;
    prepare_replays(&mut suite)?;
    Ok(suite)
}

/// Fills every replay workload from its trace (pattern, block size, queue depth), so the
/// write-safety check sees a trace with writes as a writer.
///
/// # Errors
/// A replay's trace cannot be read ([`SuiteError::Replay`]).
pub fn prepare_replays(suite: &mut Suite) -> Result<(), SuiteError> {
    for w in &mut suite.workloads {
        if let WorkloadKind::Io(io) = &mut w.kind {
            super::replay::prepare(io).map_err(SuiteError::Replay)?;
        }
    }
    Ok(())
}

/// A lab's `[workloads] model = "..."`: each trace's workload model joins the suite; then every
/// replay and model workload is filled from its trace (pattern, block size, queue depth).
///
/// # Errors
/// A trace gives no workload, or a replay's trace cannot be read.
pub fn add_trace_models(w: &mut crate::spec::lab::LabWorkloads) -> Result<(), SuiteError> {
    for t in w.models.clone() {
        let f = crate::trace::to_spec::from_trace_file(
            Path::new(&t),
            "model-",
            &format!("workloads.model {t}"),
        )?;
        w.suite.workloads.extend(f.spec.suite.workloads);
    }
    prepare_replays(&mut w.suite)
}

/// `--verify` checks blocks of one size: a block-size mix (or a replay's sizes) is refused.
///
/// # Errors
/// A workload mixes sizes ([`SuiteError::VerifyMixesSizes`]).
pub fn check_verify_one_size(suite: &Suite) -> Result<(), SuiteError> {
    match suite.workloads.iter().find(|w| {
        w.io()
            .is_some_and(|io| io.bssplit.is_some() || io.replay.is_some())
    }) {
        Some(w) => Err(SuiteError::VerifyMixesSizes(w.name.clone())),
        None => Ok(()),
    }
}

/// Reads and converts a fio job file, the suite named for the file's stem.
///
/// # Errors
/// The file cannot be read, parsed or converted ([`FioError`], naming file and line).
pub fn load_fio_job(path: &Path, lenient: bool) -> Result<crate::fio::Conversion, FioError> {
    let jf = crate::fio::parse_job_file(path)?;
    let name = path
        .file_stem()
        .map_or_else(|| "fio".into(), |s| s.to_string_lossy().into_owned());
    crate::fio::convert(&jf, &name, lenient)
}

/// What `iolab run --fio-job` takes from a job file besides the workloads.
#[derive(Debug)]
pub struct FioJobExtras {
    /// The one file or device the jobs name (`filename`/`directory`), made when it is a new
    /// file in an existing directory; `None` when the jobs name none or a target was given.
    pub target: Option<PathBuf>,
    /// A job verifies its data: the run verifies too.
    pub verify: bool,
    /// The options skipped under `--lenient`, as a note for the run.
    pub skipped: Option<String>,
}

impl FioJobExtras {
    /// Lays the extras over the run's own: the target when none was given, `--verify` when a
    /// job verifies and none was asked, the skipped options appended to the note.
    pub fn apply(
        self,
        target: &mut Option<PathBuf>,
        verify: &mut Option<VerifyMode>,
        note: &mut Option<String>,
    ) {
        if target.is_none() {
            *target = self.target;
        }
        if self.verify && verify.is_none() {
            *verify = Some(VerifyMode::Both);
        }
        if let Some(skipped) = self.skipped {
            *note = Some(match note.take() {
                Some(n) => format!("{n}; {skipped}"),
                None => skipped,
            });
        }
    }
}

/// Reads the job file for [`FioJobExtras`]; `find_target`: no TARGET was given, so the jobs'
/// one file is the target (more than one is an error).
///
/// # Errors
/// The job file is wrong, its one new file cannot be made, or its jobs name several files.
pub fn fio_job_extras(
    path: &Path,
    lenient: bool,
    find_target: bool,
) -> Result<FioJobExtras, SuiteError> {
    let c = load_fio_job(path, lenient)?;
    let target = if find_target {
        fio_job_target(path, &c.targets)?
    } else {
        None
    };
    Ok(FioJobExtras {
        target,
        verify: c.verify,
        skipped: (!c.skipped.is_empty())
            .then(|| format!("fio options skipped (--lenient): {}", c.skipped.join("; "))),
    })
}

/// The one file the jobs name, made when it is a new file in an existing directory.
fn fio_job_target(path: &Path, targets: &[String]) -> Result<Option<PathBuf>, SuiteError> {
    match targets {
        [] => Ok(None),
        [one] => {
            let p = PathBuf::from(one);
            if !p.exists() && p.parent().is_some_and(Path::is_dir) && !one.starts_with("/dev/") {
                std::fs::File::create(&p).map_err(|why| SuiteError::FioTargetCreate {
                    job: path.display().to_string(),
                    file: one.clone(),
                    why,
                })?;
            }
            Ok(Some(p))
        }
        many => Err(SuiteError::FioManyTargets {
            job: path.display().to_string(),
            files: many.to_vec(),
        }),
    }
}

/// The one workload the flags make (`--pattern`, `--replay`).
fn custom_suite(flags: &RawWorkload, replay: Option<&Path>) -> Result<Suite, SuiteError> {
    let mut flags = flags.clone();
    if let Some(t) = replay
        && flags.name.is_none()
    {
        let stem = t
            .file_stem()
            .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
        flags.name = Some(format!("replay-{stem}"));
    }
    let w = flags.validate().map_err(SuiteError::Flag)?;
    Ok(Suite {
        name: "custom".into(),
        workloads: vec![w],
    })
}

/// A trace's workload model, with what it leaves out said.
fn model_suite(trace: &Path, note: &mut dyn FnMut(SuiteNote)) -> Result<Suite, SuiteError> {
    let f = crate::trace::to_spec::from_trace_file(
        trace,
        "model-",
        &format!("--replay-model {}", trace.display()),
    )?
    .spec;
    for n in &f.notes {
        note(SuiteNote::ModelLeavesOut(n.clone()));
    }
    Ok(f.suite)
}

/// A fio job file's workloads, with its notes and skipped options said.
fn fio_suite(
    path: &Path,
    lenient: bool,
    note: &mut dyn FnMut(SuiteNote),
) -> Result<Suite, SuiteError> {
    let c = load_fio_job(path, lenient)?;
    for n in c.notes.iter().chain(&c.skipped) {
        note(SuiteNote::FioJob(n.clone()));
    }
    Ok(c.suite)
}

/// A built-in profile at the size, time and scale asked for.
fn profile_suite(
    name: &str,
    size: Option<&str>,
    time: Option<&str>,
    scale: Option<f64>,
) -> Result<Suite, SuiteError> {
    if let Some(sc) = scale {
        if !(sc > 0.0 && sc <= 64.0) {
            return Err(SuiteError::Scale);
        }
    }
    let size = size
        .map(crate::units::parse_bytes)
        .transpose()
        .map_err(SuiteError::Size)?;
    let runtime = time
        .map(crate::units::parse_duration)
        .transpose()
        .map_err(SuiteError::Time)?;
    profile(
        name,
        ProfileScale {
            size,
            runtime,
            scale,
        },
    )
    .ok_or_else(|| SuiteError::UnknownProfile {
        name: name.to_string(),
        known: profile_names().join(", "),
    })
}

fn build_unprepared(
    request: &SuiteRequest,
    note: &mut dyn FnMut(SuiteNote),
) -> Result<Suite, SuiteError> {
    let flags = &request.flags;
    let base = match &request.source {
        SuiteSource::Flags { replay } => return custom_suite(flags, replay.as_deref()),
        SuiteSource::ReplayModel(t) => model_suite(t, note)?,
        SuiteSource::SpecFile(spec) => {
            crate::spec::parse_spec_file(spec).map_err(SuiteError::SpecFile)?
        }
        SuiteSource::FioJob { path, lenient } => fio_suite(path, *lenient, note)?,
        SuiteSource::Profile {
            name,
            size,
            time,
            scale,
        } => profile_suite(name, size.as_deref(), time.as_deref(), *scale)?,
    };
    // Flags override every workload of the suite. Two workloads the flags made identical (the
    // quick suite's QD 1 and QD 32 random reads under `--qd 4`) run once, under their one name.
    let mut workloads: Vec<Workload> = Vec::new();
    for w in &base.workloads {
        let eff = apply_overrides(w, flags)?;
        match workloads.iter().find(|x| x.name == eff.name) {
            Some(x) if *x == eff => note(SuiteNote::RunsOnce(w.name.clone())),
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

fn apply_overrides(w: &Workload, flags: &RawWorkload) -> Result<Workload, SuiteError> {
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
    let mut eff = merged.validate().map_err(SuiteError::Flag)?;
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
    use crate::spec::{SizeValue, TimeValue};

    /// The quick profile with `flags` over it.
    fn quick(flags: RawWorkload) -> (Suite, Vec<SuiteNote>) {
        let request = SuiteRequest {
            source: SuiteSource::Profile {
                name: "quick".into(),
                size: None,
                time: None,
                scale: None,
            },
            flags,
        };
        let mut notes = Vec::new();
        let suite = build_suite(&request, &mut |n| notes.push(n)).expect("suite builds");
        (suite, notes)
    }

    fn names(s: &Suite) -> Vec<String> {
        s.workloads.iter().map(|w| w.name.clone()).collect()
    }

    #[test]
    fn an_override_shows_in_every_name_it_changes() {
        let plain = names(&quick(RawWorkload::default()).0);
        assert!(plain.iter().any(|n| n == "seq-write-1m"), "{plain:?}");
        let (s, _) = quick(RawWorkload {
            bs: Some(SizeValue::Text("3k".into())),
            ..RawWorkload::default()
        });
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
        let n = names(
            &quick(RawWorkload {
                threads: Some(4),
                engine: Some("psync".into()),
                direct: Some(false),
                ..RawWorkload::default()
            })
            .0,
        );
        assert!(
            n.iter().any(|n| n == "seq-write-1m-t4-psync-buffered"),
            "{n:?}"
        );
    }

    #[test]
    fn workloads_made_identical_run_once() {
        let (s, notes) = quick(RawWorkload {
            qd: Some(4),
            ..RawWorkload::default()
        });
        let n = names(&s);
        let reads: Vec<_> = n.iter().filter(|n| n.starts_with("rand-read-4k")).collect();
        assert_eq!(reads, ["rand-read-4k-qd4"], "{n:?}");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0]
                .to_string()
                .starts_with("note: with these flags 'rand-read-4k-qd"),
            "{notes:?}"
        );
    }

    #[test]
    fn size_and_time_do_not_rename() {
        let (s, _) = quick(RawWorkload {
            size: Some(SizeValue::Text("64MiB".into())),
            time: Some(TimeValue::Text("1s".into())),
            ..RawWorkload::default()
        });
        assert_eq!(names(&s), names(&quick(RawWorkload::default()).0));
    }

    #[test]
    fn a_bad_flag_is_named_with_its_dashes() {
        let request = SuiteRequest {
            source: SuiteSource::Flags { replay: None },
            flags: RawWorkload {
                pattern: Some("randrw".into()),
                read_pct: Some(101),
                ..RawWorkload::default()
            },
        };
        let e = build_suite(&request, &mut |_| {}).expect_err("101% reads is refused");
        assert!(e.to_string().starts_with("--read-pct: "), "{e}");
    }

    #[test]
    fn an_unknown_profile_lists_the_known_ones() {
        let request = SuiteRequest {
            source: SuiteSource::Profile {
                name: "nope".into(),
                size: None,
                time: None,
                scale: None,
            },
            flags: RawWorkload::default(),
        };
        let e = build_suite(&request, &mut |_| {}).expect_err("no such profile");
        assert!(
            e.to_string()
                .starts_with("--profile: unknown profile 'nope' (known: default, "),
            "{e}"
        );
    }
}
