//! What a killed `iolab run` leaves in its target directory, and `iolab run --cleanup`, which
//! removes it: test files `iolab-PID.dat`, small-file trees `iolab-smallfile-PID-N`, O_DIRECT
//! probes `.iolab-dio-probe-PID`, partial trace files `.iolab-trace-PID-NAME.partial` of a
//! killed `iolab capture`, and the temporary `.iolab-*` directories a run without a
//! target made, each only when process PID is gone (a live run's files are never touched).

use std::path::{Path, PathBuf};

/// The pid in a name this module knows, when it is one of ours.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("iolab-smallfile-")
        .map(|r| r.split('-').next().unwrap_or(""))
        .or_else(|| {
            name.strip_prefix("iolab-")
                .and_then(|r| r.strip_suffix(".dat"))
        })
        .or_else(|| name.strip_prefix(".iolab-dio-probe-"))
        // A killed capture's partial trace (`.iolab-trace-PID-NAME.partial`, trace::write).
        .or_else(|| {
            name.strip_prefix(".iolab-trace-")
                .map(|r| r.split('-').next().unwrap_or(""))
        })?;
    rest.parse().ok()
}

fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the leftovers of dead runs in `dir` (and in the `.iolab-*` directories in it);
/// returns what was removed.
pub fn clean(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for e in std::fs::read_dir(dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        if let Some(pid) = owner_pid(&name) {
            if alive(pid) {
                continue;
            }
            if p.is_dir() {
                std::fs::remove_dir_all(&p)?;
            } else {
                std::fs::remove_file(&p)?;
            }
            removed.push(p);
        } else if name.starts_with(".iolab-") && p.is_dir() {
            // A temporary target: emptied of dead runs' files, removed when nothing else is in it.
            let inner = clean(&p)?;
            let empty = std::fs::read_dir(&p).is_ok_and(|mut r| r.next().is_none());
            removed.extend(inner);
            if empty {
                std::fs::remove_dir(&p)?;
                removed.push(p);
            }
        }
    }
    Ok(removed)
}

/// One thing a killed run left on disk, named as that run's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// The file or directory.
    pub path: PathBuf,
    /// Its size (a directory's own entry only: its tree is not walked).
    pub bytes: u64,
}

/// What killed runs left in their targets: for each `(target, pid)` (a run's target as stored
/// and the pid of its dead process), the entries of `target` named as that pid's own, and the
/// temporary `.iolab-*` target itself when the run made it. Each distinct target is read once;
/// a target that is no directory, or a pid that names a running process now (reused), yields
/// nothing. Cheap enough for every command that opens the store: one `read_dir` per target.
pub fn left_by_killed(runs: &[(PathBuf, u32)]) -> Vec<Leftover> {
    let mut by_target: Vec<(&Path, Vec<u32>)> = Vec::new();
    for (t, pid) in runs {
        if alive(*pid) {
            continue;
        }
        match by_target.iter_mut().find(|(p, _)| p == t) {
            Some((_, pids)) => pids.push(*pid),
            None => by_target.push((t, vec![*pid])),
        }
    }
    let mut out = Vec::new();
    for (target, pids) in by_target {
        let Ok(rd) = std::fs::read_dir(target) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if owner_pid(&name).is_some_and(|p| pids.contains(&p)) {
                let bytes = e.metadata().map_or(0, |m| m.len());
                out.push(Leftover {
                    path: e.path(),
                    bytes,
                });
            }
        }
        if is_temporary_target(target) {
            out.push(Leftover {
                path: target.to_path_buf(),
                bytes: 0,
            });
        }
    }
    out
}

/// A directory `iolab run` made for itself when given no target (`.iolab-XXXXXX`).
fn is_temporary_target(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(".iolab-"))
        && p.is_dir()
}

/// Removes what [`left_by_killed`] found; a temporary target only once nothing else is in it.
/// Returns what was removed.
pub fn clean_killed(runs: &[(PathBuf, u32)]) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let found = left_by_killed(runs);
    let (dirs, items): (Vec<_>, Vec<_>) = found
        .into_iter()
        .partition(|l| runs.iter().any(|(t, _)| *t == l.path));
    for l in items {
        if l.path.is_dir() {
            std::fs::remove_dir_all(&l.path)?;
        } else {
            std::fs::remove_file(&l.path)?;
        }
        removed.push(l.path);
    }
    for d in dirs {
        if std::fs::read_dir(&d.path).is_ok_and(|mut r| r.next().is_none()) {
            std::fs::remove_dir(&d.path)?;
            removed.push(d.path);
        }
    }
    Ok(removed)
}

/// How the directory of ssh control sockets of an `iolab run --hosts` controller is named:
/// this, its pid, a dash and a random part (`iolab-ssh-PID-XXXXXX` in the temporary
/// directory). `hosts::launch` makes it under this name; it is defined here, the earlier
/// stage, so that this sweep needs nothing from `hosts`.
pub const SSH_CONTROL_PREFIX: &str = "iolab-ssh-";

/// The pid in a controller's ssh control directory name (`iolab-ssh-PID-XXXXXX`).
fn control_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(SSH_CONTROL_PREFIX)?;
    rest.split('-').next()?.parse().ok()
}

