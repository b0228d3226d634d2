//! The lab's state file: every object it is about to create, written *before* creating it, so a
//! lab killed with SIGKILL can be cleaned up by `iolab lab --cleanup` — and only its own objects.
//!
//! Each object knows how to remove itself and how to check first that what it would remove is
//! really ours: a loop device is detached only when its backing file is the file we created; a
//! mount is unmounted only on the private directory we made; an md array is stopped only when
//! its name carries the lab id; a volume group is named after the lab id.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::LayoutError;
use super::cmd::Runner;
use super::loopdev;

/// One object a lab created (or is about to create).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Owned {
    /// A directory we made (disk dir, mount point); removed only when empty.
    Dir {
        /// Its path.
        path: PathBuf,
    },
    /// A sparse backing file of a loop disk.
    BackingFile {
        /// Its path.
        path: PathBuf,
    },
    /// Loop devices attached to our backing file (found again by the file, not by number).
    Loop {
        /// The backing file.
        backing: PathBuf,
        /// The device, once `losetup` said which.
        dev: Option<PathBuf>,
    },
    /// Devices registered with the kernel's btrfs device list by our mkfs.
    Btrfs {
        /// Member devices.
        devices: Vec<PathBuf>,
    },
    /// An md array we created.
    Md {
        /// `/dev/mdN`.
        dev: PathBuf,
        /// `--name` given at create; carries the lab id.
        name: String,
        /// Its members (superblocks zeroed after a normal stop).
        members: Vec<PathBuf>,
    },
    /// A volume group (and its one LV) we created.
    Vg {
        /// VG name; carries the lab id.
        name: String,
        /// Physical volumes.
        pvs: Vec<PathBuf>,
    },
    /// A bcache device we made (`make-bcache -B backing -C caches`), registered with the
    /// kernel; stopped and its cache set unregistered at teardown.
    Bcache {
        /// The backing device (the md array, or its LV).
        backing: PathBuf,
        /// The cache devices of its cache set.
        caches: Vec<PathBuf>,
        /// The cache set's UUID (we chose it at make-bcache).
        cset: String,
    },
    /// A ZFS pool we created (its dataset mounted on a directory we made).
    Zpool {
        /// Pool name; carries the lab id (`iolab-<lab>-<index>`).
        name: String,
        /// Every device in it (labels cleared after a normal destroy).
        members: Vec<PathBuf>,
    },
    /// A filesystem mounted on a directory we made.
    Mount {
        /// The mount point.
        path: PathBuf,
    },
    /// A process we started (the qemu of `iolab lab --vm`); killed only when its start time
    /// still matches, so a reused pid is left alone.
    Process {
        /// Its pid.
        pid: u32,
        /// Its start time in clock ticks since boot.
        start: Option<u64>,
        /// What it is, for messages.
        what: String,
    },
    /// A device-mapper device over a member (for injected faults and emulated latency).
    Dm {
        /// Its dm name; carries the lab id.
        name: String,
    },
    /// A directory of our own temporary files (a VM's disks and share), removed with its
    /// contents; only a directory whose name starts with `iolab-vm-` is ever removed.
    TempDir {
        /// Its path.
        path: PathBuf,
    },
}

impl Owned {
    /// Teardown order: lower first. Unmount before anything under the mount goes away; btrfs
    /// forget, zpool destroy (which unmounts its dataset), bcache (over an LV or the array)
    /// and LVM before the md array under them; md before the loop devices, loop devices before their files, files before their
    /// directory.
    pub fn rank(&self) -> u8 {
        match self {
            Owned::Process { .. } | Owned::Mount { .. } => 0,
            Owned::Btrfs { .. } | Owned::Zpool { .. } | Owned::Bcache { .. } => 1,
            Owned::Vg { .. } => 2,
            Owned::Md { .. } => 3,
            Owned::Loop { .. } | Owned::Dm { .. } => 4,
            Owned::BackingFile { .. } | Owned::TempDir { .. } => 5,
            Owned::Dir { .. } => 6,
        }
    }

