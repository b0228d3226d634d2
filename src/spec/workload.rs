//! Validated workload types: what the runners execute.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The access pattern of an IO workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Uniform random reads.
    RandRead,
    /// Uniform random writes.
    RandWrite,
    /// Uniform random mix of reads and writes (`read_pct` reads).
    RandRw,
    /// Sequential mix of reads and writes (fio `rw=rw`): one stream through the working set,
    /// each IO a read (`read_pct`) or a write.
    Rw,
}

impl Pattern {
    /// Parses fio's names (`read`, `write`, `randread`, `randwrite`, `randrw`).
    pub fn parse(s: &str) -> Option<Pattern> {
        Some(match s.to_ascii_lowercase().as_str() {
            "read" | "seqread" => Pattern::Read,
            "write" | "seqwrite" => Pattern::Write,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "randrw" | "mixed" => Pattern::RandRw,
            "rw" | "readwrite" | "seqrw" => Pattern::Rw,
            _ => return None,
        })
    }
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::RandRw => "randrw",
            Pattern::Rw => "rw",
        }
    }
    /// True when the pattern writes anything.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Pattern::Write | Pattern::RandWrite | Pattern::RandRw | Pattern::Rw
        )
    }
    /// True when the pattern reads anything.
    pub fn reads(self) -> bool {
        matches!(
            self,
            Pattern::Read | Pattern::RandRead | Pattern::RandRw | Pattern::Rw
        )
    }
    /// True for a mix of reads and writes (`read_pct` applies).
    pub fn is_mixed(self) -> bool {
        matches!(self, Pattern::RandRw | Pattern::Rw)
    }
    /// True for random offsets.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw
        )
    }
}

/// Which IO engine carries the IOs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum EngineKind {
    /// io_uring with registered files and buffers: the default on Linux.
    #[default]
    #[serde(rename = "io_uring")]
    IoUring,
    /// pread/pwrite, one IO at a time per thread.
    #[serde(rename = "psync")]
    Psync,
    /// Completes every IO at once without touching a device: measures iolab itself.
    #[serde(rename = "null")]
    Null,
}

impl EngineKind {
    /// Parses `io_uring`, `uring`, `psync`, `sync`, `null`.
    pub fn parse(s: &str) -> Option<EngineKind> {
        Some(match s.to_ascii_lowercase().as_str() {
            "io_uring" | "iouring" | "uring" => EngineKind::IoUring,
            "psync" | "sync" | "pread" => EngineKind::Psync,
            "null" => EngineKind::Null,
            _ => return None,
        })
    }
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
            EngineKind::Null => "null",
        }
    }
}

/// How a worker waits for its next completion (io_uring).
///
/// Sleeping in the kernel until an IO completes costs a wake-up per wait: on a virtual
/// machine, or when the device completes on another CPU, that wake-up is as long as a fast
/// device's whole IO (measured: 4k QD1 reads on a RAM-backed loop device take ~35 us with a
/// sleep, ~19 us with a spin). Spinning costs CPU time instead; blocking lets completions
/// batch and leaves the CPU to the kernel, which wins when many IOs are in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Spin or block, whichever completes IOs faster on this machine and device, timed while
    /// the trial runs (`engine/learn.rs`); until then, and in an open loop, spin when few IOs
    /// are in flight in all threads together (at most [`WaitMode::SPIN_MAX_IN_FLIGHT`]). A
    /// device slower than the spin budget stops the spinning by itself.
    #[default]
    Auto,
    /// Poll for completions for up to the spin budget before sleeping.
    Spin,
    /// Always sleep in the kernel until a completion arrives.
    Block,
}

impl WaitMode {
    /// `auto`'s prior: above this many IOs in flight (threads x queue depth) it blocks until
    /// it has timed both ways (and an open loop always does): completions then arrive in
    /// batches and the CPU is better left to the kernel. Measured on a RAM-backed
    /// loop device against fio, alternately (docs/accuracy.md): spinning gains ~1.5-3x at
    /// QD 1-8; at 32 in flight (1 x 32, 2 x 16) it beat sleeping in every pair, 1.03-1.30x
    /// fio where sleeping was 0.79-1.26x (the CPU per IO 1.2-1.35x fio's); at 64 and 128 they
    /// tie or sleeping wins.
    pub const SPIN_MAX_IN_FLIGHT: u32 = 32;

