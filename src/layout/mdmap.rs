//! Where md puts an array's bytes on its members, and what a member's bytes are: the kernel's
//! own layout arithmetic (`raid5_compute_sector`, raid10's near copies, raid0's single zone,
//! raid1's mirrors) over the geometry md shows in sysfs (level, layout, chunk, raid disks, each
//! member's data offset). The lab uses it to strike a fault under a file of its data set
//! (`offset = "data"`) and to say what a struck range held — file data, parity, or no file —
//! and checks the result against the member's own bytes before it trusts it.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// md's geometry of one array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdGeometry {
    /// 0, 1, 4, 5, 6 or 10.
    pub level: u32,
    /// `md/layout`: the parity algorithm (RAID5/6) or the copies (RAID10).
    pub layout: u32,
    /// Chunk, bytes (RAID1: none, 0).
    pub chunk: u64,
    /// Raid devices (slots), spares not counted.
    pub raid_disks: usize,
    /// Each slot's data offset on its device, bytes (`md/rdN/offset`); `None` for an empty slot.
    pub data_offsets: Vec<Option<u64>>,
}

/// Blocks of a stripe on the members, `(slot, member byte)` each, `None` where the slot has no
/// device.
pub type Columns = Vec<Option<(usize, u64)>>;

/// What a byte of a member's data area holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// The array's byte at this offset.
    Data(u64),
    /// Parity (P or Q) of a stripe.
    Parity,
}

/// A run of bytes on one member, bytes from the member device's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The slot (md's RaidDevice).
    pub disk: usize,
    /// First byte on the member device (data offset included).
    pub member_offset: u64,
    /// First byte in the array.
    pub array_offset: u64,
    /// Bytes.
    pub len: u64,
}

/// RAID5/6 parity algorithms the kernel names `ALGORITHM_*`.
const LEFT_ASYMMETRIC: u32 = 0;
const RIGHT_ASYMMETRIC: u32 = 1;
const LEFT_SYMMETRIC: u32 = 2;
const RIGHT_SYMMETRIC: u32 = 3;
const PARITY_0: u32 = 4;
const PARITY_N: u32 = 5;

