//! `iolab plan`: capacity, predicted performance and the risk of losing data, as pure functions.
//!
//! The question of `raid6-vs-raid5-bonnie.txt` ("is RAID5 plus a hot spare as good as RAID6?")
//! and the choice of `xfs-raid-45-spindles.txt` (RAID6 43+2 spares) become one table: for each
//! candidate layout, what it holds, how fast it should be, how long a rebuild leaves it exposed
//! and how likely it is to lose data. Nothing here touches a disk; `cli::plan` reads the flags
//! and prints, `iolab lab` calls [`predict`] to set measurements against the model.
//!
//! - [`layout`]: the layout grammar and the geometry (capacity, groups, redundancy).
//! - [`perf`]: per-disk speed in, predicted array speed out, with the controller cap.
//! - [`risk`] and [`markov`]: failures, rebuilds and unreadable sectors as a Markov chain.
//!
//! The tables people read are drawn by `report::text::plan`.
//!
//! The model and its assumptions are written down in `docs/plan-model.md`.

mod capacity;
pub mod layout;
pub mod markov;
pub mod pareto;
pub mod perf;
pub mod risk;
pub mod usable;
pub mod zfs;

use serde::Serialize;

pub use layout::{Layout, LayoutSpec, Level, parse_layouts};
pub use perf::{Caps, DiskPerf, Figure, Limit, MeasuredPerf, Prediction, predict, predict_layout};
pub use risk::{RebuildSpeed, Risk, RiskParams};
pub use usable::Over;
pub use zfs::ZfsParams;

/// The most disks a plan takes: far beyond one box, and it keeps the chains small.
pub const MAX_DISKS: u32 = 10_000;

/// Bytes per stripe element in btrfs (`BTRFS_STRIPE_LEN`); `--chunk` applies to mdadm only.
pub const BTRFS_STRIPE_LEN: u64 = 64 * 1024;

/// Bad planning input. Every message names the layout or flag and what to do instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A layout that cannot be parsed or placed on the disks given.
    #[error("layout '{name}': {why}")]
    Layout {
        /// The layout as typed.
        name: String,
        /// What is wrong and the fix.
        why: String,
    },
    /// A flag value the model cannot mean (AFR above 1, a negative size...).
    #[error("{field}: {why}")]
    Input {
        /// The flag.
        field: &'static str,
        /// What is wrong and the fix.
        why: String,
    },
    /// A stored run that cannot give per-disk speeds.
    #[error("run '{run}' {why}")]
    Run {
        /// The run's label or id.
        run: String,
        /// What it lacks.
        why: String,
    },
}

/// Everything a plan needs.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput {
    /// Disks in the box, spares included.
    pub disks: u32,
    /// Bytes per disk (decimal, as on the label).
    pub disk_bytes: u64,
    /// mdadm chunk size, bytes.
    pub chunk_bytes: u64,
    /// Candidate layouts, in the order to show them.
    pub layouts: Vec<LayoutSpec>,
    /// What one disk does.
    pub perf: DiskPerf,
    /// Controller/bus caps.
    pub caps: Caps,
    /// Failure, URE, replacement and mission inputs.
    pub risk: RiskParams,
    /// How fast a rebuild goes.
    pub rebuild: RebuildSpeed,
    /// recordsize, ashift and fill for ZFS layouts.
    pub zfs: ZfsParams,
    /// What sits over md arrays (the filesystem, LVM) and the btrfs metadata profile: what
    /// they keep for themselves comes out of the usable bytes.
    pub over: Over,
}

