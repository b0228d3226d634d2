//! Where btrfs puts a file's bytes on its member disks. FIEMAP on btrfs reports the
//! filesystem's logical addresses; the chunk tree (`btrfs inspect-internal dump-tree -t chunk`)
//! maps each logical range to one stripe per device, and the kernel's arithmetic per profile
//! (`btrfs_map_block`: copies for single, DUP and RAID1/1C3/1C4, striping for RAID0 and RAID10,
//! rotating parity for RAID5/6) gives the byte on a member. The lab uses it as it uses
//! [`super::mdmap`] for md: to strike a fault under a file of its data set and to say what a
//! struck range held (file data, parity, metadata or nothing).

use super::mdmap::{Content, Piece};

/// How a chunk spreads its bytes over its stripes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// One stripe.
    Single,
    /// Every stripe holds the whole chunk (DUP, RAID1, RAID1C3, RAID1C4).
    Copies,
    /// Striped over every stripe.
    Raid0,
    /// Striped over groups of `sub_stripes` copies.
    Raid10,
    /// Striped with rotating parity; the count of parity stripes per row (1: RAID5, 2: RAID6).
    Parity(usize),
}

/// One chunk of the chunk tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First logical byte.
    pub logical: u64,
    /// Logical bytes.
    pub length: u64,
    /// Bytes per stripe element (64 KiB).
    pub stripe_len: u64,
    /// The profile.
    pub profile: Profile,
    /// Data chunk (file bytes live only in these; metadata holds small inline files).
    pub data: bool,
    /// Copies per RAID10 group.
    pub sub_stripes: usize,
    /// Each stripe's device id and first physical byte on it.
    pub stripes: Vec<(u64, u64)>,
}

impl Chunk {
    /// Stripes that hold data in a row (the rest are parity).
    fn data_stripes(&self) -> usize {
        match self.profile {
            Profile::Parity(p) => self.stripes.len().saturating_sub(p).max(1),
            Profile::Raid10 => (self.stripes.len() / self.sub_stripes.max(1)).max(1),
            Profile::Raid0 => self.stripes.len().max(1),
            Profile::Single | Profile::Copies => 1,
        }
    }

    /// Bytes each stripe takes on its device.
    fn stripe_size(&self) -> u64 {
        self.length / self.data_stripes() as u64
    }

    /// Logical byte `l` (inside the chunk): how many bytes from it stay in one stripe element,
    /// and each copy's (stripe index, physical byte).
    fn place(&self, l: u64) -> (u64, Vec<(usize, u64)>) {
        let off = l - self.logical;
        let sl = self.stripe_len.max(1);
        let n = self.stripes.len();
        let phys = |i: usize, row: u64, within: u64| (i, self.stripes[i].1 + row * sl + within);
        match self.profile {
            Profile::Single | Profile::Copies => {
                // Single keeps one stripe; DUP and RAID1/1C3/1C4 a whole copy on each.
                let copies = if self.profile == Profile::Single {
                    1
                } else {
                    n
                };
                (
                    self.length - off,
                    (0..copies.min(n))
                        .map(|i| (i, self.stripes[i].1 + off))
                        .collect(),
                )
            }
            Profile::Raid0 => {
                let (nr, within) = (off / sl, off % sl);
                let i = (nr % n as u64) as usize;
                (sl - within, vec![phys(i, nr / n as u64, within)])
            }
            Profile::Raid10 => {
                let sub = self.sub_stripes.max(1);
                let factor = (n / sub).max(1) as u64;
                let (nr, within) = (off / sl, off % sl);
                let first = (nr % factor) as usize * sub;
                let row = nr / factor;
                (
                    sl - within,
                    (first..(first + sub).min(n))
                        .map(|i| phys(i, row, within))
                        .collect(),
                )
            }
            Profile::Parity(_) => {
                let ds = self.data_stripes() as u64;
                let (nr, within) = (off / sl, off % sl);
                let (row, idx) = (nr / ds, nr % ds);
                let i = ((row + idx) % n as u64) as usize;
                (sl - within, vec![phys(i, row, within)])
            }
        }
    }