    /// A short label for messages: `mount /tmp/iolab-x`, `loop /dev/loop3 (file ...)`.
    pub fn label(&self) -> String {
        match self {
            Owned::Dir { path } => format!("directory {}", path.display()),
            Owned::BackingFile { path } => format!("backing file {}", path.display()),
            Owned::Loop { backing, dev } => match dev {
                Some(d) => format!("loop device {} ({})", d.display(), backing.display()),
                None => format!("loop device on {}", backing.display()),
            },
            Owned::Btrfs { devices } => format!(
                "btrfs registration of {}",
                devices
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Owned::Md { dev, .. } => format!("md array {}", dev.display()),
            Owned::Vg { name, .. } => format!("volume group {name}"),
            Owned::Bcache { backing, .. } => format!("bcache over {}", backing.display()),
            Owned::Zpool { name, .. } => format!("zfs pool {name}"),
            Owned::Mount { path } => format!("mount {}", path.display()),
            Owned::Process { pid, what, .. } => format!("{what} (pid {pid})"),
            Owned::TempDir { path } => format!("temporary directory {}", path.display()),
            Owned::Dm { name } => format!("dm device {name}"),
        }
    }

    /// Removes the object if it still exists. `stale` is true from `--cleanup`: then nothing is
    /// done that could harm a device the user may have reused since (md superblocks are not
    /// zeroed, only our named array is stopped).
    pub fn remove(&self, runner: &Runner, stale: bool) -> Result<(), LayoutError> {
        let dry = runner.is_dry_run();
        match self {
            Owned::Mount { path } => {
                if dry {
                    runner.run(&["umount", &path.to_string_lossy()])?;
                    return Ok(());
                }
                unmount(runner, path)
            }
            Owned::Dir { path } => {
                if dry {
                    return Ok(());
                }
                match std::fs::remove_dir(path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(LayoutError::io("cannot remove directory", path, e)),
                }
            }
            Owned::BackingFile { path } => {
                if dry {
                    return Ok(());
                }
                match std::fs::remove_file(path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(LayoutError::io("cannot remove backing file", path, e)),
                }
            }
            Owned::Loop { backing, dev } => {
                if dry {
                    if let Some(d) = dev {
                        runner.run(&["losetup", "-d", &d.to_string_lossy()])?;
                    }
                    return Ok(());
                }
                for d in loopdev::devices_backed_by(backing) {
                    loopdev::detach(runner, &d)?;
                }
                Ok(())
            }
            Owned::Btrfs { devices } => {
                for d in devices {
                    if dry || d.exists() {
                        // Forgetting a device no longer registered fails harmlessly.
                        let _ = runner.run(&[
                            "btrfs",
                            "device",
                            "scan",
                            "--forget",
                            &d.to_string_lossy(),
                        ]);
                    }
                }
                Ok(())
            }
            Owned::Vg { name, pvs } => super::lvm::remove(runner, name, pvs),
            Owned::Bcache {
                backing,
                caches,
                cset,
            } => super::cache::remove_bcache(runner, backing, caches, cset, stale),
            Owned::Zpool { name, members } => super::zfs::destroy(runner, name, members, !stale),
            Owned::Md { dev, name, members } => {
                super::mdadm::stop_owned(runner, dev, name, members, !stale)
            }
            Owned::Dm { name } => super::fault::remove(runner, name),
            Owned::Process { pid, start, .. } => {
                if !dry {
                    kill_process(*pid, *start);
                }
                Ok(())
            }
            Owned::TempDir { path } => {
                let ours = path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("iolab-vm-"));
                if dry || !ours {
                    return Ok(());
                }
                match std::fs::remove_dir_all(path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(LayoutError::io("cannot remove directory", path, e)),
                }
            }
        }
    }
}

