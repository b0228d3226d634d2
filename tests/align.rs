//! Alignment on this host: the tools' own reports read back from filesystems made
//! with an explicit stripe on loop disks (xfs `su/sw`, ext4 `stride/stripe_width`), checked
//! against md geometries they match and do not; `alignment = "stripe"` as the command lines a
//! dry run prints; bcache's data offset as `bcache-super-show` prints it for a backing device
//! make-bcache formatted; and a lab on a plain loop disk, which has no stripe and gets no
//! warning. md, LVM and bcache themselves are in the VM test (tests/vm_align.rs).

use std::path::Path;
use std::process::Command;

use iolab::layout::Runner;
use iolab::layout::align::{FsStripe, Seen, check, parse_bcache_super, read_fs_stripe};
use iolab::stack::align::{Alignment, Geometry};
use iolab::stack::{FsKind, MdLevel};

mod common;
mod lab_world;
use common::LoopDev;
use lab_world::World;

const K: u64 = 1024;

macro_rules! need_root_and_loop {
    () => {
        lab_world::require_lab!(
            "losetup" => "mount",
            "mkfs.xfs" => "xfsprogs",
            "xfs_spaceman" => "xfsprogs",
            "mkfs.ext4" => "e2fsprogs",
            "dumpe2fs" => "e2fsprogs",
        );
    };
}