    /// Parses `auto`, `spin`, `block`.
    pub fn parse(s: &str) -> Option<WaitMode> {
        Some(match s.to_ascii_lowercase().as_str() {
            "auto" => WaitMode::Auto,
            "spin" | "poll" => WaitMode::Spin,
            "block" | "sleep" => WaitMode::Block,
            _ => return None,
        })
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            WaitMode::Auto => "auto",
            WaitMode::Spin => "spin",
            WaitMode::Block => "block",
        }
    }

    /// Whether a worker spins before sleeping, for `threads` workers of `depth` IOs each.
    pub fn spins(self, threads: u32, depth: u32) -> bool {
        match self {
            WaitMode::Auto => threads.saturating_mul(depth) <= Self::SPIN_MAX_IN_FLIGHT,
            WaitMode::Spin => true,
            WaitMode::Block => false,
        }
    }
}

/// How fast an open-loop workload asks for IO, whatever the device does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// IOs per second.
    Iops(f64),
    /// Bytes per second (IOs per second = this / the block size).
    BytesPerSec(u64),
}

impl Rate {
    /// Parses `5000` or `5000iops` (IOs per second) and `200MiB` or `200MB/s` (bytes per
    /// second: any size with a unit). `None` when neither reads.
    pub fn parse(s: &str) -> Option<Rate> {
        let t = s.trim();
        let t = t.strip_suffix("/s").unwrap_or(t).trim();
        let lower = t.to_ascii_lowercase();
        if let Some(n) = lower.strip_suffix("iops") {
            return n.trim().parse::<f64>().ok().map(Rate::Iops);
        }
        if let Ok(n) = t.parse::<f64>() {
            return Some(Rate::Iops(n));
        }
        crate::units::parse_bytes(t).ok().map(Rate::BytesPerSec)
    }

    /// IOs per second for IOs of `block` bytes.
    pub fn iops(self, block: u64) -> f64 {
        match self {
            Rate::Iops(n) => n,
            Rate::BytesPerSec(b) => b as f64 / block.max(1) as f64,
        }
    }

    /// As a person writes it: `5000 IOPS`, `200MiB/s`.
    pub fn describe(self) -> String {
        match self {
            Rate::Iops(n) => format!("{} IOPS", crate::units::format_rate(n)),
            Rate::BytesPerSec(b) => format!("{}/s", crate::units::format_bytes(b)),
        }
    }
}

/// When an open-loop workload's IOs are due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart.
    #[default]
    Fixed,
    /// A Poisson process: independent arrivals, exponential gaps of mean 1/rate (many
    /// independent clients, as a server sees them).
    Poisson,
}

impl Arrivals {
    /// Parses `fixed` (also `uniform`, `linear`) and `poisson`.
    pub fn parse(s: &str) -> Option<Arrivals> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fixed" | "uniform" | "linear" => Some(Arrivals::Fixed),
            "poisson" => Some(Arrivals::Poisson),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Fixed => "fixed",
            Arrivals::Poisson => "poisson",
        }
    }
}

/// An open loop: IOs are issued at scheduled times, not when the previous ones complete, so a
/// device that stalls shows as latency (measured from each IO's scheduled time) instead of as
/// IOs never asked for (coordinated omission; docs/slo.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    /// The asked rate.
    pub rate: Rate,
    /// How arrivals are spaced.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// The rate is each thread's (true) or all threads' together (false, the default).
    #[serde(default)]
    pub per_thread: bool,
}

impl OpenLoop {
    /// IOs per second asked of one of `threads` threads, for IOs of `block` bytes.
    pub fn thread_iops(&self, threads: u32, block: u64) -> f64 {
        let all = self.rate.iops(block);
        if self.per_thread {
            all
        } else {
            all / f64::from(threads.max(1))
        }
    }

    /// IOs per second asked of all threads together.
    pub fn total_iops(&self, threads: u32, block: u64) -> f64 {
        self.thread_iops(threads, block) * f64::from(threads.max(1))
    }
}

/// Which operations an SLO target is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SloOp {
    /// Reads and writes together.
    All,
    /// Reads only.
    Read,
    /// Writes only.
    Write,
}

