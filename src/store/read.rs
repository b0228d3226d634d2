//! Reading runs back: whole records, summaries for `list`, and what a user typed turned into a
//! run id.

use rusqlite::{OptionalExtension, Row, params};

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
        let row: Option<Option<String>> = self
            .conn
            .query_row("SELECT layout FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(self.err("reading a run's layout"))?;
        match row {
            None => Err(StoreError::UnknownRun(id.to_string())),
            Some(None) => Ok(None),
            Some(Some(l)) => decode(id, "layout", &l).map(Some),
        }
    }

    /// Loads everything recorded about a run, trials and histograms included.
    pub fn load_run(&self, id: &str) -> Result<RunRecord> {
        let e = self.err("reading a run");
        type RunRow = (
            String,
            i64,
            Option<i64>,
            String,
            Option<String>,
            Option<String>,
            String,
            Option<String>,
            String,
            String,
            String,
            Option<String>,
            String,
            Option<String>,
        );
        let row: Option<RunRow> = self
            .conn
            .query_row(
                "SELECT status, started_ms, ended_ms, owner, label, note, suite, lab_id,
                        command_line, system, target, layout, notes, error
                 FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                        r.get(11)?,
                        r.get(12)?,
                        r.get(13)?,
                    ))
                },
            )
            .optional()
            .map_err(&e)?;
        let Some((
            status,
            started,
            ended,
            owner,
            label,
            note,
            suite,
            lab_id,
            argv,
            system,
            target,
            layout,
            notes,
            error,
        )) = row
        else {
            return Err(StoreError::UnknownRun(id.to_string()));
        };
        let mut rec = RunRecord {
            id: id.to_string(),
            status: effective_status(id, &status, &owner)?,
            started_unix_ms: to_u64(started),
            ended_unix_ms: ended.map(to_u64),
            command_line: decode(id, "command line", &argv)?,
            label,
            note,
            lab_id,
            layout: layout.map(|l| decode(id, "layout", &l)).transpose()?,
            suite_name: suite,
            system: decode(id, "system facts", &system)?,
            target: decode(id, "target facts", &target)?,
            workloads: Vec::new(),
            notes: decode(id, "notes", &notes)?,
            error,
        };
        let mut idxs: Vec<i64> = Vec::new();
        {
            let mut st = self
                .conn
                .prepare("SELECT idx, params FROM workloads WHERE run_id = ?1 ORDER BY idx")
                .map_err(&e)?;
            let rows = st
                .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                .map_err(&e)?;
            for row in rows {
                let (idx, params) = row.map_err(&e)?;
                let workload: Workload = decode(id, "workload parameters", &params)?;
                idxs.push(idx);
                rec.workloads.push(WorkloadRecord {
                    workload,
                    trials: Vec::new(),
                });
            }
        }
        for (pos, idx) in idxs.into_iter().enumerate() {
            rec.workloads[pos].trials = self.load_trials(id, idx)?;
        }
        Ok(rec)
    }

    fn load_trials(&self, id: &str, idx: i64) -> Result<Vec<TrialSample>> {
        let e = self.err("reading trials");
        let mut st = self
            .conn
            .prepare(
                "SELECT id, trial, workload, started_ms, elapsed_ns, cpu_user_ns, cpu_sys_ns,
                        submitted, completed, short, errors, syncs, series, notes, verify
                 FROM trials WHERE run_id = ?1 AND workload_idx = ?2 ORDER BY trial",
            )
            .map_err(&e)?;
        let rows = st
            .query_map(params![id, idx], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    trial_row(r)?,
                    r.get::<_, String>(12)?,
                    r.get::<_, String>(13)?,
                    r.get::<_, Option<String>>(14)?,
                ))
            })
            .map_err(&e)?;
        let mut out = Vec::new();
        for row in rows {
            let (trial_id, mut t, series, notes, verify) = row.map_err(&e)?;
            let s: Vec<[u64; 3]> = decode(id, "per-second series", &series)?;
            t.series = s
                .into_iter()
                .map(|[t, bytes, ops]| SeriesPoint {
                    t: u32::try_from(t).unwrap_or(u32::MAX),
                    bytes,
                    ops,
                })
                .collect();
            t.notes = decode(id, "trial notes", &notes)?;
            t.verify = verify
                .map(|v| decode(id, "verify summary", &v))
                .transpose()?;
            t.ops = self.load_ops(id, trial_id)?;
            out.push(t);
        }
        Ok(out)
    }

    fn load_ops(&self, id: &str, trial_id: i64) -> Result<Vec<OpSample>> {
        let e = self.err("reading operations");
        let mut st = self
            .conn
            .prepare(
                "SELECT op, count, bytes, elapsed_ns, latency FROM ops
                 WHERE trial_id = ?1 ORDER BY position",
            )
            .map_err(&e)?;
        let rows = st
            .query_map([trial_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Vec<u8>>(4)?,
                ))
            })
            .map_err(&e)?;
        let mut out = Vec::new();
        for row in rows {
            let (op, count, bytes, elapsed, blob) = row.map_err(&e)?;
            let latency = if blob.is_empty() {
                LatencyHistogram::new()
            } else {
                LatencyHistogram::from_bytes(&blob).map_err(|detail| StoreError::BadData {
                    id: id.to_string(),
                    what: "latency histogram",
                    detail,
                })?
            };
            out.push(OpSample {
                op,
                count: to_u64(count),
                bytes: to_u64(bytes),
                elapsed_ns: to_u64(elapsed),
                latency,
            });
        }
        Ok(out)
    }

    /// Stored runs, newest first, that match `filter`.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        let e = self.err("listing runs");
        let limit = filter
            .limit
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let mut st = self
            .conn
            .prepare(
                "SELECT r.id, r.status, r.owner, r.started_ms, r.ended_ms, r.label, r.note,
                        r.host, r.suite, r.target_path, r.fs_type, r.lab_id,
                        (SELECT count(*) FROM workloads w WHERE w.run_id = r.id),
                        (SELECT count(*) FROM trials t WHERE t.run_id = r.id)
                 FROM runs r
                 WHERE (?1 IS NULL OR r.label = ?1)
                   AND (?2 IS NULL OR r.host = ?2)
                   AND (?3 IS NULL OR instr(r.target_path, ?3) > 0)
                   AND (?4 IS NULL OR r.lab_id = ?4)
                 ORDER BY r.started_ms DESC, r.rowid DESC
                 LIMIT ?5",
            )
            .map_err(&e)?;
        let rows = st
            .query_map(
                params![
                    filter.label,
                    filter.host,
                    filter.target,
                    filter.lab_id,
                    limit
                ],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        RunSummary {
                            id: r.get(0)?,
                            status: RunStatus::Running,
                            started_unix_ms: to_u64(r.get(3)?),
                            ended_unix_ms: r.get::<_, Option<i64>>(4)?.map(to_u64),
                            label: r.get(5)?,
                            note: r.get(6)?,
                            host: r.get(7)?,
                            suite: r.get(8)?,
                            target: r.get(9)?,
                            fs_type: r.get(10)?,
                            lab_id: r.get(11)?,
                            workloads: usize::try_from(r.get::<_, i64>(12)?).unwrap_or(0),
                            trials: usize::try_from(r.get::<_, i64>(13)?).unwrap_or(0),
                        },
                    ))
                },
            )
            .map_err(&e)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, status, owner, mut s) = row.map_err(&e)?;
            s.status = effective_status(&id, &status, &owner)?;
            out.push(s);
        }
        Ok(out)
    }

    /// Turns what a user typed into a run id. Tried in order:
    /// `last` / `last~N` (the newest run, the one N before it), an exact id, a label (the newest
    /// run with it), a unique id prefix. An ambiguous prefix is an error listing the matches.
    pub fn resolve(&self, reference: &str) -> Result<String> {
        let e = self.err("finding a run");
        let r = reference.trim();
        if r.is_empty() {
            return Err(StoreError::UnknownRun(reference.to_string()));
        }
        if let Some(n) = parse_last(r) {
            return self
                .conn
                .query_row(
                    "SELECT id FROM runs ORDER BY started_ms DESC, rowid DESC LIMIT 1 OFFSET ?1",
                    [i64::try_from(n).unwrap_or(i64::MAX)],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&e)?
                .ok_or_else(|| StoreError::UnknownRun(reference.to_string()));
        }
        let lower = r.to_ascii_lowercase();
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [&lower], |r| r.get(0))
            .optional()
            .map_err(&e)?;
        if let Some(id) = exact {
            return Ok(id);
        }
        let by_label: Option<String> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE label = ?1
                 ORDER BY started_ms DESC, rowid DESC LIMIT 1",
                [r],
                |r| r.get(0),
            )
            .optional()
            .map_err(&e)?;
        if let Some(id) = by_label {
            return Ok(id);
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT id, label FROM runs WHERE substr(id, 1, length(?1)) = ?1
                 ORDER BY started_ms DESC, rowid DESC",
            )
            .map_err(&e)?;
        let matches: Vec<(String, Option<String>)> = st
            .query_map([&lower], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(&e)?
            .collect::<rusqlite::Result<_>>()
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
}

/// The scalar columns of a trial row (0..=11); series, notes and ops are filled in after.
fn trial_row(r: &Row<'_>) -> rusqlite::Result<TrialSample> {
    Ok(TrialSample {
        trial: r.get(1)?,
        workload: r.get(2)?,
        started_unix_ms: to_u64(r.get(3)?),
        elapsed_ns: to_u64(r.get(4)?),
        cpu_user_ns: to_u64(r.get(5)?),
        cpu_sys_ns: to_u64(r.get(6)?),
        accounting: IoAccounting {
            submitted: to_u64(r.get(7)?),
            completed: to_u64(r.get(8)?),
            short: to_u64(r.get(9)?),
            errors: to_u64(r.get(10)?),
            syncs: to_u64(r.get(11)?),
            after_window: 0,
        },
        ops: Vec::new(),
        series: Vec::new(),
        notes: Vec::new(),
        verify: None,
    })
}
