//! What one trial of one workload measured: the contract between the runners (which fill it)
//! and statistics, the store and reports (which only read it).
//!
//! Everything here is plain data with serde, so a trial can be written to JSON or SQLite and
//! read back bit for bit; rates are derived from counts and the measured window, never stored
//! twice.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub mod fault_outcome;
pub mod headline;
pub mod integrity;
pub mod labels;
pub mod layout_record;
pub mod note;
pub mod power;
pub mod verify;
pub use headline::headline;
pub use layout_record::LayoutRecord;
pub use note::{Note, NoteKind};
pub use verify::{MAX_REPORTED_MISMATCHES, Mismatch, MismatchKind, VerifySummary};

/// A latency histogram in nanoseconds, with 3 significant figures (relative error < 0.1%).
///
/// Kept as a newtype so the serialized form (HDR V2 + deflate, base64 in JSON) is defined once.
#[derive(Clone, Debug)]
pub struct LatencyHistogram(pub Histogram<u64>);

/// The highest latency a histogram can hold without saturating: one hour.
pub const MAX_TRACKED_LATENCY_NS: u64 = 3_600_000_000_000;

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram covering 1 ns .. 1 h.
    pub fn new() -> Self {
        // The bounds are constants known to be valid, so this cannot fail.
        let h = Histogram::new_with_bounds(1, MAX_TRACKED_LATENCY_NS, 3)
            .expect("constant histogram bounds are valid");
        LatencyHistogram(h)
    }

    /// Records one latency; values beyond an hour are clamped rather than lost.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds another histogram's counts (threads and trials merge this way).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both histograms share the same bounds, so adding cannot fail; saturate instead of panic.
        let _ = self.0.add(&other.0);
    }

    /// The value at a percentile (0..=100) in ns.
    pub fn percentile(&self, p: f64) -> u64 {
        self.0.value_at_quantile(p / 100.0)
    }

    /// The summary every report shows.
    pub fn summary(&self) -> LatencySummary {
        let h = &self.0;
        LatencySummary {
            count: h.len(),
            min_ns: if h.is_empty() { 0 } else { h.min() },
            mean_ns: h.mean(),
            p50_ns: self.percentile(50.0),
            p90_ns: self.percentile(90.0),
            p99_ns: self.percentile(99.0),
            p99_9_ns: self.percentile(99.9),
            p99_99_ns: self.percentile(99.99),
            max_ns: h.max(),
        }
    }

    /// Serializes to the HDR V2 compressed format.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        use hdrhistogram::serialization::Serializer as _;
        let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
        // Serializing into a Vec only fails on internal encoding errors; an empty blob reads
        // back as an empty histogram, which is the honest fallback.
        if ser.serialize(&self.0, &mut out).is_err() {
            out.clear();
        }
        out
    }

    /// Reads the HDR V2 format back; an empty or unreadable blob gives an error.
    pub fn from_bytes(b: &[u8]) -> Result<Self, String> {
        let mut de = hdrhistogram::serialization::Deserializer::new();
        de.deserialize(&mut std::io::Cursor::new(b))
            .map(LatencyHistogram)
            .map_err(|e| format!("bad latency histogram: {e:?}"))
    }
}

impl Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine as _;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(self.to_bytes()))
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::Engine as _;
        let s = String::deserialize(d)?;
        let b = base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(serde::de::Error::custom)?;
        LatencyHistogram::from_bytes(&b).map_err(serde::de::Error::custom)
    }
}

/// Latency percentiles in nanoseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    /// Number of operations measured.
    pub count: u64,
    /// Fastest operation, ns.
    pub min_ns: u64,
    /// Arithmetic mean, ns.
    pub mean_ns: f64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p99_9_ns: u64,
    /// 99.99th percentile, ns.
    pub p99_99_ns: u64,
    /// Slowest operation, ns.
    pub max_ns: u64,
}

/// One kind of operation within a trial: reads, writes, syncs, or a small-file phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpSample {
    /// `read`, `write`, `sync`, or a small-file phase such as `create`, `stat`, `read_file`,
    /// `delete`, `rand_create`, `rand_stat`, `rand_delete`, or `cached_read`.
    pub op: String,
    /// Operations completed in the measured window.
    pub count: u64,
    /// Bytes moved by those operations (0 for metadata operations).
    pub bytes: u64,
    /// Length of the window the rate is computed over, ns.
    pub elapsed_ns: u64,
    /// Per-operation latency. In an open loop: from each IO's scheduled time to its
    /// completion (`latency (from schedule)`: what a client waiting for it saw).
    pub latency: LatencyHistogram,
    /// In an open loop: from each IO's submission to its completion (`service time`: what the
    /// device took). `None` in a closed loop, where the two are the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<LatencyHistogram>,
}

