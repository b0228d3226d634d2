//! `iolab list`, `show`, `export` and `rm`: reading stored runs back and deleting them.
//!
//! Runs are referred to as `cli::db` describes (id, prefix, label, `last`, `last~N`); `rm`
//! resolves every reference before deleting any, so one bad reference deletes nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use super::db::{db_location, load_all, load_ref, open_existing, open_for, resolve_all, store_err};
use super::out::{emit, to_json, write_file};
use crate::csv::csv_field;
use crate::output::{Format, text_table};
use crate::report::show::{format_time, render_run, status_name};
use crate::sample::{RunRecord, RunStatus};
use crate::store::{Location, RunFilter, RunSummary, Store, StoreError};

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
    /// Only runs of this lab: its id, a unique prefix of it, `last` or `last~N`.
    #[arg(long, value_name = "LAB")]
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

/// The formats `iolab export` writes.
const EXPORT_FORMATS: &[Format] = &[Format::Json, Format::Csv];

/// Arguments of `iolab export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Runs to export: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Output format: whole runs as JSON (histograms and per-second series included), or one
    /// CSV line per trial and metric.
    #[arg(long, default_value = "json", value_parser = Format::only(EXPORT_FORMATS))]
    pub format: Format,
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

/// `iolab store ...`: moving runs between results databases.
#[derive(clap::Subcommand, Debug)]
pub enum StoreCommand {
    /// Copy the runs of this results database (--db, default the local file) to another one,
    /// typically a team's PostgreSQL database. Runs keep their ids; runs already there are
    /// skipped, so pushing again copies only what is new.
    Push(PushArgs),
}

/// Arguments of `iolab store push`.
#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// Where to copy to: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, or a SQLite file.
    #[arg(long, value_name = "URL|PATH")]
    pub to: Location,
    /// Only runs with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs of this lab: its id, a unique prefix of it, `last` or `last~N`.
    #[arg(long, value_name = "LAB")]
    pub lab: Option<String>,
    /// Print JSON (`copied`, `skipped` ids) instead of a summary line.
    #[arg(long)]
    pub json: bool,
}

/// `iolab store`.
pub fn store(ctx: &Context, c: StoreCommand) -> anyhow::Result<ExitCode> {
    match c {
        StoreCommand::Push(a) => push(ctx, a),
    }
}

/// `iolab store push`.
fn push(ctx: &Context, a: PushArgs) -> anyhow::Result<ExitCode> {
    let from_loc = db_location(ctx)?;
    let from = Store::open_location_existing(&from_loc).map_err(store_err)?;
    let same = match (&from_loc, &a.to) {
        (Location::File(x), Location::File(y)) => {
            x == y || std::fs::canonicalize(x).ok() == std::fs::canonicalize(y).ok()
        }
        (Location::Postgres(x), Location::Postgres(y)) => x.shown() == y.shown(),
        _ => false,
    };
    if same {
        return Err(super::usage(format!(
            "--to {}: that is the database the runs come from (--db); name another one",
            a.to
        )));
    }
    let lab_id = a
        .lab
        .as_deref()
        .map(|l| super::db::resolve_lab(&from, l))
        .transpose()?;
    let mut to = Store::open_location(&a.to).map_err(store_err)?;
    let filter = RunFilter {
        label: a.label,
        lab_id,
        ..RunFilter::default()
    };
    let t = crate::store::transfer::copy_runs(&from, &mut to, &filter, &mut |_| {})
        .map_err(store_err)?;
    if a.json {
        let doc = serde_json::json!({
            "from": from_loc.to_string(),
            "to": a.to.to_string(),
            "copied": t.copied,
            "skipped": t.skipped,
        });
        emit(&to_json(&doc)?)?;
    } else {
        emit(&format!(
            "pushed {} run(s) from {from_loc} to {}; {} already there\n",
            t.copied.len(),
            a.to,
            t.skipped.len()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `iolab list`.
pub fn list(ctx: &Context, a: ListArgs) -> anyhow::Result<ExitCode> {
    let path = db_location(ctx)?;
    let store = match Store::open_location_existing(&path) {
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
    super::db::mention_leftovers(ctx, &store);
    let lab_id = a
        .lab
        .as_deref()
        .map(|l| super::db::resolve_lab(&store, l))
        .transpose()?;
    let filter = RunFilter {
        label: a.label,
        host: a.host,
        target: a.target,
        lab_id,
        limit: a.limit,
    };
    let runs = store.list(&filter).map_err(store_err)?;
    if a.json {
        return emit(&to_json(&runs)?).map(|()| ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        emit(&format!("no runs match (database {path})\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let head: Vec<String> = [
        "id", "started", "status", "label", "host", "suite", "target", "fs", "trials", "note",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect();
    let rows: Vec<Vec<String>> = runs.iter().map(list_row).collect();
    emit(&text_table(&head, &rows, head.len()))?;
    Ok(ExitCode::SUCCESS)
}

/// One row of `iolab list`: the columns of its header, a long note cut to 40 characters.
fn list_row(r: &RunSummary) -> Vec<String> {
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
}

/// `iolab show`.
pub fn show(ctx: &Context, a: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(ctx, &a.run)?;
    let rec = load_ref(&store, &a.run)?;
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

/// `iolab export`.
pub fn export(ctx: &Context, a: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_for(ctx, &a.runs)?;
    let ids = resolve_all(&store, &a.runs)?;
    let runs = load_all(&store, &ids)?;
    let text = match a.format {
        Format::Csv => export_csv(&runs),
        Format::Json => to_json(&Export {
            format: "iolab-runs/1",
            runs: &runs,
        })?,
        f @ (Format::Text | Format::Md | Format::Html) => {
            return Err(super::usage(
                f.unsupported("export", EXPORT_FORMATS).to_string(),
            ));
        }
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
