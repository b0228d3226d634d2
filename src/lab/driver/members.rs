//! Per-member IO during a layout's healthy workloads, and the slow member among them: each
//! member's own counters (`/sys/class/block/NAME/stat`) read before and after, judged by
//! [`crate::disks::outliers::slow_by_busy`] — what a member delivers per second of its own
//! busy time, not its milliseconds per IO (which grow with the queue md hands it).

use super::super::report::MemberIo;
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

/// Per-member IO between two snapshots, the slow members flagged.
pub(super) fn member_io(
    built: &Built,
    before: &[Option<DiskStat>],
    after: &[Option<DiskStat>],
) -> Vec<MemberIo> {
    let spans: Vec<(String, String, DiskStat, bool)> = built
        .members
        .iter()
        .zip(before)
        .zip(after)
        .filter_map(|((m, b), a)| {
            let (Some(b), Some(a)) = (b, a) else {
                return None;
            };
            Some((
                m.display().to_string(),
                kernel_name(m).unwrap_or_default(),
                a.since(b),
                built.is_wrapped_for_a_fault(m),
            ))
        })
        .collect();
    judge(&spans)
}

/// The figures of each member's span (`(path, kernel name, counters, wrapped for a fault)`)
/// and the verdict of the slow-disk finder's rule on them.
fn judge(spans: &[(String, String, DiskStat, bool)]) -> Vec<MemberIo> {
    let busy: Vec<Busy> = spans
        .iter()
        .map(|(member, _, d, _)| Busy::from_stat(member, d))
        .collect();
    let verdict = outliers::slow_by_busy(&busy, outliers::MEMBER_TOLERANCE);
    spans
        .iter()
        .zip(&busy)
        .zip(verdict.slow)
        .map(|(((member, device, d, wrapped), b), below)| {
            let peer = b.is_peer();
            MemberIo {
                member: member.clone(),
                device: device.clone(),
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
                fault_wrapped: *wrapped,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member that read `reads` blocks of `bytes` in all at `ms_per_io` each (queue
    /// included) and was busy `busy_ms`.
    fn span(
        name: &str,
        reads: u64,
        bytes: u64,
        busy_ms: u64,
        ms_per_io: f64,
    ) -> (String, String, DiskStat, bool) {
        let d = DiskStat {
            reads,
            read_sectors: bytes / 512,
            read_ms: (reads as f64 * ms_per_io).round() as u64,
            busy_ms,
            ..DiskStat::default()
        };
        (format!("/dev/{name}"), name.to_string(), d, false)
    }

    /// Each member's figures, and the verdict: measured in the VM (issue 27's lab: md RAID10
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
        let io = judge(&spans);
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
}
