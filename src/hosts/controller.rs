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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::HostSpec;
use super::clock::{ClockEstimate, Probe, estimate, to_agent, to_controller};
use super::conn::{Conn, Controller};
use super::launch::{Launch, wait_or_kill};
use super::outcome::{HostTrial, OnFailure, Options, Outcome, TrialOnHosts};
use super::protocol::Message;
use super::seconds::SecondsMerger;
use crate::sample::now_unix_ns;

/// How long `--push` may take to copy the binary to a host.
const PUSH_LIMIT: Duration = Duration::from_secs(300);

/// Why the step loop stopped.
enum Stop {
    Interrupted,
    Failed(String),
}

/// Runs the suite on every host. Errors of the run are in the outcome, next to what was
/// measured before them.
pub fn run(hosts: &[HostSpec], launch: &Launch, opts: &Options) -> Outcome {
    let started_unix_ms = crate::sample::now_unix_ms();
    let cpu0 = cpu_ns();
    let (tx, rx) = std::sync::mpsc::channel();
    let conns = hosts
        .iter()
        .map(|h| {
            let target = h.target.clone().or_else(|| opts.default_target.clone());
            Conn::new(h.name.clone(), target)
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
