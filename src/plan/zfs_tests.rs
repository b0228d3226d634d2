//! ZFS capacity with every number spelled out. The allocation rule is `vdev_raidz_asize`
//! (the same rule as Matt Ahrens' "RAID-Z parity cost" table); metaslabs, labels and slop are
//! OpenZFS 2.x's. The 16TB figures are those `iolab plan --disks 12 --disk-size 16TB` prints.

use super::*;
use crate::plan::layout::LayoutSpec;
use crate::plan::perf::{Caps, DiskPerf, predict_zfs as predict};

const TB16: u64 = 16_000_000_000_000;

fn cap(name: &str, disks: u32, disk: u64, p: &ZfsParams) -> ZfsCapacity {
    let l = LayoutSpec::parse(name)
        .expect("layout")
        .on_disks(disks)
        .expect("placed");
    capacity(&l, disk, p).expect("a zfs layout")
}

#[test]
fn raidz_allocation_padding_by_hand() {
    let rz = |width, parity| VdevShape::Raidz { width, parity };
    // 128KiB at ashift 12 = 32 sectors.
    // raidz2 x12: 10 data columns -> 4 rows -> 8 parity; 40 rounded up to a multiple of 3 = 42.
    assert_eq!(alloc_sectors(rz(12, 2), 128 << 10, 12), 42);
    // raidz2 x6: 4 data columns -> 8 rows -> 16 parity; 48 is a multiple of 3.
    assert_eq!(alloc_sectors(rz(6, 2), 128 << 10, 12), 48);
    // raidz1 x5: 4 data columns -> 8 rows -> 8 parity; 40 is even.
    assert_eq!(alloc_sectors(rz(5, 1), 128 << 10, 12), 40);
    // raidz1 x4: 3 data columns -> 11 rows -> 11 parity; 43 rounded up to even = 44.
    assert_eq!(alloc_sectors(rz(4, 1), 128 << 10, 12), 44);
    // raidz3 x11 at ashift 9 (256 sectors): 8 columns -> 32 rows -> 96 parity; 352 % 4 = 0.
    assert_eq!(alloc_sectors(rz(11, 3), 128 << 10, 9), 352);
    // A 4KiB block on raidz2: 1 data + 2 parity = 3 sectors (the small-block cost).
    assert_eq!(alloc_sectors(rz(12, 2), 4096, 12), 3);
    // 1MiB records on raidz2 x12: 256 sectors, 26 rows, 52 parity; 308 -> 309.
    assert_eq!(alloc_sectors(rz(12, 2), 1 << 20, 12), 309);
    // dRAID fixed width: 8 data + 2 parity per group; 32 sectors = 4 groups = 40.
    let dr = VdevShape::Draid {
        children: 12,
        data: 8,
        parity: 2,
        spares: 2,
    };
    assert_eq!(alloc_sectors(dr, 128 << 10, 12), 40);
    // ... and a 4KiB block still takes a whole group: 10 sectors.
    assert_eq!(alloc_sectors(dr, 4096, 12), 10);
}

#[test]
fn labels_metaslabs_and_slop_by_hand() {
    // 16TB = 16e12 bytes: aligned to 256KiB (61035156 x 262144 = 15999999934464), less 4.5MiB.
    assert_eq!(child_asize(TB16), 15_999_999_934_464 - 4_718_592);
    assert_eq!(child_asize(TB16), 15_999_995_215_872);
    // 12 children: 191999942590464 bytes -> asize/200 ~ 0.96e12 -> highbit 40 -> capped at 34.
    let a = vdev_asize(
        VdevShape::Raidz {
            width: 12,
            parity: 2,
        },
        TB16,
    );
    assert_eq!(a, 191_999_942_590_464);
    assert_eq!(metaslab_shift(a), 34);
    // 11175 whole 16GiB metaslabs, one of them the embedded log: 11174 x 2^34.
    assert_eq!(a >> 34, 11_175);
    assert_eq!(metaslab_bytes(a), 11_174 << 34);
    // A 1GiB vdev: 2 x 512MiB is under 16 metaslabs -> highbit(64MiB) = 27: 8 of 128MiB.
    assert_eq!(metaslab_shift(1 << 30), 27);
    // Slop: 1/32, at least 128MiB (or half a tiny pool), at most 128GiB.
    assert_eq!(slop(32 << 30), 1 << 30);
    assert_eq!(slop(1 << 30), 128 << 20);
    assert_eq!(slop(100 << 20), 50 << 20);
    assert_eq!(slop(100 << 40), 128 << 30);
}

