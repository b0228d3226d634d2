//! `iolab plan`: reads the flags, builds a [`PlanInput`], prints the table.
//!
//! Numeric flags are taken as text and read here, so a bad value (a negative size, an AFR of
//! 1.5) gets one line naming the flag and the fix instead of a usage dump.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::{Context, usage};
use crate::output::Format;
use crate::plan::perf::DEFAULT_DISK;
use crate::plan::risk::{DEFAULT_AFR, URE_DESKTOP, URE_ENTERPRISE};
use crate::plan::{
    Caps, DiskPerf, MeasuredPerf, PlanInput, RebuildSpeed, RiskParams, ZfsParams, parse_layouts,
};
use crate::report::text::plan as render;
use crate::sample::RunRecord;

/// The formats `iolab plan` renders.
const FORMATS: &[Format] = &[Format::Text, Format::Md, Format::Json];

/// Capacity, predicted speed and data-loss risk of candidate layouts, in one table.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example (the 45-disk pod of xfs-raid-45-spindles.txt):\n  \
iolab plan --disks 45 --disk-size 2TB --layouts raid6,raid6+2spares,raid5+1spare,raid5\n\n\
Layouts: raid0 raid1 raid5 raid6 raid10, single (one plain disk, --disks 1) and btrfs-single btrfs-raid0 btrfs-raid1 \
btrfs-raid1c3 btrfs-raid1c4 btrfs-raid10 btrfs-raid5 btrfs-raid6, and ZFS mirror raidz1 raidz2 \
raidz3 draidP:Dd:Ss (6xmirror = six 2-way mirrors, 2xraidz2 = two raidz2 vdevs; --recordsize, \
--ashift and --fill shape their capacity and resilver); add +Nspares for hot spares \
(taken out of --disks) and prefix Nx for N groups striped together (3xraid6 = 3 raid6 arrays of \
15 on 45 disks).\n\n\
Default AFR: Backblaze Drive Stats for 2024 (published February 2025), 1.57% annualized \
failure rate over about 300,000 data drives; set your own with --afr. The model, its formulas \
and assumptions are in docs/plan-model.md."
)]
pub struct PlanArgs {
    /// The flags, boxed so the subcommand enum stays small.
    #[command(flatten)]
    pub opts: Box<PlanOptions>,
}

/// The flags of `iolab plan`.
#[derive(clap::Args, Debug)]
pub struct PlanOptions {
    /// Disks in the box, hot spares included.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub disks: String,

    /// Size of one disk, decimal as on the label (2TB = 2*10^12 bytes).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub disk_size: String,

    /// Candidate layouts, comma-separated: raid6,raid6+2spares,raid5+1spare,3xraid6,btrfs-raid1.
    #[arg(long, value_name = "LIST")]
    pub layouts: String,

