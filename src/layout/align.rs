//! Alignment, checked for every stack: from the md array's stripe (chunk x data
//! disks), what each layer above got — LVM's data offset (`pvs -o pe_start`) and extent size,
//! a bcache backing device's data offset (`bcache-super-show`: `dev.data.first_sector`),
//! xfs's `sunit/swidth` (what `xfs_info` prints), ext4's `RAID stride` / `RAID stripe width`
//! (`dumpe2fs -h`), a partition's start — and for a layer that does not match, a warning with
//! the command that would.
//!
//! The layers that move the data off the array's start are walked bottom up, each judged by
//! its own offset: a partition's start, LVM's data offset (the lab's one LV starts at extent
//! 0), bcache's data offset (8KiB by default: an xfs with the array's su/sw made on
//! `/dev/bcacheN` sits 8KiB off every stripe). lvmcache and dm-writecache add no offset of
//! their own: both map the cached LV onto its origin sector for sector, so the LV's place on
//! the array is LVM's data offset, already checked.
//!
//! The check is pure ([`check`]: the geometry and what the layers report in, findings out),
//! tested on the tools' recorded output; [`probe`] runs the tools after a build and reads the
//! array's geometry from md's sysfs, the truth of what was built. With `alignment = "stripe"`
//! the mkfs, pvcreate and make-bcache arguments that pass the stripe come from here too
//! ([`stripe_mkfs_options`], [`data_alignment`], [`bcache_data_offset`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cmd::Runner;
use super::scrub::md_sysfs;
use crate::stack::align::{Alignment, Geometry};
use crate::stack::{FsKind, MdLevel};
use crate::units::format_bytes;

/// What a filesystem says its stripe is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsStripe {
    /// xfs: block size, and sunit/swidth in blocks (`xfs_info` prints them so: `blks`).
    Xfs {
        /// Data block size, bytes.
        bsize: u64,
        /// Stripe unit, blocks (0: none).
        sunit: u64,
        /// Stripe width, blocks (0: none).
        swidth: u64,
    },
    /// ext4: block size, and `RAID stride` / `RAID stripe width` in blocks (absent: not set).
    Ext4 {
        /// Block size, bytes.
        block_size: u64,
        /// `RAID stride`, blocks.
        stride: Option<u64>,
        /// `RAID stripe width`, blocks.
        stripe_width: Option<u64>,
    },
}

/// What the layers over the array report about their placement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// LVM: the PV's data offset (`pe_start`) and the VG's extent size, bytes.
    pub lvm: Option<(u64, u64)>,
    /// Start of a partition on the array, bytes.
    pub partition: Option<u64>,
    /// bcache: where its backing device's data starts on the device under it, bytes.
    pub bcache: Option<u64>,
    /// The filesystem's stripe.
    pub fs: Option<FsStripe>,
}

/// One layer's placement against the array's stripe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerCheck {
    /// `partition`, `lvm`, `bcache`, `xfs`, `ext4`.
    pub layer: String,
    /// What it got, in words (`data offset 1.50MiB, extent 4MiB`, `su 512KiB, sw 3`).
    pub got: String,
    /// Whether that matches the array below.
    pub aligned: bool,
    /// The command (or option) that would align it, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The warning a misaligned layer gets: what, against what, and the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A layout's alignment: the array's stripe, and each layer over it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlignmentReport {
    /// The spec's `alignment`.
    pub mode: Alignment,
    /// The array's stripe in words (`md5 x4 (chunk 512KiB), stripe 1.50MiB`); `None` when there
    /// is no stripe to align to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<String>,
    /// Each layer's check, bottom first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerCheck>,
    /// Why nothing (or not everything) was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl AlignmentReport {
    /// A report that checked nothing, saying why.
    pub fn unchecked(mode: Alignment, note: impl Into<String>) -> AlignmentReport {
        AlignmentReport {
            mode,
            array: None,
            layers: Vec::new(),
            note: Some(note.into()),
        }
    }

    /// The warning of every misaligned layer (each with its fix).
    pub fn warnings(&self) -> Vec<&str> {
        self.layers
            .iter()
            .filter_map(|l| l.warning.as_deref())
            .collect()
    }

    /// One cell: `aligned (lvm, xfs)`, `MISALIGNED: xfs`, `no stripe`, `not checked`.
    pub fn summary(&self) -> String {
        let bad: Vec<&str> = self
            .layers
            .iter()
            .filter(|l| !l.aligned)
            .map(|l| l.layer.as_str())
            .collect();
        if !bad.is_empty() {
            return format!("MISALIGNED: {}", bad.join(", "));
        }
        if self.mode == Alignment::None {
            return "not checked".into();
        }
        if self.array.is_none() {
            return "no stripe".into();
        }
        let ok: Vec<&str> = self.layers.iter().map(|l| l.layer.as_str()).collect();
        if ok.is_empty() {
            "nothing above to align".into()
        } else {
            format!("aligned ({})", ok.join(", "))
        }
    }
}

