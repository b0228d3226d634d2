//! A working set larger than the free space is refused before a byte is written, naming both
//! figures: `--size 1EiB`, small-file sets, `--io-size`, a sparse file target, a lab's loop
//! disks. The reserve is the larger of 1GiB and 5% of the filesystem (at most half of it).

use std::path::Path;
use std::process::Command;

mod common;
mod lab_world;
use common::{Iolab, MemMount, require_root};

fn used(dir: &Path) -> u64 {
    let o = Command::new("df")
        .args(["-B1", "--output=used"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}

/// `iolab run DIR ARGS` is refused with exit 2 naming `need` and the free space, and nothing
/// was written.
fn refused(dir: &Path, args: &[&str], need: &str) {
    let before = used(dir);
    let mut a = vec!["run", dir.to_str().unwrap()];
    a.extend_from_slice(args);
    a.push("--no-save");
    let out = Iolab::new().args(&a).run();
    let err = out.stderr.as_str();
    assert_eq!(out.code, 2, "{args:?}: {err}");
    assert!(
        err.contains(&format!("needs {need}"))
            && err.contains("free")
            && err.contains(dir.to_str().unwrap()),
        "{args:?}: {err}"
    );
    assert_eq!(used(dir), before, "{args:?}: something was written");
    eprintln!("{}", err.trim());
}

#[test]
fn an_exbibyte_working_set_is_refused_before_writing() {
    require_root!();
    let m = MemMount::new("tmpfs", "size=256m");
    refused(&m.dir, &["--pattern", "randread", "--size", "1EiB"], "1EiB");
    // The same on a real filesystem of the user's kind (xfs on a loop device).
    let mut l = common::LoopDev::new("space-xfs", 512 << 20);
    let mnt = l.mkfs_and_mount("xfs");
    refused(&mnt, &["--pattern", "randread", "--size", "1EiB"], "1EiB");
    // Just above what fits with the reserve (half of 512MiB here) is refused too.
    refused(&mnt, &["--pattern", "write", "--size", "300MiB"], "300MiB");
    assert_eq!(std::fs::read_dir(&m.dir).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&mnt).unwrap().count(), 0);
}

#[test]
fn io_size_small_files_and_sparse_files_are_checked_too() {
    require_root!();
    let m = MemMount::new("tmpfs", "size=256m");
    // --io-size with the default working set (1GiB) and with an explicit one.
    refused(&m.dir, &["--pattern", "write", "--io-size", "1EiB"], "1GiB");
    refused(
        &m.dir,
        &["--pattern", "write", "--size", "1EiB", "--io-size", "1EiB"],
        "1EiB",
    );
    refused(
        &m.dir,
        &[
            "--pattern",
            "smallfile",
            "--files",
            "1000000",
            "--min-file-size",
            "4k",
            "--max-file-size",
            "1M",
        ],
        "",
    );
    // A sparse file target: its length is there, its blocks are not.
    let f = m.dir.join("sparse.img");
    std::fs::File::create(&f).unwrap().set_len(1 << 40).unwrap();
    refused(&f, &["--pattern", "randwrite"], "1TiB");
    std::fs::remove_file(&f).unwrap();
    // What fits still runs.
    Iolab::new()
        .args([
            "run",
            m.dir.to_str().unwrap(),
            "--pattern",
            "write",
            "--size",
            "16MiB",
            "--time",
            "100ms",
            "--repeat",
            "1",
            "--no-save",
        ])
        .run()
        .success();
}

#[test]
fn lab_loop_disks_larger_than_their_directory_are_refused() {
    lab_world::require_lab!("mkfs.btrfs" => "btrfs-progs");
    let m = MemMount::new("tmpfs", "size=256m");
    let w = lab_world::World::new("space");
    let disk_dir = m.dir.join("disks");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("big.toml");
    std::fs::write(
        &spec,
        format!(
            "[disks]\nloop = {{ count = 4, size = \"1TiB\", dir = \"{}\" }}\n\
             [[layout]]\nname = \"b\"\nbtrfs = {{ data = \"raid1\", members = 2 }}\nfill = \"64MiB\"\n",
            disk_dir.display()
        ),
    )
    .unwrap();
    let before = used(&m.dir);
    let out = w.lab(&[spec.to_str().unwrap()]);
    let err = out.stderr.as_str();
    assert_eq!(out.code, 2, "{err}{}", out.stdout);
    assert!(
        err.contains("4 loop disks of 1TiB") && err.contains("needs 4TiB") && err.contains("free"),
        "{err}"
    );
    assert_eq!(used(&m.dir), before);
    assert!(!disk_dir.exists(), "the disk dir was made");
    assert!(w.state_files().is_empty());
}
