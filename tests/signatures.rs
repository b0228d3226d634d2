//! Every on-disk signature the issue lists, made on a real loop device with its own tool (or,
//! where this kernel cannot run the tool, the documented bytes, checked to be what libblkid
//! recognises), and every way a device can be in use: `iolab run DEV --pattern write` and
//! `iolab lab` with the device in `disks.devices` must refuse, name the device and what was
//! found, and leave every byte of the device as it was (sha256 before and after).
//!
//! Figures: docs/reliability.md ("signatures refused n/n").

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
mod lab_world;
use common::{Iolab, LoopDev, Out, need_tool};

const MIB: u64 = 1 << 20;

macro_rules! need {
    ($($tool:expr => $apt:expr),* $(,)?) => {
        lab_world::require_lab!("losetup" => "mount", "wipefs" => "util-linux",
            "blkid" => "util-linux", "sha256sum" => "coreutils" $(, $tool => $apt)*);
    };
}

fn sh(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sha(dev: &Path) -> String {
    let _ = Command::new("blockdev")
        .arg("--flushbufs")
        .arg(dev)
        .status();
    sh("sha256sum", &[dev.to_str().unwrap()])
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// What libblkid lists on a device (wipefs listing plus `blkid -p` types).
fn blkid_sees(dev: &Path) -> String {
    let w = Command::new("wipefs")
        .args(["--no-act", "--noheadings", "-o", "TYPE,OFFSET"])
        .arg(dev)
        .output()
        .unwrap();
    let b = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(dev)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&w.stdout),
        String::from_utf8_lossy(&b.stdout)
    )
}

fn lab_spec(dir: &Path, dev: &Path) -> PathBuf {
    let p = dir.join("lab.toml");
    std::fs::write(
        &p,
        format!(
            "[disks]\ndevices = [\"{}\"]\n[[layout]]\nname = \"ext4-on-it\"\nfs = \"ext4\"\n\
             [workloads]\nprofiles = [\"quick\"]\nrepeat = 1\ntime = \"100ms\"\nsize = \"4MiB\"\n",
            dev.display()
        ),
    )
    .unwrap();
    p
}

/// `iolab run DEV --pattern write` (with `--destroy DEV` when asked).
fn run_write(target: &Path, destroy: bool) -> Out {
    let t = target.to_str().unwrap();
    let mut args = vec![
        "run",
        t,
        "--pattern",
        "write",
        "--time",
        "200ms",
        "--size",
        "1MiB",
    ];
    if destroy {
        args.extend(["--destroy", t]);
    }
    Iolab::new().args(&args).run()
}

/// Both commands refuse (exit 2) naming `shown` and every word of `what`; the bytes stay.
fn assert_refused(target: &Path, node: &Path, destroy: bool, what: &[&str]) {
    let before = sha(node);
    let w = lab_world::World::new("sig");
    let dir = tempfile::tempdir().unwrap();
    let spec = lab_spec(dir.path(), target);
    let t = target.to_str().unwrap();
    let mut lab_args = vec![spec.to_str().unwrap()];
    if destroy {
        lab_args.extend(["--destroy", t]);
    }
    for (cmd, out) in [
        ("run", run_write(target, destroy)),
        ("lab", w.lab(&lab_args)),
    ] {
        let err = out.stderr.as_str();
        assert_eq!(
            out.code, 2,
            "iolab {cmd} was not refused: {err}{}",
            out.stdout
        );
        assert!(
            err.contains(t),
            "iolab {cmd}: refusal does not name {t}: {err}"
        );
        for wd in what {
            assert!(
                err.contains(wd),
                "iolab {cmd}: refusal does not say {wd:?}: {err}"
            );
        }
        eprintln!("iolab {cmd}: {}", err.trim());
    }
    assert_eq!(
        before,
        sha(node),
        "{} changed while being refused",
        node.display()
    );
    assert!(w.state_files().is_empty(), "{:?}", w.state_files());
}

/// A loop device holding the signature `make` writes; checks libblkid sees `kind` on it, then
/// that both commands refuse naming it.
fn refused_signature(tag: &str, size: u64, kind: &str, make: impl FnOnce(&Path)) {
    let l = LoopDev::new(&format!("sig-{tag}"), size);
    make(&l.dev);
    let seen = blkid_sees(&l.dev);
    assert!(
        seen.contains(kind),
        "libblkid does not see {kind} on what we wrote: {seen}"
    );
    assert_refused(&l.dev, &l.dev, false, &[kind]);
}

