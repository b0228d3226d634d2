//! The results store on both backends: a SQLite file and a real PostgreSQL server on loopback
//! (tests/common/pg.rs starts Debian's cluster and makes a database per test). Round trips,
//! migrations from a v1-shaped schema, two writer processes at once, `iolab compare` reading
//! the same table from PostgreSQL after `iolab store push` as from SQLite, and credentials:
//! a wrong password is one line naming the server and user, never the password.
//!
//! The concurrency test re-executes this binary as child processes (the harness in
//! tests/common/records.rs): `pg_child_role` does nothing unless `IOLAB_STORE_CHILD` names a
//! role.

mod common;

use std::path::PathBuf;

use iolab::sample::{RunRecord, RunStatus};
use iolab::store::{LATEST_VERSION, Location, RunFilter, Store, StoreError};

use common::pg::PgDb;
use common::*;

use common::records::*;

/// One backend under test: a SQLite file in a temporary directory, or a PostgreSQL database.
enum Backend {
    Sqlite(#[allow(dead_code)] tempfile::TempDir, PathBuf),
    Pg(PgDb),
}

impl Backend {
    fn sqlite() -> Backend {
        let d = tempfile::Builder::new()
            .prefix("iolab-pgtest")
            .tempdir()
            .unwrap();
        let p = d.path().join("iolab.db");
        Backend::Sqlite(d, p)
    }

    /// What `--db` / `IOLAB_DB` is given.
    fn arg(&self) -> String {
        match self {
            Backend::Sqlite(_, p) => p.to_string_lossy().into_owned(),
            Backend::Pg(db) => db.url.clone(),
        }
    }

    fn location(&self) -> Location {
        Location::parse(self.arg().as_ref())
    }

    fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(..) => "sqlite",
            Backend::Pg(_) => "postgres",
        }
    }

    fn open(&self) -> Store {
        Store::open_location(&self.location()).unwrap_or_else(|e| panic!("{}: {e}", self.name()))
    }

    /// Runs SQL as an administrator: sqlite3 through rusqlite, PostgreSQL through psql.
    fn admin_sql(&self, sql: &str) -> String {
        match self {
            Backend::Sqlite(_, p) => {
                let c = rusqlite::Connection::open(p).unwrap();
                let mut st = c.prepare(sql).unwrap();
                let n = st.column_count();
                let mut rows = st.query([]).unwrap();
                let mut out = Vec::new();
                while let Some(r) = rows.next().unwrap() {
                    let cols: Vec<String> = (0..n)
                        .map(|i| match r.get_ref(i).unwrap() {
                            rusqlite::types::ValueRef::Null => String::new(),
                            rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                            rusqlite::types::ValueRef::Real(v) => v.to_string(),
                            rusqlite::types::ValueRef::Text(t) => {
                                String::from_utf8_lossy(t).into_owned()
                            }
                            rusqlite::types::ValueRef::Blob(_) => "<blob>".into(),
                        })
                        .collect();
                    out.push(cols.join("|"));
                }
                out.join("\n")
            }
            Backend::Pg(db) => db.psql(sql).trim_end().to_string(),
        }
    }
}

/// Both backends, each fresh; `tag` names the PostgreSQL database.
fn both(tag: &str) -> [Backend; 2] {
    [Backend::sqlite(), Backend::Pg(PgDb::new(tag))]
}

macro_rules! require_pg {
    () => {
        require_root!();
        require_tool!("pg_ctlcluster", apt = "postgresql");
    };
}

