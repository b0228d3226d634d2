//! What a lab reports: per layout, what was built, how long it took, how much space it gives,
//! and what degrading and rebuilding did, as one serde struct. `report::text::lab` renders it
//! as a table or Markdown.

use serde::{Deserialize, Serialize};

use super::integrity::IntegrityReport;
use crate::stack::Rebuild;

/// How one layout went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutStatus {
    /// Built, ran, torn down.
    Ok,
    /// This machine cannot build it (`reason` says why); the lab went on.
    Unavailable,
    /// Something failed (`reason`); whatever was built was torn down.
    Failed,
    /// Not started: the lab was interrupted before it.
    Skipped,
}

/// One injected fault and what the layout did about it, as observed (md's sysfs, the rebuild's
/// end, the read-back that followed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultReport {
    /// The fault as planned.
    pub fault: crate::layout::fault::Fault,
    /// One line: `unreadable 1MiB at 16MiB on member 0 during the rebuild`.
    pub description: String,
    /// The member's device when the fault struck.
    pub device: String,
    /// Why it could not be injected (`None`: it was).
    pub error: Option<String>,
    /// For a fault during the rebuild: `completed` or `aborted` (md still degraded after its
    /// recovery stopped), as md's sysfs says once recovery stopped.
    pub rebuild: Option<String>,
    /// Files that did not read back intact in the read-back right after the fault's step.
    pub files_bad: Option<u64>,
    /// md's view right after the fault's step (array state, faulty members, bad-block log).
    pub md: Option<crate::layout::fault::MdObservation>,
    /// For a fault during the rebuild: how far the rebuild was when it struck, in percent (md's
    /// `sync_completed`, or the resilver's scan line while it was held).
    #[serde(default)]
    pub struck_at_pct: Option<f64>,
    /// ZFS's view right after the fault's step (`zpool status -p -P -v`): pool state, every
    /// device's read/write/checksum errors, the files with permanent errors.
    #[serde(default)]
    pub zpool: Option<crate::layout::zfs::PoolStatus>,
    /// btrfs's error counters right after the fault's step (`btrfs device stats`): the
    /// checksum errors it caught, per device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btrfs: Option<Vec<crate::layout::btrfs::DevStats>>,
    /// What the struck range held (files of the data set, parity, nothing), for range faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<super::held::Held>,
}

impl FaultReport {
    /// A fault's report as it is struck: what and where, and the error striking it gave;
    /// what the layers then saw is filled in by the observation after it.
    pub fn struck(
        fault: crate::layout::fault::Fault,
        device: String,
        error: Option<String>,
        held: Option<super::held::Held>,
    ) -> FaultReport {
        FaultReport {
            description: fault.describe(),
            fault,
            device,
            error,
            rebuild: None,
            files_bad: None,
            md: None,
            struck_at_pct: None,
            zpool: None,
            btrfs: None,
            held,
        }
    }

    /// Writes [`FaultReport::held_line`] into the held record once md's view and the
    /// read-back are in.
    pub fn settle_held(&mut self) {
        if let Some(h) = &self.held {
            let says = h.line(&self.fault, self.md.as_ref());
            if let Some(h) = self.held.as_mut() {
                h.says = says;
            }
        }
    }

    /// The fault line's clause on what the struck range held (`None` for a whole-disk fault).
    pub fn held_line(&self) -> Option<String> {
        self.held.as_ref().map(|h| {
            if h.says.is_empty() {
                h.line(&self.fault, self.md.as_ref())
            } else {
                h.says.clone()
            }
        })
    }
}