/// A size as the tools' arguments take it: `1536k` when whole KiB, else bytes.
fn arg_size(bytes: u64) -> String {
    if bytes % 1024 == 0 {
        format!("{}k", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

/// `pvcreate --dataalignment` for the stripe of `g`.
pub fn data_alignment(g: &Geometry) -> Vec<String> {
    vec!["--dataalignment".into(), arg_size(g.stripe())]
}

/// bcache's least data offset, sectors: make-bcache refuses less (`BDEV_DATA_START_DEFAULT`,
/// 8KiB: the superblock's 4KiB and the 4KiB before it).
pub const BCACHE_MIN_DATA_OFFSET: u64 = 16;

/// bcache's data offset on the stripe of `g`, in sectors: the least multiple of the stripe
/// that make-bcache takes (the stripe itself unless it is under [`BCACHE_MIN_DATA_OFFSET`]).
pub fn bcache_data_offset(g: &Geometry) -> u64 {
    let stripe = (g.stripe() / 512).max(1);
    stripe * BCACHE_MIN_DATA_OFFSET.div_ceil(stripe)
}

/// The xfs `-d su=,sw=` value for `g`.
fn xfs_su_sw(g: &Geometry) -> String {
    format!("su={},sw={}", arg_size(g.chunk), g.data_disks)
}

/// The ext4 `-E stride=,stripe_width=` value for `g` in blocks of `block_size`.
fn ext4_stride(g: &Geometry, block_size: u64) -> String {
    let bs = block_size.max(1);
    format!("stride={},stripe_width={}", g.chunk / bs, g.stripe() / bs)
}

/// The block size ext4's stride is counted in when the options set none: iolab passes
/// `-b 4096` with the stride (mke2fs would pick 1KiB blocks under 512MiB, and the stride
/// would then be a quarter of the chunk).
pub const EXT4_BLOCK: u64 = 4096;

/// `mkfs_options` with the stripe of `g` added (`alignment = "stripe"`): xfs gets
/// `-d su=,sw=`; ext4 gets `stride=,stripe_width=` added to its `-E` (the options' own, or
/// the lazy-init one iolab gives by default) and `-b 4096` unless the options set a block
/// size. Other filesystems are returned as they are.
pub fn stripe_mkfs_options(kind: FsKind, options: &[String], g: &Geometry) -> Vec<String> {
    let mut out = options.to_vec();
    match kind {
        FsKind::Xfs => out.extend(["-d".to_string(), xfs_su_sw(g)]),
        FsKind::Ext4 => {
            let bs = ext4_block_size(options);
            let stride = ext4_stride(g, bs.unwrap_or(EXT4_BLOCK));
            if let Some(i) = out.iter().position(|o| o == "-E") {
                if let Some(v) = out.get_mut(i + 1) {
                    *v = format!("{v},{stride}");
                }
            } else if let Some(v) = out.iter_mut().find(|o| o.starts_with("-E")) {
                *v = format!("{v},{stride}");
            } else {
                out.extend([
                    "-E".to_string(),
                    format!("lazy_itable_init=0,lazy_journal_init=0,{stride}"),
                ]);
            }
            if bs.is_none() {
                out.extend(["-b".to_string(), EXT4_BLOCK.to_string()]);
            }
        }
        FsKind::Btrfs | FsKind::Zfs => {}
    }
    out
}

/// The block size ext4 options set (`-b 4096`, `-b4096`).
fn ext4_block_size(options: &[String]) -> Option<u64> {
    let i = options.iter().position(|o| o.starts_with("-b"))?;
    let v = match options[i].strip_prefix("-b") {
        Some("") => options.get(i + 1)?.as_str(),
        Some(v) => v,
        None => return None,
    };
    v.parse().ok()
}

/// Parses `xfs_info` (or `xfs_spaceman -c info`): the `data` section's `bsize=` and its
/// `sunit=`/`swidth=` (blocks). The log section has a `sunit=` of its own, not read.
pub fn parse_xfs_info(text: &str) -> Option<FsStripe> {
    let mut section = "";
    let (mut bsize, mut sunit, mut swidth) = (None, None, None);
    for line in text.lines() {
        let head = line.split('=').next().unwrap_or("").trim();
        if !head.is_empty() {
            section = head;
        }
        if section != "data" {
            continue;
        }
        for word in line.split([' ', ',', '\t']) {
            let num = |key: &str| word.strip_prefix(key).and_then(|v| v.parse::<u64>().ok());
            bsize = bsize.or_else(|| num("bsize="));
            sunit = sunit.or_else(|| num("sunit="));
            swidth = swidth.or_else(|| num("swidth="));
        }
    }
    Some(FsStripe::Xfs {
        bsize: bsize?,
        sunit: sunit?,
        swidth: swidth?,
    })
}

/// Parses `dumpe2fs -h`: `Block size`, and `RAID stride` / `RAID stripe width` when set
/// (mke2fs leaves them out when it had no stripe).
pub fn parse_dumpe2fs(text: &str) -> Option<FsStripe> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some(FsStripe::Ext4 {
        block_size: field("Block size")?,
        stride: field("RAID stride"),
        stripe_width: field("RAID stripe width"),
    })
}

/// Parses `bcache-super-show` of a backing device: its `dev.data.first_sector`, in bytes
/// (`None` for a cache device, which has no such line, or output that is not bcache's).
pub fn parse_bcache_super(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix("dev.data.first_sector")?;
        v.split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
            .map(|s| s * 512)
    })
}

