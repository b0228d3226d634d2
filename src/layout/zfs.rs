//! ZFS pools: the command lines that build a pool of the `zfs` RAID layer's shape
//! ([`ZfsOptions`], described in [`crate::stack::zfs`]), degrade, resilver, scrub and destroy
//! it, and the ARC cap and drop between trials.
//!
//! Every command goes through the one [`Runner`], so `iolab lab --dry-run` prints them and the
//! tests check them; every pool is recorded in the state file ([`super::state::Owned::Zpool`])
//! before `zpool create`, so `--cleanup` destroys it. The pool carries the lab id in its name
//! (`iolab-<lab>-<layout index>`); the measured dataset is `<pool>/data`, mounted in the lab's
//! mount directory. What `zpool status` says is parsed in [`status`].

pub mod status;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::LayoutError;
use super::cmd::Runner;

/// A ZFS pool: the RAID layer and the filesystem at once. Its kernel modules are built for the
/// guest's kernel and its tools copied by `vm::zfs`, not listed here: a VM lab without ZFS
/// needs neither.
pub struct Zfs;

/// Why a zfs layout cannot run on a host without the module.
pub const NO_ZFS: &str = "no zfs module; run with --vm";

pub use crate::stack::zfs::{MAX_SLOP, MIN_SLOP, VdevKind, ZfsOptions, slop};
pub use status::{PoolStatus, VdevRole, parse_status};

/// The pool's name: carries the lab id, so `--cleanup` destroys only the lab's own pools.
pub fn pool_name(lab_id: &str, index: usize) -> String {
    format!("iolab-{lab_id}-{index}")
}

/// The measured dataset.
pub fn dataset_name(pool: &str) -> String {
    format!("{pool}/data")
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The devices split by role: data vdevs (one group each), special, log, cache, spares —
/// `devs` in that order.
pub fn split_devices<'a>(
    o: &ZfsOptions,
    devs: &'a [PathBuf],
) -> Vec<(&'static str, &'a [PathBuf])> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut take = |n: usize| {
        let end = (at + n).min(devs.len());
        let part = &devs[at.min(end)..end];
        at = end;
        part
    };
    for _ in 0..o.vdevs {
        out.push(("data", take(o.width)));
    }
    out.push(("special", take(o.special)));
    out.push(("log", take(o.log)));
    out.push(("cache", take(o.cache)));
    out.push(("spare", take(o.spares)));
    out
}

/// `zpool create -f -o ashift=12 -O mountpoint=none -O atime=off POOL raidz2 d1 .. special mirror
/// s1 s2 log l1 cache c1 spare x1`: the pool's root dataset is not mounted; the measured
/// dataset is made by [`dataset_argv`].
pub fn create_argv(pool: &str, o: &ZfsOptions, devs: &[PathBuf]) -> Vec<String> {
    let mut a: Vec<String> = ["zpool", "create", "-f"].map(String::from).to_vec();
    for (k, v) in &o.pool {
        a.extend(["-o".into(), format!("{k}={v}")]);
    }
    a.extend(["-O".into(), "mountpoint=none".into()]);
    a.push(pool.into());
    for (role, part) in split_devices(o, devs) {
        if part.is_empty() {
            continue;
        }
        match role {
            "data" => a.push(o.vdev.zpool_word(o.width)),
            "special" => a.extend(["special".into(), "mirror".into()]),
            "log" if part.len() >= 2 => a.extend(["log".into(), "mirror".into()]),
            r => a.push(r.into()),
        }
        a.extend(part.iter().map(|p| s(p)));
    }
    a
}

/// `zfs create -o mountpoint=MNT -o recordsize=1M ... POOL/data`.
pub fn dataset_argv(pool: &str, o: &ZfsOptions, mnt: &Path) -> Vec<String> {
    let mut a: Vec<String> = vec!["zfs".into(), "create".into()];
    a.extend(["-o".into(), format!("mountpoint={}", mnt.display())]);
    for (k, v) in &o.dataset {
        a.extend(["-o".into(), format!("{k}={v}")]);
    }
    a.push(dataset_name(pool));
    a
}

