//! `iolab disks` on real loop devices: the census reports their size and block sizes and what
//! they belong to; the read test finds the one device that is really slower (throttled by a
//! cgroup, v1 blkio or v2 io.max) and flags exactly that one; `--check` exit codes; bad devices
//! get one clear line; the read test never opens a device for writing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::throttle::Throttled;
use common::{Iolab, Out, json, require_root, require_throttle, require_tool};

/// A loop device over a file in /dev/shm filled with data (not sparse, so reads are real),
/// detached and deleted on drop.
struct Loop {
    dev: PathBuf,
    file: PathBuf,
}

impl Loop {
    fn new(tag: &str, size: u64, extra: &[&str]) -> Loop {
        let file = PathBuf::from(format!(
            "/dev/shm/iolab-test-disks-{tag}-{}.img",
            std::process::id()
        ));
        // Pseudo-random content, different in every MiB.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ size ^ tag.len() as u64;
        let mut buf = vec![0u8; 1 << 20];
        let mut data = Vec::with_capacity(size as usize);
        while (data.len() as u64) < size {
            for c in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                c.copy_from_slice(&x.to_le_bytes());
            }
            let n = ((size - data.len() as u64) as usize).min(buf.len());
            data.extend_from_slice(&buf[..n]);
        }
        std::fs::write(&file, &data).expect("write backing file");
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .args(extra)
            .arg(&file)
            .output()
            .expect("losetup");
        assert!(
            o.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        Loop { dev, file }
    }

    fn path(&self) -> &str {
        self.dev.to_str().expect("utf8")
    }

    fn name(&self) -> String {
        self.dev
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned()
    }