/// IO one member did during the healthy workloads (from `/sys/class/block/NAME/stat`), to
/// find the slow one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberIo {
    /// The member's path.
    pub member: String,
    /// The kernel's name for it (`vdc`, `dm-2`).
    pub device: String,
    /// Reads and writes completed.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Mean milliseconds per IO, its queue included (iostat's await): shown, not judged — it
    /// grows with the queue md hands the member.
    pub ms_per_io: f64,
    /// Milliseconds the member had at least one request in flight (`io_ticks`).
    #[serde(default)]
    pub busy_ms: Option<u64>,
    /// Requests (reads, writes, discards, flushes) completed per second of busy time: what
    /// the slow-member rule judges, with [`MemberIo::mb_per_busy_sec`]. `None` when the member
    /// did too little to be a peer of the others (under 20 ms busy or 20 requests).
    #[serde(default)]
    pub ios_per_busy_sec: Option<f64>,
    /// MB (10^6 bytes) moved per second of busy time (`None` as for `ios_per_busy_sec`).
    #[serde(default)]
    pub mb_per_busy_sec: Option<f64>,
    /// Mean requests in flight while busy (its milliseconds per IO over its busy time, by
    /// Little's law): how deep a queue md kept on it.
    #[serde(default)]
    pub in_flight: Option<f64>,
    /// SLOW: both figures per busy second more than half below the members' median
    /// ([`crate::disks::outliers::slow_by_busy`]).
    pub slow: bool,
    /// How far below the members' median it is, percent (the smaller shortfall of its IOs and
    /// its MB per busy second), when SLOW.
    #[serde(default)]
    pub below_pct: Option<f64>,
    /// Under a dm `linear` table the lab added only to strike a fault: part of its time per IO
    /// is that layer's, not the disk's (under TCG a visible part).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fault_wrapped: bool,
}

/// The medians a member is judged against by the slow-member rule
/// ([`crate::disks::outliers::slow_by_busy`]): those of the peers, the members busy enough to
/// count. A SLOW member's note prints these, so it says what was judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberMedians {
    /// The peers' median requests per second of busy time.
    pub ios_per_busy_sec: f64,
    /// The peers' median MB per second of busy time.
    pub mb_per_busy_sec: f64,
}

/// The degraded part of a layout's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradedReport {
    /// The member that was failed.
    pub failed_member: String,
    /// Seconds to fail it and be mounted again.
    pub degrade_seconds: f64,
    /// Wall time of the workloads while degraded, seconds.
    pub workload_seconds: Option<f64>,
    /// The whole data set read back intact while degraded.
    pub data_verified: bool,
    /// Degraded over healthy performance: the geometric mean over workloads of the ratio of
    /// their headline medians (1.0 = no loss), when both were measured.
    #[serde(default)]
    pub perf_ratio: Option<f64>,
    /// The workloads failed while degraded (btrfs raid5 and degraded raid1 can return EIO or
    /// ENOSPC): what failed.
    #[serde(default)]
    pub workload_error: Option<String>,
    /// `cache.fail`: the cache device failed before the member, and what came of it (issue
    /// 28). Left out when there was none, so older records read and write unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_failure: Option<crate::stack::cache::CacheFailure>,
}

/// The workloads run while the failed member's replacement rebuilds (`during_rebuild = true`):
/// what the layout gives its users during the window in which one more failure loses data,
/// and what that load does to the rebuild.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebuildLoadReport {
    /// Wall time of the workloads, seconds (they start as the rebuild starts).
    pub workload_seconds: Option<f64>,
    /// The rebuild's time (the layout's `rebuild.seconds`: md's recovery, btrfs's replace,
    /// ZFS's resilver), with the workloads running for the first `workload_seconds` of it.
    pub rebuild_seconds: Option<f64>,
    /// Share of the workloads' time during which the rebuild was still running (1.0: all of
    /// it). Below 1.0 the rebuild ended first and the later part of the figures is healthy.
    pub rebuild_share: Option<f64>,
    /// md only: how far the recovery had come when the workloads ended (0-1), and so how fast
    /// it went under their load, in bytes per second.
    #[serde(default)]
    pub md_progress_at_end: Option<f64>,
    /// md only: the recovery's speed under the workloads' load, bytes per second.
    #[serde(default)]
    pub md_speed_under_load: Option<f64>,
    /// md only: the array's `sync_speed_min` and `sync_speed_max` (KiB/s) in effect, with
    /// where each came from (`system` for /proc/sys/dev/raid/speed_limit_*): md slows its
    /// recovery towards the minimum while other IO runs.
    #[serde(default)]
    pub md_speed_limits: Option<String>,
    /// Over healthy performance: the geometric mean over workloads of the ratio of their
    /// headline medians (1.0 = no loss), when both were measured.
    #[serde(default)]
    pub perf_ratio: Option<f64>,
    /// The workloads failed during the rebuild: what failed (a finding, not a lab failure).
    #[serde(default)]
    pub workload_error: Option<String>,
}

