//! Runs a suite: each workload in order, each repeated, every finished trial pushed into a
//! [`Sink`] at once (the store commits it, the terminal shows it), so a failure or Ctrl-C later
//! loses nothing already measured.

use std::time::Duration;

use crate::sample::{TrialSample, WorkloadRecord};
use crate::spec::{IoWorkload, Suite, Workload, WorkloadKind};
use crate::target::{Target, TargetError, TargetKind};

use super::io::{Control, IoFile, run_io_trial};
use super::prepare::TestFile;

/// Receives progress and results as they happen.
pub trait Sink {
    /// A trial is about to start (`trial` from 1; `planned` may grow with `--until-stable`).
    fn trial_start(&mut self, _index: usize, _w: &Workload, _trial: u32, _planned: u32) {}
    /// A trial finished; an error here (the store failed) stops the suite.
    fn trial_done(&mut self, index: usize, w: &Workload, t: &TrialSample) -> anyhow::Result<()>;
    /// Something the user should know, said once.
    fn note(&mut self, msg: &str);
}

/// How many trials and what happens between them.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Trials per workload (at least 1).
    pub repeat: u32,
    /// Keep repeating until the 95% CI half-width is within this fraction of the median.
    pub until_stable: Option<f64>,
    /// Upper bound on trials with `until_stable`.
    pub max_repeat: u32,
    /// Drop the page cache before each trial (when root).
    pub drop_caches: bool,
    /// Working set when a workload does not say (directories and new files).
    pub default_size: u64,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            repeat: 1,
            until_stable: None,
            max_repeat: 10,
            drop_caches: true,
            default_size: 1 << 30,
        }
    }
}

/// What a suite produced: every finished trial, and why it stopped early if it did.
#[derive(Debug)]
pub struct SuiteOutcome {
    /// Results per workload that started, in order.
    pub records: Vec<WorkloadRecord>,
    /// The error that ended the suite early.
    pub error: Option<anyhow::Error>,
    /// Ctrl-C/SIGTERM ended it.
    pub interrupted: bool,
}

/// The working set of an IO workload on this target, checked against what the target holds.
pub fn working_set(
    w: &IoWorkload,
    t: &Target,
    laid_out: u64,
    default_size: u64,
) -> Result<u64, TargetError> {
    let size = match t.info.kind {
        TargetKind::BlockDevice => {
            let have = t.device_size.unwrap_or(0);
            let want = w.size.unwrap_or(have);
            if want > have {
                return Err(TargetError::TooSmall {
                    want,
                    have,
                    path: t.path().to_path_buf(),
                });
            }
            want
        }
        TargetKind::File if w.size.is_none() && laid_out >= w.block_size => laid_out,
        _ => w.size.unwrap_or(default_size),
    };
    let size = size / w.block_size * w.block_size;
    if size < w.block_size {
        return Err(TargetError::TooSmall {
            want: w.block_size,
            have: size,
            path: t.path().to_path_buf(),
        });
    }
    Ok(size)
}

/// Checks what can be checked before any IO: block sizes against the O_DIRECT alignment and
/// working sets against the device, so a bad flag fails in a second, not mid-suite.
pub fn preflight(suite: &Suite, target: &Target, opts: &SuiteOptions) -> Result<(), TargetError> {
    let direct_ok = match target.info.kind {
        TargetKind::Directory => crate::target::probe_direct(target.path()),
        _ => super::prepare::probe_direct_open(target.path()),
    };
    for w in &suite.workloads {
        let WorkloadKind::Io(io) = &w.kind else {
            continue;
        };
        if io.engine == crate::spec::EngineKind::Null {
            continue;
        }
        if io.direct && direct_ok && io.block_size % u64::from(target.direct_align) != 0 {
            return Err(TargetError::Misaligned {
                bs: io.block_size,
                align: target.direct_align,
                path: target.path().to_path_buf(),
            });
        }
        let laid_out = if target.info.kind == TargetKind::File {
            std::fs::metadata(target.path()).map_or(0, |m| m.len())
        } else {
            0
        };
        working_set(io, target, laid_out, opts.default_size)?;
    }
    Ok(())
}

