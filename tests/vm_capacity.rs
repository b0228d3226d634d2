//! Usable capacity at the real disk size, for the layouts this host cannot build:
//! md RAID5 with xfs, RAID6 with LVM and xfs, RAID10 with ext4, and a ZFS raidz, built in
//! the VM on four sparse disks of 4 TB (only metadata is written). What each reports there is
//! the truth the planner's model of fixed overheads (md's data offset and chunk rounding,
//! LVM's metadata and extents, the xfs log, ext4's tables and journal, ZFS's labels,
//! metaslabs and slop) must meet within 1%: `iolab decide` beside the lab's figure, and
//! `iolab plan`. A lab on small disks scaled up would miss by the whole overhead.
//!
//! Needs what tests/vm.rs needs; the raidz layout also needs ZFS in the VM (zfsutils-linux and
//! the module `scripts/zfs-module` caches; CI has both), and is left out with a note without.

mod common;

use common::vm::{SEQ_WRITE_1M, VmLab, cached_zfs_module, layout, vm_or_skip, workloads_tail};
use common::{LoopDev, have_tool, skip};

/// ZFS's tools on the host and a zfs module cached for the VM's kernel.
fn zfs_in_the_vm() -> bool {
    have_tool("zpool") && cached_zfs_module().is_some()
}

const MD_LAYOUTS: &str = r#"
[[layout]]
name = "md5-xfs"
mdadm = { level = 5, members = 4, assume_clean = true }
fs = "xfs"

[[layout]]
name = "md6-lvm-xfs"
mdadm = { level = 6, members = 4, assume_clean = true }
lvm = true
fs = "xfs"

[[layout]]
name = "md10-ext4"
mdadm = { level = 10, members = 4, assume_clean = true }
fs = "ext4"
mkfs_options = "-E lazy_itable_init=1,lazy_journal_init=1"
"#;

const ZFS_LAYOUT: &str = r#"
[[layout]]
name = "zfs-raidz1"
zfs = { vdev = "raidz1", width = 4, pool = { ashift = 12 } }
"#;

fn off(a: f64, truth: f64) -> f64 {
    (a / truth - 1.0).abs()
}

#[test]
fn md_lvm_and_zfs_at_4tb_report_what_the_planner_says() {
    if !vm_or_skip(&[]) {
        return;
    }
    let zfs = zfs_in_the_vm();
    if !zfs {
        skip(
            &common::kind::tool("zfs-dkms"),
            "the zfs-raidz1 layout (no zfs module cached for the VM; run scripts/zfs-module)",
        );
    }
    // The VM lab refuses disks that could outgrow the free space (six 4 TB disks with the two
    // replacements); only metadata and 8 MiB of workload are written here, so they go on a
    // filesystem as large as they may grow, itself sparse in /dev/shm: its writes (the
    // guests' mkfs logs and tables, a few GiB) are what is really held.
    let mut room = LoopDev::new("vmcap-room", 40 << 40);
    let mnt = room.mkfs_and_mount("ext4");
    let mut lab = VmLab::new("iolab-vmcap");
    lab.disks = mnt.join("disks");
    let body = format!(
        "{MD_LAYOUTS}{}{}",
        if zfs { ZFS_LAYOUT } else { "" },
        workloads_tail("8MiB", "300ms", &[SEQ_WRITE_1M])
    );
    let spec = lab.dir.path().join("vm-capacity.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"vm-capacity\"\n[disks]\nloop = {{ count = 4, size = \"4TB\", dir = \"{}\" }}\n{body}",
            lab.disks.display()
        ),
    )
    .unwrap();
    let (code, v, stderr) = lab.run(&spec, "VM capacity lab at 4 TB");
    assert_eq!(code, 0, "stderr: {stderr}\n{v:#}");
    let out = lab
        .iolab()
        .args(["decide", "last", "--disk-size", "4TB", "--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let d = out.json();
    let plan = |layouts: &str, fs: &str| {
        let out = lab
            .iolab()
            .args([
                "plan",
                "--disks",
                "4",
                "--disk-size",
                "4TB",
                "--layouts",
                layouts,
                "--fs",
                fs,
                "--format",
                "json",
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["layouts"][0]["usable_bytes"].as_f64().unwrap()
    };
    let mut names = vec![
        ("md5-xfs", Some(plan("raid5", "xfs"))),
        ("md6-lvm-xfs", None),
        ("md10-ext4", Some(plan("raid10", "ext4"))),
    ];
    if zfs {
        names.push(("zfs-raidz1", Some(plan("raidz1", "xfs"))));
    }
    for (name, planned) in names {
        let l = layout(&v, name);
        assert_eq!(l["status"], "ok", "{l:#}");
        let truth = l["usable_bytes"].as_f64().unwrap();
        let r = d["rows"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["name"] == name))
            .unwrap_or_else(|| panic!("no row {name}: {d:#}"));
        // The lab's disks are the real size: the decision shows what the layout reported.
        assert_eq!(r["usable"]["value"].as_f64(), Some(truth), "{r:#}");
        let model = r["usable_planner"].as_f64().unwrap();
        eprintln!("{name}: reported {truth}, model {model}, plan {planned:?}");
        assert!(off(model, truth) < 0.01, "{name}: model {model} vs {truth}");
        if let Some(p) = planned {
            assert!(off(p, truth) < 0.01, "{name}: plan {p} vs {truth}");
        }
    }
    lab.assert_nothing_left();
}