/// The second failure of a `failures = 2` layout: two members failed at once, then replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondFailureReport {
    /// The members failed together.
    pub failed_members: Vec<String>,
    /// Seconds to fail them and be mounted again.
    pub degrade_seconds: f64,
    /// The devices that replaced them (empty without `rebuild`, or when it failed).
    pub new_members: Vec<String>,
    /// Seconds to replace both.
    pub rebuild_seconds: Option<f64>,
    /// Bytes written to the new members.
    pub rebuild_bytes: Option<u64>,
    /// Block groups without redundancy after the replaces, converted back (see
    /// [`Rebuild::converted`]).
    #[serde(default)]
    pub converted: Vec<String>,
    /// Replaces that needed a second try (see [`Rebuild::retried`]).
    #[serde(default)]
    pub retried: Vec<String>,
}

/// A layout's capacity at the lab's latency target for one workload: the highest sustained
/// rate meeting it, healthy and with a member failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabSlo {
    /// The workload searched.
    pub workload: String,
    /// Its answer on the healthy layout.
    pub healthy: Option<crate::stats::slo::SloCapacity>,
    /// Its answer with a member failed.
    pub degraded: Option<crate::stats::slo::SloCapacity>,
    /// Its answer while the failed member's replacement rebuilds (`during_rebuild = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilding: Option<crate::stats::slo::SloCapacity>,
}

impl LabSlo {
    /// The table's cell: `2,010 IOPS, degraded 1,190` (`none met`, `>=` when met at the peak or
    /// at every rate the search reached).
    pub fn cell(&self) -> String {
        use crate::stats::slo::SloVerdict;
        let one = |c: &crate::stats::slo::SloCapacity| match c.verdict {
            SloVerdict::Capacity => crate::units::format_rate(c.capacity.unwrap_or(0.0)),
            SloVerdict::MetAtPeak | SloVerdict::AtLeast => {
                format!(">={}", crate::units::format_rate(c.capacity.unwrap_or(0.0)))
            }
            SloVerdict::NoneMet => "none met".into(),
            SloVerdict::NoTrials => "-".into(),
        };
        let mut s = self.healthy.as_ref().map_or_else(|| "-".into(), one);
        if let Some(d) = &self.degraded {
            s.push_str(&format!(" / deg {}", one(d)));
        }
        if let Some(r) = &self.rebuilding {
            s.push_str(&format!(" / rebuild {}", one(r)));
        }
        s
    }
}

