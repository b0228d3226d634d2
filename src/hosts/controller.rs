//! The controller side of `iolab run --hosts`: one agent per host, started by the launch
//! command, driven in lock step.
//!
//! For each trial: every agent prepares (lays out, drops caches) and reports `ready`; that is
//! the barrier. Then each host's clock offset is estimated from several probes (the fastest
//! kept, [`super::clock`]), one start instant is chosen on the controller's clock and sent to
//! each agent converted to its own clock; the agents' workers wait for it at their start line.
//! Each agent reports when its clock really started: the difference is the skew shown.
//!
//! A host fails when its connection closes, it reports an error, or it stops sending its
//! once-a-second ticks. `--on-host-failure abort` then stops everyone (closing an agent's stdin
//! is its dead-man switch: it stops IO and removes its files); `continue` keeps the others.
//!
//! Threads and `std::process` only: one reader thread per agent's stdout and stderr feeding one
//! channel, and the controller's single loop.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::clock::{ClockEstimate, Probe, estimate, to_agent, to_controller};
use super::merge::SecondsMerger;
use super::protocol::{Message, PROTOCOL_VERSION, parse_line};
use super::{HostSpec, HostsError, shell_quote};
use crate::sample::{TrialSample, now_unix_ns};
use crate::spec::Suite;
use crate::system::SystemInfo;
use crate::target::TargetInfo;

/// The remote command in a launch template; `--push` replaces it with `sh`, which receives
/// the binary and the agent's protocol on its stdin ([`super::push`]).
pub const AGENT_COMMAND: &str = "iolab agent --stdio";

/// The default transport: the system ssh in batch mode (never a password prompt), one
/// multiplexed connection per host (push, agent and cleanup share it), closed at the end.
pub const DEFAULT_LAUNCH: &str = "ssh -o BatchMode=yes -o ControlMaster=auto -o ControlPath={control}/%C -o ControlPersist=60 {host} iolab agent --stdio";

/// The name of a controller's directory for ssh control sockets starts with this and its pid
/// (`iolab-ssh-PID-XXXXXX` in the temporary directory), so `iolab run --cleanup` can tell a
/// dead controller's directory and the ssh masters still holding it.
pub const CONTROL_PREFIX: &str = "iolab-ssh-";

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

/// The command that starts an agent on a host: a template with `{host}` (and `{control}`,
/// a private directory for ssh's control sockets), run by `sh -c`.
#[derive(Debug)]
pub struct Launch {
    template: String,
    control: Option<tempfile::TempDir>,
}

impl Launch {
    /// Checks a template (`None`: [`DEFAULT_LAUNCH`]).
    pub fn new(template: Option<&str>) -> Result<Launch, HostsError> {
        let template = template.unwrap_or(DEFAULT_LAUNCH).trim().to_string();
        // Without {host} every agent starts the same way (a local launcher: each host's
        // target still comes from its entry).
        if template.is_empty() {
            return Err(HostsError::BadLaunch(
                "empty template; e.g. --launch 'ssh -o BatchMode=yes {host} iolab agent --stdio'"
                    .into(),
            ));
        }
        let control = if template.contains("{control}") {
            Some(
                tempfile::Builder::new()
                    .prefix(&format!("{CONTROL_PREFIX}{}-", std::process::id()))
                    .tempdir()
                    .map_err(|e| {
                        HostsError::BadLaunch(format!(
                            "cannot make a directory for ssh control sockets: {e}"
                        ))
                    })?,
            )
        } else {
            None
        };
        Ok(Launch { template, control })
    }

    /// The template, as given.
    pub fn template(&self) -> &str {
        &self.template
    }

    fn fill(&self, s: &str, host: &str) -> String {
        let control = self
            .control
            .as_ref()
            .map(|d| d.path().display().to_string())
            .unwrap_or_default();
        s.replace("{control}", &control)
            .replace("{host}", &shell_quote(host))
    }