/// `zfs set KEY=VALUE POOL/data` (a property changed between trials: `primarycache=metadata`).
pub fn set_argv(pool: &str, key: &str, value: &str) -> Vec<String> {
    vec![
        "zfs".into(),
        "set".into(),
        format!("{key}={value}"),
        dataset_name(pool),
    ]
}

/// `zpool offline [-f] POOL DEV` (`-f`: a fault, kept across import, as a pulled disk).
pub fn offline_argv(pool: &str, dev: &Path, fault: bool) -> Vec<String> {
    let mut a: Vec<String> = vec!["zpool".into(), "offline".into()];
    if fault {
        a.push("-f".into());
    }
    a.extend([pool.into(), s(dev)]);
    a
}

/// `zpool replace [-s] POOL OLD NEW`; `-s` (sequential rebuild) is what dRAID uses to rebuild
/// onto a distributed spare (`draid2-0-0`).
pub fn replace_argv(pool: &str, old: &Path, new: &str, sequential: bool) -> Vec<String> {
    let mut a: Vec<String> = vec!["zpool".into(), "replace".into(), "-f".into()];
    if sequential {
        a.push("-s".into());
    }
    a.extend([pool.into(), s(old), new.into()]);
    a
}

/// The name of distributed spare `k` of dRAID vdev `vdev`: `draid2-0-0`.
pub fn draid_spare_name(parity: u8, vdev: usize, k: usize) -> String {
    format!("draid{parity}-{vdev}-{k}")
}

/// `zpool wait -t ACTIVITY POOL` (`resilver`, `scrub`).
pub fn wait_argv(pool: &str, activity: &str) -> Vec<String> {
    vec![
        "zpool".into(),
        "wait".into(),
        "-t".into(),
        activity.into(),
        pool.into(),
    ]
}

/// `zpool scrub -w POOL`: scrub and wait for it.
pub fn scrub_argv(pool: &str) -> Vec<String> {
    vec!["zpool".into(), "scrub".into(), "-w".into(), pool.into()]
}

/// `zpool status -p -P POOL`: exact numbers, full device paths.
pub fn status_argv(pool: &str) -> Vec<String> {
    ["zpool", "status", "-p", "-P", pool]
        .map(String::from)
        .to_vec()
}

/// `zpool destroy -f POOL`.
pub fn destroy_argv(pool: &str) -> Vec<String> {
    vec!["zpool".into(), "destroy".into(), "-f".into(), pool.into()]
}

/// `zpool labelclear -f DEV`: what makes a member reusable after the pool is gone.
pub fn labelclear_argv(dev: &Path) -> Vec<String> {
    vec!["zpool".into(), "labelclear".into(), "-f".into(), s(dev)]
}

/// Where the ARC cap is set at run time.
pub const ARC_MAX: &str = "/sys/module/zfs/parameters/zfs_arc_max";

/// Builds the pool on `devs` (data vdevs, then special, log, cache, spares) and the measured
/// dataset mounted on `mnt`.
pub fn build(
    runner: &Runner,
    pool: &str,
    o: &ZfsOptions,
    devs: &[PathBuf],
    mnt: &Path,
) -> Result<(), LayoutError> {
    let need = o.data_disks() + o.extra_disks();
    if devs.len() < need {
        return Err(LayoutError::Refused(format!(
            "pool {pool} needs {need} devices, {} given",
            devs.len()
        )));
    }
    runner.run(&create_argv(pool, o, devs))?;
    runner.run(&dataset_argv(pool, o, mnt))?;
    Ok(())
}

/// Caps the ARC at `bytes` (a ZFS read figure served from RAM is not a disk figure).
pub fn set_arc_max(runner: &Runner, bytes: u64) -> Result<(), LayoutError> {
    runner.write_file(Path::new(ARC_MAX), &bytes.to_string())
}

