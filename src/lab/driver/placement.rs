//! Faults placed under data: the data set's files mapped from their extents on the
//! filesystem's device (FIEMAP), through a linear LVM volume's table when there is one, through
//! md's layout (chunk, level, parity rotation, each member's data offset, all from sysfs) — or,
//! on btrfs, from the filesystem's logical addresses through its chunk tree and profiles — to a
//! member and a byte on it. A fault with `offset = "data"` starts where its range holds the
//! most file data on its member; `offset = "file:PATH"` at that file's first block there. Every
//! range fault then records what its range held ([`Held`]), and the map is checked against
//! the member's own bytes before anything is struck.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::super::dataset::DataSet;
use super::super::held::{Held, HeldFile, MAX_HELD_LISTED};
use crate::layout::btrfsmap::{self, BtrfsMap};
use crate::layout::fault::{self, Fault, Under};
use crate::layout::mdmap::{Content, MdGeometry, Piece};
use crate::layout::zfsmap::{self, ZfsMap};
use crate::layout::{Built, Runner};

/// Bytes of one file on the array: `len` bytes from array byte `array` are the file's bytes
/// from `logical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    array: u64,
    len: u64,
    file: usize,
    logical: u64,
}

/// How the pooling layer lays bytes on its members.
#[derive(Debug)]
enum Geo {
    /// An md array: runs are array bytes.
    Md(MdGeometry),
    /// A btrfs filesystem: runs are its logical addresses.
    Btrfs(BtrfsMap),
    /// A ZFS pool: runs are block addresses ([`zfsmap::block_addr`]).
    Zfs(ZfsMap),
}

impl Geo {
    /// Every copy of the bytes `[at, at + len)` on the members.
    fn map(&self, at: u64, len: u64) -> Vec<Piece> {
        match self {
            Geo::Md(g) => g.map(at, len),
            Geo::Btrfs(b) => b.map(at, len),
            Geo::Zfs(z) => z.map(at, len),
        }
    }

    /// Every place of the bytes `[at, at + len)` and the parity covering them: every copy
    /// (mirrors, DVAs), and md RAID4/5/6's, btrfs RAID5/6's and raidz's parity of the same
    /// rows.
    fn protect(&self, at: u64, len: u64) -> Vec<Piece> {
        match self {
            Geo::Md(g) => {
                let data = g.map(at, len);
                let parity: Vec<Piece> = data.iter().flat_map(|p| g.parity_of(p)).collect();
                data.into_iter().chain(parity).collect()
            }
            Geo::Btrfs(b) => {
                let data = b.map(at, len);
                let parity: Vec<Piece> = data.iter().flat_map(|p| b.parity_of(p)).collect();
                data.into_iter().chain(parity).collect()
            }
            Geo::Zfs(z) => z.pieces(at, len, true).into_iter().map(|p| p.0).collect(),
        }
    }

    /// What byte `m` of member `disk` holds (`None`: neither file data nor parity — md's
    /// superblock area, btrfs metadata, unallocated space) and how many bytes from it hold
    /// the same.
    fn content_at(&self, disk: usize, m: u64) -> Result<(Option<Content>, u64), String> {
        match self {
            Geo::Md(g) => {
                let d = g
                    .data_offsets
                    .get(disk)
                    .copied()
                    .flatten()
                    .ok_or_else(|| format!("md shows no device in slot {disk}"))?;
                if m < d {
                    return Ok((None, d - m));
                }
                let (c, rest) = g.content(disk, m - d);
                Ok((Some(c), rest))
            }
            Geo::Btrfs(b) => {
                let (h, rest) = b.content(disk, m);
                Ok((
                    match h {
                        btrfsmap::Held::Content(c) => Some(c),
                        btrfsmap::Held::Metadata | btrfsmap::Held::Nothing => None,
                    },
                    rest,
                ))
            }
            Geo::Zfs(z) => Ok(z.content(disk, m)),
        }
    }
}

/// The data set as the pooling layer (md or btrfs) lays it out.
#[derive(Debug)]
pub(super) struct DataMap {
    geo: Geo,
    /// Every run of file data on the array, sorted by array offset.
    runs: Vec<Run>,
}

/// A range of one member holding one file's bytes: member byte, length, file, file byte.
type OnMember = (u64, u64, usize, u64);

/// A fault made ready to strike: placed when it goes under data, with what its range holds;
/// `error` when it cannot be placed (then it is not struck).
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub fault: Fault,
    pub held: Option<Held>,
    pub error: Option<String>,
    /// For `copies = "all"`: the other copies and parity of the file bytes the range holds,
    /// as corrupt faults on their members, struck with it.
    pub also: Vec<Fault>,
    /// For `copies = "all"` on md RAID4/5/6 and btrfs RAID5/6: the parity blocks checked before the strike,
    /// read again after it to see that they changed.
    pub parity: Option<ParityCheck>,
}

