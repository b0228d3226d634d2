//! Running the helper tools whose structured output the census reads (`blkid -o export`,
//! `smartctl -j`, `pvs --reportformat json`), all at once and with a time limit: a dying disk
//! can hang a tool, and a census must still finish.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a helper tool may take before it is killed and its fact shown as "-".
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs every command at once and returns each one's stdout, or `None` when it could not be
/// started (not installed) or did not finish within `timeout`. The exit status is not checked:
/// `smartctl` and `blkid` exit non-zero for partial answers that are still worth reading.
pub fn run_all(cmds: Vec<Command>, timeout: Duration) -> Vec<Option<Vec<u8>>> {
    struct Running {
        child: std::process::Child,
        reader: std::thread::JoinHandle<Vec<u8>>,
    }
    let mut running: Vec<Option<Running>> = cmds
        .into_iter()
        .map(|mut c| {
            c.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            let mut child = c.spawn().ok()?;
            let mut out = child.stdout.take()?;
            // Reading in a thread keeps a chatty tool from blocking on a full pipe.
            let reader = std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = out.read_to_end(&mut buf);
                buf
            });
            Some(Running { child, reader })
        })
        .collect();
    let deadline = Instant::now() + timeout;
    let mut done: Vec<Option<bool>> = running.iter().map(|r| r.as_ref().map(|_| false)).collect();
    loop {
        let mut pending = false;
        for (r, d) in running.iter_mut().zip(done.iter_mut()) {
            if let (Some(r), Some(false)) = (r.as_mut(), *d) {
                match r.child.try_wait() {
                    Ok(Some(_)) => *d = Some(true),
                    Ok(None) => pending = true,
                    Err(_) => *d = None,
                }
            }
        }
        if !pending || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    running
        .into_iter()
        .zip(done)
        .map(|(r, d)| {
            let mut r = r?;
            if d != Some(true) {
                // Too slow: kill it (the reader then sees end of file) and drop its answer.
                let _ = r.child.kill();
                let _ = r.child.wait();
                let _ = r.reader.join();
                return None;
            }
            r.reader.join().ok()
        })
        .collect()
}

/// Runs one command with the time limit.
pub fn run_one(cmd: Command, timeout: Duration) -> Option<Vec<u8>> {
    run_all(vec![cmd], timeout).pop().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_output_of_each_command_in_order() {
        let mut a = Command::new("sh");
        a.args(["-c", "echo one"]);
        let mut b = Command::new("sh");
        b.args(["-c", "echo two; exit 3"]);
        let out = run_all(vec![a, b], Duration::from_secs(5));
        assert_eq!(out[0].as_deref(), Some(&b"one\n"[..]));
        assert_eq!(
            out[1].as_deref(),
            Some(&b"two\n"[..]),
            "exit status ignored"
        );
    }

    #[test]
    fn missing_tool_and_slow_tool_give_none() {
        let missing = Command::new("iolab-no-such-tool");
        let mut slow = Command::new("sleep");
        slow.arg("5");
        let t0 = Instant::now();
        let out = run_all(vec![missing, slow], Duration::from_millis(200));
        assert!(out[0].is_none());
        assert!(out[1].is_none());
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "killed at the deadline"
        );
    }
}
