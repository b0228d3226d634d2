use super::*;

fn devs(n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| PathBuf::from(format!("/dev/loop{i}")))
        .collect()
}

fn full() -> ZfsOptions {
    ZfsOptions {
        vdev: VdevKind::Raidz(2),
        vdevs: 2,
        width: 4,
        special: 2,
        log: 1,
        cache: 1,
        spares: 1,
        pool: vec![("ashift".into(), "12".into())],
        dataset: vec![
            ("recordsize".into(), "1M".into()),
            ("compression".into(), "lz4".into()),
        ],
    }
}

#[test]
fn vdev_words_parse_like_zpool() {
    assert_eq!(VdevKind::parse("mirror"), Ok((VdevKind::Mirror, None)));
    assert_eq!(VdevKind::parse("raidz"), Ok((VdevKind::Raidz(1), None)));
    assert_eq!(VdevKind::parse("RAIDZ3"), Ok((VdevKind::Raidz(3), None)));
    let d = VdevKind::Draid {
        parity: 2,
        data: 8,
        spares: 2,
    };
    assert_eq!(VdevKind::parse("draid2:8d:2s"), Ok((d, None)));
    assert_eq!(VdevKind::parse("draid2:8d:12c:2s"), Ok((d, Some(12))));
    assert_eq!(d.zpool_word(12), "draid2:8d:12c:2s");
    assert_eq!(d.min_width(), 12);
    assert!(VdevKind::parse("draid4").is_err());
    assert!(VdevKind::parse("raid6").is_err());
    assert!(VdevKind::parse("draid2:8x").is_err());
}

#[test]
fn create_lists_every_vdev_group_in_order() {
    let o = full();
    let a = create_argv("iolab-x-0", &o, &devs(13)).join(" ");
    assert_eq!(
        a,
        "zpool create -f -o ashift=12 -O mountpoint=none iolab-x-0 \
         raidz2 /dev/loop0 /dev/loop1 /dev/loop2 /dev/loop3 \
         raidz2 /dev/loop4 /dev/loop5 /dev/loop6 /dev/loop7 \
         special mirror /dev/loop8 /dev/loop9 log /dev/loop10 cache /dev/loop11 spare /dev/loop12"
    );
    let d = dataset_argv("iolab-x-0", &o, Path::new("/tmp/m")).join(" ");
    assert_eq!(
        d,
        "zfs create -o mountpoint=/tmp/m -o recordsize=1M -o compression=lz4 iolab-x-0/data"
    );
    let mut m = ZfsOptions::simple(VdevKind::Mirror, 2);
    m.vdevs = 3;
    m.log = 2;
    let a = create_argv("p", &m, &devs(8)).join(" ");
    assert!(a.ends_with(
        "p mirror /dev/loop0 /dev/loop1 mirror /dev/loop2 /dev/loop3 mirror /dev/loop4 /dev/loop5 log mirror /dev/loop6 /dev/loop7"
    ));
}

#[test]
fn the_lifecycle_through_a_recording_runner() {
    let status = "  pool: iolab-x-0\n state: ONLINE\n  scan: resilvered 4096000 in 00:00:01 with 0 errors on Tue May 20 10:00:00 2025\nconfig:\n\n\tNAME STATE READ WRITE CKSUM\n\tiolab-x-0 ONLINE 0 0 0\n\t  raidz2-0 ONLINE 0 0 0\n\t    /dev/loop0 ONLINE 0 0 4\n\nerrors: No known data errors\n";
    let s = status.to_string();
    let r = Runner::recording_with(Box::new(move |argv: &[String]| {
        if argv.get(1).map(String::as_str) == Some("status") {
            Ok(s.clone())
        } else {
            Ok(String::new())
        }
    }));
    let o = ZfsOptions::simple(VdevKind::Raidz(2), 4);
    let d = devs(5);
    build(&r, "iolab-x-0", &o, &d[..4], Path::new("/mnt/m")).expect("build");
    set_arc_max(&r, 256 << 20).expect("arc");
    drop_arc(&r, "iolab-x-0", Path::new("/dev")).expect("export/import");
    degrade(&r, "iolab-x-0", &d[3], false).expect("offline");
    let res = resilver(&r, "iolab-x-0", &d[3], "/dev/loop4", false).expect("resilver");
    assert_eq!(res.bytes, 4_096_000);
    let sc = scrub(&r, "iolab-x-0").expect("scrub");
    assert_eq!(sc.cksum, 4);
    assert!(!sc.data_errors);
    destroy(&r, "iolab-x-0", &d[..4], true).expect("destroy");
    let log = r.log();
    let want = [
        "zpool create -f -O mountpoint=none iolab-x-0 raidz2 /dev/loop0 /dev/loop1 /dev/loop2 /dev/loop3",
        "zfs create -o mountpoint=/mnt/m iolab-x-0/data",
        "echo 268435456 > /sys/module/zfs/parameters/zfs_arc_max",
        "zpool export iolab-x-0",
        "zpool import -d /dev iolab-x-0",
        "zpool offline iolab-x-0 /dev/loop3",
        "zpool replace -f iolab-x-0 /dev/loop3 /dev/loop4",
        "zpool wait -t resilver iolab-x-0",
        "zpool status -p -P iolab-x-0",
        "zpool scrub -w iolab-x-0",
        "zpool status -p -P -v iolab-x-0",
        "zpool destroy -f iolab-x-0",
        "zpool labelclear -f /dev/loop0",
    ];
    assert_eq!(&log[..want.len()], &want[..]);
    assert!(destroy(&r, "tank", &[], false).is_err(), "only lab pools");
}

#[test]
fn shape_and_description() {
    let o = full();
    assert_eq!(o.data_disks(), 8);
    assert_eq!(o.extra_disks(), 5);
    assert_eq!(
        o.tolerated_failures(),
        1,
        "the special mirror of 2 survives 1"
    );
    assert_eq!(
        o.describe(),
        "zfs 2 x raidz2 x4, special mirror x2, log x1, cache x1, spare x1 [ashift=12 recordsize=1M compression=lz4]"
    );
    let g = 1u64 << 30;
    // Data disks less parity, less the slop reserve (1/32, at least 128MiB).
    assert_eq!(o.usable(g), 4 * g - (128 << 20));
    let mut m = ZfsOptions::simple(VdevKind::Mirror, 3);
    m.vdevs = 2;
    assert_eq!(m.tolerated_failures(), 2);
    assert_eq!(m.usable(g), 2 * g - (128 << 20));
    let d = ZfsOptions::simple(
        VdevKind::Draid {
            parity: 2,
            data: 8,
            spares: 2,
        },
        12,
    );
    assert_eq!(d.usable(10 * g), 80 * g - (80 * g) / 32);
    // A tiny pool keeps back half (the lab's 256MiB mirrors hold 128MiB).
    assert_eq!(
        ZfsOptions::simple(VdevKind::Mirror, 2).usable(256 << 20),
        128 << 20
    );
    assert_eq!(draid_spare_name(2, 0, 1), "draid2-0-1");
}

/// After a power cut the pool is imported by force, unmounted, under this boot's
/// name when the lab that built it named it otherwise.
#[test]
fn a_pool_cut_from_power_is_imported_under_this_labs_name() {
    assert_eq!(
        import_argv("iolab-old-0", "iolab-new-0").join(" "),
        "zpool import -f -N -d /dev iolab-old-0 iolab-new-0"
    );
    assert_eq!(
        import_argv("iolab-x-1", "iolab-x-1").join(" "),
        "zpool import -f -N -d /dev iolab-x-1"
    );
}