    /// mdadm chunk size (btrfs always stripes in 64KiB elements).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "512k",
        allow_hyphen_values = true
    )]
    pub chunk: String,

    /// md layouts: the filesystem made on the array, xfs or ext4; its log, journal and inode
    /// tables come out of the usable space (btrfs and ZFS layouts are their own filesystem).
    #[arg(long, value_name = "FS", default_value = "xfs")]
    pub fs: String,

    /// ZFS layouts: the dataset's recordsize (capacity counts parity and raidz padding per
    /// record of this size).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "128k",
        allow_hyphen_values = true
    )]
    pub recordsize: String,

    /// ZFS layouts: the pool's ashift (sectors of 2^ashift bytes; 12 for 4k-sector disks).
    #[arg(
        long,
        value_name = "N",
        default_value = "12",
        allow_hyphen_values = true
    )]
    pub ashift: String,

    /// ZFS layouts: how full the pool is when a disk fails, as a fraction (0.5) or a
    /// percentage (50%): a resilver copies allocated data only.
    #[arg(
        long,
        value_name = "FILL",
        default_value = "50%",
        allow_hyphen_values = true
    )]
    pub fill: String,

    /// Take per-disk speeds from a stored run of one disk (id, prefix, label, `last`, `last~N`: e.g. an
    /// `iolab run /dev/sdb` or `iolab disks --bench`) or from a JSON run record file (`iolab run
    /// --json`): sequential MB/s from read/write workloads, IOPS from randread/randwrite ones.
    #[arg(long, value_name = "RUN", conflicts_with = "from_lab")]
    pub disk_from: Option<PathBuf>,

    /// Calibrate from a stored lab (id, prefix, `last` or `last~N`): per-disk speeds from the
    /// lab's single-disk layout, the rebuild rate per member from the median of its measured
    /// rebuilds. The `--disk-*` and `--rebuild-*` flags win over both.
    #[arg(long, value_name = "LAB")]
    pub from_lab: Option<String>,

    /// Per-disk sequential read, MB/s [default: 150, a 7200 rpm disk].
    #[arg(long, value_name = "MBPS", allow_hyphen_values = true)]
    pub disk_read_mbps: Option<String>,

    /// Per-disk sequential write, MB/s [default: 150].
    #[arg(long, value_name = "MBPS", allow_hyphen_values = true)]
    pub disk_write_mbps: Option<String>,

    /// Per-disk random read IOPS [default: 120].
    #[arg(long, value_name = "IOPS", allow_hyphen_values = true)]
    pub disk_read_iops: Option<String>,

    /// Per-disk random write IOPS [default: 120].
    #[arg(long, value_name = "IOPS", allow_hyphen_values = true)]
    pub disk_write_iops: Option<String>,

    /// Controller/bus cap on all disks together, MB/s.
    #[arg(long, value_name = "MBPS", allow_hyphen_values = true)]
    pub cap_mbps: Option<String>,

    /// Controller/bus cap on all disks together, IOs per second.
    #[arg(long, value_name = "IOPS", allow_hyphen_values = true)]
    pub cap_iops: Option<String>,

    /// Annualized failure rate of one disk, as a fraction (0.0157) or a percentage (1.57%).
    /// Default 1.57%: Backblaze Drive Stats for 2024, the annualized failure rate over about
    /// 300,000 data drives. Use your fleet's or your model's figure when you have one.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub afr: Option<String>,

    /// Unrecoverable read errors per bit read: a number, `desktop` (1e-14, the default) or
    /// `enterprise` (1e-15); 0 leaves unreadable sectors out of the model.
    #[arg(
        long,
        value_name = "RATE",
        default_value = "desktop",
        allow_hyphen_values = true
    )]
    pub ure: String,

    /// Time from a failure until a replacement disk is in, when no hot spare is free
    /// (the 72 hours of raid6-vs-raid5-bonnie.txt). Needs a unit: 72h, 3d, 30m.
    #[arg(
        long,
        value_name = "TIME",
        default_value = "72h",
        allow_hyphen_values = true
    )]
    pub replace_time: String,

    /// Rebuild speed, MB/s written to the new disk (measure it with `iolab lab`).
    #[arg(
        long,
        value_name = "MBPS",
        allow_hyphen_values = true,
        conflicts_with = "rebuild_fraction"
    )]
    pub rebuild_mbps: Option<String>,

    /// Without --rebuild-mbps: the share of a disk's sequential speed a rebuild gets [default: 0.5].
    #[arg(long, value_name = "FRACTION", allow_hyphen_values = true)]
    pub rebuild_fraction: Option<String>,

    /// Mission time for the second loss probability, years.
    #[arg(
        long,
        value_name = "YEARS",
        default_value = "5",
        allow_hyphen_values = true
    )]
    pub years: String,

    /// Output format: aligned columns, a Markdown table, or one JSON object with a `layouts`
    /// array.
    #[arg(long, default_value = "text", value_parser = Format::only(FORMATS))]
    pub format: Format,

    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

fn number(flag: &str, text: &str) -> anyhow::Result<f64> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| usage(format!("{flag}: '{text}' is not a number")))?;
    if !v.is_finite() {
        return Err(usage(format!("{flag}: '{text}' is not a finite number")));
    }
    Ok(v)
}

fn positive(flag: &str, text: &str) -> anyhow::Result<f64> {
    let v = number(flag, text)?;
    if v <= 0.0 {
        return Err(usage(format!("{flag}: {text} must be above 0")));
    }
    Ok(v)
}

fn size(flag: &str, text: &str) -> anyhow::Result<u64> {
    if text.trim_start().starts_with('-') {
        return Err(usage(format!(
            "{flag}: '{text}' is negative; give a size like 2TB"
        )));
    }
    crate::units::parse_bytes(text).map_err(|e| usage(format!("{flag}: {e}")))
}

/// Reads `0.0157`, `1.57%`.
fn parse_afr(text: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    match t.strip_suffix('%') {
        Some(p) => Ok(number("--afr", p)? / 100.0),
        None => number("--afr", t),
    }
}

fn parse_ure(text: &str) -> anyhow::Result<f64> {
    match text.trim().to_ascii_lowercase().as_str() {
        "desktop" | "consumer" => Ok(URE_DESKTOP),
        "enterprise" => Ok(URE_ENTERPRISE),
        t => number("--ure", t),
    }
}

