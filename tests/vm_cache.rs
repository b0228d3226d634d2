//! The SSD cache layer, issue 28. In the VM (the stock Debian kernel has dm-cache and bcache
//! as modules): md RAID5 under LVM with an lvmcache writethrough cache, and md RAID6 under a
//! bcache writeback cache, are each built, measured, filled, degraded and rebuilt under the
//! cache, and every file reads back. On the host: the census names a bcache device's role
//! from its superblock.
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

/// Issue 28: md RAID5 + lvmcache writethrough on the 5th disk, through build, workloads,
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

/// Issue 28: md RAID6 + bcache writeback on the 5th disk: `make-bcache`, registered through
/// sysfs without udev, the filesystem on /dev/bcacheN; measured, filled, a member failed and
/// rebuilt; the cache device failed first (dm `error` table): what bcache did is recorded and
/// the data set's verdict (verified or data loss: writeback may lose) reported; the bcache
/// stopped at teardown.
#[test]
fn md6_bcache_writeback_degrades_rebuilds_and_verifies() {
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
    // Writeback may lose what the cache held: either outcome is valid, and it is reported.
    let verdict = assert_verdict(&l, &["verified", "data_loss"]);
    let c = &l["degraded"]["cache_failure"];
    assert_eq!(c["kind"], "bcache", "{l:#}");
    assert!(c["kernel"].as_str().is_some_and(|k| !k.is_empty()), "{c:#}");
    eprintln!("bcache writeback, cache device failed: verdict {verdict}: {c:#}");
    for want in [
        "make-bcache --bucket 128k -B /dev/md",
        "> /sys/fs/bcache/register",
        "echo writeback > /sys/block/bcache",
        "/dev/bcache",
        "-0-cache --table '0 524288 error'",
    ] {
        assert!(cmds.iter().any(|c| c.contains(want)), "{want}: {cmds:#?}");
    }
    lab.assert_nothing_left();
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
    let store = iolab::store::Store::open(&lab.db).expect("the host store");
    let records: Vec<LayoutRecord> = store
        .list(&iolab::store::RunFilter::default())
        .expect("stored runs")
        .iter()
        .filter_map(|s| store.load_run(&s.id).expect("a stored run").layout)
        .filter(|r| r.name.as_deref() == Some(name))
        .collect();
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

/// Issue 28: `iolab disks` shows a bcache backing device and a cache device (formatted with
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
