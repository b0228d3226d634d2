//! Runs a suite: each workload in order, each repeated, every finished trial pushed into a
//! [`Sink`] at once (the store commits it, the terminal shows it), so a failure or Ctrl-C later
//! loses nothing already measured.

use std::time::Duration;

use crate::sample::{TrialSample, WorkloadRecord};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::spec::{IoWorkload, Pattern, Suite, Workload, WorkloadKind};
use crate::target::{Target, TargetError, TargetKind};

use super::io::{Control, IoFile, run_io_round, run_io_trial};
use super::prepare::TestFile;
use super::verify::VerifyTable;

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
    /// Drop the page cache before each trial (when root) of a workload that can read it (not
    /// O_DIRECT).
    pub drop_caches: bool,
    /// Working set when a workload does not say (directories and new files).
    pub default_size: u64,
    /// `--verify`: headers on every block written, every block read checked.
    pub verify: Option<VerifyMode>,
    /// Where `--verify write` saves, and `--verify read` loads, the generations written.
    pub verify_state: Option<std::path::PathBuf>,
    /// Keep the free-space reserve (the larger of 1GiB and 5%) when checking working sets; off
    /// on a lab's own layouts, where nothing else lives.
    pub space_reserve: bool,
    /// `--precondition`: write the target twice over before the first workload.
    pub precondition: Option<crate::spec::Precondition>,
}

/// What `--verify` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifyMode {
    /// Fill the working set with headers, run the workloads, read everything back and check.
    Both,
    /// Fill and run, then save the generations for a later `read` (no read-back).
    Write,
    /// Load the generations, run the workloads, read everything back and check.
    Read,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            repeat: 1,
            until_stable: None,
            max_repeat: 10,
            drop_caches: true,
            default_size: 1 << 30,
            verify: None,
            verify_state: None,
            space_reserve: true,
            precondition: None,
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
        // Every size of a block-size mix must be aligned, not only the largest.
        let sizes = io.bssplit.as_ref().map_or_else(
            || vec![io.block_size],
            |b| b.read.iter().chain(&b.write).map(|s| s.size).collect(),
        );
        if let Some(bs) = sizes
            .into_iter()
            .find(|bs| io.direct && direct_ok && bs % u64::from(target.direct_align) != 0)
        {
            return Err(TargetError::Misaligned {
                bs,
                align: target.direct_align,
                path: target.path().to_path_buf(),
            });
        }
        if io.direct && direct_ok && io.skip.unsigned_abs() % u64::from(target.direct_align) != 0 {
            return Err(TargetError::MisalignedSkip {
                skip: io.skip,
                align: target.direct_align,
                path: target.path().to_path_buf(),
            });
        }
        let laid_out = if target.info.kind == TargetKind::File {
            std::fs::metadata(target.path()).map_or(0, |m| m.len())
        } else {
            0
        };
        let ws = working_set(io, target, laid_out, opts.default_size)?;
        // What laying out the file adds: all of it in a directory, the unallocated part of a
        // file (sparse or shorter), nothing on a device. --io-size never grows the file (IO
        // wraps within the working set), so the working set is the bound.
        let adds = match target.info.kind {
            TargetKind::Directory => ws,
            TargetKind::File => ws.saturating_sub(allocated(target.path())),
            TargetKind::BlockDevice => 0,
        };
        if adds > 0 {
            crate::system::space::check(
                target.path(),
                adds,
                opts.space_reserve,
                &format!("the working set of '{}'", w.name),
                "lower --size",
            )?;
        }
    }
    for w in &suite.workloads {
        let WorkloadKind::SmallFiles(sf) = &w.kind else {
            continue;
        };
        // Each file takes at least one 4KiB block; the mean size is the expected one.
        let per = (sf.min_size.saturating_add(sf.max_size) / 2).div_ceil(4096) * 4096;
        let need = sf.files.saturating_mul(per.max(4096));
        crate::system::space::check(
            target.path(),
            need,
            opts.space_reserve,
            &format!(
                "the small-file set of '{}' ({} files, about {})",
                w.name,
                sf.files,
                fmt(need)
            ),
            "lower --files or --max-file-size",
        )?;
    }
    Ok(())
}

