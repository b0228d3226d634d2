//! The one way layouts run external tools: every argv is logged, and a recording runner lets tests
//! (and `iolab lab --dry-run`) see the exact command lines without touching a device.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::LayoutError;

/// What a command printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmdOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Answers a recorded command with the stdout a real run would print (`losetup --show` prints the
/// device it attached). `Err` makes the command fail with that message.
pub type Responder = Box<dyn Fn(&[String]) -> Result<String, String> + Send + Sync>;

enum Mode {
    Real,
    Record(Responder),
}

/// Runs commands and remembers each one.
///
/// In recording mode nothing runs: the argv is logged and the responder supplies the output, so
/// the code that builds a stack is the same code whose command lines the tests check.
pub struct Runner {
    mode: Mode,
    log: Mutex<Vec<String>>,
    echo: bool,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("dry_run", &self.is_dry_run())
            .field("commands", &self.log_len())
            .finish()
    }
}

impl Runner {
    /// A runner that really runs commands.
    pub fn real() -> Runner {
        Runner {
            mode: Mode::Real,
            log: Mutex::new(Vec::new()),
            echo: false,
        }
    }

    /// A runner that runs nothing and answers `losetup --find --show` with `/dev/loop100`,
    /// `/dev/loop101`, ... and every other command with empty output.
    pub fn recording() -> Runner {
        let next = AtomicUsize::new(100);
        Runner::recording_with(Box::new(move |argv: &[String]| {
            if argv.first().map(String::as_str) == Some("losetup")
                && argv.iter().any(|a| a == "--show")
            {
                Ok(format!(
                    "/dev/loop{}\n",
                    next.fetch_add(1, Ordering::Relaxed)
                ))
            } else {
                Ok(String::new())
            }
        }))
    }

    /// A recording runner with a custom responder.
    pub fn recording_with(responder: Responder) -> Runner {
        Runner {
            mode: Mode::Record(responder),
            log: Mutex::new(Vec::new()),
            echo: false,
        }
    }

    /// Also print each command to stderr as `+ cmd` (`iolab lab --verbose`).
    pub fn with_echo(mut self, echo: bool) -> Runner {
        self.echo = echo;
        self
    }

    /// True when commands are only recorded.
    pub fn is_dry_run(&self) -> bool {
        matches!(self.mode, Mode::Record(_))
    }

    /// Every command run so far, shell-quoted, in order.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// How many commands have run; with [`Runner::log_since`] gives one layout's commands.
    pub fn log_len(&self) -> usize {
        self.log.lock().map_or(0, |l| l.len())
    }

