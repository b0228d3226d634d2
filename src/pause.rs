//! A test hook that stops the process at a named step, so the fault tests can SIGKILL it (or
//! fill its disk) at exactly that point.
//!
//! Inactive unless `IOLAB_PAUSE_AT` is set: then, at each step it names (a comma-separated list
//! of step names, or `all`), iolab prints `paused at STEP` to stderr and stops itself with
//! SIGSTOP (sent to the calling thread, so it stops right there) until a SIGCONT. A normal run
//! reads the variable once and never stops.

use std::sync::OnceLock;

/// The steps a run, a lab, a VM lab (`lab --vm`, host side) and a many-host run (`run --hosts`,
/// the controller) pass, in order; the kill tests walk this list.
pub const STEPS: &[&str] = &[
    "target resolved",
    "run begun",
    "file laid out",
    "trial started",
    "store commit",
    "run finished",
    "layout built",
    "verification set written",
    "teardown",
    "vm disks created",
    "vm booted",
    "vm guest finished",
    "vm results copied",
    "hosts pushing",
    "hosts pushed",
    "hosts connected",
    "hosts ready",
    "hosts started",
    "hosts collected",
];

fn wanted() -> &'static Option<Vec<String>> {
    static W: OnceLock<Option<Vec<String>>> = OnceLock::new();
    W.get_or_init(|| {
        std::env::var("IOLAB_PAUSE_AT")
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
    })
}

/// Stops here when `IOLAB_PAUSE_AT` names `step` (see the module doc); otherwise nothing.
pub fn at(step: &str) {
    let Some(w) = wanted() else {
        return;
    };
    if w.iter().any(|s| s == step || s == "all") {
        use std::io::Write as _;
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "paused at {step}");
        let _ = e.flush();
        drop(e);
        crate::sys::stop_this_thread();
    }
}
