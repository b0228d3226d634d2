//! The unvalidated form of a workload: every field optional, as it comes from a spec file or
//! from command-line flags. `validate` is the one place that decides what is allowed.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::SpecError;
use super::access::BsSplit;
use super::locate::{SizeValue, TimeValue};
use super::replay::OffsetMap;
use super::workload::{
    Arrivals, CachedReadWorkload, DataKind, EngineKind, IoWorkload, OpenLoop, Pattern, Rate,
    STEADY_MAX_ROUNDS, STEADY_ROUND, STEADY_WINDOW, Slo, SmallFileWorkload, SteadyFigure,
    SteadyState, SyncKind, WaitMode, Workload, WorkloadKind,
};
use crate::units;

/// One workload as written: every field optional, unknown fields refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// Name in tables (default: derived from the parameters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `read|write|randread|randwrite|randrw|smallfile|cached-read`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Block size per IO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bs: Option<SizeValue>,
    /// Queue depth per thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qd: Option<u32>,
    /// Worker threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Working set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<SizeValue>,
    /// Run time (ramp excluded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeValue>,
    /// Total bytes to move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_size: Option<SizeValue>,
    /// Warm-up time not counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<TimeValue>,
    /// O_DIRECT (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// Reads in a randrw mix, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_pct: Option<u32>,
    /// Flush after every N writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_every: Option<u32>,
    /// Flush once at the end, timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_at_end: Option<bool>,
    /// `fdatasync` or `fsync`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<String>,
    /// `random` or `zero`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Seed for offsets, sizes and content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `io_uring`, `psync` or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// `auto`, `spin` or `block`: how io_uring completions are waited for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<String>,
    /// Open loop: `5000` (IOPS) or `200MiB` (bytes per second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// Open loop: `fixed` or `poisson` arrivals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    /// Open loop: the rate is `total` (all threads, the default) or per `thread`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per: Option<String>,
    /// Latency targets to find the highest sustained rate for: `p99<=2ms`, `read:p99.9<=10ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    /// Time the SLO search may take in all (`5m`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<TimeValue>,
    /// The SLO search stops when the capacity is bracketed this closely (0.05: within 5%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_precision: Option<f64>,
    /// Drop the page cache before the workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop_caches: Option<bool>,
    /// Small files: number of files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    /// Small files: number of directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirs: Option<u32>,
    /// Small files: smallest file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_file_size: Option<SizeValue>,
    /// Small files: largest file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_file_size: Option<SizeValue>,
    /// Small files: fsync each file (bonnie++ -b).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync: Option<bool>,
    /// Small files: fsync the directory after each create and delete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_dir: Option<bool>,
    /// A block-size mix (fio `bssplit`): `8k/50:128k/50`, or reads and writes apart:
    /// `8k/50:128k/50,4k/100`. Replaces `bs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bssplit: Option<String>,
    /// How random offsets spread (fio `random_distribution`): `random`, `zipf:1.2`,
    /// `pareto:0.8`, `normal:10`, `zoned:60/10:30/20:10/70`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_distribution: Option<String>,
    /// Pause after each completion before the next IO (fio `thinktime`), e.g. `200us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinktime: Option<TimeValue>,
    /// Bytes skipped after each sequential IO (fio `rw=write:112k`: holes): `112k`; negative
    /// steps back (`-8k` with `bs = 4k` reads backwards, fio `rw=read:-8k`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip: Option<SizeValue>,
    /// Passes over the working set (or `io_size`) per trial (fio `loops`); with `replay`,
    /// times the trace is replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loops: Option<u32>,
    /// Replay this trace file (`iolab capture`): its IOs at their recorded times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// Replay speed (2: twice as fast as recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Replay in order as fast as the recorded in-flight counts allow, ignoring the times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_fast_as_possible: Option<bool>,
    /// Replay offsets onto a smaller target: `exact` (refuse), `wrap` or `scale`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_map: Option<String>,
    /// Rounds until steady by SNIA PTS's rules: `true` or `"iops"`, `"bw"`, `"lat"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyValue>,
    /// One steady-state round's length (PTS: 60s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<TimeValue>,
    /// Steady-state rounds at most (PTS: 25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
}

