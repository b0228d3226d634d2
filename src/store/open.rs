//! Opening a database: recognise it as ours before writing a single byte, make a new one, and
//! bring an old one up to the current schema. SQLite files and PostgreSQL databases share the
//! migration loop; how each is recognised and locked differs.

use std::io::Read;
use std::path::Path;

use std::cell::RefCell;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::backend::{Db, DbError, Dialect, PgConn, Val};
use super::schema::{APPLICATION_ID, LATEST_VERSION, MIGRATIONS, ddl};
use super::{BUSY_TIMEOUT, Location, Result, Store, StoreError, db_error, sql_error};

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What a database turned out to be.
enum Kind {
    /// Ours, at this schema version.
    Ours(i32),
    /// An empty database (or a zero-length file): safe to make ours.
    Empty,
}

impl Store {
    /// Opens the SQLite database at `path`, creating it (and its directories) when absent, and
    /// migrating it to the current schema.
    ///
    /// Refuses, without writing anything, a file that is not SQLite, another program's
    /// database, a damaged file, or one written by a newer iolab.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_upto(&Location::File(path.to_path_buf()), LATEST_VERSION)
    }

    /// Opens an existing SQLite database; [`StoreError::Missing`] when there is none, so
    /// read-only commands do not create empty files.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        Store::open(path)
    }

    /// Opens the store at `loc`: a SQLite file as [`Store::open`] does, or a PostgreSQL
    /// database (made ours when it has no tables, migrated when older, refused when another
    /// program's or newer).
    pub fn open_location(loc: &Location) -> Result<Store> {
        Store::open_upto(loc, LATEST_VERSION)
    }

    /// [`Store::open_location`] for read-only commands: a missing SQLite file is
    /// [`StoreError::Missing`]; a PostgreSQL database is always there once reachable.
    pub fn open_location_existing(loc: &Location) -> Result<Store> {
        match loc {
            Location::File(p) => Store::open_existing(p),
            Location::Postgres(_) => Store::open_location(loc),
        }
    }

    /// Opens and migrates no further than `version`: tests build old-schema databases with it.
    #[doc(hidden)]
    pub fn open_upto(loc: &Location, version: i32) -> Result<Store> {
        let db = match loc {
            Location::File(path) => Db::Sqlite(open_sqlite(path)?),
            Location::Postgres(url) => {
                Db::Postgres(Box::new(PgConn::new(super::pg::connect(url)?)))
            }
        };
        let mut store = Store {
            db: RefCell::new(db),
            location: loc.clone(),
        };
        if store.is_postgres() {
            store.claim_postgres()?;
        }
        store.migrate(version).map(|()| store)
    }

    fn too_new(&self, found: i32) -> StoreError {
        match &self.location {
            Location::File(path) => StoreError::TooNew {
                path: path.clone(),
                found,
                known: LATEST_VERSION,
            },
            Location::Postgres(_) => StoreError::PgTooNew {
                server: self.location.to_string(),
                found,
                known: LATEST_VERSION,
            },
        }
    }

    /// Makes an empty PostgreSQL database ours (a one-row `iolab_meta` table holds what
    /// SQLite keeps in its `application_id` and `user_version` pragmas), or checks that it is.
    /// Under an advisory lock, so two first writers agree.
    fn claim_postgres(&mut self) -> Result<()> {
        enum Found {
            Ours(i32),
            OtherApp(i64),
            OtherTables(i64),
        }
        let found = self
            .db
            .get_mut()
            .transaction(|db| -> std::result::Result<Found, DbError> {
                lock_schema(db)?;
                let r = db
                    .query_opt(
                        // pg_class, not information_schema: that one hides tables this
                        // role has no privileges on, and those make the database not ours.
                        "SELECT count(*), count(*) FILTER (WHERE c.relname = 'iolab_meta')
                         FROM pg_catalog.pg_class c
                         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p', 'f')",
                        &[],
                    )?
                    .ok_or_else(|| DbError::Value("no answer listing tables".into()))?;
                let (tables, meta) = (r.i64(0)?, r.i64(1)?);
                if meta == 1 {
                    let r = db
                        .query_opt("SELECT application_id, schema_version FROM iolab_meta", &[])?
                        .ok_or_else(|| DbError::Value("iolab_meta is empty".into()))?;
                    let app = r.i64(0)?;
                    return Ok(if app == i64::from(APPLICATION_ID) {
                        Found::Ours(r.i64(1)? as i32)
                    } else {
                        Found::OtherApp(app)
                    });
                }
                if tables > 0 {
                    return Ok(Found::OtherTables(tables));
                }
                db.batch(PG_META)?;
                db.execute(
                    "INSERT INTO iolab_meta (application_id, schema_version) VALUES (?1, 0)",
                    &[Val::I64(APPLICATION_ID.into())],
                )?;
                Ok(Found::Ours(0))
            })
            .map_err(self.err("creating the database"))?;
        let server = self.location.to_string();
        match found {
            Found::Ours(v) if v > LATEST_VERSION => Err(self.too_new(v)),
            Found::Ours(_) => Ok(()),
            Found::OtherApp(app) => Err(StoreError::PgForeign {
                server,
                why: format!("its iolab_meta names application id {app:#010x}"),
            }),
            Found::OtherTables(n) => Err(StoreError::PgForeign {
                server,
                why: format!("it has {n} tables and views of its own and no iolab_meta"),
            }),
        }
    }

    /// Applies every migration newer than the database, up to `upto`, each in its own
    /// transaction that takes the write lock (SQLite's `BEGIN IMMEDIATE`, PostgreSQL's
    /// advisory lock) and re-reads the version, so concurrent openers migrate once.
    fn migrate(&mut self, upto: i32) -> Result<()> {
        for m in MIGRATIONS.iter().filter(|m| m.version <= upto) {
            if self.schema_version()? >= m.version {
                continue;
            }
            let loc = self.location.clone();
            self.db
                .get_mut()
                .transaction(|db| -> std::result::Result<(), DbError> {
                    lock_schema(db)?;
                    if read_version(db)? < m.version {
                        db.batch(&ddl(db.dialect(), m.sql))?;
                        if let Some(convert) = m.convert {
                            convert(db)?;
                        }
                        write_version(db, m.version)?;
                    }
                    Ok(())
                })
                .map_err(|e| db_error(&loc, "migrating the schema", e))?;
        }
        let v = self.schema_version()?;
        if v > LATEST_VERSION {
            return Err(self.too_new(v));
        }
        Ok(())
    }
}

