//! What killed runs leave, found wherever the user is: `iolab run --cleanup` without
//! a target sweeps the targets of the runs the store holds as killed on this host, and commands
//! that open the store say in one line on stderr that a killed run's files are still on disk.

mod common;

use std::path::{Path, PathBuf};

use common::{Iolab, Paused, disk_tmpdir};

/// Starts `iolab run` (a target directory, or none: a temporary one in `cwd`) and SIGKILLs it
/// once its test file is laid out.
fn kill_after_layout(db: &Path, cwd: &Path, target: Option<&Path>, label: &str) {
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(target.map(|t| t.display().to_string()));
    args.extend(
        [
            "--pattern",
            "randwrite",
            "--size",
            "8MiB",
            "--time",
            "200ms",
            "--repeat",
            "1",
            "--label",
            label,
        ]
        .map(String::from),
    );
    let step = "file laid out";
    let mut p = Paused::spawn(Iolab::new().db(db).cwd(cwd).args(&args), step);
    assert!(p.wait_paused(step, 120), "never paused at {step}");
    p.signal("-KILL");
    let (code, err) = p.finish();
    assert_eq!(code, -1, "not killed: {err}");
}

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// A run on `/var/tmp/kt` killed with SIGKILL left its test file, and `iolab run
/// --cleanup` from another directory said `nothing left by killed runs in .`. Now `list` says
/// the file is there and what removes it, and `--cleanup` from anywhere removes it (and the
/// temporary directory of a killed run given no target), touching nothing else.
#[test]
fn killed_runs_leftovers_are_named_and_swept_from_anywhere() {
    let d = disk_tmpdir("iolab-leftovers-");
    let db = d.path().join("s.db");
    let (kt, work, elsewhere) = (
        d.path().join("kt"),
        d.path().join("work"),
        d.path().join("x"),
    );
    for p in [&kt, &work, &elsewhere] {
        std::fs::create_dir(p).unwrap();
    }
    // Not iolab's, and iolab's name with a live pid (this test's): both stay.
    let mine = kt.join("keep.txt");
    let live = kt.join(format!("iolab-{}.dat", std::process::id()));
    std::fs::write(&mine, b"x").unwrap();
    std::fs::write(&live, b"x").unwrap();

    kill_after_layout(&db, &elsewhere, Some(&kt), "kt");
    kill_after_layout(&db, &work, None, "notarget");
    let data: Vec<PathBuf> = entries(&kt)
        .into_iter()
        .filter(|p| p != &mine && p != &live)
        .collect();
    assert_eq!(data.len(), 1, "the killed run's test file: {data:?}");
    let temp = entries(&work);
    assert_eq!(temp.len(), 1, "the run's temporary target: {temp:?}");
    assert_eq!(
        entries(&temp[0]).len(),
        1,
        "its test file: {:?}",
        entries(&temp[0])
    );

    // Any command opening the store says so, in one line.
    let out = Iolab::new().db(&db).cwd(&elsewhere).args(["list"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("incomplete"), "{}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("iolab: note: killed runs left 16MiB on disk (")
            && lines[0].ends_with(&format!(
                " and 2 more); `iolab run --cleanup --db {}` removes them",
                db.display()
            )),
        "{}",
        lines[0]
    );
    let show = Iolab::new().db(&db).args(["show", "kt"]).run();
    assert!(show.stderr.contains("killed runs left"), "{}", show.stderr);

    // --cleanup from a directory the runs never saw.
    let out = Iolab::new()
        .db(&db)
        .cwd(&elsewhere)
        .args(["run", "--cleanup"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    for p in data.iter().chain(&temp) {
        assert!(!p.exists(), "{} left: {}", p.display(), out.stdout);
        assert!(
            out.stdout.contains(&format!("removed {}", p.display())),
            "{}",
            out.stdout
        );
    }
    assert!(mine.exists() && live.exists() && kt.exists() && work.exists());

    let out = Iolab::new().db(&db).cwd(&elsewhere).args(["list"]).run();
    assert_eq!(out.stderr, "", "nothing left to mention");
    let out = Iolab::new()
        .db(&db)
        .cwd(&elsewhere)
        .args(["run", "--cleanup"])
        .run();
    assert_eq!(
        out.stdout.trim(),
        "nothing left by killed runs in . or in the targets of the store's 2 killed runs"
    );
}
