//! A lab's figures at the real disk size. The lab's small disks give ratios and behaviour;
//! what depends on the size is taken at the real size and says how:
//!
//! - usable capacity: what the layout reports built again on sparse files of the real size
//!   here ([`super::measure`]: btrfs, xfs, ext4), else the planner's model of the RAID less
//!   the fixed overheads of md, LVM and the filesystem (`plan::usable`; md and ZFS are built
//!   in the VM only). Never the lab's efficiency scaled: those overheads do not grow with the
//!   disk, and weigh 13-19% on 1 GiB lab disks against hundredths of a percent at 4 TB;
//! - rebuild time: the real disk's bytes at the rebuild rate per member the lab measured, or,
//!   where the lab ran under emulation or timed no rebuild, at half the disks' stated (or
//!   default) speed, as the planner models it;
//! - the window: the rebuild plus the replacement wait when no hot spare is free;
//! - P(data loss) over 1 and 5 years: the planner's Markov model fed by that rebuild.
//!
//! Speeds are never scaled: they are what the lab measured (`emulated` in a VM), with the
//! interval of their trials.

use super::{Assumptions, DiskMeasured, Figure, LayoutFacts, Predicted, Row, Source, Speed};
use crate::plan::layout::{LayoutSpec, Level};
use crate::plan::perf::DEFAULT_DISK;
use crate::plan::risk::{
    DEFAULT_AFR, DEFAULT_REBUILD_FRACTION, DEFAULT_REPLACE_HOURS, URE_DESKTOP,
};
use crate::plan::{Caps, LayoutRow, Over, PlanInput, RebuildSpeed, RiskParams, ZfsParams};
use crate::sample::layout_record::Layer;
use crate::spec::Pattern;
use crate::spec::decide::{DecideSpec, SpeedUnit};
use crate::stack::{BtrfsProfile, FsKind};
use crate::stats::slo::{SloCapacity, SloVerdict};
use crate::units::{format_bytes_si, format_duration};

/// Below this, measured over predicted means something other than the disks limits a layout.
pub const BOTTLENECK_RATIO: f64 = 0.5;

/// Above this, the layout beat its disks: a cache or a working set in RAM.
pub const CACHED_RATIO: f64 = 1.5;

/// mdadm's default chunk, what the planner places stripes with.
const CHUNK: u64 = 512 * 1024;

/// The real disks and the model's inputs: stated values, a measured disk, else the planner's
/// defaults.
pub fn assumptions(spec: &DecideSpec, disk: Option<&DiskMeasured>) -> Assumptions {
    let mut m = disk.map(|d| d.perf.clone()).unwrap_or_default();
    let s = spec.disk;
    m.seq_read_mbps = s.read_mbps.or(m.seq_read_mbps);
    m.seq_write_mbps = s.write_mbps.or(m.seq_write_mbps);
    m.rand_read_iops = s.read_iops.or(m.rand_read_iops);
    m.rand_write_iops = s.write_iops.or(m.rand_write_iops);
    // One stated sequential (or random) figure stands for both directions.
    m.seq_read_mbps = m.seq_read_mbps.or(m.seq_write_mbps);
    m.seq_write_mbps = m.seq_write_mbps.or(m.seq_read_mbps);
    m.rand_read_iops = m.rand_read_iops.or(m.rand_write_iops);
    m.rand_write_iops = m.rand_write_iops.or(m.rand_read_iops);
    let known = m.seq_read_mbps.is_some();
    let perf = m.fill(&DEFAULT_DISK);
    let source = match (disk, s.any()) {
        (Some(d), false) => format!("measured in {}", d.from),
        (Some(d), true) => format!("measured in {}, overridden where stated", d.from),
        (None, true) => "stated".into(),
        (None, false) => {
            "defaults for a 7200 rpm disk (state yours: disk_write_mbps, disk_from)".into()
        }
    };
    Assumptions {
        disk_bytes: spec.disk_bytes,
        disk: perf,
        disk_source: format!(
            "{:.0}/{:.0} MB/s, {:.0}/{:.0} IOPS read/write, {source}",
            perf.seq_read_mbps, perf.seq_write_mbps, perf.rand_read_iops, perf.rand_write_iops
        ),
        disk_known: known,
        afr: spec.risk.afr.unwrap_or(DEFAULT_AFR),
        ure: spec.risk.ure.unwrap_or(URE_DESKTOP),
        replace_hours: spec.risk.replace_hours.unwrap_or(DEFAULT_REPLACE_HOURS),
    }
}

