//! Small files, profiles and spec files through the real binary: phase counts, cleanup, fsync
//! really issued, profiles listed and printed as specs that read back, spec errors with
//! file:line:key, and a parser that no input can make panic.

mod common;

use common::*;
use proptest::prelude::*;

fn tmpdir() -> tempfile::TempDir {
    disk_tmpdir("iolab-wl-test")
}

fn phases(so: &str) -> serde_json::Value {
    json(so)["run"]["workloads"][0]["trials"][0].clone()
}

#[test]
fn smallfile_phases_count_every_file_and_clean_up() {
    let d = tmpdir();
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "smallfile",
            "--files",
            "500",
            "--dirs",
            "4",
            "--min-file-size",
            "1k",
            "--max-file-size",
            "8k",
            "--threads",
            "2",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let t = phases(&so);
    let names: Vec<&str> = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "create",
            "stat",
            "read_file",
            "delete",
            "rand_create",
            "rand_stat",
            "rand_delete"
        ]
    );
    for o in t["ops"].as_array().unwrap() {
        assert_eq!(o["count"], 500, "{}", o["op"]);
    }
    assert_eq!(t["accounting"]["syncs"], 0, "no fsync unless asked");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "every file and directory removed"
    );
}

#[test]
fn fsync_is_really_issued_when_asked() {
    let d = tmpdir();
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "smallfile",
            "--files",
            "200",
            "--dirs",
            "2",
            "--fsync",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    assert_eq!(
        phases(&so)["accounting"]["syncs"],
        400,
        "one per file in each of the two create phases"
    );
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "smallfile",
            "--files",
            "200",
            "--dirs",
            "2",
            "--fsync",
            "--fsync-dir",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    assert_eq!(
        phases(&so)["accounting"]["syncs"],
        1200,
        "file + dir per create, dir per delete"
    );
}