impl PlanInput {
    /// Checks every input before any layout is computed.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.disks == 0 || self.disks > MAX_DISKS {
            return Err(PlanError::Input {
                field: "--disks",
                why: format!("{} must be between 1 and {MAX_DISKS}", self.disks),
            });
        }
        if self.disk_bytes == 0 {
            return Err(PlanError::Input {
                field: "--disk-size",
                why: "must be above 0 (e.g. 2TB)".into(),
            });
        }
        if self.chunk_bytes < 4096 || !self.chunk_bytes.is_power_of_two() {
            return Err(PlanError::Input {
                field: "--chunk",
                why: format!(
                    "{} must be a power of two of at least 4k (mdadm's default is 512k)",
                    self.chunk_bytes
                ),
            });
        }
        if u64::try_from(u128::from(self.disks) * u128::from(self.disk_bytes)).is_err() {
            return Err(PlanError::Input {
                field: "--disk-size",
                why: "times --disks does not fit in 64 bits".into(),
            });
        }
        let z = &self.zfs;
        if z.recordsize < 512 || z.recordsize > 16 << 20 || !z.recordsize.is_power_of_two() {
            return Err(PlanError::Input {
                field: "--recordsize",
                why: format!(
                    "{} must be a power of two from 512 to 16M (zfs' default is 128k)",
                    z.recordsize
                ),
            });
        }
        if !(9..=16).contains(&z.ashift) {
            return Err(PlanError::Input {
                field: "--ashift",
                why: format!("{} must be from 9 to 16 (12 for 4k-sector disks)", z.ashift),
            });
        }
        if !(z.fill > 0.0 && z.fill <= 1.0) {
            return Err(PlanError::Input {
                field: "--fill",
                why: "must be above 0% and at most 100% (the pool's fill when a disk fails)".into(),
            });
        }
        self.perf.validate()?;
        self.caps.validate()?;
        self.risk.validate()?;
        self.rebuild.validate()
    }
}

/// Which limit binds each predicted figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    /// Sequential read.
    pub seq_read: Limit,
    /// Sequential write.
    pub seq_write: Limit,
    /// Random read.
    pub rand_read: Limit,
    /// Random write.
    pub rand_write: Limit,
}

/// One layout's row: the object `--format json` prints in `layouts`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutRow {
    /// The layout as typed (`raid6+2spares`).
    pub name: String,
    /// RAID level or btrfs profile.
    pub level: String,
    /// Arrays striped together.
    pub groups: u32,
    /// Disks per group.
    pub disks_per_group: u32,
    /// Disks holding data.
    pub active_disks: u32,
    /// Hot spares.
    pub spares: u32,
    /// Concurrent failures one redundancy unit survives (a group; a mirror pair in raid10).
    pub failures_tolerated: u32,
    /// Independent redundancy units (groups, or mirror pairs in raid10).
    pub redundancy_units: u32,
    /// Usable bytes as the built layout reports them (`plan::usable`): md's data offset, LVM's
    /// metadata and the filesystem's own structures (xfs log, ext4 inode tables and journal,
    /// btrfs's first metadata chunks) taken out; ZFS: what records of `--recordsize` hold,
    /// parity, padding and slop taken out.
    pub usable_bytes: u64,
    /// The RAID's arithmetic alone, before anything md, LVM or the filesystem keep (ZFS: as
    /// `usable_bytes`).
    pub array_bytes: u64,
    /// ZFS only: what `zfs list` shows as USED + AVAIL on the empty pool (its accounting
    /// assumes 128KiB records).
    pub zfs_list_bytes: Option<u64>,
    /// All disks' bytes, spares included.
    pub raw_bytes: u64,
    /// usable / raw.
    pub efficiency: f64,
    /// Chunk x data disks: a full stripe, what mkfs calls the stripe width; `None` without
    /// striping.
    pub stripe_width_bytes: Option<u64>,
    /// Predicted sequential read, MB/s.
    pub seq_read_mbps: f64,
    /// Predicted sequential write, MB/s.
    pub seq_write_mbps: f64,
    /// Predicted random read IOPS.
    pub rand_read_iops: f64,
    /// Predicted random write IOPS.
    pub rand_write_iops: f64,
    /// Disk IOs per random write.
    pub write_penalty: f64,
    /// What binds each figure.
    pub limits: Limits,
    /// Rebuild speed, MB/s; `None` without redundancy.
    pub rebuild_mbps: Option<f64>,
    /// Hours to rebuild one disk; `None` without redundancy.
    pub rebuild_hours: Option<f64>,
    /// Hours from a failure until redundancy is back; `None` without redundancy.
    pub exposure_hours: Option<f64>,
    /// Bytes read with no redundancy left when rebuilding the last tolerated failure.
    pub unprotected_read_bytes: u64,
    /// Chance that rebuilding the last tolerated failure meets an unreadable sector.
    pub ure_probability: f64,
    /// Mean time to data loss, hours (`None` when beyond what a float holds).
    pub mttdl_hours: Option<f64>,
    /// Probability of losing data within one year.
    pub data_loss_probability_1y: f64,
    /// Probability of losing data within the mission time.
    pub data_loss_probability_mission: f64,
    /// Another layout is at least as good on capacity, every speed and risk, and better on one.
    pub dominated: bool,
    /// The first layout that dominates this one.
    pub dominated_by: Option<String>,
}

