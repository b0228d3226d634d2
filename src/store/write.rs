//! Writing runs: the calls the run loop makes, one transaction each, so whatever was committed
//! survives a SIGKILL and nothing half-written is ever visible.

use std::io::Read;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::owner::Owner;
use super::{Result, Store, StoreError, check_label, sql_error, status_str, to_i64};
use crate::sample::{LayoutRecord, RunRecord, RunStatus, TrialSample};
use crate::spec::{Workload, WorkloadKind};

/// Length of a run id in hex digits: 32 random bits, so a thousand stored runs collide with
/// odds of about one in ten thousand (and a collision is retried), while two or three typed
/// digits usually pick a run out.
pub const ID_LEN: usize = 8;

fn json<T: serde::Serialize + ?Sized>(v: &T) -> rusqlite::Result<String> {
    serde_json::to_string(v).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
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
        self.insert_run(rec, RunStatus::Running, None)
    }

    /// Stores a whole run in one transaction, keeping its status and end time: for imports,
    /// labs that collect results first, and tests.
    pub fn save_run(&mut self, rec: &RunRecord) -> Result<String> {
        self.insert_run(rec, rec.status, rec.ended_unix_ms)
    }

    fn insert_run(
        &mut self,
        rec: &RunRecord,
        status: RunStatus,
        ended: Option<u64>,
    ) -> Result<String> {
        if let Some(l) = &rec.label {
            check_label(l)?;
        }
        let path = self.path.clone();
        let e = |e| sql_error(&path, "storing a run", e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(e)?;
        let taken = |id: &str| -> rusqlite::Result<bool> {
            tx.query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
                .optional()
                .map(|r| r.is_some())
        };
        let id = if rec.id.is_empty() {
            let mut id = random_id();
            let mut tries = 0;
            while taken(&id).map_err(e)? {
                tries += 1;
                if tries > 100 {
                    return Err(StoreError::DuplicateId(id));
                }
                id = random_id();
            }
            id
        } else {
            if taken(&rec.id).map_err(e)? {
                return Err(StoreError::DuplicateId(rec.id.clone()));
            }
            rec.id.clone()
        };
        write_run(&tx, &id, rec, status, ended).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(id)
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
        let path = self.path.clone();
        let e = |e| sql_error(&path, "storing a trial", e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(e)?;
        let exists = tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run_id], |_| Ok(()))
            .optional()
            .map_err(e)?
            .is_some();
        if !exists {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        write_workload(&tx, run_id, workload_index, workload).map_err(e)?;
        write_trial(&tx, run_id, workload_index, trial).map_err(e)?;
        tx.commit().map_err(e)
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
        let path = self.path.clone();
        let e = |e| sql_error(&path, "finishing a run", e);
        let n = self
            .conn
            .execute(
                "UPDATE runs SET status = ?1, ended_ms = ?2, notes = ?3, error = ?4 WHERE id = ?5",
                params![
                    status_str(status),
                    to_i64(ended_unix_ms),
                    json(notes).map_err(e)?,
                    error,
                    run_id
                ],
            )
            .map_err(e)?;
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
            .conn
            .execute(
                "UPDATE runs SET layout = ?1 WHERE id = ?2",
                rusqlite::params![text, run_id],
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
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [run_id])
            .map_err(self.err("deleting a run"))?;
        Ok(n > 0)
    }
}

fn write_run(
    c: &Connection,
    id: &str,
    rec: &RunRecord,
    status: RunStatus,
    ended: Option<u64>,
) -> rusqlite::Result<()> {
    let owner = Owner::current();
    c.execute(
        "INSERT INTO runs (id, status, started_ms, ended_ms, host, kernel, owner_pid, owner,
             label, note, suite, target_path, fs_type, lab_id, command_line, system, target,
             layout, notes, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, ?20)",
        params![
            id,
            status_str(status),
            to_i64(rec.started_unix_ms),
            ended.map(to_i64),
            rec.system.hostname,
            rec.system.kernel,
            owner.pid,
            json(&owner)?,
            rec.label,
            rec.note,
            rec.suite_name,
            rec.target.path.to_string_lossy(),
            rec.target.fs_type,
            rec.lab_id,
            json(&rec.command_line)?,
            json(&rec.system)?,
            json(&rec.target)?,
            rec.layout.as_ref().map(json).transpose()?,
            json(&rec.notes)?,
            rec.error,
        ],
    )?;
    let mut dev = c.prepare(
        "INSERT INTO devices (run_id, position, name, model, serial, firmware, rotational,
             size_bytes, scheduler, transport, raid_level)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (i, d) in rec.target.devices.iter().enumerate() {
        dev.execute(params![
            id,
            i as i64,
            d.name,
            d.model,
            d.serial,
            d.firmware,
            d.rotational,
            to_i64(d.size_bytes),
            d.scheduler,
            d.transport,
            d.md_level,
        ])?;
    }
    for (i, w) in rec.workloads.iter().enumerate() {
        write_workload(c, id, i, &w.workload)?;
        for t in &w.trials {
            write_trial(c, id, i, t)?;
        }
    }
    Ok(())
}

fn write_workload(c: &Connection, run_id: &str, idx: usize, w: &Workload) -> rusqlite::Result<()> {
    c.execute(
        "INSERT INTO workloads (run_id, idx, name, kind, params) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (run_id, idx) DO NOTHING",
        params![run_id, idx as i64, w.name, workload_kind(w), json(w)?],
    )?;
    Ok(())
}

fn write_trial(c: &Connection, run_id: &str, idx: usize, t: &TrialSample) -> rusqlite::Result<()> {
    let series: Vec<[u64; 3]> = t
        .series
        .iter()
        .map(|p| [u64::from(p.t), p.bytes, p.ops])
        .collect();
    let a = &t.accounting;
    c.execute(
        "INSERT INTO trials (run_id, workload_idx, trial, workload, started_ms, elapsed_ns,
             cpu_user_ns, cpu_sys_ns, submitted, completed, short, errors, syncs, series, notes, verify)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            run_id,
            idx as i64,
            t.trial,
            t.workload,
            to_i64(t.started_unix_ms),
            to_i64(t.elapsed_ns),
            to_i64(t.cpu_user_ns),
            to_i64(t.cpu_sys_ns),
            to_i64(a.submitted),
            to_i64(a.completed),
            to_i64(a.short),
            to_i64(a.errors),
            to_i64(a.syncs),
            json(&series)?,
            json(&t.notes)?,
            t.verify.as_ref().map(json).transpose()?,
        ],
    )?;
    let trial_id = c.last_insert_rowid();
    let mut op = c.prepare(
        "INSERT INTO ops (trial_id, position, op, count, bytes, elapsed_ns, latency)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (i, o) in t.ops.iter().enumerate() {
        op.execute(params![
            trial_id,
            i as i64,
            o.op,
            to_i64(o.count),
            to_i64(o.bytes),
            to_i64(o.elapsed_ns),
            o.latency.to_bytes(),
        ])?;
    }
    let mut m = c.prepare(
        "INSERT INTO metrics (trial_id, name, unit, value) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (trial_id, name) DO UPDATE SET value = excluded.value",
    )?;
    for x in t.metrics() {
        if x.value.is_finite() {
            m.execute(params![trial_id, x.name, x.unit.label(), x.value])?;
        }
    }
    Ok(())
}