/// `steady_state = true` or the figure's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SteadyValue {
    /// `true`: on IOPS; `false`: off.
    Flag(bool),
    /// `iops`, `bw` or `lat`.
    Figure(String),
}

/// Largest queue depth accepted (io_uring rings hold at most 32768 entries).
pub(super) const MAX_QUEUE_DEPTH: u32 = 32768;
/// Highest open-loop rate accepted: beyond ~10 M IOPS the schedule's own cost dominates.
pub(super) const MAX_RATE_IOPS: f64 = 10_000_000.0;
/// Largest thread count accepted.
pub(super) const MAX_THREADS: u32 = 1024;
/// Largest block size accepted (bigger IOs are split by the kernel anyway).
pub(super) const MAX_BLOCK_SIZE: u64 = 256 << 20;

impl RawWorkload {
    /// Fills unset fields from `base` (flags over a profile, a workload over spec defaults).
    pub fn or(mut self, base: &RawWorkload) -> RawWorkload {
        macro_rules! fill {
            ($($f:ident),*) => { $( if self.$f.is_none() { self.$f = base.$f.clone(); } )* };
        }
        fill!(
            name,
            pattern,
            bs,
            qd,
            threads,
            size,
            time,
            io_size,
            ramp,
            direct,
            read_pct,
            fsync_every,
            fsync_at_end,
            sync,
            data,
            seed,
            engine,
            wait,
            rate,
            arrivals,
            rate_per,
            slo,
            budget,
            slo_precision,
            drop_caches,
            files,
            dirs,
            min_file_size,
            max_file_size,
            fsync,
            fsync_dir,
            bssplit,
            random_distribution,
            thinktime,
            skip,
            loops,
            replay,
            speed,
            as_fast_as_possible,
            replay_map,
            steady_state,
            round,
            max_rounds
        );
        self
    }

    /// Checks every field and builds the workload; the error names the field.
    pub fn validate(&self) -> Result<Workload, SpecError> {
        let pattern = self.pattern.as_deref().unwrap_or("randread");
        let kind = match pattern.to_ascii_lowercase().as_str() {
            "smallfile" | "smallfiles" | "small-file" => {
                self.block_io_only(pattern)?;
                WorkloadKind::SmallFiles(self.small_files()?)
            }
            "cached-read" | "cachedread" | "cached_read" => {
                self.block_io_only(pattern)?;
                WorkloadKind::CachedRead(self.cached_read()?)
            }
            _ => WorkloadKind::Io(self.io(pattern)?),
        };
        let name = match &self.name {
            Some(n) if n.trim().is_empty() => {
                return Err(SpecError::field("name", "must not be empty"));
            }
            Some(n) => n.clone(),
            None => default_name(&kind),
        };
        Ok(Workload {
            name,
            drop_caches: self.drop_caches.unwrap_or(false),
            kind,
        })
    }