/// How the planner reads a lab layout: its layout name and disk count (spares included);
/// `Ok(None)` for an existing directory (no stack), `Err` saying why for a stack the planner
/// cannot model, which the decision's notes say (`not modelled: <why>`) rather than drop.
/// Every layer is named in the matches, so a new one is placed here where the compiler asks.
pub fn plan_layout(l: &LayoutFacts) -> Result<Option<(LayoutSpec, u32)>, String> {
    let Some(base) = l.stack.first() else {
        return Ok(None);
    };
    let (text, lvl, groups, spares, disks) = disks_layer(l, base)?;
    let mut text = text;
    let mut cache = None;
    for x in &l.stack[1..] {
        match x {
            // An SSD cache in front: the planner knows it is there and models the RAID under it.
            Layer::Cache { kind, .. } => match crate::plan::layout::cache_kind(kind) {
                Some(k) => {
                    text = format!("{text}+{k}");
                    cache = Some(k);
                }
                None => {
                    return Err(format!(
                        "the planner has no model of a {kind} cache (it models {})",
                        crate::plan::layout::CACHE_KINDS.join(", ")
                    ));
                }
            },
            // What sits over the RAID: read by `over_of` for the capacity.
            Layer::Lvm | Layer::Fs { .. } => {}
            Layer::Md { .. }
            | Layer::Btrfs { .. }
            | Layer::Zfs { .. }
            | Layer::Disk
            | Layer::Member { .. } => {
                return Err(format!(
                    "a second disks' layer ({}) over the first",
                    layer_word(x)
                ));
            }
            Layer::Unknown => return Err(UNKNOWN_LAYER.into()),
        }
    }
    let disks = u32::try_from(disks)
        .ok()
        .filter(|d| *d > 0)
        .ok_or("its record has no member count")?;
    let spares = u32::try_from(spares).map_err(|_| "its record's spare count is too large")?;
    let groups = u32::try_from(groups).map_err(|_| "its record's vdev count is too large")?;
    let spec = LayoutSpec::new(text, lvl, groups, spares, cache).map_err(|e| e.to_string())?;
    spec.on_disks(disks).map_err(|e| e.to_string())?;
    Ok(Some((spec, disks)))
}

/// The planner's reading of a record's disks' layer (md, btrfs, ZFS or one disk): the row
/// label, the level, the groups, the spares and the disk count; `Err` saying why for a layer
/// that is not one.
fn disks_layer(l: &LayoutFacts, base: &Layer) -> Result<(String, Level, u64, u64, u64), String> {
    let level = |word: &str| {
        Level::parse(word).ok_or_else(|| format!("the planner has no model of {word}"))
    };
    Ok(match base {
        Layer::Md {
            level: md_level,
            members,
            spares,
            ..
        } => (
            if *spares > 0 {
                format!("{md_level}+{spares}spares")
            } else {
                md_level.clone()
            },
            level(md_level)?,
            1,
            *spares,
            members + spares,
        ),
        Layer::Btrfs { data, members, .. } => {
            let name = format!("btrfs-{data}");
            let lvl = level(&name)?;
            (name, lvl, 1, 0, *members)
        }
        Layer::Zfs {
            vdev, vdevs, width, ..
        } if vdev.starts_with("draid") => (vdev.clone(), level(vdev)?, 1, 0, vdevs * width),
        Layer::Zfs {
            vdev, vdevs, width, ..
        } => (
            format!("{vdevs}x{vdev}"),
            level(vdev)?,
            *vdevs,
            0,
            vdevs * width,
        ),
        // One plain disk is itself under xfs or ext4; under btrfs it is btrfs `single`.
        Layer::Disk if over_of(l).0.fs == FsKind::Btrfs => {
            ("btrfs-single".into(), Level::BtrfsSingle, 1, 0, 1)
        }
        Layer::Disk => ("single".into(), Level::Single, 1, 0, 1),
        Layer::Lvm | Layer::Cache { .. } | Layer::Fs { .. } => {
            return Err(format!(
                "its stack starts with {} where the disks' layer (md, btrfs, zfs or one disk) belongs",
                layer_word(base)
            ));
        }
        Layer::Member { kind, .. } => {
            return Err(format!(
                "its members sit on {kind}, which the planner has no model of (its space and speed are only in the measured figures)"
            ));
        }
        Layer::Unknown => return Err(UNKNOWN_LAYER.into()),
    })
}

/// Why a stack with a layer this iolab does not know is not modelled.
const UNKNOWN_LAYER: &str =
    "a layer of its stack was written by a newer iolab and this one does not know it";

