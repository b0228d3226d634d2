//! ZFS built for real in the VM lab: Debian's kernel loads the zfs module cached by
//! `scripts/zfs-module`, and one boot builds a mirror, a raidz2, a raidz1 with a special vdev
//! and a dRAID, measures each, offlines a member of the mirror, the raidz2 and the dRAID,
//! resilvers (the dRAID onto its distributed spare), scrubs and checks the data set.
//!
//! Needs root, the VM lab's packages (see tests/vm.rs) and the cached module; scripts/test
//! builds the module once per machine (`scripts/zfs-module`), so under CI it is never absent.

mod common;

use std::path::Path;
use std::sync::LazyLock;

use common::vm::{
    RAND_READ_4K, SEQ_WRITE_1M, assert_cut_lost_nothing, layout, run_vm_lab, workloads_tail,
    write_lab_spec, zfs_vm_or_skip,
};
use common::*;

/// One boot at a time (as in tests/vm.rs: two emulated guests on two cores slow each other).
static VM: std::sync::Mutex<()> = std::sync::Mutex::new(());

static SPEC: LazyLock<String> = LazyLock::new(|| {
    r#"
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
during_rebuild = true
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

"#
    .to_string()
        + &workloads_tail("8MiB", "300ms", &[SEQ_WRITE_1M, RAND_READ_4K])
});

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

/// The command for a VM lab with its store and state in `dir`.
fn vm_iolab(dir: &Path, state: &Path) -> Iolab {
    Iolab::new()
        .db(dir.join("host.db"))
        .env("IOLAB_STATE_DIR", state)
        .cwd(dir)
}