impl OpSample {
    /// An empty sample for an operation kind.
    pub fn new(op: &str) -> Self {
        OpSample {
            op: op.to_string(),
            count: 0,
            bytes: 0,
            elapsed_ns: 0,
            latency: LatencyHistogram::new(),
            service: None,
        }
    }

    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.count as f64 * 1e9 / self.elapsed_ns as f64
        }
    }

    /// Throughput in MB/s (10^6 bytes per second, as dd and fio's "MB/s" mean it).
    pub fn mb_per_sec(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.bytes as f64 * 1e3 / self.elapsed_ns as f64
        }
    }
}

/// What an open-loop trial asked for and how well it kept to its schedule.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpenLoopSample {
    /// IOs per second asked of all threads together.
    pub asked_iops: f64,
    /// `fixed` or `poisson`.
    pub arrivals: String,
    /// IOs the schedule called for inside the measured window.
    pub scheduled: u64,
    /// IOs issued (inside the window or not).
    pub issued: u64,
    /// IOs issued more than 1 ms after their scheduled time.
    pub late: u64,
    /// IOs dropped unissued because they fell more than 1 s behind the schedule.
    pub shed: u64,
    /// IOs due inside the window still waiting in iolab when it closed: the backlog at the end.
    pub backlog_at_end: u64,
    /// The furthest behind the schedule the issuing fell, ns.
    pub max_lag_ns: u64,
    /// How late each IO went out: from its scheduled time to its submission.
    pub issue_error: LatencyHistogram,
    /// A trace replay's own fidelity (`iolab run --replay`), when this was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Box<ReplaySample>>,
    /// The rate the schedule asked of reads and of writes apart over the measured window,
    /// what each op's achieved rate is held against (`sustained`). Absent in records made
    /// before iolab kept it, and in an as-fast-as-possible replay (no schedule). Boxed, like
    /// `replay`, to keep a trial small where it crosses threads and the `--hosts` protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by_op: Option<Box<AskedByOp>>,
}

/// The rate an open loop's schedule asked of each kind of data IO over the measured window:
/// the IOs of that kind due inside it over its length. A replay knows each IO's kind from its
/// trace; a rate draws it as each IO goes out, so IOs never issued (shed, or still waiting at
/// the end) are shared out as the issued ones were. A replay's window is the recording's
/// length (at its speed), cut at the deadline when `--time` is shorter.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct AskedByOp {
    /// Reads per second asked.
    pub read_iops: f64,
    /// Writes per second asked.
    pub write_iops: f64,
}

/// What a trace replay says of its own fidelity: what it replayed and how, and how its length
/// compares with the recording's (issue-time errors and late IOs are the open loop's).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ReplaySample {
    /// The trace file, as given.
    pub trace: String,
    /// xxh3 of its records, from its header: which trace exactly.
    pub records_xxh3: String,
    /// IOs in the trace.
    pub trace_ios: u64,
    /// IOs the replay was to issue (all loops; discards and other ops left out).
    pub planned: u64,
    /// Discards and other ops skipped (no engine op for them).
    pub skipped: u64,
    /// Speed asked (2: twice as fast).
    pub speed: f64,
    /// Issued in order as fast as the recorded in-flight counts allowed.
    pub as_fast_as_possible: bool,
    /// Times the trace was replayed.
    pub loops: u32,
    /// `exact`, `wrap` or `scale`.
    pub map: String,
    /// The mapping in words.
    pub mapping: String,
    /// The recording's length at this speed, first issue to last completion, ns.
    pub recorded_ns: f64,
    /// The replay's, ns.
    pub replayed_ns: u64,
}

impl OpenLoopSample {
    /// Adds another thread's figures (the asked rate is the sum of the threads').
    pub fn merge(&mut self, o: &OpenLoopSample) {
        self.asked_iops += o.asked_iops;
        if self.arrivals.is_empty() {
            self.arrivals.clone_from(&o.arrivals);
        }
        self.scheduled += o.scheduled;
        self.issued += o.issued;
        self.late += o.late;
        self.shed += o.shed;
        self.backlog_at_end += o.backlog_at_end;
        self.max_lag_ns = self.max_lag_ns.max(o.max_lag_ns);
        self.issue_error.merge(&o.issue_error);
        if self.replay.is_none() {
            self.replay.clone_from(&o.replay);
        }
        if let Some(b) = &o.asked_by_op {
            let a = self.asked_by_op.get_or_insert_with(Box::default);
            a.read_iops += b.read_iops;
            a.write_iops += b.write_iops;
        }
    }

