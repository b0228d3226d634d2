//! Opening a database: recognise it as ours before writing a single byte, make a new one, and
//! bring an old one up to the current schema.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::schema::{APPLICATION_ID, LATEST_VERSION, MIGRATIONS};
use super::{BUSY_TIMEOUT, Result, Store, StoreError, sql_error};

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What a database file turned out to be.
enum Kind {
    /// Ours, at this schema version.
    Ours(i32),
    /// An empty SQLite database (or a zero-length file): safe to make ours.
    Empty,
}

impl Store {
    /// Opens the database at `path`, creating it (and its directories) when absent, and
    /// migrating it to the current schema.
    ///
    /// Refuses, without writing anything, a file that is not SQLite, another program's
    /// database, a damaged file, or one written by a newer iolab.
    pub fn open(path: &Path) -> Result<Store> {
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
        let conn =
            Connection::open_with_flags(path, flags).map_err(|e| sql_error(path, "opening", e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.prepare()?;
        Ok(store)
    }

    /// Opens an existing database; [`StoreError::Missing`] when there is none, so read-only
    /// commands do not create empty files.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        Store::open(path)
    }

    fn prepare(&mut self) -> Result<()> {
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(self.err("setting the busy timeout"))?;
        let version = match self.classify()? {
            Kind::Ours(v) => v,
            Kind::Empty => self.claim()?,
        };
        if version > LATEST_VERSION {
            return Err(self.too_new(version));
        }
        // From here on the file is known to be ours.
        self.set_wal()?;
        self.conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(self.err("setting synchronous"))?;
        self.conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(self.err("enabling foreign keys"))?;
        self.migrate()
    }

    fn too_new(&self, found: i32) -> StoreError {
        StoreError::TooNew {
            path: self.path.clone(),
            found,
            known: LATEST_VERSION,
        }
    }

    /// Reads the identity pragmas; nothing here writes. One statement, so one snapshot: a
    /// process creating the file at the same moment is seen either before or after.
    fn classify(&self) -> Result<Kind> {
        let (app, version, objects): (i32, i32, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT application_id FROM pragma_application_id),
                        (SELECT user_version FROM pragma_user_version),
                        (SELECT count(*) FROM sqlite_master)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(self.err("reading the database header"))?;
        if app == APPLICATION_ID {
            Ok(Kind::Ours(version))
        } else if app == 0 && version == 0 && objects == 0 {
            Ok(Kind::Empty)
        } else {
            Err(StoreError::Foreign {
                path: self.path.clone(),
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
    fn claim(&mut self) -> Result<i32> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql_error(&self.path, "creating the database", e))?;
        let app: i32 = tx
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(|e| sql_error(&self.path, "creating the database", e))?;
        let objects: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| sql_error(&self.path, "creating the database", e))?;
        if app == 0 && objects == 0 {
            tx.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(|e| sql_error(&self.path, "creating the database", e))?;
        }
        tx.commit()
            .map_err(|e| sql_error(&self.path, "creating the database", e))?;
        // Someone else may have claimed it first, for us or for themselves: look again.
        match self.classify()? {
            Kind::Ours(v) => Ok(v),
            Kind::Empty => Err(StoreError::Foreign {
                path: self.path.clone(),
                why: "it could not be marked as an iolab database".to_string(),
            }),
        }
    }

    /// Switches to WAL (persistent once set). Another process holding the file can make the
    /// switch report busy for a moment; wait for it like any other lock.
    fn set_wal(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            let r: rusqlite::Result<String> =
                self.conn
                    .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0));
            match r {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
                Ok(_) | Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Ok(mode) => {
                    return Err(StoreError::Io {
                        path: self.path.clone(),
                        what: "switching to WAL mode",
                        source: std::io::Error::other(format!("journal mode stayed {mode}")),
                    });
                }
                Err(e) => return Err(sql_error(&self.path, "switching to WAL mode", e)),
            }
        }
    }

    /// Applies every migration newer than the file, each in its own immediate transaction that
    /// re-reads the version, so concurrent openers migrate once.
    fn migrate(&mut self) -> Result<()> {
        for m in MIGRATIONS {
            let current = self.schema_version()?;
            if current >= m.version {
                continue;
            }
            let path = self.path.clone();
            let e = |e| sql_error(&path, "migrating the schema", e);
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(e)?;
            let current: i32 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(e)?;
            if current < m.version {
                tx.execute_batch(m.sql).map_err(e)?;
                if let Some(convert) = m.convert {
                    convert(&tx).map_err(e)?;
                }
                tx.pragma_update(None, "user_version", m.version)
                    .map_err(e)?;
            }
            tx.commit().map_err(e)?;
        }
        let v = self.schema_version()?;
        if v > LATEST_VERSION {
            return Err(self.too_new(v));
        }
        Ok(())
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
