//! Reading runs back: whole records, summaries for `list`, and what a user typed turned into a
//! run id.

use super::backend::{DbError, Row};
use super::owner::{Liveness, Owner};
use super::{Result, RunFilter, RunSummary, Store, StoreError, parse_last, parse_status, to_u64};
use crate::sample::{
    IoAccounting, LatencyHistogram, LayoutRecord, OpSample, RunRecord, RunStatus, SeriesPoint,
    TrialSample, WorkloadRecord,
};
use crate::spec::Workload;

/// The status a reader should see: a `running` run whose process is gone is `incomplete`.
fn effective_status(id: &str, stored: &str, owner: &str) -> Result<RunStatus> {
    let status = parse_status(stored).ok_or_else(|| StoreError::BadData {
        id: id.to_string(),
        what: "status",
        detail: format!("unknown status '{stored}'"),
    })?;
    if status != RunStatus::Running {
        return Ok(status);
    }
    // An owner that cannot be read is treated like one from another machine: still running.
    let dead = serde_json::from_str::<Owner>(owner).is_ok_and(|o| o.liveness() == Liveness::Dead);
    Ok(if dead {
        RunStatus::Incomplete
    } else {
        RunStatus::Running
    })
}

fn decode<T: serde::de::DeserializeOwned>(id: &str, what: &'static str, s: &str) -> Result<T> {
    serde_json::from_str(s).map_err(|e| StoreError::BadData {
        id: id.to_string(),
        what,
        detail: e.to_string(),
    })
}

impl Store {
    /// The layout record of a run (lab runs only), without loading its trials: enough to
    /// find a lab's baseline among many runs.
    pub fn run_layout(&self, id: &str) -> Result<Option<LayoutRecord>> {
        let what = "reading a run's layout";
        let row = self.query_opt(what, "SELECT layout FROM runs WHERE id = ?1", &[id.into()])?;
        let Some(row) = row else {
            return Err(StoreError::UnknownRun(id.to_string()));
        };
        match row.opt_text(0).map_err(self.err(what))? {
            None => Ok(None),
            Some(l) => decode(id, "layout", &l).map(Some),
        }
    }

    /// Loads everything recorded about a run, trials and histograms included.
    pub fn load_run(&self, id: &str) -> Result<RunRecord> {
        let what = "reading a run";
        let e = self.err(what);
        let row = self.query_opt(
            what,
            "SELECT status, started_ms, ended_ms, owner, label, note, suite, lab_id,
                    command_line, system, target, layout, notes, error
             FROM runs WHERE id = ?1",
            &[id.into()],
        )?;
        let Some(r) = row else {
            return Err(StoreError::UnknownRun(id.to_string()));
        };
        let layout = r.opt_text(11).map_err(&e)?;
        let mut rec = RunRecord {
            id: id.to_string(),
            status: effective_status(id, &r.text(0).map_err(&e)?, &r.text(3).map_err(&e)?)?,
            started_unix_ms: to_u64(r.i64(1).map_err(&e)?),
            ended_unix_ms: r.opt_i64(2).map_err(&e)?.map(to_u64),
            command_line: decode(id, "command line", &r.text(8).map_err(&e)?)?,
            label: r.opt_text(4).map_err(&e)?,
            note: r.opt_text(5).map_err(&e)?,
            lab_id: r.opt_text(7).map_err(&e)?,
            layout: layout.map(|l| decode(id, "layout", &l)).transpose()?,
            suite_name: r.text(6).map_err(&e)?,
            system: decode(id, "system facts", &r.text(9).map_err(&e)?)?,
            target: decode(id, "target facts", &r.text(10).map_err(&e)?)?,
            workloads: Vec::new(),
            notes: decode(id, "notes", &r.text(12).map_err(&e)?)?,
            error: r.opt_text(13).map_err(&e)?,
        };
        let rows = self.query(
            what,
            "SELECT idx, params FROM workloads WHERE run_id = ?1 ORDER BY idx",
            &[id.into()],
        )?;
        for row in rows {
            let idx = row.i64(0).map_err(&e)?;
            let workload: Workload = decode(id, "workload parameters", &row.text(1).map_err(&e)?)?;
            rec.workloads.push(WorkloadRecord {
                workload,
                trials: self.load_trials(id, idx)?,
            });
        }
        Ok(rec)
    }

