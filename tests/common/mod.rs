//! Shared helpers for the integration tests: run the real binary, make loop devices that are
//! always detached, skip with a printed reason when the machine truly lacks something.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A results database private to this test process, so tests never touch the user's own.
pub fn test_db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iolab-tests-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join("iolab.db")
}

/// A temporary directory on a disk filesystem (/var/tmp, not a tmpfs /tmp), so O_DIRECT works
/// there; removed on drop.
pub fn disk_tmpdir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .expect("tempdir in /var/tmp")
}

/// The iolab binary under test (with a private results database).
pub fn iolab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.env("IOLAB_DB", test_db());
    c
}

/// Runs iolab with args; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    out(iolab().args(args).output().expect("spawn iolab"))
}

/// Runs iolab in a directory.
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    out(iolab()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("spawn iolab"))
}

/// Splits an Output.
pub fn out(o: Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// True when running as root; prints why a test skips otherwise.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIP {test}: needs root (loop devices, mounts)");
    }
    root
}

/// True when a tool is on PATH; prints why a test skips otherwise.
pub fn tool_or_skip(test: &str, tool: &str) -> bool {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIP {test}: {tool} is not installed (scripts/test installs it)");
    }
    ok
}

/// A loop device over a sparse file in /dev/shm, detached and deleted on drop.
pub struct LoopDev {
    /// /dev/loopN.
    pub dev: PathBuf,
    /// Backing file.
    pub file: PathBuf,
    mounted: Option<PathBuf>,
}

impl LoopDev {
    /// Attaches a new loop device of `size` bytes.
    pub fn new(tag: &str, size: u64) -> LoopDev {
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
    pub fn path(&self) -> &str {
        self.dev.to_str().expect("utf8 path")
    }

    /// Makes a filesystem and mounts it on a new temp dir; unmounted on drop.
    pub fn mkfs_and_mount(&mut self, fs: &str) -> PathBuf {
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
pub fn unmount(dir: &Path) {
    for _ in 0..30 {
        if Command::new("umount")
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
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
                .map(|s| s.success())
                .unwrap_or(false)
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A temporary mount of a memory filesystem (tmpfs with a size, or ramfs), unmounted on drop.
pub struct MemMount {
    /// Mount point.
    pub dir: PathBuf,
}

impl MemMount {
    /// Mounts `fstype` with `opts` on a new temp dir.
    pub fn new(fstype: &str, opts: &str) -> MemMount {
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

/// Parses the JSON document of `iolab run --json`.
pub fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"))
}