/// Parses one size from `pvs`/`vgs --noheadings --units b` (`  1048576B`).
pub fn parse_lvm_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    t.strip_suffix(['B', 'b']).unwrap_or(t).trim().parse().ok()
}

/// Each layer of `seen` against the stripe of `g` (the array's `geometry`, `None` when there is
/// none): the report a layout keeps, with a warning and its fix per misaligned layer.
pub fn check(mode: Alignment, g: Option<&Geometry>, seen: &Seen) -> AlignmentReport {
    if mode == Alignment::None {
        return AlignmentReport::unchecked(mode, "alignment = \"none\": not checked");
    }
    let Some(g) = g else {
        return AlignmentReport::unchecked(mode, "no striped md array below: nothing to align to");
    };
    let stripe = g.stripe();
    let over = g.describe();
    let mut layers = Vec::new();
    if let Some(start) = seen.partition {
        let fix = format!("start the partition at a multiple of {}", arg_size(stripe));
        layers.push(offset_check(g, &PARTITION, &over, start, "", fix));
    }
    if let Some((pe_start, extent)) = seen.lvm {
        layers.push(lvm_check(g, &over, pe_start, extent));
    }
    if let Some(offset) = seen.bcache {
        layers.push(bcache_check(g, &over, offset));
    }
    if let Some(fs) = seen.fs {
        layers.push(fs_check(g, &over, fs));
    }
    AlignmentReport {
        mode,
        array: Some(format!("{over}, stripe {}", format_bytes(stripe))),
        layers,
        note: None,
    }
}

/// LVM's data offset against the stripe. The extent size is recorded, not judged: the lab's
/// one LV starts at extent 0, so only the data offset places it.
fn lvm_check(g: &Geometry, over: &str, pe_start: u64, extent: u64) -> LayerCheck {
    let fix = format!("pvcreate {}", data_alignment(g).join(" "));
    let extent = if extent > 0 {
        format!(", extent {}", format_bytes(extent))
    } else {
        String::new()
    };
    offset_check(g, &LVM, over, pe_start, &extent, fix)
}