    fn load_trials(&self, id: &str, idx: i64) -> Result<Vec<TrialSample>> {
        let what = "reading trials";
        let e = self.err(what);
        let rows = self.query(
            what,
            "SELECT id, trial, workload, started_ms, elapsed_ns, cpu_user_ns, cpu_sys_ns,
                    submitted, completed, short, errors, syncs, series, notes, verify,
                    open_loop, after_window
             FROM trials WHERE run_id = ?1 AND workload_idx = ?2 ORDER BY trial",
            &[id.into(), idx.into()],
        )?;
        let mut out = Vec::new();
        for r in rows {
            let trial_id = r.i64(0).map_err(&e)?;
            let mut t = trial_row(&r).map_err(&e)?;
            let s: Vec<Vec<u64>> = decode(id, "per-second series", &r.text(12).map_err(&e)?)?;
            t.series = s
                .into_iter()
                .map(|p| {
                    let at = |i: usize| p.get(i).copied();
                    SeriesPoint {
                        t: u32::try_from(at(0).unwrap_or(0)).unwrap_or(u32::MAX),
                        bytes: at(1).unwrap_or(0),
                        ops: at(2).unwrap_or(0),
                        p50_ns: at(3),
                        p99_ns: at(4),
                    }
                })
                .collect();
            t.notes = decode(id, "trial notes", &r.text(13).map_err(&e)?)?;
            t.verify = r
                .opt_text(14)
                .map_err(&e)?
                .map(|v| decode(id, "verify summary", &v))
                .transpose()?;
            t.open_loop = r
                .opt_text(15)
                .map_err(&e)?
                .map(|v| decode(id, "open-loop record", &v))
                .transpose()?;
            t.accounting.after_window = to_u64(r.i64(16).map_err(&e)?);
            t.ops = self.load_ops(id, trial_id)?;
            out.push(t);
        }
        Ok(out)
    }

    fn load_ops(&self, id: &str, trial_id: i64) -> Result<Vec<OpSample>> {
        let what = "reading operations";
        let e = self.err(what);
        let rows = self.query(
            what,
            "SELECT op, count, bytes, elapsed_ns, latency, service FROM ops
             WHERE trial_id = ?1 ORDER BY position",
            &[trial_id.into()],
        )?;
        let mut out = Vec::new();
        for r in rows {
            let blob = r.blob(4).map_err(&e)?;
            let latency = if blob.is_empty() {
                LatencyHistogram::new()
            } else {
                LatencyHistogram::from_bytes(&blob).map_err(|detail| StoreError::BadData {
                    id: id.to_string(),
                    what: "latency histogram",
                    detail,
                })?
            };
            let service = Some(r.blob(5).map_err(&e)?)
                .filter(|b| !b.is_empty())
                .map(|b| {
                    LatencyHistogram::from_bytes(&b).map_err(|detail| StoreError::BadData {
                        id: id.to_string(),
                        what: "service-time histogram",
                        detail,
                    })
                })
                .transpose()?;
            out.push(OpSample {
                op: r.text(0).map_err(&e)?,
                count: to_u64(r.i64(1).map_err(&e)?),
                bytes: to_u64(r.i64(2).map_err(&e)?),
                elapsed_ns: to_u64(r.i64(3).map_err(&e)?),
                latency,
                service,
            });
        }
        Ok(out)
    }