/// mkfs with `args` on the loop disk, mounted on a temp dir the disk unmounts on drop.
fn mkfs_mount(d: &mut LoopDev, mkfs: &str, args: &[&str]) -> std::path::PathBuf {
    let o = Command::new(mkfs)
        .args(args)
        .arg(&d.dev)
        .output()
        .expect("mkfs");
    assert!(
        o.status.success(),
        "{mkfs}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    d.mount_made()
}

fn md(level: MdLevel, n: usize, chunk: u64) -> Geometry {
    Geometry::md(level, n, chunk, 2).expect("a stripe")
}

#[test]
fn a_filesystem_made_with_a_stripe_reads_back_as_made_and_is_checked_against_the_array() {
    need_root_and_loop!();
    let r = Runner::real();
    let mut d = LoopDev::new("align-xfs", 800 << 20);
    let mnt = mkfs_mount(&mut d, "mkfs.xfs", &["-f", "-q", "-d", "su=512k,sw=3"]);
    let xfs = read_fs_stripe(&r, FsKind::Xfs, &d.dev, &mnt).expect("xfs_spaceman");
    assert_eq!(
        xfs,
        Some(FsStripe::Xfs {
            bsize: 4096,
            sunit: 128,
            swidth: 384
        })
    );
    let seen = Seen {
        fs: xfs,
        ..Seen::default()
    };
    // md5 x4 and md6 x5 at 512KiB both have three data disks: aligned.
    for g in [
        md(MdLevel::Raid5, 4, 512 * K),
        md(MdLevel::Raid6, 5, 512 * K),
    ] {
        let c = check(Alignment::Auto, Some(&g), &seen);
        assert!(c.warnings().is_empty(), "{c:?}");
    }
    // md5 x5 has four: the warning names the mkfs that would match.
    let c = check(
        Alignment::Auto,
        Some(&md(MdLevel::Raid5, 5, 512 * K)),
        &seen,
    );
    assert_eq!(
        c.warnings(),
        [
            "xfs over md5 x5 (chunk 512KiB): stripe unit 512KiB, width 1.50MiB does not match the array's chunk 512KiB x 4 data disks; mkfs.xfs -d su=512k,sw=4"
        ]
    );
    drop(d);

    let mut e = LoopDev::new("align-ext4", 800 << 20);
    let args = ["-F", "-q", "-b", "4096", "-E", "stride=16,stripe_width=32"];
    let mnt = mkfs_mount(&mut e, "mkfs.ext4", &args);
    let ext4 = read_fs_stripe(&r, FsKind::Ext4, &e.dev, &mnt).expect("dumpe2fs");
    assert_eq!(
        ext4,
        Some(FsStripe::Ext4 {
            block_size: 4096,
            stride: Some(16),
            stripe_width: Some(32)
        })
    );
    let seen = Seen {
        fs: ext4,
        ..Seen::default()
    };
    // md10 near=2 x4 at 64KiB: two data disks, as this ext4 has it.
    let c = check(
        Alignment::Auto,
        Some(&md(MdLevel::Raid10, 4, 64 * K)),
        &seen,
    );
    assert!(c.warnings().is_empty(), "{c:?}");
    let c = check(Alignment::Auto, Some(&md(MdLevel::Raid0, 4, 64 * K)), &seen);
    assert_eq!(
        c.layers[0].fix.as_deref(),
        Some("mkfs.ext4 -E stride=16,stripe_width=64")
    );
    // A plain filesystem says it has no stripe: ext4 leaves the fields out, xfs says 0.
    drop(e);
    let mut p = LoopDev::new("align-plain", 800 << 20);
    let mnt = mkfs_mount(&mut p, "mkfs.xfs", &["-f", "-q"]);
    assert!(matches!(
        read_fs_stripe(&r, FsKind::Xfs, &p.dev, &mnt),
        Ok(Some(FsStripe::Xfs {
            sunit: 0,
            swidth: 0,
            ..
        }))
    ));
}

/// make-bcache's default data offset (8KiB) and a given one read back through
/// `bcache-super-show`, as the alignment check reads them after a build.
#[test]
fn bcache_super_show_gives_the_backing_devices_data_offset() {
    if !common::need_tool("make-bcache", "bcache-tools")
        || !common::need_tool("bcache-super-show", "bcache-tools")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [(&[][..], 8 * K), (&["--data-offset", "384"][..], 192 * K)] {
        let f = dir.path().join("backing.img");
        std::fs::File::create(&f)
            .and_then(|h| h.set_len(64 << 20))
            .unwrap();
        let o = Command::new("make-bcache")
            .args(args)
            .arg("-B")
            .arg(&f)
            .output()
            .expect("make-bcache");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = Command::new("bcache-super-show")
            .arg(&f)
            .output()
            .expect("bcache-super-show");
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(parse_bcache_super(&text), Some(want), "{args:?}: {text}");
        std::fs::remove_file(&f).unwrap();
    }
}

fn spec(dir: &Path, disks: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("align.toml");
    std::fs::write(
        &p,
        format!(
            "[disks]\nloop = {{ count = 5, size = \"1GiB\", dir = \"{}\" }}\n{body}\
             [workloads]\nrepeat = 1\n[[workloads.workload]]\nname = \"sw\"\npattern = \"write\"\n\
             bs = \"1M\"\ntime = \"200ms\"\nsize = \"8MiB\"\n",
            disks.display()
        ),
    )
    .unwrap();
    p
}

#[test]
fn dry_run_passes_the_stripe_to_pvcreate_and_mkfs_only_when_asked() {
    let w = World::new("aligndry");
    let dir = tempfile::tempdir().unwrap();
    let p = spec(
        dir.path(),
        &w.disk_dir,
        "[[layout]]\nname = \"x\"\nmdadm = { level = 5, members = 4, chunk = \"512KiB\" }\nlvm = true\nfs = \"xfs\"\n\
         vary = { alignment = [\"auto\", \"stripe\"] }\n\
         [[layout]]\nname = \"e\"\nmdadm = { level = 6, members = 5, chunk = \"64KiB\" }\nfs = \"ext4\"\nalignment = \"stripe\"\n\
         [[layout]]\nname = \"b\"\nmdadm = { level = 5, members = 4, chunk = \"64KiB\" }\ncache = { kind = \"bcache\" }\nfs = \"xfs\"\n\
         vary = { alignment = [\"auto\", \"stripe\"] }\n",
    );
    let out = w.lab(&[p.to_str().unwrap(), "--dry-run", "--format", "json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let v = out.json();
    let cmds = |name: &str| -> String {
        v["layouts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .map_or_else(|| panic!("no {name}: {v:#}"), |l| l["commands"].to_string())
    };
    let auto = cmds("x[alignment=auto]");
    assert!(
        auto.contains("pvcreate --yes --force --force /dev/md"),
        "{auto}"
    );
    assert!(auto.contains("mkfs.xfs -f /dev/iolab_"), "{auto}");
    let stripe = cmds("x[alignment=stripe]");
    assert!(
        stripe.contains("pvcreate --yes --force --force --dataalignment 1536k /dev/md"),
        "{stripe}"
    );
    assert!(
        stripe.contains("mkfs.xfs -f -d su=512k,sw=3 /dev/iolab_"),
        "{stripe}"
    );
    // RAID6 x5 at 64KiB: three data disks, counted in the 4KiB blocks iolab fixes for it.
    let e = cmds("e");
    assert!(
        e.contains(
            "mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0,stride=16,stripe_width=48 -b 4096 /dev/md"
        ),
        "{e}"
    );
    // bcache: its own 8KiB data offset unless told, one 192KiB stripe (384 sectors) when told.
    let b = cmds("b[alignment=auto]");
    assert!(b.contains("make-bcache --bucket 512k -B /dev/md"), "{b}");
    let b = cmds("b[alignment=stripe]");
    assert!(
        b.contains("make-bcache --bucket 512k --data-offset 384 -B /dev/md"),
        "{b}"
    );
    assert!(b.contains("mkfs.xfs -f -d su=64k,sw=3 /dev/bcache0"), "{b}");
}

#[test]
fn a_plain_loop_disk_has_no_stripe_and_no_warning() {
    need_root_and_loop!();
    let w = World::new("alignplain");
    let dir = tempfile::tempdir().unwrap();
    let p = spec(
        dir.path(),
        &w.disk_dir,
        "[[layout]]\nname = \"plain\"\nfs = \"xfs\"\nmkfs_options = [\"-d\", \"su=64k,sw=2\"]\n",
    );
    let (out, v) = w.lab_json(&p, &[]);
    assert_eq!(out.code, 0, "{}", World::layouts_summary(&v));
    let a = &v["layouts"][0]["alignment"];
    assert_eq!(a["mode"], "auto", "{a:#}");
    assert!(a["layers"].is_null() && a["array"].is_null(), "{a:#}");
    assert!(
        a["note"]
            .as_str()
            .unwrap_or_default()
            .contains("no striped md array"),
        "{a:#}"
    );
    // And the table prints no warning for it.
    let p2 = p.clone();
    let text = w.lab(&[p2.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}{}", text.stdout, text.stderr);
    assert!(!text.stdout.contains("warning:"), "{}", text.stdout);
}