impl MdGeometry {
    /// Reads the geometry of `md` (`/dev/md127`) from sysfs under `sys` (`/sys`).
    pub fn from_sysfs(sys: &Path, md: &Path) -> Result<MdGeometry, String> {
        let name = md
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = sys.join("block").join(&name).join("md");
        let read = |f: &str| -> Result<String, String> {
            std::fs::read_to_string(dir.join(f))
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("cannot read {}: {e}", dir.join(f).display()))
        };
        let num = |f: &str| -> Result<u64, String> {
            let t = read(f)?;
            t.parse()
                .map_err(|_| format!("{}: '{t}' is not a number", dir.join(f).display()))
        };
        let level_text = read("level")?;
        let level = level_text
            .trim_start_matches("raid")
            .parse()
            .map_err(|_| format!("md level '{level_text}' cannot be mapped"))?;
        let raid_disks = usize::try_from(num("raid_disks")?).unwrap_or(0);
        let data_offsets = (0..raid_disks)
            .map(|i| {
                std::fs::read_to_string(dir.join(format!("rd{i}/offset")))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(|s| s * 512)
            })
            .collect();
        let g = MdGeometry {
            level,
            layout: u32::try_from(num("layout").unwrap_or(0)).unwrap_or(0),
            chunk: num("chunk_size").unwrap_or(0),
            raid_disks,
            data_offsets,
        };
        g.check()?;
        Ok(g)
    }

    /// Whether this geometry is one the arithmetic here covers.
    pub fn check(&self) -> Result<(), String> {
        let n = self.raid_disks;
        let ok = match self.level {
            1 => n >= 1,
            0 => n >= 1 && self.chunk > 0,
            4 => n >= 2 && self.chunk > 0,
            5 => n >= 2 && self.chunk > 0 && self.layout <= PARITY_N,
            6 => n >= 4 && self.chunk > 0 && self.layout <= PARITY_N,
            10 => {
                let (near, far, offset) = self.raid10();
                self.chunk > 0 && near >= 1 && near <= n && far == 1 && !offset
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "md raid{} with layout {} over {n} devices: its layout is not one iolab can map (RAID0/1/4, RAID5/6 left/right symmetric/asymmetric or parity-first/last, RAID10 near copies)",
                self.level, self.layout
            ))
        }
    }

    /// RAID10's (near copies, far copies, offset layout).
    fn raid10(&self) -> (usize, usize, bool) {
        (
            (self.layout & 0xff) as usize,
            ((self.layout >> 8) & 0xff) as usize,
            self.layout & 0x1_0000 != 0,
        )
    }

    /// Slots holding parity (RAID4/5/6).
    fn parity_count(&self) -> usize {
        match self.level {
            4 | 5 => 1,
            6 => 2,
            _ => 0,
        }
    }

    /// RAID4/5/6: the slots of P and Q in `stripe`, and the slot of data chunk `dd`
    /// (0-based among the stripe's data chunks), as `raid5_compute_sector` places them.
    fn parity_layout(&self, stripe: u64, dd: usize) -> (usize, Option<usize>, usize) {
        let n = self.raid_disks;
        let data = n - self.parity_count();
        let r = (stripe % n as u64) as usize;
        if self.level == 4 {
            return (data, None, dd);
        }
        if self.level == 5 {
            return match self.layout {
                LEFT_ASYMMETRIC => {
                    let pd = data - r;
                    (pd, None, if dd >= pd { dd + 1 } else { dd })
                }
                RIGHT_ASYMMETRIC => (r, None, if dd >= r { dd + 1 } else { dd }),
                LEFT_SYMMETRIC => {
                    let pd = data - r;
                    (pd, None, (pd + 1 + dd) % n)
                }
                RIGHT_SYMMETRIC => (r, None, (r + 1 + dd) % n),
                PARITY_0 => (0, None, dd + 1),
                _ => (data, None, dd),
            };
        }
        match self.layout {
            LEFT_ASYMMETRIC | RIGHT_ASYMMETRIC => {
                let pd = if self.layout == LEFT_ASYMMETRIC {
                    n - 1 - r
                } else {
                    r
                };
                if pd == n - 1 {
                    (pd, Some(0), dd + 1)
                } else {
                    (pd, Some(pd + 1), if dd >= pd { dd + 2 } else { dd })
                }
            }
            LEFT_SYMMETRIC => {
                let pd = n - 1 - r;
                (pd, Some((pd + 1) % n), (pd + 2 + dd) % n)
            }
            RIGHT_SYMMETRIC => (r, Some((r + 1) % n), (r + 2 + dd) % n),
            PARITY_0 => (0, Some(1), dd + 2),
            _ => (data, Some(data + 1), dd),
        }
    }

    /// The parity (P, and Q on RAID6) covering data piece `p` (one of [`MdGeometry::map`]'s):
    /// the same bytes of the parity chunks of its stripe. Empty on levels without parity.
    pub fn parity_of(&self, p: &Piece) -> Vec<Piece> {
        if self.parity_count() == 0 || self.chunk == 0 {
            return Vec::new();
        }
        let Ok(d) = self.offset_of(p.disk) else {
            return Vec::new();
        };
        let within = p.member_offset.saturating_sub(d);
        let (p_slot, q_slot, _) = self.parity_layout(within / self.chunk, 0);
        [Some(p_slot), q_slot]
            .into_iter()
            .flatten()
            .filter_map(|slot| {
                Some(Piece {
                    disk: slot,
                    member_offset: self.offset_of(slot).ok()? + within,
                    array_offset: p.array_offset,
                    len: p.len,
                })
            })
            .collect()
    }

    /// RAID4/5/6: the stripe row holding byte `within` of a member's data area (the same on
    /// every member), as `(slot, member byte)` of each data chunk at that place — in the order
    /// md's RAID6 syndrome weighs them: from the slot after Q, wrapping (`raid6_d0` and
    /// `raid6_idx_to_slot`; on the asymmetric layouts not the data's own order) — then P, and
    /// Q on RAID6. `None` on levels without parity; a slot with no device is `None` in its place.
    pub fn stripe_at(&self, within: u64) -> Option<(Columns, Columns)> {
        if self.parity_count() == 0 || self.chunk == 0 {
            return None;
        }
        let n = self.raid_disks;
        let (p, q, _) = self.parity_layout(within / self.chunk, 0);
        let at = |slot: usize| self.offset_of(slot).ok().map(|o| (slot, o + within));
        let first = q.map_or(0, |q| (q + 1) % n);
        let data = (0..n)
            .map(|i| (first + i) % n)
            .filter(|&s| s != p && Some(s) != q)
            .map(at)
            .collect();
        let parity = [Some(p), q].into_iter().flatten().map(at).collect();
        Some((data, parity))
    }

    /// The data offset of slot `disk`, or why not.
    fn offset_of(&self, disk: usize) -> Result<u64, String> {
        self.data_offsets
            .get(disk)
            .copied()
            .flatten()
            .ok_or_else(|| format!("md shows no device in slot {disk}"))
    }

    /// Where the array's bytes `[at, at + len)` are: one piece per chunk and per copy, member
    /// offsets including the slot's data offset. A slot with no device gets no piece.
    pub fn map(&self, at: u64, len: u64) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut a = at;
        let end = at.saturating_add(len);
        while a < end {
            let (step, places) = self.place(a);
            let n = step.min(end - a);
            for (disk, m) in places {
                if let Ok(off) = self.offset_of(disk) {
                    out.push(Piece {
                        disk,
                        member_offset: off + m,
                        array_offset: a,
                        len: n,
                    });
                }
            }
            a += n;
        }
        out
    }

    /// Array byte `a`: how many bytes from it stay in one chunk, and each copy's (slot, byte in
    /// the slot's data area).
    fn place(&self, a: u64) -> (u64, Vec<(usize, u64)>) {
        let n = self.raid_disks;
        if self.level == 1 {
            return (u64::MAX, (0..n).map(|d| (d, a)).collect());
        }
        let c = self.chunk;
        let (chunk, off) = (a / c, a % c);
        let rest = c - off;
        match self.level {
            0 => {
                let (row, d) = (chunk / n as u64, (chunk % n as u64) as usize);
                (rest, vec![(d, row * c + off)])
            }
            10 => {
                let near = self.raid10().0 as u64;
                let places = (0..near)
                    .map(|k| {
                        let v = chunk * near + k;
                        ((v % n as u64) as usize, (v / n as u64) * c + off)
                    })
                    .collect();
                (rest, places)
            }
            _ => {
                let data = (n - self.parity_count()) as u64;
                let (stripe, dd) = (chunk / data, (chunk % data) as usize);
                let (_, _, d) = self.parity_layout(stripe, dd);
                (rest, vec![(d, stripe * c + off)])
            }
        }
    }

    /// What byte `m` of slot `disk`'s data area holds, and how many bytes from it hold the
    /// same kind (to the end of its chunk).
    pub fn content(&self, disk: usize, m: u64) -> (Content, u64) {
        let n = self.raid_disks as u64;
        let d = disk as u64;
        if self.level == 1 {
            return (Content::Data(m), u64::MAX);
        }
        let c = self.chunk;
        let (row, off) = (m / c, m % c);
        let rest = c - off;
        match self.level {
            0 => (Content::Data((row * n + d) * c + off), rest),
            10 => {
                let near = self.raid10().0 as u64;
                (Content::Data((row * n + d) / near * c + off), rest)
            }
            _ => {
                let data = self.raid_disks - self.parity_count();
                let (p, q, _) = self.parity_layout(row, 0);
                if disk == p || Some(disk) == q {
                    return (Content::Parity, rest);
                }
                // The data chunk index whose slot is `disk`.
                let dd = (0..data)
                    .find(|&k| self.parity_layout(row, k).2 == disk)
                    .unwrap_or(0) as u64;
                (Content::Data((row * data as u64 + dd) * c + off), rest)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(level: u32, layout: u32, disks: usize) -> MdGeometry {
        MdGeometry {
            level,
            layout,
            chunk: 64 << 10,
            raid_disks: disks,
            data_offsets: vec![Some(1 << 20); disks],
        }
    }

    #[test]
    fn raid5_left_symmetric_rotates_parity_backwards() {
        // md(4): left-symmetric RAID5 over 4: stripe 0 parity on disk 3, data 0 1 2 on 0 1 2;
        // stripe 1 parity on disk 2, data 3 on disk 3, 4 on 0, 5 on 1.
        let r5 = g(5, 2, 4);
        let c = r5.chunk;
        let disk_of = |chunk: u64| r5.map(chunk * c, 1)[0].disk;
        assert_eq!((0..6).map(disk_of).collect::<Vec<_>>(), [0, 1, 2, 3, 0, 1]);
        assert_eq!(r5.content(3, 0).0, Content::Parity);
        assert_eq!(r5.content(2, c).0, Content::Parity);
        let p = r5.map(4 * c + 100, 10)[0];
        assert_eq!((p.disk, p.member_offset), (0, (1 << 20) + c + 100));
        // RAID6 left-symmetric over 5: stripe 0 P on 4, Q on 0, data from disk 1.
        let r6 = g(6, 2, 5);
        assert_eq!(r6.map(0, 1)[0].disk, 1);
        assert_eq!(r6.content(4, 0).0, Content::Parity);
        assert_eq!(r6.content(0, 0).0, Content::Parity);
        // Stripe 1: P on 3, Q on 4, data from disk 0.
        assert_eq!(r6.map(3 * c, 1)[0].disk, 0);
        // The parity covering a data piece: the same bytes of P and Q's chunks.
        let d = r6.map(3 * c + 100, 10)[0];
        let par: Vec<_> = r6
            .parity_of(&d)
            .iter()
            .map(|p| (p.disk, p.member_offset, p.len))
            .collect();
        assert_eq!(par, [(3, d.member_offset, 10), (4, d.member_offset, 10)]);
        assert!(g(1, 0, 2).parity_of(&d).is_empty());
    }

    #[test]
    fn every_layout_maps_back_to_where_it_came_from() {
        let mut cases = vec![g(0, 0, 3), g(1, 0, 2), g(4, 0, 4), g(10, 0x102, 4)];
        cases.push(g(10, 0x102, 5));
        cases.push(g(10, 0x103, 4));
        for layout in 0..=5 {
            cases.push(g(5, layout, 4));
            cases.push(g(5, layout, 5));
            cases.push(g(6, layout, 5));
            cases.push(g(6, layout, 7));
        }
        for geo in &cases {
            geo.check().unwrap();
            let c = geo.chunk;
            let stripes = 3 * geo.raid_disks as u64;
            let mut seen = std::collections::BTreeSet::new();
            for chunk in 0..stripes * geo.raid_disks as u64 {
                let a = chunk * c + 7;
                for p in geo.map(a, 1) {
                    let m = p.member_offset - (1 << 20);
                    assert_eq!(
                        geo.content(p.disk, m).0,
                        Content::Data(a),
                        "{geo:?} chunk {chunk}"
                    );
                    assert!(seen.insert((p.disk, m)), "{geo:?}: two chunks at one place");
                }
            }
            // Per stripe: parity count chunks of parity, the rest data.
            if matches!(geo.level, 4..=6) {
                for row in 0..stripes {
                    let parity = (0..geo.raid_disks)
                        .filter(|&d| geo.content(d, row * c).0 == Content::Parity)
                        .count();
                    assert_eq!(parity, geo.parity_count(), "{geo:?} row {row}");
                }
            }
        }
        // A piece never crosses a chunk; mirrors get every byte on each member.
        let r5 = g(5, 2, 4);
        let ps = r5.map(r5.chunk - 10, 30);
        assert_eq!(ps.iter().map(|p| p.len).collect::<Vec<_>>(), [10, 20]);
        assert_eq!(g(1, 0, 3).map(5, 100).len(), 3);
        assert_eq!(g(10, 0x102, 4).map(0, 1).len(), 2);
    }

    #[test]
    fn a_stripe_lists_its_data_in_the_order_md_weighs_them_for_q() {
        let c = 64 << 10;
        let at = |v: &Columns| v.iter().map(|x| x.unwrap().0).collect::<Vec<_>>();
        // RAID6 left-symmetric over 5, stripe 0: P on 4, Q on 0, data from disk 1 on.
        let (d, p) = g(6, 2, 5).stripe_at(100).unwrap();
        assert_eq!((at(&d), at(&p)), (vec![1, 2, 3], vec![4, 0]));
        assert_eq!(d[0], Some((1, (1 << 20) + 100)));
        // Left-asymmetric, stripe 2: P on 2, Q on 3, the data chunks on 0, 1, 4 in the
        // array's order, but md's syndrome starts after Q: 4, 0, 1.
        let r6 = g(6, 0, 5);
        let (d, p) = r6.stripe_at(2 * c).unwrap();
        assert_eq!((at(&d), at(&p)), (vec![4, 0, 1], vec![2, 3]));
        assert_eq!(r6.map(6 * c, 1)[0].disk, 0);
        // Every data slot of the stripe is listed once, whatever the layout.
        for layout in 0..=5 {
            for level in [5, 6] {
                let geo = g(level, layout, 5);
                for row in 0..10 {
                    let (d, p) = geo.stripe_at(row * c).unwrap();
                    let mut all: Vec<usize> = at(&d).into_iter().chain(at(&p)).collect();
                    assert_eq!(p.len(), geo.parity_count());
                    for &s in &at(&p) {
                        assert_eq!(geo.content(s, row * c).0, Content::Parity);
                    }
                    all.sort_unstable();
                    assert_eq!(all, (0..5).collect::<Vec<_>>(), "{geo:?} row {row}");
                }
            }
        }
        // RAID5: one parity; a missing slot is None; no parity on RAID1.
        let mut r5 = g(5, 2, 3);
        assert_eq!(r5.stripe_at(0).unwrap().1.len(), 1);
        r5.data_offsets[0] = None;
        assert!(r5.stripe_at(0).unwrap().0.contains(&None));
        assert!(g(1, 0, 2).stripe_at(0).is_none());
    }

    #[test]
    fn layouts_it_cannot_map_are_named() {
        let e = g(10, 0x201, 4).check().unwrap_err();
        assert!(e.contains("raid10 with layout 513"), "{e}");
        assert!(g(6, 16, 5).check().is_err());
        let mut r = g(5, 2, 3);
        r.data_offsets[1] = None;
        assert!(r.map(r.chunk, 1).is_empty());
    }
}