/// The inputs as the plan used them, for the JSON document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanInputs {
    /// Disks, spares included.
    pub disks: u32,
    /// Bytes per disk.
    pub disk_bytes: u64,
    /// mdadm chunk, bytes.
    pub chunk_bytes: u64,
    /// Per-disk speed used.
    pub disk: DiskPerf,
    /// Where the per-disk speed came from.
    pub disk_source: String,
    /// Controller caps.
    pub caps: Caps,
    /// Annualized failure rate.
    pub afr: f64,
    /// Where the AFR comes from.
    pub afr_source: String,
    /// Unrecoverable read errors per bit.
    pub ure_per_bit: f64,
    /// Hours to replace a disk without a spare.
    pub replace_hours: f64,
    /// Rebuild speed rule.
    pub rebuild: RebuildSpeed,
    /// Mission time, years.
    pub mission_years: f64,
}

/// A whole plan: inputs, one row per layout, notes for the reader.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// What was assumed.
    pub inputs: PlanInputs,
    /// One row per layout, in the order asked.
    pub layouts: Vec<LayoutRow>,
    /// Things the reader must know to read the numbers right.
    pub notes: Vec<String>,
}

/// Builds the row of one layout.
pub fn evaluate(
    spec: &LayoutSpec,
    input: &PlanInput,
) -> Result<(LayoutRow, Option<String>), PlanError> {
    let layout = spec.on_disks(input.disks)?;
    let too_big = || PlanError::Input {
        field: "--disk-size",
        why: "times --disks does not fit in 64 bits".into(),
    };
    let zcap = zfs::capacity(&layout, input.disk_bytes, &input.zfs);
    let array = match zcap {
        Some(c) => c.usable,
        None => layout.usable_bytes(input.disk_bytes).ok_or_else(too_big)?,
    };
    let usable = layout
        .reported_bytes(input.disk_bytes, input.chunk_bytes, &input.over, &input.zfs)
        .ok_or_else(too_big)?;
    let raw = layout.raw_bytes(input.disk_bytes).ok_or_else(too_big)?;
    let pred = predict_layout(&layout, &input.perf, &input.caps);
    let unit = layout.redundancy();
    let (mut rebuild_mbps, rebuild_capped) = input.rebuild.mbps(&unit, &input.perf, &input.caps);
    // A resilver copies allocated data only; a dRAID spreads it over every child.
    let fraction = if spec.level.is_zfs() {
        rebuild_mbps *= zfs::resilver_speedup(&layout);
        input.zfs.fill
    } else {
        1.0
    };
    let risk = risk::assess_with(
        &layout,
        input.disk_bytes,
        fraction,
        &input.risk,
        rebuild_mbps,
    );
    let element = if spec.level.is_btrfs() {
        BTRFS_STRIPE_LEN
    } else {
        input.chunk_bytes
    };
    let has_rebuild = unit.tolerates > 0;
    let note = (has_rebuild && rebuild_capped).then(|| {
        format!(
            "{}: the rebuild moves {} bytes over the bus per byte rebuilt, so --cap-mbps holds it to {:.0} MB/s",
            spec.name, unit.rebuild_traffic, rebuild_mbps
        )
    });
    let row = LayoutRow {
        name: spec.name.clone(),
        level: spec.level.label(),
        groups: spec.groups,
        disks_per_group: layout.per_group,
        active_disks: layout.active,
        spares: spec.spares,
        failures_tolerated: unit.tolerates,
        redundancy_units: unit.units,
        usable_bytes: usable,
        array_bytes: array,
        zfs_list_bytes: zcap.map(|c| c.zfs_list),
        raw_bytes: raw,
        efficiency: usable as f64 / raw as f64,
        stripe_width_bytes: layout
            .data_disks_per_stripe()
            .map(|d| element * u64::from(d)),
        seq_read_mbps: pred.seq_read.value,
        seq_write_mbps: pred.seq_write.value,
        rand_read_iops: pred.rand_read.value,
        rand_write_iops: pred.rand_write.value,
        write_penalty: pred.write_penalty,
        limits: Limits {
            seq_read: pred.seq_read.limit,
            seq_write: pred.seq_write.limit,
            rand_read: pred.rand_read.limit,
            rand_write: pred.rand_write.limit,
        },
        rebuild_mbps: has_rebuild.then_some(rebuild_mbps),
        rebuild_hours: risk.rebuild_hours,
        exposure_hours: risk.exposure_hours,
        unprotected_read_bytes: (u64::from(unit.disks_read_unprotected)
            .saturating_mul(input.disk_bytes) as f64
            * fraction) as u64,
        ure_probability: risk.ure_probability,
        mttdl_hours: Some(risk.mttdl_hours).filter(|h| h.is_finite()),
        data_loss_probability_1y: risk.loss_1y,
        data_loss_probability_mission: risk.loss_mission,
        dominated: false,
        dominated_by: None,
    };
    Ok((row, note))
}

