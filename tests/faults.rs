//! Faults at every step: `iolab run` and `iolab lab` are stopped at each named step
//! (`IOLAB_PAUSE_AT`, see src/pause.rs) and SIGKILLed there; then `--cleanup` runs and nothing
//! may be left (loop device, mount, test file, state), the store must open with
//! `PRAGMA integrity_check` ok, and the run must show `incomplete` (or, killed before it was
//! stored, not exist; killed after it was finished, show as it finished). Also disk full during
//! the store's commit and during the lab's verification data set.
//!
//! Figures: docs/reliability.md ("kill points survived n/n", "disk-full cases").

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
mod lab_world;
use common::{Iolab, LoopDev, MemMount, Paused, require_root, require_tool};
use lab_world::World;

/// `PRAGMA integrity_check` on the results database.
fn integrity(db: &Path) -> String {
    let c = rusqlite::Connection::open(db).expect("the store opens");
    c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .expect("integrity_check")
}

/// The status `iolab show LABEL` gives, or `None` when no such run is stored.
fn status(db: &Path, label: &str) -> Option<String> {
    let (code, so, _) = Iolab::new()
        .db(db)
        .args(["show", label, "--json"])
        .run()
        .parts();
    if code != 0 {
        return None;
    }
    common::json(&so)["status"].as_str().map(str::to_string)
}

fn mounts() -> String {
    std::fs::read_to_string("/proc/mounts").unwrap()
}

/// Loop devices whose backing file is under `dir`.
fn loops_on(dir: &str) -> usize {
    let o = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains(dir))
        .count()
}

/// Kills `iolab run` on a directory of a mounted xfs loop device at each step in turn.
#[test]
fn iolab_run_survives_sigkill_at_every_step() {
    require_root!();
    require_tool!("mkfs.xfs", apt = "xfsprogs");
    let mut l = LoopDev::new("kill-run", 512 << 20);
    let mnt = l.mkfs_and_mount("xfs");
    let d = common::disk_tmpdir("iolab-kill");
    let db = d.path().join("kill.db");
    let steps = [
        ("target resolved", None),
        ("run begun", Some("incomplete")),
        ("file laid out", Some("incomplete")),
        ("trial started", Some("incomplete")),
        ("store commit", Some("incomplete")),
        ("run finished", Some("complete")),
    ];
    let (m0, l0) = (
        mounts().matches(mnt.to_str().unwrap()).count(),
        loops_on(mnt.to_str().unwrap()),
    );
    let mut survived = 0;
    for (step, want) in steps {
        let label = format!("kill-{}", step.replace(' ', "-"));
        let mut p = Paused::spawn(
            Iolab::new().db(&db).args([
                "run",
                mnt.to_str().unwrap(),
                "--pattern",
                "randwrite",
                "--size",
                "8MiB",
                "--time",
                "200ms",
                "--repeat",
                "1",
                "--label",
                &label,
            ]),
            step,
        );
        assert!(p.wait_paused(step, 60), "never paused at {step}");
        p.signal("-KILL");
        let (code, err) = p.finish();
        assert_eq!(code, -1, "{step}: not killed: {err}");
        // What the kill left, then the cleanup.
        let out = Iolab::new()
            .db(&db)
            .args(["run", mnt.to_str().unwrap(), "--cleanup"])
            .run();
        assert_eq!(out.code, 0, "{step}: {}", out.stderr);
        let left: Vec<PathBuf> = std::fs::read_dir(&mnt)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{step}: left {left:?}");
        assert_eq!(integrity(&db), "ok", "{step}");
        let got = status(&db, &label);
        assert_eq!(got.as_deref(), want, "{step}: run status");
        // Other tests run beside this one: only what could be this run's counts.
        let m = mnt.to_str().unwrap();
        assert_eq!(
            mounts().matches(m).count(),
            m0,
            "{step}: mounts on the target"
        );
        assert_eq!(loops_on(m), l0, "{step}: loop devices on the target");
        eprintln!("killed at {step}: cleaned, store ok, run {got:?}");
        survived += 1;
    }
    eprintln!("iolab run: kill points survived {survived}/{}", steps.len());
}

fn lab_spec(w: &World, dir: &Path) -> PathBuf {
    let p = dir.join("kill.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"kill\"\n[disks]\nloop = {{ count = 2, size = \"512MiB\", dir = \"{}\" }}\n\
             [[layout]]\nname = \"btrfs-raid1\"\nbtrfs = {{ data = \"raid1\", metadata = \"raid1\", members = 2 }}\nfill = \"8MiB\"\n\
             [[layout]]\nname = \"xfs\"\nfs = \"xfs\"\nfill = \"8MiB\"\n\
             [workloads]\nprofiles = [\"quick\"]\nrepeat = 1\ntime = \"100ms\"\nsize = \"8MiB\"\n",
            w.disk_dir.display()
        ),
    )
    .unwrap();
    p
}

fn lab_id(w: &World) -> Option<String> {
    w.state_files().iter().find_map(|f| {
        let t = std::fs::read_to_string(f).ok()?;
        let v: Value = serde_json::from_str(&t).ok()?;
        v["lab_id"].as_str().map(str::to_string)
    })
}

