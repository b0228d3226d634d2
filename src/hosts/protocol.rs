//! The agent protocol: one JSON object per line over the agent's stdin and stdout.
//!
//! Line-delimited JSON because it travels over anything that carries bytes (ssh, `kubectl
//! exec -i`, `srun`, a local pipe) with no framing of its own, and a person can read a capture.
//! Every message names its kind in a `type` field. The agent speaks first ([`Message::Hello`]
//! with its version), so a wrong or missing `iolab` on the far side is found before any IO.
//! Diagnostics never go to stdout: stdout carries protocol lines only.
//!
//! [`parse_line`] is pure (no IO, no state) so it can be fuzzed on its own.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::sample::{IntervalSample, TrialSample};
use crate::spec::Suite;
use crate::system::SystemInfo;
use crate::target::TargetInfo;

/// The protocol version: bumped whenever a message changes shape. Controller and agent must
/// agree on it and on the crate version (the agent runs the controller's workload code).
///
/// 2: agents stream [`Message::Interval`] (each second's counts and latency histograms).
pub const PROTOCOL_VERSION: u32 = 2;

/// The longest line accepted (a trial with its histograms is a few kB; this bounds memory when
/// the far side sends garbage without newlines).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One protocol message, in either direction.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Agent -> controller, first line: who and what version answers.
    Hello {
        /// [`PROTOCOL_VERSION`] of the agent.
        protocol: u32,
        /// The agent's crate version.
        version: String,
        /// The agent's host name (for messages).
        hostname: String,
        /// The agent's process id (for diagnostics on the far side).
        pid: u32,
    },
    /// Controller -> agent: what to run where. Sent once, after `Hello`.
    Prepare {
        /// The workloads (already validated by the controller).
        suite: Suite,
        /// Directory, file or device on the agent's host; `None`: a temporary directory under
        /// the agent's working directory.
        target: Option<PathBuf>,
        /// Trials per workload.
        repeat: u32,
        /// Working set when a workload does not give one.
        default_size: u64,
        /// Drop the page cache before each trial (when root).
        drop_caches: bool,
        /// `--destroy`: the device writes are allowed on.
        destroy: Option<PathBuf>,
    },
    /// Agent -> controller: the target as the agent's host sees it, once resolved.
    Prepared {
        /// The agent's machine.
        system: SystemInfo,
        /// The target on it.
        target: TargetInfo,
    },
    /// Agent -> controller: laid out, caches dropped, waiting at the barrier for `StartAt`.
    Ready {
        /// Index of the workload in the suite (verify passes would add entries; not used).
        workload: usize,
        /// Trial number, from 1.
        trial: u32,
    },
    /// Controller -> agent: a clock probe; answered at once with `ProbeReply`.
    Probe {
        /// Echoed back, so late replies are matched.
        seq: u32,
    },
    /// Agent -> controller: the agent's wall clock when the probe arrived.
    ProbeReply {
        /// The probe's `seq`.
        seq: u32,
        /// Agent wall clock, ns since the Unix epoch.
        agent_unix_ns: u64,
    },
    /// Controller -> agent: start the trial's clock at this instant on the agent's own clock.
    StartAt {
        /// Agent wall clock, ns since the Unix epoch.
        unix_ns: u64,
    },
    /// Agent -> controller, once a second during a trial: cumulative counters (also the
    /// heartbeat: a host that stops sending them is failed).
    Tick {
        /// Workload index.
        workload: usize,
        /// Trial number.
        trial: u32,
        /// Seconds since the start instant.
        t: u32,
        /// Operations completed so far in this trial (ramp included).
        ops: u64,
        /// Bytes completed so far.
        bytes: u64,
    },
    /// Agent -> controller, once per second of a trial's measured window, in order of `t`,
    /// as soon as every IO thread has left that second: its counts and its latency histograms
    /// per operation kind (HDR V2 + deflate, base64). All of a trial's intervals come before
    /// its `TrialDone`.
    Interval {
        /// Workload index.
        workload: usize,
        /// Trial number.
        trial: u32,
        /// The second.
        sample: IntervalSample,
    },
    /// Agent -> controller: a finished trial, with its latency histograms (HDR V2 + deflate,
    /// base64) and per-second series.
    TrialDone {
        /// Workload index.
        workload: usize,
        /// Trial number.
        trial: u32,
        /// When the trial's clock really started, agent wall clock, Unix ns.
        started_unix_ns: u64,
        /// What it measured.
        sample: TrialSample,
    },
    /// Agent -> controller: something the user should know (said once).
    Note {
        /// The note.
        message: String,
    },
    /// Agent -> controller: the suite ended; the files the agent made are removed.
    Done {
        /// Ctrl-C/SIGTERM on the agent's side cut it short.
        interrupted: bool,
    },
    /// Either direction: a failure, one line. The agent exits after sending it.
    Error {
        /// What went wrong and what to do.
        message: String,
    },
}

