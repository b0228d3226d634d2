//! `iolab lab --vm` for real: one boot of the stock Debian kernel under qemu runs a small md
//! lab (RAID5 + bitmap + spare with LVM and xfs through build, workloads, failure, rebuild and
//! verification; RAID10 and RAID1 built and measured), and the runs land in the host store
//! labelled as VM runs. Then a VM lab is killed with SIGKILL and `--cleanup` must leave no
//! qemu, no disk file and no state behind.
//!
//! Needs root, qemu-system-x86, linux-image-amd64, busybox-static, mdadm, lvm2, xfsprogs and
//! xz-utils (scripts/test installs them); skips with the reason otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use common::vm::{
    RAND_READ_4K, SEQ_WRITE_1M, VmLab, layout, qemu_on, run_vm_lab, vm_or_skip, workloads_tail,
};
use common::*;

/// One VM at a time: two emulated guests on two cores would only slow each other down.
static VM: Mutex<()> = Mutex::new(());

/// (exit code, stdout, stderr) of a finished command.
fn parts(o: std::process::Output) -> (i32, String, String) {
    Out::new("iolab".into(), o).parts()
}

/// The tests here were written against this name.
type Lab = VmLab;

static LAYOUTS: LazyLock<String> = LazyLock::new(|| {
    r#"
[[layout]]
name = "md5-lvm-xfs"
mdadm = { level = 5, members = 3, spares = 1, bitmap = "internal", assume_clean = true }
lvm = true
fs = "xfs"
degrade = true
rebuild = true
fill = "24MiB"

[[layout]]
name = "md10-ext4"
mdadm = { level = 10, members = 4, assume_clean = true, sync_speed_min = "20MiB" }
fs = "ext4"
degrade = true
rebuild = true
during_rebuild = true
fill = "16MiB"

[[layout]]
name = "md5-journal-xfs"
mdadm = { level = 5, members = 3, assume_clean = true, consistency_policy = "journal" }
fs = "xfs"
degrade = true
rebuild = true
fill = "8MiB"

[[layout]]
name = "md1-ext4"
mdadm = { level = 1, members = 2, assume_clean = true }
fs = "ext4"
fill = "8MiB"
faults = [{ member = 1, at = "before_degrade", kind = "corrupt", offset = "240MiB", length = "1MiB" }]

"#
    .to_string()
        + &workloads_tail("8MiB", "300ms", &[SEQ_WRITE_1M, RAND_READ_4K])
});