    /// What physical byte `rel` bytes into stripe `i` holds, and how many bytes from it hold
    /// the same kind (to the end of its stripe element).
    fn content(&self, i: usize, rel: u64) -> (Content, u64) {
        let sl = self.stripe_len.max(1);
        let n = self.stripes.len() as u64;
        let (row, within) = (rel / sl, rel % sl);
        match self.profile {
            Profile::Single | Profile::Copies => {
                (Content::Data(self.logical + rel), self.stripe_size() - rel)
            }
            Profile::Raid0 => (
                Content::Data(self.logical + (row * n + i as u64) * sl + within),
                sl - within,
            ),
            Profile::Raid10 => {
                let sub = self.sub_stripes.max(1) as u64;
                let factor = (n / sub).max(1);
                let col = i as u64 / sub;
                (
                    Content::Data(self.logical + (row * factor + col) * sl + within),
                    sl - within,
                )
            }
            Profile::Parity(_) => {
                let ds = self.data_stripes() as u64;
                // The slot of data column `idx` in row `row` is (row + idx) % n.
                let idx = (i as u64 + n - row % n) % n;
                if idx < ds {
                    (
                        Content::Data(self.logical + (row * ds + idx) * sl + within),
                        sl - within,
                    )
                } else {
                    (Content::Parity, sl - within)
                }
            }
        }
    }
}

/// Columns of a full stripe: each one's (stripe index, physical byte).
type Columns = Vec<(usize, u64)>;

impl Chunk {
    /// The full stripe (row) holding chunk byte `l` on a RAID5/6 chunk, as `btrfs_map_block`
    /// lays it out: full stripe `row` puts data column `idx` on stripe `(row + idx) % n`, then
    /// P and Q on the next stripes round. Each column's (stripe index, physical byte of `l`'s
    /// place in it), data in logical order first, then the parity; `None` on other profiles.
    fn full_stripe(&self, l: u64) -> Option<(Columns, Columns)> {
        let Profile::Parity(parity) = self.profile else {
            return None;
        };
        let (sl, n) = (self.stripe_len.max(1), self.stripes.len() as u64);
        let ds = self.data_stripes() as u64;
        let off = l - self.logical;
        let (row, within) = (off / sl / ds, off % sl);
        let col = |k: u64| {
            let i = ((row + k) % n) as usize;
            (i, self.stripes[i].1 + row * sl + within)
        };
        Some((
            (0..ds).map(col).collect(),
            (ds..ds + parity as u64).map(col).collect(),
        ))
    }
}

/// One full stripe of a RAID5/6 chunk at one byte of its columns: each data column's place
/// in logical order, then P's (and Q's on RAID6), as `(member slot, member byte)`; `None` for
/// a column on a device no member has (a failed member).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullStripe {
    /// The data columns, in the order of their logical bytes (Q weighs column `z` by `2^z`).
    pub data: Vec<Option<(usize, u64)>>,
    /// P, then Q on RAID6.
    pub parity: Vec<Option<(usize, u64)>>,
}

/// A btrfs filesystem's chunks, and which member of the layout each device id is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtrfsMap {
    /// Every chunk, sorted by logical address.
    pub chunks: Vec<Chunk>,
    /// The device id of each member slot (`None`: the slot's device is not in the filesystem).
    pub devids: Vec<Option<u64>>,
}

/// What byte of a member holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Data or parity of a data chunk.
    Content(Content),
    /// Metadata or system chunk (trees, small inline files).
    Metadata,
    /// No chunk: unallocated, or the superblocks and reserved first MiB.
    Nothing,
}

impl BtrfsMap {
    /// A map of `chunks` (any order) over the members whose device ids are `devids`.
    pub fn new(mut chunks: Vec<Chunk>, devids: Vec<Option<u64>>) -> BtrfsMap {
        chunks.sort_by_key(|c| c.logical);
        BtrfsMap { chunks, devids }
    }

    fn slot(&self, devid: u64) -> Option<usize> {
        self.devids.iter().position(|d| *d == Some(devid))
    }