fn fmt(n: u64) -> String {
    crate::units::format_bytes(n)
}

/// Bytes a file already has on disk (its allocated blocks).
fn allocated(p: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).map_or(0, |m| m.blocks().saturating_mul(512))
}

/// Runs every workload of `suite` on `target`.
pub fn run_suite(
    suite: &Suite,
    target: &Target,
    opts: &SuiteOptions,
    ctl: &Control,
    sink: &mut dyn Sink,
) -> SuiteOutcome {
    let mut r = SuiteRun {
        target,
        opts,
        ctl,
        sink,
        records: Vec::new(),
        test_file: None,
        said_no_drop: false,
        verify: None,
    };
    let mut stop = None;
    if let Some(p) = opts.precondition {
        if let Err(s) = r.precondition(p, suite) {
            stop = Some(s);
        }
    }
    for w in &suite.workloads {
        if stop.is_some() {
            break;
        }
        if let Err(s) = r.workload(w) {
            stop = Some(s);
        }
    }
    let (error, interrupted) = match stop {
        None => (None, false),
        Some(Stop::Interrupted) => (None, true),
        Some(Stop::Failed(e)) => (Some(e), false),
    };
    SuiteOutcome {
        records: r.records,
        error,
        interrupted,
    }
}

/// Why a suite ends early.
enum Stop {
    /// Ctrl-C/SIGTERM.
    Interrupted,
    /// An error.
    Failed(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for Stop {
    fn from(e: E) -> Self {
        Stop::Failed(e.into())
    }
}

/// The state of one suite run: results so far and what it made on the target.
struct SuiteRun<'a> {
    target: &'a Target,
    opts: &'a SuiteOptions,
    ctl: &'a Control,
    sink: &'a mut dyn Sink,
    records: Vec<WorkloadRecord>,
    test_file: Option<TestFile>,
    said_no_drop: bool,
    verify: Option<Arc<VerifyTable>>,
}

impl SuiteRun<'_> {
    fn stopped(&self) -> bool {
        self.ctl.stop.load(Ordering::Relaxed)
    }

    fn check_stop(&self) -> Result<(), Stop> {
        if self.stopped() {
            Err(Stop::Interrupted)
        } else {
            Ok(())
        }
    }

    fn test_file(&mut self) -> Result<&mut TestFile, Stop> {
        if self.test_file.is_none() {
            self.test_file = Some(TestFile::for_target(self.target)?);
        }
        Ok(self.test_file.as_mut().expect("set above"))
    }

    fn lay_out(&mut self, size: u64) -> Result<(), Stop> {
        if self.target.info.kind == TargetKind::BlockDevice {
            return Ok(());
        }
        let stop = self.ctl.stop.clone();
        let stopped = move || stop.load(Ordering::Relaxed);
        match self.test_file()?.ensure_laid_out(size, &stopped) {
            Ok(()) => {
                crate::pause::at("file laid out");
                Ok(())
            }
            Err(_) if self.stopped() => Err(Stop::Interrupted),
            Err(e) => Err(e.into()),
        }
    }