    fn io(&self, pattern: &str) -> Result<IoWorkload, SpecError> {
        let d = IoWorkload::default();
        let pattern = Pattern::parse(pattern).ok_or_else(|| {
            SpecError::field(
                "pattern",
                format!("unknown pattern '{pattern}' (use read, write, randread, randwrite, randrw, smallfile or cached-read)"),
            )
        })?;
        let bssplit = self.bssplit()?;
        let (block_size, queue_depth) = self.block_and_depth(&d, bssplit.as_ref())?;
        let threads = self.threads(d.threads)?;
        let size = opt_size(&self.size, "size")?;
        if let Some(s) = size {
            if s < block_size {
                return Err(SpecError::field(
                    "size",
                    format!(
                        "working set ({s} bytes) is smaller than one block ({block_size} bytes); raise size or lower bs"
                    ),
                ));
            }
        }
        let runtime = opt_time(&self.time, "time")?;
        if runtime == Some(Duration::ZERO) {
            return Err(SpecError::field("time", "run time must be more than 0"));
        }
        let total_bytes = opt_size(&self.io_size, "io_size")?;
        if total_bytes == Some(0) {
            return Err(SpecError::field("io_size", "must be more than 0"));
        }
        let ramp = opt_time(&self.ramp, "ramp")?.unwrap_or(Duration::ZERO);
        let read_pct = self.read_pct.unwrap_or(u32::from(d.read_pct));
        if read_pct > 100 {
            return Err(SpecError::field("read_pct", "must be between 0 and 100"));
        }
        let (sync_kind, data, engine, wait) = self.io_choices(&d)?;
        let (fsync_every, fsync_at_end) = self.fsync_flags(pattern)?;
        let (open_loop, slo) = if self.slo.is_some() {
            (None, Some(self.slo()?))
        } else {
            (self.open_loop()?, None)
        };
        let (distribution, think_time, loops) =
            self.access(pattern, open_loop.is_some() || slo.is_some())?;
        let skip = self.skip(pattern, bssplit.is_some())?;
        let replay = self.replay(runtime, total_bytes, open_loop.is_some() || slo.is_some())?;
        if replay.is_some()
            && (bssplit.is_some()
                || !distribution.is_uniform()
                || think_time.is_some()
                || skip != 0)
        {
            return Err(SpecError::field(
                "replay",
                "a replay issues the trace's own IOs: drop bssplit, random_distribution, thinktime and skip",
            ));
        }
        let steady = self.steady(open_loop.is_some() || slo.is_some() || replay.is_some())?;
        Ok(IoWorkload {
            pattern,
            block_size,
            queue_depth,
            threads,
            size,
            runtime,
            total_bytes,
            ramp,
            direct: self.direct.unwrap_or(true),
            read_pct: read_pct as u8,
            fsync_every,
            fsync_at_end,
            sync_kind,
            data,
            seed: self.seed.unwrap_or(d.seed),
            engine,
            wait,
            open_loop,
            slo,
            bssplit: bssplit.map(Box::new),
            distribution,
            think_time,
            skip,
            loops,
            replay: replay.map(Box::new),
            steady,
        })
    }

    /// The block size (the largest of a `bssplit`, else `bs`) and the queue depth, each
    /// within what the engine can issue.
    fn block_and_depth(
        &self,
        d: &IoWorkload,
        bssplit: Option<&BsSplit>,
    ) -> Result<(u64, u32), SpecError> {
        let block_size = match bssplit {
            Some(b) => b.max_size(),
            None => opt_size(&self.bs, "bs")?.unwrap_or(d.block_size),
        };
        if block_size == 0 {
            return Err(SpecError::field(
                "bs",
                "block size must be at least 1 byte (e.g. 4k)",
            ));
        }
        if block_size > MAX_BLOCK_SIZE {
            return Err(SpecError::field("bs", "block size must be at most 256MiB"));
        }
        let queue_depth = self.qd.unwrap_or(d.queue_depth);
        if queue_depth == 0 || queue_depth > MAX_QUEUE_DEPTH {
            return Err(SpecError::field(
                "qd",
                format!("queue depth must be between 1 and {MAX_QUEUE_DEPTH}"),
            ));
        }
        Ok((block_size, queue_depth))
    }

    /// `fsync_every` and `fsync_at_end`, refused on a pattern that writes nothing to flush.
    fn fsync_flags(&self, pattern: Pattern) -> Result<(u32, bool), SpecError> {
        let fsync_every = self.fsync_every.unwrap_or(0);
        let fsync_at_end = self.fsync_at_end.unwrap_or(false);
        if (fsync_every > 0 || fsync_at_end) && !pattern.writes() {
            return Err(SpecError::field(
                if fsync_every > 0 {
                    "fsync_every"
                } else {
                    "fsync_at_end"
                },
                format!(
                    "a {} workload writes nothing to flush; use a write pattern or drop the flag",
                    pattern.name()
                ),
            ));
        }
        Ok((fsync_every, fsync_at_end))
    }