/// `(start, len, target offset)` segments of a linear device-mapper table, in bytes.
type Linear = Vec<(u64, u64, u64)>;

/// Parses `dmsetup table` lines of `linear` segments onto device `dev` (`MAJ:MIN`), in bytes.
fn parse_linear(table: &str, dev: &str) -> Result<Linear, String> {
    let mut out = Vec::new();
    for l in table.lines().filter(|l| !l.trim().is_empty()) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let num = |i: usize| w.get(i).and_then(|x| x.parse::<u64>().ok());
        match (num(0), num(1), w.get(2), w.get(3), num(4)) {
            (Some(s), Some(n), Some(&"linear"), Some(d), Some(o)) if *d == dev => {
                out.push((s * 512, n * 512, o * 512));
            }
            _ => {
                return Err(format!(
                    "the volume's table '{}' is not linear over the array ({dev})",
                    l.trim()
                ));
            }
        }
    }
    Ok(out)
}

/// The file system's device bytes `[at, at + len)` as array ranges through `lin`.
fn through(lin: Option<&Linear>, at: u64, len: u64) -> Vec<(u64, u64)> {
    let Some(lin) = lin else {
        return vec![(at, len)];
    };
    let mut out = Vec::new();
    for &(s, n, o) in lin {
        let (a, b) = (at.max(s), (at + len).min(s + n));
        if a < b {
            out.push((o + (a - s), b - a));
        }
    }
    out
}

/// md's geometry of the layout's array, and the linear table of the LVM volume over it when
/// the filesystem sits on one.
fn md_map(runner: &Runner, built: &Built) -> Result<(MdGeometry, Option<Linear>), String> {
    let md = built
        .md_array()
        .ok_or_else(|| format!("{}: the md layout has no array", built.name))?;
    let md_name = fault::kernel_name(&md).ok_or_else(|| format!("{} is gone", md.display()))?;
    let geo = MdGeometry::from_sysfs(Path::new("/sys"), &PathBuf::from(format!("/dev/{md_name}")))?;
    let fs_name = fault::kernel_name(&built.fs_device)
        .ok_or_else(|| format!("{} is gone", built.fs_device.display()))?;
    if fs_name == md_name {
        return Ok((geo, None));
    }
    let dm = read_sys(format!("/sys/block/{fs_name}/dm/name"));
    if dm.is_empty() {
        return Err(format!(
            "the filesystem is on {fs_name}, neither the array nor a volume over it"
        ));
    }
    let out = runner
        .run(&["dmsetup", "table", &dm])
        .map_err(|e| e.to_string())?;
    let dev = read_sys(format!("/sys/block/{md_name}/dev"));
    Ok((geo, Some(parse_linear(&out.stdout, &dev)?)))
}

/// The btrfs filesystem's chunk tree (read from its first member, after a sync so the chunks
/// the data set made are on disk) and the device id of each member.
fn btrfs_map(runner: &Runner, built: &Built) -> Result<BtrfsMap, String> {
    let mnt = built.mount_point.to_string_lossy().to_string();
    runner
        .run(&["btrfs", "filesystem", "sync", &mnt])
        .map_err(|e| e.to_string())?;
    let shown =
        crate::layout::btrfs::show(runner, &built.mount_point).map_err(|e| e.to_string())?;
    let devids: Vec<Option<u64>> = built
        .members
        .iter()
        .map(|m| {
            let k = fault::kernel_name(m);
            shown
                .iter()
                .find(|d| k.is_some() && d.path.as_deref().and_then(fault::kernel_name) == k)
                .map(|d| d.devid)
        })
        .collect();
    let first = built
        .members
        .iter()
        .zip(&devids)
        .find(|(_, d)| d.is_some())
        .map(|(m, _)| m.to_string_lossy().to_string())
        .ok_or_else(|| "no member of the layout is a device of its btrfs filesystem".to_string())?;
    let out = runner
        .run(&[
            "btrfs",
            "inspect-internal",
            "dump-tree",
            "-t",
            "chunk",
            &first,
        ])
        .map_err(|e| e.to_string())?;
    Ok(BtrfsMap::new(
        btrfsmap::parse_chunk_tree(&out.stdout)?,
        devids,
    ))
}

/// The member slot and the member byte where a ZFS leaf's allocatable space starts: the leaf
/// is the member itself or a partition ZFS made on it (its start from sysfs), past the labels.
fn zfs_child(built: &Built, path: &str) -> Option<(usize, u64)> {
    let name = fault::kernel_name(Path::new(path))?;
    let sys = PathBuf::from(format!("/sys/class/block/{name}"));
    let (disk, start) = if sys.join("partition").exists() {
        let parent = std::fs::canonicalize(&sys)
            .ok()?
            .parent()?
            .file_name()?
            .to_string_lossy()
            .into_owned();
        let start: u64 = read_sys(sys.join("start")).parse().ok()?;
        (parent, start * 512)
    } else {
        (name, 0)
    };
    let slot = built
        .members
        .iter()
        .position(|m| fault::kernel_name(m).as_deref() == Some(disk.as_str()))?;
    Some((slot, start + zfsmap::LABEL_START))
}

