//! The layout's own consistency check after a rebuild: `btrfs scrub` (every copy and parity
//! read and checked against the checksums) and md's `check` action (mirrors and parity
//! compared, mismatches counted) — their error counts next to the lab's own file checksums.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::LayoutError;
use super::cmd::Runner;

/// What one scrub or check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrubOutcome {
    /// `btrfs scrub` or `md check`.
    pub tool: String,
    /// Errors the layout could not repair: btrfs `uncorrectable_errors`, md `mismatch_cnt`
    /// (md's check only counts; a mismatch after a clean rebuild is an inconsistency).
    pub errors: u64,
    /// Errors found and repaired from a good copy (btrfs `corrected_errors`).
    pub corrected: u64,
    /// Every counter the tool printed (`csum_errors`, `read_errors`, `mismatch_cnt`...).
    pub counters: BTreeMap<String, u64>,
    /// What a count means when it is not an error: md's mirror mismatches on RAID1/10, which
    /// md(4) says arise in blocks no file holds (see [`md_check`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `btrfs scrub start -B -R MNT`: in the foreground, raw counters on stdout (btrfs-progs prints
/// one `key: value` per line and exits 3 when errors were uncorrectable).
pub fn btrfs_scrub_argv(mnt: &Path) -> Vec<String> {
    vec![
        "btrfs".into(),
        "scrub".into(),
        "start".into(),
        "-B".into(),
        "-R".into(),
        mnt.to_string_lossy().into_owned(),
    ]
}

/// Parses the raw counters of `btrfs scrub start -B -R` / `btrfs scrub status -R`: every
/// indented `name: number` line. Empty when the output holds none.
pub fn parse_btrfs_raw(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let Some((k, v)) = l.trim().split_once(':') else {
            continue;
        };
        let k = k.trim();
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            continue;
        }
        if let Ok(n) = v.trim().parse::<u64>() {
            // Summed over devices when the tool prints one block per device.
            *m.entry(k.to_string()).or_insert(0) += n;
        }
    }
    m
}

/// A scrub outcome from btrfs' raw counters.
pub fn btrfs_outcome(counters: BTreeMap<String, u64>) -> ScrubOutcome {
    let get = |k: &str| counters.get(k).copied().unwrap_or(0);
    ScrubOutcome {
        tool: "btrfs scrub".into(),
        errors: get("uncorrectable_errors"),
        corrected: get("corrected_errors"),
        counters,
        note: None,
    }
}

/// Scrubs the btrfs mounted at `mnt` and returns its counters. A scrub that could not run (no
/// counters printed) is an error with the tool's own message.
pub fn btrfs_scrub(runner: &Runner, mnt: &Path) -> Result<ScrubOutcome, LayoutError> {
    let argv = btrfs_scrub_argv(mnt);
    let m = mnt.to_string_lossy().into_owned();
    let (code, out) = runner.run_status(&argv, Some(&["btrfs", "scrub", "cancel", m.as_str()]))?;
    if runner.is_dry_run() && code == Some(0) {
        return Ok(btrfs_outcome(BTreeMap::new()));
    }
    let counters = parse_btrfs_raw(&out.stdout);
    if counters.is_empty() || !counters.contains_key("uncorrectable_errors") {
        return Err(LayoutError::Command {
            cmd: super::cmd::quote_argv(&argv),
            msg: format!(
                "{}: {}",
                code.map_or_else(|| "killed".to_string(), |c| format!("exit status: {c}")),
                super::cmd::tool_message(&out.stderr, &out.stdout)
            ),
        });
    }
    Ok(btrfs_outcome(counters))
}

/// `/sys/block/mdN/md/<file>` for the array `md` (`/dev/md100`).
pub fn md_sysfs(md: &Path, file: &str) -> PathBuf {
    let name = md
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    Path::new("/sys/block").join(name).join("md").join(file)
}

