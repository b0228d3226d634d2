//! The results database at the command-line edge: where it is, opening it, turning run
//! references into stored runs, and the one mapping of store errors to exit codes (the user's
//! mistakes exit 2, the rest 1).
//!
//! Runs are referred to by id, unique id prefix, label (the newest run with it), `last` or
//! `last~N`; labs by id, unique id prefix, `last` or `last~N`, in every command that takes
//! one. A reference that matches nothing, or more than one, exits 2 with one line.

use std::path::PathBuf;

use super::Context;
use crate::sample::RunRecord;
use crate::store::{Location, RunFilter, Store, StoreError};

/// The database: `--db`/`IOLAB_DB` (a file or a `postgres://` URL), else the default file.
pub(crate) fn db_location(ctx: &Context) -> anyhow::Result<Location> {
    match &ctx.db {
        Some(l) => Ok(l.clone()),
        None => Store::default_path().map(Location::File).map_err(store_err),
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
pub(super) fn open_store(ctx: &Context) -> anyhow::Result<Store> {
    let loc = db_location(ctx)?;
    let store = Store::open_location(&loc).map_err(store_err)?;
    mention_leftovers(ctx, &store);
    Ok(store)
}

/// The runs of the store killed on this host, as (target, pid of their dead process): what
/// `iolab run --cleanup` sweeps besides its directory.
pub(crate) fn killed_runs(store: &Store) -> anyhow::Result<Vec<(PathBuf, u32)>> {
    Ok(store
        .killed_runs()
        .map_err(store_err)?
        .into_iter()
        .map(|k| (k.target_path, k.owner.pid))
        .collect())
}

/// Says, in one line on stderr, when runs killed on this host left files that are still on
/// disk, and what removes them (a killed run's 1 GiB test file was found only by a
/// user who thought to look in its directory). A store that cannot say stays silent: this is
/// a hint, never a reason for a command to fail.
pub(crate) fn mention_leftovers(ctx: &Context, store: &Store) {
    let Ok(runs) = killed_runs(store) else {
        return;
    };
    let left = crate::runner::leftovers::left_by_killed(&runs);
    let Some(first) = left.first() else {
        return;
    };
    let bytes: u64 = left.iter().map(|l| l.bytes).sum();
    let more = match left.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let db = match &ctx.db {
        None => String::new(),
        Some(Location::File(p)) => format!(" --db {}", p.display()),
        Some(Location::Postgres(_)) => " --db (this database)".to_string(),
    };
    eprintln!(
        "iolab: note: killed runs left {} on disk ({}{more}); `iolab run --cleanup{db}` removes {}",
        crate::units::format_bytes(bytes),
        first.path.display(),
        if left.len() == 1 { "it" } else { "them" },
    );
}

/// Opens the store for a command that needs runs to exist; no database means no such run.
/// `what` is the reference named in that message (the first run or lab asked for).
pub(crate) fn open_existing(ctx: &Context, what: &str) -> anyhow::Result<Store> {
    let loc = db_location(ctx)?;
    match Store::open_location_existing(&loc) {
        Ok(s) => {
            mention_leftovers(ctx, &s);
            Ok(s)
        }
        Err(StoreError::Missing(p)) => Err(super::usage(format!(
            "no run matches '{what}': no results database at {} yet (`iolab run` stores runs; --db or IOLAB_DB chooses another file)",
            p.display()
        ))),
        Err(e) => Err(store_err(e)),
    }
}

/// Opens the store for references that must exist, naming the first in the error.
pub(crate) fn open_for(ctx: &Context, refs: &[String]) -> anyhow::Result<Store> {
    open_existing(ctx, refs.first().map_or("", String::as_str))
}

/// Resolves one reference and loads that run.
pub(crate) fn load_ref(store: &Store, reference: &str) -> anyhow::Result<RunRecord> {
    let id = store.resolve(reference).map_err(store_err)?;
    store.load_run(&id).map_err(store_err)
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

/// Loads runs by id, in the order given.
pub(crate) fn load_all(store: &Store, ids: &[String]) -> anyhow::Result<Vec<RunRecord>> {
    ids.iter()
        .map(|id| store.load_run(id).map_err(store_err))
        .collect()
}

/// The runs a comparison or report covers, in column order: the references given, then every
/// run of `lab` (a lab id, as [`resolve_lab`] gives it) in the order they ran, with the
/// baseline first when it is not among them. Returns the ids and the baseline's id.
pub(crate) fn select_runs(
    store: &Store,
    refs: &[String],
    lab: Option<&str>,
    baseline: Option<&str>,
) -> anyhow::Result<(Vec<String>, Option<String>)> {
    let mut ids = resolve_all(store, refs)?;
    let mut lab_baseline = None;
    if let Some(lab) = lab {
        let lab_runs = lab_runs_oldest_first(store, lab)?;
        lab_baseline = lab_baseline_run(store, &lab_runs)?;
        for id in lab_runs {
            if !ids.contains(&id) {
                ids.push(id);
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

/// Every run of a lab, in the order its layouts ran; none is a usage error.
fn lab_runs_oldest_first(store: &Store, lab: &str) -> anyhow::Result<Vec<String>> {
    let filter = RunFilter {
        lab_id: Some(lab.to_string()),
        ..Default::default()
    };
    let lab_runs = store.list(&filter).map_err(store_err)?;
    if lab_runs.is_empty() {
        return Err(super::usage(format!(
            "--lab {lab}: no stored run belongs to this lab; `iolab list` shows lab ids"
        )));
    }
    // `list` is newest first; a lab reads best in the order its layouts ran.
    Ok(lab_runs.into_iter().rev().map(|r| r.id).collect())
}

/// The lab's healthy run of its spec's `baseline` layout, which the lab marks when it stores it.
fn lab_baseline_run(store: &Store, lab_runs: &[String]) -> anyhow::Result<Option<String>> {
    for id in lab_runs {
        if store
            .run_layout(id)
            .map_err(store_err)?
            .is_some_and(|l| l.lab_baseline)
        {
            return Ok(Some(id.clone()));
        }
    }
    Ok(None)
}

/// The lab a reference names: `last` / `last~N`, an exact lab id or a unique prefix
/// ([`Store::resolve_lab`]); one that names none is a usage error saying so.
pub(crate) fn resolve_lab(store: &Store, reference: &str) -> anyhow::Result<String> {
    store.resolve_lab(reference).map_err(store_err)
}

/// The lab's runs, in the order its layouts ran.
pub(crate) fn lab_runs(store: &Store, lab: &str) -> anyhow::Result<Vec<RunRecord>> {
    let filter = RunFilter {
        lab_id: Some(lab.to_string()),
        ..RunFilter::default()
    };
    let ids: Vec<String> = store
        .list(&filter)
        .map_err(store_err)?
        .into_iter()
        .rev()
        .map(|r| r.id)
        .collect();
    load_all(store, &ids)
}