/// The ZFS pool's map of the data set and its runs: the pool synced (so zdb reads what the
/// data set wrote), its vdev tree (`zdb -C`), each file's level-0 block pointers (`zdb -dddddd
/// DATASET OBJECT`, the object being the file's inode number).
fn zfs_map(
    runner: &Runner,
    built: &Built,
    pool: &str,
    set: &DataSet,
) -> Result<(ZfsMap, Vec<Run>), String> {
    use std::os::unix::fs::MetadataExt;
    runner
        .run(&["zpool", "sync", pool])
        .map_err(|e| e.to_string())?;
    let config = runner
        .run(&["zdb", "-C", pool])
        .map_err(|e| e.to_string())?;
    let vdevs = zfsmap::parse_config(&config.stdout)?;
    for v in &vdevs {
        if let zfsmap::Shape::Other(kind) = &v.shape {
            return Err(format!(
                "vdev {} is a {kind}; file data is placed on plain disks, mirrors and raidz only",
                v.id
            ));
        }
    }
    let children: Vec<Vec<zfsmap::ChildAt>> = vdevs
        .iter()
        .map(|v| v.children.iter().map(|c| zfs_child(built, c)).collect())
        .collect();
    let dataset = crate::layout::zfs::dataset_name(pool);
    let (mut blocks, mut runs) = (Vec::new(), Vec::new());
    for (i, f) in set.files.iter().enumerate() {
        let path = set.root.join(&f.path);
        let ino = std::fs::metadata(&path)
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
            .ino();
        let out = runner
            .run(&["zdb", "-dddddd", &dataset, &ino.to_string()])
            .map_err(|e| e.to_string())?;
        for b in zfsmap::parse_object_blocks(&out.stdout).map_err(|e| format!("{}: {e}", f.path))? {
            let addr = zfsmap::block_addr(&b.dvas[0]);
            let len = b.lsize.min(f.bytes.saturating_sub(b.file_offset));
            if len > 0 {
                runs.push(Run {
                    array: addr,
                    len,
                    file: i,
                    logical: b.file_offset,
                });
            }
            blocks.push(zfsmap::Block {
                addr,
                psize: b.psize,
                dvas: b.dvas,
            });
        }
    }
    runs.sort_by_key(|r| r.array);
    Ok((
        ZfsMap::new(vdevs, children, blocks, built.members.len()),
        runs,
    ))
}