fn json_of(r: &RunRecord) -> serde_json::Value {
    serde_json::to_value(r).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Round trip

#[test]
fn a_run_round_trips_the_same_on_both_backends() {
    require_pg!();
    let mut loaded = Vec::new();
    for b in both("roundtrip") {
        let mut s = b.open();
        assert_eq!(s.schema_version().unwrap(), LATEST_VERSION, "{}", b.name());
        assert_eq!(s.is_postgres(), b.name() == "postgres");
        let mut rec = record(Some("raid6"), &[1000.0, 1100.0, 900.0]);
        // The widest integers survive (u64 stored as its i64 bit pattern).
        rec.target.devices[0].size_bytes = u64::MAX;
        let id = store_like_run_loop(&mut s, &rec);
        let back = s.load_run(&id).unwrap();
        let mut want = rec.clone();
        want.id = id.clone();
        assert_eq!(json_of(&back), json_of(&want), "{}", b.name());
        assert_eq!(
            back.workloads[0].trials[2].ops[0].latency.summary(),
            rec.workloads[0].trials[2].ops[0].latency.summary()
        );

        // save_run keeps a given id; a second save is DuplicateId.
        let mut given = record(Some("given"), &[500.0]);
        given.id = "0badc0de".into();
        given.started_unix_ms += 10_000;
        assert_eq!(s.save_run(&given).unwrap(), "0badc0de");
        assert!(matches!(
            s.save_run(&given),
            Err(StoreError::DuplicateId(_))
        ));

        // References: last, last~1, label, a prefix; list filters and order.
        assert_eq!(s.resolve("last").unwrap(), "0badc0de");
        assert_eq!(s.resolve("last~1").unwrap(), id);
        assert_eq!(s.resolve("raid6").unwrap(), id);
        assert_eq!(s.resolve("0badc").unwrap(), "0badc0de");
        assert!(matches!(s.resolve("zzzz"), Err(StoreError::UnknownRun(_))));
        let all = s.list(&RunFilter::default()).unwrap();
        assert_eq!(
            all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["0badc0de", id.as_str()]
        );
        assert_eq!((all[1].workloads, all[1].trials), (2, 4));
        let by_target = RunFilter {
            target: Some("array/io".into()),
            limit: Some(1),
            ..RunFilter::default()
        };
        assert_eq!(s.list(&by_target).unwrap().len(), 1);
        let none = RunFilter {
            host: Some("elsewhere".into()),
            ..RunFilter::default()
        };
        assert!(s.list(&none).unwrap().is_empty());

        // The lab's later additions, and delete.
        let mut layout = back.layout.clone().unwrap();
        layout.degraded_ratio = Some(0.5);
        s.set_layout(&id, &layout).unwrap();
        assert_eq!(
            s.run_layout(&id).unwrap().unwrap().degraded_ratio,
            Some(0.5)
        );
        assert!(s.delete("0badc0de").unwrap());
        assert!(!s.delete("0badc0de").unwrap());
        // Queryable with plain SQL on either: the view joins the metrics up.
        let v = b.admin_sql(&format!(
            "SELECT value FROM trial_metrics WHERE run_id = '{id}' AND workload = 'db-8k'
             AND trial = 2 AND metric = 'read.iops'"
        ));
        assert!((v.parse::<f64>().unwrap() - 1100.0).abs() < 1e-9, "{v}");
        loaded.push(json_of(&s.load_run(&id).unwrap()));
    }
    // The same run reads back identically from both (ids aside: both were made fresh).
    for l in &mut loaded {
        l["id"] = serde_json::Value::Null;
    }
    assert_eq!(loaded[0], loaded[1]);
}

// ---------------------------------------------------------------------------------------------
// Migrations

/// A run layout as schema v1 stored it: free-form JSON.
fn v1_doc() -> serde_json::Value {
    serde_json::json!({"level": "6", "chunk_bytes": 65536, "members": "5", "filesystem": "xfs",
                       "mount_options": "noatime", "slow_disks": ["sdc"], "owner": "ops"})
}

#[test]
fn a_v1_schema_is_migrated_on_both_backends() {
    require_pg!();
    for b in both("migrate") {
        let loc = b.location();
        let id = {
            let mut s = Store::open_upto(&loc, 1).unwrap();
            assert_eq!(s.schema_version().unwrap(), 1, "{}", b.name());
            // A run without trials: the trial and op tables gained columns after v1
            // (open_loop, service) that this binary writes and a v1 table lacks.
            let mut rec = record(Some("old"), &[]);
            rec.workloads.iter_mut().for_each(|w| w.trials.clear());
            rec.layout = None;
            s.save_run(&rec).unwrap()
        };
        b.admin_sql(&format!(
            "UPDATE runs SET layout = '{}' WHERE id = '{id}'",
            v1_doc()
        ));
        let version_sql = match b {
            Backend::Sqlite(..) => "SELECT user_version FROM pragma_user_version",
            Backend::Pg(_) => "SELECT schema_version FROM iolab_meta",
        };
        assert_eq!(b.admin_sql(version_sql), "1");
        // Two openers at once: the migration runs once, both see the latest version.
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let loc = loc.clone();
                std::thread::spawn(move || {
                    Store::open_location(&loc).map(|s| s.schema_version().unwrap())
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap().unwrap(), LATEST_VERSION, "{}", b.name());
        }
        assert_eq!(b.admin_sql(version_sql), LATEST_VERSION.to_string());
        let s = b.open();
        let got = s.run_layout(&id).unwrap().unwrap();
        assert_eq!(
            got,
            iolab::store::schema::v2::from_v1(&v1_doc()),
            "{}",
            b.name()
        );
        assert_eq!(got.slow_members, ["sdc"]);
        assert_eq!(got.other["owner"], "ops");
    }
}

#[test]
fn postgres_types_are_64_bit_and_foreign_or_newer_databases_are_refused() {
    require_pg!();
    let b = Backend::Pg(PgDb::new("types"));
    drop(b.open());
    let types = b.admin_sql(
        "SELECT table_name || '.' || column_name || '=' || data_type FROM information_schema.columns
         WHERE table_schema = 'public' AND column_name IN ('started_ms', 'id', 'latency', 'value')
           AND table_name IN ('runs', 'trials', 'ops', 'metrics')
         ORDER BY 1",
    );
    assert_eq!(
        types,
        "metrics.value=double precision\nops.latency=bytea\nruns.id=text\nruns.started_ms=bigint\ntrials.id=bigint\ntrials.started_ms=bigint"
    );
    // Written by a newer iolab: refused, not touched.
    b.admin_sql("UPDATE iolab_meta SET schema_version = 99");
    let e = Store::open_location(&b.location()).unwrap_err();
    assert!(matches!(e, StoreError::PgTooNew { found: 99, .. }), "{e}");
    assert!(!e.to_string().contains(&b.arg()[..]), "{e}");

    // Another program's database: refused, and nothing of ours is created in it.
    let other = Backend::Pg(PgDb::new("foreign"));
    other.admin_sql("CREATE TABLE inventory (sku TEXT)");
    let e = Store::open_location(&other.location()).unwrap_err();
    assert!(matches!(e, StoreError::PgForeign { .. }), "{e}");
    assert!(e.to_string().contains("1 tables"), "{e}");
    let tables = other.admin_sql(
        "SELECT string_agg(table_name, ',') FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert_eq!(tables, "inventory");
}

// ---------------------------------------------------------------------------------------------
// Concurrent writers

const RUNS_PER_CHILD: usize = 8;

/// Not a test: the body of the writer processes. Runs only when re-executed with a role.
#[test]
#[ignore = "child process of the concurrency test"]
fn pg_child_role() {
    let Some((role, db)) = child_role() else {
        return;
    };
    let mut store = Store::open_location(&Location::parse(&db)).unwrap();
    write_runs(&mut store, &role, RUNS_PER_CHILD);
}

#[test]
fn two_writer_processes_at_once_on_both_backends() {
    require_pg!();
    for b in both("writers") {
        // Both start on an empty database: claiming and migrating it is part of the race.
        let children = [
            spawn_child("pg_child_role", "writer-a", b.arg()),
            spawn_child("pg_child_role", "writer-b", b.arg()),
        ];
        for c in children {
            let out = c.wait_with_output().unwrap();
            let so = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && so.contains("CHILD DONE"),
                "{}: child failed: {so}\n{}",
                b.name(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let s = b.open();
        for role in ["writer-a", "writer-b"] {
            let runs = s
                .list(&RunFilter {
                    label: Some(role.into()),
                    ..RunFilter::default()
                })
                .unwrap();
            assert_eq!(runs.len(), RUNS_PER_CHILD, "{} {role}", b.name());
            for r in &runs {
                assert_eq!(
                    (r.status, r.trials),
                    (RunStatus::Complete, 3),
                    "{}",
                    b.name()
                );
            }
        }
        assert_eq!(
            b.admin_sql("SELECT count(*) FROM trials"),
            (2 * RUNS_PER_CHILD * 3).to_string()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// push and compare across backends

#[test]
fn compare_reads_the_same_from_postgres_after_a_push() {
    require_pg!();
    let local = Backend::sqlite();
    let pg = Backend::Pg(PgDb::new("push"));
    let mut ids = Vec::new();
    {
        let mut s = local.open();
        for (i, (label, iops)) in [
            ("base", [1000.0, 1010.0, 990.0]),
            ("faster", [1500.0, 1520.0, 1480.0]),
            ("same", [1001.0, 1012.0, 985.0]),
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = record(Some(label), &iops);
            r.started_unix_ms += i as u64 * 1000;
            ids.push(s.save_run(&r).unwrap());
        }
    }
    let push = |args: &[&str]| {
        Iolab::new()
            .db(local.arg())
            .args(["store", "push", "--to", &pg.arg()])
            .args(args)
            .run()
    };
    let out = push(&[]);
    out.success()
        .stdout_has("pushed 3 run(s)")
        .stdout_lacks(&pg_password(&pg));
    // Again: nothing is duplicated.
    let again = push(&["--json"]);
    again.success();
    let doc: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(doc["copied"].as_array().unwrap().len(), 0);
    assert_eq!(doc["skipped"].as_array().unwrap().len(), 3);
    assert!(!again.stdout.contains(&pg_password(&pg)));
    assert_eq!(pg.admin_sql("SELECT count(*) FROM runs"), "3");
    assert_eq!(
        pg.admin_sql("SELECT string_agg(id, ',' ORDER BY started_ms) FROM runs"),
        ids.join(",")
    );

    let on = |b: &Backend, args: &[&str]| {
        let o = Iolab::new().db(b.arg()).env("TZ", "UTC").args(args).run();
        o.success();
        o.stdout.clone()
    };
    for args in [
        &["compare", "base", "faster", "same"][..],
        &["compare", "base", "faster", "same", "--format", "json"],
        &["show", "faster", "--json"],
        &["export", "base", "same", "--format", "csv"],
        &["list"],
    ] {
        let a = on(&local, args);
        let b = on(&pg, args);
        assert!(!a.is_empty());
        assert_eq!(a, b, "{args:?}");
    }
    assert!(on(&pg, &["compare", "base", "faster"]).contains("1.50x"));
    // Pushing to the database the runs come from is refused.
    Iolab::new()
        .db(local.arg())
        .args(["store", "push", "--to", &local.arg()])
        .run()
        .code(2);
}

fn pg_password(b: &Backend) -> String {
    match b {
        Backend::Pg(db) => db.password.clone(),
        Backend::Sqlite(..) => unreachable!(),
    }
}

// ---------------------------------------------------------------------------------------------
// Credentials

#[test]
fn a_wrong_password_is_one_line_naming_server_and_user_without_the_password() {
    require_pg!();
    let db = PgDb::new("creds");
    let wrong = "Wr0ngPassw0rd";
    let server = format!("127.0.0.1:{}/{}", db.port, db.name);
    let check = |o: &common::Out| {
        o.code(1);
        let e = o.stderr.trim_end();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains(&format!(
                "cannot log in to PostgreSQL at {server} as user 'iolab_test'"
            )),
            "{e}"
        );
        assert!(e.contains("password authentication failed"), "{e}");
        for secret in [wrong, db.password.as_str()] {
            assert!(
                !o.stderr.contains(secret) && !o.stdout.contains(secret),
                "{e}"
            );
        }
    };
    // In --db, in IOLAB_DB, and as the target of a push.
    check(
        &Iolab::new()
            .args(["--db", &db.url_with_password(wrong), "list"])
            .run(),
    );
    check(
        &Iolab::new()
            .db(db.url_with_password(wrong))
            .args(["show", "last"])
            .run(),
    );
    let local = Backend::sqlite();
    drop(local.open());
    check(
        &Iolab::new()
            .db(local.arg())
            .args(["store", "push", "--to", &db.url_with_password(wrong)])
            .run(),
    );
    // `--help` with IOLAB_DB set does not echo it.
    let help = Iolab::new().db(&db.url).args(["list", "--help"]).run();
    help.success().stdout_lacks(&db.password);

    // No password anywhere: said so, in one line.
    let none = Iolab::new()
        .db(db.url_without_password())
        .env("PGPASSFILE", "/nonexistent/pgpass")
        .env_remove("PGPASSWORD")
        .args(["list"])
        .run();
    none.code(1).stderr_has("asks for a password");

    // PGPASSWORD, and a pgpass file (read only when private, as libpq does).
    Iolab::new()
        .db(db.url_without_password())
        .env("PGPASSWORD", &db.password)
        .args(["list"])
        .run()
        .success();
    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!(
            "# test\n127.0.0.1:{}:{}:iolab_test:{}\n",
            db.port, db.name, db.password
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let with_file = || {
        Iolab::new()
            .db(db.url_without_password())
            .env("PGPASSFILE", &pgpass)
            .env_remove("PGPASSWORD")
            .args(["list"])
            .run()
    };
    with_file().success();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = with_file();
    o.code(1).stderr_has("chmod 600");
    assert!(!o.stderr.contains(&db.password));

    // Nothing listening: one line naming the server.
    Iolab::new()
        .db(format!(
            "postgres://iolab_test:{}@127.0.0.1:1/x",
            db.password
        ))
        .args(["list"])
        .run()
        .code(1)
        .stderr_has("cannot reach PostgreSQL at 127.0.0.1:1/x")
        .stderr_lacks(&db.password);
}

#[test]
fn a_run_saved_to_postgres_stores_its_command_line_without_the_password() {
    require_pg!();
    let db = PgDb::new("cmdline");
    let work = common::disk_tmpdir("iolab-pgrun");
    Iolab::new()
        .args([
            &format!("--db={}", db.url),
            "run",
            work.path().to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "4MiB",
            "--time",
            "200ms",
            "--repeat",
            "1",
            "--label",
            "pgrun",
        ])
        .run()
        .success()
        .stdout_has("saved as run")
        .stdout_lacks(&db.password)
        .stderr_lacks(&db.password);
    let o = Iolab::new()
        .db(&db.url)
        .args(["show", "pgrun", "--json"])
        .run();
    o.success();
    let rec: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let argv = rec["command_line"].to_string();
    assert!(
        argv.contains("--db=postgres://iolab_test:***@127.0.0.1"),
        "{argv}"
    );
    assert!(!o.stdout.contains(&db.password));
    assert_eq!(rec["workloads"][0]["trials"].as_array().unwrap().len(), 1);
    let stored = db.psql("SELECT command_line FROM runs");
    assert!(!stored.contains(&db.password), "{stored}");
}
