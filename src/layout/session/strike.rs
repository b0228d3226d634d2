//! Faults struck inside a rebuild. md: the recovery is held at each fault's chosen point with
//! `md/sync_max` (set before the new member is added — md refuses to lower it while recovery
//! runs — then raised fault by fault, and set back to `max`), and how far it had got is read
//! from `md/sync_completed`. A range fault without a chosen percent is held just before its
//! range, so the recovery really reads the range it struck. zfs: the resilver is held at its start with
//! `zfs_scan_suspend_progress` while the faults strike, then released.

use std::path::Path;
use std::time::{Duration, Instant};

use super::super::LayoutError;
use super::super::fault::Fault;
use super::super::{scrub, zfs};
use super::{Built, Session};

/// Faults that strike at the same point of an md recovery.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hold {
    /// Where md's recovery is held (`md/sync_max`, 512-byte sectors of a member); `None`: as
    /// soon as the recovery has started.
    pub target: Option<u64>,
    /// The percent asked for.
    pub pct: Option<u8>,
    /// The faults.
    pub faults: Vec<Fault>,
}

/// The sector where a recovery of `dev_sectors` per member is held for `pct` percent: a whole
/// number of chunks (`chunk_sectors`, md refuses anything else; 8 without chunks), and short of
/// the end (a recovery held at its last sector would simply complete).
pub(super) fn hold_sector(dev_sectors: u64, chunk_sectors: u64, pct: u8) -> u64 {
    let gran = chunk_sectors.max(8);
    let want = dev_sectors.saturating_mul(u64::from(pct.min(100))) / 100;
    let last = (dev_sectors / gran).saturating_sub(1) * gran;
    (want / gran * gran).min(last)
}

/// Groups `faults` by their point, earliest first (no point first). A fault's point is its
/// `progress`; a range fault without one is held just before its range (`range_at`: the
/// sector of md's data area where the range starts), so the recovery reads the range after
/// the fault struck — struck "as recovery starts", a range near the start of the member was
/// already rebuilt by the time the table was swapped (measured: a URE under file data at
/// 3.5 MiB was never read by the rebuild).
pub(super) fn plan(
    faults: &[Fault],
    dev_sectors: u64,
    chunk_sectors: u64,
    range_at: &dyn Fn(&Fault) -> Option<u64>,
) -> Vec<Hold> {
    let gran = chunk_sectors.max(8);
    let mut with: Vec<(Option<u64>, Fault)> = faults
        .iter()
        .map(|f| {
            let target = match f.progress {
                Some(p) => Some(hold_sector(dev_sectors, chunk_sectors, p)),
                None => range_at(f).map(|s| {
                    let last = (dev_sectors / gran).saturating_sub(1) * gran;
                    (s / gran * gran).min(last)
                }),
            };
            (target, f.clone())
        })
        .collect();
    with.sort_by_key(|(t, _)| t.map_or(0, |t| t.saturating_add(1)));
    let mut out: Vec<Hold> = Vec::new();
    for (target, f) in with {
        match out.last_mut() {
            Some(h) if h.target == target => h.faults.push(f),
            _ => out.push(Hold {
                target,
                pct: f.progress,
                faults: vec![f],
            }),
        }
    }
    out
}