fn read_sys(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl DataMap {
    /// Maps the data set `set` of layout `built`: md (optionally under one linear LVM volume),
    /// btrfs, or ZFS (`pool`: the layout's pool).
    pub(super) fn build(
        runner: &Runner,
        built: &Built,
        set: &DataSet,
        pool: Option<&str>,
    ) -> Result<DataMap, String> {
        let (geo, lin) = match built.stack.raid() {
            crate::layout::RaidLayer::Btrfs { .. } => (Geo::Btrfs(btrfs_map(runner, built)?), None),
            crate::layout::RaidLayer::Md(_) => {
                let (g, lin) = md_map(runner, built)?;
                (Geo::Md(g), lin)
            }
            crate::layout::RaidLayer::Zfs(_) => {
                let pool = pool.ok_or_else(|| "the layout's pool is not known".to_string())?;
                let (z, runs) = zfs_map(runner, built, pool, set)?;
                return Ok(DataMap {
                    geo: Geo::Zfs(z),
                    runs,
                });
            }
            crate::layout::RaidLayer::None => {
                return Err("a plain disk has no pooling layer to place data through".into());
            }
        };
        let mut runs = Vec::new();
        for i in 0..set.files.len() {
            let ext = set
                .extents(i)
                .map_err(|e| format!("cannot read the extent map of {}: {e}", set.files[i].path))?;
            for e in ext {
                if e.flags & crate::sys::FIEMAP_EXTENT_NOT_PLAIN != 0 {
                    continue;
                }
                let mut logical = e.logical;
                for (array, len) in through(lin.as_ref(), e.physical, e.length) {
                    runs.push(Run {
                        array,
                        len,
                        file: i,
                        logical,
                    });
                    logical += len;
                }
            }
        }
        runs.sort_by_key(|r| r.array);
        Ok(DataMap { geo, runs })
    }

    /// Every range of member `disk` holding file bytes, sorted by member byte.
    fn on_member(&self, disk: usize) -> Vec<OnMember> {
        let mut out: Vec<OnMember> = Vec::new();
        for r in &self.runs {
            for p in self.geo.map(r.array, r.len) {
                if p.disk == disk {
                    out.push((
                        p.member_offset,
                        p.len,
                        r.file,
                        r.logical + (p.array_offset - r.array),
                    ));
                }
            }
        }
        out.sort_by_key(|p| p.0);
        out
    }

    /// Where on member `disk` a `length`-byte range of `under` starts (a whole 4 KiB block,
    /// within `member_size`).
    pub(super) fn place(
        &self,
        set: &DataSet,
        disk: usize,
        under: &Under,
        length: u64,
        member_size: u64,
    ) -> Result<u64, String> {
        let pieces = self.on_member(disk);
        let start = match under {
            Under::Data => best_window(&pieces, length)
                .ok_or_else(|| format!("no file of the data set has a block on member {disk}"))?,
            Under::File(path) => {
                let i = set.index_of(path).ok_or_else(|| {
                    format!(
                        "{path} is not a file of the data set (its files are .iolab-data/dN/fNNNNN)"
                    )
                })?;
                pieces
                    .iter()
                    .filter(|p| p.2 == i)
                    .min_by_key(|p| p.3)
                    .map(|p| p.0)
                    .ok_or_else(|| format!("{path} has no block on member {disk}"))?
            }
        };
        Ok((start & !4095).min(member_size.saturating_sub(length) & !4095))
    }

    /// What `length` bytes at `offset` of member `disk` hold.
    pub(super) fn held(&self, set: &DataSet, disk: usize, offset: u64, length: u64) -> Held {
        let mut h = Held::default();
        let mut per: BTreeMap<usize, u64> = BTreeMap::new();
        let end = offset.saturating_add(length);
        let mut m = offset;
        while m < end {
            let (content, rest) = match self.geo.content_at(disk, m) {
                Ok(x) => x,
                Err(e) => return Held::unknown(e),
            };
            let n = rest.min(end - m);
            match content {
                None => h.other_bytes += n,
                Some(Content::Parity) => h.parity_bytes += n,
                Some(Content::Data(a)) => {
                    let covered = self.file_bytes_in(a, n, &mut per);
                    h.file_bytes += covered;
                    h.other_bytes += n - covered;
                }
            }
            m += n;
        }
        h.files = per.len() as u64;
        h.indexes = per.keys().copied().collect();
        h.listed = per
            .iter()
            .take(MAX_HELD_LISTED)
            .map(|(&i, &bytes)| HeldFile {
                path: set.files[i].path.clone(),
                bytes,
                after: None,
                after_repair: None,
            })
            .collect();
        h
    }

    /// Bytes of files in array range `[a, a + n)`, added per file to `per`.
    fn file_bytes_in(&self, a: u64, n: u64, per: &mut BTreeMap<usize, u64>) -> u64 {
        let first = self.runs.partition_point(|r| r.array + r.len <= a);
        let mut covered = 0;
        for r in self.runs[first..].iter().take_while(|r| r.array < a + n) {
            let (x, y) = (a.max(r.array), (a + n).min(r.array + r.len));
            if x < y {
                covered += y - x;
                *per.entry(r.file).or_default() += y - x;
            }
        }
        covered
    }

    /// The other copies of the file bytes that `length` bytes at `offset` of member `disk`
    /// hold, and the parity covering them, as `(member, offset, length)` on members other than
    /// `disk`, adjacent ranges merged.
    fn every_copy(&self, disk: usize, offset: u64, length: u64) -> Vec<(usize, u64, u64)> {
        let mut out: Vec<(usize, u64, u64)> = Vec::new();
        let end = offset.saturating_add(length);
        let mut m = offset;
        while m < end {
            let Ok((content, rest)) = self.geo.content_at(disk, m) else {
                break;
            };
            let n = rest.min(end - m);
            if let Some(Content::Data(a)) = content {
                for p in self.geo.protect(a, n) {
                    if p.disk != disk {
                        out.push((p.disk, p.member_offset, p.len));
                    }
                }
            }
            m += n;
        }
        out.sort_unstable();
        let mut merged: Vec<(usize, u64, u64)> = Vec::new();
        for (d, o, l) in out {
            match merged.last_mut() {
                Some(last) if last.0 == d && last.1 + last.2 >= o => {
                    last.2 = last.2.max(o + l - last.1);
                }
                _ => merged.push((d, o, l)),
            }
        }
        merged
    }

    /// On md RAID4/5/6 and btrfs RAID5/6, checks the parity that `copies = "all"` strikes
    /// beside `length` bytes at `offset` of member `disk` against the members' own bytes
    /// (`devs`, by slot): in each chunk (md) or stripe element (btrfs) of file data in the
    /// range, the first 4 KiB block of P must be the XOR of the data columns at that place,
    /// and of Q their RAID6 syndrome — the rotation computed independently of the bytes.
    /// Stripes with a column on a missing member are not checked. `Ok(None)`: no parity under
    /// the range.
    pub(super) fn confirm_parity(
        &self,
        devs: &[PathBuf],
        disk: usize,
        offset: u64,
        length: u64,
    ) -> Result<Option<ParityCheck>, String> {
        let (unit, what) = match &self.geo {
            Geo::Md(_) => ("stripe", "md's layout"),
            Geo::Btrfs(_) => ("full stripe", "the map"),
            Geo::Zfs(_) => return Ok(None),
        };
        let read = |(slot, at): (usize, u64)| -> Result<(PathBuf, u64, Vec<u8>), String> {
            let dev = devs
                .get(slot)
                .ok_or_else(|| format!("no member in slot {slot}"))?;
            let bytes = read_direct(dev, at)
                .map_err(|e| format!("cannot read {} at {at}: {e}", dev.display()))?;
            Ok((dev.clone(), at, bytes))
        };
        let (mut rows, mut names, mut blocks) = (0, "P", Vec::new());
        let end = offset.saturating_add(length);
        let mut m = offset;
        while m < end {
            let (content, rest) = self.geo.content_at(disk, m)?;
            let n = rest.min(end - m);
            let stripe = match (&self.geo, content) {
                (Geo::Btrfs(b), Some(Content::Data(a))) => {
                    b.full_stripe(a & !4095).map(|f| (f.data, f.parity))
                }
                (Geo::Md(g), Some(Content::Data(_))) => g
                    .data_offsets
                    .get(disk)
                    .copied()
                    .flatten()
                    .and_then(|d| g.stripe_at((m - d) & !4095)),
                _ => None,
            };
            m += n;
            let Some(fs) = stripe else { continue };
            let (Some(data), Some(parity)) = (
                fs.0.into_iter().collect::<Option<Vec<_>>>(),
                fs.1.into_iter().collect::<Option<Vec<_>>>(),
            ) else {
                continue;
            };
            let columns: Vec<Vec<u8>> = data
                .into_iter()
                .map(|c| read(c).map(|r| r.2))
                .collect::<Result<_, _>>()?;
            let (p, q) = syndromes(&columns);
            for (k, place) in parity.into_iter().enumerate() {
                let got = read(place)?;
                let (want, name) = if k == 0 { (&p, "P") } else { (&q, "Q") };
                if got.2 != *want {
                    return Err(format!(
                        "{what} says {name} of the {unit} is at {} on {} and it is not what the data columns compute: not struck",
                        got.1,
                        got.0.display()
                    ));
                }
                if k == 1 {
                    names = "P and Q";
                }
                blocks.push(got);
            }
            rows += 1;
        }
        Ok((rows > 0).then(|| ParityCheck {
            says: format!(
                "{names} of {rows} {unit}{} under the range found where {what} says, equal to what their data columns compute",
                if rows == 1 { "" } else { "s" }
            ),
            blocks,
        }))
    }

    /// Checks the map against member `disk` (its device `dev`): the first 4 KiB block of file
    /// data inside `[offset, offset + length)` read from the member (O_DIRECT) must be the
    /// file's own bytes. `Ok(None)` when the range holds no file data.
    pub(super) fn confirm(
        &self,
        set: &DataSet,
        dev: &Path,
        disk: usize,
        offset: u64,
        length: u64,
    ) -> Result<Option<String>, String> {
        let end = offset + length;
        let Some(&(m, n, file, logical)) = self
            .on_member(disk)
            .iter()
            .find(|p| p.0 < end && p.0 + p.1 > offset)
        else {
            return Ok(None);
        };
        let at = m.max(offset);
        let block = at & !4095;
        let want_len = (4096 - (at - block)).min(m + n - at).min(end - at) as usize;
        let got = read_direct(dev, block)
            .map_err(|e| format!("cannot read {} at {block}: {e}", dev.display()))?;
        let from = (at - block) as usize;
        let want = set.expected(file, logical + (at - m), want_len);
        let path = &set.files[file].path;
        if got[from..from + want_len] == want[..] {
            Ok(Some(format!(
                "{want_len} bytes at {at} on the member are {path}'s from its byte {}",
                logical + (at - m)
            )))
        } else {
            Err(format!(
                "the map says {path}'s byte {} is at {at} on member {disk} and the member holds other bytes there: not struck",
                logical + (at - m)
            ))
        }
    }
}

/// Parity blocks read from the members before a strike: where, and their bytes then.
#[derive(Debug, Clone)]
pub(super) struct ParityCheck {
    /// What was checked: `P and Q of 4 full stripes ... are what their data columns compute`.
    pub says: String,
    /// Each parity block read: the member's device, the byte, its 4 KiB then.
    blocks: Vec<(PathBuf, u64, Vec<u8>)>,
}

/// RAID6's generator times `x` in GF(2^8) (the polynomial 0x11d, as the kernel's raid6).
fn gf_mul2(x: u8) -> u8 {
    (x << 1) ^ if x & 0x80 == 0 { 0 } else { 0x1d }
}

/// P (the XOR) and Q (the RAID6 syndrome: column `z` weighed by `2^z`) of `columns`, data
/// columns in logical order.
fn syndromes(columns: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let len = columns.first().map_or(0, Vec::len);
    let mut p = vec![0u8; len];
    let mut q = vec![0u8; len];
    for c in columns.iter().rev() {
        for (i, &b) in c.iter().enumerate() {
            p[i] ^= b;
            q[i] = gf_mul2(q[i]) ^ b;
        }
    }
    (p, q)
}

/// After the strike: each parity block of `c` read again must differ from its bytes before.
/// A block the member now refuses changed too: a layer under the pooling layer checked it and
/// found the garbage (dm-integrity fails the read with EILSEQ).
pub(super) fn parity_struck(c: &ParityCheck) -> Result<String, String> {
    let mut refused = 0;
    for (dev, at, before) in &c.blocks {
        let now = match read_direct(dev, *at) {
            Ok(b) => b,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::EILSEQ)) => {
                refused += 1;
                continue;
            }
            Err(e) => return Err(format!("cannot read {} at {at}: {e}", dev.display())),
        };
        if &now == before {
            return Err(format!(
                "the parity at {at} on {} was to be struck and holds the same bytes as before",
                dev.display()
            ));
        }
    }
    let refused = if refused > 0 {
        format!(" ({refused} of them now refused by the layer under the member)")
    } else {
        String::new()
    };
    Ok(format!(
        "{}; all {} of those parity blocks changed once struck{refused}",
        c.says,
        c.blocks.len()
    ))
}