    /// The shell command that runs `remote` (default: the agent) on `host`.
    pub fn command(&self, host: &str, remote: Option<&str>) -> Result<String, HostsError> {
        let t = match remote {
            None => self.template.clone(),
            Some(r) => {
                // The bare command word only: `/opt/iolab agent --stdio` names a binary of
                // its own and is not replaced.
                let at = self.template.match_indices(AGENT_COMMAND).find(|(i, _)| {
                    self.template[..*i]
                        .chars()
                        .next_back()
                        .is_none_or(|c| c.is_whitespace() || c == '"' || c == '\'')
                });
                let Some((at, _)) = at else {
                    return Err(HostsError::BadLaunch(format!(
                        "--push needs the template to run '{AGENT_COMMAND}' (it is replaced by 'sh', which receives this binary on its stdin)"
                    )));
                };
                format!(
                    "{}{r}{}",
                    &self.template[..at],
                    &self.template[at + AGENT_COMMAND.len()..]
                )
            }
        };
        Ok(self.fill(&t, host))
    }

    /// Closes ssh's shared connection to `host`, when the template made one.
    fn close_master(&self, host: &str) {
        if !(self.template.starts_with("ssh ") && self.template.contains("ControlPath")) {
            return;
        }
        let Some(at) = self.template.find("{host}") else {
            return;
        };
        let cmd = format!("{} -O exit {{host}}", &self.template[..at].trim_end());
        let cmd = self.fill(&cmd, host);
        if let Ok(mut c) = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            wait_or_kill(&mut c, Duration::from_secs(5));
        }
    }
}

/// Waits for a child up to `limit`, then kills it. Returns its exit code when it exited.
fn wait_or_kill(c: &mut Child, limit: Duration) -> Option<i32> {
    let end = Instant::now() + limit;
    loop {
        match c.try_wait() {
            Ok(Some(s)) => return s.code(),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = c.kill();
                let _ = c.wait();
                return None;
            }
        }
    }
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
    pub seconds: Vec<super::merge::SecondFigures>,
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

enum Event {
    Line(Box<Message>, u64),
    Bad(String),
    Closed,
    /// `--push`: every byte of the binary was written (or the copy failed).
    Pushed(Result<(), String>),
}

/// How long `--push` may take to copy the binary to a host.
const PUSH_LIMIT: Duration = Duration::from_secs(300);

/// One agent connection.
struct Conn {
    result: HostResult,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// `--push`: the thread copying the binary; it holds stdin until the copy is written.
    writer: Option<JoinHandle<Option<ChildStdin>>>,
    /// `--push`: the whole binary is written.
    pushed: bool,
    stderr: Arc<Mutex<VecDeque<String>>>,
    hello: bool,
    ready: Option<(usize, u32)>,
    replies: Vec<(u32, u64, u64)>,
    finished: Option<(u64, TrialSample)>,
    done: bool,
    last_heard: Instant,
}

impl Conn {
    fn failed(&self) -> bool {
        self.result.failed.is_some()
    }

    fn stderr_tail(&self) -> Option<String> {
        let t = self.stderr.lock().ok()?;
        t.iter().rev().find(|l| !l.trim().is_empty()).cloned()
    }
}

/// Why the step loop stopped.
enum Stop {
    Interrupted,
    Failed(String),
}

struct Controller<'a> {
    opts: &'a Options,
    launch: &'a Launch,
    conns: Vec<Conn>,
    tx: Sender<(usize, Event)>,
    rx: Receiver<(usize, Event)>,
    /// Stops `--push` copies still under way (the run ends).
    cancel: Arc<AtomicBool>,
    /// The trial under way and its seconds merged so far.
    seconds: Option<((usize, u32), SecondsMerger)>,
}

/// Runs the suite on every host. Errors of the run are in the outcome, next to what was
/// measured before them.
pub fn run(hosts: &[HostSpec], launch: &Launch, opts: &Options) -> Outcome {
    let started_unix_ms = crate::sample::now_unix_ms();
    let cpu0 = cpu_ns();
    let (tx, rx) = std::sync::mpsc::channel();
    let conns = hosts
        .iter()
        .map(|h| Conn {
            result: HostResult {
                name: h.name.clone(),
                target: h.target.clone().or_else(|| opts.default_target.clone()),
                hostname: None,
                failed: None,
                clock: None,
                notes: Vec::new(),
                system: None,
                target_info: None,
            },
            child: None,
            stdin: None,
            writer: None,
            pushed: false,
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            hello: false,
            ready: None,
            replies: Vec::new(),
            finished: None,
            done: false,
            last_heard: Instant::now(),
        })
        .collect();
    let mut c = Controller {
        opts,
        launch,
        conns,
        tx,
        rx,
        cancel: Arc::new(AtomicBool::new(false)),
        seconds: None,
    };
    let mut trials = Vec::new();
    let stop = c.drive(&mut trials).err();
    c.finish(stop.is_none());
    let (error, interrupted) = match stop {
        None => (None, false),
        Some(Stop::Interrupted) => (None, true),
        Some(Stop::Failed(e)) => (Some(e), false),
    };
    Outcome {
        hosts: c.conns.into_iter().map(|c| c.result).collect(),
        trials,
        error,
        interrupted,
        started_unix_ms,
        ended_unix_ms: crate::sample::now_unix_ms(),
        controller_cpu_ns: cpu_ns().saturating_sub(cpu0),
    }
}

