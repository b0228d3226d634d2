//! `iolab run` on real files, directories and loop devices: counts balance, data is
//! incompressible, temp files go away, devices are protected, bad input gets one clear line.

mod common;

use common::*;

fn tmpdir() -> tempfile::TempDir {
    disk_tmpdir("iolab-run-test")
}

#[test]
fn counts_balance_and_histograms_count_every_io() {
    let d = tmpdir();
    let j = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "write",
            "--bs",
            "64k",
            "--qd",
            "8",
            "--io-size",
            "8MiB",
            "--size",
            "16MiB",
            "--repeat",
            "2",
            "--json",
        ])
        .run()
        .success()
        .json();
    let trials = j["run"]["workloads"][0]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    for t in trials {
        let acct = &t["accounting"];
        assert_eq!(acct["submitted"], acct["completed"]);
        assert_eq!(acct["errors"], 0);
        assert_eq!(acct["short"], 0);
        let w = &t["ops"][0];
        assert_eq!(w["op"], "write");
        assert_eq!(w["count"], 128, "8MiB / 64k");
        assert_eq!(w["bytes"], 8 << 20);
        assert_eq!(acct["submitted"], 128);
    }
    let s = &j["summary"][0]["ops"][0];
    assert_eq!(s["count"], 256);
    assert_eq!(s["latency"]["count"], 256, "one latency per IO");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "test file removed"
    );
}

#[test]
fn mixed_workload_reports_reads_and_writes_separately() {
    let d = tmpdir();
    let j = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "randrw",
            "--read-pct",
            "70",
            "--bs",
            "4k",
            "--qd",
            "16",
            "--io-size",
            "16MiB",
            "--size",
            "32MiB",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .success()
        .json();
    let ops = j["run"]["workloads"][0]["trials"][0]["ops"]
        .as_array()
        .unwrap();
    let r = ops.iter().find(|o| o["op"] == "read").unwrap()["count"]
        .as_u64()
        .unwrap();
    let w = ops.iter().find(|o| o["op"] == "write").unwrap()["count"]
        .as_u64()
        .unwrap();
    assert_eq!(r + w, 4096);
    let share = r as f64 / 4096.0;
    assert!((share - 0.70).abs() < 0.04, "read share {share}");
}

#[test]
fn written_data_is_not_zeros_and_not_repeating() {
    let d = tmpdir();
    let f = d.path().join("target.dat");
    std::fs::File::create(&f).unwrap();
    Iolab::new()
        .args([
            "run",
            f.to_str().unwrap(),
            "--pattern",
            "write",
            "--bs",
            "16k",
            "--size",
            "4MiB",
            "--repeat",
            "1",
        ])
        .run()
        .success();
    let data = std::fs::read(&f).unwrap();
    assert_eq!(data.len(), 4 << 20);
    let mut seen = std::collections::HashSet::new();
    for b in data.chunks(4096) {
        assert!(b.iter().any(|x| *x != 0), "a zero block");
        assert!(seen.insert(b.to_vec()), "a repeated 4k block");
    }
    // Incompressible: byte values are spread evenly.
    let mut hist = [0u64; 256];
    for x in &data {
        hist[*x as usize] += 1;
    }
    let expect = data.len() as f64 / 256.0;
    assert!(
        hist.iter()
            .all(|c| (*c as f64 - expect).abs() < expect * 0.1)
    );
    // A real compressor gains nothing, even though each write reused one IO slot (QD 1).
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &data).unwrap();
    let packed = z.finish().unwrap().len();
    assert!(
        packed as f64 > data.len() as f64 * 0.99,
        "compressed to {packed} of {}",
        data.len()
    );

    Iolab::new()
        .args([
            "run",
            f.to_str().unwrap(),
            "--pattern",
            "write",
            "--bs",
            "16k",
            "--size",
            "4MiB",
            "--repeat",
            "1",
            "--data",
            "zero",
        ])
        .run()
        .success();
    assert!(
        std::fs::read(&f).unwrap().iter().all(|x| *x == 0),
        "--data zero writes zeros"
    );
}

