//! Where ZFS puts a file's bytes on its member disks. A file's object number is its inode
//! number; `zdb -dddddd POOL/DATASET OBJECT` lists its level-0 block pointers, each with its
//! DVAs `<vdev:offset:asize>` (six `d`s: every DVA, not only the first); `zdb -C POOL` gives the
//! vdev tree (each top-level vdev's type, parity and ashift, its children in order). A DVA's
//! offset is a byte of its top-level vdev's space: on a plain disk or each mirror child that is
//! the byte past the front labels and boot region (4 MiB), on raidz the block is cut into
//! columns across the children as OpenZFS's `vdev_raidz_map_alloc` does (parity columns first,
//! then data column after data column; raidz1 swaps its first two columns when bit 20 of the
//! offset is set). The lab uses it as it uses [`super::mdmap`] for md and [`super::btrfsmap`]
//! for btrfs: to strike a fault under a file of its data set and to say what a struck range
//! held.

use super::mdmap::{Content, Piece};

/// Bytes before a vdev child's allocatable space: two 256 KiB labels and the 3.5 MiB boot
/// region (`VDEV_LABEL_START_SIZE`).
pub const LABEL_START: u64 = 0x40_0000;

/// One DVA of a block pointer: top-level vdev, byte in its space, allocated bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dva {
    /// Top-level vdev id.
    pub vdev: u64,
    /// Byte in the vdev's space.
    pub offset: u64,
    /// Bytes allocated (parity and padding included on raidz).
    pub asize: u64,
}

/// One level-0 block of a file: where it starts in the file, its logical and physical size,
/// and its copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBlock {
    /// Byte of the file the block starts at.
    pub file_offset: u64,
    /// Logical bytes.
    pub lsize: u64,
    /// Bytes on disk (before parity).
    pub psize: u64,
    /// Every copy (usually one; `copies=2` datasets keep two).
    pub dvas: Vec<Dva>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s, 16).ok()
}

/// Parses `vdev:offset:asize` (hex offset and size; a gang block's `G` suffix is refused: its
/// data is not at the DVA).
fn parse_dva(w: &str) -> Option<Dva> {
    let mut p = w.split(':');
    let (v, o, a) = (p.next()?, p.next()?, p.next()?);
    if p.next().is_some() {
        return None;
    }
    Some(Dva {
        vdev: v.parse().ok()?,
        offset: hex(o)?,
        asize: hex(a)?,
    })
}

/// Parses the level-0 blocks of the `Indirect blocks:` section of `zdb -dddddd DS OBJECT`
/// (`   20000  L0 0:4c0000:20000 20000L/20000P F=1 B=12/12 cksum=...`). Holes and embedded
/// blocks (no data on a member), gang blocks and compressed blocks (the member does not hold
/// the file's bytes as they are) are left out. An error when the text lists no block section
/// at all (not zdb's object dump).
pub fn parse_object_blocks(text: &str) -> Result<Vec<FileBlock>, String> {
    let mut out = Vec::new();
    let mut seen = false;
    for l in text.lines() {
        if l.trim_start().starts_with("Indirect blocks:") {
            seen = true;
            continue;
        }
        if !seen {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 3 || w[1] != "L0" {
            continue;
        }
        let Some(file_offset) = hex(w[0]) else {
            continue;
        };
        if w[2] == "EMBEDDED" {
            continue;
        }
        let mut dvas = Vec::new();
        let mut sizes = None;
        let mut gang = false;
        for t in &w[2..] {
            if let Some((l, p)) = t.split_once("L/") {
                sizes = hex(l).zip(p.strip_suffix('P').and_then(hex));
                break;
            }
            if t.ends_with('G') && t.contains(':') {
                gang = true;
            }
            if let Some(d) = parse_dva(t) {
                dvas.push(d);
            }
        }
        let Some((lsize, psize)) = sizes else {
            continue; // a hole: `20000L B=...`
        };
        if gang || dvas.is_empty() || lsize != psize {
            continue;
        }
        out.push(FileBlock {
            file_offset,
            lsize,
            psize,
            dvas,
        });
    }
    if !seen {
        return Err("zdb listed no block pointers (no 'Indirect blocks:' section)".into());
    }
    Ok(out)
}

/// How a top-level vdev lays blocks on its children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// One disk: the vdev is the disk.
    Disk,
    /// Every child holds the whole block.
    Mirror,
    /// Columns with `nparity` parity columns.
    Raidz(u64),
    /// A shape this map does not place bytes on (dRAID, ...): its type.
    Other(String),
}

