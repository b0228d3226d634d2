//! Alignment in the VM: md RAID5 x4 at chunk 512KiB under LVM and xfs, and under
//! xfs alone. With `alignment = "auto"` what the tools did by themselves is read back and
//! asserted as observed (LVM aligns its data offset to the stripe; mkfs.xfs takes no stripe
//! unit in this guest, so the check flags it); an xfs made with a wrong su/sw on purpose is
//! flagged with the mkfs that would match; with `"stripe"` iolab passes the stripe and every
//! layer reads back aligned.
//!
//! Under a cache, md RAID5 x4 at chunk 64KiB: bcache's backing device starts its data 8KiB
//! in by default, so with `"auto"` the bcache row is flagged with the make-bcache that fixes
//! it; with `"stripe"` iolab passes `--data-offset` of one stripe and the offset reads back
//! (`bcache-super-show`) on it. lvmcache adds no offset: its row is LVM's.
//!
//! Needs what the VM lab needs (root, qemu-system-x86, linux-image-amd64, busybox-static,
//! mdadm, lvm2, xfsprogs, xz-utils, and bcache-tools and thin-provisioning-tools for the
//! caches: scripts/test installs them); skips with the reason otherwise.

mod common;

use std::sync::Mutex;

use common::vm::{SEQ_WRITE_1M, VmLab, layout, vm_or_skip, workloads_tail};

/// One VM at a time: two emulated guests on two cores would only slow each other down.
static VM: Mutex<()> = Mutex::new(());

const MD: &str = "mdadm = { level = 5, members = 4, chunk = \"512KiB\", assume_clean = true }\n";
const MD5: &str = "mdadm = { level = 5, members = 4, chunk = \"512KiB\", assume_clean = true }\nlvm = true\nfs = \"xfs\"\n";
const MD5_XFS: &str = "fs = \"xfs\"\n";

fn spec_body() -> String {
    format!(
        "[[layout]]\nname = \"md5\"\n{MD5}vary = {{ alignment = [\"auto\", \"stripe\"] }}\n\n\
         [[layout]]\nname = \"md5-xfs\"\n{MD}{MD5_XFS}\n\
         [[layout]]\nname = \"md5-wrong-su\"\n{MD5}mkfs_options = [\"-d\", \"su=64k,sw=2\"]\n\n"
    )
}

/// The layout's alignment layer `name` (`lvm`, `xfs`).
fn layer<'a>(l: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    l["alignment"]["layers"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["layer"] == name))
        .unwrap_or_else(|| panic!("no {name} in {l:#}"))
}

#[test]
fn lvm_and_xfs_over_md5_are_checked_and_a_wrong_su_is_flagged_with_its_fix() {
    if !vm_or_skip(&[]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = VmLab::new("iolab-vmalign");
    let spec = lab.spec(&(spec_body() + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])));
    let (code, v, stderr) = lab.run(&spec, "alignment");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    for name in ["md5[alignment=auto]", "md5[alignment=stripe]", "md5-xfs"] {
        let l = layout(&v, name);
        assert_eq!(l["status"], "ok", "{l:#}");
        assert_eq!(
            l["alignment"]["array"], "md5 x4 (chunk 512KiB), stripe 1.50MiB",
            "{name}: the geometry md's sysfs gives: {l:#}"
        );
        assert!(
            l["alignment"]["note"].is_null(),
            "every tool answered: {l:#}"
        );
    }
    // "auto" over LVM: LVM puts its data offset on a whole stripe by itself (it reads md's
    // io_opt), but mkfs.xfs on the LV takes no stripe unit in this guest: flagged, with the fix.
    let auto = layout(&v, "md5[alignment=auto]");
    let lvm = layer(auto, "lvm");
    assert_eq!(
        (lvm["aligned"].as_bool(), lvm["got"].as_str()),
        (Some(true), Some("data offset 1.50MiB, extent 4MiB")),
        "{auto:#}"
    );
    let xfs = layer(auto, "xfs");
    assert_eq!(
        (
            xfs["aligned"].as_bool(),
            xfs["got"].as_str(),
            xfs["fix"].as_str()
        ),
        (
            Some(false),
            Some("no stripe unit"),
            Some("mkfs.xfs -d su=512k,sw=3")
        ),
        "{auto:#}"
    );
    // "stripe": iolab passes it, and every layer reads back aligned.
    let st = layout(&v, "md5[alignment=stripe]");
    for (name, got) in [
        ("lvm", "data offset 1.50MiB, extent 4MiB"),
        ("xfs", "stripe unit 512KiB, width 1.50MiB"),
    ] {
        let x = layer(st, name);
        assert_eq!(
            (x["aligned"].as_bool(), x["got"].as_str()),
            (Some(true), Some(got)),
            "{st:#}"
        );
    }
    // "auto" on the array itself: mkfs.xfs took no stripe unit in this guest either.
    let xfs = layer(layout(&v, "md5-xfs"), "xfs");
    assert_eq!(
        (xfs["aligned"].as_bool(), xfs["got"].as_str()),
        (Some(false), Some("no stripe unit")),
        "{xfs:#}"
    );
    let stripe = layout(&v, "md5[alignment=stripe]")["commands"].to_string();
    assert!(
        stripe.contains("--dataalignment 1536k") && stripe.contains("-d su=512k,sw=3"),
        "stripe passes the stripe: {stripe}"
    );
    // Made misaligned on purpose: xfs is flagged, with the mkfs that would match; LVM is not.
    let bad = layout(&v, "md5-wrong-su");
    let xfs = layer(bad, "xfs");
    assert_eq!(xfs["aligned"], false, "{bad:#}");
    assert_eq!(xfs["fix"], "mkfs.xfs -d su=512k,sw=3", "{bad:#}");
    assert_eq!(
        xfs["warning"],
        "xfs over md5 x4 (chunk 512KiB): stripe unit 64KiB, width 128KiB does not match the array's chunk 512KiB x 3 data disks; mkfs.xfs -d su=512k,sw=3"
    );
    assert_eq!(layer(bad, "lvm")["aligned"], true, "{bad:#}");
    // The stored run keeps the finding with its layout.
    let doc = lab.shown_run(&v, "md5-wrong-su");
    assert!(
        doc["layout"]["alignment"]
            .to_string()
            .contains("su=512k,sw=3"),
        "{:#}",
        doc["layout"]
    );
    lab.assert_nothing_left();
}