    /// Where the logical bytes `[at, at + len)` are: one piece per stripe element and per
    /// copy, `disk` the member slot. Bytes outside every chunk, or on a device no member has,
    /// get no piece.
    pub fn map(&self, at: u64, len: u64) -> Vec<Piece> {
        let mut out = Vec::new();
        let end = at.saturating_add(len);
        let mut a = at;
        while a < end {
            let ci = self.chunks.partition_point(|c| c.logical + c.length <= a);
            let Some(c) = self.chunks.get(ci).filter(|c| c.logical <= a) else {
                // A hole between chunks: skip to the next one.
                match self.chunks.get(ci) {
                    Some(next) if next.logical < end => {
                        a = next.logical;
                        continue;
                    }
                    _ => break,
                }
            };
            let (step, places) = c.place(a);
            let n = step.min(end - a).min(c.logical + c.length - a);
            for (i, phys) in places {
                if let Some(disk) = self.slot(c.stripes[i].0) {
                    out.push(Piece {
                        disk,
                        member_offset: phys,
                        array_offset: a,
                        len: n,
                    });
                }
            }
            a += n;
        }
        out
    }

    /// The full stripe holding logical byte `l` on a RAID5/6 chunk (`None`: no chunk holds
    /// it, or its profile has no parity).
    pub fn full_stripe(&self, l: u64) -> Option<FullStripe> {
        let ci = self.chunks.partition_point(|c| c.logical + c.length <= l);
        let c = self.chunks.get(ci).filter(|c| c.logical <= l)?;
        let (data, parity) = c.full_stripe(l)?;
        let slot = |(i, phys): (usize, u64)| self.slot(c.stripes[i].0).map(|d| (d, phys));
        Some(FullStripe {
            data: data.into_iter().map(slot).collect(),
            parity: parity.into_iter().map(slot).collect(),
        })
    }