    /// The steady-state rounds, when asked: the figure, the round length and the limit.
    pub(crate) fn steady(&self, scheduled: bool) -> Result<Option<SteadyState>, SpecError> {
        let figure = match &self.steady_state {
            None | Some(SteadyValue::Flag(false)) => {
                if self.round.is_some() || self.max_rounds.is_some() {
                    return Err(SpecError::field(
                        if self.round.is_some() {
                            "round"
                        } else {
                            "max_rounds"
                        },
                        "rounds belong to a steady-state run: add steady_state = true (--steady-state)",
                    ));
                }
                return Ok(None);
            }
            Some(SteadyValue::Flag(true)) => SteadyFigure::Iops,
            Some(SteadyValue::Figure(f)) => SteadyFigure::parse(f).ok_or_else(|| {
                SpecError::field(
                    "steady_state",
                    format!("unknown figure '{f}' (use iops, bw or lat)"),
                )
            })?,
        };
        if scheduled {
            return Err(SpecError::field(
                "steady_state",
                "steady-state rounds run the workload closed-loop: drop rate, slo or replay",
            ));
        }
        if self.io_size.is_some() {
            return Err(SpecError::field(
                "io_size",
                "a steady-state run is timed by its rounds: drop io_size, set round (e.g. 60s)",
            ));
        }
        // Without `round`, a `time` is the round's length.
        let round = match opt_time(&self.round, "round")? {
            Some(r) => r,
            None => opt_time(&self.time, "time")?.unwrap_or(STEADY_ROUND),
        };
        if round.is_zero() {
            return Err(SpecError::field("round", "must be more than 0 (e.g. 60s)"));
        }
        let max_rounds = self.max_rounds.unwrap_or(STEADY_MAX_ROUNDS);
        if (max_rounds as usize) < STEADY_WINDOW {
            return Err(SpecError::field(
                "max_rounds",
                format!(
                    "must be at least {STEADY_WINDOW}: PTS judges a window of {STEADY_WINDOW} rounds"
                ),
            ));
        }
        Ok(Some(SteadyState {
            figure,
            round,
            max_rounds,
        }))
    }

    /// The SLO search's settings: the targets, its budget and precision, its arrivals.
    pub(crate) fn slo(&self) -> Result<Slo, SpecError> {
        let text = self.slo.as_deref().unwrap_or_default();
        let targets = Slo::parse_targets(text).map_err(|e| SpecError::field("slo", e))?;
        if self.rate.is_some() {
            return Err(SpecError::field(
                "rate",
                "the SLO search chooses the rates itself: drop rate, or drop slo to run at one rate",
            ));
        }
        if self.rate_per.is_some() {
            return Err(SpecError::field(
                "rate_per",
                "the SLO search's rates are always the total of all threads: drop rate_per",
            ));
        }
        let budget = opt_time(&self.budget, "budget")?;
        if budget == Some(Duration::ZERO) {
            return Err(SpecError::field("budget", "must be more than 0 (e.g. 5m)"));
        }
        let precision = self.slo_precision.unwrap_or(0.05);
        if !(precision > 0.0 && precision < 1.0) {
            return Err(SpecError::field(
                "slo_precision",
                "must be between 0 and 1 (0.05: the capacity within 5%)",
            ));
        }
        let arrivals = match self.arrivals.as_deref() {
            None => Arrivals::Fixed,
            Some(a) => Arrivals::parse(a).ok_or_else(|| {
                SpecError::field(
                    "arrivals",
                    format!("unknown arrivals '{a}' (use fixed or poisson)"),
                )
            })?,
        };
        Ok(Slo {
            targets,
            budget,
            precision,
            edge_trials: 3,
            arrivals,
        })
    }

    /// Refuses the keys that only block IO patterns have.
    fn block_io_only(&self, pattern: &str) -> Result<(), SpecError> {
        if self.rate.is_some() || self.slo.is_some() {
            return Err(SpecError::field(
                if self.rate.is_some() { "rate" } else { "slo" },
                format!(
                    "an open-loop rate applies to block IO patterns, not {pattern} (use read, write, randread, randwrite or randrw)"
                ),
            ));
        }
        Ok(())
    }

