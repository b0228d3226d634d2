//! ZFS built for real in the VM lab: Debian's kernel loads the zfs module cached by
//! `scripts/zfs-module`, and one boot builds a mirror, a raidz2, a raidz1 with a special vdev
//! and a dRAID, measures each, offlines a member of the mirror, the raidz2 and the dRAID,
//! resilvers (the dRAID onto its distributed spare), scrubs and checks the data set.
//!
//! Needs root, the VM lab's packages (see tests/vm.rs) and the cached module; scripts/test
//! builds the module once per machine (`scripts/zfs-module`), so under CI it is never absent.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::*;

const KERNEL: &str = "6.1.0";

/// The cache directory of a built zfs module for any Debian 6.1 kernel, when there is one.
fn cached_module() -> Option<PathBuf> {
    let root = std::env::var_os("IOLAB_ZFS_CACHE")
        .map_or_else(|| PathBuf::from("/var/cache/iolab/zfs"), PathBuf::from);
    std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(KERNEL))
                && p.join("zfs.ko").is_file()
                && p.join("spl.ko").is_file()
        })
}

fn zfs_vm_or_skip() -> bool {
    if !need_root() {
        return false;
    }
    for (t, apt) in [
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("busybox", "busybox-static"),
        ("mdadm", "mdadm"),
        ("lvm", "lvm2"),
        ("mkfs.xfs", "xfsprogs"),
        ("xz", "xz-utils"),
        ("zpool", "zfsutils-linux"),
    ] {
        if !need_tool(t, apt) {
            return false;
        }
    }
    if cached_module().is_none() {
        skip(
            &kind::tool("zfs-dkms"),
            "no zfs module cached for the VM's kernel (run scripts/zfs-module as root)",
        );
        return false;
    }
    true
}

const SPEC: &str = r#"
[[layout]]
name = "zfs-mirror"
zfs = { vdev = "mirror", width = 2, pool = { ashift = 12 }, dataset = { compression = "off" } }
degrade = true
rebuild = true
fill = "12MiB"

[[layout]]
name = "zfs-raidz2"
zfs = { vdev = "raidz2", width = 4, pool = { ashift = 12 }, dataset = { recordsize = "128k" } }
degrade = true
rebuild = true
fill = "12MiB"

[[layout]]
name = "zfs-raidz1-special"
zfs = { vdev = "raidz1", width = 3, special = 2, dataset = { special_small_blocks = "16k" } }
fill = "8MiB"

[[layout]]
name = "zfs-draid"
zfs = { vdev = "draid1:2d:1s", width = 4 }
degrade = true
rebuild = true
fill = "8MiB"

[workloads]
repeat = 1
[workloads.defaults]
size = "8MiB"
time = "300ms"
[[workloads.workload]]
name = "seq-write-1m"
pattern = "write"
bs = "1M"
[[workloads.workload]]
name = "rand-read-4k"
pattern = "randread"
bs = "4k"
"#;