/// 4 KiB of `dev` at `at` (a multiple of 4096), read past the page cache.
fn read_direct(dev: &Path, at: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)?;
    let mut buf = vec![0u8; 8192];
    let skip = buf.as_ptr().align_offset(4096);
    f.read_exact_at(&mut buf[skip..skip + 4096], at)?;
    Ok(buf[skip..skip + 4096].to_vec())
}

/// The start (a piece's start) of the `length`-byte window holding the most file bytes.
fn best_window(pieces: &[OnMember], length: u64) -> Option<u64> {
    let mut best: Option<(u64, u64)> = None;
    let mut j = 0;
    let mut full = 0u64;
    for i in 0..pieces.len() {
        let s = pieces[i].0;
        let e = s + length;
        if j < i {
            j = i;
            full = 0;
        }
        while j < pieces.len() && pieces[j].0 + pieces[j].1 <= e {
            full += pieces[j].1;
            j += 1;
        }
        let partial = pieces.get(j).map_or(0, |p| e.saturating_sub(p.0).min(p.1));
        let got = full + partial;
        if best.is_none_or(|(_, b)| got > b) {
            best = Some((s, got));
        }
        if j > i {
            full -= pieces[i].1;
        }
    }
    best.map(|b| b.0)
}

/// For `copies = "all"`: the other copies of the file bytes fault `f`'s range holds, and the
/// parity covering them, as corrupt faults on their members — with md RAID4/5/6 and btrfs
/// RAID5/6 parity checked against the members first (its line in `held`). An error when that check fails
/// (then nothing is struck).
fn other_copies(
    m: &DataMap,
    built: &Built,
    f: &Fault,
    held: &mut Held,
) -> Result<(Vec<Fault>, Option<ParityCheck>), String> {
    let Some((offset, length)) = f.kind.range() else {
        return Ok((Vec::new(), None));
    };
    let also: Vec<Fault> = m
        .every_copy(f.member, offset, length)
        .into_iter()
        .map(|(member, offset, length)| Fault {
            member,
            at: f.at,
            kind: f.kind.at_offset(offset).with_length(length),
            progress: None,
            under: None,
            placed: false,
            copies: crate::stack::fault::Copies::One,
        })
        .collect();
    if also.is_empty() {
        return Ok((also, None));
    }
    let parity = m.confirm_parity(&built.members, f.member, offset, length)?;
    if let Some(c) = &parity {
        held.parity_checked = Some(c.says.clone());
    }
    Ok((also, parity))
}

