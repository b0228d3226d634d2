//! Per-member IO during a layout's healthy workloads, and the slow member among them: each
//! member's own counters (`/sys/class/block/NAME/stat`) read before and after, judged by
//! [`crate::disks::outliers::slow_by_busy`] — what a member delivers per second of its own
//! busy time, not its milliseconds per IO (which grow with the queue md hands it).

use super::super::report::{MemberIo, MemberMedians};
use crate::disks::outliers::{self, Busy};
use crate::disks::stat::{self, DiskStat};
use crate::layout::Built;
use crate::layout::fault::kernel_name;

/// The counters of every member now (`None` for a member whose counters cannot be read).
pub(super) fn snapshot(built: &Built) -> Vec<Option<DiskStat>> {
    built
        .members
        .iter()
        .map(|m| kernel_name(m).and_then(|k| stat::read(&k)))
        .collect()
}

/// Per-member IO between two snapshots, the slow members flagged, and the medians they were
/// judged against.
pub(super) fn member_io(
    built: &Built,
    before: &[Option<DiskStat>],
    after: &[Option<DiskStat>],
) -> (Vec<MemberIo>, Option<MemberMedians>) {
    let spans: Vec<Span> = built
        .members
        .iter()
        .zip(before)
        .zip(after)
        .filter_map(|((m, b), a)| {
            let (Some(b), Some(a)) = (b, a) else {
                return None;
            };
            Some(Span {
                member: m.display().to_string(),
                device: kernel_name(m).unwrap_or_default(),
                stat: a.since(b),
                fault_wrapped: built.is_wrapped_for_a_fault(m),
                under_dm: built.wrapped_device_of(m).is_some(),
            })
        })
        .collect();
    judge(&spans)
}

/// One member's counters over the span.
struct Span {
    /// The member's path.
    member: String,
    /// Its kernel name.
    device: String,
    /// What its counters moved.
    stat: DiskStat,
    /// Put under a plain dm table only so a fault could be struck on it.
    fault_wrapped: bool,
    /// Under any dm table this lab made (to slow it or for a fault): its counters are bios.
    under_dm: bool,
}

