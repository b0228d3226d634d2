//! Writing runs: the calls the run loop makes, one transaction each, so whatever was committed
//! survives a SIGKILL and nothing half-written is ever visible.

use std::io::Read;

use super::backend::{Db, DbError, Val};
use super::owner::Owner;
use super::{Result, Store, StoreError, check_label, db_error, status_str, to_i64};
use crate::sample::{LayoutRecord, RunRecord, RunStatus, TrialSample};
use crate::spec::{Workload, WorkloadKind};

/// Length of a run id in hex digits: 32 random bits, so a thousand stored runs collide with
/// odds of about one in ten thousand (and a collision is retried), while two or three typed
/// digits usually pick a run out.
pub const ID_LEN: usize = 8;

fn json<T: serde::Serialize + ?Sized>(v: &T) -> std::result::Result<String, DbError> {
    serde_json::to_string(v).map_err(|e| DbError::Value(format!("encoding JSON: {e}")))
}

/// A fresh random id: [`ID_LEN`] lower-case hex digits.
///
/// Random rather than time-ordered on purpose: people refer to runs by the first few digits,
/// and ids made seconds apart must differ in those. Runs are ordered by their start time.
fn random_id() -> String {
    let mut b = [0u8; 4];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    let v = if ok {
        u32::from_le_bytes(b)
    } else {
        // No /dev/urandom: mix the clock and the pid (uniqueness is still checked on insert).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let x = t ^ (u64::from(std::process::id()) << 32);
        let x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        (x ^ (x >> 33)) as u32
    };
    format!("{v:08x}")
}

fn workload_kind(w: &Workload) -> &'static str {
    match w.kind {
        WorkloadKind::Io(_) => "io",
        WorkloadKind::SmallFiles(_) => "small_files",
        WorkloadKind::CachedRead(_) => "cached_read",
    }
}

impl Store {
    /// Records the start of a run and returns its id. The run is `running`, owned by this
    /// process: if the process dies without [`Store::finish_run`], readers see it as
    /// `incomplete` with every trial that was committed.
    ///
    /// Uses `rec.id` when it is set (an imported run), otherwise makes a new id. The workloads
    /// listed in `rec` are recorded with their parameters (and any trials they already carry);
    /// `rec.status` and `rec.ended_unix_ms` are ignored.
    pub fn begin_run(&mut self, rec: &RunRecord) -> Result<String> {
        self.insert_run(rec, RunStatus::Running, None, None)
    }

    /// Stores a whole run in one transaction, keeping its status and end time: for imports,
    /// labs that collect results first, and tests.
    pub fn save_run(&mut self, rec: &RunRecord) -> Result<String> {
        self.insert_run(rec, rec.status, rec.ended_unix_ms, None)
    }

    /// [`Store::save_run`], deleting the run `replaced` in the same transaction: a placeholder
    /// stored while the results were gathered (a multi-host run's) gives way to the result
    /// at once — no reader ever sees both, or neither.
    pub fn save_run_replacing(&mut self, rec: &RunRecord, replaced: &str) -> Result<String> {
        self.insert_run(rec, rec.status, rec.ended_unix_ms, Some(replaced))
    }

    fn insert_run(
        &mut self,
        rec: &RunRecord,
        status: RunStatus,
        ended: Option<u64>,
        replaced: Option<&str>,
    ) -> Result<String> {
        if let Some(l) = &rec.label {
            check_label(l)?;
        }
        // A given id that is taken is `DuplicateId`; a fresh one that collides is retried.
        enum Outcome {
            Stored(String),
            Taken,
        }
        let given = !rec.id.is_empty();
        let loc = self.location.clone();
        let e = |e| db_error(&loc, "storing a run", e);
        for _ in 0..100 {
            let id = if given { rec.id.clone() } else { random_id() };
            let r = self
                .db
                .get_mut()
                .transaction(|db| -> std::result::Result<_, DbError> {
                    if taken(db, &id)? {
                        return Ok(Outcome::Taken);
                    }
                    write_run(db, &id, rec, status, ended)?;
                    if let Some(old) = replaced {
                        db.execute("DELETE FROM runs WHERE id = ?1", &[old.into()])?;
                    }
                    Ok(Outcome::Stored(id.clone()))
                });
            match r {
                Ok(Outcome::Stored(id)) => return Ok(id),
                // Another writer inserted the same id between our look and our insert
                // (PostgreSQL: the primary key refused it).
                Ok(Outcome::Taken) | Err(DbError::Duplicate) if given => {
                    return Err(StoreError::DuplicateId(rec.id.clone()));
                }
                Ok(Outcome::Taken) | Err(DbError::Duplicate) => {}
                Err(other) => return Err(e(other)),
            }
        }
        Err(StoreError::DuplicateId(rec.id.clone()))
    }