fn parse_hours(flag: &str, text: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(usage(format!("{flag}: '{text}' is negative")));
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(usage(format!(
            "{flag}: '{text}' needs a unit, e.g. {t}h or {t}d"
        )));
    }
    let d = crate::units::parse_duration(t).map_err(|e| usage(format!("{flag}: {e}")))?;
    Ok(d.as_secs_f64() / 3600.0)
}

/// Reads a run record: one object, or an array holding exactly one.
pub(super) fn read_run(path: &Path, ctx: &Context) -> anyhow::Result<RunRecord> {
    let looks_like_file =
        path.components().count() > 1 || path.extension().is_some_and(|e| e == "json");
    if !path.is_file() && !looks_like_file {
        // Not a file: a run in the results store.
        let reference = path.to_string_lossy().into_owned();
        let store = super::db::open_existing(ctx, &reference)?;
        return super::db::load_ref(&store, &reference);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("--disk-from {}: {e}", path.display())))?;
    if let Ok(r) = serde_json::from_str::<RunRecord>(&text) {
        return Ok(r);
    }
    match serde_json::from_str::<Vec<RunRecord>>(&text) {
        Ok(mut v) if v.len() == 1 => Ok(v.remove(0)),
        Ok(v) => Err(usage(format!(
            "--disk-from {}: holds {} runs; give a file with the run of one disk",
            path.display(),
            v.len()
        ))),
        Err(_) => {
            let e = serde_json::from_str::<RunRecord>(&text)
                .err()
                .map_or_else(String::new, |e| e.to_string());
            Err(usage(format!(
                "--disk-from {}: not a JSON run record ({e}); write one with `iolab run --json`",
                path.display()
            )))
        }
    }
}

/// Per-disk speed from `--disk-from` and the `--disk-*` flags (flags win), and a sentence
/// saying where it came from.
fn disk_perf(
    a: &PlanOptions,
    ctx: &Context,
    lab: Option<&LabCalibration>,
) -> anyhow::Result<(DiskPerf, String)> {
    let given = [
        ("--disk-read-mbps", &a.disk_read_mbps),
        ("--disk-write-mbps", &a.disk_write_mbps),
        ("--disk-read-iops", &a.disk_read_iops),
        ("--disk-write-iops", &a.disk_write_iops),
    ];
    let mut vals = [None; 4];
    for (slot, (flag, text)) in vals.iter_mut().zip(given) {
        if let Some(t) = text {
            *slot = Some(positive(flag, t)?);
        }
    }
    let flags: Vec<&str> = given
        .iter()
        .zip(vals)
        .filter(|(_, v)| v.is_some())
        .map(|((f, _), _)| *f)
        .collect();
    let mut m = MeasuredPerf::default();
    let mut source = String::new();
    if let Some(lab) = lab {
        m = lab.perf.clone();
        source.clone_from(&lab.perf_from);
    }
    if let Some(path) = &a.disk_from {
        let run = read_run(path, ctx)?;
        m = MeasuredPerf::from_run(&run)
            .map_err(|e| usage(format!("--disk-from {}: {e}", path.display())))?;
        source = format!("measured in {} ({})", path.display(), m.sources.join(", "));
    }
    let [r, w, ri, wi] = vals;
    m.seq_read_mbps = r.or(m.seq_read_mbps);
    m.seq_write_mbps = w.or(m.seq_write_mbps);
    m.rand_read_iops = ri.or(m.rand_read_iops);
    m.rand_write_iops = wi.or(m.rand_write_iops);
    let perf = m.fill(&DEFAULT_DISK);
    let figures = format!(
        "{:.0}/{:.0} MB/s, {:.0}/{:.0} IOPS read/write",
        perf.seq_read_mbps, perf.seq_write_mbps, perf.rand_read_iops, perf.rand_write_iops
    );
    if a.disk_from.is_some() || lab.is_some() {
        let missing = m.missing();
        if !missing.is_empty() {
            let from = match (&a.disk_from, lab) {
                (Some(path), _) => format!("--disk-from {}: the run", path.display()),
                (None, Some(l)) => format!("--from-lab {}: its single-disk layout", l.lab),
                (None, None) => String::new(),
            };
            return Err(usage(format!(
                "{from} has no {}; give the missing figures with those flags",
                missing.join(", ")
            )));
        }
        if !flags.is_empty() {
            source.push_str(&format!(", overridden by {}", flags.join(" ")));
        }
        return Ok((perf, format!("{figures}, {source}")));
    }
    let source = if flags.len() == 4 {
        "given".to_string()
    } else if flags.is_empty() {
        "defaults for a 7200 rpm disk; measure yours and pass --disk-from RUN.json or --disk-read-mbps etc.".to_string()
    } else {
        format!(
            "{} given, the rest defaults for a 7200 rpm disk",
            flags.join(" ")
        )
    };
    Ok((perf, format!("{figures}, {source}")))
}

