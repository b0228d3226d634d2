//! Silent corruption on ZFS, in the VM: garbage written under a file of the lab's data set on
//! one member — placed through ZFS's own block pointers (`zdb`: the file's DVAs, the mirror
//! child or the raidz data column that holds the bytes, past the labels and the partition ZFS
//! made), the map checked against the member's own bytes before anything is struck — then
//! every struck file read back past the ARC (the lab's datasets cache only metadata) and the
//! pool scrubbed. ZFS checksums every block: with one copy or column struck it must notice
//! (`zpool status` CKSUM on the struck member, or the scrub's repaired bytes) and every file
//! must read back intact.
//!
//! Needs root, the VM lab's packages (see tests/vm.rs) and the zfs module cached by
//! `scripts/zfs-module`; skips with the reason otherwise.

mod common;

use std::sync::LazyLock;

use common::vm::{SEQ_WRITE_1M, VmLab, layout, workloads_tail, zfs_vm_or_skip};

/// One corrupt fault of 256 KiB under file data on member 1, `copies` as given.
fn fault(copies: &str) -> String {
    format!(
        "faults = [{{ member = 1, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\", copies = \"{copies}\" }}]\n"
    )
}

/// Every layout of the one lab run: a ZFS mirror and a raidz1, each with one copy (column)
/// struck and with every copy struck (the raidz1's data column confirmed under the file
/// first, then the parity rows), md RAID6 with one copy struck, and md RAID1, RAID5 and
/// RAID6 with every copy and the parity struck (P and Q checked on the members first). Each
/// ZFS layout costs minutes under emulation, md's seconds; one boot for all.
fn layouts() -> String {
    let z = |name: &str, vdev: &str, width: u32, copies: &str| {
        format!(
            "[[layout]]\nname = \"{name}\"\nzfs = {{ vdev = \"{vdev}\", width = {width}, pool = {{ ashift = 12 }}, dataset = {{ compression = \"off\" }} }}\nfill = \"8MiB\"\n{}\n",
            fault(copies)
        )
    };
    let md = |name: &str, level: u32, members: u32, copies: &str| {
        format!(
            "[[layout]]\nname = \"{name}\"\nmdadm = {{ level = {level}, members = {members}, assume_clean = true }}\nfs = \"ext4\"\nfill = \"8MiB\"\n{}\n",
            fault(copies)
        )
    };
    [
        z("zmirror", "mirror", 2, "one"),
        z("zmirror-all", "mirror", 2, "all"),
        z("zraidz1", "raidz1", 3, "one"),
        z("zraidz1-all", "raidz1", 3, "all"),
        md("md6", 6, 4, "one"),
        md("md1-all", 1, 2, "all"),
        md("md5-all", 5, 3, "all"),
        md("md6-all", 6, 4, "all"),
    ]
    .concat()
}

/// The one lab run every test here reads (one VM boot for all of them).
static LAB: LazyLock<Option<serde_json::Value>> = LazyLock::new(|| {
    if !zfs_vm_or_skip(&[("zpool", "zfsutils-linux"), ("zdb", "zfsutils-linux")]) {
        return None;
    }
    let lab = VmLab::new("iolab-vmzfsrot");
    let spec = lab.spec(&(layouts() + &workloads_tail("4MiB", "200ms", &[SEQ_WRITE_1M])));
    let (code, v, stderr) = lab.run(&spec, "bitrot per layout");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    lab.assert_nothing_left();
    Some(v)
});

/// The layout `name` of the lab run, `None` when the machine cannot run it (skipped).
fn lab_layout(name: &str) -> Option<serde_json::Value> {
    LAB.as_ref().map(|v| layout(v, name).clone())
}

fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// One copy or column struck: placed and confirmed under file data, every file intact, and
/// ZFS noticed on the struck member only (CKSUM at the read-back, or the scrub repaired it).
fn one_copy_healed(l: &serde_json::Value, name: &str) {
    assert_eq!(l["status"], "ok", "{name}: {l:#}");
    let f = &l["faults"][0];
    assert!(f["error"].is_null(), "{name}: {f:#}");
    assert_eq!(f["fault"]["placed"], true, "{name}: {f:#}");
    let held = &f["held"];
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
    assert_eq!(held["lost"], 0, "{name}: {held:#}");
    for file in held["listed"].as_array().unwrap() {
        assert_eq!(file["after"], "intact", "{name}: {file:#}");
    }
    assert_eq!(f["files_bad"], 0, "{name}: {f:#}");
    assert_eq!(
        l["integrity"]["verdict"]["kind"], "verified",
        "{name}: {:#}",
        l["integrity"]
    );
    let struck = base(f["device"].as_str().unwrap()).to_string();
    let devices = f["zpool"]["devices"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no zpool status on the fault: {f:#}"));
    let mut at_read = 0;
    for d in devices {
        let dev = base(d["name"].as_str().unwrap());
        let n = d["cksum"].as_u64().unwrap();
        if dev.starts_with(&struck) {
            at_read = n;
        } else {
            assert_eq!(
                n, 0,
                "{name}: checksum errors on a member not struck: {d:#}"
            );
        }
        assert_eq!(d["read"], 0, "{name}: {d:#}");
    }
    let scrub = &l["integrity"]["scrubs"][0];
    assert_eq!(scrub["tool"], "zpool scrub", "{name}: {scrub:#}");
    assert_eq!(scrub["errors"], 0, "{name}: nothing unrepaired: {scrub:#}");
    let repaired = scrub["counters"]["repaired_bytes"].as_u64().unwrap();
    assert!(
        at_read > 0 || repaired > 0,
        "{name}: ZFS never noticed the garbage: read-back counted {at_read} checksum errors, scrub repaired {repaired} bytes"
    );
    eprintln!(
        "{name}: {} files struck, CKSUM at read-back {at_read}, scrub repaired {repaired} bytes",
        held["files"]
    );
}

/// The fault's held files after every copy was struck: each read back as `want` (`read
/// error` or `silently wrong`), none intact, and the other copies were struck too.
fn every_copy_lost(l: &serde_json::Value, name: &str, want: &str) {
    assert_eq!(l["status"], "ok", "{name}: {l:#}");
    let f = &l["faults"][0];
    assert!(f["error"].is_null(), "{name}: {f:#}");
    assert_eq!(f["fault"]["copies"], "all", "{name}: {f:#}");
    assert!(
        f["description"]
            .as_str()
            .unwrap()
            .contains("and the other copies:"),
        "{name}: {f:#}"
    );
    let held = &f["held"];
    let files = common::every_struck_file_reads(held, want, name);
    let verdict = &l["integrity"]["verdict"];
    assert_eq!(verdict["kind"], "data_loss", "{name}: {verdict:#}");
    eprintln!("{name}: {files} files struck on every copy: {verdict:#}");
}

#[test]
fn zfs_mirror_heals_one_corrupted_copy_and_counts_it() {
    if let Some(l) = lab_layout("zmirror") {
        one_copy_healed(&l, "zmirror");
    }
}

/// One raidz1 data column struck: ZFS rebuilds the block from the other column and parity
/// when the checksum fails, counts it on the struck member, and every file reads back intact.
#[test]
fn zfs_raidz1_heals_one_corrupted_column_and_counts_it() {
    if let Some(l) = lab_layout("zraidz1") {
        one_copy_healed(&l, "zraidz1");
    }
}

/// Every copy struck: ZFS refuses the file (EIO) rather than hand back wrong bytes, counts
/// the checksum errors and lists the file among its permanent errors; the scrub cannot
/// repair it.
fn zfs_every_copy(name: &str) {
    let Some(l) = lab_layout(name) else {
        return;
    };
    every_copy_lost(&l, name, "read error");
    let verdict = &l["integrity"]["verdict"];
    assert!(
        verdict["silent"].is_null(),
        "{name}: ZFS returned wrong bytes silently: {verdict:#}"
    );
    let st = &l["faults"][0]["zpool"];
    let cksum: u64 = st["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["cksum"].as_u64().unwrap())
        .sum();
    assert!(cksum > 0, "{name}: {st:#}");
    let scrub = &l["integrity"]["scrubs"][0];
    assert!(
        scrub["errors"].as_u64().unwrap() > 0,
        "{name}: the scrub could not repair it: {scrub:#}"
    );
    eprintln!(
        "{name}: CKSUM {cksum}, permanent errors {}, scrub {scrub:#}",
        st["permanent"]
    );
}

#[test]
fn zfs_mirror_with_every_copy_corrupted_refuses_the_file_never_returns_wrong_bytes() {
    zfs_every_copy("zmirror-all");
}

#[test]
fn zfs_raidz1_with_every_column_corrupted_refuses_the_file_never_returns_wrong_bytes() {
    zfs_every_copy("zraidz1-all");
}

/// md RAID6 reads a data chunk without P or Q, as RAID5 does: one struck copy comes back
/// wrong with no error, and only md's check counts it.
#[test]
fn md_raid6_hands_one_corrupted_copy_back_silently_and_only_its_check_counts_it() {
    let Some(l) = lab_layout("md6") else {
        return;
    };
    assert_eq!(l["status"], "ok", "{l:#}");
    let f = &l["faults"][0];
    assert!(f["error"].is_null(), "{f:#}");
    let held = &f["held"];
    common::every_struck_file_reads(held, "silently wrong", "md6");
    let verdict = &l["integrity"]["verdict"];
    assert!(verdict["silent"].as_u64().unwrap() >= 1, "{verdict:#}");
    let sc = &l["integrity"]["scrubs"][0];
    assert_eq!(sc["tool"], "md check", "{sc:#}");
    assert!(
        sc["counters"]["mismatch_cnt"].as_u64().unwrap() > 0,
        "{sc:#}"
    );
    eprintln!("md6: held {held:#} scrubs {:#}", l["integrity"]["scrubs"]);
}

/// Every copy struck on md (both mirrors; the data chunk and P, and Q on RAID6): md reads
/// data without checking it against anything, so each struck file comes back wrong with no
/// error — silently wrong, never a read error and never intact — and the verdict counts it.
#[test]
fn md_raid1_5_6_with_every_copy_corrupted_hand_the_file_back_silently_wrong() {
    for name in ["md1-all", "md5-all", "md6-all"] {
        let Some(l) = lab_layout(name) else {
            return;
        };
        every_copy_lost(&l, name, "silently wrong");
        let verdict = &l["integrity"]["verdict"];
        let files = l["faults"][0]["held"]["files"].as_u64().unwrap();
        assert!(
            verdict["silent"].as_u64().unwrap() >= files,
            "{name}: {verdict:#}"
        );
        // RAID5/6: P (and Q) found where md's layout puts them, equal to what the data chunks
        // compute, before anything was struck, and changed after.
        let parity = l["faults"][0]["held"]["parity_checked"]
            .as_str()
            .unwrap_or_default();
        if name == "md1-all" {
            assert!(parity.is_empty(), "{name}: {parity}");
        } else {
            let names = if name == "md6-all" {
                "P and Q of "
            } else {
                "P of "
            };
            assert!(
                parity.starts_with(names)
                    && parity.contains("found where md's layout says")
                    && parity.contains("changed once struck"),
                "{name}: the parity was not checked on the members: {parity:?}"
            );
        }
        eprintln!(
            "{name}: parity {parity:?}; scrubs {:#}",
            l["integrity"]["scrubs"]
        );
    }
}