    /// Makes the file an IO workload runs on: created, laid out, checked.
    fn io_file(&mut self, w: &Workload, io: &IoWorkload) -> Result<IoFile, Stop> {
        if io.engine == crate::spec::EngineKind::Null {
            let size = io.size.unwrap_or(self.opts.default_size).max(io.block_size);
            return Ok(IoFile {
                path: self.target.path().to_path_buf(),
                offset: 0,
                size,
                direct_ok: true,
                verify: None,
            });
        }
        let (target, default_size) = (self.target, self.opts.default_size);
        let tf = self.test_file()?;
        let size = working_set(io, target, tf.laid_out, default_size)?;
        if io.direct && tf.direct_ok && io.block_size % u64::from(target.direct_align) != 0 {
            return Err(TargetError::Misaligned {
                bs: io.block_size,
                align: target.direct_align,
                path: target.path().to_path_buf(),
            }
            .into());
        }
        let (path, direct_ok) = (tf.path.clone(), tf.direct_ok);
        self.lay_out(size)?;
        if !(io.direct && direct_ok) {
            let ram = crate::system::ram_bytes().unwrap_or(0);
            if size <= ram {
                self.sink.note(&format!(
                    "{}: working set {} fits in RAM ({}): buffered figures measure the page cache, not the disk",
                    w.name,
                    crate::units::format_bytes(size),
                    crate::units::format_bytes(ram)
                ));
            }
        }
        Ok(IoFile {
            path,
            offset: 0,
            size,
            direct_ok,
            verify: None,
        })
    }

    /// `--precondition`: the working set of the first IO workload (all of a device) written
    /// twice over, stored as a workload of its own (`precondition`: its time and bytes).
    fn precondition(&mut self, p: crate::spec::Precondition, suite: &Suite) -> Result<(), Stop> {
        let Some(first) = suite.workloads.iter().find_map(Workload::io) else {
            return Ok(());
        };
        let w = p.workload(first.size);
        let WorkloadKind::Io(io) = &w.kind else {
            return Ok(());
        };
        let file = self.io_file(&w, io)?;
        self.records.push(WorkloadRecord {
            workload: w.clone(),
            trials: Vec::new(),
        });
        let index = self.records.len() - 1;
        self.check_stop()?;
        self.sink.trial_start(index, &w, 1, 1);
        self.ctl.counters.reset();
        let sample = run_io_trial(io, &file, self.ctl, &w.name, 1)?;
        let bytes: u64 = sample.ops.iter().map(|o| o.bytes).sum();
        let secs = sample.elapsed().as_secs_f64();
        self.keep(&w, sample)?;
        self.sink.note(&format!(
            "precondition: {} over {} twice: {} in {secs:.1} s",
            p.describe(),
            crate::units::format_bytes(file.size),
            crate::units::format_bytes(bytes),
        ));
        Ok(())
    }

    /// A steady-state workload: rounds of one trial each, stored as they finish, until the
    /// last [`crate::spec::STEADY_WINDOW`] meet PTS's rules or the round limit
    /// (`stats::steady` judges; any report judges the stored rounds again).
    fn steady_rounds(&mut self, w: &Workload, io: &IoWorkload, file: &IoFile) -> Result<(), Stop> {
        let Some(st) = io.steady else {
            return self.trials(w, Some(file));
        };
        let round = IoWorkload {
            runtime: Some(st.round),
            total_bytes: None,
            steady: None,
            ..io.clone()
        };
        self.records.push(WorkloadRecord {
            workload: w.clone(),
            trials: Vec::new(),
        });
        let index = self.records.len() - 1;
        let mut judged = None;
        // Each round continues the one before (see `run_io_round`).
        let mut cursors: Option<Vec<u64>> = None;
        for n in 1..=st.max_rounds {
            self.check_stop()?;
            self.sink.trial_start(index, w, n, st.max_rounds);
            self.ctl.counters.reset();
            let (sample, next) =
                run_io_round(&round, file, self.ctl, &w.name, n, cursors.as_deref())?;
            cursors = Some(next);
            self.keep(w, sample)?;
            let j = crate::stats::steady::judge_trials(st.figure, &self.records[index].trials);
            let done = j.steady_at.is_some();
            judged = Some(j);
            if done {
                break;
            }
        }
        if let Some(j) = judged {
            self.sink.note(&format!("{}: {}", w.name, j.describe()));
        }
        Ok(())
    }