fn build_input(a: &PlanOptions, ctx: &Context) -> anyhow::Result<(PlanInput, String)> {
    let disks_text = a.disks.trim();
    let disks: u32 = disks_text.parse().map_err(|_| {
        usage(format!(
            "--disks: '{}' is not a whole number of disks (e.g. --disks 45)",
            a.disks
        ))
    })?;
    let disk_bytes = size("--disk-size", &a.disk_size)?;
    let chunk_bytes = size("--chunk", &a.chunk)?;
    let layouts = parse_layouts(&a.layouts).map_err(|e| usage(e.to_string()))?;
    let lab = a
        .from_lab
        .as_deref()
        .map(|l| lab_calibration(ctx, l))
        .transpose()?;
    let (perf, mut source) = disk_perf(a, ctx, lab.as_ref())?;
    let caps = Caps {
        mbps: a
            .cap_mbps
            .as_deref()
            .map(|t| number("--cap-mbps", t))
            .transpose()?,
        iops: a
            .cap_iops
            .as_deref()
            .map(|t| number("--cap-iops", t))
            .transpose()?,
    };
    let risk = RiskParams {
        afr: a.afr.as_deref().map_or(Ok(DEFAULT_AFR), parse_afr)?,
        ure_per_bit: parse_ure(&a.ure)?,
        replace_hours: parse_hours("--replace-time", &a.replace_time)?,
        mission_years: number("--years", &a.years)?,
    };
    let measured_rebuild = lab.as_ref().and_then(|l| l.rebuild_mbps.clone());
    let rebuild = match (&a.rebuild_mbps, &a.rebuild_fraction, measured_rebuild) {
        (Some(t), _, _) => RebuildSpeed::Mbps(number("--rebuild-mbps", t)?),
        (None, Some(t), _) => RebuildSpeed::Fraction(number("--rebuild-fraction", t)?),
        (None, None, Some((mbps, why))) => {
            source.push_str(&format!("; rebuild {mbps:.0} MB/s per member, {why}"));
            RebuildSpeed::Mbps(mbps)
        }
        (None, None, None) => {
            if let Some(why) = lab.as_ref().and_then(|l| l.no_rebuild.as_deref()) {
                source.push_str(&format!("; rebuild rate not from the lab: {why}"));
            }
            RebuildSpeed::default()
        }
    };
    let zfs = ZfsParams {
        recordsize: size("--recordsize", &a.recordsize)?,
        ashift: a.ashift.trim().parse().map_err(|_| {
            usage(format!(
                "--ashift: '{}' is not a whole number (e.g. --ashift 12)",
                a.ashift
            ))
        })?,
        fill: match a.fill.trim().strip_suffix('%') {
            Some(p) => number("--fill", p)? / 100.0,
            None => number("--fill", a.fill.trim())?,
        },
    };
    let Some(fs @ (crate::stack::FsKind::Xfs | crate::stack::FsKind::Ext4)) =
        crate::stack::FsKind::parse(&a.fs)
    else {
        return Err(usage(format!(
            "--fs: '{}' is not a filesystem made on an md array (write xfs or ext4)",
            a.fs
        )));
    };
    Ok((
        PlanInput {
            disks,
            disk_bytes,
            chunk_bytes,
            layouts,
            perf,
            caps,
            risk,
            rebuild,
            zfs,
            over: crate::plan::Over {
                fs,
                ..crate::plan::Over::default()
            },
        },
        source,
    ))
}

/// What `--from-lab` takes from a stored lab.
struct LabCalibration {
    /// The lab id, as resolved.
    lab: String,
    /// Per-disk figures of its single-disk layout's healthy run.
    perf: MeasuredPerf,
    /// Where they came from, for the plan's source sentence.
    perf_from: String,
    /// The median rebuild rate per member over its measured rebuilds, MB/s, with where it came
    /// from.
    rebuild_mbps: Option<(f64, String)>,
    /// Why no rebuild rate was taken (no rebuild measured, or only under emulation).
    no_rebuild: Option<String>,
}