    /// Whether latencies count from a schedule: every open loop but an as-fast-as-possible
    /// replay, which issues each IO when its recorded depth allows and has no due times.
    pub fn from_schedule(&self) -> bool {
        !self.replay.as_ref().is_some_and(|r| r.as_fast_as_possible)
    }

    /// Whether the device kept up: nothing shed, and at most 1% of the window's IOs (or a
    /// queue's worth, `in_flight`) still waiting when it closed. A rate above what the device
    /// delivers leaves a backlog that grows with the trial.
    pub fn sustained(&self, in_flight: u64) -> bool {
        self.shed == 0 && self.backlog_at_end <= in_flight.max(self.scheduled / 100)
    }
}

/// Throughput in one second of a trial, so a cliff (an SSD's cache filling) is visible.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SeriesPoint {
    /// Seconds since the measured window began (this point covers [t, t+1)).
    pub t: u32,
    /// Bytes completed in that second.
    pub bytes: u64,
    /// Operations completed in that second.
    pub ops: u64,
    /// Median latency of the data IOs (reads and writes) completed in that second, ns, from
    /// that second's own histogram (absent where no per-second histogram was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<u64>,
    /// 99th percentile of the same, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
}

/// One second of a trial's measured window as it happened: its counts and that second's
/// latency histogram per operation kind. `iolab agent` streams these to the controller, which
/// merges them across hosts second by second (percentiles per second from merged histograms,
/// never averaged). Serialized histograms are HDR V2 + deflate, base64 in JSON.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalSample {
    /// Seconds since the measured window began (this covers [t, t+1)).
    pub t: u32,
    /// Operations completed in that second (all kinds, as [`SeriesPoint::ops`]).
    pub ops: u64,
    /// Bytes completed in that second.
    pub bytes: u64,
    /// That second's latency histogram per operation kind that completed any.
    pub latency: Vec<IntervalLatency>,
}

/// The latencies of one operation kind within one second.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalLatency {
    /// `read`, `write` or `sync`.
    pub op: String,
    /// The latencies (its count is the number of operations of this kind in that second).
    pub histogram: LatencyHistogram,
}

impl IntervalSample {
    /// The histogram of the data IOs (reads and writes merged; syncs when there are none):
    /// what the per-second p50/p99 of a series point are read from.
    pub fn data_latency(&self) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        let data = self.latency.iter().any(|l| l.op != "sync");
        for l in self.latency.iter().filter(|l| !data || l.op != "sync") {
            h.merge(&l.histogram);
        }
        h
    }
}

/// The IO accounting that must balance: everything submitted completed, nothing silently lost.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IoAccounting {
    /// IOs handed to the engine, including ramp and layout.
    pub submitted: u64,
    /// IOs the engine reported back (success or error).
    pub completed: u64,
    /// IOs that moved fewer bytes than asked (each is also reported as a note).
    pub short: u64,
    /// IOs that failed with an errno.
    pub errors: u64,
    /// Fsync/fdatasync calls issued.
    pub syncs: u64,
    /// IOs that were in flight at the deadline: drained, so none is left in the kernel, but
    /// not counted in the figures (they completed outside the window; `docs/accuracy.md`).
    #[serde(default)]
    pub after_window: u64,
}

/// Everything one trial of one workload measured. `Default` is an empty trial: what a fixture
/// fills in only the fields it is about.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrialSample {
    /// Name of the workload this trial ran.
    pub workload: String,
    /// Trial number, from 1.
    pub trial: u32,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Length of the measured window (ramp excluded), ns.
    pub elapsed_ns: u64,
    /// One entry per kind of operation.
    pub ops: Vec<OpSample>,
    /// Throughput per second of the measured window.
    pub series: Vec<SeriesPoint>,
    /// The balance of submitted and completed IOs.
    pub accounting: IoAccounting,
    /// User CPU time of the whole process during the trial, ns.
    pub cpu_user_ns: u64,
    /// System CPU time of the whole process during the trial, ns.
    pub cpu_sys_ns: u64,
    /// Things the reader must know (fell back to buffered IO, working set fits in RAM, ...),
    /// and how the engine waited, each with its kind ([`Note`]).
    pub notes: Vec<Note>,
    /// What `--verify` checked in this trial (absent when not verifying).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySummary>,
    /// An open-loop trial's schedule and how well it was kept (absent in a closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopSample>,
}

impl TrialSample {
    /// The sample for one operation kind, if the trial had it.
    pub fn op(&self, name: &str) -> Option<&OpSample> {
        self.ops.iter().find(|o| o.op == name)
    }

