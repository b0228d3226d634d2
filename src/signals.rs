//! Ctrl-C and SIGTERM: the first one asks the work to stop and clean up; a second one exits.
//!
//! Long loops poll [`stop_requested`]; cleanup then runs through the normal drop path, so loop
//! devices, mounts and temp files are removed and finished results are kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn flag() -> &'static Arc<AtomicBool> {
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Installs the handlers (idempotent). A second signal while stopping exits at once with 130.
pub fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let f = flag().clone();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // A second signal after the flag is set terminates immediately.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, f.clone());
            let _ = signal_hook::flag::register(sig, f.clone());
        }
    });
}

/// True once Ctrl-C or SIGTERM arrived.
#[inline]
pub fn stop_requested() -> bool {
    flag().load(Ordering::Relaxed)
}

/// The shared flag, for worker threads that poll it in a hot loop.
pub fn stop_flag() -> Arc<AtomicBool> {
    flag().clone()
}

/// Asks the work to stop as if a signal had arrived (tests, fatal errors in one worker).
pub fn request_stop() {
    flag().store(true, Ordering::Relaxed);
}
