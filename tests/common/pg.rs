//! A real PostgreSQL server for the store tests, on loopback, without systemd.
//!
//! [`server`] starts Debian's cluster once per test binary (`pg_ctlcluster VER NAME start`;
//! tolerant of it running already, or of another process starting it at the same moment),
//! and makes a login role with a password. [`PgDb::new`] makes a database of its own for one
//! test, owned by that role, and drops it when the test ends. The cluster is left running:
//! `scripts/test` stops it at the end when it was not running before.
//!
//! Callers check `require_root!()` and `require_tool!("pg_ctlcluster", apt = "postgresql")`
//! first; after that a server that will not start is a test failure, not a skip.

use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The login role the tests use.
pub(crate) const ROLE: &str = "iolab_test";

/// A running cluster and the role's password.
#[derive(Debug)]
pub(crate) struct Server {
    /// The cluster's port on 127.0.0.1.
    pub(crate) port: u16,
    /// `ROLE`'s password (new for every test binary).
    pub(crate) password: String,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

fn sh(program: &str, args: &[&str]) -> Result<String, String> {
    let o = Command::new(program)
        .args(args)
        .current_dir("/")
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// `psql` as the `postgres` superuser on the cluster's socket.
pub(crate) fn psql_admin(port: u16, db: &str, sql: &str) -> Result<String, String> {
    let port = port.to_string();
    sh(
        "runuser",
        &[
            "-u",
            "postgres",
            "--",
            "psql",
            "-X",
            "-q",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-p",
            &port,
            "-d",
            db,
            "-c",
            sql,
        ],
    )
}

/// (version, name, port, online) of the first cluster `pg_lsclusters` lists.
fn cluster() -> Result<(String, String, u16, bool), String> {
    let out = sh("pg_lsclusters", &["-h"])?;
    let line = out
        .lines()
        .next()
        .ok_or("pg_lsclusters lists no cluster (pg_createcluster VERSION main makes one)")?;
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 4 {
        return Err(format!("cannot read pg_lsclusters: {line}"));
    }
    let port = f[2]
        .parse()
        .map_err(|_| format!("pg_lsclusters port: {line}"))?;
    Ok((f[0].into(), f[1].into(), port, f[3].starts_with("online")))
}

fn start() -> Result<Server, String> {
    let (ver, name, port, online) = cluster()?;
    if !online {
        // Another test binary may be starting it too: judge by the state afterwards.
        let r = sh("pg_ctlcluster", &[&ver, &name, "start"]);
        let (_, _, _, now) = cluster()?;
        if !now {
            return Err(format!("cannot start PostgreSQL {ver}/{name}: {r:?}"));
        }
    }
    // Ready for connections (start returns when it is, but a concurrent start may not have).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while psql_admin(port, "postgres", "SELECT 1").is_err() {
        if std::time::Instant::now() > deadline {
            return Err(format!("PostgreSQL on port {port} does not answer"));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let password = format!("pw{}x{nanos}", std::process::id());
    psql_admin(
        port,
        "postgres",
        &format!(
            "DO $$ BEGIN
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
                 CREATE ROLE {ROLE} LOGIN;
               END IF;
             END $$;
             ALTER ROLE {ROLE} LOGIN PASSWORD '{password}';"
        ),
    )?;
    Ok(Server { port, password })
}

/// The cluster, started when needed (once per test binary). Panics when it cannot be started:
/// call the skip macros first.
pub(crate) fn server() -> &'static Server {
    match SERVER.get_or_init(start) {
        Ok(s) => s,
        Err(e) => panic!("PostgreSQL for the tests: {e}"),
    }
}

/// A database for one test, dropped when it goes out of scope.
#[derive(Debug)]
pub(crate) struct PgDb {
    /// Its name.
    pub(crate) name: String,
    /// The cluster's port.
    pub(crate) port: u16,
    /// `postgres://iolab_test:PASSWORD@127.0.0.1:PORT/NAME`.
    pub(crate) url: String,
    /// The role's password (to check it never shows).
    pub(crate) password: String,
}

impl PgDb {
    /// A new empty database owned by [`ROLE`]; `tag` goes into its name.
    pub(crate) fn new(tag: &str) -> PgDb {
        let s = server();
        let n = NEXT_DB.fetch_add(1, Ordering::SeqCst);
        let name = format!("iolab_{tag}_{}_{n}", std::process::id());
        psql_admin(
            s.port,
            "postgres",
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .and_then(|_| {
            psql_admin(
                s.port,
                "postgres",
                &format!("CREATE DATABASE {name} OWNER {ROLE}"),
            )
        })
        .unwrap_or_else(|e| panic!("creating test database {name}: {e}"));
        PgDb {
            url: format!(
                "postgres://{ROLE}:{}@127.0.0.1:{}/{name}",
                s.password, s.port
            ),
            name,
            port: s.port,
            password: s.password.clone(),
        }
    }

    /// The URL without a password (for PGPASSWORD / pgpass tests).
    pub(crate) fn url_without_password(&self) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}/{}", self.port, self.name)
    }

    /// The URL with another password.
    pub(crate) fn url_with_password(&self, pw: &str) -> String {
        format!(
            "postgres://{ROLE}:{pw}@127.0.0.1:{}/{}",
            self.port, self.name
        )
    }

    /// Runs SQL in this database as the superuser and returns psql's unaligned output.
    pub(crate) fn psql(&self, sql: &str) -> String {
        psql_admin(self.port, &self.name, sql).unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        let _ = psql_admin(
            self.port,
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}
