//! The `cache` section: what it builds and every refusal, as the one line a user
//! sees, naming `layout[NAME].cache.FIELD`.

use super::super::{LabSpec, LayoutKind, parse_lab_spec};
use crate::spec::SpecError;
use crate::stack::Stack;
use crate::stack::cache::{CacheKind, CacheMode, CacheOptions};

const DISKS: &str = "[disks]\nloop = { count = 4, size = \"1GiB\", dir = \"/tmp/d\" }\n";

fn lab(layout: &str) -> Result<LabSpec, SpecError> {
    parse_lab_spec(
        &format!("{DISKS}[[layout]]\nname = \"c\"\n{layout}\n"),
        "lab.toml",
    )
}

fn stack(layout: &str) -> Stack {
    let s = lab(layout).expect("valid");
    let LayoutKind::Stack(st) = s.layouts[0].kind.clone() else {
        panic!("not a stack")
    };
    st
}

fn err(layout: &str) -> String {
    lab(layout).expect_err("should be refused").to_string()
}

#[test]
fn lvmcache_over_md_raid5_implies_lvm_and_takes_the_last_disk() {
    let st = stack(
        r#"fs = "xfs"
mdadm = { level = 5 }
cache = { kind = "lvmcache", size = "256MiB" }"#,
    );
    assert!(st.lvm(), "lvmcache implies lvm");
    assert_eq!(
        (st.members, st.disks()),
        (3, 4),
        "members leave the cache disk"
    );
    assert_eq!(
        st.cache(),
        Some(&CacheOptions {
            kind: CacheKind::Lvmcache,
            mode: CacheMode::Writethrough,
            disks: 1,
            size: Some(256 << 20),
            fail: false,
        })
    );
    assert_eq!(
        st.describe(),
        "md raid5 x3 > lvm > lvmcache writethrough 256MiB (1 disk) > xfs"
    );
}

#[test]
fn bcache_writeback_without_lvm() {
    let st = stack(
        r#"fs = "ext4"
mdadm = { level = 5, members = 3 }
cache = { kind = "bcache", mode = "writeback", disks = 1 }"#,
    );
    assert!(!st.lvm());
    assert_eq!(
        st.describe(),
        "md raid5 x3 > bcache writeback (1 disk) > ext4"
    );
}

/// dm-writecache over md RAID1: an LVM layer (lvm implied), write-back without being asked
/// (it has no other mode), described and stored like the other kinds; a power cut is allowed
/// (the VG activates it again).
#[test]
fn writecache_over_md_raid1_is_writeback_and_implies_lvm() {
    let st = stack(
        r#"fs = "xfs"
mdadm = { level = 1, members = 2 }
cache = { kind = "writecache", size = "64MiB" }"#,
    );
    assert!(st.lvm(), "writecache implies lvm");
    assert_eq!(
        st.cache(),
        Some(&CacheOptions {
            kind: CacheKind::Writecache,
            mode: CacheMode::Writeback,
            disks: 1,
            size: Some(64 << 20),
            fail: false,
        })
    );
    assert_eq!(
        st.describe(),
        "md raid1 x2 > lvm > writecache writeback 64MiB (1 disk) > xfs"
    );
    let explicit = stack(
        r#"fs = "xfs"
mdadm = { level = 1, members = 2 }
cache = { kind = "writecache", mode = "writeback", disks = 2 }"#,
    );
    assert_eq!(explicit.cache().map(|c| c.disks), Some(2));
    let cut = stack(
        r#"fs = "xfs"
mdadm = { level = 1, members = 2 }
cache = { kind = "writecache" }
powercut = { cuts = 1 }"#,
    );
    assert!(cut.cache().is_some());
}