fn cpu_ns() -> u64 {
    let (u, s) = crate::sys::rusage_self();
    let (cu, cs) = crate::sys::rusage_children();
    u + s + cu + cs
}

impl Controller<'_> {
    fn drive(&mut self, trials: &mut Vec<TrialOnHosts>) -> Result<(), Stop> {
        for i in 0..self.conns.len() {
            self.spawn(i);
        }
        if self.opts.push {
            // Each agent's session receives the binary first ([`super::push`]).
            self.wait_all("copy of this binary", Some(PUSH_LIMIT), false, |c| c.pushed)?;
            crate::pause::at("hosts pushed");
        }
        self.wait_all("hello", Some(self.opts.hello_timeout), false, |c| c.hello)?;
        crate::pause::at("hosts connected");
        self.prepare_all();
        let repeat = self.opts.repeat.max(1);
        for w in 0..self.opts.suite.workloads.len() {
            for t in 1..=repeat {
                let step = (w, t);
                self.wait_all("ready", None, false, |c| c.ready == Some(step))?;
                crate::pause::at("hosts ready");
                trials.push(self.start_trial(w, t)?);
                crate::pause::at("hosts started");
                let at = trials.len() - 1;
                let res = self.wait_all("the trial's end", None, true, |c| c.finished.is_some());
                self.collect(&mut trials[at]);
                crate::pause::at("hosts collected");
                res?;
            }
        }
        self.wait_all("done", Some(Duration::from_secs(30)), false, |c| c.done)?;
        Ok(())
    }

    fn spawn(&mut self, i: usize) {
        let remote = self.opts.push.then_some(super::push::REMOTE);
        let cmd = match self.launch.command(&self.conns[i].result.name, remote) {
            Ok(c) => c,
            Err(e) => return self.fail(i, &e.to_string()),
        };
        let child = Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => return self.fail(i, &format!("cannot run the launch command: {e}")),
        };
        let conn = &mut self.conns[i];
        conn.stdin = child.stdin.take();
        // `--push`: the copy thread takes stdin until the binary is written, and starts
        // writing it when the stdout reader sees the remote shell's ready line.
        let mut ready = None;
        if let Some(stdin) = conn.stdin.take_if(|_| self.opts.push) {
            let (rtx, rrx) = std::sync::mpsc::channel();
            ready = Some(rtx);
            let tx = self.tx.clone();
            conn.writer = Some(super::push::start(
                stdin,
                super::push::path(),
                rrx,
                self.cancel.clone(),
                move |r| {
                    let _ = tx.send((i, Event::Pushed(r)));
                },
            ));
        }
        if let Some(out) = child.stdout.take() {
            let tx = self.tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if ready.is_some() && line == super::push::READY {
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                        continue;
                    }
                    let at = now_unix_ns();
                    let ev = match parse_line(&line) {
                        Ok(m) => Event::Line(Box::new(m), at),
                        Err(e) => Event::Bad(format!("{e}")),
                    };
                    if tx.send((i, ev)).is_err() {
                        return;
                    }
                }
                let _ = tx.send((i, Event::Closed));
            });
        }
        if let Some(err) = child.stderr.take() {
            let tail = conn.stderr.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(mut t) = tail.lock() {
                        if t.len() >= 20 {
                            t.pop_front();
                        }
                        t.push_back(line);
                    }
                }
            });
        }
        conn.child = Some(child);
        conn.last_heard = Instant::now();
    }

    fn send(&mut self, i: usize, m: &Message) {
        let line = m.to_line();
        let ok = self.conns[i]
            .stdin
            .as_mut()
            .is_some_and(|s| s.write_all(line.as_bytes()).is_ok() && s.flush().is_ok());
        if !ok {
            self.fail(i, "the connection closed (cannot send)");
        }
    }

    /// Marks a host failed and cuts its connection (its agent stops on stdin EOF).
    fn fail(&mut self, i: usize, why: &str) {
        let c = &mut self.conns[i];
        if c.failed() {
            return;
        }
        let mut why = why.to_string();
        if let Some(t) = c.stderr_tail().filter(|t| !why.contains(t.as_str())) {
            why = format!("{why} (it said: {t})");
        }
        eprintln!("iolab: host {} failed: {why}", c.result.name);
        c.result.failed = Some(why);
        c.stdin = None;
        if let Some(mut ch) = c.child.take() {
            let _ = ch.kill();
            let _ = ch.wait();
        }
    }

    fn check_policy(&self) -> Result<(), Stop> {
        let failed: Vec<&Conn> = self.conns.iter().filter(|c| c.failed()).collect();
        if failed.is_empty() {
            return Ok(());
        }
        let live = self.conns.len() - failed.len();
        let first = failed[0];
        let what = format!(
            "host {} failed: {}",
            first.result.name,
            first.result.failed.as_deref().unwrap_or("")
        );
        if live == 0 {
            return Err(Stop::Failed(format!("{what}; no host left")));
        }
        if self.opts.on_failure == OnFailure::Abort {
            return Err(Stop::Failed(format!(
                "{what}; the run stopped on every host (--on-host-failure continue keeps the others going)"
            )));
        }
        Ok(())
    }

    /// Handles one event, waiting until `until` at most. False when none came.
    fn pump(&mut self, until: Instant) -> bool {
        let left = until.saturating_duration_since(Instant::now());
        let (i, ev) = match self.rx.recv_timeout(left) {
            Ok(x) => x,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
        };
        if self.conns[i].failed() {
            return true;
        }
        self.conns[i].last_heard = Instant::now();
        match ev {
            Event::Line(m, at) => self.on_message(i, *m, at),
            Event::Bad(e) => {
                if self.conns[i].hello {
                    self.fail(i, &e);
                } else if let Ok(mut t) = self.conns[i].stderr.lock() {
                    // A login banner or a shell's noise before the agent started: keep it
                    // for the message if the agent never answers.
                    t.push_back(format!("(stdout) {e}"));
                }
            }
            Event::Closed => self.on_closed(i),
            Event::Pushed(Ok(())) => self.conns[i].pushed = true,
            Event::Pushed(Err(e)) => self.fail(i, &format!("--push: {e}")),
        }
        true
    }

    fn on_closed(&mut self, i: usize) {
        if self.conns[i].done {
            return;
        }
        let code = self.conns[i]
            .child
            .as_mut()
            .and_then(|c| wait_or_kill(c, Duration::from_secs(2)));
        self.conns[i].child = None;
        let tail = self.conns[i].stderr_tail().unwrap_or_default();
        let why = if !self.conns[i].hello && self.opts.push {
            format!(
                "--push: the copy or the pushed agent ended on the host before the agent answered (exit {})",
                code.map_or("by a signal".into(), |c| c.to_string())
            )
        } else if !self.conns[i].hello && (code == Some(127) || tail.contains("not found")) {
            format!(
                "no iolab agent on the host ({tail}); install iolab {} there, or give --push to copy this binary for the run",
                env!("CARGO_PKG_VERSION")
            )
        } else if !self.conns[i].hello {
            format!(
                "the launch command ended before the agent answered (exit {})",
                code.map_or("by a signal".into(), |c| c.to_string())
            )
        } else {
            "the connection closed (ssh or the agent died)".to_string()
        };
        self.fail(i, &why);
    }

    fn on_message(&mut self, i: usize, m: Message, at: u64) {
        let c = &mut self.conns[i];
        match m {
            Message::Hello {
                protocol,
                version,
                hostname,
                ..
            } => {
                let ours = env!("CARGO_PKG_VERSION");
                if protocol != PROTOCOL_VERSION || version != ours {
                    let why = format!(
                        "it runs iolab {version} (protocol {protocol}), this is iolab {ours} (protocol {PROTOCOL_VERSION}); install the same version there, or give --push to copy this binary for the run"
                    );
                    return self.fail(i, &why);
                }
                c.hello = true;
                c.result.hostname = Some(hostname);
                // A pushed agent runs: its copy was read whole, so the copy thread is ending;
                // it hands stdin back for the protocol.
                if let Some(w) = c.writer.take() {
                    match w.join() {
                        Ok(Some(stdin)) => {
                            c.stdin = Some(stdin);
                            c.pushed = true;
                        }
                        _ => self.fail(i, "--push: the copy did not finish"),
                    }
                }
            }
            Message::Prepared { system, target } => {
                c.result.system = Some(system);
                c.result.target_info = Some(target);
            }
            Message::Ready { workload, trial } => c.ready = Some((workload, trial)),
            Message::ProbeReply { seq, agent_unix_ns } => {
                c.replies.push((seq, agent_unix_ns, at));
            }
            Message::Tick { .. } => {}
            Message::Interval {
                workload,
                trial,
                sample,
            } => self.on_interval(i, (workload, trial), &sample),
            Message::TrialDone {
                started_unix_ns,
                sample,
                ..
            } => c.finished = Some((started_unix_ns, sample)),
            Message::Note { message } => {
                if !c.result.notes.contains(&message) {
                    c.result.notes.push(message);
                }
            }
            Message::Done { .. } => c.done = true,
            Message::Error { message } => self.fail(i, &message),
            other => {
                let why = format!(
                    "the agent sent '{}', which only a controller sends",
                    other.kind()
                );
                self.fail(i, &why);
            }
        }
    }

    /// Merges a host's second into the trial's, and closes the seconds every host still
    /// running has sent (their histograms are dropped then).
    fn on_interval(&mut self, i: usize, step: (usize, u32), s: &crate::sample::IntervalSample) {
        let Some((cur, m)) = self.seconds.as_mut() else {
            return;
        };
        if *cur != step {
            return;
        }
        m.add(i, s);
        let upto = self
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.failed() && c.finished.is_none())
            .map(|(j, _)| m.next_of(j))
            .min();
        if let Some(u) = upto {
            m.close_before(u);
        }
    }

    /// Waits until every live host satisfies `pred`. With a `limit`, hosts still not there
    /// are failed when it passes; with `watch`, hosts silent for longer than the stall time
    /// are failed.
    fn wait_all(
        &mut self,
        what: &str,
        limit: Option<Duration>,
        watch: bool,
        pred: impl Fn(&Conn) -> bool,
    ) -> Result<(), Stop> {
        let deadline = limit.map(|l| Instant::now() + l);
        let watch_from = Instant::now() + self.opts.start_margin;
        loop {
            self.check_policy()?;
            if crate::signals::stop_requested() {
                return Err(Stop::Interrupted);
            }
            if self.conns.iter().all(|c| c.failed() || pred(c)) {
                return Ok(());
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                for i in 0..self.conns.len() {
                    if !self.conns[i].failed() && !pred(&self.conns[i]) {
                        let s = limit.map_or(0, |l| l.as_secs());
                        self.fail(i, &format!("no '{what}' within {s} s"));
                    }
                }
                continue;
            }
            if watch && now > watch_from {
                for i in 0..self.conns.len() {
                    let c = &self.conns[i];
                    if !c.failed()
                        && !pred(c)
                        && now - c.last_heard.max(watch_from) > self.opts.stall
                    {
                        let s = self.opts.stall.as_secs();
                        self.fail(
                            i,
                            &format!("the agent stopped reporting (silent for {s} s)"),
                        );
                    }
                }
            }
            self.pump(now + Duration::from_millis(200));
        }
    }

    fn prepare_all(&mut self) {
        for i in 0..self.conns.len() {
            if self.conns[i].failed() {
                continue;
            }
            let m = Message::Prepare {
                suite: self.opts.suite.clone(),
                target: self.conns[i].result.target.clone(),
                repeat: self.opts.repeat.max(1),
                default_size: self.opts.default_size,
                drop_caches: self.opts.drop_caches,
                destroy: self.opts.destroy.clone(),
            };
            self.send(i, &m);
        }
    }

    /// Probes one host's clock: `probes` round trips, one at a time.
    fn probe(&mut self, i: usize) -> Option<ClockEstimate> {
        let mut got = Vec::new();
        for seq in 0..self.opts.probes {
            self.conns[i].replies.clear();
            let sent_ns = now_unix_ns();
            self.send(i, &Message::Probe { seq });
            let end = Instant::now() + Duration::from_secs(5);
            while !self.conns[i].failed() && Instant::now() < end {
                if let Some(&(_, agent_ns, received_ns)) =
                    self.conns[i].replies.iter().find(|r| r.0 == seq)
                {
                    got.push(Probe {
                        sent_ns,
                        agent_ns,
                        received_ns,
                    });
                    break;
                }
                self.pump(end);
            }
        }
        if got.is_empty() && !self.conns[i].failed() {
            self.fail(i, "no answer to clock probes within 5 s");
        }
        estimate(&got)
    }

    /// Probes every clock, picks the start instant and tells every agent.
    fn start_trial(&mut self, w: usize, t: u32) -> Result<TrialOnHosts, Stop> {
        let mut offsets = vec![None; self.conns.len()];
        for (i, off) in offsets.iter_mut().enumerate() {
            if !self.conns[i].failed() {
                *off = self.probe(i);
                self.conns[i].result.clock = *off;
            }
        }
        self.check_policy()?;
        let planned_ns = now_unix_ns() + self.opts.start_margin.as_nanos() as u64;
        self.seconds = Some(((w, t), SecondsMerger::new(self.conns.len())));
        for (i, off) in offsets.iter().enumerate() {
            if let (false, Some(o)) = (self.conns[i].failed(), off) {
                self.conns[i].finished = None;
                let unix_ns = to_agent(planned_ns, o.offset_ns);
                self.send(i, &Message::StartAt { unix_ns });
            }
        }
        Ok(TrialOnHosts {
            workload: w,
            trial: t,
            planned_ns,
            hosts: vec![None; self.conns.len()],
            seconds: Vec::new(),
        })
    }

    /// Takes each host's finished trial into the step.
    fn collect(&mut self, step: &mut TrialOnHosts) {
        if let Some((at, m)) = self.seconds.take()
            && at == (step.workload, step.trial)
        {
            step.seconds = m.finish();
        }
        for (i, c) in self.conns.iter_mut().enumerate() {
            let Some((started, sample)) = c.finished.take() else {
                continue;
            };
            if c.result.failed.is_some() {
                continue;
            }
            let clock = c.result.clock.unwrap_or_default();
            let start_ns = to_controller(started, clock.offset_ns);
            step.hosts[i] = Some(HostTrial {
                start_ns,
                skew_ns: start_ns as i64 - step.planned_ns as i64,
                agent_start_ns: started,
                clock,
                sample,
            });
        }
    }

    /// Closes every connection (the agents stop and clean up on EOF; a copy under way is cut
    /// short, which the host's shell removes), waits for them, closes ssh's shared connections.
    fn finish(&mut self, clean: bool) {
        self.cancel.store(true, Ordering::Relaxed);
        for c in &mut self.conns {
            c.stdin = None;
        }
        let limit = if clean { 10 } else { 15 };
        for c in &mut self.conns {
            if let Some(mut ch) = c.child.take() {
                wait_or_kill(&mut ch, Duration::from_secs(limit));
            }
        }
        for i in 0..self.conns.len() {
            self.launch.close_master(&self.conns[i].result.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_filled_and_push_replaces_the_command() {
        let l = Launch::new(Some("ssh -o BatchMode=yes {host} iolab agent --stdio")).expect("ok");
        assert_eq!(
            l.command("u@h", None).expect("cmd"),
            "ssh -o BatchMode=yes u@h iolab agent --stdio"
        );
        assert_eq!(
            l.command("h", Some("/tmp/x agent --stdio")).expect("cmd"),
            "ssh -o BatchMode=yes h /tmp/x agent --stdio"
        );
        let e = Launch::new(Some(" ")).expect_err("empty");
        assert!(e.to_string().contains("{host}"), "{e}");
        let k =
            Launch::new(Some("kubectl exec -i {host} -- /opt/iolab agent --stdio")).expect("ok");
        assert!(k.command("p", Some("x")).is_err());
        let d = Launch::new(None).expect("default");
        let c = d.command("h", None).expect("cmd");
        assert!(
            c.contains("ControlPath=/") && !c.contains("{control}"),
            "{c}"
        );
    }
}
