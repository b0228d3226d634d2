//! In the VM: a sweep over md's runtime tunables. One md RAID5 layout varying
//! `stripe_cache_size` and `group_thread_cnt` runs as four layouts, each array tuned as its
//! combination says — read back from the kernel's sysfs after the build, the truth of what md
//! took — its stack naming the values, its stored run recording them.
//!
//! Needs what the VM lab needs (root, qemu-system-x86, linux-image-amd64, busybox-static,
//! mdadm, lvm2, xfsprogs, xz-utils: scripts/test installs them); skips with the reason
//! otherwise.

mod common;

use common::vm::{SEQ_WRITE_1M, VmLab, layout, vm_or_skip, workloads_tail};

const SWEEP: &str = r#"
[[layout]]
name = "md5"
mdadm = { level = 5, members = 4, assume_clean = true }
fs = "xfs"
vary = { "mdadm.stripe_cache_size" = [256, 4096], "mdadm.group_thread_cnt" = [0, 2] }

"#;

/// A sweep over md's runtime tunables only: one array, built once and re-tuned through sysfs
/// for each later combination (`reused_build_of` names the first), and the kernel holds what
/// each combination asked when its workloads run.
#[test]
fn an_md_tunable_sweep_is_built_once_and_re_tuned_as_each_combination_says() {
    if !vm_or_skip(&[]) {
        return;
    }
    let lab = VmLab::new("iolab-vmtune");
    let spec = lab.spec(&(SWEEP.to_string() + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])));
    let (code, v, stderr) = lab.run(&spec, "md tunable sweep");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let names: Vec<&str> = v["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "md5[stripe_cache_size=256,group_thread_cnt=0]",
            "md5[stripe_cache_size=256,group_thread_cnt=2]",
            "md5[stripe_cache_size=4096,group_thread_cnt=0]",
            "md5[stripe_cache_size=4096,group_thread_cnt=2]"
        ]
    );
    for (name, cache, groups) in [
        (names[0], 256, 0),
        (names[1], 256, 2),
        (names[2], 4096, 0),
        (names[3], 4096, 2),
    ] {
        let l = layout(&v, name);
        assert_eq!(l["status"], "ok", "{l:#}");
        if name == names[0] {
            assert!(l["reused_build_of"].is_null(), "the first is built: {l:#}");
        } else {
            assert_eq!(
                l["reused_build_of"], names[0],
                "re-tuned, not rebuilt: {l:#}"
            );
        }
        assert_eq!(
            l["md_tunables"],
            format!("stripe_cache_size {cache}, group_thread_cnt {groups}"),
            "the kernel holds what the combination asked: {l:#}"
        );
        let stack = l["stack"].as_str().unwrap();
        assert!(
            stack.contains(&format!("stripe cache {cache}"))
                && stack.contains(&format!("{groups} thread groups")),
            "{name}: {stack}"
        );
    }
    // The stored run records the tunables with its layout.
    let doc = lab.shown_run(&v, names[3]);
    let stack = doc["layout"]["stack"].to_string();
    assert!(
        stack.contains("\"stripe_cache_size\":4096") && stack.contains("\"group_thread_cnt\":2"),
        "the md layer keeps its tunables: {:#}",
        doc["layout"]
    );
    lab.assert_nothing_left();
}

const READ_AHEAD: &str = r#"
[[layout]]
name = "md5-ra"
mdadm = { level = 5, members = 4, assume_clean = true, read_ahead = "4MiB", scheduler = "none" }
fs = "xfs"

"#;

/// The array's read-ahead and its members' IO scheduler, set before the workloads and read
/// back from the kernel (`queue/read_ahead_kb` of the array, each member's
/// `queue/scheduler`, where the kernel brackets the active one): a virtio disk with one queue
/// gets mq-deadline by default, so `none` read back is what the layout set, not the kernel's
/// own choice; md sizes its own read-ahead from the stripe (not 4 MiB on 4 members of 512 KiB).
#[test]
fn read_ahead_and_the_members_scheduler_read_back_as_set() {
    if !vm_or_skip(&[]) {
        return;
    }
    let lab = VmLab::new("iolab-vmtune-ra");
    let spec =
        lab.spec(&(READ_AHEAD.to_string() + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])));
    let (code, v, stderr) = lab.run(&spec, "md read-ahead and scheduler");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let l = layout(&v, "md5-ra");
    assert_eq!(l["status"], "ok", "{l:#}");
    assert_eq!(
        l["md_tunables"],
        "stripe_cache_size 256, group_thread_cnt 0, read_ahead_kb 4096, scheduler none",
        "{l:#}"
    );
    let stack = l["stack"].as_str().unwrap();
    assert!(
        stack.contains("read-ahead 4MiB") && stack.contains("members' scheduler none"),
        "{stack}"
    );
    let doc = lab.shown_run(&v, "md5-ra");
    assert_eq!(
        doc["layout"]["tunables"],
        "stripe_cache_size 256, group_thread_cnt 0, read_ahead_kb 4096, scheduler none",
        "the stored record keeps what the kernel held: {:#}",
        doc["layout"]
    );
    lab.assert_nothing_left();
}
