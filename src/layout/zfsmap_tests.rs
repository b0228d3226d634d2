use super::*;

/// `zdb -dddddd iolab-x-0/data 130` of a 320 KiB file in a mirror pool (recordsize 128k,
/// compression off): three L0 blocks under one L1 (the L1 with its two metadata copies),
/// the third partly a hole-free tail.
const OBJECT: &str = "Dataset iolab-x-0/data [ZPL], ID 132, cr_txg 8, 12.1M, 133 objects, rootbp DVA[0]=<0:30d000:1000> DVA[1]=<0:1806000:1000> [L0 DMU objset] fletcher4 uncompressed unencrypted LE contiguous unique double size=1000L/1000P birth=24L/24P fill=133 cksum=1\n\
\n\
    Object  lvl   iblk   dblk  dsize  dnsize  lsize   %full  type\n\
       130    2   128K   128K   320K     512   384K  100.00  ZFS plain file\n\
                                               176   bonus  System attributes\n\
\tdnode flags: USED_BYTES USERUSED_ACCOUNTED USEROBJUSED_ACCOUNTED \n\
\tdnode maxblkid: 2\n\
\tpath\t/.iolab-data/d0/f00007\n\
\tuid     0\n\
\tsize\t327680\n\
Indirect blocks:\n\
               0 L1  0:2c4000:1000 0:1802000:1000 20000L/1000P F=3 B=20/20 cksum=3a\n\
               0  L0 0:a0000:20000 20000L/20000P F=1 B=20/20 cksum=1f\n\
           20000  L0 0:c0000:20000 20000L/20000P F=1 B=20/20 cksum=2f\n\
           40000  L0 0:e0000:20000G 20000L/20000P F=1 B=20/20 cksum=3f\n\
           60000  L0 0:100000:20000 1:100000:20000 20000L/8000P F=1 B=20/20 cksum=4f\n\
           80000  L0 20000L B=0\n\
           a0000  L0 EMBEDDED et=0 200L/40P B=20\n\
\n\
\t\tsegment [0000000000000000, 0000000000060000) size  384K\n";

#[test]
fn level_0_blocks_are_read_with_every_dva_and_the_rest_left_out() {
    let b = parse_object_blocks(OBJECT).unwrap();
    assert_eq!(b.len(), 2, "{b:?}");
    assert_eq!(
        b[0],
        FileBlock {
            file_offset: 0,
            lsize: 0x20000,
            psize: 0x20000,
            dvas: vec![Dva {
                vdev: 0,
                offset: 0xa0000,
                asize: 0x20000
            }],
        }
    );
    assert_eq!(b[1].file_offset, 0x20000);
    // Gang (G), compressed (L != P), hole and embedded blocks are not on a member as the
    // file's bytes.
    assert!(parse_object_blocks("Object lvl\n 0 L0 0:1:2 2L/2P\n").is_err());
}

/// `zdb -C iolab-x-0` of a raidz1 over three whole disks (ZFS partitioned them) and a mirror.
const CONFIG: &str = "
MOS Configuration:
        version: 5000
        name: 'iolab-x-0'
        vdev_children: 2
        vdev_tree:
            type: 'root'
            id: 0
            guid: 1
            children[0]:
                type: 'raidz'
                id: 0
                guid: 2
                nparity: 1
                metaslab_array: 256
                ashift: 12
                is_log: 0
                children[0]:
                    type: 'disk'
                    id: 0
                    path: '/dev/vdb1'
                    devid: 'virtio-d1-part1'
                    whole_disk: 1
                children[1]:
                    type: 'disk'
                    id: 1
                    path: '/dev/vdc1'
                children[2]:
                    type: 'disk'
                    id: 2
                    path: '/dev/vdd1'
            children[1]:
                type: 'mirror'
                id: 1
                ashift: 9
                children[0]:
                    type: 'disk'
                    path: '/dev/vde1'
                children[1]:
                    type: 'disk'
                    path: '/dev/vdf1'
        features_for_read:
            com.delphix:hole_birth
";

#[test]
fn the_vdev_tree_gives_each_top_level_vdev_its_children_in_order() {
    let v = parse_config(CONFIG).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].shape, Shape::Raidz(1));
    assert_eq!(v[0].ashift, 12);
    assert_eq!(v[0].children, ["/dev/vdb1", "/dev/vdc1", "/dev/vdd1"]);
    assert_eq!((v[1].id, &v[1].shape), (1, &Shape::Mirror));
    assert_eq!(v[1].children, ["/dev/vde1", "/dev/vdf1"]);
    let one = "vdev_tree:\n    type: 'root'\n    children[0]:\n        type: 'disk'\n        id: 0\n        path: '/dev/vdb1'\n        ashift: 12\n";
    let v = parse_config(one).unwrap();
    assert_eq!(
        (&v[0].shape, &v[0].children[..]),
        (&Shape::Disk, &["/dev/vdb1".to_string()][..])
    );
    assert!(parse_config("nothing").is_err());
}

