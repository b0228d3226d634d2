//! Shared helpers for the integration tests: run the real binary through one builder
//! ([`Iolab`]), skip with a printed and logged reason when the machine truly lacks something
//! ([`skip`], [`require_root!`], [`require_tool!`]), make loop devices and mounts that are always
//! undone.
//!
//! ```ignore
//! let out = Iolab::new().db(&db).cwd(&dir).args(["run", "x", "--json"]).run();
//! out.success().stderr_has("saved as run");
//! let doc = out.json();
//! ```
#![allow(dead_code, unused_macros, unused_imports)]

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) mod capture;
pub(crate) mod decision;
pub(crate) mod hosts;
pub(crate) mod pg;
pub(crate) mod records;
pub(crate) mod slurm;
pub(crate) mod throttle;
pub(crate) mod vm;

/// A results database private to this test process, so tests never touch the user's own.
/// The directories of earlier test processes that are gone are removed first (a test binary
/// has no teardown of its own to remove its one).
pub(crate) fn test_db() -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        for e in std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            let gone = name
                .strip_prefix("iolab-tests-")
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if gone {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let dir = std::env::temp_dir().join(format!("iolab-tests-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join("iolab.db")
}

/// A temporary directory on a disk filesystem (/var/tmp, not a tmpfs /tmp), so O_DIRECT works
/// there; removed on drop.
pub(crate) fn disk_tmpdir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .expect("tempdir in /var/tmp")
}

// ---------------------------------------------------------------------------------------------
// Running the binary

/// The one way tests run the iolab binary: set it up fluently, then [`Iolab::run`] it (or take
/// its [`Iolab::command`] to spawn it yourself, e.g. to signal it).
///
/// By default it uses this test process's private results database ([`test_db`]) through
/// `IOLAB_DB`, which the CLI reads exactly like `--db`.
#[derive(Debug, Clone)]
#[must_use = "an Iolab does nothing until .run() or .command()"]
pub(crate) struct Iolab {
    args: Vec<OsString>,
    /// `Some(v)` sets, `None` removes; applied in order.
    env: Vec<(OsString, Option<OsString>)>,
    cwd: Option<PathBuf>,
    /// A program (with its arguments) that runs the binary: `strace -f`, `setpriv ...`.
    wrapper: Vec<OsString>,
}

impl Default for Iolab {
    fn default() -> Iolab {
        Iolab::new()
    }
}

impl Iolab {
    /// The binary with no arguments and the private test database.
    pub(crate) fn new() -> Iolab {
        Iolab {
            args: Vec::new(),
            env: vec![("IOLAB_DB".into(), Some(test_db().into()))],
            cwd: None,
            wrapper: Vec::new(),
        }
    }

    /// The results database to use (`IOLAB_DB`).
    pub(crate) fn db(self, path: impl AsRef<Path>) -> Iolab {
        self.env("IOLAB_DB", path.as_ref())
    }

    /// No results database chosen: the binary falls back to its default location.
    pub(crate) fn no_db(self) -> Iolab {
        self.env_remove("IOLAB_DB")
    }

    /// The working directory.
    pub(crate) fn cwd(mut self, dir: impl AsRef<Path>) -> Iolab {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// One more argument.
    pub(crate) fn arg(mut self, a: impl AsRef<OsStr>) -> Iolab {
        self.args.push(a.as_ref().to_os_string());
        self
    }

    /// More arguments.
    pub(crate) fn args<I, S>(mut self, args: I) -> Iolab
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// An environment variable.
    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Iolab {
        self.env.push((
            key.as_ref().to_os_string(),
            Some(value.as_ref().to_os_string()),
        ));
        self
    }

    /// An environment variable removed.
    pub(crate) fn env_remove(mut self, key: impl AsRef<OsStr>) -> Iolab {
        self.env.push((key.as_ref().to_os_string(), None));
        self
    }

    /// Runs the binary under another program: `program wrapper_args... iolab args...`.
    pub(crate) fn wrap<I, S>(mut self, program: impl AsRef<OsStr>, wrapper_args: I) -> Iolab
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.wrapper = std::iter::once(program.as_ref().to_os_string())
            .chain(wrapper_args.into_iter().map(|a| a.as_ref().to_os_string()))
            .collect();
        self
    }

    /// The command, set up but not started (for tests that spawn and signal it).
    pub(crate) fn command(&self) -> Command {
        let bin = env!("CARGO_BIN_EXE_iolab");
        let mut c = match self.wrapper.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        c.args(&self.args);
        for (k, v) in &self.env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = &self.cwd {
            c.current_dir(d);
        }
        c
    }

    /// Runs it to completion and captures its output.
    pub(crate) fn run(&self) -> Out {
        let o = self
            .command()
            .output()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.describe()));
        Out::new(self.describe(), o)
    }

    /// The command line, for assertion messages.
    fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .wrapper
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        parts.push("iolab".into());
        parts.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        parts.join(" ")
    }
}