/// The latency figure an SLO target limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SloStat {
    /// A percentile, 0 < p < 100 (`p99`, `p99.9`).
    Percentile(f64),
    /// The mean.
    Mean,
}

/// One latency target: `read:p99<=2ms`. Latency is measured from each IO's scheduled time
/// (what a client saw), not from its submission.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SloTarget {
    /// Which operations.
    pub op: SloOp,
    /// Which figure.
    pub stat: SloStat,
    /// The limit, ns.
    pub limit_ns: u64,
}

/// The most precise percentile a target may name: beyond it a trial would need millions of
/// IOs to resolve the tail (a p99.999 from 100 k IOs is the 1 slowest IO).
pub const SLO_MAX_PERCENTILE: f64 = 99.99;

impl SloTarget {
    /// Parses `p99<=2ms`, `p99.9 <= 10ms`, `mean<=500us`, `read:p99<=2ms`, `write:p99.9<=5ms`.
    pub fn parse(s: &str) -> Result<SloTarget, String> {
        let s = s.trim();
        let (op, rest) = match s.split_once(':') {
            Some((o, r)) => (
                match o.trim().to_ascii_lowercase().as_str() {
                    "read" | "reads" => SloOp::Read,
                    "write" | "writes" => SloOp::Write,
                    "all" => SloOp::All,
                    other => {
                        return Err(format!(
                            "'{other}' is not an operation (use read:, write: or none)"
                        ));
                    }
                },
                r,
            ),
            None => (SloOp::All, s),
        };
        let (stat, limit) = rest
            .split_once("<=")
            .ok_or_else(|| format!("'{s}' has no '<=' (write e.g. p99<=2ms or mean<=1ms)"))?;
        let stat = stat.trim().to_ascii_lowercase();
        let stat = if stat == "mean" || stat == "avg" {
            SloStat::Mean
        } else if let Some(p) = stat.strip_prefix('p') {
            let p: f64 = p
                .parse()
                .map_err(|_| format!("'{stat}' is not a percentile (use p50, p99, p99.9...)"))?;
            if !(p > 0.0 && p <= SLO_MAX_PERCENTILE) {
                return Err(format!(
                    "{stat}: a percentile must be above 0 and at most {SLO_MAX_PERCENTILE} (a finer tail cannot be resolved from one trial)"
                ));
            }
            SloStat::Percentile(p)
        } else {
            return Err(format!(
                "'{stat}' is not a latency figure (use p99, p99.9, mean...)"
            ));
        };
        let limit =
            crate::units::parse_duration(limit.trim()).map_err(|e| format!("limit: {e}"))?;
        let limit_ns = limit.as_nanos() as u64;
        if limit_ns == 0 {
            return Err("a latency limit must be more than 0".into());
        }
        Ok(SloTarget { op, stat, limit_ns })
    }

    /// As written: `read:p99<=2ms`.
    pub fn describe(&self) -> String {
        let op = match self.op {
            SloOp::All => "",
            SloOp::Read => "read:",
            SloOp::Write => "write:",
        };
        let stat = match self.stat {
            SloStat::Mean => "mean".to_string(),
            SloStat::Percentile(p) => format!("p{p}"),
        };
        format!("{op}{stat}<={}", limit_text(self.limit_ns))
    }
}

/// A target's limit as a person writes it: `2ms`, `1.5ms`, `1s`, `500us` (no trailing zeros).
fn limit_text(ns: u64) -> String {
    let t = crate::units::format_latency_ns(ns as f64);
    let unit_at = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(unit_at);
    let num = if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.')
    } else {
        num
    };
    format!("{num}{unit}")
}

/// A latency target the search finds the highest sustained rate for (`--slo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Every target must be met at once.
    pub targets: Vec<SloTarget>,
    /// Time the search may take in all; `None`: until the precision is reached.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_duration_ms"
    )]
    pub budget: Option<Duration>,
    /// Stop when the bracket around the capacity is this narrow (0.05: within 5%).
    pub precision: f64,
    /// Trials at each of the two rates that bracket the answer (for its interval).
    pub edge_trials: u32,
    /// How the searched rates' arrivals are spaced.
    #[serde(default)]
    pub arrivals: Arrivals,
}