/// A record layer in a word, for the notes.
fn layer_word(l: &Layer) -> &'static str {
    match l {
        Layer::Disk => "a disk",
        Layer::Md { .. } => "md",
        Layer::Btrfs { .. } => "btrfs",
        Layer::Lvm => "lvm",
        Layer::Cache { .. } => "a cache",
        Layer::Fs { .. } => "a filesystem",
        Layer::Zfs { .. } => "zfs",
        Layer::Member { .. } => "a layer under each member",
        Layer::Unknown => "an unknown layer",
    }
}

/// Bytes per member disk: as recorded, else worked back from the capacity the RAID level
/// promised (linear in the disk size).
fn member_bytes(l: &LayoutFacts, model: Option<&(LayoutSpec, u32)>) -> Option<u64> {
    l.member_bytes.or_else(|| {
        let (spec, n) = model?;
        let per_tb = spec.on_disks(*n).ok()?.usable_bytes(1_000_000_000_000)?;
        let expected = l.expected_usable_bytes?;
        (per_tb > 0).then(|| (expected as f64 * 1e12 / per_tb as f64) as u64)
    })
}

/// How fast the layout rebuilds a disk, and how that is known: the lab's measured rate per
/// member (not under emulation), else half the disks' speed.
fn rebuild_speed(l: &LayoutFacts, a: &Assumptions) -> (RebuildSpeed, String, bool) {
    if let Some(r) = &l.rebuild {
        let bytes = r.bytes.unwrap_or(0);
        if !l.emulated() && r.seconds > 0.0 && bytes > 0 {
            let mbps = bytes as f64 / r.seconds / 1e6;
            return (
                RebuildSpeed::Mbps(mbps),
                format!(
                    "{} rebuilt in {}: {:.0} MB/s per member",
                    format_bytes_si(bytes),
                    secs(r.seconds),
                    mbps
                ),
                true,
            );
        }
    }
    let why = if l.emulated() && l.rebuild.is_some() {
        "the lab's rebuild ran on emulated disks; "
    } else if l.rebuild.is_none() {
        "no rebuild timed; "
    } else {
        ""
    };
    let disk = a.disk.seq_read_mbps.min(a.disk.seq_write_mbps);
    (
        RebuildSpeed::Fraction(DEFAULT_REBUILD_FRACTION),
        format!(
            "{why}half the disks' {disk:.0} MB/s ({})",
            if a.disk_known {
                "stated"
            } else {
                "7200 rpm default"
            }
        ),
        false,
    )
}

fn secs(s: f64) -> String {
    format_duration(std::time::Duration::from_secs_f64(s.max(0.0)))
}

/// What sits over the RAID of a lab layout, for the planner's capacity (the filesystem, LVM,
/// the btrfs metadata profile), and md's chunk.
fn over_of(l: &LayoutFacts) -> (Over, u64) {
    let mut over = Over::default();
    let mut chunk = CHUNK;
    for x in &l.stack {
        match x {
            Layer::Fs { fs, .. } => {
                if let Some(k) = FsKind::parse(fs) {
                    over.fs = k;
                }
            }
            Layer::Lvm => over.lvm = true,
            Layer::Btrfs { metadata, .. } => over.btrfs_metadata = BtrfsProfile::parse(metadata),
            Layer::Md { chunk_bytes, .. } => chunk = chunk_bytes.unwrap_or(CHUNK),
            // ZFS is its own filesystem; the rest keep nothing the capacity model counts.
            Layer::Disk
            | Layer::Cache { .. }
            | Layer::Zfs { .. }
            | Layer::Member { .. }
            | Layer::Unknown => {}
        }
    }
    (over, chunk)
}

/// The planner's row for the layout at the real disk size with the rebuild speed chosen.
fn plan_row(
    l: &LayoutFacts,
    model: &(LayoutSpec, u32),
    disk_bytes: u64,
    a: &Assumptions,
    rebuild: RebuildSpeed,
) -> Result<LayoutRow, crate::plan::PlanError> {
    let (over, chunk) = over_of(l);
    let (spec, disks) = model;
    let mut rebuild = rebuild;
    if let RebuildSpeed::Mbps(v) = rebuild {
        // The planner speeds a dRAID's resilver up by its spread; a measured rate has it.
        let layout = spec.on_disks(*disks)?;
        if spec.level.is_zfs() {
            rebuild = RebuildSpeed::Mbps(v / crate::plan::zfs::resilver_speedup(&layout));
        }
    }
    let input = PlanInput {
        disks: *disks,
        disk_bytes,
        chunk_bytes: chunk,
        layouts: vec![spec.clone()],
        perf: a.disk,
        caps: Caps::default(),
        risk: RiskParams {
            afr: a.afr,
            ure_per_bit: a.ure,
            replace_hours: a.replace_hours,
            mission_years: 5.0,
        },
        rebuild,
        zfs: ZfsParams::default(),
        over,
    };
    input.validate()?;
    crate::plan::evaluate(spec, &input).map(|(row, _)| row)
}