/// What a finished run of the binary printed, with asserts that show the command line, the
/// exit code, stdout and stderr when they fail. The asserts return `&Out`, so they chain.
#[derive(Debug, Clone)]
pub(crate) struct Out {
    /// The command line that ran (for messages).
    pub cmd: String,
    /// The exit code; -1 when killed by a signal.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Wraps a finished process's output.
    pub(crate) fn new(cmd: String, o: Output) -> Out {
        Out {
            cmd,
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// (exit code, stdout, stderr), for tests that take them apart.
    pub(crate) fn parts(self) -> (i32, String, String) {
        (self.code, self.stdout, self.stderr)
    }

    fn context(&self) -> String {
        format!(
            "`{}` exited {}\n--- stdout\n{}\n--- stderr\n{}",
            self.cmd, self.code, self.stdout, self.stderr
        )
    }

    /// Asserts exit code 0.
    #[track_caller]
    pub(crate) fn success(&self) -> &Out {
        self.code(0)
    }

    /// Asserts this exit code.
    #[track_caller]
    pub(crate) fn code(&self, want: i32) -> &Out {
        assert_eq!(self.code, want, "exit code\n{}", self.context());
        self
    }

    /// Asserts stdout contains `s`.
    #[track_caller]
    pub(crate) fn stdout_has(&self, s: &str) -> &Out {
        assert!(
            self.stdout.contains(s),
            "stdout lacks {s:?}\n{}",
            self.context()
        );
        self
    }

    /// Asserts stdout does not contain `s`.
    #[track_caller]
    pub(crate) fn stdout_lacks(&self, s: &str) -> &Out {
        assert!(
            !self.stdout.contains(s),
            "stdout has {s:?}\n{}",
            self.context()
        );
        self
    }

    /// Asserts stderr contains `s`.
    #[track_caller]
    pub(crate) fn stderr_has(&self, s: &str) -> &Out {
        assert!(
            self.stderr.contains(s),
            "stderr lacks {s:?}\n{}",
            self.context()
        );
        self
    }

    /// Asserts stderr does not contain `s`.
    #[track_caller]
    pub(crate) fn stderr_lacks(&self, s: &str) -> &Out {
        assert!(
            !self.stderr.contains(s),
            "stderr has {s:?}\n{}",
            self.context()
        );
        self
    }

    /// Parses stdout as one JSON document; fails the test (showing both streams) otherwise.
    #[track_caller]
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", self.context()))
    }
}

/// Parses a JSON document printed by the binary.
#[track_caller]
pub(crate) fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"))
}

// ---------------------------------------------------------------------------------------------
// Skipping

/// Why a test skips, as a kind `scripts/test` sorts on (see [`skip`]).
pub(crate) mod kind {
    /// Not root. CI runs as root, so CI must not skip for this.
    pub(crate) const ROOT: &str = "root";

    /// A tool CI installs from this apt package: CI must not skip for it.
    pub(crate) fn tool(apt: &str) -> String {
        format!("tool:{apt}")
    }

    /// Something CI's machine has and a test needs (tracefs, a cgroup IO throttle, v1 or
    /// v2): a developer's machine may lack it, CI must not.
    pub(crate) fn host(feature: &str) -> String {
        format!("host:{feature}")
    }

    /// Something this kernel may lack or have and CI's may too (md, dm, zfs loaded, swap):
    /// allowed, also in CI.
    pub(crate) fn kernel(feature: &str) -> String {
        format!("kernel:{feature}")
    }
}

/// The running test's name: libtest names each test's thread after it.
pub(crate) fn test_name() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("?")
        .to_string()
}