impl Slo {
    /// Parses `p99<=2ms`, or several targets separated by commas or `and`.
    pub fn parse_targets(s: &str) -> Result<Vec<SloTarget>, String> {
        let parts: Vec<&str> = s
            .split([',', ';'])
            .flat_map(|p| p.split(" and "))
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() {
            return Err("empty (write e.g. p99<=2ms)".into());
        }
        parts.into_iter().map(SloTarget::parse).collect()
    }

    /// As written: `p99<=2ms, p99.9<=10ms`.
    pub fn describe(&self) -> String {
        self.targets
            .iter()
            .map(SloTarget::describe)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `Option<Duration>` as whole milliseconds, for the stored workload parameters.
mod opt_duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// What written blocks contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DataKind {
    /// Incompressible pseudo-random bytes, different in every block written.
    #[default]
    Random,
    /// All zeros, to reproduce `dd if=/dev/zero` on purpose.
    Zero,
}

/// Which flush call makes writes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SyncKind {
    /// fdatasync(2): data and the metadata needed to read it back.
    #[default]
    Fdatasync,
    /// fsync(2): data and all metadata.
    Fsync,
}

/// An IO workload over one file or device: the fio-shaped part of iolab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoWorkload {
    /// Access pattern.
    pub pattern: Pattern,
    /// Bytes per IO.
    pub block_size: u64,
    /// IOs in flight per thread.
    pub queue_depth: u32,
    /// Worker threads, each with its own ring.
    pub threads: u32,
    /// Working set in bytes; `None` means the target's default (file: `--size`, device: all of it).
    pub size: Option<u64>,
    /// Stop after this long (measured window, ramp excluded).
    pub runtime: Option<Duration>,
    /// Stop after this many bytes in all threads together.
    pub total_bytes: Option<u64>,
    /// Time at the start whose IOs are not counted.
    pub ramp: Duration,
    /// O_DIRECT (bypass the page cache).
    pub direct: bool,
    /// Share of reads in a `randrw` mix, percent.
    pub read_pct: u8,
    /// Flush after every N writes (0: never).
    pub fsync_every: u32,
    /// Flush once at the end, inside the measured window (`dd conv=fdatasync`).
    pub fsync_at_end: bool,
    /// Which flush call.
    pub sync_kind: SyncKind,
    /// Content of written blocks.
    pub data: DataKind,
    /// Seed for offsets and data: the same seed gives the same IO sequence.
    pub seed: u64,
    /// IO engine.
    pub engine: EngineKind,
    /// How completions are waited for (io_uring only).
    #[serde(default)]
    pub wait: WaitMode,
    /// Issue at a scheduled rate instead of keeping the queue full (`None`: closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
    /// Find the highest rate that meets these latency targets (`--slo`): the workload runs
    /// as a search over open-loop rates instead of at one setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// A block-size mix (fio `bssplit`); `block_size` is then its largest size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bssplit: Option<Box<super::BsSplit>>,
    /// How random offsets spread over the working set (fio `random_distribution`).
    #[serde(default, skip_serializing_if = "super::Distribution::is_uniform")]
    pub distribution: super::Distribution,
    /// Pause after each completion before the next IO goes out (fio `thinktime`): a client
    /// that computes between requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<Duration>,
    /// Bytes skipped after each sequential IO (fio `rw=write:112k`); negative steps back
    /// (fio `rw=read:-8k`). 0: none. `runner::offsets` says where the holes wrap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skip: i64,
    /// Passes over the working set (or `io_size`) in one trial (fio `loops`); 1 by default.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub loops: u32,
    /// Replay a trace instead of generating IOs (`runner::replay` fills pattern, block size
    /// and queue depth from it before the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Box<super::Replay>>,
    /// Run rounds until the figure is steady by SNIA PTS's rules (`--steady-state`): an SSD
    /// or a cache gives figures early that it never gives again, so a fixed run may measure
    /// a state the device leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyState>,
}

/// The figure steady state is judged on (PTS tracks IOPS, bandwidth or latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyFigure {
    /// Reads and writes per second.
    #[default]
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean latency of reads and writes.
    Lat,
}