#[test]
fn fsync_counted_by_strace_matches() {
    require_tool!("strace", apt = "strace");
    let d = tmpdir();
    let strace_out = d.path().join("strace.out");
    Iolab::new()
        .wrap(
            "strace",
            [
                "-f",
                "-c",
                "-e",
                "trace=fsync,unlinkat,openat",
                "-o",
                strace_out.to_str().unwrap(),
            ],
        )
        .args(["run"])
        .arg(d.path())
        .args([
            "--pattern",
            "smallfile",
            "--files",
            "100",
            "--dirs",
            "1",
            "--fsync",
            "--repeat",
            "1",
            "--no-save",
        ])
        .run()
        .success();
    let s = std::fs::read_to_string(d.path().join("strace.out")).unwrap();
    let calls = |name: &str| -> u64 {
        s.lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(calls("fsync"), 200, "{s}");
    assert!(calls("unlinkat") >= 200, "{s}");
}

#[test]
fn smallfile_failure_removes_everything() {
    require_root!();
    // The set fits when checked; the disk is filled right after (IOLAB_PAUSE_AT).
    let m = MemMount::new("tmpfs", "size=64m");
    let mut p = common::Paused::spawn(
        Iolab::new().args([
            "run",
            m.dir.to_str().unwrap(),
            "--pattern",
            "smallfile",
            "--files",
            "2000",
            "--min-file-size",
            "4k",
            "--max-file-size",
            "8k",
            "--repeat",
            "1",
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
        "nothing left after the failure"
    );
}

#[test]
fn mail_profile_on_ext4_in_a_loop_device() {
    require_root!();
    require_tool!("mkfs.ext4", apt = "e2fsprogs");
    let mut l = LoopDev::new("mail", 256 << 20);
    let mnt = l.mkfs_and_mount("ext4");
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            mnt.to_str().unwrap(),
            "--profile",
            "mail",
            "--scale",
            "0.004",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let t = phases(&so);
    let n = (128.0_f64 * 1024.0 * 0.004).round() as u64;
    for o in t["ops"].as_array().unwrap() {
        assert_eq!(o["count"].as_u64().unwrap(), n);
    }
    assert_eq!(t["accounting"]["syncs"].as_u64().unwrap(), 2 * n);
    let entries: Vec<_> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "lost+found")
        .collect();
    assert!(entries.is_empty(), "{entries:?}");
}

#[test]
fn db_and_hdparm_and_backup_profiles_run() {
    let d = tmpdir();
    let dir = d.path().to_str().unwrap();
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            dir,
            "--profile",
            "db",
            "--size",
            "32MiB",
            "--time",
            "300ms",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let s = json(&so)["summary"].clone();
    assert_eq!(s.as_array().unwrap().len(), 3);
    let mixed = &s[2]["ops"];
    assert_eq!(
        mixed.as_array().unwrap().len(),
        2,
        "mix reports reads and writes separately"
    );
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            dir,
            "--profile",
            "hdparm",
            "--size",
            "32MiB",
            "--time",
            "300ms",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let s = json(&so)["summary"].clone();
    assert_eq!(s[0]["ops"][0]["op"], "cached_read");
    assert!(s[0]["ops"][0]["mb_per_sec_median"].as_f64().unwrap() > 0.0);
    assert_eq!(s[1]["ops"][0]["op"], "read");
    let j = Iolab::new()
        .args([
            "run",
            dir,
            "--profile",
            "backup",
            "--size",
            "16MiB",
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .success()
        .json();
    let w = &j["run"]["workloads"][0]["trials"][0];
    assert_eq!(w["ops"][0]["bytes"], 16 << 20);
    assert_eq!(w["accounting"]["syncs"], 1, "fdatasync at the end");
    assert_eq!(j["run"]["workloads"][1]["workload"]["drop_caches"], true);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

#[test]
fn profiles_are_listed_and_print_as_specs_that_run() {
    let (code, so, _) = Iolab::new().args(["profiles"]).run().parts();
    assert_eq!(code, 0);
    for p in ["default", "quick", "mail", "db", "backup", "hdparm"] {
        assert!(so.lines().any(|l| l.starts_with(p)), "{p} missing: {so}");
    }
    assert!(
        so.contains("files=4096 dirs=16 size=500..25000 fsync=true"),
        "{so}"
    );
    let (code, toml, _) = Iolab::new()
        .args(["profiles", "--show", "mail", "--scale", "0.002"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(toml.contains("files = 262"), "{toml}");
    let d = tmpdir();
    let spec = d.path().join("mail.toml");
    std::fs::write(&spec, &toml).unwrap();
    let work = d.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            work.to_str().unwrap(),
            "--spec",
            spec.to_str().unwrap(),
            "--repeat",
            "1",
            "--json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    assert_eq!(
        json(&so)["run"]["workloads"][0]["workload"]["name"],
        "mail-smallfiles"
    );
    Iolab::new()
        .args(["profiles", "--show", "nope"])
        .run()
        .code(2)
        .stderr_has("unknown profile");
}

#[test]
fn spec_file_errors_name_file_line_and_key() {
    let d = tmpdir();
    let cases = [
        ("[[workload]]\nname = \"a\"\nqd = 0\n", ":3: workload[1].qd"),
        ("[[workload]]\nname = \"a\"\nwat = 1\n", ":3:"),
        (
            "[[workload]]\npattern = \"smallfile\"\nmin_file_size = \"9k\"\nmax_file_size = \"1k\"\n",
            ":3: workload[1].min_file_size",
        ),
        ("[[workload]]\nbs = \"3000\"\nqd = \"x\"\n", ":3:"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let p = d.path().join(format!("s{i}.toml"));
        std::fs::write(&p, text).unwrap();
        let (code, _, se) = Iolab::new()
            .args([
                "run",
                d.path().to_str().unwrap(),
                "--spec",
                p.to_str().unwrap(),
            ])
            .run()
            .parts();
        assert_eq!(code, 2, "{text}: {se}");
        assert!(se.contains(needle), "{text}: {se}");
        assert_eq!(se.lines().count(), 1, "{se}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn the_spec_parser_never_panics(s in "\\PC{0,200}") {
        let _ = iolab::spec::parse_spec(&s, "fuzz.toml");
    }

    #[test]
    fn the_spec_parser_never_panics_on_spec_shaped_input(
        key in prop::sample::select(vec!["bs", "qd", "size", "time", "pattern", "read_pct", "files", "dirs", "min_file_size", "threads", "ramp", "io_size", "engine", "seed"]),
        val in prop::sample::select(vec!["0", "-1", "\"\"", "\"4k\"", "\"1e99G\"", "1.5", "true", "\"nan\"", "99999999999999999999", "\"-3s\"", "[1]", "{a=1}"]),
    ) {
        let text = format!("[[workload]]\n{key} = {val}\n");
        let _ = iolab::spec::parse_spec(&text, "fuzz.toml");
    }
}