/// Whether a stored layout is one plain disk: its bottom layer ([`LayoutRecord::raid`]) is
/// the disk itself, not md, btrfs profiles or zfs.
///
/// [`LayoutRecord::raid`]: crate::sample::LayoutRecord::raid
fn single_disk(l: &crate::sample::LayoutRecord) -> bool {
    matches!(l.raid(), Some(crate::sample::layout_record::Layer::Disk))
}

/// Reads the lab's calibration from the store: the single-disk layout's speeds (an emulated
/// lab's are said to be emulated) and the median per-member rebuild rate of the layouts that
/// rebuilt outside emulation.
fn lab_calibration(ctx: &Context, reference: &str) -> anyhow::Result<LabCalibration> {
    let store = super::db::open_existing(ctx, reference)?;
    let lab = super::db::resolve_lab(&store, reference)?;
    let runs = super::db::lab_runs(&store, &lab)?;
    let healthy = |r: &&RunRecord| {
        r.layout.as_ref().is_some_and(|l| {
            l.phase != Some(crate::sample::layout_record::Phase::Degraded) && single_disk(l)
        })
    };
    let one = runs.iter().find(healthy).ok_or_else(|| {
        usage(format!(
            "--from-lab {lab}: the lab has no single-disk layout to take per-disk speeds from; add one (`fs = \"xfs\"` on one disk) or give --disk-read-mbps etc."
        ))
    })?;
    let perf = MeasuredPerf::from_run(one).map_err(|e| usage(format!("--from-lab {lab}: {e}")))?;
    let name = one
        .layout
        .as_ref()
        .and_then(|l| l.name.clone())
        .unwrap_or_else(|| one.id.clone());
    let emulated = one.layout.as_ref().and_then(|l| l.environment.clone());
    let perf_from = match emulated {
        Some(env) => format!(
            "measured in lab {lab} on its layout {name} ({}), emulated in a {env}: only ratios mean something, give --disk-* for the real disks",
            perf.sources.join(", ")
        ),
        None => format!(
            "measured in lab {lab} on its layout {name} ({})",
            perf.sources.join(", ")
        ),
    };
    let mut rates = Vec::new();
    let mut emulated_rebuilds = 0;
    // A layout's healthy and degraded runs both carry its one rebuild: count it once.
    let mut seen: Vec<&str> = Vec::new();
    for r in &runs {
        let Some(l) = &r.layout else { continue };
        let Some(rb) = &l.rebuild else { continue };
        let layout = l
            .degraded_of
            .as_deref()
            .or(l.name.as_deref())
            .unwrap_or(&r.id);
        if seen.contains(&layout) {
            continue;
        }
        seen.push(layout);
        let Some(bytes) = rb.bytes.filter(|b| *b > 0) else {
            continue;
        };
        if rb.seconds <= 0.0 {
            continue;
        }
        if l.environment.is_some() {
            emulated_rebuilds += 1;
            continue;
        }
        rates.push(bytes as f64 / rb.seconds / 1e6);
    }
    let (rebuild_mbps, no_rebuild) = match crate::stats::median(&rates) {
        Some(m) => (
            Some((
                m,
                format!(
                    "the median of {} rebuild{} measured in lab {lab}",
                    rates.len(),
                    if rates.len() == 1 { "" } else { "s" }
                ),
            )),
            None,
        ),
        None if emulated_rebuilds > 0 => (
            None,
            Some(format!(
                "its {emulated_rebuilds} rebuild(s) ran on emulated disks"
            )),
        ),
        None => (None, Some("it measured no rebuild".to_string())),
    };
    Ok(LabCalibration {
        lab,
        perf,
        perf_from,
        rebuild_mbps,
        no_rebuild,
    })
}

/// `iolab plan`.
pub fn run(ctx: &Context, args: PlanArgs) -> anyhow::Result<ExitCode> {
    let a = &*args.opts;
    let (input, source) = build_input(a, ctx)?;
    let plan = crate::plan::plan(&input, &source).map_err(|e| usage(e.to_string()))?;
    let format = if a.json { Format::Json } else { a.format };
    let text = match format {
        Format::Text => render::text(&plan),
        f @ (Format::Csv | Format::Html) => {
            return Err(usage(f.unsupported("plan", FORMATS).to_string()));
        }
        Format::Md => render::markdown(&plan),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&plan).context("encoding the plan as JSON")?;
            s.push('\n');
            s
        }
    };
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(ExitCode::SUCCESS)
}
