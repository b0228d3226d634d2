//! Silent corruption on md, in the VM: garbage written under a file of the lab's data set on one
//! member (placed through md's layout, checked against the member's own bytes before it is
//! struck), every struck file read back past the cache, then md's `check`. md keeps no
//! checksum: RAID5 reads a data chunk without its parity, so the struck files come back with
//! wrong bytes and no error — SILENT CORRUPTION, the outcome users fear most — and only the
//! check's parity count notices. RAID1 reads whichever mirror md balances to: either outcome
//! (the good copy: intact; the struck one: silently wrong) is md's, but never a read error,
//! and the check counts the mirrors apart. Then md's `repair` and the struck files read once
//! more: RAID5 recomputes parity from the corrupted data (the loss stays, now unnoticeable),
//! RAID1 copies the first mirror — the good one here — over the struck one.
//!
//! Needs what the VM lab needs (root, qemu-system-x86, linux-image-amd64, busybox-static,
//! mdadm, xfsprogs, xz-utils: scripts/test installs them); skips with the reason otherwise.

mod common;

use common::vm::{SEQ_WRITE_1M, VmLab, layout, vm_or_skip, workloads_tail};

const LAYOUTS: &str = r#"
[[layout]]
name = "md5"
mdadm = { level = 5, members = 3, assume_clean = true }
fs = "ext4"
fill = "16MiB"
faults = [{ member = 1, at = "before_degrade", kind = "corrupt", offset = "data", length = "256KiB" }]

[[layout]]
name = "md1"
mdadm = { level = 1, members = 2, assume_clean = true }
fs = "ext4"
fill = "16MiB"
faults = [{ member = 1, at = "before_degrade", kind = "corrupt", offset = "data", length = "256KiB" }]

"#;

/// The fault's report, checked placed under file data and confirmed on the member.
fn struck<'a>(l: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let f = &l["faults"][0];
    assert!(f["error"].is_null(), "{name}: {f:#}");
    assert_eq!(f["fault"]["placed"], true, "{name}: {f:#}");
    let held = &f["held"];
    assert!(held["files"].as_u64().unwrap() >= 1, "{name}: {held:#}");
    let confirmed = held["confirmed"].as_str().unwrap_or_default();
    assert!(
        confirmed.contains("bytes at") && confirmed.contains(".iolab-data/"),
        "{name}: the map was not confirmed on the member: {held:#}"
    );
    held
}

#[test]
fn md_raid5_hands_struck_file_bytes_back_silently_and_its_repair_keeps_them_wrong_while_raid1s_repair_heals()
 {
    if !vm_or_skip(&[]) {
        return;
    }
    let lab = VmLab::new("iolab-vmbitrot");
    let spec = lab.spec(&(LAYOUTS.to_string() + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])));
    let (code, v, stderr) = lab.run(&spec, "md bitrot");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");

    let r5 = layout(&v, "md5");
    assert_eq!(r5["status"], "ok", "{r5:#}");
    let held = struck(r5, "md5");
    let files = held["files"].as_u64().unwrap();
    assert_eq!(held["lost"].as_u64(), Some(files), "md5: {held:#}");
    for f in held["listed"].as_array().unwrap() {
        let after = f["after"].as_str().unwrap();
        assert!(after.starts_with("silently wrong"), "md5: {f:#}");
    }
    let verdict = &r5["integrity"]["verdict"];
    assert_eq!(verdict["kind"], "data_loss", "{verdict:#}");
    assert!(verdict["silent"].as_u64().unwrap() >= 1, "{verdict:#}");
    let sc = &r5["integrity"]["scrubs"][0];
    assert_eq!(sc["tool"], "md check", "{sc:#}");
    assert!(
        sc["counters"]["mismatch_cnt"].as_u64().unwrap() > 0,
        "md's check counts the struck parity stripes: {sc:#}"
    );
    // md's repair then made the copies agree — parity recomputed from the corrupted data — so
    // the struck files stay wrong, now with nothing left to notice it.
    let rep = &r5["integrity"]["scrubs"][1];
    assert_eq!(rep["tool"], "md repair", "{rep:#}");
    assert!(
        rep["counters"]["mismatch_cnt"].as_u64().unwrap() > 0,
        "{rep:#}"
    );
    let held = &r5["faults"][0]["held"];
    assert_eq!(
        held["lost_after_repair"].as_u64(),
        Some(files),
        "md5: {held:#}"
    );
    for f in held["listed"].as_array().unwrap() {
        let after = f["after_repair"].as_str().unwrap();
        assert!(after.starts_with("silently wrong"), "md5: {f:#}");
    }
    eprintln!("md5: {verdict:#} check {sc:#} repair {rep:#}");

    let r1 = layout(&v, "md1");
    assert_eq!(r1["status"], "ok", "{r1:#}");
    let held = struck(r1, "md1");
    for f in held["listed"].as_array().unwrap() {
        let after = f["after"].as_str().unwrap();
        assert!(
            after == "intact" || after.starts_with("silently wrong"),
            "md1 has no checksum to turn wrong bytes into an error: {f:#}"
        );
    }
    let sc = &r1["integrity"]["scrubs"][0];
    assert!(
        sc["counters"]["mismatch_cnt"].as_u64().unwrap() >= 512,
        "md's check counts 256KiB of differing mirrors (512 sectors): {sc:#}"
    );
    // md's repair copies the first mirror (member 0, not struck) over the others: the struck
    // copy is overwritten and every file reads back intact.
    let rep = &r1["integrity"]["scrubs"][1];
    assert_eq!(rep["tool"], "md repair", "{rep:#}");
    let held = &r1["faults"][0]["held"];
    assert_eq!(held["lost_after_repair"].as_u64(), Some(0), "md1: {held:#}");
    eprintln!("md1: held {held:#} check {sc:#} repair {rep:#}");
}