#[test]
#[allow(clippy::too_many_lines)] // one scenario, end to end, reads best as one story
fn md_layouts_build_degrade_rebuild_and_verify_in_one_boot() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = Lab::new("iolab-vmtest");
    let spec = lab.spec(&LAYOUTS);
    let (code, v, stderr) = lab.run(&spec, "VM lab");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let env = v["environment"].as_str().unwrap();
    assert!(env == "vm (tcg)" || env == "vm (kvm)", "{env}");
    let layouts = v["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), 4);
    for l in layouts {
        assert_eq!(l["status"], "ok", "{l:#}");
        assert!(l["build_seconds"].as_f64().unwrap() > 0.0, "{l:#}");
    }
    let r5 = &layouts[0];
    assert_eq!(r5["integrity"]["verdict"]["kind"], "verified", "{r5:#}");
    assert!(r5["rebuild"]["seconds"].as_f64().unwrap() > 0.0, "{r5:#}");
    assert!(r5["stack"].as_str().unwrap().contains("lvm"), "{r5:#}");
    // RAID10 through a failure and a rebuild: its files decide. Mirrors md's check finds
    // different without any fault (md(4): pages rewritten during writeback, in blocks since
    // freed) are a note with the count, not an error.
    let r10 = &layouts[1];
    assert_eq!(r10["integrity"]["verdict"]["kind"], "verified", "{r10:#}");
    let checks = r10["integrity"]["scrubs"].as_array().unwrap();
    assert!(!checks.is_empty(), "{r10:#}");
    for sc in checks {
        assert_eq!(
            (&sc["tool"], &sc["errors"]),
            (&"md check".into(), &0.into()),
            "{sc:#}"
        );
        let n = sc["counters"]["mismatch_cnt"].as_u64().unwrap();
        assert_eq!(sc.get("note").is_some(), n > 0, "{sc:#}");
        eprintln!("md10-ext4 check after {}: mismatch_cnt {n}", sc["after"]);
    }
    // RAID10's workloads ran again during md's recovery, which went on under them
    // at a speed md chose within the limits it states.
    let rl = &r10["rebuild_load"];
    eprintln!("md10-ext4 during the rebuild: {rl:#}");
    assert!(rl["workload_seconds"].as_f64().unwrap() > 0.5, "{rl:#}");
    assert!(rl["rebuild_seconds"].as_f64().unwrap() > 0.0, "{rl:#}");
    assert!(rl["perf_ratio"].as_f64().unwrap() > 0.0, "{rl:#}");
    let limits = rl["md_speed_limits"].as_str().unwrap();
    // The spec's floor, set on the array (20 MiB/s = 20480 KiB/s), the ceiling the system's.
    assert!(
        limits.starts_with("min 20480 (local) KiB/s, max ") && limits.contains("(system)"),
        "{limits}"
    );
    let done = rl["md_progress_at_end"].as_f64().unwrap();
    assert!(done > 0.0 && done <= 1.0, "{rl:#}");
    assert!(rl["md_speed_under_load"].as_f64().unwrap() > 0.0, "{rl:#}");
    // RAID1 with 1 MiB of garbage the lab wrote under one mirror (in blocks no file holds):
    // md's check counts it (64 KiB per differing block: at least 2048 sectors) and here it is
    // an error, the lab's own doing — md cannot tell which copy is right.
    // RAID5 with md's write journal on a disk of its own: built, degraded, rebuilt, every
    // file back (the journal disk is not a spare: the rebuild waits for the new member).
    let rj = &layouts[2];
    assert_eq!(rj["integrity"]["verdict"]["kind"], "verified", "{rj:#}");
    assert!(
        rj["stack"]
            .as_str()
            .unwrap()
            .contains("consistency journal (1 disk)"),
        "{rj:#}"
    );
    assert_eq!(rj["members"].as_array().unwrap().len(), 4, "{rj:#}");
    let r1 = &layouts[3];
    let sc = &r1["integrity"]["scrubs"][0];
    let n = sc["counters"]["mismatch_cnt"].as_u64().unwrap();
    assert!(n >= 2048, "{r1:#}");
    assert_eq!(sc["errors"].as_u64(), Some(n), "{sc:#}");
    assert!(sc.get("note").is_none(), "{sc:#}");
    assert_eq!(r1["integrity"]["verdict"]["kind"], "data_loss", "{r1:#}");
    // The runs are in the host store, with the guest's lab id and labels, labelled as VM runs.
    let lab_id = v["lab_id"].as_str().unwrap();
    let runs = v["runs"].as_array().unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(
        ids.len(),
        8,
        "healthy x4 + degraded x3 + rebuilding x1: {runs:#?}"
    );
    assert_eq!(v["vm"]["runs_copied"].as_array().unwrap().len(), 8);
    let mut labels = Vec::new();
    for id in ids {
        let o = lab.cmd().args(["show", id, "--json"]).output().unwrap();
        let (c, so, se) = parts(o);
        assert_eq!(c, 0, "{se}");
        let r: serde_json::Value = serde_json::from_str(&so).unwrap();
        assert_eq!(r["lab_id"], lab_id);
        assert_eq!(r["layout"]["environment"], env, "{r:#}");
        assert!(
            r["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains("emulated")),
            "{r:#}"
        );
        labels.push(r["label"].as_str().unwrap().to_string());
    }
    labels.sort();
    assert_eq!(
        labels,
        [
            "md1-ext4",
            "md10-ext4",
            "md10-ext4-degraded",
            "md10-ext4-rebuilding",
            "md5-journal-xfs",
            "md5-journal-xfs-degraded",
            "md5-lvm-xfs",
            "md5-lvm-xfs-degraded"
        ]
    );
    lab.assert_nothing_left();
}

/// The `n` layouts of a fault lab, each `ok` with every fault injected and md's view of it
/// recorded; prints what each fault did and each verdict.
fn faults_observed(v: &serde_json::Value, n: usize) -> &Vec<serde_json::Value> {
    let layouts = v["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), n, "{v:#}");
    for l in layouts {
        assert_eq!(l["status"], "ok", "{l:#}");
        for f in l["faults"].as_array().unwrap() {
            eprintln!(
                "{}: {}: struck at {}%, rebuild {}, {} files bad after, md {}",
                l["name"],
                f["description"],
                f["struck_at_pct"],
                f["rebuild"],
                f["files_bad"],
                f["md"]
            );
            assert!(f["error"].is_null(), "{f:#}");
            assert!(f["md"]["array_state"].is_string(), "{f:#}");
        }
        eprintln!(
            "{}: rebuild {} s, integrity {}",
            l["name"], l["rebuild"]["seconds"], l["integrity"]["verdict"]
        );
    }
    layouts
}

/// One boot: an unreadable range on a surviving member during the rebuild of md RAID5 and of
/// md RAID6 (then two more failures on RAID6), silent corruption after RAID6's rebuild, and a
/// RAID5 over five disks of which one is slow (dm-delay inside, qemu throttling outside).
static FAULTS: LazyLock<String> = LazyLock::new(|| {
    r#"
[[layout]]
name = "md5-ure"
mdadm = { level = 5, members = 3, assume_clean = true }
fs = "xfs"
degrade = true
rebuild = true
fill = "24MiB"
faults = [{ member = 0, at = "rebuild", kind = "unreadable", offset = "16MiB", length = "1MiB" }]

[[layout]]
name = "md6-ure"
mdadm = { level = 6, members = 4, assume_clean = true }
fs = "xfs"
degrade = true
rebuild = true
failures = 2
fill = "24MiB"
faults = [{ member = 0, at = "rebuild", kind = "unreadable", offset = "16MiB", length = "1MiB" }]

[[layout]]
name = "md5-slow"
mdadm = { level = 5, members = 5, assume_clean = true }
fs = "xfs"

"#
    .to_string()
        + &workloads_tail("8MiB", "1s", &[&format!("{RAND_READ_4K}qd = 4\n")])
});

#[test]
fn faults_during_rebuilds_and_a_slow_member_are_observed_in_one_boot() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = Lab::new("iolab-vmfault");
    let spec = lab.spec(&FAULTS);
    // The slow disk goes in [disks], after the loop table.
    let text = std::fs::read_to_string(&spec).unwrap().replacen(
        "\n\n",
        "\nslow = [{ disk = 4, iops = 2000, latency = \"25ms\" }]\n\n",
        1,
    );
    std::fs::write(&spec, text).unwrap();
    let (code, v, stderr) = lab.run(&spec, "VM fault lab");
    // Data lost under injected faults is the finding, not a failed lab.
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let layouts = faults_observed(&v, 3);
    // RAID5: the rebuild reads the unreadable range on a surviving member and has no other copy:
    // md records the range in its bad-block log (on that member and on the new one) and
    // completes; the array stays up.
    let r5 = &layouts[0];
    let f5 = &r5["faults"][0];
    assert_eq!(f5["rebuild"], "completed", "{r5:#}");
    let bad5: Vec<&serde_json::Value> = f5["md"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| !m["bad_blocks"].as_array().unwrap().is_empty())
        .collect();
    assert_eq!(
        bad5.len(),
        2,
        "bad blocks on the source and the new member: {f5:#}"
    );
    assert!(f5["files_bad"].is_u64(), "{f5:#}");
    assert!(
        r5["integrity"]["verdict"]["kind"] == "verified"
            || r5["integrity"]["verdict"]["kind"] == "data_loss",
        "{r5:#}"
    );
    // RAID6: parity is left to rebuild from, and md rewrites the unreadable sectors; the dm
    // `error` range fails that write too, so md fails the member (a drive that cannot remap).
    // The rebuild still copies onto the new member; then two members fail and are replaced,
    // and every file comes back.
    let r6 = &layouts[1];
    let f6 = &r6["faults"][0];
    let rb = f6["rebuild"].as_str().unwrap();
    assert!(
        rb == "completed" || rb.starts_with("copied onto the new member"),
        "{f6:#}"
    );
    assert_eq!(f6["files_bad"], 0, "{f6:#}");
    assert!(
        r6["second_failure"]["rebuild_seconds"].as_f64().unwrap() > 0.0,
        "{r6:#}"
    );
    assert_eq!(r6["integrity"]["verdict"]["kind"], "verified", "{r6:#}");
    // The slow member stands out in the per-member figures, and only it.
    let io = layouts[2]["member_io"].as_array().unwrap();
    assert_eq!(io.len(), 5, "{io:#?}");
    let slow: Vec<usize> = (0..5).filter(|&i| io[i]["slow"] == true).collect();
    assert_eq!(slow, [4], "{io:#?}");
    lab.assert_nothing_left();
}

/// One boot: a whole member of md RAID5 and of md RAID6 dies halfway through the rebuild (md's
/// recovery held at 50 % with `sync_max`, the member's dm table swapped for `error`). RAID5 has
/// nothing left to rebuild from; RAID6 has, and then loses two more members and is rebuilt.
static FAIL_MID_REBUILD: LazyLock<String> = LazyLock::new(|| {
    r#"
[[layout]]
name = "md5-fail"
mdadm = { level = 5, members = 3, assume_clean = true }
fs = "xfs"
degrade = true
rebuild = true
fill = "16MiB"
faults = [{ member = 0, at = "rebuild", kind = "fail", progress = 50 }]

[[layout]]
name = "md6-fail"
mdadm = { level = 6, members = 4, assume_clean = true }
fs = "xfs"
degrade = true
rebuild = true
failures = 2
fill = "16MiB"
faults = [{ member = 0, at = "rebuild", kind = "fail", progress = 50 }]

"#
    .to_string()
        + &workloads_tail("8MiB", "300ms", &[RAND_READ_4K])
});

/// The member md lists under dm name `iolab-...-d0` (member 0, which took the fault).
fn dm_member(f: &serde_json::Value) -> &serde_json::Value {
    f["md"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["device"].as_str().unwrap().contains("-d0)"))
        .unwrap_or_else(|| panic!("member 0 not in md's view: {f:#}"))
}

#[test]
fn a_member_failing_halfway_through_the_rebuild_kills_raid5_not_raid6() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = Lab::new("iolab-vmfail");
    let spec = lab.spec(&FAIL_MID_REBUILD);
    let (code, v, stderr) = lab.run(&spec, "VM fail-mid-rebuild lab");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    faults_observed(&v, 2);
    for name in ["md5-fail", "md6-fail"] {
        let f = &layout(&v, name)["faults"][0];
        // Struck where asked: md's recovery stood at half its sectors (whole chunks).
        let pct = f["struck_at_pct"].as_f64().unwrap();
        assert!((45.0..=50.0).contains(&pct), "{name}: {f:#}");
        assert!(f["fault"]["progress"] == 50, "{f:#}");
        // md failed the dead member: its sysfs state says so.
        let m = dm_member(f);
        assert!(
            m["state"].as_str().unwrap().contains("faulty"),
            "{name}: {m:#}"
        );
    }
    // RAID5: the dead member was a source of the rebuild; md is left with one member of three
    // in sync and the files cannot come back.
    let r5 = layout(&v, "md5-fail");
    let f5 = &r5["faults"][0];
    assert!(
        f5["rebuild"]
            .as_str()
            .unwrap()
            .starts_with("aborted: the new member is not in sync"),
        "{f5:#}"
    );
    assert!(f5["md"]["degraded"].as_u64().unwrap() >= 2, "{f5:#}");
    assert!(f5["files_bad"].as_u64().unwrap() > 0, "{f5:#}");
    assert_eq!(r5["integrity"]["verdict"]["kind"], "data_loss", "{r5:#}");
    assert!(
        r5["integrity"]["verdict"]["files"].as_u64().unwrap() > 0,
        "{r5:#}"
    );
    // RAID6: the rebuild goes on from the two members left, onto the new one; every file
    // reads back; then two more members fail and are replaced, and the data is verified.
    let r6 = layout(&v, "md6-fail");
    let f6 = &r6["faults"][0];
    assert!(
        f6["rebuild"]
            .as_str()
            .unwrap()
            .starts_with("copied onto the new member"),
        "{f6:#}"
    );
    assert_eq!(f6["md"]["degraded"], 1, "{f6:#}");
    assert_eq!(f6["files_bad"], 0, "{f6:#}");
    assert!(
        r6["second_failure"]["rebuild_seconds"].as_f64().unwrap() > 0.0,
        "{r6:#}"
    );
    assert_eq!(r6["integrity"]["verdict"]["kind"], "verified", "{r6:#}");
    // The hold is set before the member is added and always put back.
    let cmds = r6["commands"].as_array().unwrap();
    let at = |s: &str| {
        cmds.iter()
            .position(|c| c.as_str().unwrap().contains(s))
            .unwrap_or_else(|| panic!("no '{s}' in {cmds:#?}"))
    };
    assert!(at("/md/sync_max") < at("--add"), "{cmds:#?}");
    assert!(
        cmds.iter()
            .any(|c| c.as_str().unwrap().starts_with("echo max > /sys/block/md")),
        "{cmds:#?}"
    );
    lab.assert_nothing_left();
}

/// Bad input needs no boot: a fault on a member that does not exist, a disk directory too
/// small for the VM's disks, a kernel that does not boot — one line each, nothing left.
#[test]
fn vm_faults_bad_input_and_failed_boots_are_one_line_errors() {
    let lab = Lab::new("iolab-vmfbad");
    let spec = lab.spec(
        "[[layout]]\nname = \"r5\"\nfs = \"xfs\"\nmdadm = { level = 5, members = 3 }\ndegrade = true\nrebuild = true\nfaults = [{ member = 3, at = \"rebuild\", kind = \"unreadable\", offset = \"1MiB\", length = \"4k\" }]\n",
    );
    let (code, _, stderr) = parts(
        lab.cmd()
            .args(["lab", &spec.to_string_lossy(), "--vm"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("layout[r5].faults[1].member: member 3 does not exist"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // Too little space: the disk directory is a 64 MiB tmpfs; 7 disks of 256 MiB do not fit.
    let tiny = lab.dir.path().join("tiny");
    std::fs::create_dir_all(&tiny).unwrap();
    let m = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64m", "iolab-test-tiny"])
        .arg(&tiny)
        .status()
        .unwrap();
    assert!(m.success());
    let spec = lab.spec(&LAYOUTS);
    let (code, _, stderr) = parts(
        lab.cmd()
            .args(["lab", &spec.to_string_lossy(), "--vm", "--disk-dir"])
            .arg(&tiny)
            .output()
            .unwrap(),
    );
    let left: Vec<_> = std::fs::read_dir(&tiny).unwrap().flatten().collect();
    let _ = Command::new("umount").arg(&tiny).status();
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("too little space in"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(left.is_empty(), "left in the disk dir: {left:?}");
    // A VM that does not boot: a bogus kernel in a cache of its own; qemu refuses it or the
    // boot timeout kills it. One line, no qemu, nothing left.
    let cache = lab.dir.path().join("cache");
    let kver = std::fs::read_dir("/boot")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("vmlinuz-")
                .map(str::to_string)
        })
        .max()
        .unwrap();
    std::fs::create_dir_all(cache.join(&kver)).unwrap();
    std::fs::write(cache.join(&kver).join("vmlinux"), b"not a kernel").unwrap();
    std::fs::write(cache.join(&kver).join("kvm-unusable"), b"test").unwrap();
    let (code, _, stderr) = parts(
        lab.cmd()
            .env("IOLAB_VM_CACHE", &cache)
            .args(["lab", &spec.to_string_lossy(), "--vm"])
            .output()
            .unwrap(),
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("VM"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    lab.assert_nothing_left();
}

/// Where `/dev/kvm` opens but the kernel prints nothing under it, the first `--vm`
/// waited 90 s before falling back to TCG. The KVM try is told in seconds (a kernel under KVM
/// reaches `/init` within a second or two): `IOLAB_VM_KVM=frozen` makes it a real qemu whose
/// CPU never starts, silent like that KVM, on any machine. The lab then boots under TCG, the
/// try cost about 5 s, and one note says so (a frozen try leaves no verdict behind).
#[test]
fn a_kvm_try_that_prints_nothing_costs_seconds_and_one_note() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = Lab::new("iolab-vmkvm");
    let spec = lab.spec(
        &("[[layout]]\nname = \"ext4\"\nfs = \"ext4\"\n".to_string()
            + &workloads_tail("8MiB", "200ms", &[RAND_READ_4K])),
    );
    let markers = || -> Vec<PathBuf> {
        std::fs::read_dir("/var/cache/iolab/vm")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("kvm-unusable"))
            .filter(|m| m.exists())
            .collect()
    };
    let before = markers();
    let (code, v, stderr, wall) = run_vm_lab(lab.iolab().env("IOLAB_VM_KVM", "frozen"), &spec, &[]);
    eprintln!(
        "frozen KVM try: exit {code}, wall {wall:.0} s, vm {:#}",
        v["vm"]
    );
    assert_eq!(code, 0, "{stderr}\n{v:#}");
    assert_eq!(v["environment"], "vm (tcg)", "{v:#}");
    assert_eq!(v["layouts"][0]["status"], "ok", "{v:#}");
    let tried = v["vm"]["kvm_try_seconds"].as_f64().unwrap_or(-1.0);
    assert!((4.5..9.0).contains(&tried), "the try took {tried} s: {v:#}");
    let kvm: Vec<&str> = stderr.lines().filter(|l| l.contains("KVM")).collect();
    assert_eq!(kvm.len(), 1, "{stderr}");
    let want =
        "note: KVM cannot run this kernel here (nothing on the console within 5 s; the try took ";
    assert!(kvm[0].starts_with(want), "{}", kvm[0]);
    assert!(
        kvm[0].ends_with(" s): using software emulation (TCG)"),
        "a frozen try leaves no verdict to mention: {}",
        kvm[0]
    );
    assert_eq!(
        markers(),
        before,
        "a frozen try must not decide for the machine"
    );
    // The TCG boot came after, with its own time; the try's seconds are not in it.
    let boots = v["vm"]["boot_seconds"].as_array().unwrap();
    assert_eq!(boots.len(), 1, "{v:#}");
    lab.assert_nothing_left();
    let (code, _, stderr) = parts(
        lab.cmd()
            .env("IOLAB_VM_KVM", "sometimes")
            .args(["lab", &spec.to_string_lossy(), "--vm"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("IOLAB_VM_KVM=sometimes: give auto, off or frozen"),
        "{stderr}"
    );
}

#[test]
fn specs_a_vm_cannot_run_are_refused_in_one_line() {
    let dir = disk_tmpdir("iolab-vmbad");
    let cases = [
        (
            "[disks]\ndevices = [\"/dev/null\"]\n[[layout]]\nname = \"x\"\nfs = \"xfs\"\n",
            "disks.devices: --vm builds on emulated disks",
        ),
        (
            "[disks]\nloop = { count = 2, size = \"256MiB\" }\n[[layout]]\nname = \"old\"\ndir = \"/tmp\"\n",
            "layout[old].dir: an existing directory cannot be measured inside the VM",
        ),
    ];
    for (body, want) in cases {
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, body).unwrap();
        let (code, _, stderr) = Iolab::new()
            .args(["lab", &p.to_string_lossy(), "--vm"])
            .run()
            .parts();
        // A spec naming /dev/null as a disk may already be refused by the spec check.
        if body.contains("/dev/null") && !stderr.contains("--vm") {
            assert_eq!(code, 2, "{stderr}");
            continue;
        }
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    let (code, _, stderr) = Iolab::new()
        .args(["lab", "x.toml", "--vm", "--dry-run"])
        .run()
        .parts();
    assert_eq!(code, 2, "{stderr}");
}

/// Lines of `text` that mention `dir` (loop devices from `losetup -a`, `/proc/mounts`).
fn lines_naming(text: &str, dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy();
    text.lines()
        .filter(|l| l.contains(d.as_ref()))
        .map(str::to_string)
        .collect()
}

/// A VM lab (one 2-disk md RAID1 with ext4, `--quick`) killed with SIGKILL at each of the host
/// side's steps (`IOLAB_PAUSE_AT`, src/pause.rs): qemu dies with iolab (its death signal),
/// `lab --cleanup` leaves no disk file, temporary or share directory, state file, loop device
/// or mount, the host store is sound, and it holds the lab's runs only once they were copied.
#[test]
fn a_vm_lab_killed_at_every_step_is_cleaned_up() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let body = r#"
[[layout]]
name = "md1-ext4"
mdadm = { level = 1, members = 2, assume_clean = true }
fs = "ext4"
"#
    .to_string()
        + &workloads_tail("4MiB", "200ms", &[RAND_READ_4K]);
    // (step, qemu running while paused, runs in the host store after the kill)
    let steps = [
        ("vm disks created", false, false),
        ("vm booted", true, false),
        ("vm guest finished", false, false),
        ("vm results copied", false, true),
    ];
    let mut survived = 0;
    for (step, qemu_up, stored) in steps {
        let t0 = Instant::now();
        let lab = Lab::new("iolab-vmstep");
        let spec_path = lab.dir.path().join("vm-kill.toml");
        let text = format!(
            "name = \"vm-kill\"\n[disks]\nloop = {{ count = 2, size = \"128MiB\", dir = \"{}\" }}\n{body}",
            lab.disks.display()
        );
        std::fs::write(&spec_path, text).unwrap();
        let cmd = Iolab::new()
            .db(&lab.db)
            .env("IOLAB_STATE_DIR", &lab.state)
            .cwd(lab.dir.path())
            .args(["lab", &spec_path.to_string_lossy(), "--vm", "--quick"]);
        let mut p = Paused::spawn(cmd, step);
        if !p.wait_paused(step, 400) {
            p.signal("-KILL");
            panic!("never paused at {step}: {}", p.finish().1);
        }
        let work: Vec<PathBuf> = std::fs::read_dir(&lab.disks)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("iolab-vm-"))
            .collect();
        assert_eq!(
            work.len(),
            1,
            "{step}: the VM's directory while paused: {work:?}"
        );
        assert!(work[0].join("d0.img").exists() && work[0].join("share").is_dir());
        let qemu = qemu_on(&lab.disks);
        assert_eq!(!qemu.is_empty(), qemu_up, "{step}: qemu {qemu:?}");
        p.signal("-KILL");
        let (code, err) = p.finish();
        assert_eq!(code, -1, "{step}: not killed: {err}");
        // qemu dies with iolab, before any cleanup (its parent-death signal).
        let t = Instant::now();
        while !qemu_on(&lab.disks).is_empty() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            qemu_on(&lab.disks).is_empty(),
            "{step}: qemu outlived the iolab that started it"
        );
        // The state file names what is left; --cleanup removes it.
        let o = lab.cmd().args(["lab", "--cleanup"]).output().unwrap();
        let (c, so, se) = parts(o);
        assert_eq!(c, 0, "{step}: {so}{se}");
        assert!(so.contains("temporary directory"), "{step}: {so}");
        lab.assert_nothing_left();
        assert!(!work[0].exists(), "{step}: {} left", work[0].display());
        let losetup = Command::new("losetup").arg("-a").output().unwrap();
        let loops = lines_naming(&String::from_utf8_lossy(&losetup.stdout), lab.dir.path());
        assert!(loops.is_empty(), "{step}: loop devices {loops:?}");
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let m = lines_naming(&mounts, lab.dir.path());
        assert!(m.is_empty(), "{step}: mounts {m:?}");
        let runs = stored_statuses(&lab.db);
        if stored {
            assert!(!runs.is_empty(), "{step}: the copied runs are gone");
            assert!(runs.iter().all(|s| s == "complete"), "{step}: {runs:?}");
        } else {
            assert!(
                runs.is_empty(),
                "{step}: runs stored before the copy: {runs:?}"
            );
        }
        eprintln!(
            "vm lab killed at {step}: qemu gone, cleaned, store ok, runs {runs:?} ({:.0} s)",
            t0.elapsed().as_secs_f64()
        );
        survived += 1;
    }
    eprintln!(
        "iolab lab --vm: kill points survived {survived}/{}",
        steps.len()
    );
}