    /// The open-loop settings, when a rate is given; arrivals or a scope without one are refused.
    fn open_loop(&self) -> Result<Option<OpenLoop>, SpecError> {
        let Some(r) = self.rate.as_deref() else {
            if self.arrivals.is_some() || self.rate_per.is_some() {
                return Err(SpecError::field(
                    if self.arrivals.is_some() {
                        "arrivals"
                    } else {
                        "rate_per"
                    },
                    "applies to an open loop only: give a rate too (e.g. rate = 5000)",
                ));
            }
            return Ok(None);
        };
        let rate = Rate::parse(r).ok_or_else(|| {
            SpecError::field(
                "rate",
                format!(
                    "'{r}' is not a rate (use IOPS, e.g. 5000, or bytes per second, e.g. 200MiB)"
                ),
            )
        })?;
        let positive = match rate {
            Rate::Iops(n) => n.is_finite() && n > 0.0,
            Rate::BytesPerSec(b) => b > 0,
        };
        if !positive {
            return Err(SpecError::field("rate", "must be more than 0"));
        }
        if matches!(rate, Rate::Iops(n) if n > MAX_RATE_IOPS) {
            return Err(SpecError::field(
                "rate",
                format!("more than {MAX_RATE_IOPS} IOPS cannot be scheduled one IO at a time"),
            ));
        }
        let arrivals = match self.arrivals.as_deref() {
            None => Arrivals::Fixed,
            Some(a) => Arrivals::parse(a).ok_or_else(|| {
                SpecError::field(
                    "arrivals",
                    format!("unknown arrivals '{a}' (use fixed or poisson)"),
                )
            })?,
        };
        let per_thread = match self.rate_per.as_deref() {
            None | Some("total") => false,
            Some("thread") => true,
            Some(o) => {
                return Err(SpecError::field(
                    "rate_per",
                    format!("unknown scope '{o}' (use total or thread)"),
                ));
            }
        };
        Ok(Some(OpenLoop {
            rate,
            arrivals,
            per_thread,
        }))
    }

    /// The named choices of an IO workload: flush call, data, engine, wait mode.
    fn io_choices(
        &self,
        d: &IoWorkload,
    ) -> Result<(SyncKind, DataKind, EngineKind, WaitMode), SpecError> {
        let sync_kind = match self.sync.as_deref() {
            None => d.sync_kind,
            Some("fdatasync") => SyncKind::Fdatasync,
            Some("fsync") => SyncKind::Fsync,
            Some(o) => {
                return Err(SpecError::field(
                    "sync",
                    format!("unknown sync call '{o}' (use fdatasync or fsync)"),
                ));
            }
        };
        let data = match self.data.as_deref() {
            None => d.data,
            Some("random") => DataKind::Random,
            Some("zero" | "zeros") => DataKind::Zero,
            Some(o) => {
                return Err(SpecError::field(
                    "data",
                    format!("unknown data '{o}' (use random or zero)"),
                ));
            }
        };
        let engine = match self.engine.as_deref() {
            None => d.engine,
            Some(e) => EngineKind::parse(e).ok_or_else(|| {
                SpecError::field(
                    "engine",
                    format!("unknown engine '{e}' (use io_uring, psync or null)"),
                )
            })?,
        };
        let wait = match self.wait.as_deref() {
            None => d.wait,
            Some(m) => WaitMode::parse(m).ok_or_else(|| {
                SpecError::field(
                    "wait",
                    format!("unknown wait mode '{m}' (use auto, spin or block)"),
                )
            })?,
        };
        Ok((sync_kind, data, engine, wait))
    }

    fn threads(&self, default: u32) -> Result<u32, SpecError> {
        let t = self.threads.unwrap_or(default);
        if t == 0 || t > MAX_THREADS {
            return Err(SpecError::field(
                "threads",
                format!("must be between 1 and {MAX_THREADS}"),
            ));
        }
        Ok(t)
    }

