//! `iolab lab --vm` at our users' scale and with faults under their data:
//!
//! - the 45-spindle post's array — md RAID6 over 45 members with 2 hot spares — built in a VM
//!   of 64 lab disks (66 with the replacements: one virtio disk per PCI function, eight to a
//!   slot), one member failed and rebuilt onto a spare, every file read back; a slow disk and a
//!   fault under file data on disks past the old 29-slot limit;
//! - a URE under file data on a surviving member during the rebuild: RAID5 loses exactly the
//!   files the range held (md's bad-block log on the survivor and the new member), RAID6 keeps
//!   them; silent corruption placed under a file through LVM loses that file; a URE where no
//!   file is says so ("held no file of the data set: ... unreadable, bad blocks on 2
//!   members").
//!
//! Needs root, qemu-system-x86, linux-image-amd64, busybox-static, mdadm, lvm2, xfsprogs and
//! xz-utils (scripts/test installs them); skips with the reason otherwise.

mod common;

use std::sync::Mutex;

use common::vm::{RAND_READ_4K, VmLab, layout, vm_or_skip, workloads_tail};

/// One VM at a time: two emulated guests on two cores would only slow each other down.
static VM: Mutex<()> = Mutex::new(());

/// The `n`-th fault of layout `l`, struck without error, with what its range held.
fn fault(l: &serde_json::Value, n: usize) -> &serde_json::Value {
    let f = &l["faults"][n];
    assert!(f["error"].is_null(), "{f:#}");
    assert!(f["held"].is_object(), "{f:#}");
    eprintln!(
        "{}: {}: held {} (lost {}), rebuild {}, {} files bad after",
        l["name"], f["description"], f["held"], f["held"]["lost"], f["rebuild"], f["files_bad"]
    );
    f
}

