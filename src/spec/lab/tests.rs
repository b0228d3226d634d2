use super::*;
use crate::stack::{BtrfsProfile, FsKind, MdLevel, RaidLayer};

const DISKS: &str = "[disks]\nloop = { count = 6, size = \"1GiB\", dir = \"/tmp/d\" }\n";

fn lab(layouts: &str) -> Result<LabSpec, SpecError> {
    parse_lab(&format!("{DISKS}{layouts}"), "lab.toml")
}

fn err(layouts: &str) -> SpecError {
    lab(layouts).expect_err("should be refused")
}

#[test]
fn parses_every_kind_of_layout() {
    let s = lab(r#"
[[layout]]
name = "btrfs-raid5"
btrfs = { data = "raid5", members = 4 }
mount_options = "noatime,nodiratime"
degrade = true
rebuild = true
fill = "64MiB"

[[layout]]
name = "md-raid6-lvm-xfs"
lvm = true
fs = "xfs"
mkfs_options = "-m crc=1"
[layout.mdadm]
level = "raid6"
members = 5
spares = 1
chunk = "512k"
bitmap = "internal"
bitmap_chunk = "64M"

[[layout]]
name = "ext4-single"
fs = "ext4"

[[layout]]
name = "old-server"
dir = "/tmp"

[workloads]
profiles = ["quick"]
repeat = 2
baseline = "old-server"
"#)
    .unwrap();
    assert_eq!(s.name, "lab");
    assert_eq!(s.layouts.len(), 4);
    let LayoutKind::Stack(b) = &s.layouts[0].kind else {
        panic!()
    };
    assert_eq!(
        *b.raid(),
        RaidLayer::Btrfs {
            data: BtrfsProfile::Raid5,
            metadata: BtrfsProfile::Raid1
        }
    );
    assert_eq!(b.members, 4);
    assert_eq!(b.mount_options(), vec!["noatime", "nodiratime"]);
    assert!(s.layouts[0].degrade && s.layouts[0].rebuild);
    assert_eq!(s.layouts[0].fill, Some(64 << 20));
    let LayoutKind::Stack(m) = &s.layouts[1].kind else {
        panic!()
    };
    let RaidLayer::Md(o) = m.raid() else { panic!() };
    assert_eq!(o.level, MdLevel::Raid6);
    assert_eq!(o.chunk, Some(512 << 10));
    assert_eq!(o.bitmap_chunk, Some(64 << 20));
    assert_eq!((m.members, m.spares, m.lvm()), (5, 1, true));
    assert_eq!(m.mkfs_options(), vec!["-m", "crc=1"]);
    let LayoutKind::Stack(e) = &s.layouts[2].kind else {
        panic!()
    };
    assert_eq!(
        (e.raid().clone(), e.members, e.fs()),
        (RaidLayer::None, 1, FsKind::Ext4)
    );
    assert_eq!(s.layouts[3].kind, LayoutKind::Directory("/tmp".into()));
    assert_eq!(s.workloads.repeat, 2);
    assert_eq!(s.workloads.baseline.as_deref(), Some("old-server"));
    assert!(!s.workloads.suite.workloads.is_empty());
}

#[test]
fn members_default_to_the_whole_pool() {
    let s = lab("[[layout]]\nname = \"r0\"\nbtrfs = { data = \"raid0\" }\n[[layout]]\nname = \"m\"\nfs = \"xfs\"\nmdadm = { level = 5, spares = 1 }\n").unwrap();
    let LayoutKind::Stack(b) = &s.layouts[0].kind else {
        panic!()
    };
    assert_eq!(b.members, 6);
    let LayoutKind::Stack(m) = &s.layouts[1].kind else {
        panic!()
    };
    assert_eq!((m.members, m.spares), (5, 1));
}

#[test]
fn too_few_disks_names_layout_field_and_line() {
    let e = err("[[layout]]\nname = \"r6\"\n\nbtrfs = { data = \"raid6\", members = 2 }\n");
    assert_eq!(e.key, "layout[r6].btrfs.members");
    assert_eq!(e.line, Some(6));
    assert!(e.msg.contains("raid6 needs at least 3"), "{e}");
    assert!(
        e.to_string()
            .starts_with("lab.toml:6: layout[r6].btrfs.members: "),
        "{e}"
    );

    let e =
        err("[[layout]]\nname = \"m6\"\nfs = \"xfs\"\n[layout.mdadm]\nlevel = 6\nmembers = 3\n");
    assert_eq!(e.key, "layout[m6].mdadm.members");
    assert_eq!(e.line, Some(8));

    let e = err("[[layout]]\nname = \"big\"\nbtrfs = { data = \"raid0\", members = 7 }\n");
    assert_eq!(e.key, "layout[big].btrfs.members");
    assert!(e.msg.contains("needs 7 disks, the lab has 6"), "{e}");

    let e = err(
        "[[layout]]\nname = \"sp\"\nfs = \"xfs\"\nmdadm = { level = 5, members = 6, spares = 1 }\n",
    );
    assert!(e.msg.contains("needs 7 disks"), "{e}");
}

#[test]
fn duplicate_names_and_unknown_things_are_refused() {
    let e =
        err("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[[layout]]\nname = \"a\"\nfs = \"ext4\"\n");
    assert_eq!(e.key, "layout[a].name");
    assert_eq!(e.line, Some(7));
    assert!(e.msg.contains("duplicate"), "{e}");

    let e = err("[[layout]]\nname = \"a\"\nfs = \"zfs\"\n");
    assert_eq!(e.key, "layout[a].fs");
    assert_eq!(e.line, Some(5));

    let e = err("[[layout]]\nname = \"a\"\nbtrfs = { data = \"raid7\" }\n");
    assert_eq!(e.key, "layout[a].btrfs.data");
    assert!(e.msg.contains("raid1c3"), "{e}");

    let e = err("[[layout]]\nname = \"a\"\nfs = \"xfs\"\nmdadm = { level = 3 }\n");
    assert_eq!(e.key, "layout[a].mdadm.level");

    let e = err("[[layout]]\nname = \"a\"\nfs = \"xfs\"\nraid = 5\n");
    assert!(e.msg.contains("raid"), "{e}");
    assert_eq!(e.line, Some(6));

    let e = err("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\nprofiles = [\"nope\"]\n");
    assert_eq!(e.key, "workloads.profiles");
    assert!(
        e.msg.contains("unknown profile 'nope'") && e.msg.contains("quick"),
        "{e}"
    );
    assert_eq!(e.line, Some(7));

    let e = err("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\nbaseline = \"b\"\n");
    assert_eq!(e.key, "workloads.baseline");

    let e = err("[[layout]]\nname = \"a b\"\nfs = \"xfs\"\n");
    assert_eq!(e.key, "layout[1].name");
}

#[test]
fn option_combinations_that_make_no_sense() {
    let cases: &[(&str, &str)] = &[
        (
            "btrfs = { data = \"raid0\" }\ndegrade = true",
            "layout[a].degrade",
        ),
        ("fs = \"xfs\"\ndegrade = true", "layout[a].degrade"),
        (
            "btrfs = { data = \"raid1\" }\nrebuild = true",
            "layout[a].rebuild",
        ),
        ("btrfs = { data = \"raid1\" }\nlvm = true", "layout[a].lvm"),
        ("btrfs = { data = \"raid1\" }\nfs = \"xfs\"", "layout[a].fs"),
        (
            "fs = \"xfs\"\nmdadm = { level = 1, chunk = \"64k\" }",
            "layout[a].mdadm.chunk",
        ),
        (
            "fs = \"xfs\"\nmdadm = { level = 5, chunk = \"100k\" }",
            "layout[a].mdadm.chunk",
        ),
        (
            "fs = \"xfs\"\nmdadm = { level = 0, bitmap = \"internal\" }",
            "layout[a].mdadm.bitmap",
        ),
        (
            "fs = \"xfs\"\nmdadm = { level = 0, spares = 1 }",
            "layout[a].mdadm.spares",
        ),
        (
            "fs = \"xfs\"\nmdadm = { level = 5, bitmap_chunk = \"64M\" }",
            "layout[a].mdadm.bitmap_chunk",
        ),
        ("mdadm = { level = 5 }", "layout[a].fs"),
        (
            "btrfs = { data = \"raid1\" }\nmdadm = { level = 1 }",
            "layout[a].mdadm",
        ),
        ("dir = \"/tmp\"\nfs = \"xfs\"", "layout[a].fs"),
        ("dir = \"/nonexistent/x\"", "layout[a].dir"),
        (
            "btrfs = { data = \"raid1\" }\ndegrade = true\nfill = \"4GiB\"",
            "layout[a].fill",
        ),
        (
            "btrfs = { data = \"raid5\" }\ndegrade = true\nfailures = 2",
            "layout[a].failures",
        ),
        (
            "btrfs = { data = \"raid6\", metadata = \"raid1\" }\ndegrade = true\nfailures = 2",
            "layout[a].failures",
        ),
        (
            "btrfs = { data = \"raid6\" }\nfailures = 2",
            "layout[a].failures",
        ),
        (
            "btrfs = { data = \"raid6\" }\ndegrade = true\nfailures = 3",
            "layout[a].failures",
        ),
        (
            "fs = \"xfs\"\nmdadm = { level = 5 }\ndegrade = true\nfailures = 2",
            "layout[a].failures",
        ),
        ("dir = \"/tmp\"\nfailures = 1", "layout[a].failures"),
    ];
    for (body, key) in cases {
        let e = err(&format!("[[layout]]\nname = \"a\"\n{body}\n"));
        assert_eq!(&e.key, key, "for {body}: {e}");
        assert!(e.line.is_some(), "{e}");
    }
}

#[test]
fn two_failures_on_layouts_that_survive_them() {
    let s = lab(r#"
[[layout]]
name = "r6"
btrfs = { data = "raid6", members = 5 }
degrade = true
rebuild = true
failures = 2

[[layout]]
name = "r1c3"
btrfs = { data = "raid1c3", metadata = "raid1c3", members = 3 }
degrade = true
failures = 2

[[layout]]
name = "md6"
mdadm = { level = 6, members = 5 }
fs = "xfs"
degrade = true
failures = 2

[[layout]]
name = "r1"
btrfs = { data = "raid1" }
degrade = true
"#)
    .unwrap();
    let f: Vec<u8> = s.layouts.iter().map(|l| l.failures).collect();
    assert_eq!(f, vec![2, 2, 2, 1]);
    let e = err(
        "[[layout]]\nname = \"r5\"\nbtrfs = { data = \"raid5\", members = 4 }\ndegrade = true\nfailures = 2\n",
    );
    assert_eq!(e.line, Some(7), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("layout[r5].failures") && msg.contains("survives only 1 failure"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn data_set_size() {
    let s = lab("[[layout]]\nname = \"a\"\nbtrfs = { data = \"raid1\" }\ndegrade = true\n[[layout]]\nname = \"b\"\nfs = \"xfs\"\nfill = \"96MiB\"\n[[layout]]\nname = \"c\"\nfs = \"xfs\"\n").unwrap();
    let (a, b, c) = (&s.layouts[0], &s.layouts[1], &s.layouts[2]);
    assert!(a.checks_data() && b.checks_data() && !c.checks_data());
    assert_eq!(a.fill_bytes(3 << 30), 1 << 30);
    assert_eq!(a.fill_bytes(300 << 30), DEFAULT_FILL_MAX);
    assert_eq!(a.fill_bytes(1000), 4 << 20);
    assert_eq!(b.fill_bytes(3 << 30), 96 << 20);
}

#[test]
fn disks_are_checked() {
    let e = parse_lab(
        "[disks]\ndevices = [\"/dev/iolab-no-such-disk\"]\n[[layout]]\nname = \"a\"\nfs = \"xfs\"\n",
        "l.toml",
    )
    .unwrap_err();
    assert_eq!(e.key, "disks.devices[1]");
    assert!(e.msg.contains("/dev/iolab-no-such-disk"), "{e}");
    let e = parse_lab(
        "[disks]\ndevices = [\"/etc/hostname\"]\n[[layout]]\nname = \"a\"\nfs = \"xfs\"\n",
        "l.toml",
    )
    .unwrap_err();
    assert!(e.msg.contains("not a block device"), "{e}");
    let e = parse_lab(
        "[disks]\nloop = { count = 2, size = \"1MiB\" }\n[[layout]]\nname = \"a\"\nfs = \"xfs\"\n",
        "l.toml",
    )
    .unwrap_err();
    assert_eq!(e.key, "disks.loop.size");
    let e = parse_lab(
        "[disks]\nloop = { count = 2, size = \"200MiB\" }\n[[layout]]\nname = \"a\"\nfs = \"xfs\"\n",
        "l.toml",
    )
    .unwrap_err();
    assert_eq!(e.key, "layout[a].fs");
    assert!(e.msg.contains("xfs needs at least"), "{e}");
    let e = parse_lab("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n", "l.toml").unwrap_err();
    assert!(e.msg.contains("no [disks]"), "{e}");
    // A lab of directories needs no disks.
    let s = parse_lab("[[layout]]\nname = \"a\"\ndir = \"/tmp\"\n", "l.toml").unwrap();
    assert_eq!(s.disks, Disks::None);
}

#[test]
fn inline_workloads_and_quick() {
    let mut s = lab(r#"
[[layout]]
name = "a"
fs = "xfs"
[workloads]
repeat = 5
[workloads.defaults]
size = "64MiB"
[[workloads.workload]]
name = "seq"
pattern = "write"
bs = "1M"
[[workloads.workload]]
name = "rnd"
qd = 0
"#)
    .unwrap_err();
    assert_eq!(s.key, "workloads.workload[2].qd");
    assert_eq!(s.line, Some(17));
    let mut spec = lab("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\nrepeat = 5\n[[workloads.workload]]\nname = \"seq\"\npattern = \"write\"\n").unwrap();
    assert_eq!(spec.workloads.suite.workloads.len(), 1);
    assert_eq!(spec.workloads.repeat, 5);
    spec.quick();
    assert_eq!(spec.workloads.repeat, 1);
    assert_eq!(spec.workloads.profiles, vec!["quick"]);
    s.msg.clear();
}

const R5: &str = "[[layout]]\nname = \"r5\"\nfs = \"xfs\"\nmdadm = { level = 5, members = 3 }\ndegrade = true\nrebuild = true\n";

#[test]
fn faults_are_read_and_checked() {
    use crate::stack::fault::{FaultKind, FaultStep};
    let s = lab(&format!(
        "{R5}faults = [{{ member = 0, at = \"rebuild\", kind = \"unreadable\", offset = \"16MiB\", length = \"1MiB\" }}, {{ member = 2, at = \"after_rebuild\", kind = \"corrupt\", offset = \"1MiB\", length = \"4k\" }}, {{ member = 1, at = \"before_degrade\", kind = \"fail\" }}]\n"
    ))
    .unwrap();
    let f = &s.layouts[0].faults;
    assert_eq!(f.len(), 3);
    assert_eq!(f[0].at, FaultStep::Rebuild);
    assert_eq!(
        f[0].kind,
        FaultKind::Unreadable {
            offset: 16 << 20,
            length: 1 << 20
        }
    );
    assert_eq!(f[2].kind, FaultKind::Fail);
    assert!(f[0].describe().contains("member 0 during the rebuild"));

    let cases = [
        (
            "{ member = 7, at = \"rebuild\", kind = \"unreadable\", offset = \"0\", length = \"4k\" }",
            "layout[r5].faults[1].member: member 7 does not exist; the layout has 3 members (0 to 2)",
        ),
        (
            "{ member = 2, at = \"rebuild\", kind = \"unreadable\", offset = \"0\", length = \"4k\" }",
            "layout[r5].faults[1].member: member 2 is the one degrade fails",
        ),
        (
            "{ member = 2, at = \"after_rebuild\", kind = \"fail\" }",
            "layout[r5].faults[1].member: member 2 is replaced by the rebuild",
        ),
        (
            "{ member = 0, at = \"later\", kind = \"fail\" }",
            "layout[r5].faults[1].at: unknown step 'later'",
        ),
        (
            "{ member = 0, at = \"rebuild\", kind = \"melt\" }",
            "layout[r5].faults[1].kind: unknown kind 'melt'",
        ),
        (
            "{ member = 0, at = \"rebuild\", kind = \"unreadable\", offset = \"1020MiB\", length = \"8MiB\" }",
            "layout[r5].faults[1].offset: 1020MiB + 8MiB runs past the end of the member",
        ),
        (
            "{ member = 0, at = \"rebuild\", kind = \"fail\", length = \"8MiB\" }",
            "layout[r5].faults[1].offset: a whole-disk failure has no range",
        ),
        (
            "{ member = 0, at = \"rebuild\", kind = \"corrupt\", offset = \"1MiB\" }",
            "layout[r5].faults[1].length: missing",
        ),
        (
            "{ member = 0, at = \"rebuild\", kind = \"fail\", size = 3 }",
            "unknown field `size`",
        ),
    ];
    for (f, want) in cases {
        let e = err(&format!("{R5}faults = [{f}]\n"));
        assert!(e.to_string().contains(want), "{f}: {e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
    let e = err(
        "[[layout]]\nname = \"r5s\"\nfs = \"xfs\"\nmdadm = { level = 5, members = 3, spares = 1 }\ndegrade = true\nrebuild = true\nfaults = [{ member = 0, at = \"rebuild\", kind = \"fail\" }]\n",
    );
    assert!(e.msg.contains("drop spares"), "{e}");
    let e = err(
        "[[layout]]\nname = \"r5n\"\nfs = \"xfs\"\nmdadm = { level = 5, members = 3 }\nfaults = [{ member = 0, at = \"after_rebuild\", kind = \"fail\" }]\n",
    );
    assert!(e.msg.contains("needs a rebuild"), "{e}");
    let e = err("[[layout]]\nname = \"d\"\ndir = \"/tmp\"\nfaults = []\n");
    assert_eq!(e.key, "layout[d].faults");
}

/// A range written in bytes may hold no file; `offset = "data"` (or `"file:PATH"`)
/// lets the lab place it under the data set, on md layouts that write one.
#[test]
fn copies_all_strikes_every_copy_of_a_corrupt_fault_under_data_and_nothing_else() {
    use crate::stack::fault::Copies;
    let z = "[[layout]]\nname = \"z\"\nzfs = { vdev = \"raidz1\", width = 3 }\nfill = \"12MiB\"\n";
    let s = lab(&format!(
        "{z}faults = [{{ member = 1, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\", copies = \"all\" }}, {{ member = 0, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"4k\" }}]\n"
    ))
    .unwrap();
    let f = &s.layouts[0].faults;
    assert_eq!((f[0].copies, f[1].copies), (Copies::All, Copies::One));
    assert!(
        f[0].describe().contains("on member 1, every copy before"),
        "{}",
        f[0].describe()
    );
    let bad = [
        (
            "kind = \"unreadable\", offset = \"data\", length = \"4k\", copies = \"all\"",
            "layout[z].faults[1].copies: \"all\" overwrites every copy",
        ),
        (
            "kind = \"corrupt\", offset = \"16MiB\", length = \"4k\", copies = \"all\"",
            "needs kind = \"corrupt\" with offset = \"data\"",
        ),
        (
            "kind = \"corrupt\", offset = \"data\", length = \"4k\", copies = \"both\"",
            "layout[z].faults[1].copies: unknown 'both'",
        ),
    ];
    for (fault, want) in bad {
        let e = err(&format!(
            "{z}faults = [{{ member = 1, at = \"before_degrade\", {fault} }}]\n"
        ));
        assert!(e.to_string().contains(want), "{fault}: {e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
}

#[test]
fn faults_placed_under_data_are_read_and_checked() {
    use crate::stack::fault::{FaultKind, Under};
    let s = lab(&format!(
        "{R5}faults = [{{ member = 0, at = \"rebuild\", kind = \"unreadable\", offset = \"data\", length = \"1MiB\" }}, {{ member = 1, at = \"after_rebuild\", kind = \"corrupt\", offset = \"file:./.iolab-data/d1/f00001\", length = \"64k\" }}]\n"
    ))
    .unwrap();
    let f = &s.layouts[0].faults;
    assert_eq!(f[0].under, Some(Under::Data));
    assert_eq!(f[0].kind.range(), Some((0, 1 << 20)));
    assert!(!f[0].placed);
    assert_eq!(
        f[0].describe(),
        "unreadable 1MiB under file data on member 0 during the rebuild"
    );
    assert_eq!(
        f[1].under,
        Some(Under::File(".iolab-data/d1/f00001".into()))
    );
    let mut placed = f[0].clone();
    placed.kind = placed.kind.at_offset(20 << 20);
    placed.placed = true;
    assert_eq!(
        placed.kind,
        FaultKind::Unreadable {
            offset: 20 << 20,
            length: 1 << 20
        }
    );
    assert!(
        placed
            .describe()
            .starts_with("unreadable 1MiB at 20MiB (under file data)"),
        "{}",
        placed.describe()
    );
    let data = "{ member = 0, at = \"rebuild\", kind = \"unreadable\", offset = \"data\", length = \"1MiB\" }";
    let cases = [
        (
            format!("[[layout]]\nname = \"z1\"\nzfs = {{ vdev = \"draid1:2d:1s\", width = 4 }}\ndegrade = true\nrebuild = true\nfaults = [{data}]\n"),
            "layout[z1].faults[1].offset: \"data\" is placed through ZFS's block pointers on plain disks, mirrors and raidz; a dRAID",
        ),
        (
            "[[layout]]\nname = \"r1\"\nfs = \"xfs\"\nmdadm = { level = 1, members = 2 }\nfaults = [{ member = 0, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"4k\" }]\n".to_string(),
            "layout[r1].faults[1].offset: \"data\" needs the lab's data set on the layout",
        ),
        (
            format!("{R5}faults = [{{ member = 0, at = \"rebuild\", kind = \"unreadable\", offset = \"dta\", length = \"1MiB\" }}]\n"),
            "\"data\" (under a file of the data set) or \"file:PATH\"",
        ),
        (
            format!("{R5}faults = [{{ member = 0, at = \"rebuild\", kind = \"unreadable\", offset = \"data\", length = \"512MiB\" }}]\n"),
            "layout[r5].faults[1].length: 512MiB under file data is more than a quarter of a member",
        ),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.to_string().contains(want), "{text}: {e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
}

/// A btrfs layout places a fault under data through its chunk tree, and `fill` alone (no
/// degrade) gives it the data set to place by — `fill` is read after the faults.
#[test]
fn a_btrfs_layout_with_a_data_set_places_faults_under_data() {
    use crate::stack::fault::Under;
    let s = lab(
        "[[layout]]\nname = \"b1\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\nfill = \"48MiB\"\nfaults = [{ member = 1, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\" }]\n",
    )
    .unwrap();
    assert_eq!(s.layouts[0].faults[0].under, Some(Under::Data));
    let e = err(
        "[[layout]]\nname = \"b1\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\nfaults = [{ member = 1, at = \"before_degrade\", kind = \"corrupt\", offset = \"data\", length = \"256KiB\" }]\n",
    );
    assert!(e.msg.contains("needs the lab's data set"), "{e}");
}

#[test]
fn rebuild_faults_have_a_point_on_md_and_a_place_on_zfs_not_btrfs() {
    let s = lab(&format!(
        "{R5}faults = [{{ member = 0, at = \"rebuild\", kind = \"fail\", progress = 40 }}]\n"
    ))
    .unwrap();
    let f = &s.layouts[0].faults[0];
    assert_eq!(f.progress, Some(40));
    assert!(
        f.describe().ends_with("on member 0 at 40% of the rebuild"),
        "{}",
        f.describe()
    );
    for (p, want) in [
        (
            "101",
            "layout[r5].faults[1].progress: 101 is not a percent; use 0 to 100",
        ),
        ("-1", "layout[r5].faults[1].progress: -1 is not a percent"),
    ] {
        let e = err(&format!(
            "{R5}faults = [{{ member = 0, at = \"rebuild\", kind = \"fail\", progress = {p} }}]\n"
        ));
        assert!(e.to_string().contains(want), "{e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
    let e = err(&format!(
        "{R5}faults = [{{ member = 0, at = \"after_rebuild\", kind = \"fail\", progress = 10 }}]\n"
    ));
    assert!(
        e.to_string()
            .contains("layout[r5].faults[1].progress: only a fault during the rebuild"),
        "{e}"
    );
    let z = "[[layout]]\nname = \"z1\"\nzfs = { vdev = \"raidz1\", width = 3 }\ndegrade = true\nrebuild = true\n";
    let s = lab(&format!(
        "{z}faults = [{{ member = 0, at = \"rebuild\", kind = \"corrupt\", offset = \"5MiB\", length = \"1MiB\" }}]\n"
    ))
    .unwrap();
    assert_eq!(s.layouts[0].faults.len(), 1);
    let e = err(&format!(
        "{z}faults = [{{ member = 0, at = \"rebuild\", kind = \"fail\", progress = 50 }}]\n"
    ));
    assert!(
        e.to_string()
            .contains("layout[z1].faults[1].progress: only md's recovery"),
        "{e}"
    );
    let e = err(
        "[[layout]]\nname = \"b1\"\nbtrfs = { data = \"raid1\" }\ndegrade = true\nrebuild = true\nfaults = [{ member = 0, at = \"rebuild\", kind = \"corrupt\", offset = \"1MiB\", length = \"4k\" }]\n",
    );
    assert!(
        e.to_string()
            .contains("layout[b1].faults[1].at: btrfs replace cannot be held"),
        "{e}"
    );
    assert_eq!(e.to_string().lines().count(), 1, "{e}");
}

#[test]
fn slow_disks_are_read_and_checked() {
    let text = "[disks]\nloop = { count = 5, size = \"1GiB\" }\nslow = [{ disk = 4, bandwidth = \"20MiB\", iops = 150, latency = \"8ms\" }]\n[[layout]]\nname = \"x\"\nfs = \"xfs\"\n";
    let s = parse_lab(text, "lab.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.slow_disks,
        [SlowDisk {
            disk: 4,
            bandwidth: Some(20 << 20),
            iops: Some(150),
            latency_ms: Some(8)
        }]
    );
    assert_eq!(
        s.slow_disks[0].describe(),
        "disk 4: 20MiB/s, 150 IOPS, +8 ms per IO"
    );
    for (slow, want) in [
        (
            "[{ disk = 5, latency = \"8ms\" }]",
            "lab.toml:3: disks.slow[1].disk: disk 5 does not exist; the lab has 5 disks (0 to 4)",
        ),
        ("[{ disk = 1 }]", "disks.slow[1].disk: says nothing"),
        (
            "[{ disk = 1, latency = \"20s\" }]",
            "disks.slow[1].latency: must be between 1ms",
        ),
        (
            "[{ disk = 1, iops = 0 }]",
            "disks.slow[1].iops: must be between 1",
        ),
        (
            "[{ disk = 1, iops = 5 }, { disk = 1, iops = 6 }]",
            "disks.slow[2].disk: disk 1 is listed twice",
        ),
    ] {
        let t = text.replace(
            "[{ disk = 4, bandwidth = \"20MiB\", iops = 150, latency = \"8ms\" }]",
            slow,
        );
        let e = parse_lab(&t, "lab.toml").expect_err(slow).to_string();
        assert!(e.contains(want), "{slow}: {e}");
    }
}

/// `[workloads] replay` and `model`: a replay workload per trace, its offsets
/// wrapped into each layout; model traces kept for the command line to read.
#[test]
fn workloads_replay_and_model_name_traces() {
    let s = lab(
        "[[layout]]\nname = \"x\"\nfs = \"ext4\"\n[workloads]\nreplay = \"/srv/mail.trace\"\nmodel = [\"db.trace\"]\n",
    )
    .unwrap();
    let w = &s.workloads.suite.workloads;
    assert_eq!(w.len(), 1, "only the replay: no default profile added");
    assert_eq!(w[0].name, "replay-mail");
    let r = w[0].io().unwrap().replay.as_ref().unwrap();
    assert_eq!(r.trace, "/srv/mail.trace");
    assert_eq!(r.map, crate::spec::OffsetMap::Wrap);
    assert_eq!(s.workloads.models, vec!["db.trace"]);
}

#[test]
fn md_speed_limits_and_during_rebuild_read_and_refuse_in_one_line() {
    let s = lab("[[layout]]\nname = \"m\"\nfs = \"xfs\"\nmdadm = { level = 5, sync_speed_min = \"20MiB\", sync_speed_max = \"200MiB\" }\ndegrade = true\nrebuild = true\nduring_rebuild = true\n").unwrap();
    let l = &s.layouts[0];
    assert!(l.during_rebuild);
    let LayoutKind::Stack(st) = &l.kind else {
        panic!("a stack")
    };
    let RaidLayer::Md(md) = st.raid() else {
        panic!("md")
    };
    assert_eq!(md.sync_speed_min, Some(20 << 20));
    assert_eq!(md.sync_speed_max, Some(200 << 20));
    for (layout, field, says) in [
        (
            "mdadm = { level = 5, sync_speed_min = \"300MiB\", sync_speed_max = \"200MiB\" }",
            "mdadm.sync_speed_min",
            "above sync_speed_max",
        ),
        (
            "mdadm = { level = 0, sync_speed_max = \"200MiB\" }",
            "mdadm.sync_speed_max",
            "raid0 never rebuilds",
        ),
        (
            "mdadm = { level = 5, sync_speed_min = \"512\" }",
            "mdadm.sync_speed_min",
            "below 1KiB",
        ),
        (
            "mdadm = { level = 5 }\ndegrade = true\nduring_rebuild = true",
            "during_rebuild",
            "set rebuild = true",
        ),
    ] {
        let e = err(&format!(
            "[[layout]]\nname = \"m\"\nfs = \"xfs\"\n{layout}\n"
        ))
        .to_string();
        assert!(e.contains(field) && e.contains(says), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// A sweep expands into the product of its values, first key slowest, each combination read
/// as if written out: its chunk and filesystem set, its name saying which it is.
#[test]
fn a_sweep_expands_into_one_layout_per_combination() {
    let s = lab(r#"
[[layout]]
name = "md5"
mdadm = { level = 5, members = 4 }
fs = "xfs"
vary = { "mdadm.chunk" = ["64KiB", "256KiB"], fs = ["xfs", "ext4"] }

[[layout]]
name = "plain"
fs = "ext4"
"#)
    .unwrap();
    let names: Vec<&str> = s.layouts.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "md5[chunk=64KiB,fs=xfs]",
            "md5[chunk=64KiB,fs=ext4]",
            "md5[chunk=256KiB,fs=xfs]",
            "md5[chunk=256KiB,fs=ext4]",
            "plain"
        ]
    );
    let got: Vec<(Option<u64>, FsKind)> = s.layouts[..4]
        .iter()
        .map(|l| {
            let LayoutKind::Stack(m) = &l.kind else {
                panic!()
            };
            let RaidLayer::Md(o) = m.raid() else { panic!() };
            (o.chunk, m.fs())
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some(64 << 10), FsKind::Xfs),
            (Some(64 << 10), FsKind::Ext4),
            (Some(256 << 10), FsKind::Xfs),
            (Some(256 << 10), FsKind::Ext4)
        ]
    );
    // A key the layout does not set yet is made; an integer shows as written.
    let s = lab(r#"
[[layout]]
name = "b"
btrfs = { data = "raid1", members = 2 }
vary = { "btrfs.metadata" = ["raid1", "dup"], failures = [1] }
"#)
    .unwrap();
    let names: Vec<&str> = s.layouts.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        ["b[metadata=raid1,failures=1]", "b[metadata=dup,failures=1]"]
    );
}

/// What a sweep cannot do is one error naming `vary` (or the combination a section refused)
/// and the fix.
#[test]
fn a_sweep_that_cannot_expand_names_its_key_and_the_fix() {
    let md = "[[layout]]\nname = \"m\"\nmdadm = { level = 5, members = 4 }\nfs = \"xfs\"\n";
    let cases = [
        (
            "vary = { \"mdadm.chunky\" = [\"64KiB\"] }",
            "layout[m].vary",
            "chunky",
        ),
        (
            "vary = { name = [\"a\", \"b\"] }",
            "layout[m].vary.name",
            "cannot vary",
        ),
        (
            "vary = { \"mdadm.chunk\" = \"64KiB\" }",
            "layout[m].vary.mdadm.chunk",
            "a list",
        ),
        (
            "vary = { \"mdadm.chunk\" = [] }",
            "layout[m].vary.mdadm.chunk",
            "a list",
        ),
        ("vary = {}", "layout[m].vary", "empty"),
        (
            "vary = { \"mdadm.chunk\" = [\"3KiB\", \"64KiB\"] }",
            "layout[m[chunk=3KiB]].mdadm.chunk",
            "",
        ),
        (
            "vary = { \"fs.x\" = [1] }",
            "layout[m].vary.fs.x",
            "not a table",
        ),
        (
            "vary = { \"mdadm.chunk\" = [\"64KiB\"] }\nmax_layouts = 0",
            "layout[m].max_layouts",
            "at least 1",
        ),
    ];
    for (line, key, words) in cases {
        let e = err(&format!("{md}{line}\n"));
        assert_eq!(e.key, key, "{line}: {e}");
        assert!(e.msg.contains(words), "{line}: {e}");
        assert!(e.line.is_some(), "{line}: {e}");
    }
    let chunks: Vec<String> = (0..9)
        .map(|i| format!("\"{}KiB\"", 64 << (i % 3)))
        .collect();
    let fills: Vec<String> = (1..=9).map(|i| format!("\"{i}MiB\"")).collect();
    let wide = format!(
        "{md}vary = {{ \"mdadm.chunk\" = [{}], fill = [{}] }}\n",
        chunks.join(", "),
        fills.join(", ")
    );
    let e = err(&wide);
    assert!(
        e.msg.starts_with(
            "81 combinations, over the limit of 64; drop values, or raise max_layouts = 81"
        ),
        "{e}"
    );
    // Raised, it expands (here into duplicate names: refused as any duplicate is).
    let e = err(&format!("{wide}max_layouts = 81\n"));
    assert!(e.msg.contains("duplicate layout name"), "{e}");
}

/// md's runtime tunables: read on RAID4/5/6 within what md accepts, named in the stack;
/// refused on a level without a stripe cache, or out of range, naming the field.
#[test]
fn md_tunables_read_and_refuse_in_one_line() {
    let s = lab("[[layout]]\nname = \"m\"\nfs = \"xfs\"\nmdadm = { level = 6, members = 5, stripe_cache_size = 4096, group_thread_cnt = 4 }\n").unwrap();
    let LayoutKind::Stack(m) = &s.layouts[0].kind else {
        panic!()
    };
    let RaidLayer::Md(o) = m.raid() else { panic!() };
    assert_eq!(
        (o.stripe_cache_size, o.group_thread_cnt),
        (Some(4096), Some(4))
    );
    assert!(
        m.describe().contains("stripe cache 4096, 4 thread groups"),
        "{}",
        m.describe()
    );
    // Any level has a read-ahead and members with a scheduler.
    let s = lab("[[layout]]\nname = \"m\"\nfs = \"xfs\"\nmdadm = { level = 1, members = 2, read_ahead = \"4MiB\", scheduler = \"mq-deadline\" }\n").unwrap();
    let LayoutKind::Stack(m) = &s.layouts[0].kind else {
        panic!()
    };
    let RaidLayer::Md(o) = m.raid() else { panic!() };
    assert_eq!(o.read_ahead, Some(4 << 20));
    assert_eq!(o.scheduler.as_deref(), Some("mq-deadline"));
    assert!(
        m.describe()
            .contains("read-ahead 4MiB, members' scheduler mq-deadline"),
        "{}",
        m.describe()
    );
    for (table, key, words) in [
        (
            "{ level = 1, stripe_cache_size = 4096 }",
            "mdadm.stripe_cache_size",
            "not raid1",
        ),
        (
            "{ level = 10, group_thread_cnt = 2 }",
            "mdadm.group_thread_cnt",
            "not raid10",
        ),
        (
            "{ level = 5, stripe_cache_size = 16 }",
            "mdadm.stripe_cache_size",
            "17 to 32768",
        ),
        (
            "{ level = 5, group_thread_cnt = -1 }",
            "mdadm.group_thread_cnt",
            "0 to 8192",
        ),
        (
            "{ level = 5, read_ahead = \"1000\" }",
            "mdadm.read_ahead",
            "multiple of 512 bytes",
        ),
        (
            "{ level = 5, scheduler = \"cfq\" }",
            "mdadm.scheduler",
            "unknown scheduler 'cfq' (use none, mq-deadline, bfq, kyber)",
        ),
    ] {
        let e = err(&format!(
            "[[layout]]\nname = \"m\"\nfs = \"xfs\"\nmdadm = {table}\n"
        ));
        assert!(e.key.ends_with(key), "{table}: {e}");
        assert!(e.msg.contains(words), "{table}: {e}");
    }
}

/// A steady-state round is the defaults' `time` when `[workloads]` has none: a lab that times
/// its workloads at 6 s does not get PTS's 60 s rounds.
#[test]
fn a_round_is_the_defaults_time_when_workloads_has_none() {
    let d = lab("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\nsteady_state = true\n[workloads.defaults]\ntime = \"6s\"\n").unwrap();
    assert_eq!(
        d.workloads.steady.unwrap().round,
        std::time::Duration::from_secs(6)
    );
}

/// `[workloads] precondition` and `steady_state` (SNIA PTS on every layout): the kind, the
/// figure, the round (`time` when no `round`) and the limit are read; every closed-loop
/// block-IO workload gets the rounds at run time (also after `--quick` replaced the suite),
/// a rate-paced one keeps its schedule.
#[test]
fn workloads_precondition_and_steady_state_apply_to_every_closed_loop_workload() {
    use crate::spec::{Precondition, SteadyFigure};
    let mut s = lab(r#"
[[layout]]
name = "a"
fs = "xfs"
[workloads]
precondition = "random"
steady_state = "bw"
time = "2s"
max_rounds = 8
[[workloads.workload]]
name = "sw"
pattern = "write"
bs = "1M"
io_size = "64MiB"
[[workloads.workload]]
name = "paced"
pattern = "randread"
rate = "100"
"#)
    .unwrap();
    assert_eq!(s.workloads.precondition, Some(Precondition::Random));
    let st = s.workloads.steady.expect("steady");
    assert_eq!(
        (st.figure, st.round, st.max_rounds),
        (SteadyFigure::Bw, std::time::Duration::from_secs(2), 8)
    );
    // The spec's own suite is as written; the suite a layout runs has the rounds.
    assert!(
        s.workloads.suite.workloads[0]
            .io()
            .unwrap()
            .steady
            .is_none()
    );
    let run = s.workloads.suite_to_run();
    let sw = run.workloads[0].io().unwrap();
    assert_eq!(sw.steady, Some(st));
    assert_eq!(sw.total_bytes, None, "the rounds time the workload");
    assert!(run.workloads[1].io().unwrap().steady.is_none());
    s.quick();
    assert!(
        s.workloads
            .suite_to_run()
            .workloads
            .iter()
            .filter_map(|w| w.io())
            .all(|io| io.steady == Some(st))
    );
}

/// `precondition = true` and `steady_state = true` take SNIA PTS's defaults (sequential
/// precondition, IOPS, 60 s rounds, at most 25), so a spec need not know the figures;
/// `false` turns both off.
#[test]
fn workloads_precondition_and_steady_state_true_take_the_pts_defaults_and_false_turns_them_off() {
    use crate::spec::{Precondition, SteadyFigure};
    let on = lab("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\nprecondition = true\nsteady_state = true\n").unwrap();
    assert_eq!(on.workloads.precondition, Some(Precondition::Seq));
    let st = on.workloads.steady.unwrap();
    assert_eq!(
        (st.figure, st.round, st.max_rounds),
        (SteadyFigure::Iops, std::time::Duration::from_secs(60), 25)
    );
    let off = lab("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\nprecondition = false\nsteady_state = false\n").unwrap();
    assert_eq!(
        (off.workloads.precondition, off.workloads.steady),
        (None, None)
    );
}

/// A bad `precondition`, `steady_state`, `round` or `max_rounds` (or `steady_state` with an
/// SLO) is refused with its own key and line, so the reader fixes the right one.
#[test]
fn workloads_precondition_and_steady_state_bad_values_name_their_key() {
    for (text, key, says) in [
        (
            "precondition = \"twice\"",
            "workloads.precondition",
            "unknown kind 'twice'",
        ),
        (
            "steady_state = \"mbps\"",
            "workloads.steady_state",
            "unknown figure 'mbps'",
        ),
        (
            "round = \"5s\"",
            "workloads.round",
            "add steady_state = true",
        ),
        (
            "steady_state = true\nmax_rounds = 3",
            "workloads.max_rounds",
            "at least 5",
        ),
        (
            "steady_state = true\nslo = \"p99<=5ms\"",
            "workloads.steady_state",
            "drop slo or steady_state",
        ),
    ] {
        let e = err(&format!(
            "[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[workloads]\n{text}\n"
        ));
        assert_eq!(e.key, key, "{text}: {e:?}");
        assert!(e.msg.contains(says), "{text}: {}", e.msg);
        let short = key.trim_start_matches("workloads.");
        let line = text.lines().position(|l| l.starts_with(short)).unwrap();
        assert_eq!(e.line, Some(7 + line), "{text}: {e:?}");
    }
}

/// `at = "degraded"` strikes while a member is failed: it needs `degrade = true` on a layout
/// that can lose one, and a member degrade leaves in place; each refusal is one line naming
/// the field and the fix.
#[test]
fn a_fault_while_degraded_needs_a_degraded_layout_and_a_surviving_member() {
    use crate::stack::fault::FaultStep;
    let b = "[[layout]]\nname = \"b\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\nfill = \"12MiB\"\n";
    let fault = "faults = [{ member = 0, at = \"degraded\", kind = \"corrupt\", offset = \"data\", length = \"64KiB\" }]\n";
    let s = lab(&format!("{b}degrade = true\n{fault}")).unwrap();
    let f = &s.layouts[0].faults[0];
    assert_eq!(f.at, FaultStep::Degraded);
    assert!(f.describe().ends_with("while degraded"), "{}", f.describe());
    let bad = [
        (
            format!("{b}{fault}"),
            "faults[1].at: at = \"degraded\" strikes after a member is failed; set degrade = true",
        ),
        (
            format!(
                "{b}degrade = true\n{}",
                fault.replace("member = 0", "member = 1")
            ),
            "faults[1].member: member 1 is the one degrade fails",
        ),
        (
            format!(
                "[[layout]]\nname = \"s\"\nbtrfs = {{ data = \"single\", metadata = \"dup\", members = 1 }}\nfill = \"12MiB\"\n{fault}"
            ),
            "cannot lose a member, so it is never degraded; use at = \"healthy\"",
        ),
    ];
    for (spec, want) in bad {
        let e = err(&spec);
        assert!(e.to_string().contains(want), "{spec}: {e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
}

/// `read_ahead` is the filesystem device's read-ahead: on xfs and ext4 only, not twice on the
/// same md device, and a sweep over it (or md's tunables) shares one build while a sweep over
/// a build-time key, a second identical layout, or a layout that degrades does not.
#[test]
fn fs_read_ahead_and_which_layouts_share_a_build() {
    let s = lab(
        "[[layout]]\nname = \"x\"\nfs = \"xfs\"\nvary = { read_ahead = [\"128KiB\", \"4MiB\"] }\n",
    )
    .unwrap();
    let names: Vec<&str> = s.layouts.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["x[read_ahead=128KiB]", "x[read_ahead=4MiB]"]);
    let LayoutKind::Stack(st) = &s.layouts[1].kind else {
        panic!()
    };
    assert_eq!(st.fs_layer().read_ahead, Some(4 << 20));
    assert_eq!(st.describe(), "single disk > xfs, read-ahead 4MiB");
    assert!(s.layouts[0].shares_build_with(&s.layouts[1]));

    let md = "mdadm = { level = 5, members = 4 }\nfs = \"xfs\"\n";
    let shares = |extra: &str| {
        let s = lab(&format!("[[layout]]\nname = \"m\"\n{md}{extra}\n")).unwrap();
        s.layouts
            .windows(2)
            .map(|w| w[0].shares_build_with(&w[1]))
            .collect::<Vec<bool>>()
    };
    assert_eq!(
        shares(
            "vary = { \"mdadm.stripe_cache_size\" = [256, 4096], \"mdadm.group_thread_cnt\" = [0, 4] }"
        ),
        [true, true, true]
    );
    // chunk varies slowest: re-tuned within a chunk, rebuilt across.
    assert_eq!(
        shares(
            "vary = { \"mdadm.chunk\" = [\"64KiB\", \"256KiB\"], \"mdadm.stripe_cache_size\" = [256, 4096] }"
        ),
        [true, false, true]
    );
    assert_eq!(
        shares("vary = { mkfs_options = [\"-b size=4096\", \"-b size=1024\"] }"),
        [false]
    );
    assert_eq!(
        shares("degrade = true\nvary = { \"mdadm.stripe_cache_size\" = [256, 4096] }"),
        [false]
    );
    assert_eq!(
        shares("fill = \"64MiB\"\nvary = { \"mdadm.stripe_cache_size\" = [256, 4096] }"),
        [false]
    );
    // Two layouts written out alike are two builds.
    let twice =
        lab("[[layout]]\nname = \"a\"\nfs = \"xfs\"\n[[layout]]\nname = \"b\"\nfs = \"xfs\"\n")
            .unwrap();
    assert!(!twice.layouts[0].shares_build_with(&twice.layouts[1]));

    for (layout, words) in [
        (
            "btrfs = { data = \"raid1\", members = 2 }\nread_ahead = \"4MiB\"",
            "btrfs keeps its own read-ahead",
        ),
        (
            "mdadm = { level = 1, members = 2, read_ahead = \"1MiB\" }\nfs = \"xfs\"\nread_ahead = \"4MiB\"",
            "give one of the two",
        ),
        ("fs = \"ext4\"\nread_ahead = \"1000\"", "multiple of 512"),
    ] {
        let e = err(&format!("[[layout]]\nname = \"r\"\n{layout}\n"));
        assert_eq!(e.key, "layout[r].read_ahead", "{e}");
        assert!(e.msg.contains(words), "{e}");
    }
    // Over LVM the filesystem's device is the volume: its read-ahead beside the array's.
    lab("[[layout]]\nname = \"l\"\nmdadm = { level = 1, members = 2, read_ahead = \"1MiB\" }\nlvm = true\nfs = \"xfs\"\nread_ahead = \"4MiB\"\n").unwrap();
}