    /// The commands run since the log had `n` entries.
    pub fn log_since(&self, n: usize) -> Vec<String> {
        self.log
            .lock()
            .map(|l| l.get(n..).map(<[String]>::to_vec).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Logs `argv` as if it ran (an action iolab does itself, shown in the command list).
    pub(crate) fn record(&self, argv: &[String]) -> String {
        let line = quote_argv(argv);
        if self.echo {
            eprintln!("+ {line}");
        }
        if let Ok(mut l) = self.log.lock() {
            l.push(line.clone());
        }
        line
    }

    /// Runs a command to completion; a non-zero exit is an error carrying the tool's message.
    pub fn run<S: AsRef<str>>(&self, argv: &[S]) -> Result<CmdOutput, LayoutError> {
        self.run_inner(argv, None::<&[&str]>, false)
    }

    /// Runs a command that reports findings through its exit status (`btrfs scrub` exits 3
    /// when it found uncorrectable errors, and its counters are still on stdout): returns the
    /// exit code (`None` when killed by a signal) with the output. Only a tool that cannot be
    /// started, or Ctrl-C (which runs `cancel` first, like [`Runner::run_interruptible`]), is
    /// an error. A recorded command whose responder fails exits 1 with the responder's message
    /// on stderr.
    pub fn run_status<S: AsRef<str>, C: AsRef<str>>(
        &self,
        argv: &[S],
        cancel: Option<&[C]>,
    ) -> Result<(Option<i32>, CmdOutput), LayoutError> {
        let (code, out, _) = self.exec(argv, cancel, true)?;
        Ok((code, out))
    }

    /// Writes `text` to a kernel control file (`/sys/block/md100/md/sync_action`), logged as
    /// the shell line that does the same (`echo check > ...`) so a dry run shows it.
    pub fn write_file(&self, path: &std::path::Path, text: &str) -> Result<(), LayoutError> {
        let p = path.to_string_lossy().into_owned();
        let line = format!("echo {} > {}", quote(text), quote(&p));
        if self.echo {
            eprintln!("+ {line}");
        }
        if let Ok(mut l) = self.log.lock() {
            l.push(line.clone());
        }
        match &self.mode {
            Mode::Record(respond) => respond(&["echo".into(), text.into(), ">".into(), p])
                .map(|_| ())
                .map_err(|msg| LayoutError::Command { cmd: line, msg }),
            Mode::Real => {
                std::fs::write(path, format!("{text}\n")).map_err(|e| LayoutError::Command {
                    cmd: line,
                    msg: e.to_string(),
                })
            }
        }
    }

    /// Reads a kernel status file (`/sys/block/md100/md/mismatch_cnt`), logged as `cat PATH`;
    /// a recording runner asks its responder (argv `cat PATH`).
    pub fn read_file(&self, path: &std::path::Path) -> Result<String, LayoutError> {
        let p = path.to_string_lossy().into_owned();
        let argv = ["cat".to_string(), p];
        let line = self.record(&argv);
        match &self.mode {
            Mode::Record(respond) => {
                respond(&argv).map_err(|msg| LayoutError::Command { cmd: line, msg })
            }
            Mode::Real => std::fs::read_to_string(path).map_err(|e| LayoutError::Command {
                cmd: line,
                msg: e.to_string(),
            }),
        }
    }

    /// Runs a command and reports only whether it exited 0 (probes such as `vgs NAME`).
    pub fn succeeds<S: AsRef<str>>(&self, argv: &[S]) -> bool {
        self.run(argv).is_ok()
    }

    /// Runs a long command that Ctrl-C/SIGTERM may stop: on a stop request `cancel` runs (e.g.
    /// `btrfs replace cancel MNT`), the child gets SIGTERM, and the result is
    /// [`LayoutError::Interrupted`].
    pub fn run_interruptible<S: AsRef<str>, C: AsRef<str>>(
        &self,
        argv: &[S],
        cancel: Option<&[C]>,
    ) -> Result<CmdOutput, LayoutError> {
        self.run_inner(argv, cancel, true)
    }

    fn run_inner<S: AsRef<str>, C: AsRef<str>>(
        &self,
        argv: &[S],
        cancel: Option<&[C]>,
        interruptible: bool,
    ) -> Result<CmdOutput, LayoutError> {
        let (code, out, line) = self.exec(argv, cancel, interruptible)?;
        if code == Some(0) {
            return Ok(out);
        }
        if self.is_dry_run() {
            return Err(LayoutError::Command {
                cmd: line,
                msg: out.stderr,
            });
        }
        let status = match code {
            Some(c) => format!("exit status: {c}"),
            None => "killed by a signal".to_string(),
        };
        Err(LayoutError::Command {
            cmd: line,
            msg: format!("{status}: {}", tool_message(&out.stderr, &out.stdout)),
        })
    }

    /// Runs (or records) a command: its exit code (`None`: killed by a signal), its output and
    /// its logged line. A recorded command whose responder fails "exits" 1 with the message on
    /// stderr.
    fn exec<S: AsRef<str>, C: AsRef<str>>(
        &self,
        argv: &[S],
        cancel: Option<&[C]>,
        interruptible: bool,
    ) -> Result<(Option<i32>, CmdOutput, String), LayoutError> {
        let argv: Vec<String> = argv.iter().map(|a| a.as_ref().to_string()).collect();
        let line = self.record(&argv);
        let Some((prog, args)) = argv.split_first() else {
            return Err(LayoutError::Unexpected("empty command".into()));
        };
        match &self.mode {
            Mode::Record(respond) => {
                return Ok(match respond(&argv) {
                    Ok(stdout) => (
                        Some(0),
                        CmdOutput {
                            stdout,
                            stderr: String::new(),
                        },
                        line,
                    ),
                    Err(stderr) => (
                        Some(1),
                        CmdOutput {
                            stdout: String::new(),
                            stderr,
                        },
                        line,
                    ),
                });
            }
            Mode::Real => {}
        }
        let mut cmd = Command::new(prog);
        cmd.args(args)
            .env("LC_ALL", "C")
            .env("LVM_SUPPRESS_FD_WARNINGS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // If iolab is killed (SIGKILL), its tools die with it.
        crate::sys::die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| LayoutError::Spawn {
            cmd: line.clone(),
            source,
        })?;
        // Read both pipes on threads so a chatty tool never blocks on a full pipe while we poll.
        let out_t = reader(child.stdout.take());
        let err_t = reader(child.stderr.take());
        let mut stopped = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => {
                    return Err(LayoutError::Spawn {
                        cmd: line,
                        source: e,
                    });
                }
            }
            if interruptible && !stopped && crate::signals::stop_requested() {
                stopped = true;
                if let Some(c) = cancel {
                    let _ = self.run(c);
                }
                // Our own live child: a failure means it is already gone.
                let _ = rustix::process::kill_process(
                    rustix::process::Pid::from_child(&child),
                    rustix::process::Signal::TERM,
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = out_t.join().unwrap_or_default();
        let stderr = err_t.join().unwrap_or_default();
        if stopped {
            return Err(LayoutError::Interrupted);
        }
        Ok((status.code(), CmdOutput { stdout, stderr }, line))
    }
}

fn reader<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    })
}