/// A row's figures (no needs yet): `workload` is the decision's workload.
pub fn row(
    l: &LayoutFacts,
    workload: Option<&str>,
    a: &Assumptions,
    notes: &mut Vec<String>,
) -> Row {
    let model = plan_layout(l).unwrap_or_else(|why| {
        notes.push(format!("{}: not modelled: {why}", l.name));
        None
    });
    if let Some((m, _)) = model.as_ref().filter(|(m, _)| m.cache.is_some()) {
        notes.push(format!(
            "{}: modelled as the RAID under its SSD cache ({}): capacity, P(loss) and any predicted speed are the RAID's; what the cache does is only in the measured figures",
            l.name, m.name
        ));
    }
    let member = member_bytes(l, model.as_ref());
    let disk = a.disk_bytes.or(member);
    let (speed_rule, rebuild_basis, rebuild_measured) = rebuild_speed(l, a);
    let planned = match (&model, disk) {
        (Some(m), Some(d)) => match plan_row(l, m, d, a, speed_rule) {
            Ok(r) => Some(r),
            Err(e) => {
                notes.push(format!("{}: the planner cannot model it: {e}", l.name));
                None
            }
        },
        _ => None,
    };
    let speed = workload.and_then(|w| speed_of(l, w));
    let modelled = disk.and(planned.as_ref().map(|r| r.usable_bytes));
    let mut r = Row {
        name: l.name.clone(),
        description: l.description.clone(),
        model: model.as_ref().map(|(s, n)| match l.stack.first() {
            Some(Layer::Disk) => "a single disk".to_string(),
            _ => format!("{} on {n} disks", s.name),
        }),
        environment: l.environment.clone(),
        usable: usable(l, member, disk, modelled),
        usable_planner: modelled,
        degraded: workload.and_then(|w| degraded_of(l, w)),
        during_rebuild: workload.and_then(|w| rebuilding_of(l, w)),
        capacity_at_slo: slo_workload(l, workload)
            .and_then(|w| w.slo.as_ref())
            .and_then(|c| slo_figure(c, l)),
        capacity_at_slo_degraded: slo_workload(l, workload)
            .and_then(|w| w.slo_degraded.as_ref())
            .and_then(|c| slo_figure(c, l)),
        capacity_at_slo_rebuilding: slo_workload(l, workload)
            .and_then(|w| w.slo_rebuilding.as_ref())
            .and_then(|c| slo_figure(c, l)),
        rebuild: None,
        window: None,
        loss_1y: None,
        loss_5y: None,
        integrity: l.integrity.clone(),
        power: l.power.clone(),
        power_lost: l.power_lost,
        predicted: None,
        misses: Vec::new(),
        pareto: false,
        dominated_by: None,
        speed,
    };
    if r.usable
        .as_ref()
        .is_some_and(|u| u.source == Source::Modelled)
    {
        notes.extend(model_check(l, model.as_ref(), a));
    }
    if let Some(p) = &planned {
        risk_figures(&mut r, p, a, &rebuild_basis, rebuild_measured);
        r.predicted = predicted(l, &r, p, a);
    }
    r
}

