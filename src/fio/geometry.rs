//! fio options that shape the file and where in it the IOs go, read into iolab terms only
//! where the result is exactly what fio does (checked against fio's source: `get_next_buflen`
//! and `get_next_seq_offset` in io_u.c, `setup_files` in filesetup.c):
//!
//! - `bsrange=MIN-MAX`: fio draws `MIN + MAX * u` (u uniform in [0, 1)), rounds it down to a
//!   multiple of MIN and caps it at MAX, so every size it can give has a share that is a
//!   fraction of MAX; iolab's `bssplit` holds whole percents, so the range converts when every
//!   share is one (`4k-16k` is `4k/25:8k/25:12k/25:16k/25`, `4k-4k` is `bs = 4k`);
//! - `rw=write:112k` (holes): `skip = "112KiB"`, the offsets of `spec::holes::hole_next`;
//! - `filesize`: the file's size, the working set, with `size` then only the bytes to move;
//! - `create_on_open`: when the file is created, which changes nothing a write job does.

use super::jobfile::parse_fio_size;

/// One direction's sizes from a `bsrange`: a single size, or a `bssplit` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeSizes {
    /// MIN equals MAX.
    One(u64),
    /// `SIZE/PCT:...` in fio's bssplit spelling.
    Split(String),
}

/// The sizes fio draws for `bsrange=MIN-MAX` (or `MIN:MAX`; fio swaps a reversed range), or
/// why iolab cannot draw the same.
pub fn bsrange_sizes(range: &str) -> Result<RangeSizes, String> {
    let r = range.trim();
    let (a, b) = r
        .split_once('-')
        .or_else(|| r.split_once(':'))
        .ok_or_else(|| "give MIN-MAX, e.g. 4k-16k".to_string())?;
    let (a, b) = (
        parse_fio_size(a).ok_or("give MIN-MAX sizes, e.g. 4k-16k")?,
        parse_fio_size(b).ok_or("give MIN-MAX sizes, e.g. 4k-16k")?,
    );
    let (min, max) = (a.min(b), a.max(b));
    if min == 0 {
        return Err("a block size must be above 0".into());
    }
    if min == max {
        return Ok(RangeSizes::One(min));
    }
    // fio's size is MIN * (1 + floor(MAX * u / MIN)), capped at MAX: the k-th multiple of MIN
    // takes the u in [(k-1) MIN, k MIN) / MAX; the cap gathers what lies beyond MAX - MIN.
    let mut shares: Vec<(u64, u64)> = Vec::new();
    let mut lo = 0u64;
    while lo < max {
        let hi = lo.saturating_add(min).min(max);
        let size = (lo + min).min(max);
        match shares.last_mut() {
            Some(last) if last.0 == size => last.1 += hi - lo,
            _ => shares.push((size, hi - lo)),
        }
        lo = hi;
    }
    if shares.len() > 64 {
        return Err(format!(
            "fio draws {} sizes from it; iolab's bssplit holds whole percents of a few",
            shares.len()
        ));
    }
    let mut parts = Vec::new();
    for (size, width) in &shares {
        // Share of the IOs: width / MAX, which must be a whole percent.
        if (u128::from(*width) * 100) % u128::from(max) != 0 {
            return Err(format!(
                "fio gives {}k {:.3}% of the IOs; iolab's bssplit holds whole percents",
                size / 1024,
                *width as f64 * 100.0 / max as f64
            ));
        }
        parts.push(format!(
            "{size}/{}",
            u128::from(*width) * 100 / u128::from(max)
        ));
    }
    Ok(RangeSizes::Split(parts.join(":")))
}

/// The bytes of `rw=write:112k`'s suffix (fio's `str_rw_cb`): signed, in fio's units.
pub fn hole(suffix: &str) -> Option<i64> {
    let t = suffix.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let b = i64::try_from(parse_fio_size(t)?).ok()?;
    Some(if neg { -b } else { b })
}

/// The bytes a job moves when neither `io_size` nor a time says: fio's `size`, which
/// `filesize` bounds (fio lowers `size` to the files' total), and with holes one pass when it
/// ends sooner (`keep_running` stops at a pass's end without `io_size`).
pub fn one_pass_bytes(size: Option<u64>, filesize: Option<u64>, bs: u64, skip: i64) -> Option<u64> {
    let region = filesize.or(size)?;
    let bytes = size.map_or(region, |s| s.min(region));
    if skip == 0 || bs == 0 {
        return Some(bytes);
    }
    Some(
        crate::spec::holes::pass_ios(region, bs, skip)
            .map_or(bytes, |n| bytes.min(n.saturating_mul(bs))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's own arithmetic, by hand: `4k-16k` draws 4k + 16k u, rounded down to 4k: u below
    /// 1/4 gives 4k, below 1/2 8k, below 3/4 12k, the rest 16k (16k..20k capped).
    #[test]
    fn bsrange_converts_when_fio_s_shares_are_whole_percents() {
        assert_eq!(bsrange_sizes("4k-4k"), Ok(RangeSizes::One(4096)));
        assert_eq!(
            bsrange_sizes("4k-16k"),
            Ok(RangeSizes::Split(
                "4096/25:8192/25:12288/25:16384/25".into()
            ))
        );
        // Reversed, and with fio's other separator.
        assert_eq!(bsrange_sizes("16k:4k"), bsrange_sizes("4k-16k"));
        // 4k + 10k u: 4k below 0.4, 8k below 0.8, and 12k capped to 10k for the last 0.2.
        assert_eq!(
            bsrange_sizes("4k-10k"),
            Ok(RangeSizes::Split("4096/40:8192/40:10240/20".into()))
        );
        // 512 + 4k u: eight sizes of 12.5% each.
        let e = bsrange_sizes("512-4k").unwrap_err();
        assert!(e.contains("12.500%"), "{e}");
        assert!(bsrange_sizes("4k").is_err());
    }

    #[test]
    fn holes_read_fio_sizes_either_way() {
        assert_eq!(hole("112k"), Some(112 * 1024));
        assert_eq!(hole("-8k"), Some(-8192));
        assert_eq!(hole(""), None);
        assert_eq!(hole("x"), None);
    }

    /// Measured with fio 3.33 (`--write_iolog`): `rw=write:112k bs=16k size=1m` issued 64
    /// writes cycling over 8 offsets (the size moved); `rw=write:60k bs=64k size=1m` issued 8
    /// and stopped (an IO at 992k would not fit); `filesize=1m size=4m` moved 1m.
    #[test]
    fn one_pass_moves_what_fio_moves() {
        const K: u64 = 1024;
        assert_eq!(
            one_pass_bytes(Some(1 << 20), None, 16 * K, 112 * 1024),
            Some(1 << 20)
        );
        assert_eq!(
            one_pass_bytes(Some(1 << 20), None, 64 * K, 60 * 1024),
            Some(512 * K)
        );
        assert_eq!(
            one_pass_bytes(Some(4 << 20), Some(1 << 20), 4 * K, 0),
            Some(1 << 20)
        );
        assert_eq!(
            one_pass_bytes(Some(256 * K), Some(1 << 20), 4 * K, 0),
            Some(256 * K)
        );
        assert_eq!(one_pass_bytes(None, Some(1 << 20), 4 * K, 0), Some(1 << 20));
        assert_eq!(one_pass_bytes(None, None, 4 * K, 0), None);
    }
}
