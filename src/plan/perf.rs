//! Predicted speed of a layout from the speed of one disk: how many disks a sequential stream
//! keeps busy, what a random write costs in disk IOs (the write penalty), and whether the
//! controller or bus cap binds before the disks do.
//!
//! The figures are what the disks can deliver: sequential for one stream of large IOs (as `dd`
//! or a single fio job does), random with enough IOs in flight to keep every disk busy and IOs
//! no larger than the chunk. Filesystem, CPU and cache effects are outside the model.

use serde::{Deserialize, Serialize};

use super::PlanError;
use super::layout::{Layout, LayoutSpec, Level};
use super::zfs::{self, VdevShape};
use crate::sample::RunRecord;
use crate::spec::Pattern;

/// What one disk does on its own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiskPerf {
    /// Sequential read, MB/s (10^6 bytes per second).
    pub seq_read_mbps: f64,
    /// Sequential write, MB/s.
    pub seq_write_mbps: f64,
    /// Random read IOs per second.
    pub rand_read_iops: f64,
    /// Random write IOs per second.
    pub rand_write_iops: f64,
}

/// A 7200 rpm SATA disk, used when nothing was measured or given: about 150 MB/s at the outer
/// tracks and some 120 random IOs per second with a queue.
pub const DEFAULT_DISK: DiskPerf = DiskPerf {
    seq_read_mbps: 150.0,
    seq_write_mbps: 150.0,
    rand_read_iops: 120.0,
    rand_write_iops: 120.0,
};

impl Default for DiskPerf {
    fn default() -> Self {
        DEFAULT_DISK
    }
}

impl DiskPerf {
    /// The per-disk figures a stored run measured; every figure must be there (use
    /// [`MeasuredPerf::from_run`] to take what there is and fill the rest from flags).
    pub fn from_run(run: &RunRecord) -> Result<DiskPerf, PlanError> {
        let m = MeasuredPerf::from_run(run)?;
        let missing = m.missing();
        if !missing.is_empty() {
            return Err(PlanError::Run {
                run: run_name(run),
                why: format!("has no {}", missing.join(", ")),
            });
        }
        Ok(m.fill(&DEFAULT_DISK))
    }

    /// Refuses figures that are not positive numbers.
    pub fn validate(&self) -> Result<(), PlanError> {
        for (field, v) in [
            ("--disk-read-mbps", self.seq_read_mbps),
            ("--disk-write-mbps", self.seq_write_mbps),
            ("--disk-read-iops", self.rand_read_iops),
            ("--disk-write-iops", self.rand_write_iops),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(PlanError::Input {
                    field,
                    why: format!("{v} must be above 0"),
                });
            }
        }
        Ok(())
    }
}

/// Per-disk figures as far as a run measured them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MeasuredPerf {
    /// Sequential read MB/s, from `read` workloads.
    pub seq_read_mbps: Option<f64>,
    /// Sequential write MB/s, from `write` workloads.
    pub seq_write_mbps: Option<f64>,
    /// Random read IOPS, from `randread` workloads.
    pub rand_read_iops: Option<f64>,
    /// Random write IOPS, from `randwrite` workloads.
    pub rand_write_iops: Option<f64>,
    /// Which workload each figure came from, for the report.
    pub sources: Vec<String>,
}

fn run_name(run: &RunRecord) -> String {
    run.label
        .clone()
        .filter(|l| !l.is_empty())
        .or_else(|| Some(run.id.clone()).filter(|i| !i.is_empty()))
        .unwrap_or_else(|| "run".to_string())
}