    fn small_files(&self) -> Result<SmallFileWorkload, SpecError> {
        let files = self.files.unwrap_or(1024);
        if files == 0 {
            return Err(SpecError::field("files", "must be at least 1"));
        }
        let dirs = self.dirs.unwrap_or(16);
        if dirs == 0 {
            return Err(SpecError::field("dirs", "must be at least 1"));
        }
        let threads = self.threads(1)?;
        if dirs < threads {
            return Err(SpecError::field(
                "dirs",
                format!(
                    "each thread owns its own directories: dirs ({dirs}) must be at least threads ({threads})"
                ),
            ));
        }
        let min_size = opt_size(&self.min_file_size, "min_file_size")?.unwrap_or(500);
        let max_size = opt_size(&self.max_file_size, "max_file_size")?.unwrap_or(25000);
        if min_size > max_size {
            return Err(SpecError::field(
                "min_file_size",
                format!("min_file_size ({min_size}) is larger than max_file_size ({max_size})"),
            ));
        }
        if max_size > 1 << 30 {
            return Err(SpecError::field(
                "max_file_size",
                "small files must be at most 1GiB each",
            ));
        }
        Ok(SmallFileWorkload {
            files,
            dirs,
            min_size,
            max_size,
            fsync: self.fsync.unwrap_or(false),
            fsync_dir: self.fsync_dir.unwrap_or(false),
            threads,
            seed: self.seed.unwrap_or(IoWorkload::default().seed),
        })
    }

    fn cached_read(&self) -> Result<CachedReadWorkload, SpecError> {
        let block_size = opt_size(&self.bs, "bs")?.unwrap_or(2 << 20);
        if block_size == 0 || block_size > MAX_BLOCK_SIZE {
            return Err(SpecError::field(
                "bs",
                "block size must be between 1 byte and 256MiB",
            ));
        }
        let runtime = opt_time(&self.time, "time")?.unwrap_or(Duration::from_secs(2));
        if runtime.is_zero() {
            return Err(SpecError::field("time", "run time must be more than 0"));
        }
        Ok(CachedReadWorkload {
            block_size,
            runtime,
        })
    }

    /// The raw form of a validated workload: what `iolab profiles --show` prints.
    pub fn from_workload(w: &Workload) -> RawWorkload {
        let mut r = RawWorkload {
            name: Some(w.name.clone()),
            drop_caches: w.drop_caches.then_some(true),
            ..Default::default()
        };
        match &w.kind {
            WorkloadKind::Io(io) => io_fields(&mut r, io),
            WorkloadKind::SmallFiles(s) => {
                r.pattern = Some("smallfile".into());
                r.files = Some(s.files);
                r.dirs = Some(s.dirs);
                r.min_file_size = Some(SizeValue::from_bytes(s.min_size));
                r.max_file_size = Some(SizeValue::from_bytes(s.max_size));
                r.fsync = Some(s.fsync);
                r.fsync_dir = s.fsync_dir.then_some(true);
                r.threads = Some(s.threads);
            }
            WorkloadKind::CachedRead(c) => {
                r.pattern = Some("cached-read".into());
                r.bs = exact_size(c.block_size);
                r.time = human_time(c.runtime);
            }
        }
        r
    }
}

/// Human units where they are exact, plain bytes otherwise, so the spec reads back equal.
fn exact_size(b: u64) -> Option<SizeValue> {
    let t = units::format_bytes(b);
    Some(if units::parse_bytes(&t) == Ok(b) {
        SizeValue::Text(t)
    } else {
        SizeValue::from_bytes(b)
    })
}

/// A duration as the spec writes it (`30s`, `1m30s`).
fn human_time(d: Duration) -> Option<TimeValue> {
    Some(TimeValue::Text(crate::units::HumanDuration(d).to_string()))
}