    fn workload(&mut self, w: &Workload) -> Result<(), Stop> {
        self.check_stop()?;
        match &w.kind {
            WorkloadKind::Io(io) if io.steady.is_some() => {
                let file = self.io_file(w, io)?;
                if self.opts.verify.is_some() {
                    return Err(anyhow::anyhow!(
                        "{}: --verify and --steady-state do not combine; run them separately",
                        w.name
                    )
                    .into());
                }
                self.steady_rounds(w, io, &file)
            }
            WorkloadKind::Io(io) if io.slo.is_some() => {
                let file = self.io_file(w, io)?;
                if self.opts.verify.is_some() {
                    return Err(anyhow::anyhow!(
                        "{}: --verify and --slo do not combine (the search runs many short trials at chosen rates); run them separately",
                        w.name
                    )
                    .into());
                }
                self.slo_search(w, io, &file)
            }
            WorkloadKind::Io(io) => {
                let mut file = self.io_file(w, io)?;
                let Some(mode) = self
                    .opts
                    .verify
                    .filter(|_| io.engine != crate::spec::EngineKind::Null)
                else {
                    return self.trials(w, Some(&file));
                };
                if io.block_size < super::verify::MIN_VERIFY_BLOCK {
                    return Err(anyhow::anyhow!(
                        "{}: --verify needs blocks of at least {} bytes to hold the header; raise --bs",
                        w.name,
                        super::verify::MIN_VERIFY_BLOCK
                    )
                    .into());
                }
                let (table, fresh) = self.verify_table(io, &file, mode)?;
                file.verify = Some(table.clone());
                if fresh {
                    // Write the whole working set once with headers, so every block is known.
                    self.verify_pass(w, io, &file, Pattern::Write, "verify-fill")?;
                }
                self.verify = Some(table.clone());
                self.trials(w, Some(&file))?;
                if let (VerifyMode::Write, Some(state)) = (mode, &self.opts.verify_state) {
                    table.save(state).map_err(|e| {
                        anyhow::anyhow!("cannot save the verify state to {}: {e}", state.display())
                    })?;
                }
                if mode != VerifyMode::Write {
                    self.verify_pass(w, io, &file, Pattern::Read, "verify-read")?;
                }
                self.check_verified(w)
            }
            WorkloadKind::CachedRead(cr) => {
                self.test_file()?;
                self.lay_out(cr.block_size.max(1 << 20))?;
                self.trials(w, None)
            }
            WorkloadKind::SmallFiles(_) => self.trials(w, None),
        }
    }

    /// The generation table for a workload: the current one when it fits, a saved one (read
    /// mode, or a write run continuing an earlier one), or a new one — `fresh` when new, so the
    /// working set must first be filled with headers.
    fn verify_table(
        &mut self,
        io: &IoWorkload,
        file: &IoFile,
        mode: VerifyMode,
    ) -> Result<(Arc<VerifyTable>, bool), Stop> {
        if let Some(t) = &self.verify {
            if t.block_size == io.block_size && t.blocks() == file.size / io.block_size {
                return Ok((t.clone(), false));
            }
        }
        if mode == VerifyMode::Write {
            // A later write run continues the generations of an earlier one, so a block that
            // silently keeps an old copy is caught as a lost write.
            if let Some(t) = self
                .opts
                .verify_state
                .as_ref()
                .and_then(|p| VerifyTable::load(p).ok())
            {
                if t.block_size == io.block_size && t.blocks() == file.size / io.block_size {
                    return Ok((Arc::new(t), false));
                }
            }
        }
        if mode == VerifyMode::Read {
            let Some(state) = &self.opts.verify_state else {
                return Err(anyhow::anyhow!(
                    "--verify read needs --verify-state FILE written by an earlier --verify write"
                )
                .into());
            };
            let t = VerifyTable::load(state)
                .map_err(|e| anyhow::anyhow!("cannot load the verify state: {e}"))?;
            if t.block_size != io.block_size || t.blocks() != file.size / io.block_size {
                return Err(anyhow::anyhow!(
                    "the verify state {} was written with bs {} over {} blocks; run with the same --bs and --size",
                    state.display(),
                    t.block_size,
                    t.blocks()
                )
                .into());
            }
            return Ok((Arc::new(t), false));
        }
        let seed = io.seed ^ crate::sample::now_unix_ms();
        Ok((
            Arc::new(VerifyTable::new(
                seed,
                io.block_size,
                file.offset,
                file.size,
            )),
            true,
        ))
    }

