//! `iolab compare`, `list`, `show`, `export` and `rm`: reading the results store back.
//!
//! Runs are referred to by id, unique id prefix, label (the newest run with it), `last` or
//! `last~N`. A reference that matches nothing, or more than one run, exits 2 with one line.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::report::compare::{self as cmp, CompareOptions};
use crate::report::show::{format_time, render_run, status_name};
use crate::sample::{RunRecord, RunStatus};
use crate::store::{RunFilter, Store, StoreError};

/// Output formats of `iolab compare`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CompareFormat {
    /// An aligned table for the terminal.
    #[default]
    Text,
    /// A Markdown table for a wiki or a blog.
    Md,
    /// Every statistic as JSON.
    Json,
    /// One line per cell, every statistic, for spreadsheets and scripts.
    Csv,
}

/// Output formats of `iolab export`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExportFormat {
    /// Whole runs, histograms and per-second series included.
    #[default]
    Json,
    /// One line per trial and metric.
    Csv,
}

/// Arguments of `iolab compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Runs to compare: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN", required_unless_present = "lab")]
    pub runs: Vec<String>,
    /// Every run of this lab (`iolab lab` prints its id), in the order they ran.
    #[arg(long, value_name = "ID")]
    pub lab: Option<String>,
    /// The run the others are divided by (default: the first RUN); added as the first column
    /// when it is not among RUN.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Only these metrics: a full name (`read.iops`), a figure (`iops`, `mbps`, `lat_p99_us`)
    /// or an operation (`read`, `create`). Repeatable.
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
}

/// Arguments of `iolab list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Only runs with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs made on this host.
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs whose target path contains this text.
    #[arg(long)]
    pub target: Option<String>,
    /// Only runs of this lab.
    #[arg(long, value_name = "LAB_ID")]
    pub lab: Option<String>,
    /// At most this many runs (newest first).
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `iolab show`.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The run: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN", default_value = "last")]
    pub run: String,
    /// Print the whole stored record as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `iolab export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Runs to export: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `iolab rm`.
#[derive(clap::Args, Debug)]
pub struct RmArgs {
    /// Runs to delete: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Delete even a run whose process is still writing it.
    #[arg(long)]
    pub force: bool,
}

/// The database path: `--db`/`IOLAB_DB`, else the default.
fn db_path(ctx: &Context) -> anyhow::Result<PathBuf> {
    match &ctx.db {
        Some(p) => Ok(p.clone()),
        None => Store::default_path().map_err(store_err),
    }
}