/// A block-IO workload's fields in their raw form (the defaults left out).
fn io_fields(r: &mut RawWorkload, io: &IoWorkload) {
    let d = IoWorkload::default();
    r.pattern = Some(io.pattern.name().to_string());
    r.bs = exact_size(io.block_size);
    r.qd = Some(io.queue_depth);
    r.threads = Some(io.threads);
    r.size = io.size.and_then(exact_size);
    r.time = io.runtime.and_then(human_time);
    r.io_size = io.total_bytes.and_then(exact_size);
    r.ramp = (!io.ramp.is_zero()).then(|| human_time(io.ramp)).flatten();
    r.direct = (!io.direct).then_some(false);
    r.read_pct = io.pattern.is_mixed().then_some(u32::from(io.read_pct));
    if let Some(b) = &io.bssplit {
        r.bs = None;
        r.bssplit = Some(b.describe());
    }
    r.random_distribution = (!io.distribution.is_uniform()).then(|| io.distribution.describe());
    r.thinktime = io
        .think_time
        .map(|t| TimeValue::Text(format!("{}us", t.as_micros())));
    r.skip = (io.skip != 0).then(|| super::holes::skip_value(io.skip));
    r.loops = (io.loops > 1).then_some(io.loops);
    if let Some(rp) = &io.replay {
        r.replay = Some(rp.trace.clone());
        r.speed = (rp.speed != 1.0).then_some(rp.speed);
        r.as_fast_as_possible = rp.as_fast_as_possible.then_some(true);
        r.replay_map = (rp.map != OffsetMap::Exact).then(|| rp.map.name().to_string());
    }
    r.fsync_every = (io.fsync_every > 0).then_some(io.fsync_every);
    r.fsync_at_end = io.fsync_at_end.then_some(true);
    r.sync = (io.fsync_every > 0 || io.fsync_at_end).then(|| match io.sync_kind {
        SyncKind::Fdatasync => "fdatasync".to_string(),
        SyncKind::Fsync => "fsync".to_string(),
    });
    r.data = (io.data == DataKind::Zero).then(|| "zero".to_string());
    r.seed = (io.seed != d.seed).then_some(io.seed);
    r.engine = (io.engine != d.engine).then(|| io.engine.name().to_string());
    r.wait = (io.wait != d.wait).then(|| io.wait.name().to_string());
    schedule_fields(r, io);
}

/// An open loop's rate, steady-state rounds and an SLO search in their raw form.
fn schedule_fields(r: &mut RawWorkload, io: &IoWorkload) {
    if let Some(o) = io.open_loop {
        r.rate = Some(match o.rate {
            Rate::Iops(n) => format!("{n}"),
            Rate::BytesPerSec(b) => {
                let t = units::format_bytes(b);
                if units::parse_bytes(&t) == Ok(b) {
                    t
                } else {
                    // A bare number is IOPS: bytes keep their unit.
                    format!("{b}B")
                }
            }
        });
        r.arrivals = (o.arrivals != Arrivals::Fixed).then(|| o.arrivals.name().into());
        r.rate_per = o.per_thread.then(|| "thread".into());
    }
    if let Some(st) = &io.steady {
        r.steady_state = Some(SteadyValue::Figure(st.figure.name().into()));
        r.round = (st.round != STEADY_ROUND)
            .then(|| human_time(st.round))
            .flatten();
        r.max_rounds = (st.max_rounds != STEADY_MAX_ROUNDS).then_some(st.max_rounds);
    }
    if let Some(slo) = &io.slo {
        r.slo = Some(slo.describe());
        r.budget = slo.budget.and_then(human_time);
        r.slo_precision = (slo.precision != 0.05).then_some(slo.precision);
        r.arrivals = (slo.arrivals != Arrivals::Fixed).then(|| slo.arrivals.name().into());
    }
}

fn opt_size(v: &Option<SizeValue>, key: &str) -> Result<Option<u64>, SpecError> {
    v.as_ref()
        .map(|v| v.bytes().map_err(|m| SpecError::field(key, m)))
        .transpose()
}

pub(super) fn opt_time(v: &Option<TimeValue>, key: &str) -> Result<Option<Duration>, SpecError> {
    v.as_ref()
        .map(|v| v.duration().map_err(|m| SpecError::field(key, m)))
        .transpose()
}