    fn devnum(&self) -> String {
        std::fs::read_to_string(format!("/sys/class/block/{}/dev", self.name()))
            .expect("dev")
            .trim()
            .to_string()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

fn device<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {doc}"))
}

#[test]
fn census_reports_loop_devices_with_size_and_block_sizes() {
    require_root!();
    let a = Loop::new("census-a", 48 << 20, &[]);
    let b = Loop::new("census-b", 40 << 20, &["--sector-size", "4096"]);
    let j = Iolab::new()
        .args(["disks", "--json", a.path(), &b.name()])
        .run()
        .success()
        .json();
    let da = device(&j, &a.name());
    assert_eq!(da["size_bytes"], 48u64 << 20);
    assert_eq!(da["logical_block_size"], 512);
    assert_eq!(da["kind"], "loop");
    assert_eq!(da["transport"], "loop");
    assert_eq!(da["temperature_c"], serde_json::Value::Null);
    assert_eq!(da["loop_backing_file"], a.file.to_str().unwrap());
    let db = device(&j, &b.name());
    assert_eq!(db["size_bytes"], 40u64 << 20);
    assert_eq!(db["logical_block_size"], 4096);
    assert_eq!(db["physical_block_size"], 4096);
    assert_eq!(j["flags"].as_array().unwrap().len(), 0);

    // --all lists them, the default (whole disks) does not.
    let (code, so, _) = Iolab::new()
        .args(["disks", "--all", "--json"])
        .run()
        .parts();
    assert_eq!(code, 0);
    device(&json(&so), &a.name());
    let all = Iolab::new()
        .args(["disks", "--json"])
        .run()
        .success()
        .json();
    assert!(
        all["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["kind"] == "disk"),
        "{all}"
    );

    // The table: sizes, block sizes, "-" for what is unknown.
    let (code, so, se) = Iolab::new()
        .args(["disks", a.path(), b.path()])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let row = so
        .lines()
        .find(|l| l.starts_with(&format!("{} ", b.name())))
        .expect("row");
    assert!(row.contains("40MiB"), "{row}");
    assert!(row.contains("4096/4096"), "{row}");
    assert!(row.contains(" - "), "{row}");
}

#[test]
fn census_shows_btrfs_and_lvm_membership_and_mountpoints() {
    require_root!();
    require_tool!("mkfs.btrfs", apt = "btrfs-progs");
    require_tool!("pvcreate", apt = "lvm2");
    let a = Loop::new("btrfs-a", 160 << 20, &[]);
    let b = Loop::new("btrfs-b", 160 << 20, &[]);
    let pv = Loop::new("pv", 16 << 20, &[]);
    let o = Command::new("mkfs.btrfs")
        .args(["-q", "-f", "-L", "iolabpool", "-d", "raid1", "-m", "raid1"])
        .args([a.path(), b.path()])
        .output()
        .expect("mkfs.btrfs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("pvcreate")
        .args(["-q", pv.path()])
        .env("LVM_SUPPRESS_FD_WARNINGS", "1")
        .output()
        .expect("pvcreate");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mnt = tempfile::Builder::new()
        .prefix("iolab-test-disks-mnt")
        .tempdir()
        .expect("tempdir");
    let o = Command::new("mount")
        .arg(a.path())
        .arg(mnt.path())
        .output()
        .expect("mount");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (code, so, se) = Iolab::new()
        .args(["disks", "--json", a.path(), b.path(), pv.path()])
        .run()
        .parts();
    let _ = Command::new("umount").arg(mnt.path()).status();
    let _ = Command::new("wipefs")
        .args(["-q", "-a", pv.path()])
        .status();
    assert_eq!(code, 0, "{se}");
    let j = json(&so);
    let (ja, jb) = (device(&j, &a.name()), device(&j, &b.name()));
    for d in [ja, jb] {
        let m = &d["membership"][0];
        assert_eq!(m["kind"], "btrfs", "{d}");
        assert_eq!(m["label"], "iolabpool");
        assert_eq!(m["mounted"], true);
        assert_eq!(
            d["mountpoints"][0],
            mnt.path().to_str().unwrap(),
            "both members hold the mounted filesystem: {d}"
        );
        assert_eq!(d["signature"]["fs_type"], "btrfs");
    }
    assert_eq!(ja["membership"][0]["uuid"], jb["membership"][0]["uuid"]);
    let jp = device(&j, &pv.name());
    assert_eq!(jp["membership"][0]["kind"], "lvm_pv", "{jp}");
    assert_eq!(jp["signature"]["fs_type"], "LVM2_member");
}

#[test]
fn bench_flags_exactly_the_throttled_device() {
    require_root!();
    require_throttle!();
    let devs: Vec<Loop> = (0..3)
        .map(|i| Loop::new(&format!("bench{i}"), 64 << 20, &[]))
        .collect();
    let slow = &devs[1];
    let cg = Throttled::on_device("disks", &slow.devnum());
    cg.limit("read_bps", 20_000_000);
    let mut args = vec![
        "disks",
        "--bench",
        "--parallel",
        "--check",
        "--json",
        "--time",
        "1s",
    ];
    args.extend(devs.iter().map(Loop::path));
    let (code, so, se) = cg.command().args(&args).run().parts();
    assert_eq!(code, 1, "--check with a flag exits 1: {se}");
    let j = json(&so);
    let flags = j["flags"].as_array().expect("flags");
    assert_eq!(flags.len(), 1, "exactly one flag: {flags:?}");
    let f = &flags[0];
    assert_eq!(f["kind"], "SLOW");
    assert_eq!(f["device"], slow.name().as_str());
    assert_eq!(f["group"], "loop (no model)");
    assert!(f["below_pct"].as_f64().unwrap() > 50.0, "{f}");

    let bench = &j["bench"];
    assert_eq!(bench["groups"][0]["devices"].as_array().unwrap().len(), 3);
    for d in bench["devices"].as_array().unwrap() {
        let places = d["places"].as_array().unwrap();
        let names: Vec<&str> = places
            .iter()
            .map(|p| p["place"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["start", "middle", "end"]);
        for p in places {
            assert!(p["mb_per_sec"].as_f64().unwrap() > 0.0, "{p}");
            assert!(p["parallel_mb_per_sec"].as_f64().unwrap() > 0.0, "{p}");
        }
        // The throttle (20 MB/s) really slowed the slow one, and only it.
        let median = d["median_mb_per_sec"].as_f64().unwrap();
        if d["device"] == slow.name().as_str() {
            assert!(median < 30.0, "{d}");
        } else {
            assert!(median > 100.0, "{d}");
        }
    }
    assert_eq!(bench["parallel"].as_array().unwrap().len(), 3);

    // The run record: one workload per device and place, alone and together.
    let run = &j["run"];
    assert_eq!(run["label"], "disks-bench");
    assert_eq!(run["status"], "complete");
    let names: Vec<&str> = run["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["workload"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 18, "{names:?}");
    assert!(names.contains(&format!("{}@start", slow.name()).as_str()));
    assert!(names.contains(&format!("{}@end:parallel", slow.name()).as_str()));
    for w in run["workloads"].as_array().unwrap() {
        assert_eq!(w["workload"]["kind"]["pattern"], "read");
        let t = &w["trials"][0];
        assert_eq!(t["accounting"]["errors"], 0);
        assert_eq!(t["accounting"]["submitted"], t["accounting"]["completed"]);
    }
    assert!(
        run["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with(&format!("SLOW {}", slow.name()))),
        "{}",
        run["notes"]
    );
}

#[test]
fn check_exits_zero_when_nothing_is_flagged() {
    require_root!();
    let a = Loop::new("check-a", 16 << 20, &[]);
    let b = Loop::new("check-b", 16 << 20, &[]);
    let (code, _, se) = Iolab::new()
        .args(["disks", "--check", a.path(), b.path()])
        .run()
        .parts();
    assert_eq!(code, 0, "census --check without temperatures: {se}");
    let (code, so, se) = Iolab::new()
        .args([
            "disks",
            "--bench",
            "--check",
            "--tolerance",
            "90%",
            "--time",
            "300ms",
            a.path(),
            b.path(),
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{so}{se}");
    assert!(so.contains("group 'loop (no model)': 2 devices"), "{so}");
    assert!(!so.contains("SLOW"), "{so}");
}

#[test]
fn bad_devices_and_flags_get_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").expect("write");
    let cases: [(&str, &str); 4] = [
        ("/dev/iolab-no-such-disk", "does not exist"),
        (file.to_str().unwrap(), "is not a block device"),
        ("/dev/null", "is not a block device"),
        (dir.path().to_str().unwrap(), "is not a block device"),
    ];
    for (dev, want) in cases {
        for args in [vec!["disks", dev], vec!["disks", "--bench", dev]] {
            let (code, so, se) = Iolab::new().args(&args).run().parts();
            assert_eq!(code, 2, "{args:?}: {se}");
            assert_eq!(se.lines().count(), 1, "one line: {se}");
            assert!(se.contains(want) && se.contains(dev), "{args:?}: {se}");
            assert!(so.is_empty());
        }
    }
    let (code, so, _) = Iolab::new()
        .args(["disks", "--json", "/dev/iolab-no-such-disk"])
        .run()
        .parts();
    assert_eq!(code, 2);
    assert_eq!(json(&so)["exit_code"], 2);
    for args in [
        vec!["disks", "--bench", "--tolerance", "0", "/dev/iolab-x"],
        vec!["disks", "--bench", "--tolerance", "fast"],
        vec!["disks", "--bench", "--time", "0s"],
        vec!["disks", "--bench", "--qd", "0"],
        vec!["disks", "--max-temp=-3"],
        vec!["disks", "--parallel"],
    ] {
        let (code, _, se) = Iolab::new().args(&args).run().parts();
        assert_eq!(code, 2, "{args:?}: {se}");
    }
}

/// The open flags (`flags:` of /proc/PID/fdinfo, octal) of every descriptor `pid` holds on
/// `dev` right now.
fn open_flags_on(pid: u32, dev: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return out;
    };
    for e in rd.flatten() {
        if std::fs::read_link(e.path()).ok().as_deref() != Some(dev) {
            continue;
        }
        let info = format!("/proc/{pid}/fdinfo/{}", e.file_name().to_string_lossy());
        let Ok(text) = std::fs::read_to_string(info) else {
            continue;
        };
        if let Some(f) = text
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        {
            out.push(f);
        }
    }
    out
}

#[test]
fn bench_never_opens_a_device_for_writing() {
    require_root!();
    // Watch the open flags of the running bench: read-only and O_DIRECT, every time.
    let rw = Loop::new("rw", 16 << 20, &[]);
    let before = std::fs::read(&rw.file).expect("read backing");
    let mut child = Iolab::new()
        .args(["disks", "--bench", "--time", "1s", rw.path()])
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut seen: Vec<u32> = Vec::new();
    while child.try_wait().expect("wait").is_none() {
        seen.extend(open_flags_on(child.id(), &rw.dev));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Out::new(
        "iolab disks --bench".into(),
        child.wait_with_output().expect("output"),
    )
    .success();
    assert!(!seen.is_empty(), "never saw the device open");
    for f in &seen {
        assert_eq!(
            f & libc::O_ACCMODE as u32,
            libc::O_RDONLY as u32,
            "opened with flags {f:o}"
        );
        assert_ne!(f & libc::O_DIRECT as u32, 0, "O_DIRECT missing: {f:o}");
    }
    assert_eq!(std::fs::read(&rw.file).expect("read backing"), before);

    // A read-only loop device (a disk image attached with losetup -r) reads fine too.
    let ro = Loop::new("ro", 16 << 20, &["--read-only"]);
    let before = std::fs::read(&ro.file).expect("read backing");
    let (code, so, se) = Iolab::new()
        .args(["disks", "--bench", "--time", "300ms", "--json", ro.path()])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let d = &json(&so)["bench"]["devices"][0];
    assert_eq!(d["error"], serde_json::Value::Null, "{d}");
    assert!(d["median_mb_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(std::fs::read(&ro.file).expect("read backing"), before);
}

#[test]
fn help_documents_exit_codes() {
    Iolab::new()
        .args(["disks", "--help"])
        .run()
        .success()
        .stdout_has("Exit status")
        .stdout_has("--tolerance");
}

/// A mount made by a test, unmounted on drop (also when an assertion fails).
struct Mounted(tempfile::TempDir);

impl Mounted {
    fn new(dev: &str) -> Mounted {
        let dir = tempfile::Builder::new()
            .prefix("iolab-test-disks-rot")
            .tempdir()
            .expect("tempdir");
        let o = Command::new("mount")
            .arg(dev)
            .arg(dir.path())
            .output()
            .expect("mount");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        Mounted(dir)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// A btrfs raid1 whose one copy of a file went bad under it (garbage written into
/// one member's backing file, where that file's first block lies), read back and scrubbed:
/// btrfs mends it from the other copy, and `iolab disks` names the checksum errors on the
/// struck member — and only there — as a user's real array would be asked.
#[test]
fn disks_names_the_checksum_errors_btrfs_counted_on_the_struck_member() {
    require_root!();
    require_tool!("mkfs.btrfs", apt = "btrfs-progs");
    require_tool!("btrfs", apt = "btrfs-progs");
    let a = Loop::new("rot-a", 160 << 20, &[]);
    let b = Loop::new("rot-b", 160 << 20, &[]);
    let o = Command::new("mkfs.btrfs")
        .args(["-q", "-f", "-d", "raid1", "-m", "raid1"])
        .args([a.path(), b.path()])
        .output()
        .expect("mkfs.btrfs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 1 MiB whose every 4 KiB block starts with its own marker: found on the member by its
    // first block.
    let data: Vec<u8> = (0..256u32)
        .flat_map(|i| {
            let mut blk = format!("iolab-rot-{i:08}-").into_bytes();
            blk.resize(4096, (i % 251) as u8 + 1);
            blk
        })
        .collect();
    {
        let m = Mounted::new(a.path());
        std::fs::write(m.path().join("f"), &data).expect("write the file");
        assert!(Command::new("sync").status().expect("sync").success());
    }
    // Strike the first block of the file on member a only.
    let mut img = std::fs::read(&a.file).expect("read member a");
    let at = img
        .windows(4096)
        .position(|w| w == &data[..4096])
        .expect("the file's first block on member a");
    img[at..at + 4096].fill(0x5a);
    std::fs::write(&a.file, &img).expect("strike member a");
    drop(img);

    let m = Mounted::new(a.path());
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
    let back = std::fs::read(m.path().join("f")).expect("btrfs reads the file back");
    assert!(back == data, "btrfs handed back wrong bytes");
    let o = Command::new("btrfs")
        .args(["scrub", "start", "-B"])
        .arg(m.path())
        .output()
        .expect("btrfs scrub");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let j = Iolab::new()
        .args(["disks", "--json", a.path(), b.path()])
        .run()
        .success()
        .json();
    let counters = j["counters"].as_array().expect("counters");
    assert_eq!(
        counters.len(),
        1,
        "only the struck member has a counter above zero: {counters:#?}"
    );
    let c = &counters[0];
    assert_eq!(c["device"], a.name().as_str(), "{c}");
    assert_eq!(c["layer"], "btrfs", "{c}");
    assert!(
        c["counters"]["corruption_errs"].as_u64().unwrap() >= 1,
        "{c}"
    );
    assert_eq!(c["counters"]["read_io_errs"], 0, "{c}");

    let (code, so, se) = Iolab::new()
        .args(["disks", a.path(), b.path()])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let line = format!(
        "  {}: btrfs at {}: corruption_errs ",
        a.name(),
        m.path().display()
    );
    assert!(so.contains(&line), "{so}");
    assert!(!so.contains(&format!("  {}: btrfs", b.name())), "{so}");

    // Asked for, every counter is shown: the healthy member's zeros too.
    let all = Iolab::new()
        .args(["disks", "--counters", "--json", a.path(), b.path()])
        .run()
        .success()
        .json();
    let healthy = all["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["device"] == b.name().as_str())
        .unwrap_or_else(|| panic!("{all:#}"));
    assert_eq!(healthy["counters"]["corruption_errs"], 0, "{healthy}");
}
