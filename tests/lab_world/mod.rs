//! What the real-lab tests (`tests/lab.rs`, `tests/integrity.rs`) share: why they cannot run on
//! a machine, and a private world per test (state dir, results database, disk dir) that checks
//! the lab left nothing behind and cleans up after a test that failed half-way.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn have(tool: &str) -> bool {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin"]
        .iter()
        .any(|d| Path::new(d).join(tool).exists())
}

/// Why real lab tests cannot run here, if they cannot: root, loop devices, btrfs in the kernel,
/// and `tools` (with the apt packages that bring them in `install`).
pub fn cannot_run(tools: &[&str], install: &str) -> Option<String> {
    if !is_root() {
        return Some("needs root".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no loop devices".into());
    }
    for t in tools {
        if !have(t) {
            return Some(format!("{t} missing (apt-get install {install})"));
        }
    }
    if !std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .contains("btrfs")
    {
        return Some("kernel without btrfs".into());
    }
    None
}

/// A private world for one test: a state dir, a results database and a disk dir (in /dev/shm
/// when there is one).
pub struct World {
    pub state: tempfile::TempDir,
    /// The results database's directory (kept apart from the state dir the tests inspect).
    pub db: tempfile::TempDir,
    pub disk_dir: PathBuf,
}

static N: AtomicUsize = AtomicUsize::new(0);

impl World {
    pub fn new(tag: &str) -> World {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        World {
            state: tempfile::tempdir().unwrap(),
            db: tempfile::tempdir().unwrap(),
            disk_dir: base.join(format!(
                "iolab-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            )),
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.env("IOLAB_STATE_DIR", self.state.path());
        c.env("IOLAB_DB", self.db.path().join("iolab.db"));
        c
    }

    pub fn lab(&self, args: &[&str]) -> Output {
        let mut c = self.cmd();
        c.arg("lab").args(args);
        c.output().unwrap()
    }

    /// The lab with loop disks in our disk dir, JSON out.
    pub fn lab_json(&self, spec: &Path, extra: &[&str]) -> (Output, Value) {
        let d = self.disk_dir.to_string_lossy().to_string();
        let mut args = vec![spec.to_str().unwrap(), "--disk-dir", &d, "--format", "json"];
        args.extend_from_slice(extra);
        let out = self.lab(&args);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON report ({e}); stdout: {} stderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out, v)
    }

    pub fn state_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.state.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect()
    }

    /// Loop devices whose backing file is in our disk dir.
    pub fn our_loops(&self) -> Vec<String> {
        let out = Command::new("losetup").arg("-a").output().unwrap();
        let d = self.disk_dir.to_string_lossy().to_string();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&d))
            .map(str::to_string)
            .collect()
    }

    /// Asserts the lab left nothing: no loop device on our files, no mount, no disk dir, no state.
    pub fn assert_clean(&self, lab_id: &str) {
        assert!(
            self.our_loops().is_empty(),
            "loop devices left: {:?}",
            self.our_loops()
        );
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let tag = format!("iolab-{lab_id}-");
        let left: Vec<&str> = mounts.lines().filter(|l| l.contains(&tag)).collect();
        assert!(left.is_empty(), "mounts left: {left:?}");
        assert!(
            !self.disk_dir.exists(),
            "disk dir left: {:?}",
            std::fs::read_dir(&self.disk_dir)
                .map(|r| r.flatten().map(|e| e.path()).collect::<Vec<_>>())
        );
        let tmp_left: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(&tag))
            .collect();
        assert!(tmp_left.is_empty(), "mount points left: {tmp_left:?}");
        assert!(
            self.state_files().is_empty(),
            "state left: {:?}",
            self.state_files()
        );
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // A test that failed half-way leaves the machine clean for the next one.
        let _ = self.cmd().args(["lab", "--cleanup"]).output();
    }
}