/// Kills `pid` (SIGKILL) when it is still the process started at `start`, and waits up to 5 s
/// for it to go.
pub fn kill_process(pid: u32, start: Option<u64>) {
    let alive = || {
        !matches!(process_state(pid), None | Some('Z' | 'X'))
            && (start.is_none() || process_start(pid) == start)
    };
    if !alive() {
        return;
    }
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    // Checked above to be our process; a failure means it is already gone.
    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    let t = std::time::Instant::now();
    while alive() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn unmount(runner: &Runner, path: &Path) -> Result<(), LayoutError> {
    let p = path.to_string_lossy().to_string();
    for attempt in 0..6 {
        if !is_mount_point(path) || runner.run(&["umount", &p]).is_ok() {
            return Ok(());
        }
        // A running btrfs replace or balance keeps the filesystem busy: stop it, then retry.
        if attempt == 1 {
            let _ = runner.run(&["btrfs", "replace", "cancel", &p]);
            let _ = runner.run(&["btrfs", "balance", "cancel", &p]);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if is_mount_point(path) {
        // Last resort: detach it from the tree; the kernel finishes when the last user is gone.
        runner.run(&["umount", "-l", &p])?;
    }
    Ok(())
}

/// Whether something is mounted exactly on `path`.
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(real) = std::fs::canonicalize(path) else {
        return false;
    };
    crate::system::mounts::mounts()
        .iter()
        .any(|m| m.mount_point == real || m.mount_point == path)
}

/// Where state files live: `$IOLAB_STATE_DIR`, else `/run/iolab` as root, else
/// `$XDG_RUNTIME_DIR/iolab`, else `<tmp>/iolab-<uid>`.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("IOLAB_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if crate::system::is_root() && Path::new("/run").is_dir() {
        return PathBuf::from("/run/iolab");
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("iolab");
    }
    let uid = rustix::process::getuid().as_raw();
    std::env::temp_dir().join(format!("iolab-{uid}"))
}

/// What a state file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Format version.
    pub version: u32,
    /// The lab id (in every name the lab gives).
    pub lab_id: String,
    /// The lab's process.
    pub pid: u32,
    /// Its start time in clock ticks since boot (tells a reused pid apart).
    pub pid_start: Option<u64>,
    /// When the lab started, seconds since the epoch.
    pub started_unix: u64,
    /// The spec file, for messages.
    pub spec: String,
    /// Every object, in creation order.
    pub objects: Vec<Owned>,
}

/// A state file on disk, rewritten atomically on every change.
#[derive(Debug)]
pub struct StateFile {
    path: PathBuf,
    /// The current contents.
    pub state: State,
}

