//! The `powercut` section and md's `consistency_policy`: what they read and every refusal, as
//! the one line a user sees.

use super::super::{AfterCut, CacheModel, DiskCache, LabSpec, LayoutKind, parse_lab_spec};
use crate::spec::SpecError;
use crate::stack::RaidLayer;

const DISKS: &str = "[disks]\nloop = { count = 5, size = \"256MiB\", dir = \"/tmp/d\" }\n";

fn lab(layout: &str) -> Result<LabSpec, SpecError> {
    parse_lab_spec(
        &format!("{DISKS}[[layout]]\nname = \"p\"\n{layout}\n"),
        "lab.toml",
    )
}

fn err(layout: &str) -> String {
    let e = lab(layout).expect_err("should be refused").to_string();
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    e
}

#[test]
fn a_power_cut_plan_reads_with_its_defaults() {
    let s = lab(
        "mdadm = { level = 5, members = 4, consistency_policy = \"ppl\" }\nfs = \"xfs\"\npowercut = { cuts = 3, then = \"fail-member\", window = \"2s\", seed = 7 }",
    )
    .unwrap();
    let p = s.layouts[0].powercut.unwrap();
    assert_eq!(
        (p.cuts, p.then, p.disk_cache, p.seed, p.window_ms),
        (3, AfterCut::FailMember, DiskCache::None, 7, 2000)
    );
    let LayoutKind::Stack(st) = &s.layouts[0].kind else {
        panic!("a stack")
    };
    let RaidLayer::Md(md) = st.raid() else {
        panic!("md")
    };
    assert_eq!(md.consistency_policy.as_deref(), Some("ppl"));
    assert!(
        st.describe().contains("consistency ppl"),
        "{}",
        st.describe()
    );
    let d = lab("fs = \"ext4\"\npowercut = {}").unwrap();
    let p = d.layouts[0].powercut.unwrap();
    assert_eq!((p.cuts, p.then, p.window_ms), (10, AfterCut::None, 4000));
    assert_eq!(
        p.seed,
        lab("fs = \"ext4\"\npowercut = {}").unwrap().layouts[0]
            .powercut
            .unwrap()
            .seed,
        "the default seed comes from the layout's name: the same cuts every time"
    );
}

/// Bad input is one line naming the field.
#[test]
fn bad_power_cut_plans_are_refused_naming_the_field() {
    let e = err("fs = \"xfs\"\npowercut = { cuts = 0 }");
    assert!(
        e.contains("layout[p].powercut.cuts: must be between 1 and 1000"),
        "{e}"
    );
    let e = err("fs = \"xfs\"\npowercut = { then = \"fail-member\" }");
    assert!(
        e.contains("layout[p].powercut.then: single disk > xfs has no redundancy"),
        "{e}"
    );
    let e = err(
        "mdadm = { level = 0, members = 2 }\nfs = \"xfs\"\npowercut = { then = \"fail-member\" }",
    );
    assert!(
        e.contains("powercut.then") && e.contains("no redundancy"),
        "{e}"
    );
    let e = err("fs = \"xfs\"\npowercut = { then = \"reboot\" }");
    assert!(
        e.contains("unknown 'reboot' (use none or fail-member)"),
        "{e}"
    );
    let e = err("fs = \"xfs\"\npowercut = { disk_cache = \"sometimes\" }");
    assert!(
        e.contains("layout[p].powercut.disk_cache: unknown 'sometimes' (use none, volatile, both or ignores-flush)"),
        "{e}"
    );
    let e = err("fs = \"xfs\"\npowercut = { window = \"1ms\" }");
    assert!(e.contains("layout[p].powercut.window"), "{e}");
    let e = err("fs = \"xfs\"\npowercut = { cuts = 2, now = true }");
    assert!(e.contains("now"), "{e}");
    // A ZFS pool is imported again after a cut.
    lab("zfs = { vdev = \"raidz1\", width = 3 }\npowercut = { cuts = 2, then = \"fail-member\" }")
        .expect("a raidz1 pool can have its power cut");
    let dir = parse_lab_spec(
        "[[layout]]\nname = \"old\"\ndir = \"/srv\"\npowercut = { cuts = 2 }\n",
        "lab.toml",
    )
    .expect_err("a directory has no power switch")
    .to_string();
    assert!(dir.contains("layout[old].powercut"), "{dir}");
}