/// Runs every workload of `suite` on `target`.
pub fn run_suite(
    suite: &Suite,
    target: &Target,
    opts: &SuiteOptions,
    ctl: &Control,
    sink: &mut dyn Sink,
) -> SuiteOutcome {
    let mut records: Vec<WorkloadRecord> = Vec::new();
    let mut said_no_drop = false;
    let mut test_file: Option<TestFile> = None;
    let stop = ctl.stop.clone();
    let stopped = move || stop.load(std::sync::atomic::Ordering::Relaxed);
    let fail = |records: Vec<WorkloadRecord>, e: anyhow::Error| SuiteOutcome {
        records,
        error: Some(e),
        interrupted: false,
    };
    for (wi, w) in suite.workloads.iter().enumerate() {
        if stopped() {
            return SuiteOutcome {
                records,
                error: None,
                interrupted: true,
            };
        }
        records.push(WorkloadRecord {
            workload: w.clone(),
            trials: Vec::new(),
        });
        let planned = opts.repeat.max(1);
        let io_file = match &w.kind {
            WorkloadKind::Io(io) => {
                if io.engine == crate::spec::EngineKind::Null {
                    Some(IoFile {
                        path: target.path().to_path_buf(),
                        offset: 0,
                        size: io.size.unwrap_or(opts.default_size).max(io.block_size),
                        direct_ok: true,
                    })
                } else {
                    if test_file.is_none() {
                        match TestFile::for_target(target) {
                            Ok(f) => test_file = Some(f),
                            Err(e) => return fail(records, e.into()),
                        }
                    }
                    let Some(tf) = test_file.as_mut() else {
                        unreachable!("test file set above")
                    };
                    let size = match working_set(io, target, tf.laid_out, opts.default_size) {
                        Ok(s) => s,
                        Err(e) => return fail(records, e.into()),
                    };
                    if io.direct
                        && tf.direct_ok
                        && io.block_size % u64::from(target.direct_align) != 0
                    {
                        let e = TargetError::Misaligned {
                            bs: io.block_size,
                            align: target.direct_align,
                            path: target.path().to_path_buf(),
                        };
                        return fail(records, e.into());
                    }
                    if target.info.kind != TargetKind::BlockDevice {
                        if let Err(e) = tf.ensure_laid_out(size, &stopped) {
                            if stopped() {
                                return SuiteOutcome {
                                    records,
                                    error: None,
                                    interrupted: true,
                                };
                            }
                            return fail(records, e.into());
                        }
                    }
                    if !(io.direct && tf.direct_ok) {
                        let ram = crate::system::ram_bytes().unwrap_or(0);
                        if size <= ram {
                            sink.note(&format!(
                                "{}: working set {} fits in RAM ({}): buffered figures measure the page cache, not the disk",
                                w.name,
                                crate::units::format_bytes(size),
                                crate::units::format_bytes(ram)
                            ));
                        }
                    }
                    Some(IoFile {
                        path: tf.path.clone(),
                        offset: 0,
                        size,
                        direct_ok: tf.direct_ok,
                    })
                }
            }
            WorkloadKind::CachedRead(cr) => {
                if test_file.is_none() {
                    match TestFile::for_target(target) {
                        Ok(f) => test_file = Some(f),
                        Err(e) => return fail(records, e.into()),
                    }
                }
                if let Some(tf) = test_file.as_mut() {
                    if target.info.kind != TargetKind::BlockDevice {
                        if let Err(e) = tf.ensure_laid_out(cr.block_size.max(1 << 20), &stopped) {
                            return fail(records, e.into());
                        }
                    }
                }
                None
            }
            WorkloadKind::SmallFiles(_) => None,
        };
        let mut trial = 0u32;
        loop {
            trial += 1;
            if stopped() {
                return SuiteOutcome {
                    records,
                    error: None,
                    interrupted: true,
                };
            }
            if opts.drop_caches || w.drop_caches {
                if let Err(msg) = crate::system::drop_caches() {
                    if !said_no_drop {
                        sink.note(&msg);
                        said_no_drop = true;
                    }
                }
            }
            sink.trial_start(wi, w, trial, planned);
            ctl.counters.reset();
            let result: anyhow::Result<TrialSample> = match (&w.kind, &io_file) {
                (WorkloadKind::Io(io), Some(f)) => {
                    run_io_trial(io, f, ctl, &w.name, trial).map_err(anyhow::Error::from)
                }
                (WorkloadKind::SmallFiles(sf), _) => {
                    super::smallfile::run_smallfile_trial(sf, target.path(), ctl, &w.name, trial)
                        .map_err(anyhow::Error::from)
                }
                (WorkloadKind::CachedRead(cr), _) => {
                    let path = match &test_file {
                        Some(tf) => tf.path.clone(),
                        None => target.path().to_path_buf(),
                    };
                    super::cached::run_cached_trial(cr, &path, ctl, &w.name, trial).map_err(|e| {
                        anyhow::anyhow!("{}: cached reads of {}: {e}", w.name, path.display())
                    })
                }
                (WorkloadKind::Io(_), None) => unreachable!("IO workloads always get a file"),
            };
            let sample = match result {
                Ok(s) => s,
                Err(e) => return fail(records, e),
            };
            if stopped() {
                // A trial cut short by Ctrl-C is not a full trial: keep the finished ones only.
                return SuiteOutcome {
                    records,
                    error: None,
                    interrupted: true,
                };
            }
            if let Err(e) = sink.trial_done(wi, w, &sample) {
                if let Some(r) = records.last_mut() {
                    r.trials.push(sample);
                }
                return fail(records, e);
            }
            let rec = records.last_mut().expect("pushed above");
            rec.trials.push(sample);
            if trial >= planned && !needs_more(rec, opts) {
                break;
            }
            if trial >= opts.max_repeat.max(planned) {
                break;
            }
        }
    }
    SuiteOutcome {
        records,
        error: None,
        interrupted: false,
    }
}