#[test]
fn raidz_columns_follow_vdev_raidz_map_alloc() {
    // A full 128 KiB block at 0 over raidz1 x3, 4 KiB sectors: parity on child 0, the first
    // half of the data on child 1, the second on child 2.
    let c = raidz_columns(0, 0x20000, 3, 1, 12);
    let got: Vec<_> = c
        .iter()
        .map(|c| (c.child, c.offset, c.size, c.parity))
        .collect();
    assert_eq!(
        got,
        [
            (0, 0, 0x10000, true),
            (1, 0, 0x10000, false),
            (2, 0, 0x10000, false)
        ]
    );
    // At 1 MiB (bit 20 set) raidz1 swaps its first two columns: the block starts on child
    // (256 % 3) = 1 at row 85; the parity moves to child 2, the first data column to child 1,
    // and the last column wraps onto child 0 one sector further down.
    let c = raidz_columns(0x10_0000, 0x20000, 3, 1, 12);
    let got: Vec<_> = c.iter().map(|c| (c.child, c.offset, c.parity)).collect();
    assert_eq!(
        got,
        [(2, 0x55000, true), (1, 0x55000, false), (0, 0x56000, false)]
    );
    // 5 sectors over 2 data columns: the first columns take 3 sectors, the last 2.
    let c = raidz_columns(0x3000, 0x5000, 3, 1, 12);
    let got: Vec<_> = c.iter().map(|c| (c.child, c.offset, c.size)).collect();
    assert_eq!(
        got,
        [
            (0, 0x1000, 0x3000),
            (1, 0x1000, 0x3000),
            (2, 0x1000, 0x2000)
        ]
    );
    // A block smaller than a row uses only the columns it needs (1 sector + parity).
    let c = raidz_columns(0x4000, 0x1000, 3, 1, 12);
    assert_eq!(c.len(), 2, "{c:?}");
    // raidz2 over 4: two parity columns.
    let c = raidz_columns(0, 0x4000, 4, 2, 12);
    let got: Vec<_> = c.iter().map(|c| (c.child, c.size, c.parity)).collect();
    assert_eq!(
        got,
        [
            (0, 0x2000, true),
            (1, 0x2000, true),
            (2, 0x2000, false),
            (3, 0x2000, false)
        ]
    );
}

fn raidz_map() -> ZfsMap {
    let v = parse_config(CONFIG).unwrap();
    // Members 0..3 are the raidz's disks (partition at 1 MiB), 3 and 4 the mirror's.
    let base = (1 << 20) + LABEL_START;
    let children = vec![
        vec![Some((0, base)), Some((1, base)), Some((2, base))],
        vec![Some((3, base)), Some((4, base))],
    ];
    let dva = |vdev, offset, asize| Dva {
        vdev,
        offset,
        asize,
    };
    let blocks = [
        dva(0, 0, 0x30000),
        dva(0, 0x10_0000, 0x30000),
        dva(1, 0x2000, 0x20000),
    ]
    .into_iter()
    .map(|d| Block {
        addr: block_addr(&d),
        psize: 0x20000,
        dvas: vec![d],
    })
    .collect();
    ZfsMap::new(v, children, blocks, 5)
}

#[test]
fn a_block_maps_to_its_columns_and_back() {
    let m = raidz_map();
    let base = (1 << 20) + LABEL_START;
    // Bytes 0x8000.. of the first block: child 1, 0x8000 into its first column.
    let p = m.map(0x8000, 0x10000);
    let got: Vec<_> = p
        .iter()
        .map(|p| (p.disk, p.member_offset, p.len, p.array_offset))
        .collect();
    assert_eq!(
        got,
        [
            (1, base + 0x8000, 0x8000, 0x8000),
            (2, base, 0x8000, 0x10000)
        ]
    );
    // With parity: the same rows of child 0.
    let p = m.pieces(0x8000, 0x1000, true);
    assert_eq!(p.len(), 2);
    assert_eq!(
        (p[1].0.disk, p[1].0.member_offset, p[1].1),
        (0, base + 0x8000, false)
    );
    // Back: what each member byte holds.
    assert_eq!(
        m.content(1, base + 0x8000),
        (Some(Content::Data(0x8000)), 0x8000)
    );
    assert_eq!(m.content(0, base + 0x100).0, Some(Content::Parity));
    assert_eq!(m.content(0, base - 1), (None, 1));
    // The swapped block: its first data column on child 1 at row 0x55000.
    let a = block_addr(&Dva {
        vdev: 0,
        offset: 0x10_0000,
        asize: 0,
    });
    assert_eq!(m.content(1, base + 0x55000).0, Some(Content::Data(a)));
    assert_eq!(
        m.content(0, base + 0x56000).0,
        Some(Content::Data(a + 0x10000))
    );
    assert_eq!(m.content(2, base + 0x55000).0, Some(Content::Parity));
    // A mirror block is on both children, at the DVA's offset past the labels.
    let a = block_addr(&Dva {
        vdev: 1,
        offset: 0x2000,
        asize: 0,
    });
    let p = m.map(a + 16, 32);
    let got: Vec<_> = p.iter().map(|p| (p.disk, p.member_offset)).collect();
    assert_eq!(got, [(3, base + 0x2010), (4, base + 0x2010)]);
    assert_eq!(m.content(4, base + 0x2010).0, Some(Content::Data(a + 16)));
}