fn md_read(md: &Path, file: &str) -> String {
    std::fs::read_to_string(scrub::md_sysfs(md, file))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// How far md's recovery is, in percent (`None` when md says no sync runs).
fn md_pct(md: &Path) -> Option<f64> {
    scrub::recovery_progress(md).map(|(done, total)| done as f64 * 100.0 / total as f64)
}

/// Waits (up to 5 minutes) until md's recovery has reached sector `target` — or ended.
fn wait_reached(md: &Path, target: u64) -> Result<(), LayoutError> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(300) {
        super::check_stop()?;
        if let Some((done, _)) = scrub::parse_completed(&md_read(md, "sync_completed")) {
            if done >= target {
                return Ok(());
            }
        } else if t.elapsed() > Duration::from_secs(2) && md_read(md, "sync_action") == "idle" {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

impl Session {
    /// The holds of the faults armed for this md rebuild, the first one set in `md/sync_max`
    /// already (call before `mdadm --add`). Empty when no fault is armed.
    pub(super) fn md_hold_first(&mut self, md: &Path) -> Result<Vec<Hold>, LayoutError> {
        let faults = std::mem::take(&mut self.rebuild_faults);
        if faults.is_empty() {
            return Ok(Vec::new());
        }
        let dev_sectors = super::super::mdadm::component_bytes(md).unwrap_or(0) / 512;
        let chunk = md_read(md, "chunk_size").parse::<u64>().unwrap_or(0) / 512;
        // Where a range starts in md's data area: its member offset less the member's data
        // offset (slot N is member N).
        let range_at = |f: &Fault| {
            let (offset, _) = f.kind.range()?;
            let data = md_read(md, &format!("rd{}/offset", f.member))
                .parse::<u64>()
                .ok()?;
            Some((offset / 512).saturating_sub(data))
        };
        let holds = plan(&faults, dev_sectors, chunk, &range_at);
        if self.runner.is_dry_run() {
            // No array to size the hold by: say where it would be.
            for p in holds.iter().filter_map(|h| h.pct) {
                self.runner.record(&[
                    "iolab-hold-recovery".to_string(),
                    md.to_string_lossy().into_owned(),
                    format!("sync_max={p}%"),
                ]);
            }
            return Ok(holds);
        }
        if let Some(t) = holds.first().and_then(|h| h.target) {
            self.runner
                .write_file(&scrub::md_sysfs(md, "sync_max"), &t.to_string())?;
        }
        Ok(holds)
    }

    /// Lets md's recovery run to each hold in turn, strikes its faults there, and lets the
    /// recovery run to its end (`sync_max` back to `max`, whatever happened).
    pub(super) fn md_strike(&mut self, b: &Built, md: &Path, holds: Vec<Hold>) {
        let dry = self.runner.is_dry_run();
        let max = scrub::md_sysfs(md, "sync_max");
        for h in holds {
            if !dry {
                match h.target {
                    Some(t) => {
                        if self.runner.write_file(&max, &t.to_string()).is_err()
                            || wait_reached(md, t).is_err()
                        {
                            break;
                        }
                    }
                    None => wait_recovery_started(&self.runner, md),
                }
            }
            let pct = if dry { None } else { md_pct(md) };
            for f in &h.faults {
                self.inject_logged(b, f, pct);
            }
        }
        let _ = self.runner.write_file(&max, "max");
    }

    /// `zpool replace` with every scan held, the armed faults struck while the resilver stands
    /// at its start, then released; waits for the resilver.
    pub(super) fn zfs_resilver_struck(
        &mut self,
        b: &Built,
        pool: &str,
        old: &Path,
        new: &str,
        sequential: bool,
        faults: &[Fault],
    ) -> Result<zfs::Resilver, LayoutError> {
        zfs::hold_scans(&self.runner, true)?;
        let t = Instant::now();
        if let Err(e) = self
            .runner
            .run(&zfs::replace_argv(pool, old, new, sequential))
        {
            let _ = zfs::hold_scans(&self.runner, false);
            return Err(e);
        }
        let pct = if self.runner.is_dry_run() {
            None
        } else {
            self.runner
                .run(&zfs::status_argv(pool))
                .ok()
                .and_then(|o| zfs::parse_status(&o.stdout).scan)
                .filter(|s| s.kind == zfs::status::ScanKind::Resilver)
                .map(|s| s.done_pct.unwrap_or(0.0))
        };
        for f in faults {
            self.inject_logged(b, f, pct);
        }
        zfs::hold_scans(&self.runner, false)?;
        zfs::resilver_done(&self.runner, pool, t)
    }
}

/// Waits (up to 10 s) until md is recovering onto the new member, so a fault lands inside
/// the rebuild rather than before it.
pub(super) fn wait_recovery_started(runner: &super::super::cmd::Runner, md: &Path) {
    if runner.is_dry_run() {
        return;
    }
    let action = scrub::md_sysfs(md, "sync_action");
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let a = std::fs::read_to_string(&action).unwrap_or_default();
        if matches!(a.trim(), "recover" | "resync") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::fault::{FaultKind, FaultStep};

    fn f(member: usize, progress: Option<u8>) -> Fault {
        Fault {
            member,
            at: FaultStep::Rebuild,
            kind: FaultKind::Fail,
            progress,
            under: None,
            placed: false,
            copies: crate::stack::fault::Copies::One,
        }
    }

    #[test]
    fn holds_are_whole_chunks_short_of_the_end() {
        // 256 MiB members less md's data offset, 512 KiB chunks.
        let dev = 520_192;
        assert_eq!(hold_sector(dev, 1024, 50), 260_096);
        assert_eq!(hold_sector(dev, 1024, 50) % 1024, 0);
        assert_eq!(hold_sector(dev, 1024, 0), 0);
        assert_eq!(hold_sector(dev, 1024, 100), 519_168);
        assert!(hold_sector(dev, 1024, 100) < dev);
        // RAID1 has no chunks: 4 KiB steps.
        assert_eq!(hold_sector(1000, 0, 50), 496);
    }

    #[test]
    fn faults_are_grouped_by_point_earliest_first() {
        let p = plan(
            &[f(0, Some(60)), f(1, None), f(2, Some(60)), f(0, Some(10))],
            10_240,
            8,
            &|_| None,
        );
        let targets: Vec<Option<u64>> = p.iter().map(|h| h.target).collect();
        assert_eq!(targets, [None, Some(1024), Some(6144)]);
        assert_eq!(p[2].faults.len(), 2);
        // A range fault without a progress is held just before its range (whole
        // chunks), in order with the others; a whole-disk failure still strikes at the start.
        let mut ure = f(1, None);
        ure.kind = FaultKind::Unreadable {
            offset: 3 << 20,
            length: 1 << 20,
        };
        let at = |x: &Fault| x.kind.range().map(|(o, _)| o / 512 - 2048);
        let p = plan(&[f(0, Some(60)), ure, f(2, None)], 10_240, 1024, &at);
        let targets: Vec<Option<u64>> = p.iter().map(|h| h.target).collect();
        assert_eq!(targets, [None, Some(4096), Some(6144)]);
        assert_eq!(p[1].faults[0].member, 1);
    }
}