/// Parses md's `sync_completed` (`done / total` sectors, or `none` when no sync runs).
pub fn parse_completed(text: &str) -> Option<(u64, u64)> {
    let (a, b) = text.trim().split_once('/')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// md's recovery progress right now: sectors done and in all (`None` when no sync runs).
pub fn recovery_progress(md: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(md_sysfs(md, "sync_completed")).ok()?;
    parse_completed(&text).filter(|&(_, total)| total > 0)
}

/// The array's recovery speed limits as md states them (`min 1000 (system), max 200000
/// (system)`, KiB/s): md slows a recovery towards the minimum while other IO runs, so a
/// rebuild time under load means little without them.
pub fn speed_limits(md: &Path) -> Option<String> {
    Some(format!(
        "min {} KiB/s, max {} KiB/s",
        md_attr(md, "sync_speed_min")?,
        md_attr(md, "sync_speed_max")?
    ))
}

/// One of the array's md sysfs attributes, trimmed (`None`: absent or unreadable).
fn md_attr(md: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(md_sysfs(md, file))
        .ok()
        .map(|s| s.trim().to_string())
}

/// An md array's runtime tunables as the kernel holds them (`stripe_cache_size 4096,
/// group_thread_cnt 2, read_ahead_kb 4096, scheduler mq-deadline`): what was asked is only
/// what was written, this is what md took. The stripe cache and thread groups of a RAID4/5/6
/// array always; the read-ahead and the members' scheduler when the layout set them (`o`),
/// the scheduler as the kernel marks it active on each of `members` (`mixed` when they
/// differ). `None` when there is nothing to say.
pub fn md_tunables(md: &Path, o: &crate::stack::MdOptions, members: &[PathBuf]) -> Option<String> {
    let mut parts = Vec::new();
    if let (Some(c), Some(g)) = (
        md_attr(md, "stripe_cache_size"),
        md_attr(md, "group_thread_cnt"),
    ) {
        parts.push(format!("stripe_cache_size {c}, group_thread_cnt {g}"));
    }
    if o.read_ahead.is_some() {
        let kb = std::fs::read_to_string(queue_sysfs(md, "read_ahead_kb")).ok();
        parts.push(format!(
            "read_ahead_kb {}",
            kb.as_deref().map_or("?", str::trim)
        ));
    }
    if o.scheduler.is_some() {
        let mut seen: Vec<String> = members
            .iter()
            .map(|m| {
                std::fs::read_to_string(queue_sysfs(m, "scheduler"))
                    .ok()
                    .and_then(|t| active_scheduler(&t))
                    .unwrap_or_else(|| "?".into())
            })
            .collect();
        seen.dedup();
        let one = if seen.len() == 1 {
            seen[0].clone()
        } else {
            "mixed".into()
        };
        parts.push(format!("scheduler {one}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The scheduler the kernel marks active in a `queue/scheduler` file (`none [mq-deadline]`).
pub fn active_scheduler(text: &str) -> Option<String> {
    let t = text.trim();
    let bracketed = t
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
    // A queue with one scheduler may print it bare (`none`).
    bracketed
        .or_else(|| (!t.is_empty() && !t.contains(' ')).then_some(t))
        .map(str::to_string)
}

/// A block device's `queue/` sysfs file, found through its device number (a partition's
/// queue is its disk's); by name under `/sys/block` when the device cannot be read (a dry
/// run).
pub fn queue_sysfs(dev: &Path, file: &str) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let by_name = || {
        let name = dev
            .canonicalize()
            .unwrap_or_else(|_| dev.to_path_buf())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        PathBuf::from(format!("/sys/block/{name}/queue/{file}"))
    };
    let Ok(m) = std::fs::metadata(dev) else {
        return by_name();
    };
    let rdev = m.rdev();
    let base = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ));
    let own = base.join("queue").join(file);
    if own.exists() {
        return own;
    }
    let parent = base.join("..").join("queue").join(file);
    if parent.exists() { parent } else { by_name() }
}

/// Parses md's `mismatch_cnt` (sectors whose copies or parity disagreed in the last check).
pub fn parse_mismatch_cnt(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// md levels that keep whole copies: their `check` compares mirrors, not parity.
pub fn is_mirrored_level(level: &str) -> bool {
    matches!(level.trim(), "raid1" | "raid10")
}

/// Runs md's `check` action on `md` (`echo check > .../sync_action`), waits until it is done
/// and reads `mismatch_cnt` and the array's `level`.
///
/// On RAID4/5/6 every mismatch is an error: parity that disagrees with its data is wrong in
/// one of them. On RAID1/10 md(4) documents that mismatches arise without any fault: md does
/// not hold pages stable while it writes them, so a page changed under writeback can reach the
/// mirrors with different bytes, and when its blocks are then freed (the lab's workloads delete
/// their files) they stay different and unused — `check` counts them, nothing reads them. There
/// the count is reported as a note, not an error, and the files of the data set (each read back
/// and checksummed) decide; unless `written_under` says the lab wrote garbage onto a member
/// itself (a `corrupt` fault), when a mirror that disagrees is the finding and counts.
pub fn md_check(
    runner: &Runner,
    md: &Path,
    written_under: bool,
) -> Result<ScrubOutcome, LayoutError> {
    let n = md_sync_action(runner, md, "check")?;
    let mirrored = n > 0 && is_mirrored_level(&runner.read_file(&md_sysfs(md, "level"))?);
    let (errors, note) = if mirrored && !written_under {
        (
            0,
            Some(format!(
                "{n} sectors differ between mirrors: not counted as loss (md(4): on RAID1/10 \
                 pages rewritten during writeback leave such blocks, unused; every file is \
                 checked on its own)"
            )),
        )
    } else {
        (n, None)
    };
    Ok(ScrubOutcome {
        tool: "md check".into(),
        errors,
        corrected: 0,
        counters: BTreeMap::from([("mismatch_cnt".to_string(), n)]),
        note,
    })
}

/// Runs md's `action` (`check`, `repair`) through `sync_action`, waits for md to be idle and
/// returns `mismatch_cnt` (0 in a dry run).
fn md_sync_action(runner: &Runner, md: &Path, action: &str) -> Result<u64, LayoutError> {
    runner.write_file(&md_sysfs(md, "sync_action"), action)?;
    super::mdadm::wait_idle(runner, md)?;
    let path = md_sysfs(md, "mismatch_cnt");
    let text = runner.read_file(&path)?;
    if runner.is_dry_run() && text.trim().is_empty() {
        return Ok(0);
    }
    parse_mismatch_cnt(&text).ok_or_else(|| {
        LayoutError::Unexpected(format!(
            "{} holds '{}', not a number",
            path.display(),
            text.trim()
        ))
    })
}

/// md's `repair` (sync_action): rewrites every stripe whose copies disagree so they agree —
/// RAID4/5/6 parity computed anew from the data chunks as read, RAID1/10 the first readable
/// mirror copied over the others. md keeps no checksum and cannot tell which copy was right:
/// a corrupted data chunk stays corrupted (now with matching parity), a corrupted mirror is
/// overwritten only when it is not the one copied. `mismatch_cnt` afterwards counts the sectors
/// rewritten; whether the files are right again is for the files, read once more, to say.
pub fn md_repair(runner: &Runner, md: &Path) -> Result<ScrubOutcome, LayoutError> {
    let n = md_sync_action(runner, md, "repair")?;
    Ok(ScrubOutcome {
        tool: "md repair".into(),
        errors: 0,
        corrected: 0,
        counters: BTreeMap::from([("mismatch_cnt".to_string(), n)]),
        note: Some(format!(
            "md rewrote {n} sectors so its copies agree (parity from the data as read; the first \
             mirror over the others): it cannot tell which copy was right"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_md_sync_completed() {
        assert_eq!(parse_completed("1024 / 520192"), Some((1024, 520_192)));
        assert_eq!(parse_completed("none"), None);
    }

    /// `btrfs scrub start -B -R` of btrfs-progs 6.2 after one block of a `single` layout was
    /// damaged on its disk.
    const RAW: &str = "scrub done for 1d2a7d2e-adaf-4a37-9c85-c1b8702b4ac5\n\
Scrub started:    Sun Nov 22 07:28:35 2026\nStatus:           finished\nDuration:         0:00:00\n\
\tdata_extents_scrubbed: 800\n\ttree_extents_scrubbed: 26\n\tdata_bytes_scrubbed: 52428800\n\
\ttree_bytes_scrubbed: 425984\n\tread_errors: 0\n\tcsum_errors: 1\n\tverify_errors: 0\n\
\tno_csum: 0\n\tcsum_discards: 0\n\tsuper_errors: 0\n\tmalloc_errors: 0\n\
\tuncorrectable_errors: 1\n\tunverified_errors: 0\n\tcorrected_errors: 0\n\
\tlast_physical: 198574080\n";

    #[test]
    fn parses_btrfs_raw_counters() {
        let c = parse_btrfs_raw(RAW);
        assert_eq!(c["csum_errors"], 1);
        assert_eq!(c["data_bytes_scrubbed"], 52428800);
        assert!(!c.contains_key("Duration"), "{c:?}");
        let o = btrfs_outcome(c);
        assert_eq!((o.errors, o.corrected), (1, 0));
        assert_eq!(o.tool, "btrfs scrub");
    }

    #[test]
    fn btrfs_scrub_keeps_counters_of_a_failing_scrub_and_reports_one_that_could_not_run() {
        let r = Runner::recording_with(Box::new(|_| {
            Err("ERROR: cannot access '/mnt/b': No such file or directory".into())
        }));
        let e = btrfs_scrub(&r, Path::new("/mnt/b"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("No such file or directory"), "{e}");
        assert!(
            e.starts_with("`btrfs scrub start -B -R /mnt/b` failed"),
            "{e}"
        );
        let real = Runner::real();
        let script = format!(
            "printf '{}'; exit 3",
            RAW.replace('\n', "\\n").replace('\t', "\\t")
        );
        let (code, out) = real
            .run_status(&["sh", "-c", &script], None::<&[&str]>)
            .unwrap();
        assert_eq!(code, Some(3));
        assert_eq!(btrfs_outcome(parse_btrfs_raw(&out.stdout)).errors, 1);
    }

    #[test]
    fn md_check_commands_and_mismatch_count() {
        let r = Runner::recording_with(Box::new(|a: &[String]| match a[0].as_str() {
            "cat" => Ok("128\n".into()),
            _ => Ok(String::new()),
        }));
        let o = md_check(&r, Path::new("/dev/md100"), false).unwrap();
        assert_eq!(o.errors, 128);
        assert_eq!(o.tool, "md check");
        assert_eq!(
            r.log(),
            vec![
                "echo check > /sys/block/md100/md/sync_action",
                "cat /sys/block/md100/md/mismatch_cnt",
                "cat /sys/block/md100/md/level"
            ]
        );
        assert_eq!(parse_mismatch_cnt("0\n"), Some(0));
        assert_eq!(parse_mismatch_cnt("x"), None);
        let bad = Runner::recording_with(Box::new(|_| Ok("idle\n".into())));
        let e = md_check(&bad, Path::new("/dev/md7"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("mismatch_cnt holds 'idle'"), "{e}");
    }

    /// md's `check` on a mirror with a count, without and with garbage the lab wrote itself;
    /// on parity the count is always an error; nothing to check reads no level.
    #[test]
    fn mirror_mismatches_are_a_note_unless_the_lab_corrupted_a_member() {
        let md = |level: &'static str, cnt: &'static str| {
            Runner::recording_with(Box::new(move |a: &[String]| {
                Ok(match a.get(1).map(String::as_str) {
                    Some(p) if p.ends_with("/mismatch_cnt") => cnt.into(),
                    Some(p) if p.ends_with("/level") => level.into(),
                    _ => String::new(),
                })
            }))
        };
        for level in ["raid1\n", "raid10\n"] {
            let o = md_check(&md(level, "128\n"), Path::new("/dev/md3"), false).unwrap();
            assert_eq!((o.errors, o.counters["mismatch_cnt"]), (0, 128), "{level}");
            let note = o.note.unwrap();
            assert!(
                note.starts_with("128 sectors differ between mirrors"),
                "{note}"
            );
            let o = md_check(&md(level, "128\n"), Path::new("/dev/md3"), true).unwrap();
            assert_eq!((o.errors, o.note), (128, None), "{level}");
        }
        for level in ["raid4\n", "raid5\n", "raid6\n"] {
            let o = md_check(&md(level, "8\n"), Path::new("/dev/md3"), false).unwrap();
            assert_eq!((o.errors, o.note), (8, None), "{level}");
        }
        let r = md("raid10\n", "0\n");
        let o = md_check(&r, Path::new("/dev/md3"), false).unwrap();
        assert_eq!((o.errors, o.note.as_deref()), (0, None));
        assert!(
            !r.log().iter().any(|l| l.ends_with("/level")),
            "{:?}",
            r.log()
        );
        let j = serde_json::to_value(&o).unwrap();
        assert!(j.get("note").is_none(), "{j}");
    }
}