/// Layouts with a cache (each as layout `c` of the four-disk lab [`DISKS`]) the spec refuses,
/// and words of the one-line error each gets: the field at fault and the fix.
const REFUSALS: &[(&str, &str)] = &[
    (
        r#"fs = "xfs"
cache = { mode = "writeback" }"#,
        "layout[c].cache.kind: missing",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "flashcache" }"#,
        "layout[c].cache.kind: unknown cache 'flashcache'",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "bcache", mode = "writearound" }"#,
        "layout[c].cache.mode: unknown mode 'writearound'",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "bcache", disks = 0 }"#,
        "layout[c].cache.disks: a cache needs at least 1 disk",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "bcache", disks = 2 }"#,
        "layout[c].cache.disks: bcache caches on one disk",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "lvmcache", size = "1MiB" }"#,
        "layout[c].cache.size: a cache needs at least 32MiB",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "lvmcache", size = "2GiB" }"#,
        "layout[c].cache.size: the cache disks hold 1016MiB of cache, 2GiB asked",
    ),
    (
        r#"fs = "xfs"
lvm = false
cache = { kind = "lvmcache" }"#,
        "layout[c].lvm: lvmcache is an LVM layer",
    ),
    (
        r#"btrfs = { data = "raid1", members = 2 }
cache = { kind = "bcache" }"#,
        "layout[c].cache: btrfs is the RAID and the filesystem",
    ),
    (
        r#"zfs = { vdev = "mirror", width = 2 }
cache = { kind = "bcache" }"#,
        "layout[c].cache: zfs caches in its own pool",
    ),
    (
        r#"fs = "xfs"
mdadm = { level = 5, members = 3 }
cache = { kind = "bcache", fail = true }"#,
        "layout[c].cache.fail: the cache device fails in the degrade step; set degrade = true",
    ),
    (
        r#"fs = "xfs"
mdadm = { level = 5, members = 3 }
cache = { kind = "lvmcache" }
powercut = { cuts = 1 }"#,
        "layout[c].powercut: a layout with a lvmcache cache cannot be power-cut yet; drop powercut or the cache table",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "writecache", mode = "writethrough" }"#,
        "layout[c].cache.mode: writecache writes back only (dm-writecache has no writethrough); set mode = \"writeback\" or use kind = \"lvmcache\"",
    ),
    (
        r#"fs = "xfs"
lvm = false
cache = { kind = "writecache" }"#,
        "layout[c].lvm: writecache is an LVM layer; drop lvm = false (writecache implies lvm = true)",
    ),
    (
        r#"fs = "xfs"
mdadm = { level = 1, members = 2 }
degrade = true
cache = { kind = "writecache", fail = true }
powercut = { cuts = 1 }"#,
        "layout[c].powercut: a writecache that the lab fails cannot be power-cut too",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "writecache", size = "2GiB" }"#,
        "layout[c].cache.size: the cache disks hold 1016MiB of cache, 2GiB asked",
    ),
    (
        r#"fs = "xfs"
cache = { kind = "bcache", speed = 1 }"#,
        "unknown field `speed`",
    ),
    (
        r#"fs = "xfs"
mdadm = { level = 5, members = 4 }
cache = { kind = "bcache" }"#,
        "the layout needs 5 disks, the lab has 4",
    ),
];

#[test]
fn every_refusal_names_its_field() {
    for &(layout, want) in REFUSALS {
        let e = err(layout);
        assert!(e.contains(want), "want '{want}' in: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn a_dir_layout_refuses_a_cache() {
    let e = err(r#"dir = "/tmp"
cache = { kind = "bcache" }"#);
    assert!(e.contains("layout[c].cache: a dir layout"), "{e}");
}

/// `fail = true` with `degrade = true` is kept in the stack (and described), and left
/// out of the serialized stack when false.
#[test]
fn a_failing_cache_needs_degrade_and_is_kept() {
    let st = stack(
        r#"fs = "ext4"
mdadm = { level = 5, members = 3 }
degrade = true
cache = { kind = "bcache", mode = "writeback", fail = true }"#,
    );
    assert!(st.cache().is_some_and(|c| c.fail));
    assert_eq!(
        st.describe(),
        "md raid5 x3 > bcache writeback (1 disk, failed) > ext4"
    );
    let plain = stack(
        r#"fs = "ext4"
mdadm = { level = 5, members = 3 }
degrade = true
cache = { kind = "bcache", fail = false }"#,
    );
    let json = serde_json::to_string(&plain).unwrap();
    assert!(!json.contains("fail"), "{json}");
}
