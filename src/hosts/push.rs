//! `--push`: this binary copied to a host inside the agent's own session, so that no kill of
//! the controller, at any moment, leaves a copy behind on the host.
//!
//! The launch template's `iolab agent --stdio` is replaced by a bare `sh` (one word: it needs
//! no quoting whether the launcher hands it to a remote shell, as ssh does, or runs it
//! directly, as `kubectl exec` and `srun` do). The controller writes, on that shell's stdin:
//!
//! 1. [`script`], one line. The shell creates the file (`set -C`: never an existing one,
//!    `umask 077`: private), arms `trap 'rm -f FILE' EXIT` (and `exit` on HUP, INT, TERM, PIPE),
//!    and prints [`READY`].
//! 2. Only once `READY` came back: exactly N bytes of this binary, which `head -c N` appends
//!    to the file. The wait matters: dash and busybox sh read their script from a pipe in
//!    blocks, and would swallow the start of the binary sent with it (measured); bash reads
//!    byte by byte. `head -c N` (GNU and busybox) never reads past N bytes on a pipe, and
//!    nothing follows the binary anyway until the agent says hello.
//! 3. The shell checks the size (a controller killed mid-copy closes the connection: `head`
//!    sees EOF early), makes the file executable and runs it as `agent --stdio
//!    --remove-self`; the agent unlinks its own binary as it starts (Linux runs an unlinked
//!    executable), and the shell's EXIT trap removes it in every other case: a short copy, a
//!    binary that cannot run on this host, an agent that ended.
//!
//! A controller killed at any point closes the session's stdin: before the copy, the shell
//! ends and its trap removes the empty file; during it, the copy is short and removed; after
//! it, the agent starts, has already removed itself, reads EOF and stops.

use std::io::{Read as _, Write as _};
use std::process::ChildStdin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use crate::sample::now_unix_ns;

/// The remote command that replaces `iolab agent --stdio` in the launch template.
pub const REMOTE: &str = "sh";

/// The line the remote shell prints when it is ready for the binary.
pub const READY: &str = "iolab push: ready";

/// The binary being pushed: the running executable itself (`/proc/self/exe` is the file this
/// process runs even when the path was rebuilt or removed since).
const SELF_EXE: &str = "/proc/self/exe";

/// A name for the pushed binary that no earlier run used; it carries the controller's pid so
/// a host's leftovers (a host killed mid-copy) say whose they were.
pub fn path() -> String {
    let seed = now_unix_ns() ^ (u64::from(std::process::id()) << 32);
    let r = xxhash_rust::xxh3::xxh3_64(&seed.to_le_bytes());
    format!(
        "/tmp/{}{}-{r:016x}",
        super::agent::PUSH_PREFIX,
        std::process::id()
    )
}

/// The one-line POSIX shell script that receives `size` bytes into `path` and runs them as
/// the agent (see the module doc). `path` must need no quoting (see [`path`]).
pub fn script(path: &str, size: u64) -> String {
    format!(
        "umask 077; set -C; p={path}; : > \"$p\" || exit 1; trap 'rm -f \"$p\"' EXIT; \
         trap 'exit 1' HUP INT TERM PIPE; echo '{READY}'; head -c {size} >> \"$p\"; \
         n=$(wc -c < \"$p\"); if [ $n -ne {size} ]; then \
         echo \"iolab push: the copy ended after $n of {size} bytes; removed\" >&2; exit 1; fi; \
         chmod 700 \"$p\" || exit 1; \"$p\" agent --stdio --remove-self; exit $?\n"
    )
}

/// Starts the copy to one host on a thread: writes the script at once, waits for `ready` (the
/// stdout reader saw [`READY`]; a closed channel means the session ended), then the binary.
/// `report` is told the outcome once the bytes are all written (or the copy failed). The
/// thread hands `stdin` back for the protocol; on failure or `cancel` it drops it, which the
/// remote shell reads as EOF (a short copy, removed).
pub fn start(
    mut stdin: ChildStdin,
    path: String,
    ready: Receiver<()>,
    cancel: Arc<AtomicBool>,
    report: impl FnOnce(Result<(), String>) + Send + 'static,
) -> JoinHandle<Option<ChildStdin>> {
    std::thread::spawn(move || {
        let r = copy(&mut stdin, &path, &ready, &cancel);
        let ok = r.is_ok();
        report(r);
        ok.then_some(stdin)
    })
}