/// A top-level vdev of the pool's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopVdev {
    /// Its id (the DVA's vdev).
    pub id: u64,
    /// How it lays blocks out.
    pub shape: Shape,
    /// log2 of its sector.
    pub ashift: u32,
    /// Its leaf devices' paths in child order (a plain disk: its own path).
    pub children: Vec<String>,
}

/// A top-level vdev while `zdb -C`'s tree is read: its type and parity as written.
#[derive(Debug, Default)]
struct Reading {
    kind: String,
    id: Option<u64>,
    nparity: u64,
    ashift: u32,
    children: Vec<String>,
}

fn unquote(v: &str) -> String {
    v.trim().trim_matches('\'').to_string()
}

/// Parses the first `vdev_tree:` of `zdb -C POOL`: the top-level vdevs with their children.
pub fn parse_config(text: &str) -> Result<Vec<TopVdev>, String> {
    let mut lines = text.lines();
    let root_indent = lines
        .by_ref()
        .find(|l| l.trim() == "vdev_tree:")
        .map(|l| l.len() - l.trim_start().len())
        .ok_or_else(|| "zdb -C shows no vdev_tree".to_string())?;
    let mut tops: Vec<Reading> = Vec::new();
    // The indents of the `children[N]:` lines the current line is inside.
    let mut open: Vec<usize> = Vec::new();
    for l in lines {
        if l.trim().is_empty() {
            continue;
        }
        let indent = l.len() - l.trim_start().len();
        if indent <= root_indent {
            break;
        }
        while open.last().is_some_and(|&i| i >= indent) {
            open.pop();
        }
        let t = l.trim();
        if t.starts_with("children[") && t.ends_with(':') {
            open.push(indent);
            match open.len() {
                1 => tops.push(Reading::default()),
                2 => {
                    if let Some(top) = tops.last_mut() {
                        top.children.push(String::new());
                    }
                }
                _ => {}
            }
            continue;
        }
        let (Some(top), Some((k, v))) = (tops.last_mut(), t.split_once(':')) else {
            continue;
        };
        match (open.len(), k.trim()) {
            (1, "type") => top.kind = unquote(v),
            (1, "id") => top.id = v.trim().parse().ok(),
            (1, "nparity") => top.nparity = v.trim().parse().unwrap_or(1),
            (1, "ashift") => top.ashift = v.trim().parse().unwrap_or(0),
            (1, "path") => top.children = vec![unquote(v)],
            (2, "path") => {
                if let Some(c) = top.children.last_mut() {
                    *c = unquote(v);
                }
            }
            _ => {}
        }
    }
    if tops.is_empty() {
        return Err("zdb -C shows no top-level vdev".into());
    }
    let mut out: Vec<TopVdev> = tops
        .into_iter()
        .enumerate()
        .map(|(i, r)| TopVdev {
            id: r.id.unwrap_or(i as u64),
            shape: match r.kind.as_str() {
                "disk" | "file" => Shape::Disk,
                "mirror" => Shape::Mirror,
                "raidz" => Shape::Raidz(r.nparity.max(1)),
                o => Shape::Other(o.to_string()),
            },
            ashift: r.ashift,
            children: r.children,
        })
        .collect();
    out.sort_by_key(|t| t.id);
    Ok(out)
}

/// One column of a raidz block: child index, byte in the child's allocatable space, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The child.
    pub child: usize,
    /// Byte in the child's space (past its labels).
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// A parity column.
    pub parity: bool,
}

/// The columns of a block of `psize` bytes at `offset` on a raidz vdev of `dcols` children
/// with `nparity` parity (OpenZFS `vdev_raidz_map_alloc`): parity columns first, then the
/// data columns in the order they hold the block's bytes.
pub fn raidz_columns(
    offset: u64,
    psize: u64,
    dcols: u64,
    nparity: u64,
    ashift: u32,
) -> Vec<Column> {
    let unit = 1u64 << ashift;
    let b = offset >> ashift;
    let s = psize.div_ceil(unit);
    let f = b % dcols;
    let o = (b / dcols) << ashift;
    let q = s / (dcols - nparity);
    let r = s - q * (dcols - nparity);
    let bc = if r == 0 { 0 } else { r + nparity };
    let acols = if q == 0 { bc } else { dcols };
    let mut cols: Vec<Column> = (0..acols)
        .map(|c| {
            let (mut col, mut coff) = (f + c, o);
            if col >= dcols {
                col -= dcols;
                coff += unit;
            }
            Column {
                child: col as usize,
                offset: coff,
                size: if c < bc { (q + 1) * unit } else { q * unit },
                parity: c < nparity,
            }
        })
        .collect();
    if nparity == 1 && cols.len() >= 2 && offset & (1 << 20) != 0 {
        let (c0, c1) = (cols[0], cols[1]);
        cols[0].child = c1.child;
        cols[0].offset = c1.offset;
        cols[1].child = c0.child;
        cols[1].offset = c0.offset;
    }
    cols
}