impl Prepared {
    /// A fault struck as its spec wrote it: it has no range to look under, or the run maps
    /// nothing (a dry run, or no range fault asked for the map).
    fn as_written(fault: Fault) -> Self {
        Prepared {
            fault,
            held: None,
            error: None,
            also: Vec::new(),
            parity: None,
        }
    }

    /// A fault that is not struck: it had to be placed and could not be, so striking it where
    /// the spec wrote it would test something else than asked.
    fn unplaced(fault: Fault, held: Option<Held>, error: String) -> Self {
        Prepared {
            fault,
            held,
            error: Some(error),
            also: Vec::new(),
            parity: None,
        }
    }
}

/// Places each fault under data when asked and finds what each range fault's range holds.
/// `dry`: nothing is mapped (no data set, no array).
pub(super) fn prepare(
    runner: &Runner,
    built: &Built,
    pool: Option<&str>,
    data: Option<&DataSet>,
    faults: Vec<Fault>,
    dry: bool,
) -> Vec<Prepared> {
    let wants_map = faults.iter().any(|f| f.kind.range().is_some());
    if dry {
        record_dry_placement(runner, &faults);
    }
    let map = match data {
        _ if dry || !wants_map => None,
        Some(set) => Some(DataMap::build(runner, built, set, pool).map(|m| (m, set))),
        None => Some(Err("the layout has no data set".to_string())),
    };
    faults
        .into_iter()
        .map(|f| {
            let Some((_, length)) = f.kind.range() else {
                return Prepared::as_written(f);
            };
            match &map {
                None => Prepared::as_written(f),
                Some(Err(e)) => without_map(f, e),
                Some(Ok((m, set))) => prepare_on_map(m, set, built, f, length),
            }
        })
        .collect()
}

