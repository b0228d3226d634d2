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
    /// Rows to rewrite after the SQL, in the same transaction (data a query cannot convert).
    pub convert: Option<fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>>,
}

/// Every migration, in order. The last one's version is [`LATEST_VERSION`].
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "runs, devices, workloads, trials, ops, metrics",
        sql: V1,
        convert: None,
    },
    Migration {
        version: 2,
        what: "runs.layout: free-form JSON to a typed LayoutRecord",
        sql: "",
        convert: Some(v2::convert_layouts),
    },
];

/// The schema version this binary writes and understands.
pub const LATEST_VERSION: i32 = 2;

const V1: &str = r"
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
    layout        TEXT,                      -- JSON, runs made by `iolab lab` (v2: LayoutRecord)
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
";

/// v1 -> v2: each run's free-form layout JSON becomes a [`LayoutRecord`](crate::sample::LayoutRecord). The aliases v1
/// readers accepted (`chunk`/`chunk_bytes`, `fs`/`filesystem`, `slow_members`/`slow_disks`/
/// `slow`, keys at any depth) are mapped here, once; nothing else reads v1 documents.
pub mod v2 {
    use serde_json::{Map, Value};

    use crate::lab::Phase;
    use crate::lab::integrity::IntegrityReport;
    use crate::layout::stack::Stack;
    use crate::sample::layout_record::{IntegrityRecord, Layer, LayoutRecord, RebuildRecord};

    /// Rewrites every stored layout as a v2 record.
    pub fn convert_layouts(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
        let rows: Vec<(String, String)> = {
            let mut st = tx.prepare("SELECT id, layout FROM runs WHERE layout IS NOT NULL")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut up = tx.prepare("UPDATE runs SET layout = ?1 WHERE id = ?2")?;
        for (id, text) in rows {
            let rec = match serde_json::from_str::<Value>(&text) {
                Ok(Value::Null) => None,
                Ok(v) => Some(from_v1(&v)),
                // Not JSON: kept as it was, under a key of its own.
                Err(_) => {
                    let mut r = LayoutRecord::default();
                    r.other.insert("v1_layout".into(), Value::String(text));
                    Some(r)
                }
            };
            let out = rec
                .map(|r| serde_json::to_string(&r))
                .transpose()
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
            up.execute(rusqlite::params![out, id])?;
        }
        Ok(())
    }

    /// Top-level keys of the v2 record: a v1 key of the same name that is not mapped to it
    /// is kept as `v1_<key>`, so it cannot be read as the v2 field.
    const V2_FIELDS: &[&str] = &[
        "name",
        "lab",
        "description",
        "stack",
        "phase",
        "degraded_of",
        "capacity",
        "build_seconds",
        "degraded_ratio",
        "rebuild",
        "integrity",
        "lab_baseline",
        "slow_members",
        "disks_bench",
    ];

    /// v1 keys this conversion reads (at the top level); everything else is kept in `other`.
    const MAPPED: &[&str] = &[
        "name",
        "lab",
        "description",
        "stack",
        "phase",
        "degraded_of",
        "usable_bytes",
        "expected_usable_bytes",
        "build_seconds",
        "degraded_ratio",
        "rebuild_seconds",
        "rebuild_bytes",
        "integrity",
        "integrity_detail",
        "lab_baseline",
        "spec",
        "slow_members",
        "slow_disks",
        "slow",
        "level",
        "raid",
        "chunk",
        "chunk_bytes",
        "members",
        "spares",
        "lvm",
        "fs",
        "filesystem",
        "mount_options",
        "mkfs_options",
        "disks_bench",
    ];

    /// Breadth-first search for a non-null key anywhere in a JSON document: v1 documents were
    /// flat (hand-written) or nested (the lab's stack description).
    fn find<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
        let mut queue = vec![v];
        while !queue.is_empty() {
            let mut next = Vec::new();
            for v in queue {
                match v {
                    Value::Object(m) => {
                        if let Some(x) = m.get(key).filter(|x| !x.is_null()) {
                            return Some(x);
                        }
                        next.extend(m.values());
                    }
                    Value::Array(a) => next.extend(a.iter()),
                    _ => {}
                }
            }
            queue = next;
        }
        None
    }

