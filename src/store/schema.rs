//! The schema and its migrations, table-driven from the first version on.
//!
//! `PRAGMA application_id` marks a file as ours; `PRAGMA user_version` is the schema version.
//! Each migration runs in its own `BEGIN IMMEDIATE` transaction that re-reads the version
//! first, so two processes opening an old database at once migrate it exactly once.
//! A migration is only ever appended: released versions are never edited.

/// `PRAGMA application_id` of an iolab database: "iolb" in ASCII.
pub const APPLICATION_ID: i32 = 0x696F_6C62;

/// One step of the schema's history.
pub struct Migration {
    /// The `user_version` after this step.
    pub version: i32,
    /// What the step does, for the record.
    pub what: &'static str,
    /// The SQL, run as one batch inside the step's transaction.
    pub sql: &'static str,
}

/// Every migration, in order. The last one's version is [`LATEST_VERSION`].
pub const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    what: "runs, devices, workloads, trials, ops, metrics",
    sql: V1,
}];

/// The schema version this binary writes and understands.
pub const LATEST_VERSION: i32 = 1;

const V1: &str = r#"
-- One row per `iolab run` (or per layout of `iolab lab`).
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,          -- 8 hex digits, what users type
    status        TEXT NOT NULL,             -- running | complete | interrupted | failed
    started_ms    INTEGER NOT NULL,          -- ms since the Unix epoch
    ended_ms      INTEGER,
    host          TEXT NOT NULL,
    kernel        TEXT NOT NULL,
    owner_pid     INTEGER NOT NULL,          -- the process writing it
    owner         TEXT NOT NULL,             -- JSON: host, boot id, pid namespace, pid, start time
    label         TEXT,
    note          TEXT,
    suite         TEXT NOT NULL,
    target_path   TEXT NOT NULL,
    fs_type       TEXT,
    lab_id        TEXT,
    command_line  TEXT NOT NULL,             -- JSON array of argv
    system        TEXT NOT NULL,             -- JSON SystemInfo
    target        TEXT NOT NULL,             -- JSON TargetInfo, devices included
    layout        TEXT,                      -- JSON, runs made by `iolab lab`
    notes         TEXT NOT NULL DEFAULT '[]',-- JSON array of strings
    error         TEXT
);
CREATE INDEX runs_by_start ON runs(started_ms);
CREATE INDEX runs_by_label ON runs(label);

-- The block devices under the target, one row each, for queries by model or firmware.
-- (Loaded runs read the devices from runs.target; this table is a queryable copy.)
CREATE TABLE devices (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,            -- top of the stack first
    name        TEXT NOT NULL,
    model       TEXT,
    serial      TEXT,
    firmware    TEXT,
    rotational  INTEGER,
    size_bytes  INTEGER NOT NULL,
    scheduler   TEXT,
    transport   TEXT,
    raid_level  TEXT,
    PRIMARY KEY (run_id, position)
);

-- The workloads of a run with their exact parameters.
CREATE TABLE workloads (
    run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,                -- position in the suite
    name    TEXT NOT NULL,
    kind    TEXT NOT NULL,                   -- io | small_files | cached_read
    params  TEXT NOT NULL,                   -- JSON spec::Workload
    PRIMARY KEY (run_id, idx)
);

-- One row per trial; committed in one transaction with its ops and metrics.
CREATE TABLE trials (
    id            INTEGER PRIMARY KEY,
    run_id        TEXT NOT NULL,
    workload_idx  INTEGER NOT NULL,
    trial         INTEGER NOT NULL,          -- from 1
    workload      TEXT NOT NULL,             -- workload name, as the sample carries it
    started_ms    INTEGER NOT NULL,
    elapsed_ns    INTEGER NOT NULL,
    cpu_user_ns   INTEGER NOT NULL,
    cpu_sys_ns    INTEGER NOT NULL,
    submitted     INTEGER NOT NULL,
    completed     INTEGER NOT NULL,
    short         INTEGER NOT NULL,
    errors        INTEGER NOT NULL,
    syncs         INTEGER NOT NULL,
    series        TEXT NOT NULL,             -- JSON [[t, bytes, ops], ...] per second
    notes         TEXT NOT NULL,             -- JSON array of strings
    verify        TEXT,                      -- JSON VerifySummary, when --verify ran
    UNIQUE (run_id, workload_idx, trial),
    FOREIGN KEY (run_id, workload_idx) REFERENCES workloads(run_id, idx) ON DELETE CASCADE
);

-- Each kind of operation of a trial, with its latency histogram (HDR V2 + deflate).
CREATE TABLE ops (
    trial_id    INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    op          TEXT NOT NULL,
    count       INTEGER NOT NULL,
    bytes       INTEGER NOT NULL,
    elapsed_ns  INTEGER NOT NULL,
    latency     BLOB NOT NULL,
    PRIMARY KEY (trial_id, position)
);

-- The named figures of each trial (TrialSample::metrics), for queries and comparisons.
CREATE TABLE metrics (
    trial_id  INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    unit      TEXT NOT NULL,             -- IOPS | MB/s | ops/s | us
    value     REAL NOT NULL,
    PRIMARY KEY (trial_id, name)
);

-- Everything a spreadsheet wants, one row per figure of a trial.
CREATE VIEW trial_metrics AS
    SELECT r.id AS run_id, r.label, r.host, r.started_ms, w.name AS workload, t.trial,
           m.name AS metric, m.unit, m.value
    FROM metrics m
    JOIN trials t ON t.id = m.trial_id
    JOIN workloads w ON w.run_id = t.run_id AND w.idx = t.workload_idx
    JOIN runs r ON r.id = t.run_id;
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order_up_to_latest() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i32 + 1, "{}", m.what);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(LATEST_VERSION));
    }

    #[test]
    fn every_migration_applies_to_an_empty_database() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        for m in MIGRATIONS {
            c.execute_batch(m.sql).unwrap();
        }
        let n: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 6);
    }
}