/// One layout of a lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutReport {
    /// Layout name (the label of its runs).
    pub name: String,
    /// One line: RAID level, members, chunk, bitmap, LVM, filesystem, mkfs and mount options.
    pub stack: String,
    /// The stack, field by field (`None` for a directory layout).
    pub spec: Option<crate::layout::Stack>,
    /// How it went.
    pub status: LayoutStatus,
    /// Why it is unavailable, failed or skipped.
    pub reason: Option<String>,
    /// Member devices, in order.
    pub members: Vec<String>,
    /// Bytes per member.
    pub member_bytes: Option<u64>,
    /// Seconds from the first command to mounted (md resync included).
    pub build_seconds: Option<f64>,
    /// The RAID layer's runtime tunables as the kernel (md: sysfs, `queue/read_ahead_kb`, the
    /// members' `queue/scheduler`) or ZFS (`zfs get`) holds them after the build
    /// (`stripe_cache_size 4096, group_thread_cnt 2`; `recordsize 1M, primarycache all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md_tunables: Option<String>,
    /// Re-tuned, not rebuilt: the layout whose build this one ran on, with only its runtime
    /// tunables set anew (a sweep over md's tunables or a read-ahead); its `commands` are the
    /// tuning commands alone, and `build_seconds` is `None`. `None` for a layout built anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_build_of: Option<String>,
    /// The filesystem device's read-ahead as `blockdev --getra` read it back before the
    /// workloads, 512-byte sectors, when the layout set one (`read_ahead`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_sectors: Option<u64>,
    /// How the layers over the array's stripe were aligned after the build, read back from
    /// the tools, with a warning and the fix for each misaligned layer (`alignment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment: Option<crate::layout::align::AlignmentReport>,
    /// Usable bytes the filesystem reports right after building (btrfs: estimated free space,
    /// which accounts for copies and parity; others: statvfs size).
    pub usable_bytes: Option<u64>,
    /// Usable bytes the RAID level promises before filesystem overhead.
    pub expected_usable_bytes: Option<u64>,
    /// Bytes of the verification data set written before degrading.
    pub fill_bytes: Option<u64>,
    /// Wall time of the workloads on the healthy layout, seconds.
    pub workload_seconds: Option<f64>,
    /// Degraded run, when asked for.
    pub degraded: Option<DegradedReport>,
    /// Rebuild, when asked for.
    pub rebuild: Option<Rebuild>,
    /// The workloads during the rebuild (`during_rebuild = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild_load: Option<RebuildLoadReport>,
    /// Two members failed at once and replaced (`failures = 2`).
    #[serde(default)]
    pub second_failure: Option<SecondFailureReport>,
    /// What reading the data set back and scrubbing found (layouts with a data set).
    #[serde(default)]
    pub integrity: Option<IntegrityReport>,
    /// Injected faults and what the layout did about them.
    #[serde(default)]
    pub faults: Vec<FaultReport>,
    /// md's view at the end (after the last scrub), on a layout with injected faults.
    #[serde(default)]
    pub md_final: Option<crate::layout::fault::MdObservation>,
    /// Per-member IO during the healthy workloads (the slow member stands out).
    #[serde(default)]
    pub member_io: Vec<MemberIo>,
    /// The members' medians the slow-member rule judged against: the peers' (members busy
    /// enough to count), not every member's; `None` when too few members were peers to judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_medians: Option<MemberMedians>,
    /// Capacity at the lab's latency target (`[workloads] slo`), per searched workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<LabSlo>,
    /// What power cuts did to it (`powercut`, VM lab only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::sample::power::PowerReport>,
    /// Every command run for this layout, in order.
    pub commands: Vec<String>,
}

impl LayoutReport {
    /// A report with only the name and stack filled in.
    pub fn new(name: &str, stack: String, spec: Option<crate::layout::Stack>) -> LayoutReport {
        LayoutReport {
            name: name.to_string(),
            stack,
            spec,
            status: LayoutStatus::Ok,
            reason: None,
            members: Vec::new(),
            member_bytes: None,
            build_seconds: None,
            md_tunables: None,
            reused_build_of: None,
            read_ahead_sectors: None,
            alignment: None,
            usable_bytes: None,
            expected_usable_bytes: None,
            fill_bytes: None,
            workload_seconds: None,
            degraded: None,
            rebuild_load: None,
            rebuild: None,
            second_failure: None,
            integrity: None,
            faults: Vec::new(),
            md_final: None,
            member_io: Vec::new(),
            member_medians: None,
            slo: Vec::new(),
            power: None,
            commands: Vec::new(),
        }
    }

    /// The status as the table shows it: `ok`, `unavailable here: ...`, `failed: ...`.
    pub fn status_text(&self) -> String {
        let r = self.reason.as_deref().unwrap_or("");
        match self.status {
            LayoutStatus::Ok => "ok".into(),
            LayoutStatus::Unavailable => format!("unavailable here: {r}"),
            LayoutStatus::Failed => format!("failed: {r}"),
            LayoutStatus::Skipped => format!("skipped: {r}"),
        }
    }