/// Records that the running test skips (all or part of itself): prints `SKIP <test>: <reason>`
/// to stderr and, when `IOLAB_SKIP_LOG` names a file, appends `<test>\t<kind>\t<reason>` to it,
/// so `scripts/test` can count skips and fail CI on the ones CI is meant to make impossible.
/// `kind` is [`kind::ROOT`], [`kind::tool`], [`kind::host`] or [`kind::kernel`].
pub(crate) fn skip(kind: &str, reason: &str) {
    let test = test_name();
    eprintln!("SKIP {test}: {reason}");
    if let Some(log) = std::env::var_os("IOLAB_SKIP_LOG").filter(|l| !l.is_empty()) {
        let line = format!("{test}\t{kind}\t{}\n", reason.replace(['\t', '\n'], " "));
        // One write of one short line to an O_APPEND file: lines from parallel tests and test
        // binaries do not interleave.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot log the skip to {}: {e}", Path::new(&log).display());
        }
    }
}

/// True when running as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True when `tool` is on PATH or in an sbin directory (which a non-root PATH may lack).
pub(crate) fn have_tool(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(
            ["/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin"]
                .iter()
                .map(PathBuf::from),
        )
        .any(|d| d.join(tool).is_file())
}

/// True when root; otherwise records a skip.
pub(crate) fn need_root() -> bool {
    let ok = is_root();
    if !ok {
        skip(kind::ROOT, "needs root (loop devices, mounts)");
    }
    ok
}

/// True when `tool` is installed; otherwise records a skip naming the apt package that brings
/// it (scripts/test installs it).
pub(crate) fn need_tool(tool: &str, apt: &str) -> bool {
    let ok = have_tool(tool);
    if !ok {
        skip(
            &kind::tool(apt),
            &format!("{tool} is not installed (apt-get install {apt}; scripts/test installs it)"),
        );
    }
    ok
}

/// True when the kernel has `feature` (`present`); otherwise records a skip with `why`.
pub(crate) fn need_kernel(feature: &str, present: bool, why: &str) -> bool {
    if !present {
        skip(&kind::kernel(feature), why);
    }
    present
}

/// Where tracefs is, or will be: where it is mounted with its instances, else
/// `/sys/kernel/tracing`, where `iolab capture` mounts it (for the capture's length).
pub(crate) fn tracefs() -> PathBuf {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("instances").is_dir())
        .unwrap_or_else(|| PathBuf::from("/sys/kernel/tracing"))
}

/// True when `iolab capture` can record here: tracefs is mounted, or this kernel has it (in
/// /proc/filesystems) for iolab to mount; otherwise records a skip CI must not make.
pub(crate) fn need_tracefs() -> bool {
    let mounted = tracefs().join("instances").is_dir();
    let in_kernel = std::fs::read_to_string("/proc/filesystems").is_ok_and(|t| {
        t.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    });
    let ok = mounted || in_kernel;
    if !ok {
        skip(
            &kind::host("tracefs"),
            "this kernel has no tracefs (not in /proc/filesystems): no block tracepoints to capture",
        );
    }
    ok
}

/// Returns from the test (skipping it) unless running as root.
macro_rules! require_root {
    () => {
        if !$crate::common::need_root() {
            return;
        }
    };
}

/// Returns from the test (skipping it) unless `tool` is installed:
/// `require_tool!("mkfs.xfs", apt = "xfsprogs");`.
macro_rules! require_tool {
    ($tool:expr, apt = $apt:expr) => {
        if !$crate::common::need_tool($tool, $apt) {
            return;
        }
    };
}

/// Returns from the test (skipping it) unless the kernel has a feature:
/// `require_kernel!("blkio-v1", present, "cgroup v1 blkio is not mounted");`.
macro_rules! require_kernel {
    ($feature:expr, $present:expr, $why:expr) => {
        if !$crate::common::need_kernel($feature, $present, $why) {
            return;
        }
    };
}

/// Returns from the test (skipping it) unless `iolab capture` can record here (see
/// [`need_tracefs`]).
macro_rules! require_tracefs {
    () => {
        if !$crate::common::need_tracefs() {
            return;
        }
    };
}

/// Returns from the test (skipping it) unless this process can make a cgroup that throttles
/// a device's IO, through cgroup v1 blkio or v2 io.max (see [`throttle::need_throttle`]).
macro_rules! require_throttle {
    () => {
        if !$crate::common::throttle::need_throttle() {
            return;
        }
    };
}

pub(crate) use {require_kernel, require_root, require_throttle, require_tool, require_tracefs};