    /// The measured window as a Duration.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }

    /// Total bytes across data operations.
    pub fn total_bytes(&self) -> u64 {
        self.ops.iter().map(|o| o.bytes).sum()
    }

    /// CPU time per completed operation (user+sys), ns; how much the tool itself costs.
    pub fn cpu_ns_per_op(&self) -> f64 {
        let n: u64 = self
            .ops
            .iter()
            .filter(|o| o.op != "sync")
            .map(|o| o.count)
            .sum();
        if n == 0 {
            0.0
        } else {
            (self.cpu_user_ns + self.cpu_sys_ns) as f64 / n as f64
        }
    }

    /// The flat list of named figures statistics and comparisons work on.
    ///
    /// Names are `<op>.<figure>`: `read.iops`, `read.mbps`, `write.lat_p99_us`, `create.ops`...
    /// An open loop's reads and writes have their latency from the schedule instead
    /// (`read.sched_p99_us`, `read.sched_p99_9_us`: what a client waiting for each IO saw),
    /// their service time (`read.svc_p99_us`) and the share of the asked rate they achieved
    /// (`read.sustained`): [`headline()`] judges them by those.
    pub fn metrics(&self) -> Vec<Metric> {
        let sched = self
            .open_loop
            .as_ref()
            .is_some_and(OpenLoopSample::from_schedule);
        let mut out = Vec::new();
        for o in &self.ops {
            let data = matches!(o.op.as_str(), "read" | "write");
            // Block IO is judged in IOPS and MB/s; everything else (syncs, small-file phases,
            // cached reads) in operations per second, plus MB/s where it moved data.
            if data {
                out.push(Metric::new(
                    format!("{}.iops", o.op),
                    o.ops_per_sec(),
                    Unit::Iops,
                ));
                out.push(Metric::new(
                    format!("{}.mbps", o.op),
                    o.mb_per_sec(),
                    Unit::MBps,
                ));
            } else {
                out.push(Metric::new(
                    format!("{}.ops", o.op),
                    o.ops_per_sec(),
                    Unit::OpsPerSec,
                ));
                if o.bytes > 0 {
                    out.push(Metric::new(
                        format!("{}.mbps", o.op),
                        o.mb_per_sec(),
                        Unit::MBps,
                    ));
                }
            }
            if sched && data {
                out.extend(headline::schedule_metrics(self, o));
            } else if !o.latency.is_empty() {
                let s = o.latency.summary();
                out.push(Metric::new(
                    format!("{}.lat_p50_us", o.op),
                    s.p50_ns as f64 / 1e3,
                    Unit::Micros,
                ));
                out.push(Metric::new(
                    format!("{}.lat_p99_us", o.op),
                    s.p99_ns as f64 / 1e3,
                    Unit::Micros,
                ));
                out.push(Metric::new(
                    format!("{}.lat_mean_us", o.op),
                    s.mean_ns / 1e3,
                    Unit::Micros,
                ));
            }
        }
        out
    }
}

/// Units of a metric, so tables and charts know whether higher is better.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// IO operations per second.
    Iops,
    /// 10^6 bytes per second.
    MBps,
    /// Metadata operations per second.
    OpsPerSec,
    /// Microseconds (latency: lower is better).
    Micros,
    /// A share of something asked (an open loop's achieved / asked rate: 1 is all of it).
    Fraction,
}

impl Unit {
    /// Whether a larger value means a better result.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Unit::Micros)
    }
    /// The label shown next to a value.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Iops => "IOPS",
            Unit::MBps => "MB/s",
            Unit::OpsPerSec => "ops/s",
            Unit::Micros => "us",
            Unit::Fraction => "achieved/asked",
        }
    }
}

/// One named figure of one trial.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Metric {
    /// `<op>.<figure>`, e.g. `read.iops`.
    pub name: String,
    /// The value in `unit`.
    pub value: f64,
    /// What the value counts.
    pub unit: Unit,
}