impl SteadyFigure {
    /// `iops`, `bw`, `lat` (also `bandwidth`, `latency`).
    pub fn parse(s: &str) -> Option<SteadyFigure> {
        match s.trim().to_ascii_lowercase().as_str() {
            "iops" | "true" => Some(SteadyFigure::Iops),
            "bw" | "bandwidth" => Some(SteadyFigure::Bw),
            "lat" | "latency" => Some(SteadyFigure::Lat),
            _ => None,
        }
    }

    /// The name flags and specs use.
    pub fn name(self) -> &'static str {
        match self {
            SteadyFigure::Iops => "iops",
            SteadyFigure::Bw => "bw",
            SteadyFigure::Lat => "lat",
        }
    }
}

/// Steady-state rounds (SNIA PTS): each round one trial of `round`, until the last
/// [`STEADY_WINDOW`] rounds meet PTS's two rules or `max_rounds` ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// The figure judged.
    pub figure: SteadyFigure,
    /// One round's measured window.
    pub round: Duration,
    /// Rounds at most (PTS: 25).
    pub max_rounds: u32,
}

/// How the target is written before the workloads (`--precondition`): PTS writes a device
/// twice over before measuring, so its spare area and mapping tables are in the state they
/// will be in use, not fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precondition {
    /// 128 KiB sequential writes (PTS's workload independent preconditioning).
    Seq,
    /// 4 KiB random writes (what PTS's IOPS test writes).
    Random,
}

impl Precondition {
    /// `seq` or `random`.
    pub fn parse(s: &str) -> Option<Precondition> {
        match s {
            "seq" | "sequential" => Some(Precondition::Seq),
            "random" | "rand" => Some(Precondition::Random),
            _ => None,
        }
    }

    /// What it writes, for notes.
    pub fn describe(self) -> &'static str {
        match self {
            Precondition::Seq => "128 KiB sequential writes",
            Precondition::Random => "4 KiB random writes",
        }
    }

    /// The workload that writes `size` bytes of the target (`None`: all of a device) twice
    /// over, closed-loop at queue depth 32, O_DIRECT, with random data (a compressing or
    /// deduplicating device must not get away with less).
    pub fn workload(self, size: Option<u64>) -> Workload {
        let (pattern, block_size) = match self {
            Precondition::Seq => (Pattern::Write, 128 << 10),
            Precondition::Random => (Pattern::RandWrite, 4 << 10),
        };
        Workload {
            name: "precondition".into(),
            drop_caches: false,
            kind: WorkloadKind::Io(IoWorkload {
                pattern,
                block_size,
                queue_depth: 32,
                size,
                loops: 2,
                ..IoWorkload::default()
            }),
        }
    }
}

/// PTS's measurement window, rounds.
pub const STEADY_WINDOW: usize = 5;
/// PTS's round length.
pub const STEADY_ROUND: Duration = Duration::from_secs(60);
/// PTS's round limit.
pub const STEADY_MAX_ROUNDS: u32 = 25;

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn one() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Default for IoWorkload {
    fn default() -> Self {
        IoWorkload {
            pattern: Pattern::RandRead,
            block_size: 4096,
            queue_depth: 1,
            threads: 1,
            size: None,
            runtime: None,
            total_bytes: None,
            ramp: Duration::ZERO,
            direct: true,
            read_pct: 70,
            fsync_every: 0,
            fsync_at_end: false,
            sync_kind: SyncKind::Fdatasync,
            data: DataKind::Random,
            seed: 0x10_1ab,
            engine: EngineKind::IoUring,
            wait: WaitMode::Auto,
            open_loop: None,
            slo: None,
            bssplit: None,
            distribution: super::Distribution::Uniform,
            think_time: None,
            skip: 0,
            loops: 1,
            replay: None,
            steady: None,
        }
    }
}

impl IoWorkload {
    /// Whether the headline figure is throughput (MB/s) rather than IOPS.
    pub fn headline_is_bandwidth(&self) -> bool {
        !self.pattern.is_random() || self.block_size >= 256 * 1024
    }
}