    /// The integrity column: `verified`, `DATA LOSS (n files, m scrub errors)`,
    /// `FAILED: <step>`, or `-` without a data set.
    pub fn integrity_text(&self) -> String {
        self.integrity
            .as_ref()
            .map_or_else(|| "-".to_string(), |i| i.verdict.text())
    }

    /// The POWER column: `0/10 lost`, `2/10: ...`, or `-` without power cuts.
    pub fn power_text(&self) -> String {
        self.power
            .as_ref()
            .map_or_else(|| "-".to_string(), crate::sample::power::PowerReport::text)
    }

    /// True when the layout lost data.
    pub fn lost_data(&self) -> bool {
        self.integrity
            .as_ref()
            .is_some_and(|i| matches!(i.verdict, super::integrity::Verdict::DataLoss { .. }))
    }

    /// Degraded speed as a ratio to healthy (workload wall time healthy / degraded).
    pub fn degraded_ratio(&self) -> Option<f64> {
        if let Some(r) = self.degraded.as_ref().and_then(|d| d.perf_ratio) {
            return Some(r);
        }
        let h = self.workload_seconds?;
        let d = self.degraded.as_ref()?.workload_seconds?;
        (d > 0.0 && h > 0.0).then(|| h / d)
    }
}

/// A whole lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabReport {
    /// The lab id (tags every run of this lab, names every object it made).
    pub lab_id: String,
    /// Lab name.
    pub name: String,
    /// The spec file.
    pub spec_file: String,
    /// The disks, in one line.
    pub disks: String,
    /// The baseline layout, when the spec names one.
    pub baseline: Option<String>,
    /// The lab stopped early (Ctrl-C, SIGTERM); later layouts are `skipped`.
    pub interrupted: bool,
    /// Nothing was built: commands were only printed (`--dry-run`).
    pub dry_run: bool,
    /// One entry per layout, in spec order.
    pub layouts: Vec<LayoutReport>,
    /// Objects the final teardown could not remove (`iolab lab --cleanup` retries them).
    pub leftovers: Vec<String>,
    /// The stored runs of this lab: one per layout, one more per degraded layout.
    #[serde(default)]
    pub runs: Vec<LabRun>,
}

/// A stored run made by a lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabRun {
    /// The layout.
    pub layout: String,
    /// Healthy or degraded (`healthy`, `degraded` in JSON).
    pub phase: super::Phase,
    /// The store id (`iolab show ID`).
    pub run_id: String,
}

impl LabReport {
    /// True when some layout lost data.
    pub fn any_data_lost(&self) -> bool {
        // Data lost under injected faults is the experiment's finding, not a failed lab.
        self.layouts
            .iter()
            .any(|l| l.lost_data() && l.faults.is_empty())
    }

    /// True when some layout failed.
    pub fn any_failed(&self) -> bool {
        !self.leftovers.is_empty()
            || self
                .layouts
                .iter()
                .any(|l| l.status == LayoutStatus::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips() {
        let mut un = LayoutReport::new("md-raid6", "md raid6 x4 > xfs".into(), None);
        un.status = LayoutStatus::Unavailable;
        un.reason = Some("no md | here".into());
        let r = LabReport {
            lab_id: "ab12cd".into(),
            name: "t".into(),
            spec_file: "t.toml".into(),
            disks: "4 x 1GiB loop disks in /tmp/d".into(),
            baseline: None,
            interrupted: false,
            dry_run: false,
            layouts: vec![LayoutReport::new("a", "disk > xfs".into(), None), un],
            leftovers: vec![],
            runs: vec![],
        };
        let j = serde_json::to_string(&r).unwrap();
        let back: LabReport = serde_json::from_str(&j).unwrap();
        assert_eq!(back, r);
        assert!(j.contains("\"status\":\"unavailable\""));
    }
}