impl MeasuredPerf {
    /// Extracts per-disk figures from a run on one disk: the median over trials of each
    /// workload, and the best workload of each pattern (a deeper queue or larger block shows
    /// more of what the disk can do). `randrw` mixes are skipped: their figures are not the
    /// disk's pure read or write speed. Fails when the run has none of the four patterns.
    pub fn from_run(run: &RunRecord) -> Result<MeasuredPerf, PlanError> {
        let mut m = MeasuredPerf::default();
        for w in &run.workloads {
            let Some(io) = w.workload.io() else { continue };
            let (op, bandwidth) = match io.pattern {
                Pattern::Read => ("read", true),
                Pattern::Write => ("write", true),
                Pattern::RandRead => ("read", false),
                Pattern::RandWrite => ("write", false),
                Pattern::RandRw | Pattern::Rw => continue,
            };
            let per_trial: Vec<f64> = w
                .trials
                .iter()
                .filter_map(|t| t.op(op))
                .filter(|o| o.count > 0 && o.elapsed_ns > 0)
                .map(|o| {
                    if bandwidth {
                        o.mb_per_sec()
                    } else {
                        o.ops_per_sec()
                    }
                })
                .collect();
            let Some(v) = crate::stats::median(&per_trial) else {
                continue;
            };
            let slot = match io.pattern {
                Pattern::Read => &mut m.seq_read_mbps,
                Pattern::Write => &mut m.seq_write_mbps,
                Pattern::RandRead => &mut m.rand_read_iops,
                _ => &mut m.rand_write_iops,
            };
            if slot.is_none_or(|old| v > old) {
                *slot = Some(v);
                let label = io.pattern.name();
                m.sources.retain(|s| !s.starts_with(&format!("{label}:")));
                m.sources
                    .push(format!("{label}: workload '{}'", w.workload.name));
            }
        }
        if m.missing().len() == 4 {
            return Err(PlanError::Run {
                run: run_name(run),
                why: "has no sequential or random read/write workload with results to take disk speeds from".into(),
            });
        }
        Ok(m)
    }

    /// The figures the run did not measure, named with the flag that supplies them.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.seq_read_mbps.is_none() {
            out.push("sequential read (--disk-read-mbps)");
        }
        if self.seq_write_mbps.is_none() {
            out.push("sequential write (--disk-write-mbps)");
        }
        if self.rand_read_iops.is_none() {
            out.push("random read (--disk-read-iops)");
        }
        if self.rand_write_iops.is_none() {
            out.push("random write (--disk-write-iops)");
        }
        out
    }

    /// Completes the figures from `fallback` where the run has none.
    pub fn fill(&self, fallback: &DiskPerf) -> DiskPerf {
        DiskPerf {
            seq_read_mbps: self.seq_read_mbps.unwrap_or(fallback.seq_read_mbps),
            seq_write_mbps: self.seq_write_mbps.unwrap_or(fallback.seq_write_mbps),
            rand_read_iops: self.rand_read_iops.unwrap_or(fallback.rand_read_iops),
            rand_write_iops: self.rand_write_iops.unwrap_or(fallback.rand_write_iops),
        }
    }
}

/// What the controller or bus carries at most, across all disks together.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Caps {
    /// MB/s to and from all disks together.
    pub mbps: Option<f64>,
    /// Disk IOs per second across all disks.
    pub iops: Option<f64>,
}

impl Caps {
    /// Refuses caps that are not positive numbers.
    pub fn validate(&self) -> Result<(), PlanError> {
        for (field, v) in [("--cap-mbps", self.mbps), ("--cap-iops", self.iops)] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(PlanError::Input {
                    field,
                    why: format!("{v} must be above 0"),
                });
            }
        }
        Ok(())
    }
}

/// Which limit sets a predicted figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The member disks.
    Disks,
    /// The controller/bus cap (`--cap-mbps`, `--cap-iops`).
    Controller,
}

/// One predicted figure and what limits it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// The value (MB/s or IOPS).
    pub value: f64,
    /// What binds.
    pub limit: Limit,
}

impl Figure {
    pub(crate) fn capped(disks: f64, cap: Option<f64>) -> Figure {
        match cap {
            Some(c) if c < disks => Figure {
                value: c,
                limit: Limit::Controller,
            },
            _ => Figure {
                value: disks,
                limit: Limit::Disks,
            },
        }
    }
}

/// The predicted speed of a layout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// Sequential read, MB/s, one stream of large IOs.
    pub seq_read: Figure,
    /// Sequential write, MB/s, one stream of full-stripe writes.
    pub seq_write: Figure,
    /// Random read IOPS, all disks busy.
    pub rand_read: Figure,
    /// Random write IOPS, all disks busy.
    pub rand_write: Figure,
    /// Disk IOs per random write (reads + writes): raid5 4, raid6 6, 2-way mirror 2; btrfs
    /// raid5/6 n/(n-p) (copy-on-write turns random writes into full-stripe writes).
    pub write_penalty: f64,
}

