//! `iolab agent --stdio`: the far side of `iolab run --hosts`.
//!
//! Started by the controller's launch command (ssh by default), it speaks the line protocol of
//! [`super::protocol`] on stdin/stdout and writes diagnostics to stderr. It prepares its target
//! as a local `iolab run` does ([`crate::session::prepare`]) and runs the same runner
//! ([`crate::runner::suite::run_suite`]); the only difference is the sink: before each trial it
//! reports `ready` and waits at the barrier, answering clock probes, until the controller names
//! the start instant.
//!
//! stdin is the dead-man switch: when it closes (the controller died, ssh dropped, the pod
//! went away), the agent stops its IO at once, removes the files it made and exits. No IO
//! outlives the connection that asked for it.

use std::io::{BufRead as _, Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::{MAX_LINE_BYTES, Message, PROTOCOL_VERSION, parse_line};
use crate::runner::io::Control;
use crate::runner::suite::{Sink, SuiteOptions, run_suite};
use crate::sample::TrialSample;
use crate::spec::Workload;
use crate::target::TargetRequest;

/// How long an agent waits for `prepare` after saying hello.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(120);

/// What the stdin reader hands the agent's main thread.
enum Inbound {
    Msg(Box<Message>),
    Bad(String),
    Eof,
}

/// The agent's stdout: one writer for the main thread and the ticker, a line at a time.
#[derive(Clone)]
struct Out {
    w: Arc<Mutex<std::io::Stdout>>,
    /// Set when stdout is gone (the controller closed it): stop like on stdin EOF.
    stop: Arc<AtomicBool>,
}

impl Out {
    fn send(&self, m: &Message) {
        let line = m.to_line();
        let ok = self
            .w
            .lock()
            .is_ok_and(|mut w| w.write_all(line.as_bytes()).is_ok() && w.flush().is_ok());
        if !ok {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The trial the ticker reports on: (workload, trial, started when the gate opened).
type Current = Arc<Mutex<Option<(usize, u32)>>>;

/// Deletes the running binary when it is a copy `--push` made (named `iolab-push-*`): Linux
/// keeps running an unlinked executable, and a controller killed mid-run cannot remove it.
pub fn remove_pushed_self() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let pushed = exe
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(PUSH_PREFIX));
    if pushed && let Err(e) = std::fs::remove_file(&exe) {
        eprintln!(
            "iolab agent: note: cannot remove the pushed copy {}: {e}",
            exe.display()
        );
    }
}

/// The name every binary copied by `--push` starts with.
pub const PUSH_PREFIX: &str = "iolab-push-";

/// Runs the agent until the suite ends or stdin closes. Returns the process exit code.
pub fn run_stdio() -> u8 {
    crate::signals::install();
    let stop = crate::signals::stop_flag();
    let out = Out {
        w: Arc::new(Mutex::new(std::io::stdout())),
        stop: stop.clone(),
    };
    out.send(&Message::Hello {
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: hostname(),
        pid: std::process::id(),
    });
    let rx = spawn_reader(stop.clone());
    let prepare = match await_prepare(&out, &rx) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let Message::Prepare {
        suite,
        target,
        repeat,
        default_size,
        drop_caches,
        destroy,
    } = prepare
    else {
        unreachable!("matched above")
    };
    let writes = suite_writes(&suite);
    let opts = SuiteOptions {
        repeat: repeat.max(1),
        max_repeat: repeat.max(1),
        drop_caches,
        default_size,
        ..SuiteOptions::default()
    };
    // The same first half as a local run (target, checks, preflight); the second half is the
    // agent's own: `run_suite` under the barrier sink, trials streamed to the controller, which
    // keeps the record and the store. Replays are not fitted: the controller sends the suite
    // as it built it.
    let request = TargetRequest {
        path: target,
        writes,
        destroy,
    };
    let target = match crate::session::prepare(&suite, &opts, &request) {
        Ok(t) => t,
        Err(e) => return fail(&out, &e.to_string()),
    };
    out.send(&Message::Prepared {
        system: crate::system::SystemInfo::collect(),
        target: target.info.clone(),
    });
    let current: Current = Arc::new(Mutex::new(None));
    let ctl = Control {
        stop: stop.clone(),
        intervals: Some(interval_listener(out.clone(), current.clone())),
        ..Control::default()
    };
    let ticker = spawn_ticker(out.clone(), ctl.clone(), current.clone());
    let mut sink = AgentSink {
        out: out.clone(),
        rx,
        ctl: ctl.clone(),
        current: current.clone(),
    };
    let outcome = run_suite(&suite, &target, &opts, &ctl, &mut sink);
    // The runner removed its test file when it returned; a temporary directory goes with
    // the target.
    drop(target);
    if let Ok(mut c) = current.lock() {
        *c = None;
    }
    drop(ticker);
    finish(&out, &stop, &sink, outcome)
}

/// Waits for the controller's `prepare`; anything else ends the agent with the exit code it
/// returns (0 when the controller closed the connection first).
fn await_prepare(out: &Out, rx: &Receiver<Inbound>) -> Result<Message, u8> {
    match rx.recv_timeout(PREPARE_TIMEOUT) {
        Ok(Inbound::Msg(m)) if matches!(*m, Message::Prepare { .. }) => Ok(*m),
        Ok(Inbound::Msg(m)) => Err(fail(
            out,
            &format!("expected 'prepare', got '{}'", m.kind()),
        )),
        Ok(Inbound::Bad(e)) => Err(fail(out, &e)),
        Ok(Inbound::Eof) | Err(RecvTimeoutError::Disconnected) => Err(0),
        Err(RecvTimeoutError::Timeout) => Err(fail(out, "no 'prepare' within 120 s")),
    }
}

/// Whether the suite writes to the target. A cached read counts as writing here (a local run's
/// `session::suite_writes` says it only reads): the controller sends block-IO workloads only,
/// so the two never differ on what reaches an agent, and the agent stays on the safe side for
/// what does not.
fn suite_writes(suite: &crate::spec::Suite) -> bool {
    suite.workloads.iter().any(|w| match &w.kind {
        crate::spec::WorkloadKind::Io(io) => {
            io.pattern.writes() && io.engine != crate::spec::EngineKind::Null
        }
        _ => true,
    })
}

/// The end of a run the agent made: the exit code, with the controller told how it ended
/// (nothing to tell when its connection closed).
fn finish(
    out: &Out,
    stop: &AtomicBool,
    sink: &AgentSink,
    outcome: crate::runner::suite::SuiteOutcome,
) -> u8 {
    if stop.load(Ordering::Relaxed) && sink.eof() {
        eprintln!("iolab agent: the controller's connection closed: IO stopped, files removed");
        return 1;
    }
    if let Some(e) = outcome.error {
        return fail(out, &crate::error::one_line(&e));
    }
    if outcome.interrupted || stop.load(Ordering::Relaxed) {
        // Not the controller (its connection is open): a signal on the host. Say so and
        // leave at once, so the controller fails this host now, not when it falls silent
        // (Slurm's `scancel` sends SIGTERM, and SIGKILL only after its KillWait).
        return fail(out, SIGNALLED);
    }
    out.send(&Message::Done {
        interrupted: outcome.interrupted,
    });
    // Wait for the controller to close stdin, so it reads every line first.
    sink.drain(Duration::from_secs(10));
    0
}

/// What an agent stopped by SIGTERM or SIGINT tells the controller.
pub const SIGNALLED: &str = "the agent was stopped by a signal on its host (SIGTERM or SIGINT: scancel, kill, a shutdown); its IO stopped and its files are removed";

fn fail(out: &Out, msg: &str) -> u8 {
    eprintln!("iolab agent: error: {msg}");
    out.send(&Message::Error {
        message: msg.to_string(),
    });
    1
}

/// This machine's host name (for the controller's messages).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Reads stdin line by line on a thread; EOF (or a read error) sets `stop` at once, so IO
/// ends even while the main thread is busy in a trial.
fn spawn_reader(stop: Arc<AtomicBool>) -> Receiver<Inbound> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        let mut line = String::new();
        loop {
            line.clear();
            let n = std::io::Read::by_ref(&mut lock)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_line(&mut line);
            match n {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let m = match parse_line(&line) {
                        Ok(m) => Inbound::Msg(Box::new(m)),
                        Err(e) => Inbound::Bad(e.to_string()),
                    };
                    if tx.send(m).is_err() {
                        return;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let _ = tx.send(Inbound::Eof);
    });
    rx
}

/// Streams each second of the window as the runner closes it (on the runner's collector
/// thread: serializing the histograms costs the IO threads nothing). The trial is the current
/// one: the runner closes every second before the trial returns, so before `trial_done`.
fn interval_listener(out: Out, current: Current) -> crate::runner::interval::IntervalListener {
    Arc::new(move |s: &crate::sample::IntervalSample| {
        let Some((workload, trial)) = current.lock().ok().and_then(|c| *c) else {
            return;
        };
        out.send(&Message::Interval {
            workload,
            trial,
            sample: s.clone(),
        });
    })
}

/// Sends cumulative counters once a second while a trial runs: the controller's live view and
/// the heartbeat it fails a silent host by.
struct Ticker {
    done: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn spawn_ticker(out: Out, ctl: Control, current: Current) -> Ticker {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let handle = std::thread::spawn(move || {
        let mut last: Option<(usize, u32, u32)> = None;
        while !d.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            let Some((workload, trial)) = current.lock().ok().and_then(|c| *c) else {
                continue;
            };
            let started = ctl.gate.started_unix_ns.load(Ordering::Acquire);
            let at = ctl.gate.not_before_unix_ns.load(Ordering::Acquire);
            let now = crate::sample::now_unix_ns();
            let zero = if started >= at { started } else { at };
            let t = (now.saturating_sub(zero) / 1_000_000_000) as u32;
            if now < zero || last == Some((workload, trial, t)) {
                continue;
            }
            last = Some((workload, trial, t));
            out.send(&Message::Tick {
                workload,
                trial,
                t,
                ops: ctl.counters.ops.load(Ordering::Relaxed),
                bytes: ctl.counters.bytes.load(Ordering::Relaxed),
            });
        }
    });
    Ticker {
        done,
        handle: Some(handle),
    }
}

/// The runner's sink on the agent: trials go to stdout; each trial waits at the barrier.
struct AgentSink {
    out: Out,
    rx: Receiver<Inbound>,
    ctl: Control,
    current: Current,
}

impl AgentSink {
    /// True when stdin has closed (the reader set `stop` and left).
    fn eof(&self) -> bool {
        matches!(
            self.rx.try_recv(),
            Err(std::sync::mpsc::TryRecvError::Disconnected) | Ok(Inbound::Eof)
        )
    }

    /// Reads until stdin closes or `limit` passes.
    fn drain(&self, limit: Duration) {
        let end = std::time::Instant::now() + limit;
        while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(Inbound::Eof) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }

    /// Waits at the barrier: answers probes until `start_at` comes (or stdin closes, or a
    /// signal stops the agent: the trial then ends at once).
    fn barrier(&mut self) {
        loop {
            if self.ctl.stop.load(Ordering::Relaxed) {
                return;
            }
            match self.rx.recv_timeout(Duration::from_millis(100)) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Inbound::Msg(m)) => match *m {
                    Message::Probe { seq } => self.out.send(&Message::ProbeReply {
                        seq,
                        agent_unix_ns: crate::sample::now_unix_ns(),
                    }),
                    Message::StartAt { unix_ns } => {
                        self.ctl
                            .gate
                            .not_before_unix_ns
                            .store(unix_ns, Ordering::Release);
                        return;
                    }
                    other => eprintln!(
                        "iolab agent: ignored '{}' while waiting for start_at",
                        other.kind()
                    ),
                },
                Ok(Inbound::Bad(e)) => eprintln!("iolab agent: {e}"),
                Ok(Inbound::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    self.ctl.stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    }
}

impl Sink for AgentSink {
    fn trial_start(&mut self, index: usize, _w: &Workload, trial: u32, _planned: u32) {
        self.ctl.gate.started_unix_ns.store(0, Ordering::Release);
        self.out.send(&Message::Ready {
            workload: index,
            trial,
        });
        self.barrier();
        if let Ok(mut c) = self.current.lock() {
            *c = Some((index, trial));
        }
    }

    fn trial_done(&mut self, index: usize, _w: &Workload, t: &TrialSample) -> anyhow::Result<()> {
        if let Ok(mut c) = self.current.lock() {
            *c = None;
        }
        self.out.send(&Message::TrialDone {
            workload: index,
            trial: t.trial,
            started_unix_ns: self.ctl.gate.started_unix_ns.load(Ordering::Acquire),
            sample: t.clone(),
        });
        Ok(())
    }

    fn note(&mut self, msg: &str) {
        self.out.send(&Message::Note {
            message: msg.to_string(),
        });
    }
}