/// A store error at the CLI edge: the user's mistakes exit 2, the rest 1.
pub(crate) fn store_err(e: StoreError) -> anyhow::Error {
    if e.is_usage() {
        super::usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// Opens (creating when needed) the store a new run is saved in.
pub fn open_store(ctx: &Context) -> anyhow::Result<Store> {
    let path = db_path(ctx)?;
    Store::open(&path).map_err(store_err)
}

/// Opens the store for a command that needs runs to exist; no database means no such run.
pub(crate) fn open_for(ctx: &Context, refs: &[String]) -> anyhow::Result<Store> {
    let path = db_path(ctx)?;
    match Store::open_existing(&path) {
        Ok(s) => Ok(s),
        Err(StoreError::Missing(p)) => Err(super::usage(format!(
            "no run matches '{}': no results database at {} yet (`iolab run` stores runs; --db or IOLAB_DB chooses another file)",
            refs.first().map_or("", String::as_str),
            p.display()
        ))),
        Err(e) => Err(store_err(e)),
    }
}

/// The runs a comparison or report covers, in column order: the references given, then every
/// run of `lab` in the order they ran, with the baseline first when it is not among them.
/// Returns the ids and the baseline's id.
pub(crate) fn select_runs(
    store: &Store,
    refs: &[String],
    lab: Option<&str>,
    baseline: Option<&str>,
) -> anyhow::Result<(Vec<String>, Option<String>)> {
    let mut ids = resolve_all(store, refs)?;
    let mut lab_baseline = None;
    if let Some(lab) = lab {
        let filter = crate::store::RunFilter {
            lab_id: Some(lab.to_string()),
            ..Default::default()
        };
        let mut lab_runs = store.list(&filter).map_err(store_err)?;
        if lab_runs.is_empty() {
            return Err(super::usage(format!(
                "--lab {lab}: no stored run belongs to this lab; `iolab list` shows lab ids"
            )));
        }
        // `list` is newest first; a lab reads best in the order its layouts ran.
        lab_runs.reverse();
        // The lab marks the healthy run of its spec's `baseline` layout.
        for r in &lab_runs {
            if store
                .run_layout(&r.id)
                .map_err(store_err)?
                .is_some_and(|l| l.lab_baseline)
            {
                lab_baseline = Some(r.id.clone());
                break;
            }
        }
        for r in lab_runs {
            if !ids.contains(&r.id) {
                ids.push(r.id);
            }
        }
    }
    let baseline = match baseline {
        Some(b) => {
            let id = store.resolve(b).map_err(store_err)?;
            if !ids.contains(&id) {
                ids.insert(0, id.clone());
            }
            Some(id)
        }
        None => lab_baseline,
    };
    Ok((ids, baseline))
}

/// Resolves references in order, dropping repeats.
pub(crate) fn resolve_all(store: &Store, refs: &[String]) -> anyhow::Result<Vec<String>> {
    let mut ids: Vec<String> = Vec::new();
    for r in refs {
        let id = store.resolve(r).map_err(store_err)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

fn load_all(store: &Store, ids: &[String]) -> anyhow::Result<Vec<RunRecord>> {
    ids.iter()
        .map(|id| store.load_run(id).map_err(store_err))
        .collect()
}

/// Writes to standard output; a closed pipe (`| head`) ends quietly instead of panicking.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to standard output")
        }
        _ => Ok(()),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(v).context("cannot encode JSON")? + "\n")
}

/// `iolab compare`.
pub fn compare(ctx: &Context, a: CompareArgs) -> anyhow::Result<ExitCode> {
    let refs: Vec<String> = if a.runs.is_empty() {
        a.lab.iter().cloned().collect()
    } else {
        a.runs.clone()
    };
    let store = open_for(ctx, &refs)?;
    let (ids, baseline) = select_runs(&store, &a.runs, a.lab.as_deref(), a.baseline.as_deref())?;
    if ids.len() < 2 {
        return Err(super::usage(
            "compare needs at least two different runs: give two RUNs, or one RUN and --baseline RUN",
        ));
    }
    let runs = load_all(&store, &ids)?;
    let opts = CompareOptions {
        baseline: baseline.and_then(|b| cmp::index_of(&runs, &b)),
        metrics: a.metrics.clone(),
    };
    let c = cmp::build(&runs, &opts);
    if c.rows.is_empty() && !a.metrics.is_empty() {
        return Err(super::usage(format!(
            "no metric matches --metric {}; names look like read.iops, write.mbps, create.ops, read.lat_p99_us",
            a.metrics.join(", --metric ")
        )));
    }
    let text = match a.format {
        CompareFormat::Text => cmp::render_text(&c),
        CompareFormat::Md => cmp::render_markdown(&c),
        CompareFormat::Json => cmp::render_json(&c),
        CompareFormat::Csv => cmp::render_csv(&c),
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `iolab list`.
pub fn list(ctx: &Context, a: ListArgs) -> anyhow::Result<ExitCode> {
    let path = db_path(ctx)?;
    let store = match Store::open_existing(&path) {
        Ok(s) => s,
        Err(StoreError::Missing(p)) => {
            if a.json {
                emit("[]\n")?;
            } else {
                emit(&format!("no runs stored yet (database {})\n", p.display()))?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(store_err(e)),
    };
    let filter = RunFilter {
        label: a.label,
        host: a.host,
        target: a.target,
        lab_id: a.lab,
        limit: a.limit,
    };
    let runs = store.list(&filter).map_err(store_err)?;
    if a.json {
        return emit(&to_json(&runs)?).map(|()| ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        emit(&format!("no runs match (database {})\n", path.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let head: Vec<String> = [
        "id", "started", "status", "label", "host", "suite", "target", "fs", "trials", "note",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let note = r.note.clone().unwrap_or_default();
            let note = if note.chars().count() > 40 {
                format!("{}...", note.chars().take(37).collect::<String>())
            } else {
                note
            };
            vec![
                r.id.clone(),
                format_time(r.started_unix_ms),
                status_name(r.status).to_string(),
                r.label.clone().unwrap_or_else(|| "-".into()),
                r.host.clone(),
                r.suite.clone(),
                r.target.clone(),
                r.fs_type.clone().unwrap_or_else(|| "-".into()),
                r.trials.to_string(),
                note,
            ]
        })
        .collect();
    emit(&cmp::text_table(&head, &rows, head.len()))?;
    Ok(ExitCode::SUCCESS)
}

/// `iolab show`.
pub fn show(ctx: &Context, a: ShowArgs) -> anyhow::Result<ExitCode> {
    let refs = [a.run.clone()];
    let store = open_for(ctx, &refs)?;
    let id = store.resolve(&a.run).map_err(store_err)?;
    let rec = store.load_run(&id).map_err(store_err)?;
    let text = if a.json {
        to_json(&rec)?
    } else {
        render_run(&rec)
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// What `iolab export --format json` writes: a versioned envelope around whole runs.
#[derive(serde::Serialize)]
struct Export<'a> {
    /// Format name and version of this document.
    format: &'static str,
    /// The runs, as stored.
    runs: &'a [RunRecord],
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One line per trial and metric, with enough of the setup to pivot on in a spreadsheet.
fn export_csv(runs: &[RunRecord]) -> String {
    let mut out = String::from(
        "run_id,label,status,host,kernel,target,fs_type,suite,workload,parameters,trial,started_unix_ms,elapsed_s,metric,unit,value\n",
    );
    for r in runs {
        for w in &r.workloads {
            for t in &w.trials {
                for m in t.metrics() {
                    let fields = [
                        csv_field(&r.id),
                        csv_field(r.label.as_deref().unwrap_or("")),
                        status_name(r.status).to_string(),
                        csv_field(&r.system.hostname),
                        csv_field(&r.system.kernel),
                        csv_field(&r.target.path.to_string_lossy()),
                        csv_field(r.target.fs_type.as_deref().unwrap_or("")),
                        csv_field(&r.suite_name),
                        csv_field(&w.workload.name),
                        csv_field(&w.workload.describe()),
                        t.trial.to_string(),
                        t.started_unix_ms.to_string(),
                        format!("{}", t.elapsed().as_secs_f64()),
                        csv_field(&m.name),
                        csv_field(m.unit.label()),
                        if m.value.is_finite() {
                            format!("{}", m.value)
                        } else {
                            String::new()
                        },
                    ];
                    out.push_str(&fields.join(","));
                    out.push('\n');
                }
            }
        }
    }
    out
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `iolab export`.
pub fn export(ctx: &Context, a: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_for(ctx, &a.runs)?;
    let ids = resolve_all(&store, &a.runs)?;
    let runs = load_all(&store, &ids)?;
    let text = match a.format {
        ExportFormat::Json => to_json(&Export {
            format: "iolab-runs/1",
            runs: &runs,
        })?,
        ExportFormat::Csv => export_csv(&runs),
    };
    match &a.output {
        Some(p) => write_file(p, &text)?,
        None => emit(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `iolab rm`.
pub fn rm(ctx: &Context, a: RmArgs) -> anyhow::Result<ExitCode> {
    let mut store = open_for(ctx, &a.runs)?;
    // Resolve everything first: one bad reference deletes nothing.
    let ids = resolve_all(&store, &a.runs)?;
    let runs = load_all(&store, &ids)?;
    if !a.force {
        if let Some(r) = runs.iter().find(|r| r.status == RunStatus::Running) {
            return Err(super::usage(format!(
                "run {} is still being written by a running iolab; let it finish, stop it, or pass --force",
                r.id
            )));
        }
    }
    let mut out = String::new();
    for r in &runs {
        store.delete(&r.id).map_err(store_err)?;
        out.push_str(&format!(
            "removed {}{}\n",
            r.id,
            r.label
                .as_ref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        ));
    }
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
