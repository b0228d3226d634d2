//! In the VM: layers under each member. md RAID5 x3 over dm-integrity with garbage
//! written under one member's file data (on the disk, under dm-integrity): every file reads
//! back intact, and md counts the read errors dm-integrity returned and md repaired on that
//! member — the corruption landed under dm-integrity and was caught there. LUKS under md
//! RAID1 x2 through a failure and a rebuild: the replacement disk gets LUKS too (md takes
//! the crypt device) and every file is back. The same RAID5 with the data chunk and its P
//! both struck beneath dm-integrity: nothing can rebuild the block, and every struck file
//! is a read error — dm-integrity's tags turn the garbage into errors on both members, so
//! md never hands it back as data.
//!
//! Needs what the VM lab needs (root, qemu-system-x86, linux-image-amd64, busybox-static,
//! mdadm, lvm2, xfsprogs, xz-utils) and cryptsetup-bin (integritysetup, cryptsetup):
//! scripts/test installs them; skips with the reason otherwise.

mod common;

use common::vm::{SEQ_WRITE_1M, VmLab, layout, vm_or_skip, workloads_tail};

const LAYOUTS: &str = r#"
[[layout]]
name = "md5-integrity"
mdadm = { level = 5, members = 3, assume_clean = true }
integrity = {}
fs = "ext4"
fill = "8MiB"
faults = [{ member = 1, at = "before_degrade", kind = "corrupt", offset = "data", length = "256KiB" }]

[[layout]]
name = "md1-luks"
mdadm = { level = 1, members = 2, assume_clean = true }
luks = {}
fs = "ext4"
degrade = true
rebuild = true
fill = "8MiB"

[[layout]]
name = "md5-integrity-all"
mdadm = { level = 5, members = 3, assume_clean = true }
integrity = {}
fs = "ext4"
fill = "8MiB"
faults = [{ member = 1, at = "before_degrade", kind = "corrupt", offset = "data", length = "256KiB", copies = "all" }]

"#;

#[test]
fn integrity_catches_corruption_under_md_and_luks_goes_onto_the_replacement() {
    if !vm_or_skip(&[
        ("integritysetup", "cryptsetup-bin"),
        ("cryptsetup", "cryptsetup-bin"),
    ]) {
        return;
    }
    let lab = VmLab::new("iolab-vmintegrity");
    let spec = lab.sized_spec(
        "128MiB",
        &(LAYOUTS.to_string() + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])),
    );
    let (code, v, stderr) = lab.run(&spec, "layers under each member");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");

    let r5 = layout(&v, "md5-integrity");
    eprintln!(
        "md5-integrity: build {} s, usable {}, faults {:#}",
        r5["build_seconds"], r5["usable_bytes"], r5["faults"]
    );
    assert_eq!(r5["status"], "ok", "{r5:#}");
    assert_eq!(
        r5["stack"].as_str().unwrap(),
        "md raid5 x3 over dm-integrity (crc32c) > ext4",
        "{r5:#}"
    );
    let f = &r5["faults"][0];
    assert!(
        f["error"].is_null(),
        "the fault was placed and struck: {f:#}"
    );
    // Written onto the disk under dm-integrity (the member itself is the integrity device).
    let members = f["md"]["members"]
        .as_array()
        .expect("md's view of its members");
    let hit = members
        .iter()
        .find(|m| {
            m["device"]
                .as_str()
                .unwrap_or("")
                .contains("-0-m1-integrity")
        })
        .unwrap_or_else(|| panic!("member 1 is its integrity device: {f:#}"));
    // dm-integrity refused the garbage (a checksum mismatch reads as an error) and md
    // repaired each read from parity: it counts them on that member, and on no other.
    assert!(hit["errors"].as_u64().unwrap() > 0, "{f:#}");
    assert_eq!(hit["state"], "in_sync", "{f:#}");
    for m in members.iter().filter(|m| m["device"] != hit["device"]) {
        assert_eq!(m["errors"].as_u64(), Some(0), "{f:#}");
    }
    assert_eq!(f["files_bad"].as_u64(), Some(0), "{f:#}");
    assert_eq!(r5["integrity"]["verdict"]["kind"], "verified", "{r5:#}");
    // The filesystem sits on what dm-integrity's tags and journal and md's data offset leave:
    // three 128 MiB disks give under 2 x 126 MiB, and most of it still.
    let usable = r5["usable_bytes"].as_u64().unwrap();
    assert!(usable > 160 << 20 && usable < 2 * (126 << 20), "{usable}");

    every_copy_refused(layout(&v, "md5-integrity-all"));

    let r1 = layout(&v, "md1-luks");
    eprintln!(
        "md1-luks: build {} s, rebuild {:#}",
        r1["build_seconds"], r1["rebuild"]
    );
    assert_eq!(r1["status"], "ok", "{r1:#}");
    assert_eq!(
        r1["stack"].as_str().unwrap(),
        "md raid1 x2 over luks (aes-xts-plain64, 512-bit key) > ext4"
    );
    // The replacement is a LUKS device made on the new disk (the replacement's own name),
    // and md rebuilt onto it; every file verifies.
    let new = r1["rebuild"]["new_member"].as_str().unwrap();
    assert!(
        new.starts_with("/dev/mapper/iolab-") && new.ends_with("-1-r1-0-luks"),
        "{new}"
    );
    assert_eq!(
        r1["rebuild"]["data_verified"],
        serde_json::Value::Bool(true),
        "{r1:#}"
    );
    assert_eq!(r1["integrity"]["verdict"]["kind"], "verified", "{r1:#}");
    lab.assert_nothing_left();
}

/// md RAID5 over dm-integrity with the data chunk and its P struck beneath dm-integrity
/// (`copies = "all"`): P was found where md's layout puts it, the XOR of the data chunks, and
/// is refused or changed after; every struck file reads back as a read error, none intact and
/// none silently wrong, and the verdict is data loss without silent corruption.
fn every_copy_refused(l: &serde_json::Value) {
    let f = &l["faults"][0];
    eprintln!(
        "md5-integrity-all: status {}, fault {f:#}, verdict {:#}, scrubs {:#}",
        l["status"], l["integrity"]["verdict"], l["integrity"]["scrubs"]
    );
    assert!(
        f["error"].is_null(),
        "the fault was placed and struck: {f:#}"
    );
    assert_eq!(f["fault"]["copies"], "all", "{f:#}");
    let held = &f["held"];
    let parity = held["parity_checked"].as_str().unwrap_or_default();
    assert!(
        parity.starts_with("P of ") && parity.contains("changed once struck"),
        "P was not checked on the members: {held:#}"
    );
    common::every_struck_file_reads(held, "read error", "md5-integrity-all");
    let verdict = &l["integrity"]["verdict"];
    assert_eq!(verdict["kind"], "data_loss", "{verdict:#}");
    assert!(
        verdict["silent"].is_null(),
        "md over dm-integrity handed wrong bytes back: {verdict:#}"
    );
}