/// md RAID5 x4 at chunk 64KiB (a 192KiB stripe) with one cache disk, under bcache
/// (`"auto"` and `"stripe"`) and under LVM with lvmcache (`"auto"`).
const CACHED: &str = r#"
[[layout]]
name = "md5-bcache"
mdadm = { level = 5, members = 4, chunk = "64KiB", assume_clean = true }
cache = { kind = "bcache", mode = "writethrough" }
fs = "xfs"
vary = { alignment = ["auto", "stripe"] }

[[layout]]
name = "md5-lvmcache"
mdadm = { level = 5, members = 4, chunk = "64KiB", assume_clean = true }
lvm = true
cache = { kind = "lvmcache", mode = "writethrough", size = "32MiB" }
fs = "xfs"

"#;

#[test]
fn bcache_default_data_offset_is_flagged_and_stripe_puts_it_on_the_stripe() {
    if !vm_or_skip(&[
        ("make-bcache", "bcache-tools"),
        ("bcache-super-show", "bcache-tools"),
        ("cache_check", "thin-provisioning-tools"),
    ]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = VmLab::new("iolab-vmalign-cache");
    // 256MiB disks: on 128MiB ones (an array of 381MiB) mkfs.xfs with su=64k,sw=3 refuses the
    // filesystem (`Log size must be at least 64MB`, xfsprogs 6.1).
    let spec = lab.spec(&(CACHED.to_string() + &workloads_tail("1MiB", "100ms", &[SEQ_WRITE_1M])));
    let (code, v, stderr) = lab.run(&spec, "alignment under a cache");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    for name in [
        "md5-bcache[alignment=auto]",
        "md5-bcache[alignment=stripe]",
        "md5-lvmcache",
    ] {
        let l = layout(&v, name);
        assert_eq!(l["status"], "ok", "{l:#}");
        assert_eq!(
            l["alignment"]["array"], "md5 x4 (chunk 64KiB), stripe 192KiB",
            "{name}: {l:#}"
        );
        assert!(
            l["alignment"]["note"].is_null(),
            "every tool answered: {l:#}"
        );
        eprintln!("{name}: {}", l["alignment"]);
    }
    // "auto": make-bcache's own data offset, 8KiB, is off the 192KiB stripe: flagged, with the
    // make-bcache that puts it on one.
    let auto = layout(&v, "md5-bcache[alignment=auto]");
    let b = layer(auto, "bcache");
    assert_eq!(
        (b["aligned"].as_bool(), b["got"].as_str(), b["fix"].as_str()),
        (
            Some(false),
            Some("data offset 8KiB"),
            Some("make-bcache -B --data-offset 384")
        ),
        "{auto:#}"
    );
    assert_eq!(
        b["warning"],
        "bcache over md5 x4 (chunk 64KiB): data offset 8KiB is not a multiple of the 192KiB stripe; make-bcache -B --data-offset 384"
    );
    // As on the array itself, mkfs.xfs on /dev/bcacheN took no stripe unit in this guest.
    assert_eq!(layer(auto, "xfs")["got"], "no stripe unit", "{auto:#}");
    // "stripe": make-bcache was given one stripe, and bcache-super-show reads it back; the xfs
    // on /dev/bcacheN got the array's su/sw; both aligned.
    let st = layout(&v, "md5-bcache[alignment=stripe]");
    let cmds = st["commands"].to_string();
    assert!(
        cmds.contains("--data-offset 384") && cmds.contains("-d su=64k,sw=3"),
        "stripe passes the stripe to make-bcache and mkfs.xfs: {cmds}"
    );
    for (name, got) in [
        ("bcache", "data offset 192KiB"),
        ("xfs", "stripe unit 64KiB, width 192KiB"),
    ] {
        let x = layer(st, name);
        assert_eq!(
            (x["aligned"].as_bool(), x["got"].as_str()),
            (Some(true), Some(got)),
            "{st:#}"
        );
    }
    assert_eq!(st["alignment"]["layers"].as_array().map(Vec::len), Some(2));
    // lvmcache maps the LV onto its origin 1:1: no layer of its own, LVM's data offset is the
    // LV's place on the array, and LVM put it on a stripe by itself.
    let lc = layout(&v, "md5-lvmcache");
    let names: Vec<&str> = lc["alignment"]["layers"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["layer"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["lvm", "xfs"], "{lc:#}");
    let lvm = layer(lc, "lvm");
    assert_eq!(
        (lvm["aligned"].as_bool(), lvm["got"].as_str()),
        (Some(true), Some("data offset 1.12MiB, extent 4MiB")),
        "LVM's 1MiB rounded up to whole 192KiB stripes: {lc:#}"
    );
    lab.assert_nothing_left();
}
