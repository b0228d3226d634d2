//! `iolab capture` started and stopped by a test: started in the background and waited for
//! until its tracepoints are on (so the IOs that follow are recorded), stopped with Ctrl-C once
//! the workload is done (a capture of a fixed time could end before a slow, loaded machine
//! finished the workload), the trace read back.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iolab::trace::{Trace, read_trace};

use super::{Iolab, Out};

/// The tracing instance of capture process `pid` (in tracefs where it is, or where the
/// capture mounts it).
pub(crate) fn instance(pid: u32) -> PathBuf {
    super::tracefs().join(format!("instances/iolab-{pid}"))
}

/// Starts `iolab capture ARGS --json` and returns once its events are on (the instance's issue
/// and complete events are enabled), so the IOs that follow are recorded.
pub(crate) fn start_capture(args: &[&str]) -> Child {
    let mut c = Iolab::new()
        .arg("capture")
        .args(args)
        .arg("--json")
        .command();
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn iolab capture");
    let inst = instance(child.id());
    let enabled = |e: &str| {
        std::fs::read_to_string(inst.join("events/block").join(e).join("enable"))
            .is_ok_and(|s| s.trim() == "1")
    };
    let t0 = Instant::now();
    loop {
        let issue = enabled("block_rq_issue") || enabled("block_bio_queue");
        let complete = enabled("block_rq_complete") || enabled("block_bio_complete");
        if issue && complete {
            break;
        }
        if let Ok(Some(_)) = child.try_wait() {
            let o = child.wait_with_output().expect("output");
            panic!(
                "capture ended before recording: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "capture never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Waits for a capture to end by itself.
pub(crate) fn finish(child: Child) -> Out {
    let o = child.wait_with_output().expect("capture output");
    Out::new("iolab capture".into(), o)
}

/// Ends a capture with Ctrl-C: it keeps what it recorded, exits 130 and marks the trace
/// interrupted. The trace read back.
pub(crate) fn stop_capture(child: Child, out: &Path) -> Trace {
    stop_capture_json(child, out).1
}

/// [`stop_capture`], with the capture's `--json` document (the header, what it traced).
pub(crate) fn stop_capture_json(child: Child, out: &Path) -> (serde_json::Value, Trace) {
    let stopped = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success(), "kill -INT the capture");
    let o = finish(child);
    assert_eq!(o.code, 130, "{}", o.stderr);
    let t = read_trace(out).unwrap();
    assert!(t.header.interrupted, "the trace says it was stopped early");
    (o.json(), t)
}

/// A capture's `--time` that no workload of a test comes near, even on a loaded machine (the
/// 4 s ground-truth mix took 60-80 s beside four busy loops on two cores): only a test that
/// died before stopping its capture ever reaches it. Such captures end on [`stop_capture`]
/// once the workload is done, never on a fixed window a loaded machine may overrun.
pub(crate) const UNTIL_STOPPED: &str = "1h";
