//! ZFS layouts on any machine: the exact zpool/zfs command lines of `examples/lab-zfs.toml`
//! (dry run), and a zfs layout on a host without the zfs module reported as
//! `unavailable here: no zfs module; run with --vm` without touching anything. Building pools
//! for real happens in the VM lab (`--vm`), where Debian's kernel loads the cached module.

use std::path::{Path, PathBuf};

mod common;
mod lab_world;
use common::{kind, skip};
use lab_world::World;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lab-zfs.toml")
}

#[test]
fn dry_run_prints_the_zpool_lifecycle() {
    let w = World::new("zfstest");
    let d = w.disk_dir.to_string_lossy().to_string();
    let ex = example();
    // `-v`: the table's STACK column spells out every vdev and property.
    let out = w.lab(&[ex.to_str().unwrap(), "--dry-run", "-v", "--disk-dir", &d]);
    let stdout = out.stdout.as_str();
    assert_eq!(out.code, 0, "{stdout}{}", out.stderr.as_str());
    for want in [
        "zfs raidz2 x6 [",
        "zfs 3 x mirror x2 [",
        "zfs raidz2 x6, special mirror x2 [",
        "zpool create -f -o ashift=12 -O mountpoint=none iolab-",
        " raidz2 /dev/loop",
        " mirror /dev/loop",
        " special mirror /dev/loop",
        "-o recordsize=128k",
        "zpool offline iolab-",
        "zpool replace -f iolab-",
        "zpool wait -t resilver iolab-",
        "zpool status -p -P iolab-",
        "zpool scrub -w iolab-",
        "zpool destroy -f iolab-",
        "zpool labelclear -f /dev/loop",
    ] {
        assert!(stdout.contains(want), "missing '{want}' in:\n{stdout}");
    }
    // Every pool is built, offlined, replaced, scrubbed and destroyed once.
    assert_eq!(stdout.matches("zpool create ").count(), 3, "{stdout}");
    assert_eq!(stdout.matches("zpool destroy ").count(), 3, "{stdout}");
    assert!(!w.disk_dir.exists(), "a dry run made the disk dir");
    assert!(w.state_files().is_empty());
}

#[test]
fn a_zfs_layout_without_the_module_is_unavailable_and_touches_nothing() {
    lab_world::require_lab!("losetup" => "mount");
    if Path::new("/sys/module/zfs").exists() {
        skip(
            &kind::kernel("zfs"),
            "this kernel has zfs loaded; the message is for hosts without it",
        );
        return;
    }
    let w = World::new("zfstest");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("z.toml");
    std::fs::write(
        &spec,
        format!(
            "[disks]\nloop = {{ count = 3, size = \"256MiB\", dir = \"{}\" }}\n\
             [[layout]]\nname = \"zfs-raidz1\"\nzfs = {{ vdev = \"raidz1\" }}\n",
            w.disk_dir.display()
        ),
    )
    .unwrap();
    let out = w.lab(&[spec.to_str().unwrap(), "--quick"]);
    let stdout = out.stdout.as_str();
    assert_eq!(out.code, 0, "{stdout}{}", out.stderr.as_str());
    assert!(
        stdout.contains("unavailable here: no zfs module; run with --vm"),
        "{stdout}"
    );
    assert!(!w.disk_dir.exists(), "a disk dir was made for nothing");
    assert!(w.state_files().is_empty());
}