#[test]
fn ppl_is_raid5_only_and_excludes_a_bitmap() {
    let e = err("mdadm = { level = 6, members = 5, consistency_policy = \"ppl\" }\nfs = \"xfs\"");
    assert!(
        e.contains(
            "layout[p].mdadm.consistency_policy: md keeps a partial parity log only for raid5"
        ),
        "{e}"
    );
    let e = err(
        "mdadm = { level = 5, members = 4, bitmap = \"internal\", consistency_policy = \"ppl\" }\nfs = \"xfs\"",
    );
    assert!(
        e.contains("ppl and a write-intent bitmap exclude each other"),
        "{e}"
    );
    // A write journal takes a disk of its own: 4 members + the journal fill the 5 disks, 5
    // members leave none for it.
    let s =
        lab("mdadm = { level = 5, members = 4, consistency_policy = \"journal\" }\nfs = \"xfs\"")
            .unwrap();
    let LayoutKind::Stack(st) = &s.layouts[0].kind else {
        panic!("a stack")
    };
    assert_eq!((st.members, st.spares, st.disks()), (4, 0, 5));
    assert!(
        st.describe().contains("consistency journal (1 disk)"),
        "{}",
        st.describe()
    );
    let e =
        err("mdadm = { level = 5, members = 5, consistency_policy = \"journal\" }\nfs = \"xfs\"");
    assert!(e.contains("the layout needs 6 disks, the lab has 5"), "{e}");
    // Members default to what the spares and the journal leave.
    let s = lab("mdadm = { level = 5, consistency_policy = \"journal\" }\nfs = \"xfs\"").unwrap();
    let LayoutKind::Stack(st) = &s.layouts[0].kind else {
        panic!("a stack")
    };
    assert_eq!(st.members, 4);
    let e =
        err("mdadm = { level = 1, members = 2, consistency_policy = \"journal\" }\nfs = \"xfs\"");
    assert!(
        e.contains("write journal only for raid4, raid5 and raid6"),
        "{e}"
    );
    let e = err(
        "mdadm = { level = 5, members = 3, bitmap = \"internal\", consistency_policy = \"journal\" }\nfs = \"xfs\"",
    );
    assert!(e.contains("write journal and a write-intent bitmap"), "{e}");
    assert!(
        lab("mdadm = { level = 6, members = 5, consistency_policy = \"resync\" }\nfs = \"xfs\"")
            .is_ok()
    );
}

#[test]
fn the_power_cut_example_reads_with_every_consistency_policy() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/lab-powercut.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let s = parse_lab_spec(&text, "lab-powercut.toml").unwrap();
    let policies: Vec<Option<String>> = s
        .layouts
        .iter()
        .filter_map(|l| match &l.kind {
            LayoutKind::Stack(st) => match st.raid() {
                RaidLayer::Md(o) => Some(o.consistency_policy.clone()),
                _ => None,
            },
            LayoutKind::Directory(_) => None,
        })
        .collect();
    for want in [None, Some("ppl".to_string()), Some("journal".to_string())] {
        assert!(policies.contains(&want), "{policies:?}");
    }
    assert!(s.layouts.iter().all(|l| l.powercut.is_some()));
    // With and without a volatile cache, and a ZFS pool among them.
    assert!(
        s.layouts
            .iter()
            .any(|l| l.powercut.is_some_and(|p| p.disk_cache == DiskCache::Both))
    );
    assert!(s.layouts.iter().any(
        |l| matches!(&l.kind, LayoutKind::Stack(st) if matches!(st.raid(), RaidLayer::Zfs(_)))
    ));
}

/// The disks' cache model is the spec's, per cut: `both` takes turns, odd cuts
/// without a cache.
#[test]
fn the_disk_cache_model_is_chosen_per_cut() {
    for (text, want) in [
        ("none", [CacheModel::None, CacheModel::None]),
        ("volatile", [CacheModel::Volatile, CacheModel::Volatile]),
        ("both", [CacheModel::None, CacheModel::Volatile]),
        (
            "ignores-flush",
            [CacheModel::IgnoresFlush, CacheModel::IgnoresFlush],
        ),
    ] {
        let spec = lab(&format!(
            "fs = \"ext4\"\npowercut = {{ cuts = 2, disk_cache = \"{text}\" }}"
        ))
        .expect("parses");
        let dc = spec.layouts[0].powercut.expect("powercut").disk_cache;
        assert_eq!(dc.name(), text);
        assert_eq!([dc.for_cut(1), dc.for_cut(2)], want, "{text}");
        assert_eq!(dc.logs_writes(), text != "none");
    }
}