// ---------------------------------------------------------------------------------------------
// Loop devices and mounts

/// A loop device over a sparse file in /dev/shm, detached and deleted on drop.
pub(crate) struct LoopDev {
    /// /dev/loopN.
    pub dev: PathBuf,
    /// Backing file.
    pub file: PathBuf,
    mounted: Option<PathBuf>,
}

impl LoopDev {
    /// Attaches a new loop device of `size` bytes.
    pub(crate) fn new(tag: &str, size: u64) -> LoopDev {
        let file = PathBuf::from(format!(
            "/dev/shm/iolab-test-{tag}-{}.img",
            std::process::id()
        ));
        let f = std::fs::File::create(&file).expect("create backing file");
        f.set_len(size).expect("size backing file");
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output()
            .expect("losetup");
        assert!(
            o.status.success(),
            "losetup failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        LoopDev {
            dev,
            file,
            mounted: None,
        }
    }

    /// The device path as a str.
    pub(crate) fn path(&self) -> &str {
        self.dev.to_str().expect("utf8 path")
    }

    /// Makes a filesystem and mounts it on a new temp dir; unmounted on drop.
    pub(crate) fn mkfs_and_mount(&mut self, fs: &str) -> PathBuf {
        let force = if fs == "ext4" { "-F" } else { "-f" };
        let o = Command::new(format!("mkfs.{fs}"))
            .args([force, "-q"])
            .arg(&self.dev)
            .output()
            .expect("mkfs");
        assert!(
            o.status.success(),
            "mkfs.{fs}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        self.mount_made()
    }
}

impl LoopDev {
    /// Mounts the filesystem the test made on it on a new temp dir; unmounted on drop.
    pub(crate) fn mount_made(&mut self) -> PathBuf {
        let mnt = tempfile::Builder::new()
            .prefix("iolab-test-mnt")
            .tempdir()
            .expect("tempdir")
            .keep();
        let o = Command::new("mount")
            .arg(&self.dev)
            .arg(&mnt)
            .output()
            .expect("mount");
        assert!(
            o.status.success(),
            "mount: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        self.mounted = Some(mnt.clone());
        mnt
    }
}

/// Unmounts a mount a test made: retried while busy (a process that just exited may still hold
/// it for a moment), then lazily as a last resort, so no test leaves a mount behind.
pub(crate) fn unmount(dir: &Path) {
    for _ in 0..30 {
        if Command::new("umount")
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success())
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = Command::new("umount").arg("-l").arg(dir).status();
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        if let Some(m) = self.mounted.take() {
            unmount(&m);
            let _ = std::fs::remove_dir(&m);
        }
        for _ in 0..30 {
            if Command::new("losetup")
                .arg("-d")
                .arg(&self.dev)
                .status()
                .is_ok_and(|s| s.success())
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A temporary mount of a memory filesystem (tmpfs with a size, or ramfs), unmounted on drop.
pub(crate) struct MemMount {
    /// Mount point.
    pub dir: PathBuf,
}

impl MemMount {
    /// Mounts `fstype` with `opts` on a new temp dir.
    pub(crate) fn new(fstype: &str, opts: &str) -> MemMount {
        let dir = tempfile::Builder::new()
            .prefix("iolab-test-mem")
            .tempdir()
            .expect("tempdir")
            .keep();
        let mut c = Command::new("mount");
        c.args(["-t", fstype]);
        if !opts.is_empty() {
            c.args(["-o", opts]);
        }
        let o = c.arg(fstype).arg(&dir).output().expect("mount");
        assert!(
            o.status.success(),
            "mount {fstype}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        MemMount { dir }
    }
}

impl Drop for MemMount {
    fn drop(&mut self) {
        unmount(&self.dir);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

// ---------------------------------------------------------------------------------------------
// Pausing at a step (IOLAB_PAUSE_AT)

/// An iolab process started with `IOLAB_PAUSE_AT`: its stderr is collected as it comes, so a
/// test can wait until it says `paused at STEP`, act (SIGKILL it, fill its disk), and resume it.
pub(crate) struct Paused {
    pub child: std::process::Child,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stdout: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
    out_reader: Option<std::thread::JoinHandle<()>>,
}

/// Reads a pipe into a shared string on a thread of its own.
fn collect(
    mut r: impl std::io::Read + Send + 'static,
) -> (
    std::sync::Arc<std::sync::Mutex<String>>,
    std::thread::JoinHandle<()>,
) {
    let s = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let s2 = s.clone();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            s2.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (s, h)
}

impl Paused {
    /// Spawns `cmd` with `IOLAB_PAUSE_AT=step`.
    pub(crate) fn spawn(cmd: Iolab, step: &str) -> Paused {
        let mut c = cmd.env("IOLAB_PAUSE_AT", step).command();
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("spawn iolab");
        let (stderr, reader) = collect(child.stderr.take().expect("stderr"));
        let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
        Paused {
            child,
            stderr,
            stdout,
            reader: Some(reader),
            out_reader: Some(out_reader),
        }
    }

    /// Everything written to stdout so far (all of it after [`Paused::finish`]).
    pub(crate) fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Waits (up to `secs`) until the process says `paused at STEP`; false when it ended first
    /// or the time ran out.
    pub(crate) fn wait_paused(&mut self, step: &str, secs: u64) -> bool {
        let want = format!("paused at {step}");
        let t = std::time::Instant::now();
        while t.elapsed().as_secs() < secs {
            if self.stderr.lock().unwrap().contains(&want) {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return self.stderr.lock().unwrap().contains(&want);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    /// Sends a signal (`-KILL`, `-CONT`) to the process.
    pub(crate) fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .arg(sig)
            .arg(self.child.id().to_string())
            .status();
    }

    /// Waits for the exit: (exit code or -1 when killed, all of stderr).
    pub(crate) fn finish(&mut self) -> (i32, String) {
        let st = self.child.wait().expect("wait");
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        if let Some(r) = self.out_reader.take() {
            let _ = r.join();
        }
        let e = self.stderr.lock().unwrap().clone();
        (st.code().unwrap_or(-1), e)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Fills the filesystem holding `dir` with one file until only about `leave` bytes are free;
/// returns the file (remove it to give the space back).
pub(crate) fn fill_fs(dir: &Path, leave: u64) -> PathBuf {
    let o = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .expect("df");
    let free: u64 = String::from_utf8_lossy(&o.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df avail");
    let f = dir.join("filler.bin");
    let n = free.saturating_sub(leave).max(4096);
    let ok = Command::new("fallocate")
        .args(["-l", &n.to_string()])
        .arg(&f)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "fallocate {n} in {}", dir.display());
    f
}

/// The statuses of the runs in a results database (none when it does not exist), after
/// checking it opens with `PRAGMA integrity_check` ok.
pub(crate) fn stored_statuses(db: &Path) -> Vec<String> {
    if !db.exists() {
        return Vec::new();
    }
    let c = rusqlite::Connection::open(db).expect("the store opens");
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(ok, "ok", "integrity_check of {}", db.display());
    let mut st = c.prepare("SELECT status FROM runs").expect("runs table");
    st.query_map([], |r| r.get::<_, String>(0))
        .expect("query")
        .map(|r| r.expect("status"))
        .collect()
}

/// `/proc/PID/cmdline` (NUL-separated), empty when the process is gone.
pub(crate) fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Live processes whose command line contains `needle` (an ssh master's title included).
pub(crate) fn processes_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let zombie = std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            });
            (!zombie && cmdline(pid).contains(needle) && pid != std::process::id()).then_some(pid)
        })
        .collect()
}

/// A lab fault's `held` record (`layouts[].faults[].held` in `iolab lab --format json`): at
/// least one file was struck, every struck file is lost, and each read back as `want`
/// (`read error`, `silently wrong`); `name` opens each failure message. Returns the count.
pub(crate) fn every_struck_file_reads(held: &serde_json::Value, want: &str, name: &str) -> u64 {
    let files = held["files"].as_u64().unwrap_or(0);
    assert!(files >= 1, "{name}: no file struck: {held:#}");
    assert_eq!(
        held["lost"].as_u64(),
        Some(files),
        "{name}: every struck file is lost: {held:#}"
    );
    let listed = held["listed"].as_array().map_or(&[][..], Vec::as_slice);
    assert!(
        !listed.is_empty(),
        "{name}: no struck file listed: {held:#}"
    );
    for file in listed {
        let after = file["after"].as_str().unwrap_or_default();
        assert!(
            after.starts_with(want),
            "{name}: a struck file read back as {after:?}, not {want:?}: {file:#}"
        );
    }
    files
}