/// Nothing of the VM lab is left in `disks` (backing files) or the state directory.
fn assert_nothing_left(disks: &Path, state: &Path) {
    let left: Vec<String> = [disks, state]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("manifest-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn zfs_pools_build_resilver_scrub_and_verify_in_the_vm() {
    if !zfs_vm_or_skip() {
        return;
    }
    let dir = disk_tmpdir("iolab-vmzfs");
    let disks = dir.path().join("disks");
    let state = dir.path().join("state");
    let spec = dir.path().join("zfs-lab.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"vm-zfs\"\n[disks]\nloop = {{ count = 5, size = \"256MiB\", dir = \"{}\" }}\n{SPEC}",
            disks.display()
        ),
    )
    .unwrap();
    let t = Instant::now();
    let out = Iolab::new()
        .db(dir.path().join("host.db"))
        .env("IOLAB_STATE_DIR", &state)
        .cwd(dir.path())
        .args([
            "lab",
            &spec.to_string_lossy(),
            "--vm",
            "--format",
            "json",
            "-v",
        ])
        .run();
    let (code, stdout, stderr) = out.parts();
    assert_eq!(code, 0, "stderr: {stderr}\nstdout: {stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    eprintln!(
        "ZFS VM lab: wall {:.0} s, boot {:?}, lab {} s in the guest",
        t.elapsed().as_secs_f64(),
        v["vm"]["boot_seconds"],
        v["vm"]["lab_seconds"]
    );
    let layouts = v["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), 4);
    for l in layouts {
        let name = l["name"].as_str().unwrap();
        assert_eq!(l["status"], "ok", "{l:#}");
        assert_eq!(l["integrity"]["verdict"]["kind"], "verified", "{l:#}");
        // Every pool caches only metadata (reads are disk reads) and the ARC was capped.
        assert!(
            l["stack"]
                .as_str()
                .unwrap()
                .contains("primarycache=metadata"),
            "{l:#}"
        );
        let cmds: Vec<&str> = l["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let has = |s: &str| cmds.iter().any(|c| c.contains(s));
        assert!(has("zpool create -f"), "{name}: {cmds:#?}");
        assert!(has("zfs_arc_max"), "{name}: {cmds:#?}");
        assert!(has("zpool destroy -f"), "{name}: {cmds:#?}");
        // Usable space as ZFS reports it (slop taken out): within the rough expectation.
        let usable = l["usable_bytes"].as_f64().unwrap();
        let expected = l["expected_usable_bytes"].as_f64().unwrap();
        assert!(
            usable > 0.5 * expected && usable < 1.5 * expected,
            "{name}: usable {usable} vs expected {expected}"
        );
        if name == "zfs-raidz1-special" {
            assert!(has(" special mirror /dev/vd"), "{cmds:#?}");
            assert!(l["rebuild"].is_null(), "{l:#}");
            continue;
        }
        // Offlined, resilvered to completion (bytes from `zpool status`), scrubbed clean.
        assert!(has("zpool offline"), "{name}: {cmds:#?}");
        assert!(has("zpool wait -t resilver"), "{name}: {cmds:#?}");
        assert!(has("zpool scrub -w"), "{name}: {cmds:#?}");
        let rb = &l["rebuild"];
        assert!(rb["seconds"].as_f64().unwrap() > 0.0, "{name}: {rb:#}");
        assert!(rb["bytes"].as_u64().unwrap() > 0, "{name}: {rb:#}");
        if name == "zfs-draid" {
            // Rebuilt sequentially onto the distributed spare, not onto a new disk.
            assert!(has("zpool replace -f -s"), "{cmds:#?}");
            assert!(has("draid1-0-0"), "{cmds:#?}");
            // The distributed spare is no device: teardown leaves it alone.
            assert!(!has("wipefs --all --quiet draid"), "{cmds:#?}");
        }
    }
    let runs = v["runs"].as_array().unwrap();
    // Healthy runs of all four, degraded runs of the three that were degraded.
    assert_eq!(runs.len(), 7, "{runs:#?}");
    assert_nothing_left(&disks, &state);
}

#[test]
fn zfs_in_the_vm_without_a_built_module_says_how_to_build_it() {
    if !need_root() || !need_tool("qemu-system-x86_64", "qemu-system-x86") {
        return;
    }
    let dir = disk_tmpdir("iolab-vmzfs-nomod");
    let disks = dir.path().join("disks");
    let spec = dir.path().join("zfs-lab.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"vm-zfs\"\n[disks]\nloop = {{ count = 5, size = \"256MiB\", dir = \"{}\" }}\n{SPEC}",
            disks.display()
        ),
    )
    .unwrap();
    let empty = dir.path().join("no-modules");
    let (code, _, stderr) = Iolab::new()
        .db(dir.path().join("host.db"))
        .env("IOLAB_STATE_DIR", dir.path().join("state"))
        .env("IOLAB_ZFS_CACHE", &empty)
        .args(["lab", &spec.to_string_lossy(), "--vm"])
        .run()
        .parts();
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no zfs module is built for the VM's kernel")
            && stderr.contains("scripts/zfs-module"),
        "{stderr}"
    );
    assert!(!disks.exists(), "disks were made before the check");
}