    /// Stored runs, newest first, that match `filter`.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        let what = "listing runs";
        let e = self.err(what);
        let limit = filter
            .limit
            .map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
        // Parameters are cast to TEXT so PostgreSQL knows their type where they stand alone.
        let rows = self.query(
            what,
            "SELECT r.id, r.status, r.owner, r.started_ms, r.ended_ms, r.label, r.note,
                    r.host, r.suite, r.target_path, r.fs_type, r.lab_id,
                    (SELECT count(*) FROM workloads w WHERE w.run_id = r.id),
                    (SELECT count(*) FROM trials t WHERE t.run_id = r.id)
             FROM runs r
             WHERE (CAST(?1 AS TEXT) IS NULL OR r.label = CAST(?1 AS TEXT))
               AND (CAST(?2 AS TEXT) IS NULL OR r.host = CAST(?2 AS TEXT))
               AND (CAST(?3 AS TEXT) IS NULL OR instr(r.target_path, CAST(?3 AS TEXT)) > 0)
               AND (CAST(?4 AS TEXT) IS NULL OR r.lab_id = CAST(?4 AS TEXT))
             ORDER BY r.started_ms DESC, r.rowid DESC
             LIMIT ?5",
            &[
                filter.label.as_ref().into(),
                filter.host.as_ref().into(),
                filter.target.as_ref().into(),
                filter.lab_id.as_ref().into(),
                limit.into(),
            ],
        )?;
        let mut out = Vec::new();
        for r in rows {
            let id = r.text(0).map_err(&e)?;
            let status = effective_status(&id, &r.text(1).map_err(&e)?, &r.text(2).map_err(&e)?)?;
            out.push(RunSummary {
                id,
                status,
                started_unix_ms: to_u64(r.i64(3).map_err(&e)?),
                ended_unix_ms: r.opt_i64(4).map_err(&e)?.map(to_u64),
                label: r.opt_text(5).map_err(&e)?,
                note: r.opt_text(6).map_err(&e)?,
                host: r.text(7).map_err(&e)?,
                suite: r.text(8).map_err(&e)?,
                target: r.text(9).map_err(&e)?,
                fs_type: r.opt_text(10).map_err(&e)?,
                lab_id: r.opt_text(11).map_err(&e)?,
                workloads: usize::try_from(r.i64(12).map_err(&e)?).unwrap_or(0),
                trials: usize::try_from(r.i64(13).map_err(&e)?).unwrap_or(0),
            });
        }
        Ok(out)
    }

    /// Turns what a user typed into a run id. Tried in order:
    /// `last` / `last~N` (the newest run, the one N before it), an exact id, a label (the newest
    /// run with it), a unique id prefix. An ambiguous prefix is an error listing the matches.
    pub fn resolve(&self, reference: &str) -> Result<String> {
        let what = "finding a run";
        let e = self.err(what);
        let r = reference.trim();
        if r.is_empty() {
            return Err(StoreError::UnknownRun(reference.to_string()));
        }
        let first_id = |row: Option<Row>| row.map(|row| row.text(0)).transpose().map_err(&e);
        if let Some(n) = parse_last(r) {
            let row = self.query_opt(
                what,
                "SELECT id FROM runs ORDER BY started_ms DESC, rowid DESC LIMIT 1 OFFSET ?1",
                &[i64::try_from(n).unwrap_or(i64::MAX).into()],
            )?;
            return first_id(row)?.ok_or_else(|| StoreError::UnknownRun(reference.to_string()));
        }
        let lower = r.to_ascii_lowercase();
        let exact = self.query_opt(
            what,
            "SELECT id FROM runs WHERE id = ?1",
            &[(&lower).into()],
        )?;
        if let Some(id) = first_id(exact)? {
            return Ok(id);
        }
        let by_label = self.query_opt(
            what,
            "SELECT id FROM runs WHERE label = ?1 ORDER BY started_ms DESC, rowid DESC LIMIT 1",
            &[r.into()],
        )?;
        if let Some(id) = first_id(by_label)? {
            return Ok(id);
        }
        let rows = self.query(
            what,
            "SELECT id, label FROM runs
             WHERE substr(id, 1, length(CAST(?1 AS TEXT))) = CAST(?1 AS TEXT)
             ORDER BY started_ms DESC, rowid DESC",
            &[(&lower).into()],
        )?;
        let matches: Vec<(String, Option<String>)> = rows
            .iter()
            .map(|row| Ok((row.text(0)?, row.opt_text(1)?)))
            .collect::<std::result::Result<_, DbError>>()
            .map_err(&e)?;
        match matches.len() {
            0 => Err(StoreError::UnknownRun(reference.to_string())),
            1 => Ok(matches[0].0.clone()),
            n => {
                let shown: Vec<String> = matches
                    .iter()
                    .take(5)
                    .map(|(id, l)| match l {
                        Some(l) => format!("{id} {l}"),
                        None => id.clone(),
                    })
                    .collect();
                Err(StoreError::AmbiguousRun {
                    reference: reference.to_string(),
                    count: n,
                    candidates: format!("{}{}", shown.join(", "), if n > 5 { ", ..." } else { "" }),
                })
            }
        }
    }

    /// Turns what a user typed for a lab into a lab id, the way [`Store::resolve`] does for
    /// runs: `last` / `last~N` (the lab whose newest run is the newest, the one N before it),
    /// an exact id, a unique id prefix. None matching and an ambiguous prefix are typed errors
    /// naming what was typed.
    pub fn resolve_lab(&self, reference: &str) -> Result<String> {
        let what = "finding a lab";
        let e = self.err(what);
        let rows = self.query(
            what,
            "SELECT lab_id FROM runs WHERE lab_id IS NOT NULL
             GROUP BY lab_id ORDER BY MAX(started_ms) DESC, lab_id",
            &[],
        )?;
        let labs: Vec<String> = rows
            .iter()
            .map(|row| row.text(0))
            .collect::<std::result::Result<_, DbError>>()
            .map_err(&e)?;
        let r = reference.trim();
        let unknown = || StoreError::UnknownLab {
            reference: reference.to_string(),
            labs: labs.len(),
        };
        if let Some(n) = super::parse_last(r) {
            return usize::try_from(n)
                .ok()
                .and_then(|n| labs.get(n).cloned())
                .ok_or_else(unknown);
        }
        if labs.iter().any(|l| l == r) {
            return Ok(r.to_string());
        }
        let lower = r.to_ascii_lowercase();
        let matches: Vec<&String> = labs
            .iter()
            .filter(|l| !r.is_empty() && l.starts_with(&lower))
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(unknown()),
            many => Err(StoreError::AmbiguousLab {
                reference: reference.to_string(),
                candidates: many
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

/// The scalar columns of a trial row (0..=11); series, notes and ops are filled in after.
fn trial_row(r: &Row) -> std::result::Result<TrialSample, DbError> {
    Ok(TrialSample {
        trial: u32::try_from(r.i64(1)?)
            .map_err(|_| DbError::Value("trial number out of range".into()))?,
        workload: r.text(2)?,
        started_unix_ms: to_u64(r.i64(3)?),
        elapsed_ns: to_u64(r.i64(4)?),
        cpu_user_ns: to_u64(r.i64(5)?),
        cpu_sys_ns: to_u64(r.i64(6)?),
        accounting: IoAccounting {
            submitted: to_u64(r.i64(7)?),
            completed: to_u64(r.i64(8)?),
            short: to_u64(r.i64(9)?),
            errors: to_u64(r.i64(10)?),
            syncs: to_u64(r.i64(11)?),
            after_window: 0,
        },
        ops: Vec::new(),
        series: Vec::new(),
        notes: Vec::new(),
        verify: None,
        open_loop: None,
    })
}
