//! What a multi-host run is asked to do and what it produced: the types the controller fills
//! in and the aggregate ([`super::merge`]), the store ([`super::save`]) and the tables
//! ([`super::render`]) read. Kept apart from the controller so that those modules and the
//! controller import them without importing each other.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::clock::ClockEstimate;
use super::seconds::SecondFigures;
use crate::sample::TrialSample;
use crate::spec::Suite;
use crate::system::SystemInfo;
use crate::target::TargetInfo;

/// What happens to the run when a host fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Stop every host; the finished trials are kept.
    #[default]
    Abort,
    /// Keep going with the others; aggregates say "k of N hosts".
    Continue,
}

/// What to run on the hosts and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workloads (block IO only).
    pub suite: Suite,
    /// Trials per workload.
    pub repeat: u32,
    /// Drop the page cache before each trial (when root on the host).
    pub drop_caches: bool,
    /// Working set when a workload does not give one.
    pub default_size: u64,
    /// `--destroy` on every host.
    pub destroy: Option<PathBuf>,
    /// Target of hosts that do not name their own.
    pub default_target: Option<PathBuf>,
    /// Copy this binary to each host for the run.
    pub push: bool,
    /// Abort or continue when a host fails.
    pub on_failure: OnFailure,
    /// Clock probes per trial and host.
    pub probes: u32,
    /// How far ahead of now the start instant is set (the agents' setup must fit in it).
    pub start_margin: Duration,
    /// A host silent for this long during a trial is failed.
    pub stall: Duration,
    /// How long an agent has to say hello (ssh connection included).
    pub hello_timeout: Duration,
}

impl Options {
    /// Options with the defaults of `iolab run --hosts`.
    pub fn new(suite: Suite) -> Options {
        Options {
            suite,
            repeat: 1,
            drop_caches: true,
            default_size: 1 << 30,
            destroy: None,
            default_target: None,
            push: false,
            on_failure: OnFailure::Abort,
            probes: 8,
            start_margin: Duration::from_secs(1),
            stall: Duration::from_secs(10),
            hello_timeout: Duration::from_secs(60),
        }
    }
}

/// One host in the result.
#[derive(Debug, Clone, Serialize)]
pub struct HostResult {
    /// As given in `--hosts`.
    pub name: String,
    /// Its target (its own, or the run's).
    pub target: Option<PathBuf>,
    /// The host name the agent reported.
    pub hostname: Option<String>,
    /// Why it failed (`None`: it finished).
    pub failed: Option<String>,
    /// Its clock against the controller's, at the last trial.
    pub clock: Option<ClockEstimate>,
    /// What the agent said the user should know.
    pub notes: Vec<String>,
    /// The host's machine, as its agent saw it.
    #[serde(skip)]
    pub system: Option<SystemInfo>,
    /// The target as its agent resolved it.
    #[serde(skip)]
    pub target_info: Option<TargetInfo>,
}

/// One host's finished trial.
#[derive(Debug, Clone)]
pub struct HostTrial {
    /// When its clock started, controller clock, Unix ns.
    pub start_ns: u64,
    /// Start minus the planned instant, ns (positive: late).
    pub skew_ns: i64,
    /// When its clock started on its own clock, Unix ns (hosts sharing one clock, as
    /// namespaces on one machine do, can be compared on this directly).
    pub agent_start_ns: u64,
    /// The clock estimate the start instant was converted with.
    pub clock: ClockEstimate,
    /// What it measured.
    pub sample: TrialSample,
}

/// One trial across the hosts.
#[derive(Debug, Clone)]
pub struct TrialOnHosts {
    /// Workload index in the suite.
    pub workload: usize,
    /// Trial number, from 1.
    pub trial: u32,
    /// The start instant, controller clock, Unix ns.
    pub planned_ns: u64,
    /// Per host, in `--hosts` order (`None`: failed before finishing it).
    pub hosts: Vec<Option<HostTrial>>,
    /// The hosts' streamed seconds, merged second by second.
    pub seconds: Vec<SecondFigures>,
}

/// What a multi-host run produced.
#[derive(Debug)]
pub struct Outcome {
    /// Every host, in `--hosts` order.
    pub hosts: Vec<HostResult>,
    /// Every trial that started, in order.
    pub trials: Vec<TrialOnHosts>,
    /// Why the run stopped early.
    pub error: Option<String>,
    /// Ctrl-C stopped it.
    pub interrupted: bool,
    /// Wall-clock start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// Wall-clock end.
    pub ended_unix_ms: u64,
    /// Controller CPU (this process and its ssh children), ns.
    pub controller_cpu_ns: u64,
}
