//! What the real-lab tests (`tests/lab.rs`, `tests/integrity.rs`) share: whether they can run on
//! this machine (skipping through `common::skip` when not), and a private world per test (state
//! dir, results database, disk dir) that checks the lab left nothing behind and cleans up after
//! a test that failed half-way. Needs `mod common;` next to `mod lab_world;` in the test file.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::common::{Iolab, Out, need_kernel, need_root, need_tool};

/// Whether real lab tests can run here: root, loop devices, btrfs in the kernel, and `tools`
/// (each with the apt package that brings it). When not, the test's skip is recorded (see
/// `common::skip`) and this is false.
pub(crate) fn can_run(tools: &[(&str, &str)]) -> bool {
    need_root()
        && need_kernel(
            "loop",
            Path::new("/dev/loop-control").exists(),
            "no loop devices (/dev/loop-control)",
        )
        && tools.iter().all(|(tool, apt)| need_tool(tool, apt))
        && need_kernel(
            "btrfs",
            std::fs::read_to_string("/proc/filesystems")
                .unwrap_or_default()
                .contains("btrfs"),
            "kernel without btrfs",
        )
}

/// Returns from the test (skipping it) unless real lab tests can run here with these
/// `(tool, apt package)` pairs.
macro_rules! require_lab {
    ($($tool:expr => $apt:expr),* $(,)?) => {
        if !$crate::lab_world::can_run(&[$(($tool, $apt)),*]) {
            return;
        }
    };
}
pub(crate) use require_lab;

/// A private world for one test: a state dir, a results database and a disk dir (in /dev/shm
/// when there is one).
pub(crate) struct World {
    pub state: tempfile::TempDir,
    /// The results database's directory (kept apart from the state dir the tests inspect).
    pub db: tempfile::TempDir,
    pub disk_dir: PathBuf,
}

static N: AtomicUsize = AtomicUsize::new(0);

impl World {
    pub(crate) fn new(tag: &str) -> World {
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

    /// The binary in this world: its state dir and results database.
    pub(crate) fn iolab(&self) -> Iolab {
        Iolab::new()
            .env("IOLAB_STATE_DIR", self.state.path())
            .db(self.db.path().join("iolab.db"))
    }

    /// `iolab lab ARGS` in this world.
    pub(crate) fn lab(&self, args: &[&str]) -> Out {
        self.iolab().arg("lab").args(args).run()
    }

    /// The lab with loop disks in our disk dir, JSON out.
    pub(crate) fn lab_json(&self, spec: &Path, extra: &[&str]) -> (Out, Value) {
        let d = self.disk_dir.to_string_lossy().to_string();
        let mut args = vec![spec.to_str().unwrap(), "--disk-dir", &d, "--format", "json"];
        args.extend_from_slice(extra);
        let out = self.lab(&args);
        let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON report ({e}); stdout: {} stderr: {}",
                out.stdout, out.stderr
            )
        });
        (out, v)
    }

    /// Each layout's status, error, integrity verdict and phase errors in one line: what an
    /// assertion on the lab's exit code prints, so a failure says which layout and step.
    pub(crate) fn layouts_summary(v: &Value) -> String {
        let Some(ls) = v["layouts"].as_array() else {
            return format!("no layouts in the report: {v}");
        };
        ls.iter()
            .map(|l| {
                format!(
                    "{}: status {} error {} reason {} integrity {} degraded workload {} rebuild load {}",
                    l["name"],
                    l["status"],
                    l["error"],
                    l["reason"],
                    l["integrity"]["verdict"],
                    l["degraded"]["workload_error"],
                    l["rebuild_load"]["workload_error"]
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(crate) fn state_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.state.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect()
    }

    /// Loop devices whose backing file is in our disk dir.
    pub(crate) fn our_loops(&self) -> Vec<String> {
        let out = Command::new("losetup").arg("-a").output().unwrap();
        let d = self.disk_dir.to_string_lossy().to_string();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&d))
            .map(str::to_string)
            .collect()
    }

    /// Asserts the lab left nothing: no loop device on our files, no mount, no disk dir, no state.
    pub(crate) fn assert_clean(&self, lab_id: &str) {
        self.assert_clean_but_evidence(lab_id, &[]);
    }

    /// As `assert_clean`, but the layouts in `lost` lost data: their data set's checksum
    /// manifest (`manifest-<lab id>-<layout>.xxh3`) must be kept in the state dir as the
    /// evidence, and nothing else.
    pub(crate) fn assert_clean_but_evidence(&self, lab_id: &str, lost: &[&str]) {
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
        let mut left = self.state_files();
        left.sort();
        let mut evidence: Vec<PathBuf> = lost
            .iter()
            .map(|l| {
                self.state
                    .path()
                    .join(format!("manifest-{lab_id}-{l}.xxh3"))
            })
            .collect();
        evidence.sort();
        assert_eq!(
            left, evidence,
            "state left (only the lost layouts' manifests may stay)"
        );
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // A test that failed half-way leaves the machine clean for the next one.
        let _ = self.iolab().args(["lab", "--cleanup"]).command().output();
    }
}