/// The figures of each member's span and the verdict of the slow-disk finder's rule on them,
/// with the medians it judged against.
fn judge(spans: &[Span]) -> (Vec<MemberIo>, Option<MemberMedians>) {
    let busy: Vec<Busy> = spans
        .iter()
        .map(|s| Busy {
            counts_bios: s.under_dm,
            ..Busy::from_stat(&s.member, &s.stat)
        })
        .collect();
    let verdict = outliers::slow_by_busy(&busy, outliers::MEMBER_TOLERANCE);
    let medians = verdict
        .median_ios_per_sec
        .zip(verdict.median_mb_per_sec)
        .map(|(ios, mb)| MemberMedians {
            ios_per_busy_sec: ios,
            mb_per_busy_sec: mb,
        });
    let members = spans
        .iter()
        .zip(&busy)
        .zip(verdict.slow)
        .map(|((s, b), below)| {
            let (d, peer) = (&s.stat, b.is_peer());
            MemberIo {
                member: s.member.clone(),
                device: s.device.clone(),
                ios: d.ios(),
                bytes: d.bytes(),
                ms_per_io: d.ms_per_io(),
                busy_ms: Some(d.busy_ms),
                ios_per_busy_sec: b.ios_per_busy_sec().filter(|_| peer),
                mb_per_busy_sec: b.mb_per_busy_sec().filter(|_| peer),
                in_flight: (d.busy_ms > 0)
                    .then(|| (d.read_ms + d.write_ms) as f64 / d.busy_ms as f64),
                slow: below.is_some(),
                below_pct: below,
                fault_wrapped: s.fault_wrapped,
            }
        })
        .collect();
    (members, medians)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member that read `reads` blocks of `bytes` in all at `ms_per_io` each (queue
    /// included) and was busy `busy_ms`.
    fn span(name: &str, reads: u64, bytes: u64, busy_ms: u64, ms_per_io: f64) -> Span {
        let d = DiskStat {
            reads,
            read_sectors: bytes / 512,
            read_ms: (reads as f64 * ms_per_io).round() as u64,
            busy_ms,
            ..DiskStat::default()
        };
        Span {
            member: format!("/dev/{name}"),
            device: name.to_string(),
            stat: d,
            fault_wrapped: false,
            under_dm: name.starts_with("dm-"),
        }
    }

    /// Each member's figures, and the verdict: measured in the VM (a user's lab: md RAID10
    /// over eleven disks, ten throttled to 150 IOPS and vdk to 50, 8k random reads at QD 128).
    #[test]
    fn member_figures_and_the_verdict() {
        let spans = [
            span("vda", 779, 12_012_032, 4000, 10.3),
            span("vdb", 771, 11_978_240, 2868, 8.5),
            span("vdc", 761, 11_928_064, 1492, 10.5),
            span("vdd", 741, 11_739_648, 1156, 3.9),
            span("vde", 743, 12_263_936, 1296, 5.4),
            span("vdk", 389, 9_363_968, 7488, 1793.2),
            span("vdl", 10, 81_920, 50, 3.0),
        ];
        let (io, _) = judge(&spans);
        let slow: Vec<&str> = io
            .iter()
            .filter(|m| m.slow)
            .map(|m| m.device.as_str())
            .collect();
        assert_eq!(slow, ["vdk"], "{io:#?}");
        let k = &io[5];
        assert_eq!(
            (k.member.as_str(), k.ios, k.bytes),
            ("/dev/vdk", 389, 9_363_968)
        );
        assert_eq!(k.busy_ms, Some(7488));
        assert!((k.ios_per_busy_sec.unwrap() - 51.95).abs() < 0.01, "{k:?}");
        assert!((k.mb_per_busy_sec.unwrap() - 1.2505).abs() < 0.001, "{k:?}");
        assert!((k.ms_per_io - 1793.2).abs() < 0.01);
        assert!((k.in_flight.unwrap() - 93.16).abs() < 0.01, "{k:?}");
        let below = k.below_pct.unwrap();
        assert!((below - 79.45).abs() < 0.01, "{below}");
        // vdl did too little to judge: its figures are kept, its rates are not given.
        assert_eq!(io[6].ios_per_busy_sec, None);
        assert_eq!(
            (io[6].ios, io[6].busy_ms, io[6].slow),
            (10, Some(50), false)
        );
    }

    /// The member slowed under dm-delay counts bios: measured in CI (the VM fault lab, md
    /// RAID5 over five members, 4k random reads at QD 4), it moved its peers' bytes in 10x
    /// their busy time but counted 877 bios to their 116-160 merged requests. Judged on IOs too
    /// it was 43% below, inside the 50% tolerance, and missed; on bytes it is 91% below.
    #[test]
    fn a_member_under_dm_is_judged_on_bytes() {
        let spans = [
            span("vda", 160, 3_790_336, 144, 0.956),
            span("vdb", 116, 4_338_688, 120, 1.284),
            span("vdc", 136, 4_326_400, 128, 1.243),
            span("vdd", 116, 3_830_784, 116, 1.302),
            span("dm-0", 877, 3_568_640, 1392, 33.18),
        ];
        let (io, _) = judge(&spans);
        let slow: Vec<&str> = io
            .iter()
            .filter(|m| m.slow)
            .map(|m| m.device.as_str())
            .collect();
        assert_eq!(slow, ["dm-0"], "{io:#?}");
        let below = io[4].below_pct.unwrap();
        assert!(below > 85.0 && below < 95.0, "{below}");
        // The same figures from a member that is not under dm: short on bytes, not on IOs, so
        // not SLOW (a member md handed smaller IOs).
        let mut plain = spans;
        plain[4].under_dm = false;
        assert!(judge(&plain).0.iter().all(|m| !m.slow));
    }
}