impl Message {
    /// The message as one protocol line (with its newline).
    pub fn to_line(&self) -> String {
        // Serializing these plain structs cannot fail (no maps with non-string keys).
        let mut s = serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"type":"error","message":"cannot encode a message: {e}"}}"#)
        });
        s.push('\n');
        s
    }

    /// The `type` name, for messages about unexpected messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "hello",
            Message::Prepare { .. } => "prepare",
            Message::Prepared { .. } => "prepared",
            Message::Ready { .. } => "ready",
            Message::Probe { .. } => "probe",
            Message::ProbeReply { .. } => "probe_reply",
            Message::StartAt { .. } => "start_at",
            Message::Tick { .. } => "tick",
            Message::Interval { .. } => "interval",
            Message::TrialDone { .. } => "trial_done",
            Message::Note { .. } => "note",
            Message::Done { .. } => "done",
            Message::Error { .. } => "error",
        }
    }
}

/// Why a line is not a protocol message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// An empty (or all-blank) line.
    #[error("empty protocol line")]
    Empty,
    /// Longer than [`MAX_LINE_BYTES`].
    #[error("protocol line of {0} bytes is longer than the limit of {MAX_LINE_BYTES}")]
    TooLong(usize),
    /// Not JSON, or not one of the messages.
    #[error("bad protocol line: {msg} (line starts: {start:?})")]
    Malformed {
        /// serde's reason, with the column.
        msg: String,
        /// The first 60 characters of the line.
        start: String,
    },
}

/// Parses one protocol line (a trailing `\n` or `\r\n` is allowed).
pub fn parse_line(line: &str) -> Result<Message, ProtocolError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ProtocolError::TooLong(line.len()));
    }
    let t = line.trim_end_matches(['\n', '\r']);
    if t.trim().is_empty() {
        return Err(ProtocolError::Empty);
    }
    serde_json::from_str(t).map_err(|e| ProtocolError::Malformed {
        msg: e.to_string(),
        start: t.chars().take(60).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_through_one_line() {
        let m = Message::Tick {
            workload: 1,
            trial: 2,
            t: 3,
            ops: 4,
            bytes: 5,
        };
        let line = m.to_line();
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        match parse_line(&line) {
            Ok(Message::Tick { ops: 4, t: 3, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_trial_keeps_its_histogram_through_the_line() {
        let mut op = crate::sample::OpSample::new("read");
        for v in [1_000, 2_000, 3_000, 1_000_000] {
            op.latency.record(v);
        }
        op.count = 4;
        let sample = TrialSample {
            workload: "w".into(),
            trial: 1,
            started_unix_ms: 0,
            elapsed_ns: 1,
            ops: vec![op],
            series: vec![],
            accounting: crate::sample::IoAccounting::default(),
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            notes: vec![],
            verify: None,
            open_loop: None,
        };
        let line = Message::TrialDone {
            workload: 0,
            trial: 1,
            started_unix_ns: 7,
            sample,
        }
        .to_line();
        let Ok(Message::TrialDone { sample, .. }) = parse_line(&line) else {
            panic!("not a trial")
        };
        let h = &sample.ops[0].latency;
        assert_eq!(h.len(), 4);
        assert_eq!(h.0.max(), h.0.highest_equivalent(1_000_000));
    }

    #[test]
    fn an_interval_keeps_its_second_and_histogram_through_the_line() {
        let mut h = crate::sample::LatencyHistogram::new();
        for v in [5_000, 6_000, 900_000] {
            h.record(v);
        }
        let line = Message::Interval {
            workload: 0,
            trial: 2,
            sample: IntervalSample {
                t: 3,
                ops: 3,
                bytes: 3 * 4096,
                latency: vec![crate::sample::IntervalLatency {
                    op: "read".into(),
                    histogram: h.clone(),
                }],
            },
        }
        .to_line();
        let Ok(Message::Interval { trial, sample, .. }) = parse_line(&line) else {
            panic!("not an interval: {line}")
        };
        assert_eq!((trial, sample.t, sample.ops), (2, 3, 3));
        let got = &sample.latency[0].histogram;
        assert_eq!(got.len(), 3);
        assert_eq!(got.percentile(99.0), h.percentile(99.0));
        // A second of a busy host is a few hundred bytes on the wire, not the 260 kB array.
        assert!(line.len() < 1000, "{}", line.len());
    }

    #[test]
    fn malformed_lines_are_refused_with_a_reason() {
        assert!(matches!(parse_line("\n"), Err(ProtocolError::Empty)));
        for bad in [
            "not json",
            "{}",
            r#"{"type":"nope"}"#,
            r#"{"type":"probe"}"#,
            r#"{"type":"probe","seq":-1}"#,
            r#"{"type":"probe","seq":1,"extra":2}"#,
            "[1,2]",
        ] {
            let e = parse_line(bad).expect_err(bad);
            assert!(matches!(e, ProtocolError::Malformed { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("bad protocol line"), "{e}");
        }
        let long = "x".repeat(MAX_LINE_BYTES + 1);
        assert!(matches!(parse_line(&long), Err(ProtocolError::TooLong(_))));
    }
}