/// The ARC cap while a lab measures a ZFS layout: enough for metadata, too small to hold a
/// working set (the measured dataset also caches only metadata unless the spec says otherwise).
pub const LAB_ARC_MAX: u64 = 256 << 20;

/// Caps the ARC at [`LAB_ARC_MAX`] and returns the value it had, for [`set_arc_max_text`] to
/// put back when the layout is torn down (the ARC is shared with the host's other pools).
pub fn cap_arc(runner: &Runner) -> Result<String, LayoutError> {
    let prev = runner.read_file(Path::new(ARC_MAX))?.trim().to_string();
    set_arc_max(runner, LAB_ARC_MAX)?;
    Ok(prev)
}

/// Puts back an ARC cap [`cap_arc`] returned.
pub fn set_arc_max_text(runner: &Runner, value: &str) -> Result<(), LayoutError> {
    runner.write_file(Path::new(ARC_MAX), value)
}

/// `zpool import -f -N -d /dev POOL [AS]`: a pool its machine lost power under, taken back
/// (`-f`: it was never exported) without mounting its datasets — the lab mounts the measured
/// one where this boot wants it ([`mount_at`]) — and renamed `AS` when this boot's lab names
/// its pools otherwise (the rest of the session then finds it by its own name).
pub fn import_argv(pool: &str, rename: &str) -> Vec<String> {
    let mut a: Vec<String> = ["zpool", "import", "-f", "-N", "-d", "/dev", pool]
        .map(String::from)
        .to_vec();
    if rename != pool {
        a.push(rename.into());
    }
    a
}

/// Mounts the measured dataset of a pool imported with `-N` at `mnt`: `zfs set
/// mountpoint=MNT POOL/data` (which mounts it when ZFS decides to), then `zfs mount` when it
/// did not.
pub fn mount_at(runner: &Runner, pool: &str, mnt: &Path) -> Result<(), LayoutError> {
    let ds = dataset_name(pool);
    runner.run(&[
        "zfs".to_string(),
        "set".into(),
        format!("mountpoint={}", mnt.display()),
        ds.clone(),
    ])?;
    let mounted = runner.run(&["zfs", "get", "-H", "-o", "value", "mounted", &ds])?;
    if mounted.stdout.trim() != "yes" {
        runner.run(&["zfs", "mount", &ds])?;
    }
    Ok(())
}

/// Empties the pool's ARC between trials: export and import (`-d DIR` where its devices are).
pub fn drop_arc(runner: &Runner, pool: &str, dev_dir: &Path) -> Result<(), LayoutError> {
    runner.run(&["zpool", "export", pool])?;
    runner.run(&["zpool", "import", "-d", &s(dev_dir), pool])?;
    Ok(())
}

/// Where a running scan (resilver, scrub) is held at run time.
pub const SCAN_SUSPEND: &str = "/sys/module/zfs/parameters/zfs_scan_suspend_progress";

/// Holds (`true`) or releases every running resilver and scrub: how a second fault is
/// injected while a resilver is still running.
pub fn hold_scans(runner: &Runner, hold: bool) -> Result<(), LayoutError> {
    runner.write_file(Path::new(SCAN_SUSPEND), if hold { "1" } else { "0" })
}

/// Takes `dev` offline (faulted when `fault`); the pool stays mounted, degraded.
pub fn degrade(runner: &Runner, pool: &str, dev: &Path, fault: bool) -> Result<(), LayoutError> {
    runner.run(&offline_argv(pool, dev, fault))?;
    Ok(())
}

/// What a resilver did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resilver {
    /// From `zpool replace` to `zpool wait` returning, seconds.
    pub seconds: f64,
    /// Bytes resilvered (`zpool status`'s scan line); 0 when it did not say.
    pub bytes: u64,
    /// Errors the resilver reported.
    pub errors: u64,
}

