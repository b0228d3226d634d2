//! Silent corruption under file data, on the host's btrfs: garbage written onto one member
//! exactly where a file of the lab's data set lies (placed through btrfs's chunk tree, the map
//! checked against the member's own bytes before anything is struck), then every struck file
//! read back past the cache and the layout scrubbed. btrfs checksums every block, so with one
//! copy struck it must notice (its counters or its scrub) and every file must read back
//! intact; with every copy struck it must refuse to read the file (an IO error, the scrub's
//! uncorrectable count), never hand back the wrong bytes. Needs root, loop devices and btrfs; skips with a reason where the machine lacks
//! them.

mod common;
mod lab_world;
use lab_world::World;

macro_rules! need_root_and_btrfs {
    () => {
        lab_world::require_lab!(
            "losetup" => "mount",
            "mkfs.btrfs" => "btrfs-progs",
            "btrfs" => "btrfs-progs",
            "wipefs" => "util-linux",
        );
    };
}

/// A btrfs layout of `profile` over `members` disks with a 48MiB data set and one corrupt
/// fault of 256KiB placed under file data on `member`.
fn layout(name: &str, profile: &str, members: usize, member: usize) -> String {
    format!(
        "[[layout]]\nname = \"{name}\"\nbtrfs = {{ data = \"{profile}\", metadata = \"raid1\", members = {members} }}\n\
         fill = \"48MiB\"\n\
         faults = [{{ member = {member}, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\" }}]\n"
    )
}

/// btrfs raid1 with the same 64KiB struck on both copies: the first block of one file, on
/// each member.
const BOTH_COPIES: &str = "[[layout]]\nname = \"b1-both\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\n\
     fill = \"48MiB\"\n\
     faults = [{ member = 0, at = \"before_degrade\", kind = \"corrupt\", offset = \"file:.iolab-data/d0/f00000\", length = \"64KiB\" }, \
     { member = 1, at = \"before_degrade\", kind = \"corrupt\", offset = \"file:.iolab-data/d0/f00000\", length = \"64KiB\" }]\n";

/// Runs a lab of `layouts` over `disks` loop disks of 512MiB with one short sequential read,
/// and returns its JSON report once it exited 0, with the directory of its spec (`lab.toml`).
fn run_lab(w: &World, disks: usize, layouts: &str) -> (serde_json::Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("lab.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"bitrot\"\n[disks]\nloop = {{ count = {disks}, size = \"512MiB\", dir = \"{}\" }}\n{layouts}\
             [workloads]\nrepeat = 1\n[[workloads.workload]]\nname = \"sr\"\npattern = \"read\"\nbs = \"1M\"\ntime = \"100ms\"\nsize = \"8MiB\"\n",
            w.disk_dir.display(),
        ),
    )
    .unwrap();
    let (out, v) = w.lab_json(&spec, &[]);
    assert_eq!(
        out.code,
        0,
        "{}\n{}",
        World::layouts_summary(&v),
        out.stderr
    );
    (v, dir)
}

fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Every copy struck: nothing can heal it, and btrfs must say so — the file is unreadable
/// (an IO error), never handed back with wrong bytes, and the scrub counts it uncorrectable.
fn both_copies_struck(l: &serde_json::Value) {
    let faults = l["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 2, "{l:#}");
    for f in faults {
        assert!(f["error"].is_null(), "{f:#}");
        assert_eq!(f["fault"]["placed"], true, "{f:#}");
        common::every_struck_file_reads(
            &f["held"],
            "read error",
            "btrfs must not hand back a struck file without an error",
        );
    }
    let verdict = &l["integrity"]["verdict"];
    assert_eq!(verdict["kind"], "data_loss", "{verdict:#}");
    assert!(verdict["files"].as_u64().unwrap() >= 1, "{verdict:#}");
    assert!(
        verdict["silent"].is_null(),
        "btrfs returned wrong bytes silently: {verdict:#}"
    );
    let scrub = &l["integrity"]["scrubs"][0];
    assert!(
        scrub["errors"].as_u64().unwrap() >= 1,
        "the scrub found it uncorrectable: {scrub:#}"
    );
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario per profile, end to end
fn btrfs_heals_one_corrupted_copy_under_file_data_and_reports_every_copy_struck_as_unreadable() {
    need_root_and_btrfs!();
    let w = World::new("bitrot");
    let (v, dir) = run_lab(
        &w,
        3,
        &[
            layout("b1", "raid1", 2, 1),
            layout("b5", "raid5", 3, 1),
            BOTH_COPIES.to_string(),
        ]
        .concat(),
    );
    for l in v["layouts"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        assert_eq!(l["status"], "ok", "{name}: {l:#}");
        if name == "b1-both" {
            both_copies_struck(l);
            continue;
        }
        let f = &l["faults"][0];
        assert!(f["error"].is_null(), "{name}: {f:#}");
        assert_eq!(f["fault"]["placed"], true, "{name}: {f:#}");
        let held = &f["held"];
        // The range lies under file data, and the map was checked against the member's own
        // bytes before the garbage went in (the independent truth of the placement).
        assert!(held["files"].as_u64().unwrap() >= 1, "{name}: {held:#}");
        assert!(
            held["file_bytes"].as_u64().unwrap() >= 128 << 10,
            "{name}: a 256KiB window under data holds mostly file bytes: {held:#}"
        );
        let confirmed = held["confirmed"].as_str().unwrap_or_default();
        assert!(
            confirmed.contains("bytes at") && confirmed.contains(".iolab-data/"),
            "{name}: the map was not confirmed on the member: {held:#}"
        );
        // btrfs healed it: every struck file read back intact, the whole set verified.
        assert_eq!(held["lost"], 0, "{name}: {held:#}");
        assert_eq!(f["files_bad"], 0, "{name}: {f:#}");
        assert_eq!(
            l["integrity"]["verdict"]["kind"], "verified",
            "{name}: {:#}",
            l["integrity"]
        );
        // And it noticed, on the struck member only: either the read-back hit the bad copy
        // (its checksum errors counted there), or it read the good one and the scrub found
        // and corrected the bad one.
        let struck = base(f["device"].as_str().unwrap()).to_string();
        let stats = f["btrfs"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {f:#}"));
        assert_eq!(
            stats.len(),
            if name == "b1" { 2 } else { 3 },
            "{name}: {f:#}"
        );
        let mut at_read = 0;
        for d in stats {
            let n = d["corruption_errs"].as_u64().unwrap();
            if base(d["device"].as_str().unwrap()) == struck {
                at_read = n;
            } else {
                assert_eq!(
                    n, 0,
                    "{name}: checksum errors on a member not struck: {d:#}"
                );
            }
            assert_eq!(d["read_io_errs"], 0, "{name}: {d:#}");
        }
        let scrub = &l["integrity"]["scrubs"][0];
        assert_eq!(scrub["tool"], "btrfs scrub", "{name}: {scrub:#}");
        assert_eq!(
            scrub["errors"], 0,
            "{name}: nothing uncorrectable: {scrub:#}"
        );
        let corrected = scrub["corrected"].as_u64().unwrap();
        assert!(
            at_read > 0 || corrected > 0,
            "{name}: btrfs never noticed the garbage: read-back counted {at_read}, scrub corrected {corrected}"
        );
    }
    let spec = dir.path().join("lab.toml");
    let table = w.lab(&[
        spec.to_str().unwrap(),
        "--disk-dir",
        &w.disk_dir.to_string_lossy(),
    ]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("btrfs counted"),
        "the fault line says what btrfs counted:\n{}",
        table.stdout
    );
}

/// A btrfs layout of `profile` over `members` disks with one corrupt fault of 256KiB under
/// file data on member 1 and every copy of the struck bytes overwritten with it: on RAID5/6
/// the parity of the same full stripes (P, and Q on RAID6) too.
fn all_copies(name: &str, profile: &str, members: usize) -> String {
    format!(
        "[[layout]]\nname = \"{name}\"\nbtrfs = {{ data = \"{profile}\", metadata = \"raid1\", members = {members} }}\n\
         fill = \"48MiB\"\n\
         faults = [{{ member = 1, at = \"healthy\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\", copies = \"all\" }}]\n"
    )
}

/// btrfs RAID5 and RAID6 with the struck data column and the parity of its full stripes all
/// overwritten: nothing can rebuild the block, so no struck file may read back intact; each
/// is refused (EIO) or handed back wrong, and the lab says which. The parity placement is checked on the
/// members first (P the XOR of the data columns, Q their RAID6 syndrome) and seen changed
/// after the strike, so the test strikes what it says it strikes.
#[test]
fn btrfs_raid5_and_raid6_with_data_and_parity_struck_never_read_a_struck_file_back_intact() {
    need_root_and_btrfs!();
    let w = World::new("bitrot-parity");
    let (v, _spec) = run_lab(
        &w,
        4,
        &(all_copies("b5-all", "raid5", 3) + &all_copies("b6-all", "raid6", 4)),
    );
    for l in v["layouts"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        assert_eq!(l["status"], "ok", "{name}: {l:#}");
        let f = &l["faults"][0];
        assert!(f["error"].is_null(), "{name}: {f:#}");
        assert_eq!(f["fault"]["placed"], true, "{name}: {f:#}");
        let held = &f["held"];
        // The parity struck is where btrfs keeps it: found equal to what the data columns
        // compute before, and changed after.
        let parity = held["parity_checked"].as_str().unwrap_or_default();
        let (names, others) = if name == "b6-all" {
            (
                "P and Q of ",
                ["member 0", "member 2", "member 3"].as_slice(),
            )
        } else {
            ("P of ", ["member 0", "member 2"].as_slice())
        };
        assert!(
            parity.starts_with(names)
                && parity.contains("equal to what their data columns compute")
                && parity.contains("changed once struck"),
            "{name}: the parity was not checked on the members: {held:#}"
        );
        let desc = f["description"].as_str().unwrap();
        for m in others {
            assert!(desc.contains(m), "{name}: {m} not struck: {desc}");
        }
        let files = held["files"].as_u64().unwrap();
        assert!(files >= 1, "{name}: {held:#}");
        assert_eq!(
            held["lost"].as_u64(),
            Some(files),
            "{name}: every struck file is lost: {held:#}"
        );
        // Nothing healed any of them. btrfs refuses most (EIO); on kernel 6.18 its RAID5
        // read repair hands some back as zeroes without an error (the kernel logs `csum
        // failed ... mirror 1` and the read succeeds): the lab must count those as silent
        // corruption, never as intact.
        let mut silent = 0;
        for file in held["listed"].as_array().unwrap() {
            let after = file["after"].as_str().unwrap();
            if after.starts_with("silently wrong") {
                silent += 1;
            } else {
                assert!(
                    after.starts_with("read error"),
                    "{name}: a struck file came back neither refused nor wrong: {file:#}"
                );
            }
        }
        let verdict = &l["integrity"]["verdict"];
        assert_eq!(verdict["kind"], "data_loss", "{name}: {verdict:#}");
        if files as usize <= held["listed"].as_array().unwrap().len() {
            assert_eq!(
                verdict["silent"].as_u64().unwrap_or(0),
                silent,
                "{name}: the verdict counts the files handed back wrong: {verdict:#}"
            );
        }
        eprintln!("{name}: {files} struck files, {silent} handed back wrong without an error");
        let scrub = &l["integrity"]["scrubs"][0];
        assert!(
            scrub["errors"].as_u64().unwrap() >= 1,
            "{name}: the scrub found it uncorrectable: {scrub:#}"
        );
    }
}

/// btrfs raid1 over two disks with one failed (mounted degraded) and the one copy left struck
/// under a file: no redundancy is left to heal it, so the file must come back as a read error
/// (btrfs's checksum), never intact and never with the wrong bytes.
#[test]
fn btrfs_raid1_degraded_with_the_last_copy_struck_reports_a_read_error() {
    need_root_and_btrfs!();
    let w = World::new("bitrot-degraded");
    let (v, _spec) = run_lab(
        &w,
        2,
        "[[layout]]\nname = \"b1-degraded\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\n\
         fill = \"48MiB\"\ndegrade = true\n\
         faults = [{ member = 0, at = \"degraded\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\" }]\n",
    );
    let l = &v["layouts"][0];
    assert_eq!(l["status"], "ok", "{l:#}");
    // The member was failed before the fault, and the data read back whole while degraded.
    assert_eq!(l["degraded"]["data_verified"], true, "{:#}", l["degraded"]);
    let f = &l["faults"][0];
    assert!(f["error"].is_null(), "{f:#}");
    assert_eq!(f["fault"]["placed"], true, "{f:#}");
    assert!(
        f["description"]
            .as_str()
            .unwrap()
            .ends_with("while degraded"),
        "{f:#}"
    );
    let held = &f["held"];
    let confirmed = held["confirmed"].as_str().unwrap_or_default();
    assert!(
        confirmed.contains("bytes at") && confirmed.contains(".iolab-data/"),
        "the map was not confirmed on the member: {held:#}"
    );
    common::every_struck_file_reads(
        held,
        "read error",
        "degraded btrfs must not hand back a struck file without an error",
    );
    let verdict = &l["integrity"]["verdict"];
    assert_eq!(verdict["kind"], "data_loss", "{verdict:#}");
    assert!(
        verdict["silent"].is_null(),
        "btrfs returned wrong bytes silently: {verdict:#}"
    );
    // btrfs counted the checksum errors on the member left.
    let csum: u64 = f["btrfs"]
        .as_array()
        .unwrap_or_else(|| panic!("{f:#}"))
        .iter()
        .map(|d| d["corruption_errs"].as_u64().unwrap_or(0))
        .sum();
    assert!(csum >= 1, "btrfs counted no checksum error: {f:#}");
}
