//! Holes between sequential IOs (fio's `rw=write:112k`, and `rw=read:-8k` stepping back):
//! where the next IO goes and how many IOs one of fio's passes holds, as fio's
//! `get_next_seq_offset` (io_u.c) and `keep_running` (backend.c) have it. The runner's offsets
//! and the fio job reader both follow these, so a converted job moves what fio moves.

/// The offset after an IO of `len` bytes at `pos` in a region of `region` bytes, leaving `skip`
/// bytes (fio's `rw=write:112k`; negative steps back, `rw=read:-8k`). As fio does
/// (`get_next_seq_offset`): past either end it wraps — to the start when skipping forward, to
/// `region + skip` when stepping back — and an IO that would not fit starts a new pass at the
/// start (fio ends the pass there and, looping, starts again at 0).
pub fn hole_next(pos: u64, len: u64, skip: i64, region: u64) -> u64 {
    let (len_i, region_i) = (i128::from(len), i128::from(region));
    let mut next = i128::from(pos) + len_i + i128::from(skip);
    if next < 0 || next >= region_i {
        next = if skip > 0 {
            0
        } else {
            region_i + i128::from(skip)
        };
    }
    if next < 0 || next + len_i > region_i {
        next = 0;
    }
    next as u64
}

/// IOs of `len` bytes in one of fio's passes over a region of `region` bytes with holes of
/// `skip`: `Some(n)` when the pass ends after `n` IOs (an IO would not fit, or one ended at
/// the region's end), `None` when the offsets cycle without ending (fio then moves `size`
/// bytes). Without `io_size` or a time, fio stops at a pass's end: fewer bytes than `size`.
pub fn pass_ios(region: u64, len: u64, skip: i64) -> Option<u64> {
    if len == 0 || region < len {
        return Some(0);
    }
    let stride = i128::from(len) + i128::from(skip);
    if stride <= 0 {
        // Backwards (or in place): the first IO at 0, then from `region + skip` down, wrapping
        // back there; a region smaller than the step leaves nowhere to go after the first.
        let back = i128::from(region) + i128::from(skip);
        return if len == region || (stride < 0 && back < 0) {
            Some(1)
        } else {
            None
        };
    }
    let (region_i, len_i) = (i128::from(region), i128::from(len));
    // The IOs that fit: offsets k * stride with k * stride + len <= region.
    let n = (region_i - len_i) / stride + 1;
    let last_end = (n - 1) * stride + len_i;
    let next = n * stride;
    // fio stops when the last IO ended at the end; past it, a forward skip wraps to 0 and
    // cycles; a backward one wraps to region + skip, where an IO does not fit (stride > 0).
    let cycles = last_end < region_i && next >= region_i && skip > 0;
    if cycles { None } else { Some(n as u64) }
}

/// `skip` as a spec writes it back: human units where exact (`112KiB`, `-8KiB`), else bytes.
pub fn skip_value(skip: i64) -> super::SizeValue {
    let t = crate::units::format_bytes(skip.unsigned_abs());
    if crate::units::parse_bytes(&t) == Ok(skip.unsigned_abs()) {
        super::SizeValue::Text(if skip < 0 { format!("-{t}") } else { t })
    } else {
        super::SizeValue::Bytes(skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;

    fn walk(region: u64, len: u64, skip: i64, n: usize) -> Vec<u64> {
        let mut pos = 0;
        (0..n)
            .map(|_| {
                let o = pos;
                pos = hole_next(pos, len, skip, region);
                o / K
            })
            .collect()
    }

    /// The offsets fio 3.33 issued (`--write_iolog`), in KiB, on a 1 MiB or 64 KiB file.
    #[test]
    fn offsets_follow_fio_s_log() {
        // rw=write:112k bs=16k size=1m: eight writes 128k apart, then again from 0.
        assert_eq!(
            walk(1 << 20, 16 * K, 112 * 1024, 10),
            [0, 128, 256, 384, 512, 640, 768, 896, 0, 128]
        );
        // rw=write:60k bs=64k size=1m: 992k + 64k would not fit: the pass ends (with
        // io_size, fio starts the next at 0).
        assert_eq!(
            walk(1 << 20, 64 * K, 60 * 1024, 9),
            [0, 124, 248, 372, 496, 620, 744, 868, 0]
        );
        // rw=read:-8k bs=4k size=64k: 0, then down from 56k; at 0 again, back to 56k.
        assert_eq!(
            walk(64 * K, 4 * K, -8 * 1024, 17),
            [
                0, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0, 56
            ]
        );
        // rw=read:-12k: 0, 52, 44 ... 4, and back to 52.
        assert_eq!(
            walk(64 * K, 4 * K, -12 * 1024, 9),
            [0, 52, 44, 36, 28, 20, 12, 4, 52]
        );
    }

    /// fio issued 64 writes for the first case (cycling: the size moved) and 8 for the second
    /// (the pass ended); stepping back never ends.
    #[test]
    fn a_pass_ends_where_fio_s_does() {
        assert_eq!(pass_ios(1 << 20, 16 * K, 112 * 1024), None);
        assert_eq!(pass_ios(1 << 20, 64 * K, 60 * 1024), Some(8));
        assert_eq!(pass_ios(64 * K, 4 * K, -8 * 1024), None);
        // No holes: the region's blocks; an overlap (-2k of 4k) ends with the IO at the end.
        assert_eq!(pass_ios(64 * K, 4 * K, 0), Some(16));
        assert_eq!(pass_ios(64 * K, 4 * K, -2 * 1024), Some(31));
        // One IO's end at the region's end stops fio even with holes.
        assert_eq!(pass_ios(912 * K, 16 * K, 112 * 1024), Some(8));
        assert_eq!(pass_ios(8 * K, 4 * K, -16 * 1024), Some(1));
    }
}
