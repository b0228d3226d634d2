//! The SSD cache layer. In the VM (the stock Debian kernel has dm-cache and bcache
//! as modules): md RAID5 under LVM with an lvmcache writethrough cache, and md RAID6 under a
//! bcache writeback cache, are each built, measured, filled, degraded (the cache device failed
//! first) and rebuilt under the cache: writethrough loses nothing and every file reads back;
//! writeback loses what only the cache held, and the lab reports the loss while md still
//! rebuilds. On the host: the census names a bcache device's role from its superblock.
//!
//! Needs root, qemu-system-x86, linux-image-amd64, busybox-static, mdadm, lvm2, xfsprogs,
//! xz-utils, thin-provisioning-tools and bcache-tools (scripts/test installs them); skips with
//! the reason otherwise.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use iolab::sample::layout_record::{LayoutRecord, Phase};

use common::vm::{RAND_READ_4K, SEQ_WRITE_1M, VmLab, layout, vm_or_skip, workloads_tail};
use common::*;

/// One VM at a time: two emulated guests on two cores would only slow each other down.
static VM: Mutex<()> = Mutex::new(());

/// md RAID5 + lvmcache writethrough on the 5th disk, through build, workloads,
/// fill, the cache device failed (dm `error` table; the cache taken off the LV with
/// `lvconvert --uncache --force`), one member failed and rebuilt onto the spare: `verified`,
/// since writethrough loses nothing.
#[test]
fn md5_lvmcache_writethrough_degrades_rebuilds_and_verifies() {
    if !vm_or_skip(&[("cache_check", "thin-provisioning-tools")]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = VmLab::new("iolab-vmcache");
    let body = r#"
[[layout]]
name = "md5-lvmcache"
mdadm = { level = 5, members = 3, spares = 1, assume_clean = true }
cache = { kind = "lvmcache", mode = "writethrough", size = "64MiB", fail = true }
fs = "xfs"
degrade = true
rebuild = true
fill = "16MiB"

"#;
    let (l, cmds) = run_lab(
        &lab,
        body,
        "md5-lvmcache",
        "md raid5 x3 +1 spare > lvm > lvmcache writethrough 64MiB (1 disk, failed) > xfs",
    );
    assert_verdict(&l, &["verified"]);
    let c = &l["degraded"]["cache_failure"];
    assert_eq!(c["kind"], "lvmcache", "{l:#}");
    assert_eq!(c["usable"], true, "{c:#}");
    // Then, when the filesystem met the errors before the cache came off, a remount.
    let actions = c["actions"].as_array().expect("actions");
    assert_eq!(
        actions[..2],
        [
            serde_json::json!("lvconvert --uncache: ok"),
            serde_json::json!("vgreduce --removemissing: ok")
        ],
        "{c:#}"
    );
    eprintln!("lvmcache writethrough, cache device failed: {c:#}");
    assert!(
        cmds.iter()
            .any(|c| c.contains("--table '0 ") && c.contains("-cache") && c.ends_with(" error'")),
        "{cmds:#?}"
    );
    assert!(l["rebuild"]["seconds"].as_f64().unwrap() > 0.0, "{l:#}");
    assert!(
        cmds.iter().any(|c| c.starts_with("lvconvert ")
            && c.contains("--yes --type cache --cachevol cache --cachemode writethrough")),
        "{cmds:#?}"
    );
    lab.assert_nothing_left();
}

/// md RAID6 + bcache writeback on the 5th disk: `make-bcache`, registered through
/// sysfs without udev, the filesystem on /dev/bcacheN; measured and filled, then the cache
/// device fails (dm `error` table) while it holds writes the array never got (mkfs's
/// metadata and the data set: 32-62 MiB dirty, measured). That is data loss, and the lab must
/// say so: the kernel stops the bcache device, the array runs again without its cache
/// (`inconsistent`), the data set reads back lost, the lab exits 1 and the stored runs keep
/// the cache failure. Where the filesystem does not come back (every run so far: ext4 found
/// no filesystem on the array) there is no degraded run, and the degraded workloads' error
/// says why; where it does, the degraded run is stored. Either way the member failed under
/// the cache is rebuilt and md's check of the rebuilt array is clean: the loss is the
/// cache's, not the array's. The bcache is stopped at teardown.
#[test]
fn md6_bcache_writeback_cache_failure_loses_the_dirty_data_and_md_still_rebuilds() {
    if !vm_or_skip(&[("make-bcache", "bcache-tools")]) {
        return;
    }
    let _one = VM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lab = VmLab::new("iolab-vmbcache");
    let body = r#"
[[layout]]
name = "md6-bcache"
mdadm = { level = 6, members = 4, assume_clean = true }
cache = { kind = "bcache", mode = "writeback", fail = true }
fs = "ext4"
degrade = true
rebuild = true
fill = "16MiB"

"#;
    let (l, cmds) = run_lab(
        &lab,
        body,
        "md6-bcache",
        "md raid6 x4 > bcache writeback (1 disk, failed) > ext4",
    );
    let c = &l["degraded"]["cache_failure"];
    eprintln!("bcache writeback, cache device failed: {c:#}");
    assert_eq!(c["kind"], "bcache", "{l:#}");
    // The premise: the cache held writes the array did not have when it died.
    assert!(
        c["dirty_bytes"].as_u64().is_some_and(|d| d > 0),
        "nothing dirty in the cache: this run tests no loss: {c:#}"
    );
    assert_eq!(c["state_before"], "dirty", "{c:#}");
    // With dirty data the kernel stops the bcache device (stop_when_cache_set_failed=auto),
    // and the array run again without its cache knows it is missing writes.
    let kernel = c["kernel"].as_str().unwrap_or_default();
    assert!(kernel.contains("stopped: its IO fails"), "{c:#}");
    assert_eq!(c["state_after"], "inconsistent", "{c:#}");
    assert_lost_after_the_cache(&l);
    assert_degraded_run_or_why_not(&lab, &l, c);
    // What `iolab report --lab` and `iolab compare` read: the loss, in every stored run.
    for r in stored_records(&lab, "md6-bcache") {
        let v = r.integrity.as_ref().map_or("", |i| i.verdict.as_str());
        assert!(v.starts_with("DATA LOSS"), "{r:#?}");
    }
    // The member failed under the cache is rebuilt all the same, and the array checks clean.
    let r = &l["rebuild"];
    assert!(r["seconds"].as_f64().is_some_and(|s| s > 0.0), "{l:#}");
    assert!(r["bytes"].as_u64().is_some_and(|b| b > 0), "{l:#}");
    assert_eq!(r["data_verified"], false, "{l:#}");
    let scrubs = l["integrity"]["scrubs"].as_array().expect("scrubs");
    assert!(
        scrubs
            .iter()
            .any(|s| s["after"] == "rebuilt" && s["tool"] == "md check" && s["errors"] == 0),
        "md's check after the rebuild: {scrubs:#?}"
    );
    for want in [
        "make-bcache --bucket 128k -B /dev/md",
        "> /sys/fs/bcache/register",
        "echo writeback > /sys/block/bcache",
        "/dev/bcache",
        "-0-cache --table '0 524288 error'",
    ] {
        assert!(cmds.iter().any(|c| c.contains(want)), "{want}: {cmds:#?}");
    }
    assert!(
        cmds.iter()
            .any(|c| c.starts_with("mdadm ") && c.contains("--add")),
        "the rebuild's new member: {cmds:#?}"
    );
    lab.assert_nothing_left();
}

/// The data set was intact before the cache died and lost after: read back wrong or missing
/// at the degraded step and still after the rebuild (the array cannot rebuild what it never
/// got), so the verdict is `data_loss`.
fn assert_lost_after_the_cache(l: &serde_json::Value) {
    assert_verdict(l, &["data_loss"]);
    let steps = l["integrity"]["steps"].as_array().expect("integrity steps");
    let lost = |step: &str| {
        let s = steps
            .iter()
            .find(|s| s["step"] == step)
            .unwrap_or_else(|| panic!("no {step} step: {steps:#?}"));
        ["mismatched", "read_errors", "missing"]
            .iter()
            .map(|k| s[k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(lost("healthy"), 0, "intact before the failure: {steps:#?}");
    assert!(lost("degraded") > 0, "{steps:#?}");
    assert!(lost("rebuilt") > 0, "{steps:#?}");
    assert_eq!(l["degraded"]["data_verified"], false, "{l:#}");
}

/// Where the filesystem came back over the array (`usable`), the degraded workloads ran and
/// their run is stored; where it did not, an empty read-only stand-in is mounted, the
/// degraded workloads fail on it (their error is the finding) and no degraded run is stored.
fn assert_degraded_run_or_why_not(lab: &VmLab, l: &serde_json::Value, c: &serde_json::Value) {
    let actions: Vec<&str> = c["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let d = &l["degraded"];
    let stored = stored_phases(lab, "md6-bcache");
    if c["usable"] == true {
        assert!(actions.contains(&"mounted again"), "{c:#}");
        assert!(d["workload_error"].is_null(), "{d:#}");
        assert!(d["workload_seconds"].as_f64().is_some(), "{d:#}");
        assert!(stored.contains(&Phase::Degraded), "{stored:?}");
    } else {
        assert_eq!(c["usable"], false, "{c:#}");
        assert!(
            actions
                .iter()
                .any(|a| a.starts_with("the filesystem would not mount")),
            "{c:#}"
        );
        assert_eq!(
            actions.last(),
            Some(&"an empty read-only tmpfs stands in"),
            "{c:#}"
        );
        let e = d["workload_error"].as_str().unwrap_or_default();
        assert!(
            e.contains("Read-only file system"),
            "the degraded workloads cannot run on the stand-in: {d:#}"
        );
        assert!(d["workload_seconds"].is_null(), "{d:#}");
        assert_eq!(stored, [Phase::Healthy], "no degraded run: {e}");
    }
}

/// The phases of the runs the host's store keeps for layout `name`.
fn stored_phases(lab: &VmLab, name: &str) -> Vec<Phase> {
    stored_records(lab, name)
        .iter()
        .filter_map(|r| r.phase)
        .collect()
}

/// The layout's integrity verdict, asserted to be one of `allowed`.
fn assert_verdict(l: &serde_json::Value, allowed: &[&str]) -> String {
    let v = l["integrity"]["verdict"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(allowed.contains(&v.as_str()), "verdict {v}: {l:#}");
    v
}

/// Runs `layout_body` (one `[[layout]]`) with the two short workloads in the VM and checks
/// what both cache stacks must give: exit 0, status ok, the stack described as `stack`, a
/// `degraded` record that names the failed cache device. The layout's JSON and its command
/// lines back.
fn run_lab(
    lab: &VmLab,
    layout_body: &str,
    name: &str,
    stack: &str,
) -> (serde_json::Value, Vec<String>) {
    let body =
        layout_body.to_string() + &workloads_tail("8MiB", "300ms", &[SEQ_WRITE_1M, RAND_READ_4K]);
    let spec = lab.spec(&body);
    let (code, v, stderr) = lab.run(&spec, &format!("VM lab {name}"));
    let l = layout(&v, name).clone();
    // The lab exits 1 when a layout lost data (a valid outcome of a failed writeback cache).
    let lost = l["integrity"]["verdict"]["kind"] == "data_loss";
    assert_eq!(code, i32::from(lost), "stderr: {stderr}\n{v:#}");
    assert_eq!(l["status"], "ok", "{l:#}");
    assert_eq!(l["stack"], stack, "{l:#}");
    assert!(l["degraded"]["cache_failure"].is_object(), "{l:#}");
    assert_stored(lab, name, &l["degraded"]["cache_failure"]);
    let cmds = l["commands"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    (l, cmds)
}

/// The host's store keeps the cache failure in the degraded run's layout record, as the lab's
/// JSON has it (what `iolab report --lab` reads), and the healthy run's has none; when the
/// filesystem did not come back after the cache died (no degraded run was made), the healthy
/// run's record keeps it.
fn assert_stored(lab: &VmLab, name: &str, want: &serde_json::Value) {
    let records = stored_records(lab, name);
    let phase = |p: Phase| records.iter().filter(move |r| r.phase == Some(p));
    assert!(phase(Phase::Healthy).count() > 0, "{records:#?}");
    let keeper = match phase(Phase::Degraded).next() {
        Some(d) => {
            assert!(
                phase(Phase::Healthy).all(|r| r.cache_failure.is_none()),
                "{records:#?}"
            );
            d
        }
        None => phase(Phase::Healthy).next().expect("a healthy run"),
    };
    assert_eq!(
        serde_json::to_value(&keeper.cache_failure).unwrap(),
        *want,
        "{records:#?}"
    );
}

/// The layout records the host's store keeps for layout `name`.
fn stored_records(lab: &VmLab, name: &str) -> Vec<LayoutRecord> {
    let store = iolab::store::Store::open(&lab.db).expect("the host store");
    store
        .list(&iolab::store::RunFilter::default())
        .expect("stored runs")
        .iter()
        .filter_map(|s| store.load_run(&s.id).expect("a stored run").layout)
        .filter(|r| r.name.as_deref() == Some(name))
        .collect()
}

/// A loop device over a sparse file in /dev/shm, detached and deleted on drop.
struct Loop {
    dev: PathBuf,
    file: PathBuf,
}

impl Loop {
    fn new(tag: &str) -> Loop {
        let file = PathBuf::from(format!(
            "/dev/shm/iolab-test-cache-{tag}-{}.img",
            std::process::id()
        ));
        let f = std::fs::File::create(&file).expect("backing file");
        f.set_len(64 << 20).expect("size");
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output()
            .expect("losetup");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let dev = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        Loop { dev, file }
    }

    fn path(&self) -> &str {
        self.dev.to_str().expect("utf8")
    }

    fn name(&self) -> String {
        self.dev.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// `iolab disks` shows a bcache backing device and a cache device (formatted with
/// make-bcache, not registered) as bcache members with their roles.
#[test]
fn census_shows_bcache_backing_and_cache_roles() {
    require_root!();
    require_tool!("make-bcache", apt = "bcache-tools");
    let backing = Loop::new("backing");
    let cache = Loop::new("cache");
    for (flag, d) in [("-B", &backing), ("-C", &cache)] {
        let o = Command::new("make-bcache")
            .args([flag, d.path()])
            .output()
            .expect("make-bcache");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (code, so, se) = Iolab::new()
        .args(["disks", "--json", backing.path(), cache.path()])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let j = json(&so);
    for (d, role) in [(&backing, "backing"), (&cache, "cache")] {
        let dev = j["devices"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == d.name().as_str()))
            .unwrap_or_else(|| panic!("no {} in {j:#}", d.name()));
        let m = &dev["membership"][0];
        assert_eq!(m["kind"], "bcache", "{dev:#}");
        assert_eq!(m["role"], role, "{dev:#}");
        assert_eq!(dev["signature"]["fs_type"], "bcache", "{dev:#}");
    }
}