/// Paths of the files a fault's range held (as listed).
fn held_paths(f: &serde_json::Value) -> Vec<String> {
    f["held"]["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_string())
        .collect()
}

/// md's members with bad blocks recorded, in a fault's observation.
fn members_with_bad_blocks(f: &serde_json::Value) -> usize {
    f["md"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| !m["bad_blocks"].as_array().unwrap().is_empty())
        .count()
}

/// Item 2: a 45-disk VM lab stopped at start ("PCI: no slot/function available for
/// virtio-blk-pci"). 64 lab disks boot; md RAID6 45 + 2 spares (the post's 43 + 2, wider)
/// builds, loses a member, rebuilds onto a spare and keeps every file; disk 40 is throttled by
/// qemu and delayed by dm-delay, and member 43 (`vdar`, on the tenth slot) takes an unreadable
/// range under file data after the rebuild through its dm table.
#[test]
fn a_raid6_over_45_members_rebuilds_onto_a_spare_in_a_64_disk_vm() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = VmLab::new("iolab-vmscale");
    let spec = lab.dir.path().join("vm-45.toml");
    let text = format!(
        r#"name = "raid6-45-spindles"
[disks]
loop = {{ count = 64, size = "128MiB", dir = "{}" }}
slow = [{{ disk = 40, iops = 2000, latency = "1ms" }}]

[[layout]]
name = "md6-45-2spares"
mdadm = {{ level = 6, members = 45, spares = 2, assume_clean = true }}
fs = "xfs"
degrade = true
rebuild = true
fill = "32MiB"
faults = [{{ member = 43, at = "after_rebuild", kind = "unreadable", offset = "data", length = "256KiB" }}]

{}"#,
        lab.disks.display(),
        workloads_tail("8MiB", "300ms", &[RAND_READ_4K])
    );
    std::fs::write(&spec, text).unwrap();
    let (code, v, stderr) = lab.run(&spec, "VM lab, 64 disks, RAID6 x45 + 2 spares");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let l = layout(&v, "md6-45-2spares");
    assert_eq!(l["status"], "ok", "{l:#}");
    let members = l["members"].as_array().unwrap();
    assert_eq!(members.len(), 47, "{l:#}");
    assert_eq!(members[46], "/dev/vdau", "{l:#}");
    // The rebuild went onto one of the two spares, and every file came back.
    let rb = &l["rebuild"];
    eprintln!(
        "RAID6 x45 + 2 spares: build {} s, rebuild {} s onto {}, integrity {}",
        l["build_seconds"], rb["seconds"], rb["new_member"], l["integrity"]["verdict"]
    );
    assert!(rb["seconds"].as_f64().unwrap() > 0.0, "{l:#}");
    assert_eq!(rb["data_verified"], true, "{l:#}");
    // At the end md has all 45 slots in sync, hot spares among them: one took the failed
    // member's place, and (see below) one took member 43's when its rewrite failed.
    let final_md = &l["md_final"];
    let in_sync: Vec<&str> = final_md["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["state"] == "in_sync")
        .map(|m| m["device"].as_str().unwrap())
        .collect();
    assert_eq!(in_sync.len(), 45, "{final_md:#}");
    assert!(
        in_sync.contains(&"vdat") || in_sync.contains(&"vdau"),
        "no hot spare in sync: {final_md:#}"
    );
    assert_eq!(final_md["degraded"], 0, "{final_md:#}");
    // The fault on a disk past the old slot limit: placed under files, struck through its dm
    // table, and RAID6 (whole again) read every held file back.
    let f = fault(l, 0);
    assert_eq!(f["fault"]["placed"], true, "{f:#}");
    assert!(f["device"].as_str().unwrap().contains("-d43"), "{f:#}");
    assert!(f["held"]["files"].as_u64().unwrap() >= 1, "{f:#}");
    assert!(f["held"]["confirmed"].is_string(), "{f:#}");
    assert_eq!(f["held"]["lost"], 0, "{f:#}");
    assert_eq!(f["files_bad"], 0, "{f:#}");
    // md rewrote the sectors from parity, the dm `error` range refused the write, and md
    // took a spare in its place (`want_replacement`): the lab waited for that before the check.
    let m43 = f["md"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["device"].as_str().unwrap().contains("-d43)"))
        .unwrap_or_else(|| panic!("member 43 not in md's view: {f:#}"));
    assert!(
        m43["state"].as_str().unwrap().contains("write_error"),
        "{m43:#}"
    );
    assert_eq!(l["integrity"]["verdict"]["kind"], "verified", "{l:#}");
    lab.assert_nothing_left();
}

/// The URE-in-the-rebuild question under file data, and a range under no file.
fn ure_layouts() -> String {
    r#"
[[layout]]
name = "md5-ure-data"
mdadm = { level = 5, members = 3, assume_clean = true }
fs = "xfs"
degrade = true
rebuild = true
fill = "24MiB"
faults = [{ member = 0, at = "rebuild", kind = "unreadable", offset = "data", length = "1MiB" }]

[[layout]]
name = "md6-ure-data"
mdadm = { level = 6, members = 4, assume_clean = true }
fs = "xfs"
degrade = true
rebuild = true
fill = "24MiB"
faults = [{ member = 0, at = "rebuild", kind = "unreadable", offset = "data", length = "1MiB" }]

[[layout]]
name = "md5-lvm-faults"
mdadm = { level = 5, members = 3, assume_clean = true }
lvm = true
fs = "xfs"
degrade = true
rebuild = true
fill = "24MiB"
faults = [{ member = 1, at = "before_degrade", kind = "corrupt", offset = "data", length = "64KiB" }, { member = 0, at = "rebuild", kind = "unreadable", offset = "200MiB", length = "1MiB" }]

"#
    .to_string()
        + &workloads_tail("8MiB", "300ms", &[RAND_READ_4K])
}

/// Item 13: `examples/lab-vm.toml` asked what a URE on a surviving member during the
/// rebuild does, and answered RAID5 `verified` because the range held no file. Placed under
/// file data (`offset = "data"`, found through FIEMAP and md's layout, checked against the
/// member's bytes) and held until the recovery reaches it, RAID5 loses exactly the files the
/// range held and RAID6 none; a URE where no file is says that the array silently lost the
/// range; corruption placed through LVM under a file loses that file.
#[test]
fn a_ure_under_file_data_in_the_rebuild_loses_raid5_files_not_raid6() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = VmLab::new("iolab-vmure");
    let spec = lab.spec(&ure_layouts());
    let (code, v, stderr) = lab.run(&spec, "VM URE-under-data lab");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    for l in v["layouts"].as_array().unwrap() {
        assert_eq!(l["status"], "ok", "{l:#}");
    }
    // RAID5: the recovery reads the range it struck and has no other copy: md logs bad blocks
    // on the survivor and on the new member, and every file the range held is unreadable.
    let r5 = layout(&v, "md5-ure-data");
    let f5 = fault(r5, 0);
    assert_eq!(f5["fault"]["placed"], true, "{f5:#}");
    assert!(f5["held"]["confirmed"].is_string(), "{f5:#}");
    let held5 = f5["held"]["files"].as_u64().unwrap();
    assert!(held5 >= 1, "{f5:#}");
    assert!(f5["held"]["file_bytes"].as_u64().unwrap() > 0, "{f5:#}");
    assert_eq!(f5["held"]["lost"].as_u64(), Some(held5), "{f5:#}");
    assert_eq!(members_with_bad_blocks(f5), 2, "{f5:#}");
    assert!(f5["files_bad"].as_u64().unwrap() >= held5, "{f5:#}");
    let bad: Vec<&str> = r5["integrity"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "rebuilt")
        .unwrap()["bad_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["path"].as_str().unwrap())
        .collect();
    for p in held_paths(f5) {
        assert!(bad.contains(&p.as_str()), "{p} not lost: {bad:?}");
    }
    assert_eq!(r5["integrity"]["verdict"]["kind"], "data_loss", "{r5:#}");
    // RAID6: parity is left to rebuild those sectors from: every held file reads back.
    let r6 = layout(&v, "md6-ure-data");
    let f6 = fault(r6, 0);
    assert_eq!(f6["fault"]["placed"], true, "{f6:#}");
    assert!(f6["held"]["files"].as_u64().unwrap() >= 1, "{f6:#}");
    assert_eq!(f6["held"]["lost"], 0, "{f6:#}");
    assert_eq!(f6["files_bad"], 0, "{f6:#}");
    assert_eq!(r6["integrity"]["verdict"]["kind"], "verified", "{r6:#}");
    // Through LVM: the garbage under a file loses that file, found by its checksum.
    let lv = layout(&v, "md5-lvm-faults");
    let fc = fault(lv, 0);
    assert_eq!(fc["fault"]["placed"], true, "{fc:#}");
    let held_c = fc["held"]["files"].as_u64().unwrap();
    assert!(held_c >= 1, "{fc:#}");
    assert_eq!(fc["held"]["lost"].as_u64(), Some(held_c), "{fc:#}");
    assert!(
        fc["held"]["listed"][0]["after"]
            .as_str()
            .unwrap()
            .starts_with("silently wrong"),
        "{fc:#}"
    );
    // A URE far past the data (the end of the last allocation group) holds no file: the array
    // lost the range to md's bad-block log and nothing noticed. The line says so.
    let fu = fault(lv, 1);
    assert_eq!(fu["held"]["files"], 0, "{fu:#}");
    assert_eq!(members_with_bad_blocks(fu), 2, "{fu:#}");
    let says = fu["held"]["says"].as_str().unwrap();
    assert!(
        says.starts_with("held no file of the data set")
            && says.contains("1MiB of the array is now unreadable, bad blocks on 2 members"),
        "{says}"
    );
    assert!(
        f5["description"]
            .as_str()
            .unwrap()
            .contains("(under file data)"),
        "{f5:#}"
    );
    let says5 = f5["held"]["says"].as_str().unwrap();
    assert!(
        says5.starts_with("held ") && says5.contains("read back") && !says5.contains("intact"),
        "{says5}"
    );
    lab.assert_nothing_left();
}