/// A run of one block copy's bytes on one child: child, byte in its space, bytes, and the
/// block byte it holds (`None`: parity).
type OnChild = (usize, u64, u64, Option<u64>);

impl TopVdev {
    /// The raidz columns of a block of `psize` bytes at `dva` on this vdev (`np` parity).
    fn raidz_columns(&self, dva: &Dva, psize: u64, np: u64) -> Vec<Column> {
        raidz_columns(
            dva.offset,
            psize,
            self.children.len() as u64,
            np,
            self.ashift,
        )
    }

    /// Where block bytes `[from, from + len)` of a block of `psize` bytes at `dva` lie on
    /// this vdev's children (every mirror child; on raidz the data columns), and with
    /// `parity` also the parity that covers them (the same rows of the parity columns).
    fn place(&self, dva: &Dva, psize: u64, from: u64, len: u64, parity: bool) -> Vec<OnChild> {
        let end = from + len;
        match &self.shape {
            Shape::Disk => vec![(0, dva.offset + from, len, Some(from))],
            Shape::Mirror => (0..self.children.len())
                .map(|c| (c, dva.offset + from, len, Some(from)))
                .collect(),
            Shape::Raidz(np) => {
                let cols = self.raidz_columns(dva, psize, *np);
                let mut out = Vec::new();
                let mut at = 0u64; // block byte at the start of this data column
                for c in cols.iter().filter(|c| !c.parity) {
                    let (a, b) = (from.max(at), end.min(at + c.size).min(psize));
                    if a < b {
                        out.push((c.child, c.offset + (a - at), b - a, Some(a)));
                        if parity {
                            // The same rows of each parity column.
                            for p in cols.iter().filter(|p| p.parity) {
                                let row = a - at;
                                let n = (b - a).min(p.size.saturating_sub(row));
                                if n > 0 {
                                    out.push((p.child, p.offset + row, n, None));
                                }
                            }
                        }
                    }
                    at += c.size;
                }
                out
            }
            Shape::Other(_) => Vec::new(),
        }
    }

    /// Every byte range a block copy takes on the children: its data, then its parity.
    fn whole(&self, dva: &Dva, psize: u64) -> Vec<OnChild> {
        match &self.shape {
            Shape::Raidz(np) => {
                let cols = self.raidz_columns(dva, psize, *np);
                let mut out = Vec::new();
                let mut at = 0u64;
                for c in &cols {
                    if c.parity {
                        out.push((c.child, c.offset, c.size, None));
                    } else {
                        let n = c.size.min(psize.saturating_sub(at));
                        if n > 0 {
                            out.push((c.child, c.offset, n, Some(at)));
                        }
                        at += c.size;
                    }
                }
                out
            }
            _ => self.place(dva, psize, 0, psize, false),
        }
    }
}

/// A block of the data set on the pool: its address in the map's own linear space (the
/// "array" byte the lab's runs speak of), its size and its copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// First byte in the map's linear space.
    pub addr: u64,
    /// Bytes on disk (before parity).
    pub psize: u64,
    /// Every copy.
    pub dvas: Vec<Dva>,
}

/// Where each child of each top-level vdev is: the member slot (`None`: not a member of the
/// layout) and the member byte where the child's allocatable space starts (partition start +
/// [`LABEL_START`]).
pub type ChildAt = Option<(usize, u64)>;

/// A ZFS pool's blocks of the data set and its vdevs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZfsMap {
    /// The top-level vdevs by id.
    pub vdevs: Vec<TopVdev>,
    /// For each top-level vdev, where each child is.
    pub children: Vec<Vec<ChildAt>>,
    /// The blocks, sorted by address.
    pub blocks: Vec<Block>,
    /// Per member slot: `(member byte, bytes, content)` sorted by member byte.
    held: Vec<Vec<(u64, u64, Content)>>,
}

/// A block's address in the map's linear space: the vdev in the top byte, its first DVA's
/// offset below (DVAs do not overlap, so neither do addresses).
pub fn block_addr(d: &Dva) -> u64 {
    (d.vdev << 56) | d.offset
}

