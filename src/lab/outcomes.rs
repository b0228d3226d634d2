//! Each injected fault's outcome for the store ([`FaultOutcome`]): the read-back that followed
//! it classed file by file, and what the layer counted, gathered from the lab's fault reports
//! so `decide`, `compare` and the HTML report read one record rather than the lab's report.

use super::integrity::{IntegrityReport, Step, StepCheck};
use super::report::{FaultReport, LayoutReport};
use crate::sample::fault_outcome::FaultOutcome;
use crate::stack::fault::Copies;
use crate::stack::fault::FaultStep;

/// The read-back that followed a fault at `at`: right after it (before degrading: the first
/// such read-back; while degraded: the next, after the one before degrading when
/// `struck_before` says there was one; after the rebuild: the last), or the rebuild's for a
/// fault during it.
fn read_back(i: &IntegrityReport, at: FaultStep, struck_before: bool) -> Option<&StepCheck> {
    let mut faulted = i.steps.iter().filter(|s| s.step == Step::Faulted);
    match at {
        FaultStep::Rebuild => i.step(Step::Rebuilt),
        FaultStep::BeforeDegrade => faulted.next(),
        FaultStep::Degraded => faulted.nth(usize::from(struck_before)),
        FaultStep::AfterRebuild => faulted.next_back(),
    }
}

/// Whether the layer counted an error after the fault: btrfs's device stats, ZFS's READ or
/// CKSUM columns, md's per-member corrected read errors.
fn layer_counted(r: &FaultReport) -> bool {
    let btrfs = r.btrfs.as_ref().is_some_and(|d| {
        d.iter()
            .any(|s| s.corruption_errs + s.read_io_errs + s.generation_errs > 0)
    });
    let zfs = r.zpool.as_ref().is_some_and(|z| {
        let (read, _, cksum) = z.error_totals();
        read + cksum > 0
    });
    let md =
        r.md.as_ref()
            .is_some_and(|m| m.members.iter().any(|x| x.errors > 0));
    btrfs || zfs || md
}

/// One fault's outcome.
fn outcome(r: &FaultReport, i: Option<&IntegrityReport>, struck_before: bool) -> FaultOutcome {
    let range = r.fault.kind.range();
    let scrub = |tool: &str| {
        i.and_then(|i| i.scrubs.iter().rev().find(|s| s.outcome.tool == tool))
            .map(|s| &s.outcome)
    };
    let btrfs_scrub = scrub("btrfs scrub");
    let mut o = FaultOutcome {
        kind: r.fault.kind.name().to_string(),
        member: r.fault.member,
        offset: range.map(|x| x.0),
        length: range.map(|x| x.1),
        copies: (r.fault.copies == Copies::All).then(|| "all".to_string()),
        description: r.description.clone(),
        error: r.error.clone(),
        md_mismatch_cnt: scrub("md check").and_then(|s| s.counters.get("mismatch_cnt").copied()),
        md_after_repair: r.held.as_ref().and_then(|h| h.lost_after_repair),
        btrfs_csum_errors: r
            .btrfs
            .as_ref()
            .map(|d| d.iter().map(|s| s.corruption_errs).sum()),
        btrfs_corrected: btrfs_scrub.map(|s| s.corrected),
        btrfs_uncorrectable: btrfs_scrub.map(|s| s.errors),
        zfs_cksum: r.zpool.as_ref().map(|z| z.error_totals().2),
        ..FaultOutcome::default()
    };
    if r.error.is_some() {
        return o;
    }
    let Some(s) = i.and_then(|i| read_back(i, r.fault.at, struck_before)) else {
        return o;
    };
    o.files = s.files_in_set;
    o.intact = s.files;
    o.read_error = s.read_errors + s.missing;
    o.silently_wrong = s.mismatched;
    // The struck range's files that came back right while the layer counted errors: mended.
    let held_intact = r
        .held
        .as_ref()
        .and_then(|h| h.lost.map(|l| h.files.saturating_sub(l)))
        .unwrap_or(0);
    if held_intact > 0 && layer_counted(r) {
        o.repaired = held_intact.min(o.intact);
        o.intact -= o.repaired;
    }
    o
}

/// Every fault of a layout, in the order they struck.
pub fn of_layout(l: &LayoutReport) -> Vec<FaultOutcome> {
    let struck_before = l
        .faults
        .iter()
        .any(|r| r.fault.at == FaultStep::BeforeDegrade);
    l.faults
        .iter()
        .map(|r| outcome(r, l.integrity.as_ref(), struck_before))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::fault::{Fault, FaultKind};
    use crate::sample::integrity::{ScrubCheck, Verification};

    fn report(kind: FaultKind, btrfs_csum: u64, held_lost: u64) -> FaultReport {
        let fault = Fault {
            member: 1,
            at: FaultStep::BeforeDegrade,
            kind,
            progress: None,
            under: None,
            placed: false,
            copies: crate::stack::fault::Copies::One,
        };
        FaultReport {
            description: fault.describe(),
            fault,
            device: "/dev/loop9".into(),
            error: None,
            rebuild: None,
            files_bad: None,
            md: None,
            struck_at_pct: None,
            zpool: None,
            btrfs: Some(vec![crate::layout::btrfs::DevStats {
                device: "/dev/loop9".into(),
                corruption_errs: btrfs_csum,
                ..Default::default()
            }]),
            held: Some(super::super::held::Held {
                files: 3,
                lost: Some(held_lost),
                ..Default::default()
            }),
        }
    }

    /// The read-back right after the fault classes the files: wrong bytes without an error
    /// are silently wrong, EIO a read error; the struck files that read back right while
    /// btrfs counted checksum errors were repaired, and the scrub's counts come along.
    #[test]
    fn the_read_back_after_the_fault_classes_its_files() {
        let mut l = LayoutReport::new("b", "btrfs raid1 x2".into(), None);
        let mut i = IntegrityReport::new(40, 40 << 20);
        i.add(
            Step::Healthy,
            Verification {
                files: 40,
                ..Verification::default()
            },
        );
        i.add(
            Step::Faulted,
            Verification {
                files: 37,
                mismatched: 1,
                read_errors: 2,
                ..Verification::default()
            },
        );
        i.scrubs.push(ScrubCheck {
            after: Step::Healthy,
            outcome: crate::layout::scrub::ScrubOutcome {
                tool: "btrfs scrub".into(),
                errors: 2,
                corrected: 16,
                counters: std::collections::BTreeMap::new(),
                note: None,
            },
        });
        l.integrity = Some(i);
        let corrupt = FaultKind::Corrupt {
            offset: 16 << 20,
            length: 1 << 20,
        };
        l.faults = vec![report(corrupt, 16, 0), report(corrupt, 0, 3)];
        let o = of_layout(&l);
        assert_eq!(
            (
                o[0].files,
                o[0].intact,
                o[0].repaired,
                o[0].read_error,
                o[0].silently_wrong
            ),
            (40, 34, 3, 2, 1),
            "{o:#?}"
        );
        assert_eq!(o[0].kind, "corrupt");
        assert_eq!(o[0].offset, Some(16 << 20));
        assert_eq!(o[0].btrfs_csum_errors, Some(16));
        assert_eq!(
            (o[0].btrfs_corrected, o[0].btrfs_uncorrectable),
            (Some(16), Some(2))
        );
        assert_eq!(o[0].md_mismatch_cnt, None);
        // No counter moved and every struck file was lost: nothing was repaired.
        assert_eq!((o[1].intact, o[1].repaired), (37, 0), "{o:#?}");
    }
}