/// `a` is at least `b` within rounding.
fn ge(a: f64, b: f64) -> bool {
    a >= b - 1e-9 * b.abs().max(a.abs())
}

/// `a` is clearly more than `b`.
fn gt(a: f64, b: f64) -> bool {
    !ge(b, a)
}

/// True when `b` is at least as good as `a` on capacity, every speed and both loss
/// probabilities, and strictly better on one of them.
pub fn dominates(b: &LayoutRow, a: &LayoutRow) -> bool {
    // Higher is better for these; for loss probabilities, lower is: compare negated.
    let pairs = [
        (b.usable_bytes as f64, a.usable_bytes as f64),
        (b.seq_read_mbps, a.seq_read_mbps),
        (b.seq_write_mbps, a.seq_write_mbps),
        (b.rand_read_iops, a.rand_read_iops),
        (b.rand_write_iops, a.rand_write_iops),
        (-b.data_loss_probability_1y, -a.data_loss_probability_1y),
        (
            -b.data_loss_probability_mission,
            -a.data_loss_probability_mission,
        ),
    ];
    dominates_on(&pairs)
}

/// Whether the first of each pair of figures (higher is better) dominates the second: within
/// the tolerance of `ge` a figure ties; clearly more is better, clearly less worse.
fn dominates_on(pairs: &[(f64, f64)]) -> bool {
    pareto::dominates(pairs.iter().map(|&(x, y)| {
        Some(if !ge(x, y) {
            std::cmp::Ordering::Less
        } else if gt(x, y) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        })
    }))
}

/// Marks each row another row dominates.
pub fn mark_dominated(rows: &mut [LayoutRow]) {
    let by = pareto::dominated_by(rows, |r| &r.name, dominates);
    for (row, by) in rows.iter_mut().zip(by) {
        row.dominated = by.is_some();
        row.dominated_by = by;
    }
}