/// The table that marks a PostgreSQL database as ours and holds its schema version.
const PG_META: &str = "CREATE TABLE iolab_meta (
    application_id  BIGINT NOT NULL,
    schema_version  BIGINT NOT NULL
)";

/// Serialises schema changes on PostgreSQL (SQLite's `BEGIN IMMEDIATE` already does).
fn lock_schema(db: &mut Db) -> std::result::Result<(), DbError> {
    if db.dialect() == Dialect::Postgres {
        db.execute(
            "SELECT pg_advisory_xact_lock(?1)",
            &[Val::I64(APPLICATION_ID.into())],
        )?;
    }
    Ok(())
}

/// The schema version: `PRAGMA user_version`, or `iolab_meta.schema_version`.
pub(crate) fn read_version(db: &mut Db) -> std::result::Result<i32, DbError> {
    let sql = match db.dialect() {
        Dialect::Sqlite => "SELECT user_version FROM pragma_user_version",
        Dialect::Postgres => "SELECT schema_version FROM iolab_meta",
    };
    let r = db
        .query_opt(sql, &[])?
        .ok_or_else(|| DbError::Value("no schema version".into()))?;
    Ok(r.i64(0)? as i32)
}

fn write_version(db: &mut Db, v: i32) -> std::result::Result<(), DbError> {
    match db.dialect() {
        Dialect::Sqlite => db.batch(&format!("PRAGMA user_version = {v}")),
        Dialect::Postgres => db
            .execute(
                "UPDATE iolab_meta SET schema_version = ?1",
                &[Val::I64(v.into())],
            )
            .map(|_| ()),
    }
}

