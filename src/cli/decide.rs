//! `iolab decide LAB [needs]`: decides again between a stored lab's layouts with other needs,
//! without re-running anything; and the need flags `iolab lab` shares.
//!
//! The needs start from the `[decide]` table the lab ran with (stored with its runs), or
//! `--spec FILE`'s; every flag given replaces that value.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Context, usage};
use crate::decide::{self, Decision, DiskMeasured};
use crate::output::Format;
use crate::sample::RunRecord;
use crate::spec::decide::{self as needs, DecideSpec, Prefer};

/// The needs and the real disks, as flags (`iolab decide`, `iolab lab`).
#[derive(clap::Args, Debug, Default, Clone)]
pub struct DecideFlags {
    /// Size of one real disk the layouts stand for (decimal as on the label: 8TB); capacity
    /// and rebuild time scale to it.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub disk_size: Option<String>,
    /// The real disks' speed from a stored run of one disk (`iolab disks --bench`, `iolab run
    /// /dev/sdb`) or a JSON run file.
    #[arg(long, value_name = "RUN")]
    pub disk_from: Option<PathBuf>,
    /// One real disk's sequential read, MB/s.
    #[arg(long, value_name = "MBPS", allow_hyphen_values = true)]
    pub disk_read_mbps: Option<String>,
    /// One real disk's sequential write, MB/s.
    #[arg(long, value_name = "MBPS", allow_hyphen_values = true)]
    pub disk_write_mbps: Option<String>,
    /// Need: at least this much usable space at the real disk size (70TB).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub min_usable: Option<String>,
    /// Need: at most this probability of losing data within a year (0.05% or 0.0005).
    #[arg(long = "max-loss-1y", value_name = "P", allow_hyphen_values = true)]
    pub max_loss_1y: Option<String>,
    /// Need: at most this probability of losing data within five years (0.1%).
    #[arg(long = "max-loss-5y", value_name = "P", allow_hyphen_values = true)]
    pub max_loss_5y: Option<String>,
    /// Need: at least this many IOPS meeting the lab's latency target (`[workloads] slo`).
    #[arg(long, value_name = "IOPS", allow_hyphen_values = true)]
    pub min_capacity_at_slo: Option<String>,
    /// Need: a workload's headline at least this (seq-write-1m=400MB/s); repeat for more.
    #[arg(long = "min", value_name = "WORKLOAD=SPEED")]
    pub min: Vec<String>,
    /// What to maximise among the layouts that qualify: usable, safety (default), speed,
    /// capacity_at_slo.
    #[arg(long, value_name = "WHAT")]
    pub prefer: Option<String>,
    /// The workload whose headline is "the speed" (default: the first --min workload, else
    /// the lab's first).
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// Annualized failure rate of one disk (default 1.57%, Backblaze 2024).
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub afr: Option<String>,
    /// Unrecoverable read errors per bit: desktop (1e-14, default), enterprise or a number.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub ure: Option<String>,
    /// Time to replace a failed disk without a hot spare (default 72h).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub replace_time: Option<String>,
    /// A loss that rules no layout out: `silent-corruption` (files a lab fault returned with
    /// wrong bytes and no error; the application checks its own data). Repeatable.
    #[arg(long, value_name = "LOSS")]
    pub accept: Vec<String>,
}

fn flag<T>(
    name: &str,
    v: Option<&str>,
    f: impl Fn(&str) -> Result<T, String>,
) -> anyhow::Result<Option<T>> {
    v.map(|t| f(t).map_err(|e| usage(format!("{name}: {e}"))))
        .transpose()
}

fn size(t: &str) -> Result<u64, String> {
    match crate::units::parse_bytes(t) {
        Ok(0) => Err(format!("'{t}' must be above 0 (e.g. 8TB)")),
        Ok(b) if !t.trim_start().starts_with('-') => Ok(b),
        Ok(_) => Err(format!("'{t}' is negative")),
        Err(e) => Err(e.to_string()),
    }
}

fn mbps(t: &str) -> Result<f64, String> {
    t.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("'{t}' is not a speed above 0 in MB/s (e.g. 180)"))
}

impl DecideFlags {
    /// The flags as a spec to lay over the stored or written one.
    pub fn spec(&self) -> anyhow::Result<DecideSpec> {
        let mut d = DecideSpec {
            disk_bytes: flag("--disk-size", self.disk_size.as_deref(), size)?,
            disk_from: self.disk_from.as_ref().map(|p| p.display().to_string()),
            prefer: flag("--prefer", self.prefer.as_deref(), Prefer::parse)?,
            workload: self.workload.clone(),
            ..DecideSpec::default()
        };
        d.disk.read_mbps = flag("--disk-read-mbps", self.disk_read_mbps.as_deref(), mbps)?;
        d.disk.write_mbps = flag("--disk-write-mbps", self.disk_write_mbps.as_deref(), mbps)?;
        let n = &mut d.needs;
        n.min_usable = flag("--min-usable", self.min_usable.as_deref(), size)?;
        n.max_loss_1y = flag(
            "--max-loss-1y",
            self.max_loss_1y.as_deref(),
            needs::parse_probability,
        )?;
        n.max_loss_5y = flag(
            "--max-loss-5y",
            self.max_loss_5y.as_deref(),
            needs::parse_probability,
        )?;
        n.min_capacity_at_slo = flag(
            "--min-capacity-at-slo",
            self.min_capacity_at_slo.as_deref(),
            |t| match needs::parse_speed(t)? {
                (v, None | Some(needs::SpeedUnit::Iops)) => Ok(v),
                _ => Err("is in IOPS (e.g. 2000)".into()),
            },
        )?;
        for a in &self.accept {
            n.accept
                .push(needs::Accept::parse(a).map_err(|e| usage(format!("--accept: {e}")))?);
        }
        for m in &self.min {
            n.min
                .push(needs::parse_min(m).map_err(|e| usage(format!("--min: {e}")))?);
        }
        d.risk.afr = flag("--afr", self.afr.as_deref(), |t| {
            needs::parse_probability(t)
                .ok()
                .filter(|p| *p > 0.0 && *p < 1.0)
                .ok_or_else(|| format!("'{t}' is not a rate above 0 and below 1 (e.g. 1.57%)"))
        })?;
        d.risk.ure = flag("--ure", self.ure.as_deref(), needs::parse_ure)?;
        d.risk.replace_hours = flag("--replace-time", self.replace_time.as_deref(), |t| {
            crate::units::parse_duration(t)
                .map(|x| x.as_secs_f64() / 3600.0)
                .map_err(|e| e.to_string())
        })?;
        Ok(d)
    }
}