#[test]
fn twelve_16tb_disks() {
    let p = ZfsParams::default();
    // raidz2 x12: 11174 x 16GiB = 191967858262016 bytes of metaslabs; records of 128KiB
    // use 131072/172032 (32/42) of it = 146261225342488; less the 128GiB slop (137438953472)
    // = 146123786389016 (146.1 TB).
    // zfs list: (191967858262016 >> 9) x 390 = 146225517035520, less slop = 146088078082048.
    let c = cap("raidz2", 12, TB16, &p);
    assert_eq!(c.allocatable, 191_967_858_262_016);
    assert_eq!(c.usable, 146_123_786_389_016);
    assert_eq!(c.zfs_list, 146_088_078_082_048);
    assert_eq!(c.slop, 137_438_953_472);
    // 2 x raidz2 x6: 2 x 5586 x 16GiB, 32/48 of it (no padding, 4 data columns), less slop.
    let c = cap("2xraidz2", 12, TB16, &p);
    assert_eq!(c.allocatable, 2 * 5_586 * (1 << 34));
    assert_eq!(c.usable, 127_818_226_728_960);
    // 6 x 2-way mirror: 6 x 930 x 16GiB, all of it, less slop.
    let c = cap("6xmirror", 12, TB16, &p);
    assert_eq!(c.allocatable, 6 * 930 * (1 << 34));
    assert_eq!(c.usable, 6 * 930 * (1 << 34) - (128 << 30));
    assert_eq!(c.usable, 95_726_231_093_248);
    // draid2:8d:2s on 12: 10 children of 953674 16MiB rows = 159999946915840 bytes, 9313
    // metaslabs less the embedded log = 9312 x 16GiB,
    // 32/40 of it, less slop.
    let c = cap("draid2:8d:2s", 12, TB16, &p);
    assert_eq!(c.allocatable, 9_312 * (1 << 34));
    assert_eq!(c.usable, 127_845_714_519_654);
}

#[test]
fn recordsize_changes_what_raidz_holds() {
    // raidz2 x6 with 1MiB records: 256 sectors + 128 parity = 384 (a multiple of 3): still 2/3.
    // raidz2 x12 with 1MiB records: 309 sectors per 256: 82.8%, against 76.2% at 128KiB.
    let small = cap("raidz2", 12, TB16, &ZfsParams::default()).usable;
    let big = cap(
        "raidz2",
        12,
        TB16,
        &ZfsParams {
            recordsize: 1 << 20,
            ..ZfsParams::default()
        },
    )
    .usable;
    assert_eq!(big, 191_967_858_262_016 * 256 / 309 - (128 << 30));
    assert!(big > small);
}

#[test]
fn a_raidz_vdev_gives_one_disks_random_iops() {
    let perf = DiskPerf::default();
    let caps = Caps::default();
    let placed = |n: &str| {
        LayoutSpec::parse(n)
            .expect("layout")
            .on_disks(12)
            .expect("placed")
    };
    let rz = predict(&placed("raidz2"), &perf, &caps).expect("zfs");
    assert_eq!(rz.rand_read.value, perf.rand_read_iops);
    assert_eq!(rz.rand_write.value, perf.rand_write_iops);
    assert_eq!(rz.seq_read.value, 10.0 * perf.seq_read_mbps);
    let two = predict(&placed("2xraidz2"), &perf, &caps).expect("zfs");
    assert_eq!(two.rand_read.value, 2.0 * perf.rand_read_iops);
    let m = predict(&placed("6xmirror"), &perf, &caps).expect("zfs");
    assert_eq!(m.rand_read.value, 12.0 * perf.rand_read_iops, "N x read");
    assert_eq!(m.rand_write.value, 6.0 * perf.rand_write_iops);
    let d = predict(&placed("draid2:8d:2s"), &perf, &caps).expect("zfs");
    assert_eq!(
        d.rand_read.value, perf.rand_read_iops,
        "10 children / 10 per group"
    );
    assert!((resilver_speedup(&placed("draid2:8d:2s")) - 11.0 / 9.0).abs() < 1e-12);
    assert_eq!(resilver_speedup(&placed("raidz2")), 1.0);
}
