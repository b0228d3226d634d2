//! The error vocabulary every stage may speak and the command line turns into exit codes:
//! a usage mistake, an interruption, the exit codes themselves (0 ok, 1 run failed, 2 usage
//! error, 130 interrupted) and `one_line`, which renders an error chain as one message.
//!
//! It imports nothing from the crate, so `session` can record an error the way the command line
//! prints it without reaching forward into `cli`.

/// Exit code of a run that could not do its work.
pub const EXIT_FAILED: u8 = 1;
/// Exit code of bad input: a flag, a spec field, a target that cannot be used.
pub const EXIT_USAGE: u8 = 2;
/// Exit code after Ctrl-C or SIGTERM (128 + SIGINT, as shells expect).
pub const EXIT_INTERRUPTED: u8 = 130;

/// A mistake in what the user asked for; exits 2. The message names the field and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The user stopped the work (Ctrl-C, SIGTERM); exits 130 after cleanup.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Builds a usage error in an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// An error and its causes on one line: "what failed: why".
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}