/// Usable bytes at the real size: what the layout reported built again at that size here,
/// else what the lab measured when its disks were that size, else the planner's model of
/// the fixed overheads (`modelled`); the lab's figure scaled only where nothing models it.
fn usable(
    l: &LayoutFacts,
    member: Option<u64>,
    disk: Option<u64>,
    modelled: Option<u64>,
) -> Option<Figure> {
    let figure = |value: u64, source, basis: String| {
        Some(Figure {
            value: value as f64,
            interval: None,
            source,
            basis,
        })
    };
    let at = l
        .usable_at_size
        .filter(|x| disk.is_some_and(|d| d == x.disk_bytes));
    if let Some(x) = at {
        return figure(
            x.usable_bytes,
            Source::Measured,
            format!(
                "{BUILT_AGAIN} on sparse files of {} per disk",
                format_bytes_si(x.disk_bytes)
            ),
        );
    }
    match (l.usable_bytes, member, disk) {
        (Some(u), Some(m), Some(d)) if m == d => {
            return figure(
                u,
                Source::Measured,
                format!("{} measured", format_bytes_si(u)),
            );
        }
        (Some(u), None, _) => {
            return figure(
                u,
                Source::Measured,
                "measured on the lab's disks (their size is not recorded: not scaled)".into(),
            );
        }
        _ => {}
    }
    let lab = match (l.usable_bytes, member) {
        (Some(u), Some(m)) => format!(
            "; the lab measured {} on {} disks",
            format_bytes_si(u),
            format_bytes_si(m)
        ),
        _ => String::new(),
    };
    if let (Some(p), Some(d)) = (modelled.filter(|p| *p > 0), disk) {
        return figure(
            p,
            Source::Modelled,
            format!(
                "the planner's model at {} disks: the RAID less the fixed overheads of md, LVM and the filesystem{lab}",
                format_bytes_si(d)
            ),
        );
    }
    let (u, m, d) = (l.usable_bytes?, member?, disk?);
    let factor = d as f64 / m as f64;
    figure(
        (u as f64 * factor) as u64,
        Source::Scaled,
        format!(
            "{} measured on {} disks, x{factor:.0} (no model of this stack)",
            format_bytes_si(u),
            format_bytes_si(m)
        ),
    )
}

/// How the basis of a usable figure built again at the real size begins.
pub const BUILT_AGAIN: &str = "built again here";

/// The planner's model at the lab's own disk size set against what the lab measured there:
/// a note when they are more than 1% apart, since the model's figure at the real size may
/// then be off too.
fn model_check(
    l: &LayoutFacts,
    model: Option<&(LayoutSpec, u32)>,
    a: &Assumptions,
) -> Option<String> {
    let (u, m) = (l.usable_bytes?, l.member_bytes?);
    let row = plan_row(
        l,
        model?,
        m,
        a,
        RebuildSpeed::Fraction(DEFAULT_REBUILD_FRACTION),
    )
    .ok();
    let p = row?.usable_bytes;
    let off = p as f64 / u as f64 - 1.0;
    (u > 0 && off.abs() > 0.01).then(|| {
        format!(
            "{}: the planner's model gives {} on the lab's {} disks where the lab measured {} ({:+.1}%): its usable at the real size may be off as much",
            l.name,
            format_bytes_si(p),
            format_bytes_si(m),
            format_bytes_si(u),
            off * 100.0
        )
    })
}

fn measured_source(l: &LayoutFacts) -> Source {
    if l.emulated() {
        Source::Emulated
    } else {
        Source::Measured
    }
}

/// The headline of workload `w`, with its interval.
fn speed_of(l: &LayoutFacts, w: &str) -> Option<Speed> {
    let wf = l.workload(w)?;
    let s = wf.healthy.clone()?;
    Some(Speed {
        workload: wf.name.clone(),
        metric: wf.metric.clone(),
        unit: wf.unit.label(),
        figure: Figure {
            value: s.median,
            interval: s.ci.map(|c| (c.lo, c.hi)),
            source: measured_source(l),
            basis: format!(
                "median of {} trial{} of {}{}",
                s.n,
                if s.n == 1 { "" } else { "s" },
                wf.metric,
                if s.high_cv() {
                    format!(", trials {:.0}% apart", s.cv * 100.0)
                } else {
                    String::new()
                }
            ),
        },
        summary: s,
    })
}

/// Degraded over healthy on workload `w`, with the ratio's interval.
fn degraded_of(l: &LayoutFacts, w: &str) -> Option<Figure> {
    over_healthy(l, w, |wf| wf.degraded.as_ref(), "with a member failed")
}

/// During the rebuild over healthy on workload `w`, with the ratio's interval.
fn rebuilding_of(l: &LayoutFacts, w: &str) -> Option<Figure> {
    over_healthy(l, w, |wf| wf.rebuilding.as_ref(), "during the rebuild")
}

/// A phase's headline on workload `w` (picked by `phase`) over the healthy one, measured.
fn over_healthy(
    l: &LayoutFacts,
    w: &str,
    phase: fn(&super::WorkloadFacts) -> Option<&crate::stats::Summary>,
    when: &str,
) -> Option<Figure> {
    let wf = l.workload(w)?;
    let r = crate::stats::ratio(phase(wf)?, wf.healthy.as_ref()?)?;
    Some(Figure {
        value: r.value,
        interval: r.ci.map(|c| (c.lo, c.hi)),
        source: measured_source(l),
        basis: format!("{} {when} over healthy", wf.metric),
    })
}