// ---------------------------------------------------------------------------------------------
// Signatures, each made by its own tool

#[test]
fn gpt_partition_table_is_refused() {
    need!("sgdisk" => "gdisk");
    refused_signature("gpt", 64 * MIB, "gpt", |d| {
        sh("sgdisk", &["-o", "-n", "1:2048:+8M", d.to_str().unwrap()]);
    });
}

#[test]
fn mbr_partition_table_is_refused() {
    need!("sfdisk" => "fdisk");
    refused_signature("mbr", 64 * MIB, "dos", |d| {
        let mut c = Command::new("sfdisk")
            .args(["-q", "--no-reread"])
            .arg(d)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        c.stdin
            .take()
            .unwrap()
            .write_all(b"label: dos\nstart=2048, size=16384, type=83\n")
            .unwrap();
        assert!(c.wait().unwrap().success());
    });
}

fn mkfs(tool: &str, args: &[&str], d: &Path) {
    let mut a: Vec<&str> = args.to_vec();
    a.push(d.to_str().unwrap());
    sh(tool, &a);
}

#[test]
fn ext2_ext3_ext4_are_refused() {
    need!("mkfs.ext4" => "e2fsprogs");
    for (t, kind) in [("ext2", "ext2"), ("ext3", "ext3"), ("ext4", "ext4")] {
        refused_signature(t, 64 * MIB, kind, |d| {
            mkfs(&format!("mkfs.{t}"), &["-q", "-F"], d);
        });
    }
}

#[test]
fn xfs_is_refused() {
    need!("mkfs.xfs" => "xfsprogs");
    refused_signature("xfs", 320 * MIB, "xfs", |d| {
        mkfs("mkfs.xfs", &["-q", "-f"], d);
    });
}

#[test]
fn btrfs_is_refused() {
    need!("mkfs.btrfs" => "btrfs-progs");
    refused_signature("btrfs", 128 * MIB, "btrfs", |d| {
        mkfs("mkfs.btrfs", &["-q", "-f"], d);
    });
}

#[test]
fn swap_signature_is_refused() {
    need!("mkswap" => "util-linux");
    refused_signature("swap", 64 * MIB, "swap", |d| mkfs("mkswap", &["-q"], d));
}

#[test]
fn lvm2_pv_label_is_refused() {
    need!("pvcreate" => "lvm2");
    refused_signature("lvm", 64 * MIB, "LVM2_member", |d| {
        // No udev here: lvm must not wait for it.
        sh(
            "pvcreate",
            &[
                "-q",
                "--config",
                "devices { obtain_device_list_from_udev = 0 } activation { udev_sync = 0 udev_rules = 0 }",
                d.to_str().unwrap(),
            ],
        );
    });
}

#[test]
fn luks_header_is_refused() {
    need!("cryptsetup" => "cryptsetup-bin");
    refused_signature("luks", 64 * MIB, "crypto_LUKS", |d| {
        let mut c = Command::new("cryptsetup")
            .args([
                "luksFormat",
                "-q",
                "--pbkdf",
                "pbkdf2",
                "--pbkdf-force-iterations",
                "1000",
                "--key-file",
                "-",
            ])
            .arg(d)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        c.stdin.take().unwrap().write_all(b"not-a-secret").unwrap();
        assert!(c.wait().unwrap().success());
    });
}

#[test]
fn bcache_superblock_is_refused() {
    need!("make-bcache" => "bcache-tools");
    refused_signature("bcache", 64 * MIB, "bcache", |d| {
        mkfs("make-bcache", &["-B"], d);
    });
}

#[test]
fn vfat_boot_sector_is_refused() {
    need!("mkfs.vfat" => "dosfstools");
    refused_signature("vfat", 64 * MIB, "vfat", |d| mkfs("mkfs.vfat", &[], d));
}

#[test]
fn ntfs_boot_sector_is_refused() {
    need!("mkfs.ntfs" => "ntfs-3g");
    refused_signature("ntfs", 64 * MIB, "ntfs", |d| {
        mkfs("mkfs.ntfs", &["-Q", "-F", "-q"], d);
    });
}