/// Kills `iolab lab` (loop disks, btrfs raid1 then xfs) at each step of its first layout.
#[test]
fn iolab_lab_survives_sigkill_at_every_step() {
    lab_world::require_lab!("mkfs.xfs" => "xfsprogs", "mkfs.btrfs" => "btrfs-progs");
    let steps = [
        "layout built",
        "verification set written",
        "trial started",
        "store commit",
        "teardown",
    ];
    let mut survived = 0;
    for step in steps {
        let w = World::new("kill");
        let dir = tempfile::tempdir().unwrap();
        let spec = lab_spec(&w, dir.path());
        let mut p = Paused::spawn(w.iolab().args(["lab", spec.to_str().unwrap()]), step);
        assert!(p.wait_paused(step, 120), "never paused at {step}");
        let id = lab_id(&w).expect("a lab state file while paused");
        p.signal("-KILL");
        let (code, err) = p.finish();
        assert_eq!(code, -1, "{step}: not killed: {err}");
        let out = w.lab(&["--cleanup"]);
        assert_eq!(out.code, 0, "{step}: {}{}", out.stdout, out.stderr);
        w.assert_clean(&id);
        let db = w.db.path().join("iolab.db");
        if db.exists() {
            assert_eq!(integrity(&db), "ok", "{step}");
        }
        let got = if db.exists() {
            status(&db, "btrfs-raid1")
        } else {
            None
        };
        match step {
            "trial started" | "store commit" => {
                assert_eq!(got.as_deref(), Some("incomplete"), "{step}");
            }
            "layout built" | "verification set written" => assert_eq!(got, None, "{step}"),
            _ => assert_ne!(got.as_deref(), Some("running"), "{step}"),
        }
        eprintln!("lab killed at {step}: cleaned, store ok, run {got:?}");
        survived += 1;
    }
    eprintln!("iolab lab: kill points survived {survived}/{}", steps.len());
}

/// The store's own filesystem fills during its commit: a clear error, the store still sound,
/// and no run that reads as a finished result.
#[test]
fn disk_full_during_the_store_commit() {
    require_root!();
    let m = MemMount::new("tmpfs", "size=16m");
    let db = m.dir.join("store.db");
    let work = common::disk_tmpdir("iolab-full-store");
    let mut p = Paused::spawn(
        Iolab::new().db(&db).args([
            "run",
            work.path().to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "200ms",
            "--repeat",
            "2",
            "--label",
            "full-store",
        ]),
        "store commit",
    );
    assert!(p.wait_paused("store commit", 60), "never paused");
    let filler = common::fill_fs(&m.dir, 0);
    // Whatever is left, take it too.
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k"])
        .arg(format!("of={}", m.dir.join("filler2.bin").display()))
        .output();
    p.signal("-CONT");
    let (code, err) = p.finish();
    std::fs::remove_file(&filler).unwrap();
    let _ = std::fs::remove_file(m.dir.join("filler2.bin"));
    assert_ne!(
        code, 0,
        "the run claimed success on a full store disk: {err}"
    );
    let lower = err.to_lowercase();
    assert!(
        lower.contains("full") || lower.contains("no space"),
        "no clear disk-full error: {err}"
    );
    assert!(
        !err.contains("panicked"),
        "panicked instead of an error: {err}"
    );
    assert_eq!(integrity(&db), "ok");
    let got = status(&db, "full-store");
    assert_ne!(
        got.as_deref(),
        Some("ok"),
        "a half-stored run reads as a result"
    );
    eprintln!("store full: exit {code}, run {got:?}: {}", err.trim());
    // The test file went too.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

/// The lab's layout fills while its verification data set is written: the layout is marked
/// failed at the data-set step, nothing reads as verified, and everything is torn down.
#[test]
fn disk_full_during_the_lab_verification_set() {
    lab_world::require_lab!("mkfs.xfs" => "xfsprogs", "mkfs.btrfs" => "btrfs-progs");
    let w = World::new("fullset");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("full.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"full\"\n[disks]\nloop = {{ count = 1, size = \"512MiB\", dir = \"{}\" }}\n\
             [[layout]]\nname = \"xfs-full\"\nfs = \"xfs\"\nfill = \"64MiB\"\n\
             [workloads]\nprofiles = [\"quick\"]\nrepeat = 1\ntime = \"100ms\"\nsize = \"8MiB\"\n",
            w.disk_dir.display()
        ),
    )
    .unwrap();
    let mut p = Paused::spawn(
        w.iolab()
            .args(["lab", spec.to_str().unwrap(), "--format", "json"]),
        "layout built",
    );
    assert!(p.wait_paused("layout built", 120), "never paused");
    // The layout's mount: the one mount of this lab.
    let id = lab_id(&w).expect("state");
    let mnt = mounts()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .find(|m| m.contains(&format!("iolab-{id}-")))
        .expect("the layout's mount");
    let filler = common::fill_fs(Path::new(&mnt), 1 << 20);
    p.signal("-CONT");
    let (code, err) = p.finish();
    let _ = std::fs::remove_file(&filler);
    let so = p.stdout();
    assert_ne!(code, 0, "{err}");
    w.assert_clean(&id);
    let v: Value = serde_json::from_str(&so).unwrap_or_else(|e| panic!("{e}: {so} {err}"));
    let l = &v["layouts"][0];
    assert_eq!(l["status"], "failed", "{l:#}");
    let i = &l["integrity"];
    assert!(
        i.to_string().contains("write") && !i.to_string().contains("\"verified\""),
        "{i:#}"
    );
    // The stored record of the lab says the data set failed, never verified.
    let db = w.db.path().join("iolab.db");
    if db.exists() {
        assert_eq!(integrity(&db), "ok");
    }
    eprintln!(
        "verification set on a full layout: exit {code}: {}",
        err.trim()
    );
}