/// Computes the plan: validates, evaluates every layout, marks the dominated ones and writes
/// the notes. `disk_source` says where the per-disk figures came from.
pub fn plan(input: &PlanInput, disk_source: &str) -> Result<Plan, PlanError> {
    input.validate()?;
    if input.layouts.is_empty() {
        return Err(PlanError::Input {
            field: "--layouts",
            why: "is empty (give e.g. --layouts raid6,raid6+2spares,raid5+1spare)".into(),
        });
    }
    let mut rows = Vec::new();
    let mut notes = vec![format!("per-disk speed: {disk_source}")];
    for spec in &input.layouts {
        let (row, note) = evaluate(spec, input)?;
        notes.extend(note);
        rows.push(row);
    }
    mark_dominated(&mut rows);
    notes.extend(layout::cache_note(&input.layouts));
    notes.push(
        "sequential figures are one stream of large IOs; random figures assume IOs no larger than the chunk and enough in flight to keep every disk busy".into(),
    );
    let mirrored_btrfs: Vec<&str> = input
        .layouts
        .iter()
        .filter(|l| l.level.is_btrfs() && l.level.copies().is_some())
        .map(|l| l.name.as_str())
        .collect();
    if !mirrored_btrfs.is_empty() {
        notes.push(format!(
            "{}: btrfs picks the copy to read by the reader's thread id, so the random-read figure needs at least as many reader threads as copies; one reader gets a copy's share",
            mirrored_btrfs.join(", ")
        ));
    }
    let zfs_names: Vec<&str> = input
        .layouts
        .iter()
        .filter(|l| l.level.is_zfs())
        .map(|l| l.name.as_str())
        .collect();
    if !zfs_names.is_empty() {
        notes.push(format!(
            "{}: usable is what {} records hold at ashift {} (parity, raidz padding, metaslab rounding and the pool's slop reserve taken out; zfs list shows the 128KiB-record figure in the JSON's zfs_list_bytes); a resilver copies allocated data only, modelled at {:.0}% full (--fill)",
            zfs_names.join(", "),
            crate::units::format_bytes(input.zfs.recordsize),
            input.zfs.ashift,
            input.zfs.fill * 100.0
        ));
    }
    if let Some(worst) = rows
        .iter()
        .filter(|r| r.ure_probability >= 0.5)
        .max_by(|a, b| a.ure_probability.total_cmp(&b.ure_probability))
    {
        let hint = if input.risk.ure_per_bit > risk::URE_ENTERPRISE {
            "try --ure enterprise (1e-15) for enterprise disks, --ure 0 to see the risk without it"
        } else {
            "--ure 0 shows the risk without it"
        };
        notes.push(format!(
            "{}: rebuilding its last redundancy reads {} with nothing left to correct an unreadable sector; at {:e} per bit one is likely ({:.1}%). Datasheet rates are upper bounds: {hint}",
            worst.name,
            crate::units::format_bytes_si(worst.unprotected_read_bytes),
            input.risk.ure_per_bit,
            worst.ure_probability * 100.0
        ));
    }
    Ok(Plan {
        inputs: PlanInputs {
            disks: input.disks,
            disk_bytes: input.disk_bytes,
            chunk_bytes: input.chunk_bytes,
            disk: input.perf,
            disk_source: disk_source.to_string(),
            caps: input.caps,
            afr: input.risk.afr,
            afr_source: if (input.risk.afr - risk::DEFAULT_AFR).abs() < 1e-12 {
                risk::AFR_SOURCE.to_string()
            } else {
                "given (--afr)".to_string()
            },
            ure_per_bit: input.risk.ure_per_bit,
            replace_hours: input.risk.replace_hours,
            rebuild: input.rebuild,
            mission_years: input.risk.mission_years,
        },
        layouts: rows,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn dominance_on_figures_is_what_all_ge_and_one_gt_was() {
        let vals = [
            0.0,
            1.0,
            1.0 + 1e-12,
            2.0,
            -1.0,
            f64::NAN,
            1e9,
            1e9 * (1.0 + 1e-10),
        ];
        for &a in &vals {
            for &b in &vals {
                for &c in &vals {
                    for &d in &vals {
                        let pairs = [(a, b), (c, d)];
                        let old = pairs.iter().all(|&(x, y)| ge(x, y))
                            && pairs.iter().any(|&(x, y)| gt(x, y));
                        assert_eq!(dominates_on(&pairs), old, "{pairs:?}");
                    }
                }
            }
        }
    }

    fn input(layouts: &str) -> PlanInput {
        PlanInput {
            disks: 45,
            disk_bytes: 2_000_000_000_000,
            chunk_bytes: 512 * 1024,
            layouts: parse_layouts(layouts).unwrap(),
            perf: DiskPerf::default(),
            caps: Caps::default(),
            risk: RiskParams::default(),
            rebuild: RebuildSpeed::default(),
            zfs: ZfsParams::default(),
            over: Over::default(),
        }
    }

    #[test]
    fn mirrored_btrfs_gets_the_reader_thread_note_and_md_does_not() {
        let note = |layouts: &str| {
            let p = plan(&input(layouts), "defaults").unwrap();
            p.notes
                .iter()
                .find(|n| n.contains("reader's thread id"))
                .cloned()
        };
        let n = note("raid1,btrfs-raid1,btrfs-raid10,btrfs-raid5").expect("note");
        assert!(n.starts_with("btrfs-raid1, btrfs-raid10: "), "{n}");
        assert_eq!(note("raid1,raid6,btrfs-raid6"), None);
    }

    #[test]
    fn the_45_disk_pod() {
        let p = plan(&input("raid6,raid6+2spares,raid5+1spare,raid5"), "defaults").unwrap();
        let by = |n: &str| p.layouts.iter().find(|r| r.name == n).unwrap();
        let (r6, r6s, r5s, r5) = (
            by("raid6"),
            by("raid6+2spares"),
            by("raid5+1spare"),
            by("raid5"),
        );
        assert!(r6.data_loss_probability_1y < r5.data_loss_probability_1y);
        assert!(r6.data_loss_probability_1y < r5s.data_loss_probability_1y);
        assert!(r6s.data_loss_probability_1y < r6.data_loss_probability_1y);
        assert!(r5s.data_loss_probability_1y < r5.data_loss_probability_1y);
        assert_eq!(r6s.stripe_width_bytes, Some(41 * 512 * 1024));
        assert_eq!(r6.exposure_hours.map(f64::round), Some(79.0));
        assert_eq!(r6s.exposure_hours.map(|h| (h * 10.0).round()), Some(74.0));
        // raid5+1spare holds as much as raid6 and writes randomly faster (penalty 4, not 6),
        // so it is not dominated; the risk column is what speaks against it.
        assert_eq!(r5s.usable_bytes, r6.usable_bytes);
        assert!(r5s.rand_write_iops > r6.rand_write_iops);
        assert!(!r5s.dominated && !r5.dominated && !r6.dominated && !r6s.dominated);
        assert!(r5s.data_loss_probability_1y > 100.0 * r6.data_loss_probability_1y);
    }

    #[test]
    fn btrfs_raid10_dominates_btrfs_raid1() {
        // Same capacity and risk, but raid10 stripes a stream over half the disks.
        let p = plan(&input("btrfs-raid1,btrfs-raid10"), "defaults").unwrap();
        assert_eq!(p.layouts[0].dominated_by.as_deref(), Some("btrfs-raid10"));
        assert!(!p.layouts[1].dominated);
    }

    #[test]
    fn dominance_needs_one_strict_improvement() {
        let p = plan(&input("raid6"), "defaults").unwrap();
        let a = p.layouts[0].clone();
        let mut b = a.clone();
        b.name = "twin".into();
        assert!(!dominates(&b, &a) && !dominates(&a, &b));
        b.seq_read_mbps += 1.0;
        assert!(dominates(&b, &a) && !dominates(&a, &b));
        b.data_loss_probability_1y *= 2.0;
        assert!(!dominates(&b, &a));
    }

    #[test]
    fn impossible_inputs_are_refused() {
        let mut i = input("raid6");
        i.disks = 3;
        assert_eq!(
            plan(&i, "x").unwrap_err().to_string(),
            "layout 'raid6': raid6 needs at least 4 disks per group, got 3"
        );
        let mut i = input("raid6");
        i.risk.afr = 1.5;
        assert!(
            plan(&i, "x")
                .unwrap_err()
                .to_string()
                .starts_with("--afr: 1.5 is not below 1")
        );
        let mut i = input("raid6");
        i.chunk_bytes = 3000;
        assert!(
            plan(&i, "x")
                .unwrap_err()
                .to_string()
                .starts_with("--chunk")
        );
    }
}