    fn as_text(v: &Value) -> Option<String> {
        match v {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Array(a) if !a.is_empty() => {
                Some(a.iter().filter_map(as_text).collect::<Vec<_>>().join(","))
            }
            _ => None,
        }
    }

    fn as_list(v: &Value) -> Vec<String> {
        match v {
            Value::Array(a) => a.iter().filter_map(as_text).collect(),
            other => as_text(other)
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
        }
    }

    fn as_u64(v: &Value) -> Option<u64> {
        match v {
            Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
            Value::String(s) => crate::units::parse_bytes(s).ok(),
            Value::Array(a) => Some(a.len() as u64),
            _ => None,
        }
    }

    fn as_f64(v: &Value) -> Option<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => crate::units::parse_duration(s)
                .ok()
                .map(|d| d.as_secs_f64()),
            _ => None,
        }
        .filter(|f| f.is_finite())
    }

    /// `6` -> `raid6`; anything else as given.
    fn level_name(s: &str) -> String {
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
            format!("raid{s}")
        } else {
            s.to_string()
        }
    }

    /// The layers a v1 document describes: the lab's `spec` when it parses, else whatever
    /// the aliases give.
    fn layers(v: &Value) -> Vec<Layer> {
        if let Some(s) = v
            .get("spec")
            .and_then(|s| serde_json::from_value::<Stack>(s.clone()).ok())
        {
            return Layer::of_stack(&s);
        }
        let u = |k: &str| find(v, k).and_then(as_u64);
        let mut out = Vec::new();
        if let Some(level) = find(v, "level").and_then(as_text) {
            out.push(Layer::Md {
                level: level_name(&level),
                members: u("members").unwrap_or(0),
                spares: u("spares").unwrap_or(0),
                chunk_bytes: u("chunk").or_else(|| u("chunk_bytes")),
                bitmap: None,
                bitmap_chunk_bytes: None,
            });
        } else if let Some(raid) = find(v, "raid") {
            match raid {
                Value::String(s) => out.push(Layer::Md {
                    level: level_name(s),
                    members: u("members").unwrap_or(0),
                    spares: u("spares").unwrap_or(0),
                    chunk_bytes: u("chunk").or_else(|| u("chunk_bytes")),
                    bitmap: None,
                    bitmap_chunk_bytes: None,
                }),
                Value::Object(m) => match m.get("type").and_then(Value::as_str) {
                    Some("btrfs") => out.push(Layer::Btrfs {
                        data: m.get("data").and_then(as_text).unwrap_or_default(),
                        metadata: m.get("metadata").and_then(as_text).unwrap_or_default(),
                        members: u("members").unwrap_or(0),
                    }),
                    Some("none") => out.push(Layer::Disk),
                    _ => {}
                },
                _ => {}
            }
        }
        if find(v, "lvm").and_then(Value::as_bool) == Some(true) {
            out.push(Layer::Lvm);
        }
        let fs = find(v, "fs")
            .or_else(|| find(v, "filesystem"))
            .and_then(as_text);
        if let Some(fs) = fs {
            out.push(Layer::Fs {
                fs,
                mkfs_options: find(v, "mkfs_options").map(as_list).unwrap_or_default(),
                mount_options: find(v, "mount_options").map(as_list).unwrap_or_default(),
            });
        }
        out
    }

    /// The v2 record of a v1 layout document.
    pub fn from_v1(v: &Value) -> LayoutRecord {
        let mut r = LayoutRecord::default();
        let empty = Map::new();
        let top = v.as_object().unwrap_or(&empty);
        if !v.is_object() {
            r.other.insert("v1_layout".into(), v.clone());
            return r;
        }
        // `iolab disks --bench` stored its own document: kept whole, no layout in it.
        if let Some(b) = top.get("disks_bench") {
            r.disks_bench = Some(b.clone());
        } else {
            let text = |k: &str| find(v, k).and_then(as_text);
            r.name = text("name");
            r.lab = top.get("lab").and_then(as_text);
            r.description = top
                .get("stack")
                .filter(|s| s.is_string())
                .and_then(as_text)
                .or_else(|| text("description"));
            r.stack = layers(v);
            r.phase = top
                .get("phase")
                .and_then(|p| serde_json::from_value::<Phase>(p.clone()).ok());
            r.degraded_of = text("degraded_of");
            r.capacity.usable_bytes = find(v, "usable_bytes").and_then(as_u64);
            r.capacity.expected_usable_bytes = top.get("expected_usable_bytes").and_then(as_u64);
            r.build_seconds = top.get("build_seconds").and_then(as_f64);
            r.degraded_ratio = top.get("degraded_ratio").and_then(as_f64);
            r.rebuild = find(v, "rebuild_seconds")
                .and_then(as_f64)
                .map(|seconds| RebuildRecord {
                    seconds,
                    bytes: top.get("rebuild_bytes").and_then(as_u64),
                });
            r.integrity = top
                .get("integrity")
                .and_then(as_text)
                .map(|verdict| IntegrityRecord {
                    verdict,
                    detail: top
                        .get("integrity_detail")
                        .and_then(|d| serde_json::from_value::<IntegrityReport>(d.clone()).ok()),
                });
            r.lab_baseline = top.get("lab_baseline").and_then(Value::as_bool) == Some(true);
            r.slow_members = ["slow_members", "slow_disks", "slow"]
                .iter()
                .filter_map(|k| find(v, k))
                .flat_map(|x| match x {
                    Value::Array(a) => a.iter().filter_map(as_text).collect::<Vec<_>>(),
                    other => as_text(other)
                        .filter(|s| s != "false")
                        .into_iter()
                        .collect(),
                })
                .collect();
        }
        for (k, x) in top {
            if MAPPED.contains(&k.as_str()) && !is_unread(k, x, &r) {
                continue;
            }
            let key = if V2_FIELDS.contains(&k.as_str()) {
                format!("v1_{k}")
            } else {
                k.clone()
            };
            r.other.insert(key, x.clone());
        }
        r
    }

    /// A mapped key whose value the conversion could not read (an `integrity_detail` of
    /// another shape, a `stack` that is not a string): kept rather than lost.
    fn is_unread(k: &str, x: &Value, r: &LayoutRecord) -> bool {
        match k {
            "integrity_detail" => r.integrity.as_ref().is_none_or(|i| i.detail.is_none()),
            "stack" => !x.is_string(),
            "spec" => serde_json::from_value::<Stack>(x.clone()).is_err(),
            _ => false,
        }
    }
}

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

    /// The layout document `iolab lab` wrote at schema v1 (a degraded run's, cut short).
    fn v1_lab_doc() -> serde_json::Value {
        serde_json::json!({
            "build_seconds": 0.09, "degraded_of": "r1", "degraded_ratio": 1.1,
            "description": "btrfs raid1 (metadata raid1) x2 (noatime)",
            "expected_usable_bytes": 536870912u64, "integrity": "verified",
            "integrity_detail": {"bytes": 1, "degraded_writes": [], "failed": null, "files": 1,
                                 "manifest": null, "scrubs": [], "steps": [],
                                 "verdict": {"kind": "verified"}},
            "lab": "lab-x", "name": "r1", "phase": "degraded", "rebuild_bytes": 62062592u64,
            "rebuild_seconds": 0.12, "lab_baseline": false,
            "spec": {"fs": "btrfs", "lvm": false, "members": 2, "mkfs_options": [],
                     "mount_options": ["noatime"],
                     "raid": {"data": "raid1", "metadata": "raid1", "type": "btrfs"},
                     "spares": 0},
            "usable_bytes": 474808320u64
        })
    }

    #[test]
    fn a_v1_lab_document_maps_to_every_field() {
        use crate::lab::Phase;
        use crate::sample::layout_record::Layer;
        let r = v2::from_v1(&v1_lab_doc());
        assert_eq!(r.name.as_deref(), Some("r1"));
        assert_eq!(r.lab.as_deref(), Some("lab-x"));
        assert_eq!(r.phase, Some(Phase::Degraded));
        assert_eq!(r.degraded_of.as_deref(), Some("r1"));
        assert_eq!(r.degraded_ratio, Some(1.1));
        assert_eq!(r.build_seconds, Some(0.09));
        assert_eq!(r.capacity.usable_bytes, Some(474808320));
        assert_eq!(r.capacity.expected_usable_bytes, Some(536870912));
        let rb = r.rebuild.as_ref().unwrap();
        assert_eq!((rb.seconds, rb.bytes), (0.12, Some(62062592)));
        let i = r.integrity.as_ref().unwrap();
        assert_eq!(i.verdict, crate::sample::layout_record::VERIFIED_TEXT);
        assert_eq!(i.detail.as_ref().map(|d| d.files), Some(1));
        assert!(matches!(&r.stack[0], Layer::Btrfs { data, members: 2, .. } if data == "raid1"));
        assert!(matches!(&r.stack[1], Layer::Fs { fs, mount_options, .. }
            if fs == "btrfs" && mount_options == &["noatime"]));
        assert!(r.other.is_empty(), "{:?}", r.other);
        // What the migration writes reads back as the same record.
        let text = serde_json::to_string(&r).unwrap();
        let back: crate::sample::LayoutRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn v1_aliases_and_unknown_keys_are_mapped_once() {
        use crate::sample::layout_record::Layer;
        let flat = v2::from_v1(&serde_json::json!({
            "level": "6", "chunk_bytes": 65536, "members": "5", "filesystem": "xfs",
            "mount_options": "noatime,nobarrier", "slow_disks": ["sdc"], "stack": "md raid6 x5",
            "rebuild": "something else", "owner": "ops"
        }));
        assert_eq!(
            flat.stack[0],
            Layer::Md {
                level: "raid6".into(),
                members: 5,
                spares: 0,
                chunk_bytes: Some(65536),
                bitmap: None,
                bitmap_chunk_bytes: None
            }
        );
        assert!(matches!(&flat.stack[1], Layer::Fs { fs, mount_options, .. }
            if fs == "xfs" && mount_options.len() == 2));
        assert_eq!(flat.slow_members, ["sdc"]);
        assert_eq!(flat.description.as_deref(), Some("md raid6 x5"));
        // A key of a v2 field's name that means something else is kept under another name.
        assert_eq!(flat.other["v1_rebuild"], "something else");
        assert_eq!(flat.other["owner"], "ops");
        assert!(flat.rebuild.is_none());
        let text = serde_json::to_string(&flat).unwrap();
        let back: crate::sample::LayoutRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, flat);

        let slow = v2::from_v1(&serde_json::json!({"nested": {"slow": "sdb", "raid": "raid10"}}));
        assert_eq!(slow.slow_members, ["sdb"]);
        assert!(matches!(&slow.stack[0], Layer::Md { level, .. } if level == "raid10"));
        let bench =
            v2::from_v1(&serde_json::json!({"disks_bench": {"devices": [{"name": "sda"}]}}));
        assert!(bench.name.is_none() && bench.stack.is_empty());
        assert_eq!(bench.disks_bench.unwrap()["devices"][0]["name"], "sda");
        let odd = v2::from_v1(&serde_json::json!([1, 2]));
        assert_eq!(odd.other["v1_layout"], serde_json::json!([1, 2]));
    }

    #[test]
    fn a_v1_database_migrates_its_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            c.execute_batch(V1).unwrap();
            c.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            let insert = "INSERT INTO runs (id, status, started_ms, host, kernel, owner_pid, owner,
                          suite, target_path, command_line, system, target, layout)
                          VALUES (?1, 'complete', 0, 'h', 'k', 1, '{}', 's', '/t', '[]', '{}',
                          '{}', ?2)";
            let doc = v1_lab_doc().to_string();
            for (id, layout) in [
                ("aa", Some(doc.as_str())),
                ("bb", None),
                ("cc", Some("{oops")),
            ] {
                c.execute(insert, rusqlite::params![id, layout]).unwrap();
            }
        }
        let store = crate::store::Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), LATEST_VERSION);
        let r = store.run_layout("aa").unwrap().unwrap();
        assert_eq!(r, v2::from_v1(&v1_lab_doc()));
        assert!(store.run_layout("bb").unwrap().is_none());
        let bad = store.run_layout("cc").unwrap().unwrap();
        assert_eq!(bad.other["v1_layout"], "{oops");
        drop(store);
        // Opening again migrates nothing twice.
        let store = crate::store::Store::open(&path).unwrap();
        assert_eq!(store.run_layout("aa").unwrap().unwrap(), r);
    }
}