// ---------------------------------------------------------------------------------------------
// Signatures whose tool cannot run on this kernel (no md driver; ZFS is a VM-only module): the
// documented on-disk bytes, checked above to be what libblkid recognises.

fn write_at(dev: &Path, off: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    f.write_all_at(bytes, off).unwrap();
    f.sync_all().unwrap();
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

const MD_MAGIC: u32 = 0xa92b_4efc;

/// md 0.90 superblock (`mdp_super_t`, md_p.h), 64 KiB-aligned in the last 64..128 KiB, with
/// its checksum: member (raid disk) 1 of a 2-device raid1.
fn md090(dev: &Path, size: u64) {
    let off = (size & !(64 * 1024 - 1)) - 64 * 1024;
    let mut b = vec![0u8; 4096];
    put32(&mut b, 0, MD_MAGIC);
    put32(&mut b, 4, 0); // major
    put32(&mut b, 8, 90); // minor
    put32(&mut b, 20, 0x1234_5678); // set_uuid0
    put32(&mut b, 28, 1); // level: raid1
    put32(&mut b, 32, u32::try_from(off / 1024).unwrap()); // size, KiB
    put32(&mut b, 36, 2); // nr_disks
    put32(&mut b, 40, 2); // raid_disks
    put32(&mut b, 52, 0x9abc_def0); // set_uuid1..3
    put32(&mut b, 56, 0x0fed_cba9);
    put32(&mut b, 60, 0x8765_4321);
    put32(&mut b, 992 * 4, 1); // this_disk.number
    put32(&mut b, 995 * 4, 1); // this_disk.raid_disk
    put32(&mut b, 996 * 4, 6); // this_disk.state: active, sync
    let sum: u64 = b
        .chunks_exact(4)
        .map(|w| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .sum();
    put32(&mut b, 38 * 4, ((sum & 0xffff_ffff) + (sum >> 32)) as u32); // sb_csum
    write_at(dev, off, &b);
}

/// The array the md 1.x superblocks below belong to, as mdadm prints its UUID.
const MD_UUID: &str = "3f2a9c41:d07e4b55:a1e2c3d4:e5f60718";

/// md 1.x superblock (`struct mdp_superblock_1`, md_p.h) at `off`, laid out as mdadm 4.2's
/// `--create` writes it (`init_super1`, `write_init_super1`): device 2 of a 4-device raid6
/// named `host1:data`, data at 1 MiB, a bad-block log after the superblock, the checksum over
/// 256 + 2 x max_dev bytes.
fn md1(dev: &Path, off: u64, size: u64) {
    let mut b = vec![0u8; 4096];
    put32(&mut b, 0, MD_MAGIC);
    put32(&mut b, 4, 1); // major_version
    b[16..32].copy_from_slice(&[
        0x3f, 0x2a, 0x9c, 0x41, 0xd0, 0x7e, 0x4b, 0x55, 0xa1, 0xe2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07,
        0x18,
    ]); // set_uuid
    b[32..42].copy_from_slice(b"host1:data"); // set_name
    put64(&mut b, 64, 1_700_000_000); // ctime
    put32(&mut b, 72, 6); // level
    put32(&mut b, 76, 2); // layout: left-symmetric
    let data_offset: u64 = if off == 0 || off == 4096 { 2048 } else { 0 };
    let data_size = (size >> 9) - 2048 - 16;
    put64(&mut b, 80, data_size); // size, sectors
    put32(&mut b, 88, 1024); // chunksize: 512 KiB
    put32(&mut b, 92, 4); // raid_disks
    put64(&mut b, 128, data_offset);
    put64(&mut b, 136, data_size);
    put64(&mut b, 144, off >> 9); // super_offset
    put32(&mut b, 160, 2); // dev_number
    b[168..184].copy_from_slice(b"iolab-device-id!"); // device_uuid
    b[185] = 9; // bblog_shift
    b[186..188].copy_from_slice(&8u16.to_le_bytes()); // bblog_size
    put32(&mut b, 188, 8); // bblog_offset
    put64(&mut b, 192, 1_700_000_000); // utime
    put64(&mut b, 200, 17); // events
    put64(&mut b, 208, u64::MAX); // resync_offset: clean
    put32(&mut b, 220, 4); // max_dev
    for i in 0..4u16 {
        let at = 256 + 2 * usize::from(i);
        b[at..at + 2].copy_from_slice(&i.to_le_bytes()); // dev_roles: active 0..3
    }
    let mut sum: u64 = 0;
    for w in b[..256 + 4 * 2].chunks_exact(4) {
        sum += u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    let csum = (sum & 0xffff_ffff) + (sum >> 32);
    put32(&mut b, 216, u32::try_from(csum & 0xffff_ffff).unwrap());
    write_at(dev, off, &b);
}

/// mdadm itself reads what we wrote as the superblock we meant (it needs no md driver to
/// examine a device). Without mdadm this part of the test is skipped, and the skip logged:
/// the layout is then checked by libblkid only.
fn mdadm_agrees(dev: &Path, version: &str, words: &[&str]) {
    if !need_tool("mdadm", "mdadm") {
        return;
    }
    let o = Command::new("mdadm")
        .arg("--examine")
        .arg(dev)
        .output()
        .expect("mdadm runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "mdadm --examine: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains(&format!("Version : {version}")), "{text}");
    assert!(text.contains(" - correct"), "checksum: {text}");
    for w in words {
        assert!(text.contains(w), "mdadm --examine does not say {w}: {text}");
    }
}

/// An md member is refused as one, naming its array: libblkid's `linux_raid_member`, then the
/// metadata version, level, array UUID and this device's role.
fn refused_md_member(tag: &str, version: &str, make: impl FnOnce(&Path, u64)) {
    let size = 64 * MIB;
    let l = LoopDev::new(&format!("sig-{tag}"), size);
    make(&l.dev, size);
    let seen = blkid_sees(&l.dev);
    assert!(
        seen.contains("linux_raid_member"),
        "libblkid does not see linux_raid_member on what we wrote: {seen}"
    );
    let (level, uuid, role) = if version == "0.90" {
        (
            "raid1",
            "12345678:9abcdef0:0fedcba9:87654321",
            "active device 1",
        )
    } else {
        ("raid6", MD_UUID, "active device 2")
    };
    mdadm_agrees(&l.dev, version, &[level, uuid]);
    let meta = format!("metadata {version}");
    assert_refused(
        &l.dev,
        &l.dev,
        false,
        &[
            "linux_raid_member",
            "md RAID member",
            &meta,
            level,
            uuid,
            role,
        ],
    );
}

#[test]
fn md_superblock_0_90_at_the_end_is_refused() {
    need!();
    refused_md_member("md090", "0.90", md090);
}

#[test]
fn md_superblock_1_1_at_the_start_is_refused() {
    need!();
    refused_md_member("md11", "1.1", |d, size| md1(d, 0, size));
}

/// An md 1.2 member was refused as `linux_raid_member` without saying it belongs to
/// an md array, nor to which one.
#[test]
fn md_superblock_1_2_at_4k_is_refused_naming_its_array() {
    need!();
    refused_md_member("md12", "1.2", |d, size| md1(d, 4096, size));
}

#[test]
fn md_superblock_1_0_at_the_end_is_refused() {
    need!();
    refused_md_member("md10", "1.0", |d, size| {
        md1(d, (((size >> 9) - 16) & !7) << 9, size);
    });
}

const VDEV_LABEL: u64 = 256 * 1024;

/// A ZFS vdev label (vdev_impl.h): an XDR nvlist with `pool_guid` at +16 KiB and uberblocks
/// (magic 0x00bab10c) in the uberblock array at +128 KiB.
fn zfs_label(dev: &Path, off: u64) {
    let mut l = vec![0u8; usize::try_from(VDEV_LABEL).unwrap()];
    // nvlist: XDR encoding header, version, flags; then one nvpair "pool_guid" (uint64).
    let mut nv: Vec<u8> = vec![1, 1, 0, 0];
    nv.extend(0u32.to_be_bytes());
    nv.extend(1u32.to_be_bytes());
    let name = b"pool_guid";
    let padded = name.len().div_ceil(4) * 4;
    let pair_len = 4 + 4 + 4 + padded + 4 + 4 + 8;
    nv.extend(u32::try_from(pair_len).unwrap().to_be_bytes());
    nv.extend(u32::try_from(pair_len).unwrap().to_be_bytes());
    nv.extend(u32::try_from(name.len()).unwrap().to_be_bytes());
    nv.extend(name);
    nv.extend(std::iter::repeat_n(0u8, padded - name.len()));
    nv.extend(8u32.to_be_bytes()); // DATA_TYPE_UINT64
    nv.extend(1u32.to_be_bytes()); // one element
    nv.extend(0x10ab_cdef_1234_5678u64.to_be_bytes());
    nv.extend([0u8; 8]); // end of list
    l[16 * 1024..16 * 1024 + nv.len()].copy_from_slice(&nv);
    for i in 0..8 {
        let u = 128 * 1024 + i * 1024;
        put64(&mut l, u, 0x00ba_b10c); // ub_magic
        put64(&mut l, u + 8, 5000); // ub_version
        put64(&mut l, u + 16, 4 + i as u64); // ub_txg
    }
    write_at(dev, off, &l);
}

#[test]
fn zfs_label_at_the_start_is_refused() {
    need!();
    refused_signature("zfs-start", 64 * MIB, "zfs_member", |d| zfs_label(d, 0));
}

#[test]
fn zfs_label_at_the_end_is_refused() {
    need!();
    let size = 64 * MIB;
    refused_signature("zfs-end", size, "zfs_member", |d| {
        zfs_label(d, size - VDEV_LABEL);
    });
}

// ---------------------------------------------------------------------------------------------
// In use: refused even with --destroy

/// Unmounts (lazily if needed) and removes a mount point made here, on drop.
struct Mnt(PathBuf);

impl Mnt {
    fn new(src: &Path, opts: &[&str]) -> Mnt {
        let d = tempfile::Builder::new()
            .prefix("iolab-sig-mnt")
            .tempdir()
            .unwrap()
            .keep();
        let mut a: Vec<&str> = opts.to_vec();
        a.push(src.to_str().unwrap());
        a.push(d.to_str().unwrap());
        sh("mount", &a);
        Mnt(d)
    }
}

impl Drop for Mnt {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(&self.0).output();
        common::unmount(&self.0);
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// ext4 with no lazy initialisation, so nothing writes to it in the background while mounted.
fn quiet_ext4(d: &Path) {
    mkfs(
        "mkfs.ext4",
        &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        d,
    );
}

/// Freezes the filesystem (nothing may write to it) while refusals are checked.
fn freeze(m: &Mnt) {
    sh("sync", &[]);
    sh("fsfreeze", &["-f", m.0.to_str().unwrap()]);
}

#[test]
fn a_mounted_device_is_refused_even_with_destroy() {
    need!("mkfs.ext4" => "e2fsprogs", "fsfreeze" => "util-linux");
    let l = LoopDev::new("sig-mounted", 64 * MIB);
    quiet_ext4(&l.dev);
    let m = Mnt::new(&l.dev, &[]);
    freeze(&m);
    assert_refused(&l.dev, &l.dev, true, &["mounted"]);
    drop(m);
}

#[test]
fn a_device_whose_partition_is_mounted_is_refused() {
    need!("sfdisk" => "fdisk", "partx" => "util-linux", "mkfs.ext4" => "e2fsprogs", "fsfreeze" => "util-linux");
    let file = PathBuf::from(format!(
        "/dev/shm/iolab-test-sig-part-{}.img",
        std::process::id()
    ));
    std::fs::File::create(&file)
        .unwrap()
        .set_len(64 * MIB)
        .unwrap();
    let mut c = Command::new("sfdisk")
        .args(["-q"])
        .arg(&file)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    c.stdin
        .take()
        .unwrap()
        .write_all(b"label: dos\nstart=2048, type=83\n")
        .unwrap();
    assert!(c.wait().unwrap().success());
    let dev = PathBuf::from(
        sh(
            "losetup",
            &["--find", "--show", "--partscan", file.to_str().unwrap()],
        )
        .trim(),
    );
    struct Detach(PathBuf, PathBuf);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
            let _ = std::fs::remove_file(&self.1);
        }
    }
    let _g = Detach(dev.clone(), file.clone());
    let part = PathBuf::from(format!("{}p1", dev.display()));
    // This kernel may not scan loop partitions itself: add them (BLKPG) from the table.
    if !part.exists() {
        sh("partx", &["-a", dev.to_str().unwrap()]);
    }
    for _ in 0..50 {
        if part.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    quiet_ext4(&part);
    let m = Mnt::new(&part, &[]);
    freeze(&m);
    // Named by the partition that is mounted, with or without --destroy.
    let p = part.display().to_string();
    assert_refused(&dev, &dev, true, &["mounted", &p]);
    assert_refused(&dev, &dev, false, &["mounted", &p]);
    drop(m);
}

#[test]
fn a_device_held_only_by_a_bind_mount_is_refused() {
    need!("mkfs.ext4" => "e2fsprogs", "fsfreeze" => "util-linux");
    let l = LoopDev::new("sig-bind", 64 * MIB);
    quiet_ext4(&l.dev);
    let first = Mnt::new(&l.dev, &[]);
    let bind = Mnt::new(&first.0, &["--bind"]);
    drop(first); // only the bind mount holds it now
    freeze(&bind);
    assert_refused(&l.dev, &l.dev, true, &["mounted", bind.0.to_str().unwrap()]);
    drop(bind);
}

#[test]
fn a_symlink_to_a_device_is_followed_and_both_names_are_shown() {
    need!("mkfs.xfs" => "xfsprogs");
    let l = LoopDev::new("sig-link", 320 * MIB);
    mkfs("mkfs.xfs", &["-q", "-f"], &l.dev);
    // A /dev/disk/by-id-style name (a relative link two levels down), outside the real /dev.
    let dir = tempfile::tempdir().unwrap();
    let by_id = dir.path().join("disk/by-id");
    std::fs::create_dir_all(&by_id).unwrap();
    let link = by_id.join("usb-Example_Disk_0123456789-0:0");
    let name = l.dev.file_name().unwrap().to_str().unwrap();
    // ../../loopN from disk/by-id resolves to DIR/loopN: make that a link to the node.
    std::os::unix::fs::symlink(&l.dev, dir.path().join(name)).unwrap();
    std::os::unix::fs::symlink(format!("../../{name}"), &link).unwrap();
    assert_refused(&link, &l.dev, false, &["xfs", l.path()]);
}

#[test]
fn a_device_used_as_swap_is_refused_even_with_destroy() {
    need!("mkswap" => "util-linux", "swapon" => "util-linux");
    let l = LoopDev::new("sig-swapon", 64 * MIB);
    mkfs("mkswap", &["-q"], &l.dev);
    let o = Command::new("swapon").arg(&l.dev).output().unwrap();
    if !o.status.success() {
        common::skip(
            "kernel:swap",
            &format!("swapon refused: {}", String::from_utf8_lossy(&o.stderr)),
        );
        return;
    }
    struct Off(PathBuf);
    impl Drop for Off {
        fn drop(&mut self) {
            let _ = Command::new("swapoff").arg(&self.0).status();
        }
    }
    let _g = Off(l.dev.clone());
    assert_refused(&l.dev, &l.dev, true, &["swap"]);
}

#[test]
fn a_device_holding_a_loop_devices_backing_file_is_refused_after_a_lazy_unmount() {
    need!("mkfs.ext4" => "e2fsprogs", "fsfreeze" => "util-linux");
    let l = LoopDev::new("sig-backing", 64 * MIB);
    quiet_ext4(&l.dev);
    let m = Mnt::new(&l.dev, &[]);
    let img = m.0.join("inner.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 * MIB)
        .unwrap();
    let inner = PathBuf::from(sh("losetup", &["--find", "--show", img.to_str().unwrap()]).trim());
    struct Detach(PathBuf);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
        }
    }
    let g = Detach(inner.clone());
    // Mounted: refused as mounted. Lazily unmounted: /proc/mounts no longer shows it, but the
    // loop device still holds a file on it. Frozen throughout (thawed through a descriptor
    // kept open on it), so nothing but iolab could change its bytes.
    let keep = std::fs::File::open(&m.0).unwrap();
    let thaw = format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        std::os::fd::AsRawFd::as_raw_fd(&keep)
    );
    freeze(&m);
    assert_refused(&l.dev, &l.dev, true, &["mounted"]);
    sh("umount", &["-l", m.0.to_str().unwrap()]);
    assert_refused(
        &l.dev,
        &l.dev,
        true,
        &[inner.to_str().unwrap(), "backing file"],
    );
    sh("fsfreeze", &["-u", &thaw]);
    drop(keep);
    drop(g);
    drop(m);
}