/// The line of a tool's output that says why it failed: its first `ERROR`/`error` line, else the
/// last non-empty line of stderr (or stdout) before any usage text the tool printed after its
/// reason (mkfs.xfs says `Log size must be at least 64MB.`, then forty lines of usage whose
/// last, `<value> is xxx (512 byte blocks).`, says nothing).
pub fn tool_message(stderr: &str, stdout: &str) -> String {
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let before_usage = lines
        .iter()
        .position(|l| l.to_ascii_lowercase().starts_with("usage:"))
        .filter(|&i| i > 0)
        .map_or(&lines[..], |i| &lines[..i]);
    lines
        .iter()
        .find(|l| l.starts_with("ERROR") || l.starts_with("error"))
        .or(before_usage.last())
        .map_or_else(|| "no message".to_string(), |l| (*l).to_string())
}

/// One argument as a shell would need it written.
pub fn quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.bytes().all(|b| {
            b.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(&b) || b >= 0x80 && b != 0xff
        });
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// An argv as one shell-quoted line.
pub fn quote_argv<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A tool that prints its reason and then its usage is quoted by the reason (mkfs.xfs
    /// 6.1 on a small array, as it printed it), not by the usage's last line.
    #[test]
    fn the_reason_before_a_usage_text_is_the_message() {
        let mkfs = "Log size must be at least 64MB.\nUsage: mkfs.xfs\n/* blocksize */\t\t[-b size=num]\n\n<value> is xxx (512 byte blocks).\n";
        assert_eq!(tool_message(mkfs, ""), "Log size must be at least 64MB.");
        assert_eq!(tool_message("", "a\nlast\n"), "last");
        assert_eq!(
            tool_message("warning\nERROR: no space\nUsage: x\n", ""),
            "ERROR: no space"
        );
        // Only usage: its last line is still better than nothing.
        assert_eq!(tool_message("usage: tool ARGS\n  -x\n", ""), "-x");
    }

    #[test]
    fn recording_logs_and_answers_losetup() {
        let r = Runner::recording();
        let out = r
            .run(&["losetup", "--find", "--show", "/tmp/a b.img"])
            .unwrap();
        assert_eq!(out.stdout.trim(), "/dev/loop100");
        r.run(&["mkfs.xfs", "-f", "/dev/loop100"]).unwrap();
        assert_eq!(
            r.log(),
            vec![
                "losetup --find --show '/tmp/a b.img'",
                "mkfs.xfs -f /dev/loop100"
            ]
        );
        assert_eq!(r.log_since(1), vec!["mkfs.xfs -f /dev/loop100"]);
    }

    #[test]
    fn real_runs_report_the_tools_words() {
        let r = Runner::real();
        let out = r.run(&["sh", "-c", "echo hi"]).unwrap();
        assert_eq!(out.stdout, "hi\n");
        let e = r
            .run(&[
                "sh",
                "-c",
                "echo noise >&2; echo 'ERROR: bad thing' >&2; exit 3",
            ])
            .unwrap_err();
        let s = e.to_string();
        assert!(s.contains("ERROR: bad thing") && s.contains('3'), "{s}");
        assert!(matches!(
            r.run(&["/nonexistent/tool"]),
            Err(LayoutError::Spawn { .. })
        ));
        assert!(!r.succeeds(&["false"]));
    }

    #[test]
    fn status_commands_keep_their_output_and_files_are_logged() {
        let r = Runner::real();
        let (code, out) = r
            .run_status(&["sh", "-c", "echo counted: 2; exit 3"], None::<&[&str]>)
            .unwrap();
        assert_eq!(code, Some(3));
        assert_eq!(out.stdout, "counted: 2\n");
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("sync_action");
        r.write_file(&f, "check").unwrap();
        assert_eq!(r.read_file(&f).unwrap(), "check\n");
        let log = r.log();
        assert_eq!(log[1], format!("echo check > {}", f.display()));
        assert_eq!(log[2], format!("cat {}", f.display()));
        let rec = Runner::recording_with(Box::new(|a: &[String]| {
            if a[0] == "cat" {
                Ok("7\n".into())
            } else {
                Err("no such thing".into())
            }
        }));
        assert_eq!(rec.read_file(Path::new("/sys/x")).unwrap(), "7\n");
        let (code, out) = rec.run_status(&["false"], None::<&[&str]>).unwrap();
        assert_eq!((code, out.stderr.as_str()), (Some(1), "no such thing"));
        let e = rec.run(&["false"]).unwrap_err().to_string();
        assert!(e.ends_with("failed: no such thing"), "{e}");
    }

    #[test]
    fn quoting_is_shell_safe() {
        assert_eq!(quote("noatime,discard"), "noatime,discard");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
