//! Free space before writing: a working set, a small-file set or a lab's loop disks must fit in
//! what the filesystem has free while leaving a reserve for every other program on the host,
//! so a typo like `--size 1EiB` is refused before a byte is written instead of filling `/`.

use std::path::{Path, PathBuf};

use crate::units::format_bytes;

/// The reserve kept free: the larger of 1 GiB and 5% of the filesystem, but never more than
/// half of it (a small scratch filesystem made for the test would otherwise be unusable).
pub fn reserve(total: u64) -> u64 {
    (1u64 << 30).max(total / 20).min(total / 2)
}

/// Total and free (for unprivileged users) bytes of the filesystem holding `path`, or of its
/// nearest existing ancestor; `None` when unknown (ramfs reports no size).
pub fn of(path: &Path) -> Option<(u64, u64)> {
    let mut p = path;
    loop {
        if p.exists() {
            break;
        }
        p = p.parent()?;
    }
    let st = rustix::fs::statvfs(p).ok()?;
    let f = st.f_frsize;
    let total = st.f_blocks.saturating_mul(f);
    if total == 0 {
        return None;
    }
    Some((total, st.f_bavail.saturating_mul(f)))
}

/// Writing `need` more bytes would eat into the reserve.
#[derive(Debug, thiserror::Error)]
#[error(
    "{what} needs {} but {} has {} free, and {} of it stays free for the rest of the system (the larger of 1GiB and 5% of the filesystem, at most half of it); {fix}",
    format_bytes(*need), path.display(), format_bytes(*free), format_bytes(*reserve)
)]
pub struct NoSpace {
    /// What would be written (`working set of 'randread'`).
    pub what: String,
    /// Bytes it needs.
    pub need: u64,
    /// Where.
    pub path: PathBuf,
    /// Free bytes there.
    pub free: u64,
    /// Bytes kept free.
    pub reserve: u64,
    /// How to fix it.
    pub fix: String,
}

/// Refuses when `need` plus the reserve (`with_reserve`) exceeds the free space under `path`.
/// Unknown free space (ramfs) passes.
pub fn check(
    path: &Path,
    need: u64,
    with_reserve: bool,
    what: &str,
    fix: &str,
) -> Result<(), NoSpace> {
    let Some((total, free)) = of(path) else {
        return Ok(());
    };
    let reserve = if with_reserve { reserve(total) } else { 0 };
    if need.saturating_add(reserve) > free {
        return Err(NoSpace {
            what: what.to_string(),
            need,
            path: path.to_path_buf(),
            free,
            reserve,
            fix: fix.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_1gib_or_5_percent_and_at_most_half() {
        assert_eq!(reserve(10 << 30), 1 << 30);
        assert_eq!(reserve(100 << 30), 5 << 30);
        assert_eq!(reserve(512 << 20), 256 << 20);
    }

    #[test]
    fn an_exbibyte_does_not_fit_and_the_message_names_both_figures() {
        let e = check(
            Path::new("/"),
            1 << 60,
            true,
            "working set of 'w'",
            "lower --size",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("needs 1EiB") || e.contains("needs 1024PiB"),
            "{e}"
        );
        assert!(e.contains("free") && e.contains("lower --size"), "{e}");
    }
}