/// The per-level constants of the performance model.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shape {
    /// Disks a sequential read stream keeps busy.
    read_disks: f64,
    /// Disks' worth of user data a sequential write stream moves per unit time.
    write_disks: f64,
    /// Bytes on the bus per user byte written sequentially (parity or copies).
    write_bus: f64,
    /// Disk reads per random write.
    rmw_reads: f64,
    /// Disk writes per random write.
    rmw_writes: f64,
}

fn shape(layout: &Layout) -> Shape {
    let g = f64::from(layout.spec.groups);
    let n = f64::from(layout.per_group);
    let all = f64::from(layout.active);
    let s = |read_disks, write_disks, write_bus, rmw_reads, rmw_writes| Shape {
        read_disks,
        write_disks,
        write_bus,
        rmw_reads,
        rmw_writes,
    };
    match layout.level() {
        Level::Raid0 | Level::BtrfsRaid0 => s(all, all, 1.0, 0.0, 1.0),
        // A stream reads one mirror of each group; every write goes to all n mirrors.
        Level::Raid1 => s(g, g, n, 0.0, n),
        Level::Raid10 => s(all / 2.0, all / 2.0, 2.0, 0.0, 2.0),
        Level::Raid5 | Level::Raid6 | Level::BtrfsRaid5 | Level::BtrfsRaid6 => {
            let p = f64::from(layout.level().parity().unwrap_or(0));
            let data = n - p;
            if layout.level().is_btrfs() {
                // Copy-on-write: random writes land in newly allocated space, so with enough
                // in flight they are written as full stripes (n/(n-p) disk writes each, no
                // reads). Measured on throttled loop disks: 1.05-1.11x this figure, against
                // 3.3-3.9x the in-place one. (btrfs has one group: g = 1.)
                s(data, data, n / data, 0.0, n / data)
            } else {
                // In place: a small write reads the old data and parities, writes them back.
                s(g * data, g * data, n / data, p + 1.0, p + 1.0)
            }
        }
        // One plain disk; btrfs single: one 1 GiB chunk at a time lives on one disk.
        Level::Single | Level::BtrfsSingle => s(1.0, 1.0, 1.0, 0.0, 1.0),
        Level::BtrfsRaid1 => s(1.0, 1.0, 2.0, 0.0, 2.0),
        Level::BtrfsRaid1c3 => s(1.0, 1.0, 3.0, 0.0, 3.0),
        Level::BtrfsRaid1c4 => s(1.0, 1.0, 4.0, 0.0, 4.0),
        // A btrfs raid10 chunk stripes over the largest even number of disks.
        Level::BtrfsRaid10 => {
            let half = f64::from(layout.active / 2);
            s(half, half, 2.0, 0.0, 2.0)
        }
        // ZFS levels are predicted by `predict_zfs`; this is their md-like fallback.
        Level::ZfsMirror => s(all, g, n, 0.0, n),
        Level::Raidz1 | Level::Raidz2 | Level::Raidz3 | Level::Draid { .. } => {
            let p = f64::from(layout.level().parity().unwrap_or(1));
            s(g * (n - p), g * (n - p), n / (n - p), 0.0, n)
        }
    }
}

/// Predicts a placed layout (see the module doc for what the figures mean).
///
/// Disk limits: sequential `disks x per-disk MB/s`; random read `active x read IOPS`; random
/// write `active / (reads/read_iops + writes/write_iops)` (each write costs that much disk
/// time). Caps: the MB/s cap over the bus bytes per user byte, the IOPS cap over the disk IOs
/// per user IO.
pub fn predict_layout(layout: &Layout, perf: &DiskPerf, caps: &Caps) -> Prediction {
    if let Some(p) = predict_zfs(layout, perf, caps) {
        return p;
    }
    let sh = shape(layout);
    let active = f64::from(layout.active);
    let (pr, pw) = (sh.rmw_reads, sh.rmw_writes);
    let rand_write_disks = active / (pr / perf.rand_read_iops + pw / perf.rand_write_iops);
    let penalty = sh.rmw_reads + sh.rmw_writes;
    Prediction {
        seq_read: Figure::capped(sh.read_disks * perf.seq_read_mbps, caps.mbps),
        seq_write: Figure::capped(
            sh.write_disks * perf.seq_write_mbps,
            caps.mbps.map(|c| c / sh.write_bus),
        ),
        rand_read: Figure::capped(active * perf.rand_read_iops, caps.iops),
        rand_write: Figure::capped(rand_write_disks, caps.iops.map(|c| c / penalty)),
        write_penalty: penalty,
    }
}