/// Replaces `old` with `new` (a device path, or a dRAID distributed spare with `sequential`),
/// waits for the resilver and reads what it copied from `zpool status -p`.
pub fn resilver(
    runner: &Runner,
    pool: &str,
    old: &Path,
    new: &str,
    sequential: bool,
) -> Result<Resilver, LayoutError> {
    let t = Instant::now();
    runner.run(&replace_argv(pool, old, new, sequential))?;
    resilver_done(runner, pool, t)
}

/// Waits for the resilver a `zpool replace` started at `t` and reads what it copied.
pub fn resilver_done(runner: &Runner, pool: &str, t: Instant) -> Result<Resilver, LayoutError> {
    runner.run(&wait_argv(pool, "resilver"))?;
    let seconds = t.elapsed().as_secs_f64();
    let st = parse_status(&runner.run(&status_argv(pool))?.stdout);
    let (bytes, errors) = st
        .scan
        .as_ref()
        .filter(|s| s.kind == status::ScanKind::Resilver)
        .map_or((0, 0), |s| (s.bytes, s.errors));
    Ok(Resilver {
        seconds,
        bytes,
        errors,
    })
}

/// What a scrub found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scrub {
    /// Seconds the scrub took.
    pub seconds: f64,
    /// Bytes repaired (the scan line).
    pub repaired: u64,
    /// Errors the scan line counts (unrepaired).
    pub errors: u64,
    /// Checksum errors summed over every device.
    pub cksum: u64,
    /// Read errors summed over every device.
    pub read: u64,
    /// Write errors summed over every device.
    pub write: u64,
    /// `errors:` says permanent errors (files lost).
    pub data_errors: bool,
    /// Files and objects `zpool status -v` lists with permanent errors (or the count it gives
    /// without the list).
    #[serde(default)]
    pub permanent: u64,
}

/// `zpool scrub -w` and the counters of `zpool status -p -P -v` after it.
pub fn scrub(runner: &Runner, pool: &str) -> Result<Scrub, LayoutError> {
    let t = Instant::now();
    runner.run_interruptible(&scrub_argv(pool), Some(&["zpool", "scrub", "-s", pool]))?;
    let seconds = t.elapsed().as_secs_f64();
    let mut argv = status_argv(pool);
    argv.insert(4, "-v".into());
    let st = parse_status(&runner.run(&argv)?.stdout);
    let (cksum, read, write) = st.error_totals();
    let (repaired, errors) = st.scan.as_ref().map_or((0, 0), |s| (s.bytes, s.errors));
    Ok(Scrub {
        seconds,
        repaired,
        errors,
        cksum,
        read,
        write,
        data_errors: st.data_errors,
        permanent: st.permanent_errors(),
    })
}

/// Whether pool `pool` exists (`zpool list -H -o name POOL` succeeds).
pub fn exists(runner: &Runner, pool: &str) -> bool {
    runner.succeeds(&["zpool", "list", "-H", "-o", "name", pool])
}

/// Destroys the pool when it exists and carries `iolab-` in its name, then clears the labels
/// of `members` (not from `--cleanup`: `clear_labels` false, the disks may be reused since).
pub fn destroy(
    runner: &Runner,
    pool: &str,
    members: &[PathBuf],
    clear_labels: bool,
) -> Result<(), LayoutError> {
    if !pool.starts_with("iolab-") {
        return Err(LayoutError::Refused(format!(
            "pool {pool} is not a lab pool; not destroying it"
        )));
    }
    if runner.is_dry_run() || exists(runner, pool) {
        let mut tries = 0;
        while let Err(e) = runner.run(&destroy_argv(pool)) {
            tries += 1;
            if tries >= 5 {
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    if clear_labels {
        for m in members {
            if runner.is_dry_run() || m.exists() {
                let _ = runner.run(&labelclear_argv(m));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
