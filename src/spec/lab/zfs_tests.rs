//! The `zfs` section: what it builds and every refusal, as the one line a user sees.

use super::super::{LabSpec, LayoutKind, parse_lab_spec};
use crate::spec::SpecError;
use crate::stack::zfs::{VdevKind, ZfsOptions};
use crate::stack::{FsKind, RaidLayer, Stack};

const DISKS: &str = "[disks]\nloop = { count = 12, size = \"1GiB\", dir = \"/tmp/d\" }\n";

fn lab(layout: &str) -> Result<LabSpec, SpecError> {
    parse_lab_spec(
        &format!("{DISKS}[[layout]]\nname = \"z\"\n{layout}\n"),
        "lab.toml",
    )
}

fn stack(layout: &str) -> (Stack, ZfsOptions) {
    let s = lab(layout).expect("valid");
    let LayoutKind::Stack(st) = s.layouts[0].kind.clone() else {
        panic!("not a stack")
    };
    let RaidLayer::Zfs(z) = st.raid().clone() else {
        panic!("not zfs")
    };
    (st, z)
}

fn err(layout: &str) -> String {
    lab(layout).expect_err("should be refused").to_string()
}

#[test]
fn a_full_pool() {
    let (st, z) = stack(
        r#"zfs = { vdev = "raidz2", vdevs = 2, width = 4, special = 2, log = 1, cache = 1, spares = 0, pool = { ashift = 12 }, dataset = { recordsize = "1M", compression = "zstd-3", sync = "always", atime = false, primarycache = "metadata", special_small_blocks = "64k" } }
degrade = true
rebuild = true"#,
    );
    assert_eq!(st.fs(), FsKind::Zfs);
    assert_eq!((st.members, st.spares, st.disks()), (8, 4, 12));
    assert_eq!(z.vdev, VdevKind::Raidz(2));
    assert_eq!(z.pool, vec![("ashift".to_string(), "12".to_string())]);
    let d: Vec<String> = z.dataset.iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert!(d.contains(&"atime=off".to_string()), "{d:?}");
    assert!(d.contains(&"recordsize=1M".to_string()));
    assert_eq!(
        st.tolerated_failures(),
        1,
        "the 2-way special mirror bounds it"
    );
}

#[test]
fn defaults_take_every_disk_in_one_vdev() {
    let (st, z) = stack(r#"zfs = { vdev = "raidz2" }"#);
    assert_eq!((z.vdevs, z.width, st.members), (1, 12, 12));
    let (_, m) = stack(r#"zfs = { vdev = "mirror", vdevs = 6 }"#);
    assert_eq!((m.vdevs, m.width), (6, 2));
    let (_, d) = stack(r#"zfs = { vdev = "draid2:8d:2s" }"#);
    assert_eq!(
        d.vdev,
        VdevKind::Draid {
            parity: 2,
            data: 8,
            spares: 2
        }
    );
    assert_eq!(d.width, 12);
    let (_, small) = stack(r#"zfs = { vdev = "draid1:1s", width = 5 }"#);
    assert_eq!(
        small.vdev,
        VdevKind::Draid {
            parity: 1,
            data: 3,
            spares: 1
        },
        "data defaults to 8, capped by what the children leave"
    );
}

#[test]
fn refusals_name_the_layout_and_key() {
    let cases = [
        (
            r#"zfs = { vdev = "raidz3", width = 3 }"#,
            "lab.toml:5: layout[z].zfs.width: raidz3 needs at least 4 disks per vdev, the layout has 3",
        ),
        (
            r#"zfs = { vdev = "raid6" }"#,
            "lab.toml:5: layout[z].zfs.vdev: unknown vdev 'raid6'",
        ),
        (
            r#"zfs = { vdev = "raidz2", width = 6, vdevs = 2, special = 2 }"#,
            "layout[z].zfs.width: the pool needs 14 disks (2 x 6 in vdevs + 2 special/log/cache/spare), the lab has 12",
        ),
        (
            r#"zfs = { vdev = "mirror", vdevs = 2, special = 1 }"#,
            "layout[z].zfs.special: a special vdev holds the pool's metadata and must be a mirror",
        ),
        (
            r#"zfs = { vdev = "raidz1", pool = { ashift = 20 } }"#,
            "layout[z].zfs.pool.ashift: must be an integer from 9 to 16, not '20'",
        ),
        (
            r#"zfs = { vdev = "raidz1", dataset = { recordsiz = "1M" } }"#,
            "layout[z].zfs.dataset.recordsiz: unknown dataset property 'recordsiz' (known: recordsize,",
        ),
        (
            r#"zfs = { vdev = "raidz1", dataset = { recordsize = "100k" } }"#,
            "layout[z].zfs.dataset.recordsize: must be a power of two",
        ),
        (
            r#"zfs = { vdev = "raidz1", dataset = { compression = "brotli" } }"#,
            "layout[z].zfs.dataset.compression: unknown compression 'brotli'",
        ),
        (
            r#"zfs = { vdev = "raidz1", dataset = { special_small_blocks = "32k" } }"#,
            "layout[z].zfs.dataset.special_small_blocks: sends small blocks to a special vdev, and the pool has none",
        ),
        (
            r#"zfs = { vdev = "raidz1", dataset = { mountpoint = "/x" } }"#,
            "layout[z].zfs.dataset.mountpoint: the lab mounts the dataset in its own directory",
        ),
        (
            r#"zfs = { vdev = "draid2:8d:2s", width = 11 }"#,
            "layout[z].zfs.width: draid2:8d:2s needs at least 12 data + parity + spares per vdev, the layout has 11",
        ),
        (
            "zfs = { vdev = \"raidz1\" }\nfs = \"xfs\"",
            "layout[z].fs: a zfs layer is its own filesystem; drop fs = \"xfs\"",
        ),
        (
            "zfs = { vdev = \"raidz1\" }\nmdadm = { level = 6 }",
            "a layout has one RAID layer: btrfs, mdadm or zfs, not two",
        ),
        (
            "zfs = { width = 3 }",
            "layout[z].zfs.vdev: missing; the vdev type",
        ),
        (
            "zfs = { vdev = \"mirror\", vdevs = 6 }\ndegrade = true\nfailures = 2",
            "layout[z].failures: zfs 6 x mirror x2 [primarycache=metadata] survives only 1 failure",
        ),
    ];
    for (layout, want) in cases {
        let e = err(layout);
        assert!(e.contains(want), "{layout}\n  got:  {e}\n  want: {want}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn a_dir_layout_refuses_zfs() {
    let e = parse_lab_spec(
        "[[layout]]\nname = \"d\"\ndir = \"/tmp\"\nzfs = { vdev = \"mirror\" }\n",
        "lab.toml",
    )
    .expect_err("refused")
    .to_string();
    assert!(e.contains("layout[d].zfs: a dir layout"), "{e}");
}

#[test]
fn the_measured_dataset_caches_only_metadata_unless_told() {
    let (_, z) = stack(r#"zfs = { vdev = "mirror" }"#);
    assert_eq!(z.dataset_prop("primarycache"), Some("metadata"));
    let (_, all) = stack(r#"zfs = { vdev = "mirror", dataset = { primarycache = "all" } }"#);
    assert_eq!(all.dataset_prop("primarycache"), Some("all"));
    assert_eq!(
        all.dataset
            .iter()
            .filter(|(k, _)| k == "primarycache")
            .count(),
        1
    );
}