impl Metric {
    /// Builds a metric.
    pub fn new(name: String, value: f64, unit: Unit) -> Self {
        Metric { name, value, unit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_round_trips_through_bytes_and_json() {
        let mut h = LatencyHistogram::new();
        for v in [1_000u64, 2_000, 3_000, 1_000_000] {
            h.record(v);
        }
        let back = LatencyHistogram::from_bytes(&h.to_bytes()).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.summary(), h.summary());
        let j = serde_json::to_string(&h).unwrap();
        let back: LatencyHistogram = serde_json::from_str(&j).unwrap();
        assert_eq!(back.percentile(100.0), h.percentile(100.0));
    }

    #[test]
    fn rates_come_from_counts_and_window() {
        let mut o = OpSample::new("read");
        o.count = 1000;
        o.bytes = 4096 * 1000;
        o.elapsed_ns = 500_000_000;
        assert!((o.ops_per_sec() - 2000.0).abs() < 1e-9);
        assert!((o.mb_per_sec() - 8.192).abs() < 1e-9);
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going (or killed without a chance to say so: the store shows it as incomplete).
    Running,
    /// Every workload finished.
    Complete,
    /// Stopped by Ctrl-C/SIGTERM; finished trials are kept.
    Interrupted,
    /// Stopped by an error; finished trials are kept.
    Failed,
    /// The process died without finishing (found by the store: status running, process gone).
    Incomplete,
}

/// All trials of one workload within a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadRecord {
    /// The exact parameters.
    pub workload: crate::spec::Workload,
    /// Trials in the order they ran.
    pub trials: Vec<TrialSample>,
}

impl WorkloadRecord {
    /// The headline figure of every trial, in trial order: what stability, degraded ratios and
    /// comparisons are judged by.
    pub fn headline_values(&self) -> Vec<f64> {
        self.trials
            .iter()
            .filter_map(|t| headline(&self.workload, t))
            .map(|m| m.1)
            .collect()
    }

    /// The throughput figure of every trial (MB/s, IOPS or ops/s, whatever the headline is):
    /// what a speed need (`iolab decide`'s `min`) and per-host stragglers are judged by.
    pub fn throughput_values(&self) -> Vec<f64> {
        self.trials
            .iter()
            .filter_map(|t| headline::throughput(&self.workload, t))
            .map(|m| m.1)
            .collect()
    }
}

/// Everything one `iolab run` (or one layout of a lab) produced, with its exact setup: what the
/// store keeps and `--json` prints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// Store id (empty until stored).
    pub id: String,
    /// How it ended.
    pub status: RunStatus,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// End, ms since the Unix epoch.
    pub ended_unix_ms: Option<u64>,
    /// argv of the command that made it.
    pub command_line: Vec<String>,
    /// Free-form label (`--label`), used to refer to the run and as a column header.
    pub label: Option<String>,
    /// Free-form note (`--note`).
    pub note: Option<String>,
    /// The lab this run belongs to, when made by `iolab lab`.
    pub lab_id: Option<String>,
    /// The layout it ran on, when made by `iolab lab` (stack, capacity, phase, rebuild...).
    /// A run file written by an older iolab still reads (see [`layout_record::lenient`]).
    #[serde(default, deserialize_with = "layout_record::lenient")]
    pub layout: Option<LayoutRecord>,
    /// The suite that ran.
    pub suite_name: String,
    /// The machine.
    pub system: crate::system::SystemInfo,
    /// The thing under test.
    pub target: crate::target::TargetInfo,
    /// Results per workload, in suite order.
    pub workloads: Vec<WorkloadRecord>,
    /// Things the reader must know about the whole run.
    pub notes: Vec<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// Wall-clock time, nanoseconds since the Unix epoch (start instants across hosts).
pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Wall-clock time, milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Which latency an op's histogram holds. iolab measures submit to complete; runs imported
/// from fio may hold fio's `clat` (completion latency, submission excluded) instead. Kept as a
/// marker line in the run's notes (a stored field needs no schema change that way), so every
/// report that prints notes labels it and `compare` can refuse to mix kinds silently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyKind {
    /// Submit to complete: iolab's own, fio's `lat`.
    Lat,
    /// fio's `clat`: from issue to completion, submission time excluded.
    Clat,
}

impl LatencyKind {
    const CLAT_NOTE: &'static str = "latency kind: clat (fio completion latency, submission time excluded; iolab measures submit to complete)";
    const LAT_NOTE: &'static str = "latency kind: lat (submit to complete, as iolab measures)";

    /// The note that records this kind in a run's notes.
    pub fn note(self) -> &'static str {
        match self {
            LatencyKind::Lat => Self::LAT_NOTE,
            LatencyKind::Clat => Self::CLAT_NOTE,
        }
    }

    /// The kind recorded in a run's notes; a run without the marker is iolab's own (`lat`).
    pub fn from_notes(notes: &[String]) -> LatencyKind {
        if notes.iter().any(|n| n == Self::CLAT_NOTE) {
            LatencyKind::Clat
        } else {
            LatencyKind::Lat
        }
    }

    /// Short name for tables: `lat` or `clat`.
    pub fn name(self) -> &'static str {
        match self {
            LatencyKind::Lat => "lat",
            LatencyKind::Clat => "clat",
        }
    }
}