impl ZfsMap {
    /// A map of `blocks` over `vdevs` whose children are where `children` says, for `slots`
    /// member slots. Each block is placed once, so `content` can say what any member byte holds.
    pub fn new(
        vdevs: Vec<TopVdev>,
        children: Vec<Vec<ChildAt>>,
        mut blocks: Vec<Block>,
        slots: usize,
    ) -> ZfsMap {
        blocks.sort_by_key(|b| b.addr);
        let mut m = ZfsMap {
            vdevs,
            children,
            blocks,
            held: vec![Vec::new(); slots],
        };
        let mut held = vec![Vec::new(); slots];
        for b in &m.blocks {
            for d in &b.dvas {
                for (disk, at, len, what) in m.on_members(d, |v| v.whole(d, b.psize)) {
                    if let Some(h) = held.get_mut(disk) {
                        h.push((
                            at,
                            len,
                            what.map_or(Content::Parity, |x| Content::Data(b.addr + x)),
                        ));
                    }
                }
            }
        }
        for h in &mut held {
            h.sort_by_key(|x| x.0);
        }
        m.held = held;
        m
    }

    fn vdev(&self, id: u64) -> Option<(usize, &TopVdev)> {
        self.vdevs.iter().enumerate().find(|(_, v)| v.id == id)
    }

    /// What `f` places on vdev `d.vdev`'s children, as `(slot, member byte, bytes, block
    /// byte)`.
    fn on_members(
        &self,
        d: &Dva,
        f: impl Fn(&TopVdev) -> Vec<OnChild>,
    ) -> Vec<(usize, u64, u64, Option<u64>)> {
        let Some((i, v)) = self.vdev(d.vdev) else {
            return Vec::new();
        };
        f(v).into_iter()
            .filter_map(|(c, off, len, what)| {
                let (slot, base) = self.children.get(i)?.get(c).copied().flatten()?;
                Some((slot, base + off, len, what))
            })
            .collect()
    }

    /// Blocks overlapping `[at, at + len)`, with the overlap as (block, from, bytes).
    fn overlapping(&self, at: u64, len: u64) -> Vec<(&Block, u64, u64)> {
        let end = at.saturating_add(len);
        let first = self.blocks.partition_point(|b| b.addr + b.psize <= at);
        self.blocks[first..]
            .iter()
            .take_while(|b| b.addr < end)
            .filter_map(|b| {
                let (x, y) = (at.max(b.addr), end.min(b.addr + b.psize));
                (x < y).then(|| (b, x - b.addr, y - x))
            })
            .collect()
    }

    /// Where the bytes `[at, at + len)` of the map's space are: one piece per copy and
    /// column (every mirror child, every DVA), `disk` the member slot.
    pub fn map(&self, at: u64, len: u64) -> Vec<Piece> {
        self.pieces(at, len, false)
            .into_iter()
            .filter_map(|(p, data)| data.then_some(p))
            .collect()
    }

    /// [`ZfsMap::map`] with `parity`: also the raidz parity covering those bytes (flagged
    /// `false`).
    pub fn pieces(&self, at: u64, len: u64, parity: bool) -> Vec<(Piece, bool)> {
        let mut out = Vec::new();
        for (b, from, n) in self.overlapping(at, len) {
            for d in &b.dvas {
                for (disk, m, l, what) in
                    self.on_members(d, |v| v.place(d, b.psize, from, n, parity))
                {
                    out.push((
                        Piece {
                            disk,
                            member_offset: m,
                            array_offset: b.addr + what.unwrap_or(from),
                            len: l,
                        },
                        what.is_some(),
                    ));
                }
            }
        }
        out
    }

    /// What byte `m` of member slot `disk` holds (`None`: no block of the data set — metadata,
    /// labels, free space) and how many bytes from it hold the same.
    pub fn content(&self, disk: usize, m: u64) -> (Option<Content>, u64) {
        let Some(h) = self.held.get(disk) else {
            return (None, u64::MAX);
        };
        let i = h.partition_point(|x| x.0 + x.1 <= m);
        match h.get(i) {
            Some(&(s, n, c)) if s <= m => {
                let c = match c {
                    Content::Data(a) => Content::Data(a + (m - s)),
                    Content::Parity => Content::Parity,
                };
                (Some(c), s + n - m)
            }
            Some(&(s, _, _)) => (None, s - m),
            None => (None, u64::MAX),
        }
    }
}

#[cfg(test)]
#[path = "zfsmap_tests.rs"]
mod tests;