/// Predicted speed of a ZFS layout; `None` for other levels. A raidz vdev writes every
/// record across all its children and reads it from all its data children, so it gives
/// about one disk's random IOPS; mirrors read from every side (N x read) and write every
/// copy; dRAID behaves as `(children - spares) / (data + parity)` raidz-like groups.
pub fn predict_zfs(layout: &Layout, perf: &DiskPerf, caps: &Caps) -> Option<Prediction> {
    let sh = zfs::shape(layout)?;
    let g = f64::from(layout.spec.groups);
    let n = f64::from(layout.per_group);
    // (data disks streaming, random-IO units, disks touched per random write, per read)
    let (data, units, w_io, r_io) = match sh {
        VdevShape::Mirror => (g, g * n, n, 1.0),
        VdevShape::Raidz { width, parity } => {
            let d = (width - parity) as f64;
            (g * d, g, width as f64, d)
        }
        VdevShape::Draid {
            children,
            data,
            parity,
            spares,
        } => {
            let gw = (data + parity) as f64;
            let units = g * (children - spares) as f64 / gw;
            (units * data as f64, units, gw, data as f64)
        }
    };
    let write_bus = match sh {
        VdevShape::Mirror => n,
        _ => w_io / r_io.max(1.0),
    };
    let read_disks = match sh {
        VdevShape::Mirror => g * n,
        _ => data,
    };
    // A mirror's random write lands on every copy; raidz/dRAID writes whole stripes, one IO
    // per unit.
    let (rand_w_units, penalty) = match sh {
        VdevShape::Mirror => (g, n),
        _ => (units, w_io),
    };
    Some(Prediction {
        seq_read: Figure::capped(read_disks * perf.seq_read_mbps, caps.mbps),
        seq_write: Figure::capped(data * perf.seq_write_mbps, caps.mbps.map(|c| c / write_bus)),
        rand_read: Figure::capped(units * perf.rand_read_iops, caps.iops.map(|c| c / r_io)),
        rand_write: Figure::capped(
            rand_w_units * perf.rand_write_iops,
            caps.iops.map(|c| c / penalty),
        ),
        write_penalty: penalty,
    })
}