/// bcache's data offset against the stripe: the filesystem on `/dev/bcacheN` starts there on
/// the device under it, so an offset off the stripe shifts every full-stripe write of the
/// filesystem across two stripes, however well its su/sw match.
fn bcache_check(g: &Geometry, over: &str, offset: u64) -> LayerCheck {
    let fix = format!("make-bcache -B --data-offset {}", bcache_data_offset(g));
    offset_check(g, &BCACHE, over, offset, "", fix)
}

/// A layer that places what is over it some bytes into the device under it, in the words its
/// row and warning use.
struct OffsetLayer {
    /// The row's layer name.
    layer: &'static str,
    /// How the warning opens, before the array (`LVM over`).
    lead: &'static str,
    /// What the offset is called (`data offset`, `start`).
    what: &'static str,
}

const PARTITION: OffsetLayer = OffsetLayer {
    layer: "partition",
    lead: "partition on",
    what: "start",
};

const LVM: OffsetLayer = OffsetLayer {
    layer: "lvm",
    lead: "LVM over",
    what: "data offset",
};

const BCACHE: OffsetLayer = OffsetLayer {
    layer: "bcache",
    lead: "bcache over",
    what: "data offset",
};

/// `l`'s `offset` against the stripe: aligned when it is a multiple of it, else a warning
/// naming the offset, the stripe and `fix`. `more` follows the offset in the row.
fn offset_check(
    g: &Geometry,
    l: &OffsetLayer,
    over: &str,
    offset: u64,
    more: &str,
    fix: String,
) -> LayerCheck {
    let stripe = g.stripe();
    let aligned = offset % stripe == 0;
    let (what, lead) = (l.what, l.lead);
    LayerCheck {
        layer: l.layer.into(),
        got: format!("{what} {}{more}", format_bytes(offset)),
        aligned,
        warning: (!aligned).then(|| {
            format!(
                "{lead} {over}: {what} {} is not a multiple of the {} stripe; {fix}",
                format_bytes(offset),
                format_bytes(stripe)
            )
        }),
        fix: (!aligned).then_some(fix),
    }
}

/// The filesystem's stripe unit and width against the array's chunk and stripe.
fn fs_check(g: &Geometry, over: &str, fs: FsStripe) -> LayerCheck {
    let (layer, unit, width, fix) = match fs {
        FsStripe::Xfs {
            bsize,
            sunit,
            swidth,
        } => (
            "xfs",
            sunit * bsize,
            swidth * bsize,
            format!("mkfs.xfs -d {}", xfs_su_sw(g)),
        ),
        FsStripe::Ext4 {
            block_size,
            stride,
            stripe_width,
        } => (
            "ext4",
            stride.unwrap_or(0) * block_size,
            stripe_width.unwrap_or(0) * block_size,
            format!("mkfs.ext4 -E {}", ext4_stride(g, block_size)),
        ),
    };
    let aligned = unit == g.chunk && width == g.stripe();
    let got = if unit == 0 && width == 0 {
        "no stripe unit".to_string()
    } else {
        format!(
            "stripe unit {}, width {}",
            format_bytes(unit),
            format_bytes(width)
        )
    };
    let want = format!(
        "chunk {} x {} data disks",
        format_bytes(g.chunk),
        g.data_disks
    );
    LayerCheck {
        layer: layer.into(),
        warning: (!aligned).then(|| {
            format!("{layer} over {over}: {got} does not match the array's {want}; {fix}")
        }),
        got,
        aligned,
        fix: (!aligned).then_some(fix),
    }
}

/// The geometry of the md array `md` as the kernel holds it (sysfs `level`, `raid_disks`,
/// `chunk_size`, and RAID10's `layout`, whose low byte is the near copies). `Err` says why
/// there is no stripe.
pub fn md_geometry(md: &Path) -> Result<Geometry, String> {
    let attr = |f: &str| {
        std::fs::read_to_string(md_sysfs(md, f))
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("cannot read {}: {e}", md_sysfs(md, f).display()))
    };
    let level_text = attr("level")?;
    let level = MdLevel::parse(&level_text)
        .ok_or_else(|| format!("md level '{level_text}' has no stripe"))?;
    let num = |f: &str| -> Result<u64, String> {
        let t = attr(f)?;
        t.parse()
            .map_err(|_| format!("md {f} '{t}' is not a number"))
    };
    let disks = usize::try_from(num("raid_disks")?).unwrap_or(0);
    let near = if level == MdLevel::Raid10 {
        usize::try_from(num("layout")? & 0xff).unwrap_or(1)
    } else {
        1
    };
    Geometry::md(level, disks, num("chunk_size")?, near)
        .ok_or_else(|| format!("md {level_text} has no stripe: nothing to align to"))
}