/// The workload whose capacity at the latency target is shown: the decision's when it
/// searched one, else the first that did.
pub fn slo_workload<'a>(
    l: &'a LayoutFacts,
    workload: Option<&str>,
) -> Option<&'a super::WorkloadFacts> {
    workload
        .and_then(|w| l.workload(w))
        .filter(|w| w.slo.is_some())
        .or_else(|| l.workloads.iter().find(|w| w.slo.is_some()))
}

fn slo_figure(c: &SloCapacity, l: &LayoutFacts) -> Option<Figure> {
    let (value, basis) = match c.verdict {
        SloVerdict::Capacity => (c.capacity?, format!("highest rate meeting {}", c.targets)),
        SloVerdict::MetAtPeak => (
            c.capacity?,
            format!(
                "{} met up to the closed-loop peak: at least this",
                c.targets
            ),
        ),
        SloVerdict::AtLeast => (
            c.capacity?,
            format!(
                "{} met at every rate tried, the peak not reached: at least this",
                c.targets
            ),
        ),
        SloVerdict::NoneMet => (0.0, format!("no rate tried met {}", c.targets)),
        SloVerdict::NoTrials => return None,
    };
    Some(Figure {
        value,
        interval: c.interval,
        source: measured_source(l),
        basis,
    })
}

/// Rebuild, window and loss figures from the planner's row.
fn risk_figures(r: &mut Row, p: &LayoutRow, a: &Assumptions, basis: &str, measured: bool) {
    let source = if measured {
        Source::Scaled
    } else {
        Source::Modelled
    };
    if let Some(h) = p.rebuild_hours {
        r.rebuild = Some(Figure {
            value: h * 3600.0,
            interval: None,
            source,
            basis: basis.to_string(),
        });
    }
    if let (Some(e), Some(h)) = (p.exposure_hours, p.rebuild_hours) {
        let wait = e - h;
        r.window = Some(Figure {
            value: e * 3600.0,
            interval: None,
            source,
            basis: if wait > 0.0 {
                format!(
                    "rebuild + {} replacement wait (no hot spare)",
                    secs(wait * 3600.0)
                )
            } else {
                "rebuild only: a hot spare starts it at once".into()
            },
        });
    }
    let model = format!(
        "planner's model: AFR {:.2}%, URE {:e}/bit, {}",
        a.afr * 100.0,
        a.ure,
        r.window.as_ref().map_or_else(
            || "no redundancy: any disk failing loses data".into(),
            |w| format!("window {}", secs(w.value))
        )
    );
    for (slot, v) in [
        (&mut r.loss_1y, p.data_loss_probability_1y),
        (&mut r.loss_5y, p.data_loss_probability_mission),
    ] {
        *slot = Some(Figure {
            value: v,
            interval: None,
            source: Source::Modelled,
            basis: model.clone(),
        });
    }
}

/// The planner's speed for the row's workload from the disks' speed, against the measured
/// one; only where the disks' speed is known and the lab's speeds are not emulated.
fn predicted(l: &LayoutFacts, r: &Row, p: &LayoutRow, a: &Assumptions) -> Option<Predicted> {
    if !a.disk_known || l.emulated() {
        return None;
    }
    let s = r.speed.as_ref()?;
    let wf = l.workload(&s.workload)?;
    let (pred, unit) = match wf.pattern? {
        Pattern::Read => (p.seq_read_mbps, SpeedUnit::MBps),
        Pattern::Write => (p.seq_write_mbps, SpeedUnit::MBps),
        Pattern::RandRead => (p.rand_read_iops, SpeedUnit::Iops),
        Pattern::RandWrite => (p.rand_write_iops, SpeedUnit::Iops),
        Pattern::RandRw | Pattern::Rw => return None,
    };
    if unit != wf.unit || pred <= 0.0 {
        return None;
    }
    let ratio = s.figure.value / pred;
    let note = if ratio < BOTTLENECK_RATIO {
        Some(format!(
            "measured {ratio:.2}x of the {} {} the disks' speed predicts: something other than the disks (CPU, controller, bus, parity) limits this layout",
            crate::units::format_rate(pred),
            unit.label()
        ))
    } else if ratio > CACHED_RATIO {
        Some(format!(
            "measured {ratio:.2}x the {} {} the disks' speed predicts: a cache or a working set in RAM carries it",
            crate::units::format_rate(pred),
            unit.label()
        ))
    } else {
        None
    };
    Some(Predicted {
        predicted: pred,
        ratio,
        note,
    })
}