/// Predicts a named layout on `disks` disks (spares included): the entry point `iolab lab`
/// uses to set its measurements against the model.
pub fn predict(
    layout: &LayoutSpec,
    disks: u32,
    perf: &DiskPerf,
    caps: &Caps,
) -> Result<Prediction, PlanError> {
    perf.validate()?;
    caps.validate()?;
    Ok(predict_layout(&layout.on_disks(disks)?, perf, caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, disks: u32, caps: Caps) -> Prediction {
        predict(
            &LayoutSpec::parse(name).unwrap(),
            disks,
            &DEFAULT_DISK,
            &caps,
        )
        .unwrap()
    }

    #[test]
    fn write_penalties_by_hand() {
        let none = Caps::default();
        // raid5 of 4 disks at 120 IOPS: 4 / (2/120 + 2/120) = 120 random writes/s.
        let r5 = p("raid5", 4, none);
        assert!((r5.rand_write.value - 120.0).abs() < 1e-9);
        assert_eq!(r5.write_penalty, 4.0);
        // raid6 of 6: 6 / (3/120 + 3/120) = 120.
        let r6 = p("raid6", 6, none);
        assert!((r6.rand_write.value - 120.0).abs() < 1e-9);
        assert_eq!(r6.write_penalty, 6.0);
        // raid10 of 4: 4 * 120 / 2 = 240; raid0 of 4: 480; raid1 of 2: 120.
        assert!((p("raid10", 4, none).rand_write.value - 240.0).abs() < 1e-9);
        assert!((p("raid0", 4, none).rand_write.value - 480.0).abs() < 1e-9);
        assert!((p("raid1", 2, none).rand_write.value - 120.0).abs() < 1e-9);
        // Reads use every disk: raid6 of 45 at 120 = 5400.
        assert!((p("raid6", 45, none).rand_read.value - 5400.0).abs() < 1e-9);
        // Unequal read and write speeds: raid5 of 4 at 200 read / 100 write IOPS:
        // 4 / (2/200 + 2/100) = 133.3.
        let fast_reads = DiskPerf {
            rand_read_iops: 200.0,
            rand_write_iops: 100.0,
            ..DEFAULT_DISK
        };
        let l = LayoutSpec::parse("raid5").unwrap().on_disks(4).unwrap();
        let v = predict_layout(&l, &fast_reads, &none).rand_write.value;
        assert!((v - 400.0 / 3.0).abs() < 1e-9, "{v}");
        // btrfs raid5 of 4 at 120 IOPS, copy-on-write: full stripes of 3 data + 1 parity, so
        // 4/3 disk writes per user write and 4 / (4/3 / 120) = 360; raid6 of 5: 5/3 writes each,
        // 5 / (5/3 / 120) = 360. The in-place raid5/raid6 above do 120.
        let b5 = p("btrfs-raid5", 4, none);
        assert!((b5.rand_write.value - 360.0).abs() < 1e-9, "{b5:?}");
        assert!((b5.write_penalty - 4.0 / 3.0).abs() < 1e-12);
        let b6 = p("btrfs-raid6", 5, none);
        assert!((b6.rand_write.value - 360.0).abs() < 1e-9, "{b6:?}");
        assert!((b6.write_penalty - 5.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn sequential_by_hand() {
        let none = Caps::default();
        // raid6 of 45: 43 data disks x 150 = 6450 MB/s both ways.
        let r6 = p("raid6", 45, none);
        assert!((r6.seq_read.value - 6450.0).abs() < 1e-9);
        assert!((r6.seq_write.value - 6450.0).abs() < 1e-9);
        // 3 x raid6 of 15: 3 x 13 x 150 = 5850.
        assert!((p("3xraid6", 45, none).seq_write.value - 5850.0).abs() < 1e-9);
        // btrfs raid1: one stream reads one copy and writes two disks: 150 / 150.
        let b1 = p("btrfs-raid1", 4, none);
        assert!((b1.seq_read.value - 150.0).abs() < 1e-9);
        assert!((b1.seq_write.value - 150.0).abs() < 1e-9);
        // btrfs raid10 of 5 disks stripes over 4: 2 x 150 = 300.
        assert!((p("btrfs-raid10", 5, none).seq_write.value - 300.0).abs() < 1e-9);
    }

    #[test]
    fn the_cap_binds_and_says_so() {
        // The 45-disk pod behind a 1 GB/s bus: reads capped at 1000 MB/s; raid6 writes move
        // 45/43 bytes per byte, so 1000 * 43 / 45 = 955.6 MB/s.
        let caps = Caps {
            mbps: Some(1000.0),
            iops: Some(2000.0),
        };
        let r6 = p("raid6", 45, caps);
        assert_eq!(r6.seq_read.limit, Limit::Controller);
        assert!((r6.seq_read.value - 1000.0).abs() < 1e-9);
        assert!((r6.seq_write.value - 1000.0 * 43.0 / 45.0).abs() < 1e-9);
        // Random writes: 45 / (6/120) = 900 from the disks, 2000 / 6 = 333.3 from the cap.
        assert!((r6.rand_write.value - 2000.0 / 6.0).abs() < 1e-9);
        assert_eq!(r6.rand_write.limit, Limit::Controller);
        // A 4-disk raid5 stays under the cap: 3 x 150 = 450 MB/s < 1000.
        let r5 = p("raid5", 4, caps);
        assert_eq!(r5.seq_read.limit, Limit::Disks);
        assert!((r5.seq_read.value - 450.0).abs() < 1e-9);
    }
}