fn copy(
    w: &mut ChildStdin,
    path: &str,
    ready: &Receiver<()>,
    cancel: &AtomicBool,
) -> Result<(), String> {
    let mut bin = std::fs::File::open(SELF_EXE)
        .map_err(|e| format!("cannot read this binary ({SELF_EXE}): {e}"))?;
    let size = bin
        .metadata()
        .map_err(|e| format!("cannot read this binary ({SELF_EXE}): {e}"))?
        .len();
    let sent = |e: std::io::Error| format!("the connection closed during the copy: {e}");
    w.write_all(script(path, size).as_bytes())
        .and_then(|()| w.flush())
        .map_err(sent)?;
    ready
        .recv()
        .map_err(|_| "the session ended before the copy began".to_string())?;
    let half = size / 2;
    let mut done = 0u64;
    let mut buf = vec![0u8; 64 << 10];
    while done < size {
        if cancel.load(Ordering::Relaxed) {
            return Err("stopped".into());
        }
        // Up to half, then a pause point (the kill tests stop the controller mid-copy here).
        let limit = if done < half { half } else { size };
        let want = usize::try_from(limit - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = bin
            .read(&mut buf[..want])
            .map_err(|e| format!("cannot read this binary: {e}"))?;
        if n == 0 {
            return Err(format!(
                "this binary ended after {done} of {size} bytes (replaced while running?)"
            ));
        }
        w.write_all(&buf[..n]).map_err(sent)?;
        done += n as u64;
        if done == half {
            w.flush().map_err(sent)?;
            crate::pause::at("hosts pushing");
        }
    }
    w.flush().map_err(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script run by a real `sh` (dash here), fed the way the controller feeds it: the
    /// line, the ready mark awaited, then the bytes, then a protocol line.
    fn feed(body: &[u8], declared: u64, close_early: bool) -> (String, String, bool) {
        use std::io::BufRead as _;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("iolab-push-test");
        let p = path.display().to_string();
        // A stand-in agent: prints its first stdin line (what follows the binary).
        let line = script(&p, declared).replace(
            "\"$p\" agent --stdio --remove-self",
            "test -x \"$p\" && head -n 1",
        );
        let mut c = std::process::Command::new("sh")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let mut stdin = c.stdin.take().expect("stdin");
        let mut out = std::io::BufReader::new(c.stdout.take().expect("stdout"));
        stdin.write_all(line.as_bytes()).expect("script");
        stdin.flush().expect("flush");
        let mut l = String::new();
        out.read_line(&mut l).expect("ready");
        assert_eq!(l.trim_end(), READY);
        stdin.write_all(body).expect("body");
        if !close_early {
            stdin.write_all(b"{\"type\":\"prepare\"}\n").expect("line");
        }
        drop(stdin);
        let mut rest = String::new();
        out.read_to_string(&mut rest).expect("rest");
        let o = c.wait_with_output().expect("wait");
        (
            rest,
            String::from_utf8_lossy(&o.stderr).into_owned(),
            path.exists(),
        )
    }

    #[test]
    fn the_script_takes_exactly_n_bytes_and_leaves_the_rest_for_the_agent() {
        let (rest, err, left) = feed(&vec![7u8; 300_000], 300_000, false);
        assert_eq!(rest, "{\"type\":\"prepare\"}\n", "{err}");
        assert!(!left, "the copy stays after the agent ended");
    }

    #[test]
    fn a_short_copy_is_removed_and_said() {
        let (rest, err, left) = feed(&[7u8; 1000], 300_000, true);
        assert!(rest.is_empty(), "{rest}");
        assert!(
            err.contains("the copy ended after 1000 of 300000 bytes"),
            "{err}"
        );
        assert!(!left, "a short copy stays");
    }
}