/// A dry run has no data set to place by: the record says where the lab would look, so a
/// reader of the dry run sees which faults depend on the data's layout (the tables below
/// stand at 0).
fn record_dry_placement(runner: &Runner, faults: &[Fault]) {
    for f in faults.iter().filter(|f| f.under.is_some()) {
        runner.record(&[
            "iolab-place-under-data".to_string(),
            format!("member={}", f.member),
            format!("length={}", f.kind.range().map_or(0, |r| r.1)),
        ]);
    }
}

/// A range fault when the data could not be mapped: one asked to go under data is not
/// struck; any other still is, its report saying why what it held is unknown.
fn without_map(f: Fault, e: &str) -> Prepared {
    let held = Some(Held::unknown(e.to_string()));
    if f.under.is_some() {
        let error = format!("cannot be placed under file data: {e}");
        Prepared::unplaced(f, held, error)
    } else {
        Prepared {
            fault: f,
            held,
            error: None,
            also: Vec::new(),
            parity: None,
        }
    }
}

/// A range fault on mapped data: placed under file bytes when asked, then what its range
/// holds, confirmed on the member, and for `copies = "all"` the other copies struck with it,
/// so the report can say which files the strike could have hurt.
fn prepare_on_map(
    m: &DataMap,
    set: &DataSet,
    built: &Built,
    mut f: Fault,
    length: u64,
) -> Prepared {
    let dev = built.members.get(f.member).cloned().unwrap_or_default();
    if let Some(under) = f.under.clone() {
        match m.place(set, f.member, &under, length, built.member_size) {
            Ok(at) => {
                f.kind = f.kind.at_offset(at);
                f.placed = true;
            }
            Err(e) => {
                let error = format!("cannot be placed under file data: {e}");
                return Prepared::unplaced(f, None, error);
            }
        }
    }
    let (offset, length) = f.kind.range().unwrap_or((0, length));
    let mut held = m.held(set, f.member, offset, length);
    let mut error = None;
    match m.confirm(set, &dev, f.member, offset, length) {
        Ok(c) => held.confirmed = c,
        Err(e) if f.under.is_some() => error = Some(e),
        Err(e) => held.confirmed = Some(format!("not confirmed: {e}")),
    }
    let (also, parity) = if f.copies == crate::stack::fault::Copies::All && error.is_none() {
        other_copies(m, built, &f, &mut held).unwrap_or_else(|e| {
            error = Some(e);
            (Vec::new(), None)
        })
    } else {
        (Vec::new(), None)
    };
    Prepared {
        fault: f,
        held: Some(held),
        also,
        error,
        parity,
    }
}

/// Reads each file `held` names back alone after the fault's step and records what became of
/// it, and how many did not come back.
pub(super) fn observe_held(held: &mut Held, set: &DataSet) {
    if held.unmapped.is_some() {
        return;
    }
    let (lost, mut after) = read_held(held, set);
    for (f, i) in held.listed.iter_mut().zip(&held.indexes) {
        f.after = after.remove(i);
    }
    held.lost = Some(lost);
}

/// Reads each file `held` names once more after md's `repair` and records what became of it.
pub(super) fn observe_after_repair(held: &mut Held, set: &DataSet) {
    if held.unmapped.is_some() || held.lost.is_none() {
        return;
    }
    let (lost, mut after) = read_held(held, set);
    for (f, i) in held.listed.iter_mut().zip(&held.indexes) {
        f.after_repair = after.remove(i);
    }
    held.lost_after_repair = Some(lost);
}

/// Each held file read back alone: how many did not come back intact, and per file index
/// `intact` or what was wrong.
fn read_held(held: &Held, set: &DataSet) -> (u64, BTreeMap<usize, String>) {
    let mut lost = 0;
    let mut after: BTreeMap<usize, String> = BTreeMap::new();
    for &i in &held.indexes {
        let text = match set.check_one(i) {
            Ok(()) => "intact".to_string(),
            Err((p, d)) => {
                lost += 1;
                format!("{}: {d}", problem_word(p))
            }
        };
        after.insert(i, text);
    }
    (lost, after)
}