    /// One sequential pass over the whole working set, writing headers or checking them,
    /// kept as a workload of its own so its speed (the cost of verifying) is on record.
    fn verify_pass(
        &mut self,
        w: &Workload,
        io: &IoWorkload,
        file: &IoFile,
        pattern: Pattern,
        what: &str,
    ) -> Result<(), Stop> {
        let pass = Workload {
            name: format!("{}:{what}", w.name),
            drop_caches: pattern == Pattern::Read,
            kind: WorkloadKind::Io(IoWorkload {
                pattern,
                queue_depth: io.queue_depth.clamp(1, 32),
                total_bytes: Some(file.size),
                runtime: None,
                ramp: std::time::Duration::ZERO,
                read_pct: 100,
                fsync_every: 0,
                fsync_at_end: pattern == Pattern::Write,
                ..io.clone()
            }),
        };
        self.check_stop()?;
        let WorkloadKind::Io(pio) = &pass.kind else {
            unreachable!("built above")
        };
        self.records.push(WorkloadRecord {
            workload: pass.clone(),
            trials: Vec::new(),
        });
        self.sink.trial_start(self.records.len() - 1, &pass, 1, 1);
        self.ctl.counters.reset();
        let sample = run_io_trial(pio, file, self.ctl, &pass.name, 1)?;
        self.keep(&pass, sample)
    }

    /// Fails the suite when any trial of the last workloads found bad blocks.
    fn check_verified(&self, w: &Workload) -> Result<(), Stop> {
        // The read-back pass checks every block once: its count is the one to quote. Without it
        // (write mode), what the workload's own reads saw.
        let read_back = format!("{}:verify-read", w.name);
        let has_read_back = self.records.iter().any(|r| r.workload.name == read_back);
        let mut total = crate::sample::VerifySummary::default();
        let counted = |name: &str| {
            if has_read_back {
                name == read_back
            } else {
                name == w.name
            }
        };
        for r in self.records.iter().filter(|r| counted(&r.workload.name)) {
            for t in &r.trials {
                if let Some(v) = &t.verify {
                    total.merge(v.clone());
                }
            }
        }
        if total.bad() > 0 {
            return Err(anyhow::anyhow!("{}: {}", w.name, total.describe()).into());
        }
        Ok(())
    }

    fn keep(&mut self, w: &Workload, sample: TrialSample) -> Result<(), Stop> {
        if self.stopped() {
            // A trial cut short by Ctrl-C is not a full trial: keep the finished ones only.
            return Err(Stop::Interrupted);
        }
        let index = self.records.len() - 1;
        let stored = self.sink.trial_done(index, w, &sample);
        if let Some(r) = self.records.last_mut() {
            r.trials.push(sample);
        }
        stored.map_err(Stop::Failed)
    }

    /// A workload with latency targets: the search's trials at the rates it picks, every one
    /// stored as it finishes (`runner::slo`).
    fn slo_search(&mut self, w: &Workload, io: &IoWorkload, file: &IoFile) -> Result<(), Stop> {
        let Some(slo) = &io.slo else {
            return self.trials(w, Some(file));
        };
        self.records.push(WorkloadRecord {
            workload: w.clone(),
            trials: Vec::new(),
        });
        let index = self.records.len() - 1;
        let planned = super::slo::planned_trials(slo);
        let mut n = 0u32;
        let answer = super::slo::search(io, slo, |sw: &IoWorkload| -> Result<TrialSample, Stop> {
            n += 1;
            self.check_stop()?;
            self.sink.trial_start(index, w, n, planned.max(n));
            self.ctl.counters.reset();
            let sample = run_io_trial(sw, file, self.ctl, &w.name, n)?;
            self.keep(w, sample.clone())?;
            Ok(sample)
        })?;
        self.sink
            .note(&format!("{}: {}", w.name, answer.describe()));
        Ok(())
    }

