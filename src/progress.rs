//! Progress: counters the workers bump once per batch, and a line with an ETA on a terminal.
//!
//! The counters are always there (cheap relaxed atomics); the display only exists when stderr
//! is a terminal and output is not `--json`, so piped runs stay quiet and machine-readable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the workers have done so far in the current trial.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes completed.
    pub bytes: AtomicU64,
    /// Operations completed.
    pub ops: AtomicU64,
}

impl Counters {
    /// Adds a batch.
    #[inline]
    pub fn add(&self, bytes: u64, ops: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.ops.fetch_add(ops, Ordering::Relaxed);
    }
    /// Zeroes the counters for a new trial.
    pub fn reset(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        self.ops.store(0, Ordering::Relaxed);
    }
}

/// A live progress line: what runs, trial k of n, throughput, ETA of the whole job.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    counters: Arc<Counters>,
    started: Instant,
    total_estimate: Duration,
    ticker: Option<std::thread::JoinHandle<()>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    message: Arc<std::sync::Mutex<String>>,
}

impl Progress {
    /// A progress display; `visible` false gives counters without any output.
    pub fn new(visible: bool, total_estimate: Duration) -> Progress {
        use std::io::IsTerminal;
        let show = visible && std::io::stderr().is_terminal();
        let counters = Arc::new(Counters::default());
        let bar = show.then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
            b
        });
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let message = Arc::new(std::sync::Mutex::new(String::new()));
        let started = Instant::now();
        let ticker = bar.clone().map(|b| {
            let c = counters.clone();
            let stop = stop.clone();
            let msg = message.clone();
            std::thread::spawn(move || {
                let mut last = (Instant::now(), 0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let now = Instant::now();
                    let bytes = c.bytes.load(Ordering::Relaxed);
                    let ops = c.ops.load(Ordering::Relaxed);
                    let dt = now.duration_since(last.0).as_secs_f64().max(1e-6);
                    let mbps = bytes.saturating_sub(last.1) as f64 / dt / 1e6;
                    let iops = ops.saturating_sub(last.2) as f64 / dt;
                    last = (now, bytes, ops);
                    let elapsed = now.duration_since(started);
                    let eta = total_estimate.saturating_sub(elapsed);
                    let m = msg.lock().map(|m| m.clone()).unwrap_or_default();
                    b.set_message(format!(
                        "{m}  {mbps:.0} MB/s  {iops:.0} IOPS  elapsed {}  ETA {}",
                        crate::units::format_duration(elapsed),
                        crate::units::format_duration(eta)
                    ));
                    b.tick();
                }
            })
        });
        Progress {
            bar,
            counters,
            started,
            total_estimate,
            ticker,
            stop,
            message,
        }
    }

    /// The counters the workers bump.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Says what is running now.
    pub fn set_message(&self, m: String) {
        if let Ok(mut g) = self.message.lock() {
            *g = m;
        }
    }

    /// Prints a line above the progress line (or to stderr when there is none).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Time since the job started, and the estimate it was given.
    pub fn elapsed(&self) -> (Duration, Duration) {
        (self.started.elapsed(), self.total_estimate)
    }

    /// Removes the line.
    pub fn finish(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shutdown();
    }
}