/// Start of `dev` on its disk in bytes, when it is a partition (sysfs `partition`, `start`).
pub fn partition_start(dev: &Path) -> Option<u64> {
    let real = std::fs::canonicalize(dev).ok()?;
    let name = real.file_name()?.to_string_lossy().into_owned();
    let dir = Path::new("/sys/class/block").join(name);
    if !dir.join("partition").exists() {
        return None;
    }
    let sectors: u64 = std::fs::read_to_string(dir.join("start"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(sectors * 512)
}

/// Reads one tool's output into a filesystem's stripe.
type ToolParser = fn(&str) -> Option<FsStripe>;

/// The stripe a mounted filesystem reports: xfs through `xfs_spaceman -p xfs_info -c info
/// MOUNT` (what the `xfs_info` script runs on a mount, without the `findmnt` a VM guest
/// lacks), ext4 through `dumpe2fs -h DEVICE`; `None` for btrfs and ZFS (no stripe to match).
/// `Err` names the tool that failed or printed what could not be read.
pub fn read_fs_stripe(
    runner: &Runner,
    fs: FsKind,
    device: &Path,
    mount: &Path,
) -> Result<Option<FsStripe>, String> {
    let (argv, parse): (Vec<String>, ToolParser) = match fs {
        FsKind::Xfs => (
            ["xfs_spaceman", "-p", "xfs_info", "-c", "info"]
                .iter()
                .map(|s| (*s).to_string())
                .chain([mount.to_string_lossy().into_owned()])
                .collect(),
            parse_xfs_info,
        ),
        FsKind::Ext4 => (
            vec![
                "dumpe2fs".into(),
                "-h".into(),
                device.to_string_lossy().into_owned(),
            ],
            parse_dumpe2fs,
        ),
        FsKind::Btrfs | FsKind::Zfs => return Ok(None),
    };
    let out = runner.run(&argv).map_err(|e| format!("{}: {e}", argv[0]))?;
    parse(&out.stdout)
        .map(Some)
        .ok_or_else(|| format!("{}: no stripe unit in its output", argv[0]))
}

/// Where a built layout's layers are, for [`probe`].
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    /// The md array at the bottom, when there is one.
    pub md: Option<&'a Path>,
    /// The LVM volume group over it, when there is one.
    pub vg: Option<&'a str>,
    /// The backing device of a bcache over them (the array or its LV), when there is one.
    pub bcache: Option<&'a Path>,
    /// The filesystem.
    pub fs: FsKind,
    /// The device the filesystem was made on.
    pub fs_device: &'a Path,
    /// Where it is mounted.
    pub mount: &'a Path,
}

/// Reads what each layer of a built layout got and checks it against the array: the
/// geometry from md's sysfs, LVM's `pe_start` and extent size from `pvs`/`vgs`, bcache's data
/// offset from `bcache-super-show` of its backing device (sysfs does not show it), the
/// filesystem's stripe from `xfs_spaceman -c info` (what `xfs_info` runs on a mount) or
/// `dumpe2fs -h`. A tool that fails leaves its layer out, with a note naming it.
pub fn probe(runner: &Runner, mode: Alignment, p: &Placed<'_>) -> AlignmentReport {
    if mode == Alignment::None {
        return check(mode, None, &Seen::default());
    }
    let Some(md) = p.md else {
        return check(mode, None, &Seen::default());
    };
    let g = match md_geometry(md) {
        Ok(g) => g,
        Err(why) => return AlignmentReport::unchecked(mode, why),
    };
    let mut notes = Vec::new();
    let mut seen = Seen::default();
    let mut ask = |argv: &[&str]| match runner.run(argv) {
        Ok(out) => Some(out.stdout),
        Err(e) => {
            notes.push(format!("{}: {e}", argv[0]));
            None
        }
    };
    if let Some(vg) = p.vg {
        let md_s = md.to_string_lossy();
        let pe = ask(&[
            "pvs",
            "--noheadings",
            "--units",
            "b",
            "-o",
            "pe_start",
            &md_s,
        ])
        .and_then(|t| parse_lvm_bytes(&t));
        let ext = ask(&[
            "vgs",
            "--noheadings",
            "--units",
            "b",
            "-o",
            "vg_extent_size",
            vg,
        ])
        .and_then(|t| parse_lvm_bytes(&t));
        seen.lvm = pe.map(|pe| (pe, ext.unwrap_or(0)));
    } else if p.bcache.is_none() {
        seen.partition = partition_start(p.fs_device);
    }
    if let Some(backing) = p.bcache {
        let b = backing.to_string_lossy();
        let shown = ask(&["bcache-super-show", &b]);
        seen.bcache = shown.as_deref().and_then(parse_bcache_super);
        if shown.is_some() && seen.bcache.is_none() && !runner.is_dry_run() {
            notes.push("bcache-super-show: no dev.data.first_sector in its output".into());
        }
    }
    match read_fs_stripe(runner, p.fs, p.fs_device, p.mount) {
        Ok(fs) => seen.fs = fs,
        Err(e) => notes.push(e),
    }
    let mut r = check(mode, Some(&g), &seen);
    if !notes.is_empty() {
        r.note = Some(format!("not read: {}", notes.join("; ")));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::align::stripe_option;

    const K: u64 = 1024;
    const XFS_512K_3: &str = include_str!("../../tests/fixtures/align/xfs_info_su512k_sw3.txt");
    const XFS_64K_2: &str = include_str!("../../tests/fixtures/align/xfs_info_su64k_sw2.txt");
    const XFS_PLAIN: &str = include_str!("../../tests/fixtures/align/xfs_info_plain.txt");
    const EXT4_128_384: &str = include_str!("../../tests/fixtures/align/dumpe2fs_stride.txt");
    const EXT4_PLAIN: &str = include_str!("../../tests/fixtures/align/dumpe2fs_plain.txt");

    fn md(level: MdLevel, n: usize, chunk: u64) -> Geometry {
        Geometry::md(level, n, chunk, 2).unwrap()
    }

    #[test]
    fn recorded_tool_output_parses() {
        assert_eq!(
            parse_xfs_info(XFS_512K_3),
            Some(FsStripe::Xfs {
                bsize: 4096,
                sunit: 128,
                swidth: 384
            })
        );
        assert_eq!(
            parse_xfs_info(XFS_64K_2),
            Some(FsStripe::Xfs {
                bsize: 4096,
                sunit: 16,
                swidth: 32
            })
        );
        // The log's own `sunit=0 blks` is not the data section's.
        assert!(matches!(
            parse_xfs_info(XFS_PLAIN),
            Some(FsStripe::Xfs {
                sunit: 0,
                swidth: 0,
                ..
            })
        ));
        assert_eq!(
            parse_dumpe2fs(EXT4_128_384),
            Some(FsStripe::Ext4 {
                block_size: 4096,
                stride: Some(128),
                stripe_width: Some(384)
            })
        );
        assert_eq!(
            parse_dumpe2fs(EXT4_PLAIN),
            Some(FsStripe::Ext4 {
                block_size: 1024,
                stride: None,
                stripe_width: None
            })
        );
        assert_eq!(parse_lvm_bytes("  1048576B\n"), Some(1 << 20));
        assert_eq!(parse_lvm_bytes("  4194304\n"), Some(4 << 20));
        assert_eq!(parse_xfs_info("garbage"), None);
        assert_eq!(parse_dumpe2fs(""), None);
    }

    #[test]
    fn lvm_off_the_stripe_is_flagged_with_its_fix() {
        let g = md(MdLevel::Raid5, 4, 512 * K);
        let seen = Seen {
            lvm: Some((1 << 20, 4 << 20)),
            ..Seen::default()
        };
        let r = check(Alignment::Auto, Some(&g), &seen);
        assert_eq!(
            r.warnings(),
            [
                "LVM over md5 x4 (chunk 512KiB): data offset 1MiB is not a multiple of the 1.50MiB stripe; pvcreate --dataalignment 1536k"
            ]
        );
        assert_eq!(r.summary(), "MISALIGNED: lvm");
        let ok = Seen {
            lvm: Some((1536 * K, 4 << 20)),
            ..Seen::default()
        };
        let r = check(Alignment::Auto, Some(&g), &ok);
        assert!(r.warnings().is_empty(), "{r:?}");
        assert_eq!(r.layers[0].got, "data offset 1.50MiB, extent 4MiB");
        assert_eq!(r.summary(), "aligned (lvm)");
    }

    #[test]
    fn xfs_and_ext4_against_raid0_5_6_10() {
        // (geometry, xfs_info that matches it or not, dumpe2fs likewise)
        let r5 = md(MdLevel::Raid5, 4, 512 * K);
        let seen = |fs| Seen {
            fs: parse_xfs_info(fs).or_else(|| parse_dumpe2fs(fs)),
            ..Seen::default()
        };
        assert!(check(Alignment::Stripe, Some(&r5), &seen(XFS_512K_3)).layers[0].aligned);
        assert!(check(Alignment::Auto, Some(&r5), &seen(EXT4_128_384)).layers[0].aligned);
        let bad = check(Alignment::Auto, Some(&r5), &seen(XFS_64K_2));
        assert_eq!(
            bad.warnings(),
            [
                "xfs over md5 x4 (chunk 512KiB): stripe unit 64KiB, width 128KiB does not match the array's chunk 512KiB x 3 data disks; mkfs.xfs -d su=512k,sw=3"
            ]
        );
        let none = check(Alignment::Auto, Some(&r5), &seen(EXT4_PLAIN));
        assert_eq!(
            none.layers[0].fix.as_deref(),
            Some("mkfs.ext4 -E stride=512,stripe_width=1536"),
            "the stride counts this filesystem's 1KiB blocks"
        );
        // RAID0 x4 and RAID6 x5 at 128KiB: three data disks of 128KiB would not do for either.
        let r0 = md(MdLevel::Raid0, 3, 128 * K);
        let r6 = md(MdLevel::Raid6, 5, 128 * K);
        let xfs = |su: u64, sw: u64| Seen {
            fs: Some(FsStripe::Xfs {
                bsize: 4096,
                sunit: su * K / 4096,
                swidth: su * sw * K / 4096,
            }),
            ..Seen::default()
        };
        assert!(check(Alignment::Auto, Some(&r0), &xfs(128, 3)).layers[0].aligned);
        assert!(check(Alignment::Auto, Some(&r6), &xfs(128, 3)).layers[0].aligned);
        assert!(!check(Alignment::Auto, Some(&r6), &xfs(128, 5)).layers[0].aligned);
        // RAID10 near=2 x4: two data disks.
        let r10 = md(MdLevel::Raid10, 4, 512 * K);
        assert!(check(Alignment::Auto, Some(&r10), &xfs(512, 2)).layers[0].aligned);
        let r = check(Alignment::Auto, Some(&r10), &xfs(512, 4));
        assert_eq!(r.layers[0].fix.as_deref(), Some("mkfs.xfs -d su=512k,sw=2"));
    }

    #[test]
    fn nothing_to_check_without_a_stripe_or_when_told_not_to() {
        // RAID1 has no stripe; btrfs, ZFS and a plain disk have no md array.
        assert_eq!(Geometry::md(MdLevel::Raid1, 2, 512 * K, 2), None);
        let seen = Seen {
            fs: parse_xfs_info(XFS_64K_2),
            ..Seen::default()
        };
        let r = check(Alignment::Auto, None, &seen);
        assert!(r.layers.is_empty() && r.warnings().is_empty());
        assert_eq!(r.summary(), "no stripe");
        let g = md(MdLevel::Raid5, 4, 512 * K);
        let r = check(Alignment::None, Some(&g), &seen);
        assert!(r.layers.is_empty());
        assert_eq!(r.summary(), "not checked");
    }

    #[test]
    fn a_partition_off_the_stripe_is_flagged() {
        let g = md(MdLevel::Raid6, 6, 64 * K);
        let at = |start| Seen {
            partition: Some(start),
            ..Seen::default()
        };
        assert!(check(Alignment::Auto, Some(&g), &at(1 << 20)).layers[0].aligned);
        let r = check(Alignment::Auto, Some(&g), &at(2048 * 512 + 64 * K));
        assert_eq!(
            r.warnings(),
            [
                "partition on md6 x6 (chunk 64KiB): start 1.06MiB is not a multiple of the 256KiB stripe; start the partition at a multiple of 256k"
            ]
        );
    }

    /// bcache's default 8KiB data offset puts an xfs whose su/sw match the array 8KiB off
    /// every stripe: flagged, with the make-bcache that starts the data on a stripe.
    #[test]
    fn bcache_off_the_stripe_is_flagged_with_its_fix() {
        // What bcache-super-show printed for a backing device (bcache-tools 1.0.8).
        let shown = "sb.magic\t\tok\nsb.version\t\t1 [backing device]\n\ndev.label\t\t(empty)\n\
                     dev.sectors_per_block\t1\ndev.data.first_sector\t16\n\
                     dev.data.cache_mode\t1 [writeback]\n";
        assert_eq!(parse_bcache_super(shown), Some(8 * K));
        assert_eq!(
            parse_bcache_super("dev.data.first_sector\t384\n"),
            Some(192 * K)
        );
        // A cache device has no data offset.
        assert_eq!(
            parse_bcache_super("sb.version\t\t3 [cache device]\ndev.cache.first_sector\t256\n"),
            None
        );
        let g = md(MdLevel::Raid5, 4, 64 * K);
        let seen = Seen {
            bcache: Some(8 * K),
            fs: Some(FsStripe::Xfs {
                bsize: 4096,
                sunit: 16,
                swidth: 48,
            }),
            ..Seen::default()
        };
        let r = check(Alignment::Auto, Some(&g), &seen);
        assert_eq!(
            r.warnings(),
            [
                "bcache over md5 x4 (chunk 64KiB): data offset 8KiB is not a multiple of the 192KiB stripe; make-bcache -B --data-offset 384"
            ]
        );
        assert_eq!(r.summary(), "MISALIGNED: bcache");
        let ok = Seen {
            bcache: Some(192 * K),
            ..seen
        };
        let r = check(Alignment::Stripe, Some(&g), &ok);
        assert_eq!(r.summary(), "aligned (bcache, xfs)");
        assert_eq!(r.layers[0].got, "data offset 192KiB");
        // The offset make-bcache is given: the stripe, or its least multiple past 8KiB.
        assert_eq!(bcache_data_offset(&g), 384);
        assert_eq!(bcache_data_offset(&md(MdLevel::Raid0, 1, 4 * K)), 16);
        assert_eq!(bcache_data_offset(&md(MdLevel::Raid10, 2, 4 * K)), 16);
        assert_eq!(bcache_data_offset(&md(MdLevel::Raid0, 3, 4 * K)), 24);
    }

    #[test]
    fn the_stripe_as_mkfs_and_pvcreate_take_it() {
        let g = md(MdLevel::Raid5, 4, 512 * K);
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
        assert_eq!(data_alignment(&g), s(&["--dataalignment", "1536k"]));
        assert_eq!(
            stripe_mkfs_options(FsKind::Xfs, &s(&["-K"]), &g),
            s(&["-K", "-d", "su=512k,sw=3"])
        );
        assert_eq!(
            stripe_mkfs_options(FsKind::Ext4, &[], &g),
            s(&[
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0,stride=128,stripe_width=384",
                "-b",
                "4096"
            ])
        );
        assert_eq!(
            stripe_mkfs_options(FsKind::Ext4, &s(&["-b", "1024", "-E", "discard"]), &g),
            s(&["-b", "1024", "-E", "discard,stride=512,stripe_width=1536"])
        );
        assert_eq!(
            stripe_option(FsKind::Xfs, &s(&["-d", "su=64k,sw=2"])),
            Some("su=64k,sw=2")
        );
        assert_eq!(
            stripe_option(FsKind::Ext4, &s(&["-E", "discard,stride=16"])),
            Some("discard,stride=16")
        );
        assert_eq!(stripe_option(FsKind::Xfs, &s(&["-K"])), None);
    }
}