fn problem_word(p: super::super::dataset::Problem) -> &'static str {
    use super::super::dataset::Problem;
    match p {
        Problem::Mismatch => "silently wrong",
        Problem::ReadError => "read error",
        Problem::Missing => "missing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P is the XOR of the data columns; Q weighs column `z` by `2^z` in GF(2^8) over 0x11d,
    /// as the kernel's `raid6_gen_syndrome` (0x80 * 2 wraps to 0x1d).
    #[test]
    fn p_and_q_are_the_kernels_syndromes() {
        let (p, q) = syndromes(&[
            vec![0x01, 0x80, 0x00],
            vec![0x01, 0x80, 0x00],
            vec![0x00, 0x00, 0x01],
        ]);
        assert_eq!(p, vec![0x00, 0x00, 0x01]);
        // Column 0 times 1, column 1 times 2, column 2 times 4.
        assert_eq!(q, vec![0x01 ^ 0x02, 0x80 ^ 0x1d, 0x04]);
        assert_eq!(gf_mul2(0xff), 0xfe ^ 0x1d);
    }

    #[test]
    fn the_window_with_the_most_file_data_wins() {
        // Member bytes: [0, 4K) file 0, [64K, 128K) file 1, [132K, 196K) file 2.
        let p = vec![
            (0, 4096, 0, 0),
            (65_536, 65_536, 1, 0),
            (135_168, 65_536, 2, 0),
        ];
        assert_eq!(best_window(&p, 4096), Some(0));
        assert_eq!(best_window(&p, 8192), Some(65_536));
        assert_eq!(best_window(&p, 200_000), Some(0));
        assert_eq!(best_window(&p, 100_000), Some(65_536));
        assert_eq!(best_window(&[], 4096), None);
    }

    #[test]
    fn a_volume_table_maps_onto_the_array() {
        let t = "0 2048 linear 9:127 4096\n2048 1000 linear 9:127 100000\n";
        let lin = parse_linear(t, "9:127").unwrap();
        assert_eq!(lin[0], (0, 2048 * 512, 4096 * 512));
        // A range across both segments splits.
        let r = through(Some(&lin), 2047 * 512, 1024);
        assert_eq!(
            r,
            vec![(4096 * 512 + 2047 * 512, 512), (100_000 * 512, 512)]
        );
        assert_eq!(through(None, 5, 6), vec![(5, 6)]);
        let e = parse_linear("0 10 striped 2 128 9:1 0 9:2 0", "9:127").unwrap_err();
        assert!(e.contains("not linear"), "{e}");
        assert!(parse_linear(t, "9:1").is_err());
    }

    #[test]
    fn a_range_is_counted_as_files_parity_and_the_rest() {
        let geo = MdGeometry {
            level: 5,
            layout: 2,
            chunk: 65_536,
            raid_disks: 3,
            data_offsets: vec![Some(1 << 20); 3],
        };
        // One file over array bytes [0, 256K): chunks 0..4; RAID5 x3 left-symmetric puts
        // chunks 0, 1 in stripe 0 (disks 0, 1; parity 2), 2, 3 in stripe 1 (parity 1: data on
        // 2, 0).
        let map = DataMap {
            geo: Geo::Md(geo),
            runs: vec![Run {
                array: 0,
                len: 262_144,
                file: 0,
                logical: 0,
            }],
        };
        let set = DataSet {
            root: PathBuf::from("/nonexistent"),
            files: vec![crate::lab::dataset::DataFile {
                path: ".iolab-data/d0/f00000".into(),
                bytes: 262_144,
                seed: 1,
                xxh3: 0,
            }],
            bytes: 262_144,
        };
        let on0 = map.on_member(0);
        assert_eq!(
            on0,
            vec![
                (1 << 20, 65_536, 0, 0),
                ((1 << 20) + 65_536, 65_536, 0, 196_608)
            ]
        );
        // Member 2: stripe 0 parity, stripe 1 chunk 2, stripe 2 nothing written.
        let h = map.held(&set, 2, (1 << 20) - 4096, 3 * 65_536 + 4096);
        assert_eq!(
            (h.other_bytes, h.parity_bytes, h.file_bytes, h.files),
            (4096 + 65_536, 65_536, 65_536, 1)
        );
        assert_eq!(h.listed[0].path, ".iolab-data/d0/f00000");
        let at = map.place(&set, 2, &Under::Data, 4096, 256 << 20).unwrap();
        assert_eq!(at, (1 << 20) + 65_536);
        let at = map
            .place(
                &set,
                0,
                &Under::File("./.iolab-data/d0/f00000".into()),
                8192,
                256 << 20,
            )
            .unwrap();
        assert_eq!(at, 1 << 20);
        let e = map
            .place(&set, 0, &Under::File("x".into()), 8192, 256 << 20)
            .unwrap_err();
        assert!(e.contains("not a file of the data set"), "{e}");
    }
}
