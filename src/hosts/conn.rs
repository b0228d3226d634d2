//! The controller's connections to its agents: each host's launch command started with its
//! stdin, stdout and stderr piped, one reader thread per stream feeding the controller's
//! channel, and what each line from an agent does to the controller's view of that host.
//! [`super::controller`] drives the steps of a run over this state (it imports this module;
//! this module needs nothing from it).

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::launch::{Launch, wait_or_kill};
use super::outcome::{HostResult, Options};
use super::protocol::{Message, PROTOCOL_VERSION, parse_line};
use super::seconds::SecondsMerger;
use crate::sample::{TrialSample, now_unix_ns};

/// What a host's reader threads (and its `--push` copy) tell the controller.
pub(super) enum Event {
    /// A protocol line, with when it was received (Unix ns).
    Line(Box<Message>, u64),
    /// A line that is not protocol (noise before the agent started, or a broken agent).
    Bad(String),
    /// Its stdout closed.
    Closed,
    /// `--push`: every byte of the binary was written (or the copy failed).
    Pushed(Result<(), String>),
}

/// One agent connection.
pub(super) struct Conn {
    pub(super) result: HostResult,
    pub(super) child: Option<Child>,
    pub(super) stdin: Option<ChildStdin>,
    /// `--push`: the thread copying the binary; it holds stdin until the copy is written.
    pub(super) writer: Option<JoinHandle<Option<ChildStdin>>>,
    /// `--push`: the whole binary is written.
    pub(super) pushed: bool,
    pub(super) stderr: Arc<Mutex<VecDeque<String>>>,
    pub(super) hello: bool,
    pub(super) ready: Option<(usize, u32)>,
    pub(super) replies: Vec<(u32, u64, u64)>,
    pub(super) finished: Option<(u64, TrialSample)>,
    pub(super) done: bool,
    pub(super) last_heard: Instant,
}

impl Conn {
    /// A host not yet launched: its name and target (its own, or the run's).
    pub(super) fn new(name: String, target: Option<std::path::PathBuf>) -> Conn {
        Conn {
            result: HostResult {
                name,
                target,
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
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.result.failed.is_some()
    }

    pub(super) fn stderr_tail(&self) -> Option<String> {
        let t = self.stderr.lock().ok()?;
        t.iter().rev().find(|l| !l.trim().is_empty()).cloned()
    }
}

/// The controller's state: the run's options, every host's connection, the channel their
/// reader threads feed, and the trial's seconds merged so far. The steps of a run are its
/// methods in [`super::controller`]; how each host is launched, heard and failed, here.
pub(super) struct Controller<'a> {
    pub(super) opts: &'a Options,
    pub(super) launch: &'a Launch,
    pub(super) conns: Vec<Conn>,
    pub(super) tx: Sender<(usize, Event)>,
    pub(super) rx: Receiver<(usize, Event)>,
    /// Stops `--push` copies still under way (the run ends).
    pub(super) cancel: Arc<AtomicBool>,
    /// The trial under way and its seconds merged so far.
    pub(super) seconds: Option<((usize, u32), SecondsMerger)>,
}

impl Controller<'_> {
    pub(super) fn spawn(&mut self, i: usize) {
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

    pub(super) fn send(&mut self, i: usize, m: &Message) {
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
    pub(super) fn fail(&mut self, i: usize, why: &str) {
        let c = &mut self.conns[i];
        if c.failed() {
            return;
        }
        let mut why = why.to_string();
        if let Some(t) = c
            .stderr_tail()
            .filter(|t| !why.contains(t.as_str()) && !t.contains(why.as_str()))
        {
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

    /// Handles one event, waiting until `until` at most. False when none came.
    pub(super) fn pump(&mut self, until: Instant) -> bool {
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
            "the connection closed (the launch command or the agent died: ssh, srun, kubectl...)"
                .to_string()
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
            // An agent interrupted on its host (a signal) did not finish the run.
            Message::Done { interrupted: true } => {
                self.fail(i, super::agent::SIGNALLED);
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
}