/// Opens a SQLite file and checks it is ours (claiming it when empty), in WAL mode with
/// synchronous writes and foreign keys on; migrations come after.
fn open_sqlite(path: &Path) -> Result<Connection> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    check_header(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|e| sql_error(path, "opening", e))?;
    let e = |what| move |e| sql_error(path, what, e);
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(e("setting the busy timeout"))?;
    let version = match classify(&conn, path)? {
        Kind::Ours(v) => v,
        Kind::Empty => claim(&mut conn, path)?,
    };
    if version > LATEST_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: version,
            known: LATEST_VERSION,
        });
    }
    // From here on the file is known to be ours.
    set_wal(&conn, path)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(e("setting synchronous"))?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(e("enabling foreign keys"))?;
    Ok(conn)
}

/// Reads the identity pragmas; nothing here writes. One statement, so one snapshot: a
/// process creating the file at the same moment is seen either before or after.
fn classify(conn: &Connection, path: &Path) -> Result<Kind> {
    let (app, version, objects): (i32, i32, i64) = conn
        .query_row(
            "SELECT (SELECT application_id FROM pragma_application_id),
                    (SELECT user_version FROM pragma_user_version),
                    (SELECT count(*) FROM sqlite_master)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(|e| sql_error(path, "reading the database header", e))?;
    if app == APPLICATION_ID {
        Ok(Kind::Ours(version))
    } else if app == 0 && version == 0 && objects == 0 {
        Ok(Kind::Empty)
    } else {
        Err(StoreError::Foreign {
            path: path.to_path_buf(),
            why: if app != 0 {
                format!("it belongs to another program, application id {app:#010x}")
            } else {
                format!("it is a SQLite database with {objects} tables and indexes of its own")
            },
        })
    }
}

/// Marks an empty database as ours. Done in a rollback-journal transaction that re-checks
/// emptiness, so the application id lands in the main file and two processes creating the
/// same file agree.
fn claim(conn: &mut Connection, path: &Path) -> Result<i32> {
    let e = |e| sql_error(path, "creating the database", e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(e)?;
    let app: i32 = tx
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(e)?;
    let objects: i64 = tx
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(e)?;
    if app == 0 && objects == 0 {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(e)?;
    }
    tx.commit().map_err(e)?;
    // Someone else may have claimed it first, for us or for themselves: look again.
    match classify(conn, path)? {
        Kind::Ours(v) => Ok(v),
        Kind::Empty => Err(StoreError::Foreign {
            path: path.to_path_buf(),
            why: "it could not be marked as an iolab database".to_string(),
        }),
    }
}

/// Switches to WAL (persistent once set). Another process holding the file can make the
/// switch report busy for a moment; wait for it like any other lock.
fn set_wal(conn: &Connection, path: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let r: rusqlite::Result<String> =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0));
        match r {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(_) | Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(mode) => {
                return Err(StoreError::Io {
                    path: path.to_path_buf(),
                    what: "switching to WAL mode",
                    source: std::io::Error::other(format!("journal mode stayed {mode}")),
                });
            }
            Err(e) => return Err(sql_error(path, "switching to WAL mode", e)),
        }
    }
}

/// Looks at the first bytes before SQLite does: a file that is not SQLite at all, or whose
/// header names another program, is refused without being opened.
fn check_header(path: &Path) -> Result<()> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                what: "opening",
                source: e,
            });
        }
    };
    let mut head = [0u8; 100];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(StoreError::Io {
                    path: path.to_path_buf(),
                    what: "reading its header",
                    source: e,
                });
            }
        }
    }
    if got == 0 {
        return Ok(()); // a zero-length file: SQLite treats it as a new, empty database
    }
    if got < SQLITE_MAGIC.len() || &head[..16] != SQLITE_MAGIC {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            why: "not a SQLite database".to_string(),
        });
    }
    if got < head.len() {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("only {got} bytes, shorter than a SQLite header"),
        });
    }
    let app = i32::from_be_bytes([head[68], head[69], head[70], head[71]]);
    if app != 0 && app != APPLICATION_ID {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            why: format!("it belongs to another program, application id {app:#010x}"),
        });
    }
    Ok(())
}