/// Removes what killed `iolab run --hosts` controllers left in `tmp` (the temporary directory):
/// their directories of ssh control sockets, after killing the ssh masters that still hold
/// them (`ControlPersist` keeps a master up after its controller died). Only directories
/// whose controller is gone are touched, and only ssh processes naming that directory.
pub fn clean_ssh_controls(tmp: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for e in std::fs::read_dir(tmp)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        let Some(pid) = control_owner(&name) else {
            continue;
        };
        if alive(pid) || !p.is_dir() {
            continue;
        }
        for (master, start) in processes_naming(&p) {
            crate::layout::state::kill_process(master, start);
        }
        std::fs::remove_dir_all(&p)?;
        removed.push(p);
    }
    Ok(removed)
}

/// The ssh processes whose command line names `dir` (with its start time, so a reused pid is
/// never killed).
fn processes_naming(dir: &Path) -> Vec<(u32, Option<u64>)> {
    let needle = format!("{}/", dir.display());
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let start = crate::layout::state::process_start(pid);
            let c = std::fs::read(e.path().join("cmdline")).ok()?;
            let c = String::from_utf8_lossy(&c);
            let ssh = c
                .split('\0')
                .next()
                .is_some_and(|a0| a0 == "ssh" || a0.ends_with("/ssh") || a0.starts_with("ssh:"));
            (ssh && c.contains(&needle)).then_some((pid, start))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_own_names_only() {
        assert_eq!(owner_pid("iolab-123.dat"), Some(123));
        assert_eq!(owner_pid("iolab-smallfile-45-2"), Some(45));
        assert_eq!(owner_pid(".iolab-dio-probe-7"), Some(7));
        assert_eq!(owner_pid("iolab.db"), None);
        assert_eq!(owner_pid("iolab-x.dat"), None);
        assert_eq!(owner_pid("notes.txt"), None);
        assert_eq!(control_owner("iolab-ssh-42-abC123"), Some(42));
        assert_eq!(control_owner("iolab-ssh-abC123"), None);
    }

    #[test]
    fn removes_dead_runs_files_and_keeps_live_ones() {
        let d = tempfile::tempdir().unwrap();
        // pid 0x7fff_fff0 is never alive; our own pid is.
        let dead = d.path().join("iolab-2147483632.dat");
        let live = d.path().join(format!("iolab-{}.dat", std::process::id()));
        let other = d.path().join("keep.txt");
        let tmp = d.path().join(".iolab-abc123");
        std::fs::create_dir(&tmp).unwrap();
        std::fs::write(tmp.join("iolab-2147483632.dat"), b"x").unwrap();
        for f in [&dead, &live, &other] {
            std::fs::write(f, b"x").unwrap();
        }
        let r = clean(d.path()).unwrap();
        assert!(
            !dead.exists() && live.exists() && other.exists() && !tmp.exists(),
            "{r:?}"
        );
    }

    /// The targets of killed runs, found from the store, wherever they are.
    #[test]
    fn killed_runs_leftovers_are_theirs_only() {
        let d = tempfile::tempdir().unwrap();
        let (dead, other_dead) = (2_147_483_632_u32, 2_147_483_633_u32);
        let kt = d.path().join("kt");
        let tmp = d.path().join(".iolab-x1");
        for p in [&kt, &tmp] {
            std::fs::create_dir(p).unwrap();
        }
        let ours = kt.join(format!("iolab-{dead}.dat"));
        let tree = kt.join(format!("iolab-smallfile-{dead}-2"));
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(tree.join("f"), b"x").unwrap();
        // Another dead run's file: not one of the runs asked about, so it stays.
        let theirs = kt.join(format!("iolab-{other_dead}.dat"));
        let keep = kt.join("keep.txt");
        let in_tmp = tmp.join(format!("iolab-{dead}.dat"));
        std::fs::write(&ours, vec![0u8; 3000]).unwrap();
        for f in [&theirs, &keep, &in_tmp] {
            std::fs::write(f, b"x").unwrap();
        }
        let me = std::process::id();
        let runs = vec![
            (kt.clone(), dead),
            (tmp.clone(), dead),
            (d.path().join("gone"), dead),
            (keep.clone(), dead),
            // A pid that runs now (this test): reused, its files are never touched.
            (kt.clone(), me),
        ];
        std::fs::write(kt.join(format!("iolab-{me}.dat")), b"x").unwrap();
        let found = left_by_killed(&runs);
        let mut paths: Vec<&Path> = found.iter().map(|l| l.path.as_path()).collect();
        paths.sort();
        let mut want = vec![
            ours.as_path(),
            tree.as_path(),
            tmp.as_path(),
            in_tmp.as_path(),
        ];
        want.sort();
        assert_eq!(paths, want);
        assert_eq!(found.iter().find(|l| l.path == ours).unwrap().bytes, 3000);
        let removed = clean_killed(&runs).unwrap();
        assert_eq!(removed.len(), 4, "{removed:?}");
        assert!(!ours.exists() && !tree.exists() && !tmp.exists());
        assert!(theirs.exists() && keep.exists() && kt.exists());
        assert!(kt.join(format!("iolab-{me}.dat")).exists());
        assert!(left_by_killed(&runs).is_empty());
    }

    #[test]
    fn removes_dead_controllers_ssh_directories_only() {
        let d = tempfile::tempdir().unwrap();
        let dead = d.path().join("iolab-ssh-2147483632-x1");
        let live = d
            .path()
            .join(format!("iolab-ssh-{}-x2", std::process::id()));
        let other = d.path().join("iolab-ssh-old");
        for p in [&dead, &live, &other] {
            std::fs::create_dir(p).unwrap();
        }
        std::fs::write(dead.join("sock"), b"").unwrap();
        let r = clean_ssh_controls(d.path()).unwrap();
        assert_eq!(r, vec![dead.clone()]);
        assert!(!dead.exists() && live.exists() && other.exists());
    }
}
