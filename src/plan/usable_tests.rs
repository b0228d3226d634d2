//! The capacity model against what the tools built on this kind of machine (btrfs-progs 6.2,
//! xfsprogs 6.1, e2fsprogs 1.47 on sparse files attached as loop devices; mdadm 4.2 in the VM
//! lab): every figure below was read from a real filesystem, not computed.

use super::*;
use crate::stack::BtrfsProfile::{Dup, Raid0, Raid1, Raid1c3, Raid5, Raid6, Raid10, Single};

/// `Free (estimated)` of `btrfs filesystem usage -b` on fresh filesystems made by mkfs.btrfs
/// with `-d DATA -m META` on N sparse files of the size given.
#[test]
fn btrfs_usable_is_what_btrfs_estimates() {
    let cases: [(BtrfsProfile, BtrfsProfile, u64, u64, u64); 20] = [
        (Raid1, Raid1, 4, GIB, 1_870_659_584),
        (Raid10, Raid1, 4, GIB, 1_870_659_584),
        (Raid5, Raid1, 4, GIB, 2_805_989_376),
        (Raid6, Raid1c3, 4, GIB, 1_732_247_552),
        (Raid1, Raid1, 4, 4 * TIB, 8_795_010_891_776),
        (Raid10, Raid1, 4, 4 * TIB, 8_795_010_891_776),
        (Raid5, Raid1, 4, 4 * TIB, 13_192_516_337_664),
        (Raid6, Raid1c3, 4, 4 * TIB, 8_794_469_826_560),
        (Single, Dup, 1, GIB, 949_616_640),
        (Single, Dup, 1, 4 * TIB, 4_395_882_250_240),
        (Raid1, Raid1, 2, GIB, 958_005_248),
        (Raid1, Raid1, 4, 16 * GIB, 33_277_607_936),
        (Raid1, Raid1, 4, 12 * GIB, 25_492_979_712),
        (Raid10, Raid10, 4, GIB, 1_996_488_704),
        (Raid5, Raid5, 4, GIB, 3_007_315_968),
        (Raid1c3, Raid1c3, 3, GIB, 796_917_760),
        (Raid6, Raid1c3, 6, 3 * GIB, 12_331_253_760),
        (Raid1, Raid1, 2, 300 * MIB, 272_629_760),
        (Raid0, Raid1, 3, GIB, 2_667_577_344),
        (Raid6, Raid1c3, 5, 100 * GIB, 320_174_712_422),
    ];
    for (data, meta, n, dev, want) in cases {
        assert_eq!(
            btrfs_usable(data, meta, n, dev),
            want,
            "{data:?}/{meta:?} x{n} of {dev}"
        );
    }
}

/// statvfs size (`df` Size) of xfs made by `mkfs.xfs -f` on one sparse file.
#[test]
fn xfs_size_is_what_statvfs_reports() {
    for (dev, want) in [
        (GIB, 1_006_632_960),
        (400_000_000, 332_890_112),
        (2_000_000_000, 1_932_890_112),
        (4_000_000_000_000, 3_998_046_875_648),
        (8_000_000_000_000, 7_997_863_002_112),
        (20_000_000_000_000, 19_997_863_002_112),
    ] {
        assert_eq!(xfs_size(dev), want, "xfs on {dev}");
    }
}

/// statvfs size of ext4 made by `mkfs.ext4 -F` on one sparse file: every size type of
/// mke2fs.conf (small, default, big, huge), the last over 2^32 blocks (no resize inode).
#[test]
fn ext4_size_is_what_statvfs_reports() {
    for (dev, want) in [
        (GIB, 1_020_702_720),
        (400_000_000, 364_411_904),
        (2_000_000_000, 1_929_150_464),
        (4_000_000_000_000, 3_936_046_333_952),
        (8_000_000_000_000, 7_935_753_236_480),
        (20_000_000_000_000, 19_919_341_756_416),
    ] {
        assert_eq!(ext4_size(dev), want, "ext4 on {dev}");
    }
}

/// mdadm's data offset: 264192 sectors (129 MiB) on big members, as `mdadm --examine` shows on
/// every disk of a few hundred GB and more; a reshape headroom of about 0.1% below that.
#[test]
fn md_data_offset_follows_mdadm() {
    assert_eq!(
        md_data_offset(4_000_000_000_000, Some(512 * KIB)),
        264_192 << 9
    );
    assert_eq!(md_data_offset(4_000_000_000_000, None), 264_192 << 9);
    // 1 GiB: headroom 1 MiB (0.1%), 12 KiB superblock and 4 KiB of bitmap: 2 MiB.
    assert_eq!(md_data_offset(GIB, None), 2 * MIB);
    assert_eq!(md_data_offset(GIB, Some(512 * KIB)), 2 * MIB);
    // 256 MiB: a raid1 member's headroom halves to 256 KiB (1 MiB in all), a chunked level
    // keeps at least 4 chunks' worth, 1 MiB (2 MiB in all).
    assert_eq!(md_data_offset(256 * MIB, None), MIB);
    assert_eq!(md_data_offset(256 * MIB, Some(512 * KIB)), 2 * MIB);
    // The component is a whole number of chunks after the offset.
    assert_eq!(md_component(GIB, Some(512 * KIB)), GIB - 2 * MIB);
    assert_eq!(
        md_component(4_000_000_000_000, Some(512 * KIB)),
        (4_000_000_000_000 - (264_192 << 9)) / (512 * KIB) * (512 * KIB)
    );
}

/// LVM on md: the data area starts at the full stripe when it is over 1 MiB, whole 4 MiB
/// extents after it.
#[test]
fn lvm_takes_whole_extents_after_its_metadata() {
    assert_eq!(lvm_volume(GIB, 0), GIB - 4 * MIB);
    assert_eq!(lvm_volume(GIB + 3 * MIB, 0), GIB);
    assert_eq!(lvm_volume(GIB + 3 * MIB, 4 * MIB), GIB - 4 * MIB);
}

/// The case: four 4 TB disks. RAID arithmetic alone said raid6 and raid10 hold 8 TB,
/// the lab's 1 GiB disks scaled up said 6.45 TB; btrfs on four sparse 4 TB files reports
/// 7.998 TB available. The model is within 0.1% of that, and md + xfs close to 8 TB too.
#[test]
fn four_4tb_disks_keep_nearly_all_of_the_raid_arithmetic() {
    let tb4 = 4_000_000_000_000u64;
    let r6 = btrfs_usable(Raid6, Raid1c3, 4, tb4);
    assert!((r6 as f64 / 7.998e12 - 1.0).abs() < 0.001, "{r6}");
    let r5 = btrfs_usable(Raid5, Raid1, 4, tb4);
    assert!((r5 as f64 / 11.998e12 - 1.0).abs() < 0.001, "{r5}");
    let layout = crate::plan::LayoutSpec::parse("raid6")
        .unwrap()
        .on_disks(4)
        .unwrap();
    let md6 = layout
        .reported_bytes(tb4, 512 * KIB, &Over::default(), &ZfsParams::default())
        .unwrap();
    assert!(md6 > 7_990_000_000_000 && md6 < 8_000_000_000_000, "{md6}");
}