/// With `--until-stable`, whether the headline figure's CI is still too wide.
fn needs_more(rec: &WorkloadRecord, opts: &SuiteOptions) -> bool {
    let Some(pct) = opts.until_stable else {
        return false;
    };
    let vals: Vec<f64> = rec
        .trials
        .iter()
        .filter_map(|t| headline(&rec.workload, t))
        .map(|m| m.1)
        .collect();
    !crate::stats::is_stable(&vals, pct)
}

/// The figure a workload is judged by: MB/s for sequential and large blocks, IOPS for random,
/// ops/s for small files. Returns (metric name, value).
pub fn headline(w: &Workload, t: &TrialSample) -> Option<(String, f64)> {
    match &w.kind {
        WorkloadKind::Io(io) => {
            let want = if io.headline_is_bandwidth() {
                "mbps"
            } else {
                "iops"
            };
            // The op carrying most of the traffic (reads in a 70/30 mix).
            let op = t
                .ops
                .iter()
                .filter(|o| o.op != "sync")
                .max_by_key(|o| o.count)?;
            let v = if want == "mbps" {
                op.mb_per_sec()
            } else {
                op.ops_per_sec()
            };
            Some((format!("{}.{want}", op.op), v))
        }
        _ => t
            .ops
            .first()
            .map(|o| (format!("{}.ops", o.op), o.ops_per_sec())),
    }
}

/// Rough time a suite will take, for the ETA.
pub fn estimate(suite: &Suite, opts: &SuiteOptions) -> Duration {
    let per: Duration = suite
        .workloads
        .iter()
        .map(|w| match &w.kind {
            WorkloadKind::Io(io) => super::io::expected_duration(io),
            WorkloadKind::CachedRead(c) => c.runtime,
            WorkloadKind::SmallFiles(_) => Duration::from_secs(10),
        })
        .sum();
    per * opts.repeat.max(1)
}