/// Arguments of `iolab decide`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iolab decide last --disk-size 8TB --min-usable 200TB --max-loss-5y 1%\n  iolab decide 3f2a9c1e --prefer speed --min seq-write-1m=400MB/s --format json\n\nThe needs start from the [decide] table the lab ran with; flags replace its values. See docs/decide.md."
)]
pub struct DecideArgs {
    /// The lab: its id (`iolab list` shows them), a unique prefix of it, `last` or `last~N`.
    #[arg(value_name = "LAB")]
    pub lab: String,
    /// Take the needs from this lab spec's [decide] table instead of the stored one.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// The needs and the real disks.
    #[command(flatten)]
    pub flags: DecideFlags,
    /// Output format: aligned columns (`table` is the same), a Markdown table, or the whole
    /// decision as JSON.
    #[arg(long, default_value = "text", value_parser = Format::only(FORMATS))]
    pub format: Format,
}

/// The formats `iolab decide` renders.
const FORMATS: &[Format] = &[Format::Text, Format::Md, Format::Json];

/// The real disks' speed from `disk_from`, read from the store or a file.
pub(super) fn disk_measured(
    ctx: &Context,
    spec: &DecideSpec,
) -> anyhow::Result<Option<DiskMeasured>> {
    let Some(from) = &spec.disk_from else {
        return Ok(None);
    };
    let run = super::plan::read_run(std::path::Path::new(from), ctx)?;
    let perf = crate::plan::MeasuredPerf::from_run(&run)
        .map_err(|e| usage(format!("--disk-from {from}: {e}")))?;
    Ok(Some(DiskMeasured {
        perf,
        from: from.clone(),
    }))
}

pub(super) use crate::decide::AtRealSize;

/// [`decide::decide_runs`] at the command line: a need the lab cannot answer is a usage
/// error (exit 2), Ctrl-C during the builds at the real size a plain failure.
pub(super) fn decide_runs(
    lab_id: &str,
    runs: &[RunRecord],
    spec: &DecideSpec,
    disk: Option<&DiskMeasured>,
    at_size: AtRealSize,
) -> anyhow::Result<Decision> {
    decide::decide_runs(lab_id, runs, spec, disk, at_size).map_err(decide_err)
}

/// A decision's error at the command line: a need the lab cannot answer is a usage error
/// (exit 2), Ctrl-C during the builds at the real size a plain failure.
pub(super) fn decide_err(e: decide::RunsDecideError) -> anyhow::Error {
    match e {
        decide::RunsDecideError::Needs(e) => usage(e.to_string()),
        e @ decide::RunsDecideError::Interrupted => anyhow::Error::new(e),
    }
}

/// Prints a decision in a format.
pub(super) fn print(d: &Decision, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Text => print!("{}", crate::report::text::decide::render_table(d)),
        Format::Md => print!("{}", crate::report::text::decide::render_markdown(d)),
        Format::Json => println!("{}", serde_json::to_string_pretty(d)?),
        f @ (Format::Csv | Format::Html) => {
            return Err(usage(f.unsupported("decide", FORMATS).to_string()));
        }
    }
    Ok(())
}

/// `iolab decide`.
pub fn run(ctx: &Context, a: DecideArgs) -> anyhow::Result<ExitCode> {
    let over = a.flags.spec()?;
    let store = super::db::open_existing(ctx, &a.lab)?;
    let lab = super::db::resolve_lab(&store, &a.lab)?;
    let runs = super::db::lab_runs(&store, &lab)?;
    let mut spec = match &a.spec {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(format!("--spec {}: {e}", path.display())))?;
            crate::spec::parse_lab_spec(&text, &path.display().to_string())?
                .decide
                .unwrap_or_default()
        }
        None => decide::from_runs(&lab, &runs).decide.unwrap_or_default(),
    };
    spec.merge(&over);
    let disk = disk_measured(ctx, &spec)?;
    let d = decide_runs(&lab, &runs, &spec, disk.as_ref(), AtRealSize::Build)?;
    print(&d, a.format)?;
    if let (Some(name), Format::Text) = (&d.recommended, a.format) {
        let cmds = crate::decide::tunables::for_runs(&runs, name);
        print!("{}", crate::decide::tunables::render(name, &cmds));
    }
    Ok(ExitCode::SUCCESS)
}