    /// The parity (P, and Q on RAID6) covering data piece `p` (one of [`BtrfsMap::map`]'s):
    /// the same bytes of the parity columns of its full stripe, on the members that hold them.
    /// Empty on profiles without parity.
    pub fn parity_of(&self, p: &Piece) -> Vec<Piece> {
        self.full_stripe(p.array_offset)
            .map(|f| {
                f.parity
                    .into_iter()
                    .flatten()
                    .map(|(disk, member_offset)| Piece {
                        disk,
                        member_offset,
                        array_offset: p.array_offset,
                        len: p.len,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// What byte `m` of member slot `disk` holds, and how many bytes from it hold the same.
    pub fn content(&self, disk: usize, m: u64) -> (Held, u64) {
        let Some(devid) = self.devids.get(disk).copied().flatten() else {
            return (Held::Nothing, u64::MAX);
        };
        let mut next = u64::MAX;
        for c in &self.chunks {
            let size = c.stripe_size();
            for (i, &(d, start)) in c.stripes.iter().enumerate() {
                if d != devid {
                    continue;
                }
                if (start..start + size).contains(&m) {
                    if !c.data {
                        return (Held::Metadata, start + size - m);
                    }
                    let (content, rest) = c.content(i, m - start);
                    return (Held::Content(content), rest.min(start + size - m));
                }
                if start > m {
                    next = next.min(start - m);
                }
            }
        }
        (Held::Nothing, next)
    }
}

/// Parses the chunk items of `btrfs inspect-internal dump-tree -t chunk DEV`.
pub fn parse_chunk_tree(text: &str) -> Result<Vec<Chunk>, String> {
    let mut out: Vec<Chunk> = Vec::new();
    let mut cur: Option<Chunk> = None;
    let num = |w: &[&str], k: &str| -> Option<u64> {
        w.iter()
            .position(|x| *x == k)
            .and_then(|i| w.get(i + 1))
            .and_then(|s| s.parse().ok())
    };
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if l.contains("CHUNK_ITEM") && l.contains("key (") {
            out.extend(cur.take());
            // `item 3 key (FIRST_CHUNK_TREE CHUNK_ITEM 22020096) itemoff ...`
            let logical = w
                .iter()
                .position(|x| *x == "CHUNK_ITEM")
                .and_then(|i| w.get(i + 1))
                .and_then(|s| s.trim_end_matches(')').parse().ok())
                .ok_or_else(|| format!("a chunk item without its logical address: {l}"))?;
            cur = Some(Chunk {
                logical,
                length: 0,
                stripe_len: 65_536,
                profile: Profile::Single,
                data: false,
                sub_stripes: 1,
                stripes: Vec::new(),
            });
            continue;
        }
        if l.contains(" key (") {
            // Another item (a device item): the chunk before it is complete.
            out.extend(cur.take());
            continue;
        }
        let Some(c) = cur.as_mut() else { continue };
        if w.first() == Some(&"length") {
            c.length = num(&w, "length").ok_or_else(|| format!("no chunk length in: {l}"))?;
            c.stripe_len = num(&w, "stripe_len").unwrap_or(65_536);
            let ty = w
                .iter()
                .position(|x| *x == "type")
                .and_then(|i| w.get(i + 1))
                .copied()
                .unwrap_or("");
            c.data = ty.split('|').any(|t| t == "DATA");
            c.profile = profile_of(ty)?;
        } else if w.first() == Some(&"num_stripes") {
            c.sub_stripes = (num(&w, "sub_stripes").unwrap_or(1) as usize).max(1);
        } else if w.first() == Some(&"stripe") {
            let devid = num(&w, "devid").ok_or_else(|| format!("no devid in: {l}"))?;
            let offset = num(&w, "offset").ok_or_else(|| format!("no offset in: {l}"))?;
            c.stripes.push((devid, offset));
        }
    }
    out.extend(cur);
    if let Some(c) = out.iter().find(|c| c.stripes.is_empty() || c.length == 0) {
        return Err(format!(
            "the chunk at logical {} lists no stripes or no length",
            c.logical
        ));
    }
    Ok(out)
}

/// The profile named in a chunk's `type DATA|RAID5`.
fn profile_of(ty: &str) -> Result<Profile, String> {
    let parts: Vec<&str> = ty.split('|').collect();
    let has = |p: &str| parts.contains(&p);
    Ok(if has("RAID5") {
        Profile::Parity(1)
    } else if has("RAID6") {
        Profile::Parity(2)
    } else if has("RAID10") {
        Profile::Raid10
    } else if has("RAID0") {
        Profile::Raid0
    } else if has("RAID1") || has("RAID1C3") || has("RAID1C4") || has("DUP") {
        Profile::Copies
    } else if parts
        .iter()
        .all(|p| matches!(*p, "DATA" | "METADATA" | "SYSTEM" | "single" | "SINGLE"))
    {
        Profile::Single
    } else {
        return Err(format!("a chunk of a profile iolab cannot map: {ty}"));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dump-tree -t chunk` of a 3-disk btrfs (data raid5, metadata raid1), as btrfs-progs 6.2
    /// prints it; the data chunk's mapping was checked byte for byte against the members.
    const TREE: &str = "chunk tree
leaf 22036480 items 6 free space 15471 generation 6 owner CHUNK_TREE
	item 0 key (DEV_ITEMS DEV_ITEM 1) itemoff 16185 itemsize 98
		devid 1 total_bytes 536870912 bytes_used 67108864
		io_align 4096 io_width 4096 sector_size 4096 type 0
	item 3 key (FIRST_CHUNK_TREE CHUNK_ITEM 22020096) itemoff 15877 itemsize 112
		length 8388608 owner 2 stripe_len 65536 type SYSTEM|RAID1
		io_align 65536 io_width 65536 sector_size 4096
		num_stripes 2 sub_stripes 1
			stripe 0 devid 2 offset 1048576
			dev_uuid 56c48857-8b2e-404d-96ed-16b4e7493f3e
			stripe 1 devid 3 offset 1048576
			dev_uuid 02f34276-48c3-43f5-944c-4050512d3f67
	item 4 key (FIRST_CHUNK_TREE CHUNK_ITEM 30408704) itemoff 15765 itemsize 112
		length 80478208 owner 2 stripe_len 65536 type METADATA|RAID1
		io_align 65536 io_width 65536 sector_size 4096
		num_stripes 2 sub_stripes 1
			stripe 0 devid 2 offset 9437184
			dev_uuid 56c48857-8b2e-404d-96ed-16b4e7493f3e
			stripe 1 devid 3 offset 9437184
			dev_uuid 02f34276-48c3-43f5-944c-4050512d3f67
	item 5 key (FIRST_CHUNK_TREE CHUNK_ITEM 110886912) itemoff 15621 itemsize 144
		length 134217728 owner 2 stripe_len 65536 type DATA|RAID5
		io_align 65536 io_width 65536 sector_size 4096
		num_stripes 3 sub_stripes 1
			stripe 0 devid 1 offset 22020096
			dev_uuid 93610fe0-8b84-43ae-b548-52649f8e25bf
			stripe 1 devid 2 offset 89915392
			dev_uuid 56c48857-8b2e-404d-96ed-16b4e7493f3e
			stripe 2 devid 3 offset 89915392
			dev_uuid 02f34276-48c3-43f5-944c-4050512d3f67
";

    #[test]
    fn the_chunk_tree_is_read_with_profiles_and_stripes() {
        let c = parse_chunk_tree(TREE).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].logical, c[0].profile, c[0].data),
            (22_020_096, Profile::Copies, false)
        );
        assert_eq!(c[2].profile, Profile::Parity(1));
        assert!(c[2].data);
        assert_eq!(
            c[2].stripes,
            vec![(1, 22_020_096), (2, 89_915_392), (3, 89_915_392)]
        );
        assert!(parse_chunk_tree("item 1 key (FIRST_CHUNK_TREE CHUNK_ITEM x)").is_err());
        let odd = TREE.replace("DATA|RAID5", "DATA|RAID7");
        assert!(parse_chunk_tree(&odd).unwrap_err().contains("RAID7"));
    }

    /// The raid5 placement measured on real members: a file at the data chunk's start has its
    /// first 64 KiB on devid 1, the next on devid 2, then (row 1, parity rotated) devid 2 and 3.
    #[test]
    fn raid5_rotates_as_the_kernel_measured() {
        let m = BtrfsMap::new(
            parse_chunk_tree(TREE).unwrap(),
            vec![Some(1), Some(2), Some(3)],
        );
        let base = 110_886_912;
        let p = m.map(base, 4 * 65_536);
        let got: Vec<(usize, u64)> = p.iter().map(|p| (p.disk, p.member_offset)).collect();
        assert_eq!(
            got,
            vec![
                (0, 22_020_096),
                (1, 89_915_392),
                (1, 89_915_392 + 65_536),
                (2, 89_915_392 + 65_536),
            ]
        );
        // Row 0's parity is on slot 2, row 1's on slot 0.
        assert_eq!(m.content(2, 89_915_392).0, Held::Content(Content::Parity));
        assert_eq!(
            m.content(0, 22_020_096 + 65_536).0,
            Held::Content(Content::Parity)
        );
        assert_eq!(m.content(1, 9_437_184).0, Held::Metadata);
        assert_eq!(m.content(0, 4096).0, Held::Nothing);
    }

    /// Every profile maps a logical byte to its copies and each copy maps back to it.
    #[test]
    fn every_profile_maps_back_to_where_it_came_from() {
        let chunk = |profile, n: usize, sub| Chunk {
            logical: 1 << 30,
            length: 6 * n as u64 * (1 << 20),
            stripe_len: 65_536,
            profile,
            data: true,
            sub_stripes: sub,
            stripes: (0..n)
                .map(|i| (i as u64 + 1, (1 << 20) + i as u64 * 4096))
                .collect(),
        };
        let cases = [
            (chunk(Profile::Single, 1, 1), 1),
            (chunk(Profile::Copies, 2, 1), 2),
            (chunk(Profile::Copies, 3, 1), 3),
            (chunk(Profile::Raid0, 4, 1), 1),
            (chunk(Profile::Raid10, 4, 2), 2),
            (chunk(Profile::Raid10, 6, 2), 2),
            (chunk(Profile::Parity(1), 4, 1), 1),
            (chunk(Profile::Parity(2), 5, 1), 1),
        ];
        for (c, copies) in cases {
            let n = c.stripes.len();
            let m = BtrfsMap::new(vec![c.clone()], (1..=n as u64).map(Some).collect());
            for l in [0u64, 4096, 65_536, 200_000, 3 << 20, c.length - 4096] {
                let at = c.logical + l;
                let p = m.map(at, 4096);
                assert_eq!(p.len(), copies, "{:?} at {l}", c.profile);
                for piece in p {
                    let (held, rest) = m.content(piece.disk, piece.member_offset);
                    assert_eq!(
                        held,
                        Held::Content(Content::Data(at)),
                        "{:?} at {l}",
                        c.profile
                    );
                    assert!(rest >= 4096, "{:?}", c.profile);
                }
            }
            // Each member's stripe holds exactly the chunk's bytes over the data columns.
            let data_bytes: u64 = (0..n)
                .map(|d| {
                    let (start, size) = (c.stripes[d].1, c.stripe_size());
                    let mut b = 0;
                    let mut x = start;
                    while x < start + size {
                        let (h, r) = m.content(d, x);
                        let r = r.min(start + size - x);
                        if matches!(h, Held::Content(Content::Data(_))) {
                            b += r;
                        }
                        x += r;
                    }
                    b
                })
                .sum();
            assert_eq!(data_bytes, c.length * copies as u64, "{:?}", c.profile);
        }
    }

    /// Each data piece's parity is the column `content` calls parity in the same full stripe,
    /// at the same byte of it: RAID5's P, RAID6's P and Q, rotating by full stripe.
    #[test]
    fn parity_of_a_piece_is_its_full_stripes_p_and_q() {
        let m = BtrfsMap::new(
            parse_chunk_tree(TREE).unwrap(),
            vec![Some(1), Some(2), Some(3)],
        );
        let base = 110_886_912;
        // Row 0: data on slots 0 and 1, P on slot 2; row 1: data on 1 and 2, P on 0.
        let p = m.map(base + 4096, 4096);
        let par = m.parity_of(&p[0]);
        assert_eq!(
            par.iter()
                .map(|x| (x.disk, x.member_offset, x.len))
                .collect::<Vec<_>>(),
            vec![(2, 89_915_392 + 4096, 4096)]
        );
        let p = m.map(base + 3 * 65_536 + 8192, 4096);
        let par = m.parity_of(&p[0]);
        assert_eq!(
            par.iter()
                .map(|x| (x.disk, x.member_offset))
                .collect::<Vec<_>>(),
            vec![(0, 22_020_096 + 65_536 + 8192)]
        );
        let fs = m.full_stripe(base + 3 * 65_536).unwrap();
        assert_eq!(
            fs.data,
            vec![
                Some((1, 89_915_392 + 65_536)),
                Some((2, 89_915_392 + 65_536))
            ]
        );
        // RAID6 over 4: P and Q follow the two data columns round the stripes.
        let c = Chunk {
            logical: 1 << 30,
            length: 64 << 20,
            stripe_len: 65_536,
            profile: Profile::Parity(2),
            data: true,
            sub_stripes: 1,
            stripes: (0..4).map(|i| (i + 1, 1 << 20)).collect(),
        };
        let m6 = BtrfsMap::new(vec![c.clone()], (1..=4).map(Some).collect());
        for row in 0..8u64 {
            let l = c.logical + row * 2 * 65_536 + 512;
            let f = m6.full_stripe(l).unwrap();
            let slots: Vec<usize> = f
                .data
                .iter()
                .chain(&f.parity)
                .map(|x| x.unwrap().0)
                .collect();
            let r = row as usize;
            assert_eq!(slots, vec![r % 4, (r + 1) % 4, (r + 2) % 4, (r + 3) % 4]);
            for (disk, at) in f.parity.iter().flatten() {
                assert_eq!(
                    m6.content(*disk, *at).0,
                    Held::Content(Content::Parity),
                    "row {row}"
                );
            }
        }
        // Profiles without parity have none.
        let m1 = BtrfsMap::new(
            vec![Chunk {
                profile: Profile::Copies,
                ..c
            }],
            (1..=4).map(Some).collect(),
        );
        assert!(m1.parity_of(&m1.map(1 << 30, 4096)[0]).is_empty());
        assert!(m1.full_stripe(1 << 30).is_none());
    }

    #[test]
    fn a_device_no_member_has_gets_no_piece() {
        let m = BtrfsMap::new(
            parse_chunk_tree(TREE).unwrap(),
            vec![Some(1), None, Some(3)],
        );
        let p = m.map(110_886_912, 2 * 65_536);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(m.content(1, 89_915_392).0, Held::Nothing);
    }
}