#[test]
fn zfs_pools_build_resilver_scrub_and_verify_in_the_vm() {
    if !zfs_vm_or_skip(&[("zpool", "zfsutils-linux")]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = disk_tmpdir("iolab-vmzfs");
    let disks = dir.path().join("disks");
    let state = dir.path().join("state");
    let spec = write_lab_spec(dir.path(), "zfs-lab.toml", "vm-zfs", &disks, &SPEC);
    let (code, v, stderr, wall) = run_vm_lab(vm_iolab(dir.path(), &state), &spec, &["-v"]);
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    eprintln!(
        "ZFS VM lab: wall {wall:.0} s, boot {:?}, lab {} s in the guest",
        v["vm"]["boot_seconds"], v["vm"]["lab_seconds"]
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
        if name == "zfs-raidz2" {
            // The workloads ran again while the pool resilvered.
            let rl = &l["rebuild_load"];
            eprintln!("zfs-raidz2 during the resilver: {rl:#}");
            assert!(rl["workload_error"].is_null(), "{rl:#}");
            assert!(rl["perf_ratio"].as_f64().unwrap() > 0.0, "{rl:#}");
            assert!(rl["rebuild_share"].as_f64().unwrap() > 0.0, "{rl:#}");
            assert_eq!(
                rl["rebuild_seconds"].as_f64(),
                rb["seconds"].as_f64(),
                "{rl:#}"
            );
        }
        if name == "zfs-draid" {
            // Rebuilt sequentially onto the distributed spare, not onto a new disk.
            assert!(has("zpool replace -f -s"), "{cmds:#?}");
            assert!(has("draid1-0-0"), "{cmds:#?}");
            // The distributed spare is no device: teardown leaves it alone.
            assert!(!has("wipefs --all --quiet draid"), "{cmds:#?}");
        }
    }
    let runs = v["runs"].as_array().unwrap();
    // Healthy runs of all four, degraded runs of the three that were degraded, and raidz2's
    // run during its resilver.
    assert_eq!(runs.len(), 8, "{runs:#?}");
    assert_nothing_left(&disks, &state);
}

/// Three dRAID shapes built for real on 256 MiB disks (ashift 12): a user's lab found the
/// planner 28% high on the first (it missed the 32 MiB each child keeps for dRAID expansion
/// and the rounding to whole groups). What the pool offers (statvfs of its dataset: used +
/// available) must be within 5% of the planner's `zfs list` figure.
const DRAID_SHAPES: [(&str, u32); 3] = [
    ("draid2:3d:1s", 7),
    ("draid1:2d:1s", 4),
    ("draid1:4d:2s", 8),
];

#[test]
fn draid_pools_hold_what_the_planner_says() {
    if !zfs_vm_or_skip(&[("zpool", "zfsutils-linux")]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = disk_tmpdir("iolab-vmdraid");
    let disks = dir.path().join("disks");
    let state = dir.path().join("state");
    let mut body = String::new();
    for (shape, width) in DRAID_SHAPES {
        body.push_str(&format!(
            "[[layout]]\nname = \"{}\"\nzfs = {{ vdev = \"{shape}\", width = {width}, pool = {{ ashift = 12 }} }}\n\n",
            shape.replace(':', "-")
        ));
    }
    body.push_str(&workloads_tail("4MiB", "200ms", &[RAND_READ_4K]));
    let spec = dir.path().join("draid.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"vm-draid\"\n[disks]\nloop = {{ count = 8, size = \"256MiB\", dir = \"{}\" }}\n{body}",
            disks.display()
        ),
    )
    .unwrap();
    let (code, v, stderr, wall) = run_vm_lab(vm_iolab(dir.path(), &state), &spec, &[]);
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    eprintln!("dRAID VM lab: wall {wall:.0} s");
    for (shape, width) in DRAID_SHAPES {
        let l = layout(&v, &shape.replace(':', "-"));
        assert_eq!(l["status"], "ok", "{l:#}");
        let real = l["usable_bytes"].as_u64().unwrap();
        let placed = iolab::plan::layout::LayoutSpec::parse(shape)
            .unwrap()
            .on_disks(width)
            .unwrap();
        let planned =
            iolab::plan::zfs::capacity(&placed, 256 << 20, &iolab::plan::zfs::ZfsParams::default())
                .unwrap()
                .zfs_list;
        let off = planned as f64 / real as f64 - 1.0;
        eprintln!(
            "{shape} x{width} of 256MiB: pool {real} bytes, planner {planned} ({:+.2}%)",
            off * 100.0
        );
        assert!(off.abs() < 0.05, "{shape}: pool {real}, planner {planned}");
    }
    assert_nothing_left(&disks, &state);
}

#[test]
fn zfs_in_the_vm_without_a_built_module_says_how_to_build_it() {
    if !need_root() || !need_tool("qemu-system-x86_64", "qemu-system-x86") {
        return;
    }
    let dir = disk_tmpdir("iolab-vmzfs-nomod");
    let disks = dir.path().join("disks");
    let spec = write_lab_spec(dir.path(), "zfs-lab.toml", "vm-zfs", &disks, &SPEC);
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

/// One boot: a second failure during the resilver. A member of raidz1 x3 and of
/// raidz2 x4 is offlined and replaced; with the resilver held at its start
/// (`zfs_scan_suspend_progress`), 12 MiB of a surviving member are overwritten with garbage
/// where the data set lies; then the resilver runs, the data is read back and the pool
/// scrubbed.
static SECOND_FAULT: LazyLock<String> = LazyLock::new(|| {
    r#"
[[layout]]
name = "raidz1-corrupt"
zfs = { vdev = "raidz1", width = 3, pool = { ashift = 12 } }
degrade = true
rebuild = true
fill = "12MiB"
faults = [{ member = 0, at = "rebuild", kind = "corrupt", offset = "5MiB", length = "12MiB" }]

[[layout]]
name = "raidz2-corrupt"
zfs = { vdev = "raidz2", width = 4, pool = { ashift = 12 } }
degrade = true
rebuild = true
fill = "12MiB"
faults = [{ member = 0, at = "rebuild", kind = "corrupt", offset = "5MiB", length = "12MiB" }]

"#
    .to_string()
        + &workloads_tail("8MiB", "300ms", &[RAND_READ_4K])
});

#[test]
fn a_second_fault_during_the_resilver_loses_raidz1_data_not_raidz2() {
    if !zfs_vm_or_skip(&[("zpool", "zfsutils-linux")]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = disk_tmpdir("iolab-vmzfs2");
    let disks = dir.path().join("disks");
    let state = dir.path().join("state");
    let spec = write_lab_spec(
        dir.path(),
        "zfs-fault.toml",
        "vm-zfs2",
        &disks,
        &SECOND_FAULT,
    );
    let (code, v, stderr, wall) = run_vm_lab(vm_iolab(dir.path(), &state), &spec, &[]);
    eprintln!(
        "ZFS second-fault VM lab: exit {code}, wall {wall:.0} s, boot {:?}, lab {} s in the guest",
        v["vm"]["boot_seconds"], v["vm"]["lab_seconds"]
    );
    // Data lost under an injected fault is the finding, not a failed lab.
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    for name in ["raidz1-corrupt", "raidz2-corrupt"] {
        let l = layout(&v, name);
        assert_eq!(l["status"], "ok", "{l:#}");
        let f = &l["faults"][0];
        eprintln!(
            "{name}: {}: struck at {}%, resilver {} s ({} bytes): {}; integrity {}; scrub {}",
            f["description"],
            f["struck_at_pct"],
            l["rebuild"]["seconds"],
            l["rebuild"]["bytes"],
            f["rebuild"],
            l["integrity"]["verdict"],
            l["integrity"]["scrubs"]
        );
        assert!(f["error"].is_null(), "{f:#}");
        // Struck while the resilver was held at its start.
        assert!(f["struck_at_pct"].as_f64().unwrap() < 5.0, "{f:#}");
        assert!(f["zpool"]["state"].is_string(), "{f:#}");
        let cmds: Vec<&str> = l["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let at = |s: &str| {
            cmds.iter()
                .position(|c| c.contains(s))
                .unwrap_or_else(|| panic!("no '{s}' in {cmds:#?}"))
        };
        // Held before the replace, released after the corruption, before the wait.
        assert!(at("echo 1 > /sys/module/zfs/parameters/zfs_scan_suspend") < at("zpool replace"));
        assert!(at("zpool replace") < at("iolab-corrupt"), "{cmds:#?}");
        assert!(at("iolab-corrupt") < at("echo 0 > /sys/module/zfs/parameters/zfs_scan_suspend"));
        assert!(
            at("echo 0 > /sys/module/zfs/parameters/zfs_scan_suspend")
                < at("zpool wait -t resilver")
        );
    }
    // raidz1: with one member being resilvered, a corrupt block on another has no third copy;
    // files are lost and ZFS lists them as permanent errors.
    let z1 = layout(&v, "raidz1-corrupt");
    let verdict = &z1["integrity"]["verdict"];
    assert_eq!(verdict["kind"], "data_loss", "{z1:#}");
    assert!(verdict["files"].as_u64().unwrap() > 0, "{z1:#}");
    assert!(verdict["scrub_errors"].as_u64().unwrap() > 0, "{z1:#}");
    let f1 = &z1["faults"][0];
    assert!(f1["files_bad"].as_u64().unwrap() > 0, "{f1:#}");
    assert!(
        !f1["zpool"]["permanent"].as_array().unwrap().is_empty(),
        "{f1:#}"
    );
    assert_ne!(f1["rebuild"], "completed", "{f1:#}");
    // raidz2: a second parity rebuilds both the missing member and the corrupt blocks.
    let z2 = layout(&v, "raidz2-corrupt");
    assert_eq!(z2["integrity"]["verdict"]["kind"], "verified", "{z2:#}");
    let f2 = &z2["faults"][0];
    assert_eq!(f2["files_bad"], 0, "{f2:#}");
    assert!(
        f2["zpool"]["permanent"].as_array().unwrap().is_empty(),
        "{f2:#}"
    );
    assert!(z2["rebuild"]["bytes"].as_u64().unwrap() > 0, "{z2:#}");
    assert_nothing_left(&disks, &state);
}

/// A raidz1 pool and, for the record, md RAID5 under the same slow disk and seeded moments.
static POWER: LazyLock<String> = LazyLock::new(|| {
    r#"slow = [{ disk = 0, iops = 50 }]

[[layout]]
name = "raidz1-cut"
zfs = { vdev = "raidz1", width = 4, pool = { ashift = 12 } }
fill = "4MiB"
powercut = { cuts = 2, then = "fail-member", window = "2s", seed = 1 }
"#
    .to_string()
        + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])
});

/// A raidz1 pool whose power is cut while the writer runs is imported again
/// (`zpool import -f`), a member fails right after, and everything reads back: copy-on-write
/// leaves no stale parity for the failed member to be rebuilt from (md RAID5 under the same
/// cuts shows the write hole: tests/vm_powercut.rs).
#[test]
fn a_raidz1_pool_comes_back_from_power_cuts_without_a_write_hole() {
    if !zfs_vm_or_skip(&[("zpool", "zfsutils-linux")]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = disk_tmpdir("iolab-vmzfs3");
    let disks = dir.path().join("disks");
    let state = dir.path().join("state");
    let spec = write_lab_spec(dir.path(), "zfs-power.toml", "vm-zfs3", &disks, &POWER);
    let (code, v, stderr, wall) = run_vm_lab(vm_iolab(dir.path(), &state), &spec, &[]);
    eprintln!(
        "ZFS power-cut VM lab: exit {code}, wall {wall:.0} s, boots {:?}",
        v["vm"]["boot_seconds"]
    );
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let p = &layout(&v, "raidz1-cut")["power"];
    eprintln!("raidz1 power: {p:#}");
    let cuts = p["cuts"].as_array().unwrap();
    assert_eq!(cuts.len(), 2, "{p:#}");
    for c in cuts {
        assert!(c.get("error").is_none(), "{c:#}");
        assert!(c["durable_writes"].as_u64().unwrap() > 0, "{c:#}");
        assert!(
            c["recovery"]["assemble_seconds"].as_f64().is_some(),
            "{c:#}"
        );
        assert!(c["failed_member"].is_string(), "{c:#}");
        assert_cut_lost_nothing(c, "");
        assert_eq!(c["judgement"]["read_errors"], 0, "{c:#}");
    }
    assert_nothing_left(&disks, &state);
}