/// The small-file workload: bonnie++ `-n` phases, done with timing per phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmallFileWorkload {
    /// Files in all, across all directories and threads.
    pub files: u64,
    /// Directories the files are spread over.
    pub dirs: u32,
    /// Smallest file, bytes.
    pub min_size: u64,
    /// Largest file, bytes (sizes are uniform between min and max).
    pub max_size: u64,
    /// fsync each file after writing it (bonnie++ `-b`).
    pub fsync: bool,
    /// Also fsync the directory after each create and delete (durable names, as Maildir does).
    #[serde(default)]
    pub fsync_dir: bool,
    /// Worker threads; each owns its own directories.
    pub threads: u32,
    /// Seed for sizes, random order and content.
    pub seed: u64,
}

/// Reads of the same small region again and again from the page cache (`hdparm -T`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedReadWorkload {
    /// Bytes read per call, from the same offset every time.
    pub block_size: u64,
    /// How long to keep reading.
    pub runtime: Duration,
}

/// What a workload does.
// A suite holds a handful of workloads, built once and never in the IO path: the IO variant's
// size costs nothing that boxing it would buy back.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Block IO on one file or device.
    Io(IoWorkload),
    /// Create/stat/read/delete of many small files in a directory.
    SmallFiles(SmallFileWorkload),
    /// Page-cache reads (`hdparm -T`).
    CachedRead(CachedReadWorkload),
}

/// One named workload of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Name shown in tables and used to match workloads across runs.
    pub name: String,
    /// Drop the page cache before this workload (root only; a note otherwise).
    pub drop_caches: bool,
    /// What it does.
    pub kind: WorkloadKind,
}

impl Workload {
    /// The IO parameters, when this is an IO workload.
    pub fn io(&self) -> Option<&IoWorkload> {
        match &self.kind {
            WorkloadKind::Io(w) => Some(w),
            _ => None,
        }
    }
    /// One line of the parameters, as `iolab profiles` shows them.
    pub fn describe(&self) -> String {
        match &self.kind {
            WorkloadKind::Io(w) => {
                let mut s = format!(
                    "{} bs={} qd={} threads={}",
                    w.pattern.name(),
                    crate::units::format_bytes(w.block_size),
                    w.queue_depth,
                    w.threads
                );
                if w.pattern.is_mixed() {
                    s.push_str(&format!(" read={}%", w.read_pct));
                }
                if let Some(b) = &w.bssplit {
                    s.push_str(&format!(" bssplit={}", b.describe()));
                }
                if !w.distribution.is_uniform() {
                    s.push_str(&format!(" dist={}", w.distribution.describe()));
                }
                if let Some(t) = w.think_time {
                    s.push_str(&format!(
                        " think={}",
                        crate::units::format_latency_ns(t.as_nanos() as f64)
                    ));
                }
                if w.loops > 1 {
                    s.push_str(&format!(" loops={}", w.loops));
                }
                if let Some(t) = w.runtime {
                    s.push_str(&format!(" time={}", crate::units::format_duration(t)));
                }
                if let Some(b) = w.total_bytes {
                    s.push_str(&format!(" io_size={}", crate::units::format_bytes(b)));
                }
                if let Some(b) = w.size {
                    s.push_str(&format!(" size={}", crate::units::format_bytes(b)));
                }
                if w.fsync_every > 0 {
                    s.push_str(
                        &format!(" {:?}_every={}", w.sync_kind, w.fsync_every).to_lowercase(),
                    );
                }
                if w.fsync_at_end {
                    s.push_str(&format!(" {:?}_at_end", w.sync_kind).to_lowercase());
                }
                if !w.direct {
                    s.push_str(" buffered");
                }
                if w.data == DataKind::Zero {
                    s.push_str(" data=zero");
                }
                s
            }
            WorkloadKind::SmallFiles(w) => format!(
                "smallfile files={} dirs={} size={}..{} fsync={}{} threads={}",
                w.files,
                w.dirs,
                w.min_size,
                w.max_size,
                w.fsync,
                if w.fsync_dir { " fsync_dir=true" } else { "" },
                w.threads
            ),
            WorkloadKind::CachedRead(w) => format!(
                "cached-read bs={} time={}",
                crate::units::format_bytes(w.block_size),
                crate::units::format_duration(w.runtime)
            ),
        }
    }
}

/// An ordered list of workloads run one after another on the same target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Suite {
    /// Suite name (profile name or spec file stem).
    pub name: String,
    /// The workloads in order.
    pub workloads: Vec<Workload>,
}