impl StateFile {
    /// Creates the state file for a new lab (before anything is touched).
    pub fn create(dir: &Path, lab_id: &str, spec: &str) -> Result<StateFile, LayoutError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| LayoutError::io("cannot create state directory", dir, e))?;
        let pid = std::process::id();
        let sf = StateFile {
            path: dir.join(format!("lab-{lab_id}.json")),
            state: State {
                version: 1,
                lab_id: lab_id.to_string(),
                pid,
                pid_start: process_start(pid),
                started_unix: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                spec: spec.to_string(),
                objects: Vec::new(),
            },
        };
        sf.save()?;
        Ok(sf)
    }

    /// Reads a state file.
    pub fn open(path: &Path) -> Result<StateFile, LayoutError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LayoutError::io("cannot read state file", path, e))?;
        let state: State = serde_json::from_str(&text).map_err(|e| {
            LayoutError::Unexpected(format!("state file {} is damaged: {e}", path.display()))
        })?;
        Ok(StateFile {
            path: path.to_path_buf(),
            state,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the state (temp file + fsync + rename, so a kill never leaves half a file).
    pub fn save(&self) -> Result<(), LayoutError> {
        use std::io::Write;
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(&self.state)
            .map_err(|e| LayoutError::Unexpected(format!("cannot encode state: {e}")))?;
        let mut f = std::fs::File::create(&tmp)
            .map_err(|e| LayoutError::io("cannot write state file", &tmp, e))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| LayoutError::io("cannot write state file", &tmp, e))?;
        std::fs::rename(&tmp, &self.path)
            .map_err(|e| LayoutError::io("cannot write state file", &self.path, e))
    }

    /// Removes the state file (everything in it is gone).
    pub fn remove(self) -> Result<(), LayoutError> {
        std::fs::remove_file(&self.path)
            .map_err(|e| LayoutError::io("cannot remove state file", &self.path, e))
    }

    /// True when the process that wrote this file is still running.
    pub fn owner_alive(&self) -> bool {
        let s = &self.state;
        // A killed process that is not reaped yet is a zombie: dead for our purposes.
        match process_state(s.pid) {
            None | Some('Z' | 'X') => return false,
            Some(_) => {}
        }
        match (s.pid_start, process_start(s.pid)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

/// A process's state letter (`R`, `S`, `D`, `Z`...), field 3 of /proc/PID/stat.
pub fn process_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 1..].trim_start().chars().next()
}

/// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat).
pub fn process_start(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Removes `objects` in teardown order (by rank, newest first within a rank). Returns what could
/// not be removed, with why; the rest is gone.
pub fn teardown(runner: &Runner, objects: &[Owned], stale: bool) -> Vec<(Owned, LayoutError)> {
    teardown_order(objects)
        .into_iter()
        .filter_map(|o| o.remove(runner, stale).err().map(|e| (o.clone(), e)))
        .collect()
}

/// The objects in the order teardown removes them.
pub fn teardown_order(objects: &[Owned]) -> Vec<&Owned> {
    let mut order: Vec<(usize, &Owned)> = objects.iter().enumerate().collect();
    order.sort_by_key(|(i, o)| (o.rank(), std::cmp::Reverse(*i)));
    order.into_iter().map(|(_, o)| o).collect()
}

/// Waits (up to `limit`) until no process mentions the lab id on its command line.
fn wait_for_stragglers(lab_id: &str, limit: Duration) {
    let needle = format!("iolab-{lab_id}-");
    let alt = format!("iolab_{lab_id}_");
    let me = std::process::id();
    let t = std::time::Instant::now();
    while t.elapsed() < limit {
        let busy = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    return false;
                };
                if pid == me {
                    return false;
                }
                std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                    let c = String::from_utf8_lossy(&c);
                    c.contains(&needle) || c.contains(&alt)
                })
            });
        if !busy {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Where a lab keeps a layout's data set manifest (its checksums) beside its state file: one
/// name for the lab that writes it and the cleanup that removes what a killed lab left.
pub fn manifest_path(dir: &Path, lab_id: &str, layout: &str) -> PathBuf {
    dir.join(format!(
        "{}{layout}{MANIFEST_SUFFIX}",
        manifest_prefix(lab_id)
    ))
}

/// What every manifest of a lab's starts with (see [`manifest_path`]).
fn manifest_prefix(lab_id: &str) -> String {
    format!("manifest-{lab_id}-")
}

const MANIFEST_SUFFIX: &str = ".xxh3";

/// Removes the data set manifests ([`manifest_path`]) a lab wrote beside its state file: a
/// killed lab never got to decide whether to keep them.
fn remove_manifests(dir: &Path, lab_id: &str) {
    let prefix = manifest_prefix(lab_id);
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.ends_with(MANIFEST_SUFFIX) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// What `iolab lab --cleanup` did with one state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CleanupOutcome {
    /// The state file.
    pub state_file: PathBuf,
    /// The lab id.
    pub lab_id: String,
    /// Its process is still running: left alone.
    pub still_running: bool,
    /// Objects removed (labels).
    pub removed: Vec<String>,
    /// Objects that could not be removed, with why.
    pub failed: Vec<String>,
}

/// Finds the state files of labs that are no longer running and removes their objects.
pub fn cleanup(runner: &Runner, dir: &Path) -> Result<Vec<CleanupOutcome>, LayoutError> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(LayoutError::io("cannot read state directory", dir, e)),
    };
    let all: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    let named = |p: &PathBuf, suffix: &str| {
        p.file_name()
            .map(|f| f.to_string_lossy())
            .is_some_and(|f| f.starts_with("lab-") && f.ends_with(suffix))
    };
    // A lab killed while saving leaves `lab-ID.json.tmp`. Objects are recorded before they are
    // created, so the `.json` beside it already lists everything; a lone `.tmp` is a lab killed
    // before it created anything.
    for t in all.iter().filter(|p| named(p, ".json.tmp")) {
        let json = t.with_extension("");
        let dead = std::fs::read_to_string(t)
            .ok()
            .and_then(|x| serde_json::from_str::<State>(&x).ok())
            .is_none_or(|st| {
                !StateFile {
                    path: t.clone(),
                    state: st,
                }
                .owner_alive()
            });
        if dead && !json.exists() {
            let _ = std::fs::remove_file(t);
        }
    }
    let mut paths: Vec<PathBuf> = all.into_iter().filter(|p| named(p, ".json")).collect();
    paths.sort();
    for p in paths {
        let sf = StateFile::open(&p)?;
        let mut o = CleanupOutcome {
            state_file: p.clone(),
            lab_id: sf.state.lab_id.clone(),
            still_running: false,
            removed: Vec::new(),
            failed: Vec::new(),
        };
        if sf.owner_alive() && sf.state.pid != std::process::id() {
            o.still_running = true;
            out.push(o);
            continue;
        }
        // A tool the lab was running when it died may still be finishing (a mount, a
        // losetup): let it end first, or it would recreate what we remove.
        wait_for_stragglers(&sf.state.lab_id, Duration::from_secs(10));
        let mut failed = teardown(runner, &sf.state.objects, true);
        if !failed.is_empty() {
            std::thread::sleep(Duration::from_millis(500));
            failed = teardown(runner, &sf.state.objects, true);
        }
        for obj in teardown_order(&sf.state.objects) {
            if !failed.iter().any(|(f, _)| f == obj) {
                o.removed.push(obj.label());
            }
        }
        o.failed = failed
            .iter()
            .map(|(obj, e)| format!("{}: {e}", obj.label()))
            .collect();
        if o.failed.is_empty() {
            let _ = std::fs::remove_file(p.with_extension("json.tmp"));
            remove_manifests(dir, &sf.state.lab_id);
            sf.remove()?;
        }
        out.push(o);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teardown_order_is_by_rank_then_newest_first() {
        let r = Runner::recording();
        let objs = vec![
            Owned::BackingFile {
                path: "/x/a.img".into(),
            },
            Owned::Loop {
                backing: "/x/a.img".into(),
                dev: Some("/dev/loop7".into()),
            },
            Owned::Loop {
                backing: "/x/b.img".into(),
                dev: Some("/dev/loop8".into()),
            },
            Owned::Btrfs {
                devices: vec!["/dev/loop7".into()],
            },
            Owned::Mount {
                path: "/tmp/m".into(),
            },
        ];
        assert!(teardown(&r, &objs, false).is_empty());
        assert_eq!(
            r.log(),
            vec![
                "umount /tmp/m",
                "btrfs device scan --forget /dev/loop7",
                "losetup -d /dev/loop8",
                "losetup -d /dev/loop7",
            ]
        );
    }

    #[test]
    fn state_round_trips_and_knows_its_owner() {
        let d = tempfile::tempdir().unwrap();
        let mut sf = StateFile::create(d.path(), "abc123", "x.toml").unwrap();
        sf.state.objects.push(Owned::Dir {
            path: "/nowhere".into(),
        });
        sf.save().unwrap();
        let back = StateFile::open(sf.path()).unwrap();
        assert_eq!(back.state, sf.state);
        assert!(back.owner_alive());
        assert!(process_start(std::process::id()).is_some());
    }

    #[test]
    fn cleanup_removes_a_dead_labs_objects_and_spares_live_ones() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("left-behind");
        std::fs::create_dir(&victim).unwrap();
        let file = victim.join("disk.img");
        std::fs::write(&file, b"x").unwrap();
        let mut sf = StateFile::create(d.path(), "dead01", "x.toml").unwrap();
        sf.state.pid = u32::MAX - 1; // no such process
        sf.state.objects = vec![
            Owned::Dir {
                path: victim.clone(),
            },
            Owned::BackingFile { path: file.clone() },
        ];
        sf.save().unwrap();
        std::fs::write(d.path().join("manifest-dead01-r1.xxh3"), "x").unwrap();
        std::fs::write(d.path().join("manifest-live01-r1.xxh3"), "x").unwrap();
        let mut live = StateFile::create(d.path(), "live01", "y.toml").unwrap();
        live.state.pid = 1;
        live.state.pid_start = process_start(1);
        live.save().unwrap();
        // Killed mid-save: a .tmp beside its .json, and a lone .tmp of a lab that made nothing.
        std::fs::copy(sf.path(), d.path().join("lab-dead01.json.tmp")).unwrap();
        std::fs::copy(sf.path(), d.path().join("lab-dead02.json.tmp")).unwrap();
        let out = cleanup(&Runner::real(), d.path()).unwrap();
        assert!(!d.path().join("lab-dead01.json.tmp").exists());
        assert!(!d.path().join("lab-dead02.json.tmp").exists());
        assert_eq!(out.len(), 2);
        let dead = out.iter().find(|o| o.lab_id == "dead01").unwrap();
        assert!(dead.failed.is_empty(), "{dead:?}");
        assert_eq!(dead.removed.len(), 2);
        assert!(!victim.exists());
        assert!(!d.path().join("lab-dead01.json").exists());
        assert!(
            out.iter()
                .find(|o| o.lab_id == "live01")
                .unwrap()
                .still_running
        );
        assert!(d.path().join("lab-live01.json").exists());
        assert!(!d.path().join("manifest-dead01-r1.xxh3").exists());
        assert!(d.path().join("manifest-live01-r1.xxh3").exists());
    }
}