/// What the reader must know about where the figures come from.
pub fn notes(rows: &[Row], a: &Assumptions, notes: &mut Vec<String>) {
    let names = |f: &dyn Fn(&Row) -> bool| -> Vec<&str> {
        rows.iter()
            .filter(|r| f(r))
            .map(|r| r.name.as_str())
            .collect()
    };
    let emulated = names(&|r| r.environment.is_some());
    if !emulated.is_empty() {
        notes.push(format!(
            "{}: built in a VM: speeds are emulated (compare them with each other only), rebuild times are modelled from the disks' speed",
            emulated.join(", ")
        ));
    }
    let modelled = names(&|r| {
        r.rebuild
            .as_ref()
            .is_some_and(|f| f.source == Source::Modelled)
    });
    if !modelled.is_empty() && !a.disk_known {
        notes.push(format!(
            "{}: rebuild time modelled from a 7200 rpm disk's 150 MB/s: state the real disks' speed (disk_write_mbps, --disk-from)",
            modelled.join(", ")
        ));
    }
    if let Some(d) = a.disk_bytes {
        let again = names(&|r| {
            r.usable
                .as_ref()
                .is_some_and(|u| u.basis.starts_with(BUILT_AGAIN))
        });
        let modelled = names(&|r| {
            r.usable
                .as_ref()
                .is_some_and(|u| u.source == Source::Modelled)
        });
        let mut parts = Vec::new();
        if !again.is_empty() {
            parts.push(format!(
                "{} built again here on sparse files of {} per disk (what the filesystem reports there)",
                again.join(", "),
                format_bytes_si(d)
            ));
        }
        if !modelled.is_empty() {
            parts.push(format!(
                "{} the planner's model of the RAID less md's, LVM's and the filesystem's fixed overheads (docs/plan-model.md)",
                modelled.join(", ")
            ));
        }
        if !parts.is_empty() {
            notes.push(format!(
                "usable at {}: {}; never the lab's efficiency scaled up, since those overheads do not grow with the disk",
                format_bytes_si(d),
                parts.join("; ")
            ));
        }
    }
    if rows.iter().any(|r| r.loss_5y.is_some()) {
        notes.push(format!(
            "P(loss): the planner's model (docs/plan-model.md), AFR {:.2}%, URE {:e}/bit, {} to replace a disk without a hot spare; a model's output, without an interval",
            a.afr * 100.0,
            a.ure,
            secs(a.replace_hours * 3600.0)
        ));
    }
    for r in rows {
        if let Some(n) = r.predicted.as_ref().and_then(|p| p.note.as_ref()) {
            notes.push(format!("{}: {n}", r.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::tests::needs;
    use crate::decide::{LabFacts, decide};
    use crate::plan::layout::Level;

    fn fs(name: &str) -> Layer {
        Layer::Fs {
            fs: name.into(),
            mkfs_options: vec![],
            mount_options: vec![],
            read_ahead: None,
        }
    }

    fn md5() -> Layer {
        Layer::Md {
            level: "raid5".into(),
            members: 3,
            spares: 0,
            chunk_bytes: None,
            bitmap: None,
            bitmap_chunk_bytes: None,
            consistency_policy: None,
            stripe_cache_size: None,
            group_thread_cnt: None,
        }
    }

    fn facts(name: &str, stack: Vec<Layer>) -> LayoutFacts {
        LayoutFacts {
            name: name.into(),
            description: name.into(),
            stack,
            environment: None,
            member_bytes: Some(1_000_000_000),
            usable_bytes: Some(900_000_000),
            expected_usable_bytes: None,
            usable_at_size: None,
            workloads: vec![],
            rebuild: None,
            integrity: Some("verified".into()),
            power: None,
            power_lost: false,
            losses: None,
            faults: vec![],
        }
    }

    /// A record's stack reaches the planner as the layout a user would type for it, built from
    /// the record's parts (no name written out and parsed back): level, groups, spares and
    /// cache all equal the typed name's, and so do the disks.
    #[test]
    fn a_records_stack_is_the_planners_layout_of_the_same_name() {
        let md = |n: u64| {
            let mut l = md5();
            if let Layer::Md { spares, .. } = &mut l {
                *spares = n;
            }
            l
        };
        let bcache = Layer::Cache {
            kind: "bcache".into(),
            mode: "writeback".into(),
            size_bytes: None,
            disks: 1,
        };
        let zfs = |vdev: &str, vdevs, width| Layer::Zfs {
            vdev: vdev.into(),
            vdevs,
            width,
            describe: String::new(),
        };
        let cases = [
            (vec![md(2), bcache, fs("xfs")], "raid5+2spares+bcache", 5),
            (vec![zfs("raidz2", 2, 6), fs("zfs")], "2xraidz2", 12),
            (
                vec![zfs("draid2:4d:1s", 1, 11), fs("zfs")],
                "draid2:4d:1s",
                11,
            ),
            (
                vec![
                    Layer::Btrfs {
                        data: "raid1".into(),
                        metadata: "raid1".into(),
                        members: 4,
                    },
                    fs("btrfs"),
                ],
                "btrfs-raid1",
                4,
            ),
        ];
        for (stack, name, disks) in cases {
            let (got, n) = plan_layout(&facts("x", stack)).unwrap().unwrap();
            assert_eq!(got, LayoutSpec::parse(name).unwrap(), "{name}");
            assert_eq!(n, disks, "{name}");
        }
    }

    /// One disk under xfs or ext4 is the planner's plain `single`, its capacity that
    /// filesystem's on the disk (less LVM's when a volume is between); under btrfs it is
    /// btrfs `single`.
    #[test]
    fn a_single_disk_is_modelled_as_itself() {
        let level = |stack| {
            plan_layout(&facts("one", stack))
                .unwrap()
                .map(|(s, n)| (s.level, n))
        };
        assert_eq!(
            level(vec![Layer::Disk, fs("xfs")]),
            Some((Level::Single, 1))
        );
        assert_eq!(
            level(vec![Layer::Disk, fs("ext4")]),
            Some((Level::Single, 1))
        );
        assert_eq!(
            level(vec![Layer::Disk, fs("btrfs")]),
            Some((Level::BtrfsSingle, 1))
        );
        let tb8 = 8_000_000_000_000;
        let lab = LabFacts {
            lab_id: "one".into(),
            name: "one".into(),
            layouts: vec![
                facts("xfs", vec![Layer::Disk, fs("xfs")]),
                facts("lvm-ext4", vec![Layer::Disk, Layer::Lvm, fs("ext4")]),
            ],
            decide: None,
        };
        let d = decide(&lab, &needs(None, None), None).unwrap();
        let usable = |n: &str| {
            let r = d.rows.iter().find(|r| r.name == n).unwrap();
            assert_eq!(r.model.as_deref(), Some("a single disk"));
            r.usable_planner
        };
        use crate::plan::usable::{ext4_size, lvm_volume, xfs_size};
        assert_eq!(usable("xfs"), Some(xfs_size(tb8)));
        assert_eq!(
            usable("lvm-ext4"),
            Some(ext4_size(lvm_volume(tb8, 0))),
            "{:?}",
            d.notes
        );
        assert!(d.rows.iter().all(|r| r.loss_5y.is_some()), "{:?}", d.rows);
    }

    /// A stack the planner cannot model is named in the decision's notes with why, and its
    /// measured figures stay: a cache kind the planner does not know, a layer a newer iolab
    /// wrote.
    #[test]
    fn decide_names_a_layout_it_cannot_model() {
        let cache = Layer::Cache {
            kind: "flashcache".into(),
            mode: "writeback".into(),
            size_bytes: None,
            disks: 1,
        };
        let lab = LabFacts {
            lab_id: "x".into(),
            name: "x".into(),
            layouts: vec![
                facts("md5", vec![md5(), fs("xfs")]),
                facts("md5-wc", vec![md5(), cache, fs("xfs")]),
                facts("md5-new", vec![md5(), Layer::Unknown, fs("xfs")]),
                facts("bare-fs", vec![fs("xfs")]),
            ],
            decide: None,
        };
        let d = decide(&lab, &needs(None, None), None).unwrap();
        let note = |name: &str| {
            d.notes
                .iter()
                .find(|n| n.starts_with(&format!("{name}: not modelled: ")))
                .cloned()
                .unwrap_or_else(|| panic!("no note for {name}: {:?}", d.notes))
        };
        assert!(
            note("md5-wc")
                .contains("the planner has no model of a flashcache cache (it models lvmcache, "),
            "{:?}",
            d.notes
        );
        assert!(note("md5-new").contains("newer iolab"));
        assert!(note("bare-fs").contains("starts with a filesystem"));
        assert!(
            !d.notes.iter().any(|n| n.starts_with("md5: not modelled")),
            "{:?}",
            d.notes
        );
        for name in ["md5-wc", "md5-new", "bare-fs"] {
            let r = d.rows.iter().find(|r| r.name == name).unwrap();
            assert_eq!((r.model.as_ref(), r.loss_5y.as_ref()), (None, None));
            assert!(r.usable.is_some(), "{name}: the measured figure stays");
        }
    }
}