#[test]
fn default_target_is_a_temp_dir_that_goes_away() {
    let d = tmpdir();
    Iolab::new()
        .cwd(d.path())
        .args([
            "run",
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "300ms",
            "--repeat",
            "1",
        ])
        .run()
        .success()
        .stdout_has("randread");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "nothing left in the current directory"
    );
}

#[test]
fn same_seed_same_offsets_different_seed_different() {
    // With the null engine, the IO sequence is pure computation: same seed, same counts/series.
    let a = Iolab::new()
        .args([
            "run",
            "--engine",
            "null",
            "--pattern",
            "randrw",
            "--io-size",
            "4MiB",
            "--size",
            "1GiB",
            "--seed",
            "7",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    let b = Iolab::new()
        .args([
            "run",
            "--engine",
            "null",
            "--pattern",
            "randrw",
            "--io-size",
            "4MiB",
            "--size",
            "1GiB",
            "--seed",
            "7",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    let c = Iolab::new()
        .args([
            "run",
            "--engine",
            "null",
            "--pattern",
            "randrw",
            "--io-size",
            "4MiB",
            "--size",
            "1GiB",
            "--seed",
            "8",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    let reads = |s: &str| {
        json(s)["run"]["workloads"][0]["trials"][0]["ops"][0]["count"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(reads(&a.1), reads(&b.1));
    assert_ne!(reads(&a.1), reads(&c.1));
}

#[test]
fn fsync_every_write_issues_one_sync_per_write() {
    let d = tmpdir();
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "randwrite",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--fsync-every",
            "1",
            "--io-size",
            "400k",
            "--size",
            "8MiB",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let t = &json(&so)["run"]["workloads"][0]["trials"][0];
    assert_eq!(t["accounting"]["syncs"], 100);
    let sync = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "sync")
        .unwrap()
        .clone();
    assert_eq!(sync["count"], 100);
}

#[test]
fn fsync_at_end_is_timed_once() {
    let d = tmpdir();
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "write",
            "--bs",
            "1m",
            "--fsync-at-end",
            "--io-size",
            "8MiB",
            "--size",
            "8MiB",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let t = &json(&so)["run"]["workloads"][0]["trials"][0];
    assert_eq!(t["accounting"]["syncs"], 1);
}

#[test]
fn json_carries_system_facts_and_parameters() {
    let d = tmpdir();
    let j = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "200ms",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .success()
        .json();
    let r = &j["run"];
    assert!(!r["system"]["kernel"].as_str().unwrap().is_empty());
    assert!(r["system"]["cpus"].as_u64().unwrap() >= 1);
    assert!(r["system"]["ram_bytes"].as_u64().unwrap() > 0);
    assert!(r["target"]["fs_type"].as_str().is_some());
    assert!(r["target"]["mount_options"].as_str().is_some());
    let w = &r["workloads"][0]["workload"];
    assert_eq!(w["kind"]["pattern"], "randread");
    assert_eq!(w["kind"]["block_size"], 4096);
    assert_eq!(w["kind"]["direct"], true);
    assert_eq!(r["status"], "complete");
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let d = tmpdir();
    let dir = d.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "/nonexistent/iolab/target", "--pattern", "read"],
            "does not exist",
        ),
        (&["run", dir, "--pattern", "read", "--bs", "0"], "--bs"),
        (&["run", dir, "--pattern", "read", "--qd", "0"], "--qd"),
        (
            &[
                "run",
                dir,
                "--pattern",
                "read",
                "--bs",
                "4k",
                "--size",
                "1k",
            ],
            "--size",
        ),
        (&["run", dir, "--pattern", "sideways"], "--pattern"),
        (
            &["run", dir, "--pattern", "read", "--size", "lots"],
            "--size",
        ),
        (
            &["run", dir, "--pattern", "read", "--time", "forever"],
            "--time",
        ),
        (
            &[
                "run",
                dir,
                "--pattern",
                "read",
                "--bs",
                "1000",
                "--size",
                "1MiB",
            ],
            "multiple of",
        ),
        (&["run", dir, "--profile", "nope"], "unknown profile"),
        (&["run", dir, "--repeat", "0"], "--repeat"),
    ];
    for (args, needle) in cases {
        let (code, so, se) = Iolab::new().args(*args).run().parts();
        assert_eq!(code, 2, "{args:?}: exit {code}, stderr {se}");
        let err: Vec<&str> = se
            .lines()
            .filter(|l| l.starts_with("iolab: error"))
            .collect();
        assert_eq!(err.len(), 1, "{args:?}: {se}");
        assert!(err[0].contains(needle), "{args:?}: {se}");
        assert!(so.is_empty(), "{args:?}: stdout {so}");
        assert!(!se.contains("panicked"), "{se}");
    }
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "no temp file left"
    );
}

#[test]
fn json_mode_prints_a_json_error() {
    let j = Iolab::new()
        .args(["run", "/nonexistent/x", "--json"])
        .run()
        .code(2)
        .json();
    assert!(j["error"].as_str().unwrap().contains("does not exist"));
}

#[test]
fn no_permission_is_a_clear_error() {
    require_root!();
    require_tool!("setpriv", apt = "util-linux");
    let d = tmpdir();
    Iolab::new()
        .wrap(
            "setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups"],
        )
        .arg("run")
        .arg(d.path())
        .args(["--pattern", "write", "--size", "1MiB"])
        .run()
        .code(2)
        .stderr_has("no permission");
}

#[test]
fn device_writes_need_destroy_and_mounted_devices_are_refused() {
    require_root!();
    require_tool!("mkfs.ext4", apt = "e2fsprogs");
    let mut l = LoopDev::new("destroy", 64 << 20);
    let other = LoopDev::new("other", 16 << 20);
    // Reads are fine on an unmounted device.
    Iolab::new()
        .args([
            "run",
            l.path(),
            "--pattern",
            "randread",
            "--time",
            "200ms",
            "--repeat",
            "1",
        ])
        .run()
        .success();
    // Writes are refused without --destroy, and with --destroy naming another device.
    Iolab::new()
        .args(["run", l.path(), "--pattern", "write", "--time", "200ms"])
        .run()
        .code(2)
        .stderr_has("--destroy");
    Iolab::new()
        .args([
            "run",
            l.path(),
            "--pattern",
            "write",
            "--time",
            "200ms",
            "--destroy",
            other.path(),
        ])
        .run()
        .code(2)
        .stderr_has("does not match");
    // With --destroy naming it: written, and the data is random.
    Iolab::new()
        .args([
            "run",
            l.path(),
            "--pattern",
            "write",
            "--bs",
            "1m",
            "--io-size",
            "8MiB",
            "--repeat",
            "1",
            "--destroy",
            l.path(),
        ])
        .run()
        .success();
    let head = std::fs::read(&l.file).unwrap();
    assert!(head[..1 << 20].iter().any(|b| *b != 0));
    // Mounted: refused for reads and writes alike, even with --destroy.
    let _mnt = l.mkfs_and_mount("ext4");
    Iolab::new()
        .args(["run", l.path(), "--pattern", "read", "--time", "200ms"])
        .run()
        .code(2)
        .stderr_has("is mounted");
    Iolab::new()
        .args(["run", l.path(), "--pattern", "write", "--destroy", l.path()])
        .run()
        .code(2)
        .stderr_has("is mounted");
}

/// The suite is checked against the target in the library (`session::prepare`), as
/// it was in the command line: small files on a block device are refused with a usage error
/// before anything is written, even with `--destroy`.
#[test]
fn small_files_on_a_block_device_are_refused_before_any_write() {
    require_root!();
    let l = LoopDev::new("smallfiles", 16 << 20);
    Iolab::new()
        .args([
            "run",
            l.path(),
            "--pattern",
            "smallfile",
            "--files",
            "16",
            "--destroy",
            l.path(),
            "--no-save",
        ])
        .run()
        .code(2)
        .stderr_has("small-file workload needs a directory on a filesystem");
    let head = std::fs::read(&l.file).unwrap();
    assert!(head.iter().all(|b| *b == 0), "nothing written");
}

#[test]
fn io_on_a_real_xfs_loop_device() {
    require_root!();
    require_tool!("mkfs.xfs", apt = "xfsprogs");
    let mut l = LoopDev::new("xfs", 512 << 20);
    let mnt = l.mkfs_and_mount("xfs");
    let j = Iolab::new()
        .args([
            "run",
            mnt.to_str().unwrap(),
            "--quick",
            "--size",
            "64MiB",
            "--time",
            "300ms",
            "--json",
        ])
        .run()
        .success()
        .json();
    assert_eq!(j["run"]["target"]["fs_type"], "xfs");
    let devs = j["run"]["target"]["devices"].as_array().unwrap();
    assert!(
        devs.iter()
            .any(|d| d["name"].as_str().unwrap().starts_with("loop")),
        "{devs:?}"
    );
    assert_eq!(j["summary"].as_array().unwrap().len(), 7);
    for w in j["summary"].as_array().unwrap() {
        for o in w["ops"].as_array().unwrap() {
            assert!(o["ops_per_sec_median"].as_f64().unwrap() > 0.0, "{w}");
        }
    }
    assert_eq!(
        std::fs::read_dir(&mnt).unwrap().count(),
        0,
        "test file removed"
    );
}

#[test]
fn disk_full_is_reported_and_the_file_removed() {
    require_root!();
    // The working set fits when checked; the disk is filled behind iolab's back right after
    // (IOLAB_PAUSE_AT), so the write itself hits ENOSPC.
    let m = MemMount::new("tmpfs", "size=64m");
    let mut p = common::Paused::spawn(
        Iolab::new().args([
            "run",
            m.dir.to_str().unwrap(),
            "--pattern",
            "write",
            "--size",
            "16MiB",
            "--io-size",
            "16MiB",
        ]),
        "target resolved",
    );
    assert!(p.wait_paused("target resolved", 30));
    let filler = common::fill_fs(&m.dir, 1 << 20);
    p.signal("-CONT");
    let (code, err) = p.finish();
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("disk full"), "{err}");
    assert_eq!(
        std::fs::read_dir(&m.dir).unwrap().count(),
        0,
        "test file removed"
    );
}

#[test]
fn filesystem_without_o_direct_falls_back_to_buffered_and_says_so() {
    require_root!();
    let m = MemMount::new("ramfs", "");
    let j = Iolab::new()
        .args([
            "run",
            m.dir.to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "200ms",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .success()
        .stderr_has("O_DIRECT is not supported")
        .stderr_has("fits in RAM")
        .json();
    assert!(
        j["run"]["workloads"][0]["trials"][0]["notes"]
            .to_string()
            .contains("O_DIRECT")
    );
}

/// At low depth io_uring waits by spinning (the wake-up of a sleeping thread cost as
/// much as a fast device's IO, and iolab ran at half of fio's QD 1 rate); the run says so, and
/// `--wait block` sleeps. A deep queue starts asleep and spins only where its timed
/// comparisons found spinning faster (learned, so either is right on a given
/// machine; the note then counts the comparisons).
#[test]
fn low_depth_waits_spin_and_say_so_deep_ones_spin_only_where_timed_faster_and_block_sleeps() {
    let d = tmpdir();
    let dir = d.path().to_str().unwrap();
    let notes = |extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args = vec![
            "run",
            dir,
            "--pattern",
            "randread",
            "--bs",
            "4k",
            "--size",
            "16MiB",
            "--time",
            "300ms",
            "--repeat",
            "1",
            "--json",
            "--no-save",
        ];
        args.extend_from_slice(extra);
        let j = Iolab::new().args(args).run().success().json();
        j["run"]["workloads"][0]["trials"][0]["notes"]
            .as_array()
            .unwrap()
            .clone()
    };
    // The spin note is typed: its kind and figures, not only its words.
    let spun = |n: &[serde_json::Value]| {
        n.iter().any(|n| {
            n["kind"] == "spun"
                && n["text"].as_str().unwrap().contains("by spinning")
                && n["found"].as_u64().unwrap() <= n["waits"].as_u64().unwrap()
        })
    };
    let qd1 = notes(&["--qd", "1"]);
    assert!(spun(&qd1), "{qd1:?}");
    assert!(!spun(&notes(&["--qd", "1", "--wait", "block"])));
    // 64 in flight: auto's prior is to sleep; it spins only in its timed comparisons (and
    // where spinning won them), so a spin note there says how many it made.
    let qd64 = notes(&["--qd", "64"]);
    assert!(
        qd64.iter()
            .filter(|n| n["kind"] == "spun")
            .all(|n| n["compared"].as_u64().unwrap_or(0) > 0),
        "{qd64:?}"
    );
    assert!(spun(&notes(&["--qd", "64", "--wait", "spin"])));
    assert!(!spun(&notes(&["--qd", "1", "--engine", "psync"])));
    let (code, _, se) = Iolab::new()
        .args(["run", dir, "--pattern", "read", "--wait", "sometimes"])
        .run()
        .parts();
    assert_eq!(code, 2, "{se}");
    assert!(se.contains("--wait"), "{se}");
}

/// The first screen was mostly one note, the spin note of every trial (21 of 33
/// lines of a default run). A note about the engine working as designed is off the default
/// screen (stdout and stderr), one line with its count under `--verbose`, and in the JSON:
/// each trial's typed note and the merged line. A caveat several trials wrote is one line
/// with its count.
#[test]
fn the_spin_note_is_one_line_with_its_count_in_verbose_and_json_and_off_the_default_screen() {
    let d = tmpdir();
    let dir = d.path().to_str().unwrap();
    // The quick suite, short: 7 workloads x 2 trials; the io_uring ones at low depth spin.
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "run",
            dir,
            "--quick",
            "--time",
            "200ms",
            "--size",
            "16MiB",
            "--repeat",
            "2",
            "--no-save",
        ];
        v.extend_from_slice(extra);
        v
    };
    let spin = "io_uring waited for completions by spinning";
    let (code, out, err) = Iolab::new().args(args(&[])).run().parts();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rand-read-4k-qd1"), "{out}");
    assert!(!out.contains(spin) && !err.contains(spin), "{out}{err}");

    let (code, out, err) = Iolab::new().args(args(&["--verbose"])).run().parts();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(spin)).collect();
    assert_eq!(lines.len(), 1, "{out}");
    // The count is the trials that spun: the default --wait auto spins at low depth, so every
    // io_uring trial of the quick suite here (its deepest is 32 IOs in flight).
    let n: u32 = lines[0]
        .split(" in ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no count in {:?}", lines[0]));
    assert!((2..=14).contains(&n), "{}", lines[0]);
    assert!(
        lines[0].starts_with("note: ") && lines[0].contains(" trials ("),
        "{}",
        lines[0]
    );

    let j = Iolab::new().args(args(&["--json"])).run().success().json();
    assert!(!j.to_string().is_empty());
    let trials: Vec<&serde_json::Value> = j["run"]["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["trials"].as_array().unwrap())
        .collect();
    assert_eq!(trials.len(), 14);
    let spun = trials
        .iter()
        .filter(|t| {
            t["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["kind"] == "spun")
        })
        .count();
    assert!(spun >= 2, "{spun} trials spun");
    let merged = j["as_designed_notes"].as_array().unwrap();
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert!(
        merged[0]
            .as_str()
            .unwrap()
            .contains(&format!("{spin} in {spun} trials")),
        "{merged:?}"
    );
    assert!(
        !j["run"]["notes"].to_string().contains(spin),
        "the run's own notes are what every screen shows: {}",
        j["run"]["notes"]
    );
}

/// Busy loops pinned to one CPU, killed (by their own pid) when dropped.
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    fn on_cpu(cpu: &str, n: usize) -> Hogs {
        Hogs(
            (0..n)
                .map(|_| {
                    std::process::Command::new("taskset")
                        .args(["-c", cpu, "sh", "-c", "while :; do :; done"])
                        .spawn()
                        .expect("taskset starts a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Workers kept from their CPUs is a warning about the figures, so the default screen
/// says it, once for all the trials that wrote it: iolab and two busy loops on one CPU make every
/// trial wait, and the table ends with one line counting them and the worst share, not one line
/// per trial; the JSON keeps each trial's typed note with its share.
#[test]
fn cpu_waits_of_every_trial_are_one_line_on_the_default_screen() {
    require_tool!("taskset", apt = "util-linux");
    let d = tmpdir();
    let dir = d.path().to_str().unwrap();
    // The first CPU this test may use (a container's cpuset need not hold CPU 0).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let cpu = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|l| l.trim().split([',', '-']).next())
        .unwrap()
        .to_string();
    let _hogs = Hogs::on_cpu(&cpu, 2);
    let args = [
        "run",
        dir,
        "--pattern",
        "randread",
        "--qd",
        "1",
        "--size",
        "8MiB",
        "--time",
        "300ms",
        "--repeat",
        "3",
        "--no-save",
    ];
    let out = Iolab::new()
        .wrap("taskset", ["-c", cpu.as_str()])
        .args(args)
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let wait = "workers waited for a CPU";
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.contains(wait)).collect();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert!(
        lines[0].starts_with(&format!("note: {wait} in 3 trials ("))
            && lines[0].contains("at worst"),
        "{}",
        lines[0]
    );
    let j = Iolab::new()
        .wrap("taskset", ["-c", cpu.as_str()])
        .args(args)
        .arg("--json")
        .run()
        .success()
        .json();
    let shares: Vec<u64> = j["run"]["workloads"][0]["trials"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["notes"].as_array().unwrap())
        .filter(|n| n["kind"] == "cpu_wait")
        .map(|n| n["share_ppm"].as_u64().unwrap())
        .collect();
    assert_eq!(shares.len(), 3, "{j:#}");
    assert!(shares.iter().all(|&s| s >= 10_000), "{shares:?}");
    let notes = j["run"]["notes"].to_string();
    assert_eq!(notes.matches(wait).count(), 1, "{notes}");
}

/// A caveat every trial writes is said once with its count: O_DIRECT on a ramfs.
#[test]
fn a_caveat_of_every_trial_is_one_line_with_its_count() {
    require_root!();
    let m = MemMount::new("ramfs", "");
    let (code, out, err) = Iolab::new()
        .args([
            "run",
            m.dir.to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "100ms",
            "--repeat",
            "3",
            "--no-save",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("O_DIRECT is not supported"))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].ends_with("(in 3 trials)"), "{out}");
}

/// The engine stage decides the io_uring -> psync fallback, and the run record still
/// says which engine ran. A ring for 32768 IOs (plus the flush slot: 65536 entries) is larger
/// than any kernel allows, so io_uring's setup fails for real and psync runs at depth 1.
#[test]
fn an_io_uring_ring_the_kernel_refuses_runs_on_psync_and_says_so() {
    let d = tmpdir();
    let j = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "randread",
            "--engine",
            "io_uring",
            "--qd",
            "32768",
            "--size",
            "16MiB",
            "--time",
            "200ms",
            "--repeat",
            "1",
            "--json",
            "--no-save",
        ])
        .run()
        .success()
        .json();
    let t = &j["run"]["workloads"][0]["trials"][0];
    let notes = t["notes"].to_string();
    assert!(
        notes.contains("io_uring engine was not available: ran with psync"),
        "{notes}"
    );
    assert!(notes.contains("queue depth 32768 ran as 1"), "{notes}");
    assert!(
        t["ops"][0]["count"].as_u64().unwrap() > 0,
        "psync did the IO"
    );
}

/// 1 MiB writes at QD 128 x 4 threads peaked at 1.07 GB (the slot buffers were held
/// beside the data pool writes are issued from); fio holds one buffer per IO in flight. A
/// write-only workload now holds what its IOs in flight need: threads x QD x block.
#[test]
fn large_writes_hold_one_buffer_per_io_in_flight() {
    let d = tmpdir();
    let (threads, qd, bs) = (2u64, 64u64, 1u64 << 20);
    let mut c = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "write",
            "--bs",
            "1m",
            "--qd",
            "64",
            "--threads",
            "2",
            "--size",
            "256MiB",
            "--time",
            "1s",
            "--repeat",
            "1",
            "--no-save",
        ])
        .command();
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Reaped by wait4 below, which also gives its peak RSS (std's wait does not).
    #[allow(clippy::zombie_processes)]
    let child = c.spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, with valid pointers to locals.
    let r = unsafe { libc::wait4(child.id() as i32, &raw mut status, 0, &raw mut ru) };
    assert_eq!(r, child.id() as i32);
    assert_eq!(status, 0, "iolab exit status");
    let peak = ru.ru_maxrss as u64 * 1024;
    let in_flight = threads * qd * bs;
    assert!(
        peak < in_flight + in_flight / 4 + (64 << 20),
        "peak RSS {} MiB for {} MiB in flight",
        peak >> 20,
        in_flight >> 20
    );
}