    fn trials(&mut self, w: &Workload, file: Option<&IoFile>) -> Result<(), Stop> {
        self.records.push(WorkloadRecord {
            workload: w.clone(),
            trials: Vec::new(),
        });
        let index = self.records.len() - 1;
        let planned = self.opts.repeat.max(1);
        let mut trial = 0u32;
        loop {
            trial += 1;
            self.check_stop()?;
            // O_DIRECT IO never reads the page cache: dropping it (every cache on the machine)
            // would only cost time and disturb the machine. A workload's own `drop_caches`
            // key is always honoured.
            let cached = !matches!(&w.kind, WorkloadKind::Io(io) if io.direct);
            if (self.opts.drop_caches && cached) || w.drop_caches {
                if let Err(msg) = crate::system::drop_caches() {
                    if !self.said_no_drop {
                        self.sink.note(&msg);
                        self.said_no_drop = true;
                    }
                }
            }
            self.sink.trial_start(index, w, trial, planned);
            crate::pause::at("trial started");
            self.ctl.counters.reset();
            let sample = match (&w.kind, file) {
                (WorkloadKind::Io(io), Some(f)) => run_io_trial(io, f, self.ctl, &w.name, trial)?,
                (WorkloadKind::SmallFiles(sf), _) => super::smallfile::run_smallfile_trial(
                    sf,
                    self.target.path(),
                    self.ctl,
                    &w.name,
                    trial,
                )?,
                (WorkloadKind::CachedRead(cr), _) => {
                    let path = self
                        .test_file
                        .as_ref()
                        .map_or_else(|| self.target.path().to_path_buf(), |t| t.path.clone());
                    super::cached::run_cached_trial(cr, &path, self.ctl, &w.name, trial).map_err(
                        |e| anyhow::anyhow!("{}: cached reads of {}: {e}", w.name, path.display()),
                    )?
                }
                (WorkloadKind::Io(_), None) => unreachable!("IO workloads always get a file"),
            };
            self.keep(w, sample)?;
            let rec = &self.records[index];
            if trial >= planned && !needs_more(rec, self.opts) {
                return Ok(());
            }
            if trial >= self.opts.max_repeat.max(planned) {
                return Ok(());
            }
        }
    }
}

/// With `--until-stable`, whether the headline figure's CI is still too wide.
fn needs_more(rec: &WorkloadRecord, opts: &SuiteOptions) -> bool {
    let Some(pct) = opts.until_stable else {
        return false;
    };
    !crate::stats::is_stable(&rec.headline_values(), pct)
}

/// Rough time a suite will take, for the ETA.
pub fn estimate(suite: &Suite, opts: &SuiteOptions) -> Duration {
    suite
        .workloads
        .iter()
        .map(|w| match &w.kind {
            // A search runs its own number of trials, within its budget.
            WorkloadKind::Io(io) if io.slo.is_some() => {
                let slo = io.slo.as_ref().expect("matched");
                let one = super::slo::trial_window(io, slo) + io.ramp;
                let all = one * super::slo::planned_trials(slo);
                slo.budget.map_or(all, |b| all.min(b))
            }
            // Steady state: at least a window of rounds (the bar may then grow).
            WorkloadKind::Io(io) if io.steady.is_some() => {
                let st = io.steady.expect("matched");
                (st.round + io.ramp) * crate::spec::STEADY_WINDOW as u32
            }
            WorkloadKind::Io(io) => super::io::expected_duration(io) * opts.repeat.max(1),
            WorkloadKind::CachedRead(c) => c.runtime * opts.repeat.max(1),
            WorkloadKind::SmallFiles(_) => Duration::from_secs(10) * opts.repeat.max(1),
        })
        .sum()
}