    /// Stores one finished trial of the workload at `workload_index` (its position in the
    /// suite), with its ops, latency histograms, per-second series and metrics, in one
    /// transaction. The workload's parameters are recorded the first time it is seen.
    pub fn add_trial(
        &mut self,
        run_id: &str,
        workload_index: usize,
        workload: &Workload,
        trial: &TrialSample,
    ) -> Result<()> {
        let loc = self.location.clone();
        let stored = self
            .db
            .get_mut()
            .transaction(|db| -> std::result::Result<bool, DbError> {
                if !taken(db, run_id)? {
                    return Ok(false);
                }
                write_workload(db, run_id, workload_index, workload)?;
                write_trial(db, run_id, workload_index, trial)?;
                Ok(true)
            })
            .map_err(|e| db_error(&loc, "storing a trial", e))?;
        if !stored {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        Ok(())
    }

    /// Records how a run ended: `complete`, `interrupted` (Ctrl-C: the trials so far are kept),
    /// or `failed` with the error. `notes` replaces the run's notes.
    pub fn finish_run(
        &mut self,
        run_id: &str,
        status: RunStatus,
        ended_unix_ms: u64,
        notes: &[String],
        error: Option<&str>,
    ) -> Result<()> {
        let e = self.err("finishing a run");
        let n = self
            .db
            .borrow_mut()
            .execute(
                "UPDATE runs SET status = ?1, ended_ms = ?2, notes = ?3, error = ?4 WHERE id = ?5",
                &[
                    status_str(status).into(),
                    to_i64(ended_unix_ms).into(),
                    json(notes).map_err(&e)?.into(),
                    error.into(),
                    run_id.into(),
                ],
            )
            .map_err(&e)?;
        if n == 0 {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        Ok(())
    }

    /// Replaces a run's layout record: the lab adds what it learns after the run was stored
    /// (the rebuild time, the degraded/healthy ratio).
    pub fn set_layout(&mut self, run_id: &str, layout: &LayoutRecord) -> Result<()> {
        let text = json(layout).map_err(self.err("encoding a run's layout"))?;
        let n = self
            .db
            .borrow_mut()
            .execute(
                "UPDATE runs SET layout = ?1 WHERE id = ?2",
                &[text.into(), run_id.into()],
            )
            .map_err(self.err("updating a run's layout"))?;
        if n == 0 {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        Ok(())
    }

    /// Deletes a run with everything recorded about it. Returns false when there was no such
    /// run.
    pub fn delete(&mut self, run_id: &str) -> Result<bool> {
        let n = self
            .db
            .borrow_mut()
            .execute("DELETE FROM runs WHERE id = ?1", &[run_id.into()])
            .map_err(self.err("deleting a run"))?;
        Ok(n > 0)
    }
}

/// Whether a run with this id is stored.
fn taken(db: &mut Db, id: &str) -> std::result::Result<bool, DbError> {
    Ok(db
        .query_opt("SELECT 1 FROM runs WHERE id = ?1", &[id.into()])?
        .is_some())
}

fn write_run(
    db: &mut Db,
    id: &str,
    rec: &RunRecord,
    status: RunStatus,
    ended: Option<u64>,
) -> std::result::Result<(), DbError> {
    let owner = Owner::current();
    db.execute(
        "INSERT INTO runs (id, status, started_ms, ended_ms, host, kernel, owner_pid, owner,
             label, note, suite, target_path, fs_type, lab_id, command_line, system, target,
             layout, notes, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, ?20)",
        &[
            id.into(),
            status_str(status).into(),
            to_i64(rec.started_unix_ms).into(),
            ended.map(to_i64).into(),
            (&rec.system.hostname).into(),
            (&rec.system.kernel).into(),
            i64::from(owner.pid).into(),
            json(&owner)?.into(),
            rec.label.as_ref().into(),
            rec.note.as_ref().into(),
            (&rec.suite_name).into(),
            rec.target.path.to_string_lossy().as_ref().into(),
            rec.target.fs_type.as_ref().into(),
            rec.lab_id.as_ref().into(),
            json(&rec.command_line)?.into(),
            json(&rec.system)?.into(),
            json(&rec.target)?.into(),
            rec.layout.as_ref().map(json).transpose()?.into(),
            json(&rec.notes)?.into(),
            rec.error.as_ref().into(),
        ],
    )?;
    for (i, d) in rec.target.devices.iter().enumerate() {
        db.execute(
            "INSERT INTO devices (run_id, position, name, model, serial, firmware, rotational,
                 size_bytes, scheduler, transport, raid_level)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            &[
                id.into(),
                (i as i64).into(),
                (&d.name).into(),
                d.model.as_ref().into(),
                d.serial.as_ref().into(),
                d.firmware.as_ref().into(),
                d.rotational.map(i64::from).into(),
                to_i64(d.size_bytes).into(),
                d.scheduler.as_ref().into(),
                d.transport.as_ref().into(),
                d.md_level.as_ref().into(),
            ],
        )?;
    }
    for (i, w) in rec.workloads.iter().enumerate() {
        write_workload(db, id, i, &w.workload)?;
        for t in &w.trials {
            write_trial(db, id, i, t)?;
        }
    }
    Ok(())
}

fn write_workload(
    db: &mut Db,
    run_id: &str,
    idx: usize,
    w: &Workload,
) -> std::result::Result<(), DbError> {
    db.execute(
        "INSERT INTO workloads (run_id, idx, name, kind, params) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (run_id, idx) DO NOTHING",
        &[
            run_id.into(),
            (idx as i64).into(),
            (&w.name).into(),
            workload_kind(w).into(),
            json(w)?.into(),
        ],
    )?;
    Ok(())
}

fn write_trial(
    db: &mut Db,
    run_id: &str,
    idx: usize,
    t: &TrialSample,
) -> std::result::Result<(), DbError> {
    // [t, bytes, ops], and [t, bytes, ops, p50_ns, p99_ns] where the second's percentiles
    // are known (readers take both shapes).
    let series: Vec<Vec<u64>> = t
        .series
        .iter()
        .map(|p| match (p.p50_ns, p.p99_ns) {
            (Some(a), Some(b)) => vec![u64::from(p.t), p.bytes, p.ops, a, b],
            _ => vec![u64::from(p.t), p.bytes, p.ops],
        })
        .collect();
    let a = &t.accounting;
    let row = db
        .query_opt(
            "INSERT INTO trials (run_id, workload_idx, trial, workload, started_ms, elapsed_ns,
                 cpu_user_ns, cpu_sys_ns, submitted, completed, short, errors, syncs, series,
                 notes, verify, open_loop, after_window)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18)
             RETURNING id",
            &[
                run_id.into(),
                (idx as i64).into(),
                i64::from(t.trial).into(),
                (&t.workload).into(),
                to_i64(t.started_unix_ms).into(),
                to_i64(t.elapsed_ns).into(),
                to_i64(t.cpu_user_ns).into(),
                to_i64(t.cpu_sys_ns).into(),
                to_i64(a.submitted).into(),
                to_i64(a.completed).into(),
                to_i64(a.short).into(),
                to_i64(a.errors).into(),
                to_i64(a.syncs).into(),
                json(&series)?.into(),
                json(&t.notes)?.into(),
                t.verify.as_ref().map(json).transpose()?.into(),
                t.open_loop.as_ref().map(json).transpose()?.into(),
                to_i64(a.after_window).into(),
            ],
        )?
        .ok_or_else(|| DbError::Value("inserting a trial returned no id".into()))?;
    let trial_id = row.i64(0)?;
    for (i, o) in t.ops.iter().enumerate() {
        db.execute(
            "INSERT INTO ops (trial_id, position, op, count, bytes, elapsed_ns, latency, service)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                trial_id.into(),
                (i as i64).into(),
                (&o.op).into(),
                to_i64(o.count).into(),
                to_i64(o.bytes).into(),
                to_i64(o.elapsed_ns).into(),
                Val::Blob(o.latency.to_bytes()),
                o.service
                    .as_ref()
                    .map_or(Val::Null, |h| Val::Blob(h.to_bytes())),
            ],
        )?;
    }
    for x in t.metrics() {
        if x.value.is_finite() {
            db.execute(
                "INSERT INTO metrics (trial_id, name, unit, value) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (trial_id, name) DO UPDATE SET value = excluded.value",
                &[
                    trial_id.into(),
                    (&x.name).into(),
                    x.unit.label().into(),
                    x.value.into(),
                ],
            )?;
        }
    }
    Ok(())
}