fn default_name(kind: &WorkloadKind) -> String {
    match kind {
        WorkloadKind::Io(w) => {
            let mut n = format!(
                "{}-{}-qd{}",
                w.pattern.name(),
                units::format_bytes(w.block_size).to_lowercase(),
                w.queue_depth
            );
            if w.threads > 1 {
                n.push_str(&format!("-t{}", w.threads));
            }
            if w.fsync_every > 0 {
                n.push_str("-sync");
            }
            n
        }
        WorkloadKind::SmallFiles(s) => format!("smallfile-{}", s.files),
        WorkloadKind::CachedRead(_) => "cached-read".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pattern: &str) -> RawWorkload {
        RawWorkload {
            pattern: Some(pattern.into()),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_give_a_4k_randread() {
        let w = RawWorkload::default().validate().unwrap();
        let io = w.io().unwrap();
        assert_eq!(io.pattern, Pattern::RandRead);
        assert_eq!(io.block_size, 4096);
        assert!(io.direct);
        assert_eq!(w.name, "randread-4kib-qd1");
    }

    #[test]
    fn impossible_values_name_their_field() {
        let mut r = raw("randread");
        r.qd = Some(0);
        assert_eq!(r.validate().unwrap_err().key, "qd");
        let mut r = raw("randread");
        r.bs = Some(SizeValue::Bytes(0));
        assert_eq!(r.validate().unwrap_err().key, "bs");
        let mut r = raw("randread");
        r.size = Some(SizeValue::Text("1k".into()));
        r.bs = Some(SizeValue::Text("4k".into()));
        assert_eq!(r.validate().unwrap_err().key, "size");
        assert_eq!(raw("sideways").validate().unwrap_err().key, "pattern");
        let mut r = raw("smallfile");
        r.min_file_size = Some(SizeValue::Bytes(10));
        r.max_file_size = Some(SizeValue::Bytes(5));
        assert_eq!(r.validate().unwrap_err().key, "min_file_size");
        let mut r = raw("read");
        r.fsync_every = Some(1);
        assert_eq!(r.validate().unwrap_err().key, "fsync_every");
    }

    /// `steady_state`: the figure, the round (from `time` when no `round`), the limit; each
    /// wrong combination names its field, and the workload reads back equal through raw.
    #[test]
    fn steady_state_keys_validate_and_read_back() {
        let mut r = raw("randwrite");
        r.steady_state = Some(SteadyValue::Flag(true));
        r.time = Some(TimeValue::Text("2s".into()));
        let w = r.validate().unwrap();
        let st = w.io().unwrap().steady.unwrap();
        assert_eq!(
            (st.figure, st.round, st.max_rounds),
            (
                SteadyFigure::Iops,
                Duration::from_secs(2),
                STEADY_MAX_ROUNDS
            )
        );
        assert_eq!(RawWorkload::from_workload(&w).validate().unwrap(), w);
        let mut r = raw("write");
        r.steady_state = Some(SteadyValue::Figure("bw".into()));
        r.round = Some(TimeValue::Text("10s".into()));
        r.max_rounds = Some(8);
        let w = r.validate().unwrap();
        assert_eq!(RawWorkload::from_workload(&w).validate().unwrap(), w);
        for (set, key) in [
            (
                (|r: &mut RawWorkload| r.steady_state = Some(SteadyValue::Figure("mbps".into())))
                    as fn(&mut RawWorkload),
                "steady_state",
            ),
            (|r| r.round = Some(TimeValue::Text("0s".into())), "round"),
            (|r| r.max_rounds = Some(4), "max_rounds"),
            (|r| r.rate = Some("1000".into()), "steady_state"),
            (
                |r| r.io_size = Some(SizeValue::Text("1g".into())),
                "io_size",
            ),
        ] {
            let mut r = raw("randwrite");
            r.steady_state = Some(SteadyValue::Flag(true));
            set(&mut r);
            assert_eq!(r.validate().unwrap_err().key, key);
        }
        let mut r = raw("randwrite");
        r.round = Some(TimeValue::Text("5s".into()));
        assert_eq!(r.validate().unwrap_err().key, "round");
    }

    #[test]
    fn round_trip_through_raw() {
        let mut r = raw("randrw");
        r.bs = Some(SizeValue::Text("8k".into()));
        r.qd = Some(32);
        r.read_pct = Some(70);
        r.time = Some(TimeValue::Text("10s".into()));
        let w = r.validate().unwrap();
        let back = RawWorkload::from_workload(&w).validate().unwrap();
        assert_eq!(w, back);
    }
}
