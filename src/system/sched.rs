//! How much the calling thread was kept from its CPU: the scheduler's own account, read
//! before and after a trial's window.
//!
//! A worker that is runnable but not running (another process has its CPU) holds its
//! completed IOs until it runs again, and those IOs' latency includes the wait: the tail then
//! says more about the machine than about the device. Two sources tell: the run-queue delay
//! (`/proc/thread-self/schedstat`, where the kernel is built with `CONFIG_SCHED_INFO`) and,
//! always, the times the thread was preempted (`getrusage(RUSAGE_THREAD)`'s involuntary
//! context switches).

/// The scheduler's counters of one thread, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadSched {
    /// CPU time, user + system, ns.
    pub cpu_ns: u64,
    /// Time spent runnable but waiting for a CPU, ns, when the kernel accounts it.
    pub wait_ns: Option<u64>,
    /// Times the thread was preempted (runnable, and another task got its CPU).
    pub preempted: u64,
    /// The wall time these counters span, ns (summed over threads by [`ThreadSched::plus`]):
    /// a wait's share is of this, which includes the ramp and the drain the counters saw.
    pub wall_ns: u64,
}

/// Monotonic ns since the first reading in this process: the wall clock the counters span.
fn monotonic_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    u64::try_from(
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos(),
    )
    .unwrap_or(u64::MAX)
}

impl ThreadSched {
    /// The calling thread's counters.
    pub fn now() -> ThreadSched {
        let (cpu_ns, preempted) = crate::sys::rusage_thread();
        let wait_ns = std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| run_queue_wait(&s));
        ThreadSched {
            cpu_ns,
            wait_ns,
            preempted,
            wall_ns: monotonic_ns(),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: ThreadSched) -> ThreadSched {
        ThreadSched {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            wait_ns: self
                .wait_ns
                .zip(earlier.wait_ns)
                .map(|(a, b)| a.saturating_sub(b)),
            preempted: self.preempted.saturating_sub(earlier.preempted),
            wall_ns: self.wall_ns.saturating_sub(earlier.wall_ns),
        }
    }

    /// Two threads' counters together (a trial's workers); the wait is known only when it
    /// is known for both.
    pub fn plus(self, o: ThreadSched) -> ThreadSched {
        ThreadSched {
            cpu_ns: self.cpu_ns + o.cpu_ns,
            wait_ns: self.wait_ns.zip(o.wait_ns).map(|(a, b)| a + b),
            preempted: self.preempted + o.preempted,
            wall_ns: self.wall_ns + o.wall_ns,
        }
    }
}

/// `schedstat`'s run-queue wait (its second number), when the kernel keeps the account: one
/// built without it prints `0 0 0`. (A thread's run time, the first number, is booked when a
/// slice ends, so a thread still in its first slice reads 0 there and a wait already.)
fn run_queue_wait(s: &str) -> Option<u64> {
    let mut it = s.split_whitespace().map(str::parse::<u64>);
    let run = it.next()?.ok()?;
    let wait = it.next()?.ok()?;
    let slices = it.next()?.ok()?;
    (run, wait, slices).ne(&(0, 0, 0)).then_some(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_queue_wait_is_read_only_where_the_kernel_keeps_it() {
        assert_eq!(run_queue_wait("1000 200 3\n"), Some(200));
        assert_eq!(
            run_queue_wait("0 6121 1\n"),
            Some(6121),
            "a thread in its first slice has waited already"
        );
        assert_eq!(
            run_queue_wait("0 0 0\n"),
            None,
            "no accounting in this kernel"
        );
        assert_eq!(run_queue_wait("12 x 3"), None);
        assert_eq!(run_queue_wait(""), None);
    }

    #[test]
    fn the_counters_subtract_and_add() {
        let a = ThreadSched {
            cpu_ns: 100,
            wait_ns: Some(10),
            preempted: 1,
            wall_ns: 1_000,
        };
        let b = ThreadSched {
            cpu_ns: 400,
            wait_ns: Some(70),
            preempted: 5,
            wall_ns: 1_500,
        };
        let d = b.since(a);
        assert_eq!(
            d,
            ThreadSched {
                cpu_ns: 300,
                wait_ns: Some(60),
                preempted: 4,
                wall_ns: 500,
            }
        );
        let sum = d.plus(ThreadSched {
            cpu_ns: 1,
            wait_ns: None,
            preempted: 2,
            wall_ns: 700,
        });
        assert_eq!(sum.wait_ns, None, "one thread without the account: unknown");
        assert_eq!(sum.preempted, 6);
        assert_eq!(sum.wall_ns, 1_200, "two threads' spans add up");
    }

    /// A thread kept off its CPU by another that wants the same CPU is counted as preempted.
    #[test]
    fn a_thread_sharing_its_cpu_with_a_busy_one_is_preempted() {
        let cpu = rustix::thread::sched_getcpu();
        let pin = |c: usize| {
            let mut set = rustix::thread::CpuSet::new();
            set.set(c);
            rustix::thread::sched_setaffinity(None, &set).is_ok()
        };
        if !pin(cpu) {
            return;
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let hog = std::thread::spawn(move || {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            let _ = rustix::thread::sched_setaffinity(None, &set);
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let a = ThreadSched::now();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(300) {
            std::hint::spin_loop();
        }
        let d = ThreadSched::now().since(a);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hog.join().unwrap();
        assert!(d.preempted > 0, "{d:?}");
        assert!(d.cpu_ns < 290_000_000, "it shared the CPU: {d:?}");
        // The wait is a share of the span the counters cover: never more than all of it.
        assert!(d.wall_ns >= 300_000_000, "{d:?}");
        if let Some(w) = d.wait_ns {
            assert!(w > 0 && w <= d.wall_ns, "{d:?}");
        }
    }
}
