//! The results store: every run kept in SQLite (or a shared PostgreSQL database) with its exact
//! setup, so any report can be rebuilt without running anything again.
//!
//! One file (default `$XDG_DATA_HOME/iolab/iolab.db`), WAL mode and a busy timeout so several
//! iolab processes can write at once, one transaction per trial so a killed run keeps every
//! trial it finished. A file that is not ours, is damaged, or was written by a newer iolab is
//! refused with a typed error and never written to.
//!
//! `--db postgres://...` puts the same schema, with the same migrations, in a PostgreSQL
//! database a team shares ([`pg`] reaches the server, `backend` hides the dialect).
//!
//! The run loop calls [`Store::begin_run`], then [`Store::add_trial`] after each trial, then
//! [`Store::finish_run`]; readers call [`Store::resolve`], [`Store::load_run`] and
//! [`Store::list`]. The schema is in [`schema`]; `docs/store.md` describes it for users.

mod backend;
pub mod killed;
mod open;
pub mod owner;
pub mod pg;
mod read;
pub mod schema;
pub mod transfer;
mod write;

use std::path::{Path, PathBuf};

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

use crate::sample::RunStatus;

use backend::{Db, DbError};
pub use pg::PgUrl;
pub use schema::{APPLICATION_ID, LATEST_VERSION};
pub use write::ID_LEN;

/// How long a writer waits for another process's transaction before giving up. Generous,
/// because the database may sit on the very disk a benchmark is saturating.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why the store could not do what was asked. Each message is one line naming the file or run
/// and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Neither `$XDG_DATA_HOME` nor `$HOME` is set.
    #[error(
        "cannot place the results database: neither $XDG_DATA_HOME nor $HOME is set; pass --db PATH or set IOLAB_DB"
    )]
    NoDefaultPath,
    /// A read-only command found no database.
    #[error("no results database at {0}: no run has been stored there yet")]
    Missing(PathBuf),
    /// The directory for a new database could not be made.
    #[error("cannot create {path} for the results database: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is something else: not SQLite, or another program's SQLite database.
    #[error(
        "{path} is not an iolab results database ({why}); it was left untouched; choose another file with --db or IOLAB_DB"
    )]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        why: String,
    },
    /// SQLite reports the file damaged.
    #[error(
        "results database {path} is damaged ({detail}); iolab will not write to it; restore a backup or move it aside"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// SQLite's words.
        detail: String,
    },
    /// Written by a newer iolab with a schema this binary does not know.
    #[error(
        "results database {path} has schema version {found}, newer than this iolab understands ({known}); upgrade iolab to use it"
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: i32,
        /// The newest this binary knows.
        known: i32,
    },
    /// Any other SQLite failure (disk full, permission, locked past the timeout).
    #[error("results database {path}: {what}: {source}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file could not be read or checked.
    #[error("results database {path}: {what}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A stored value could not be decoded.
    #[error("run {id}: stored {what} cannot be read: {detail}")]
    BadData {
        /// The run.
        id: String,
        /// Which part.
        what: &'static str,
        /// Why.
        detail: String,
    },
    /// No run matches a reference.
    #[error(
        "no run matches '{0}'; give an id, a unique id prefix, a label, `last` or `last~N` (see `iolab list`)"
    )]
    UnknownRun(String),
    /// A prefix matches more than one run.
    #[error("'{reference}' matches {count} runs ({candidates}); type more of the id")]
    AmbiguousRun {
        /// What was typed.
        reference: String,
        /// How many runs it matches.
        count: usize,
        /// Some of them.
        candidates: String,
    },
    /// No lab matches a reference: `labs` are stored (none yet, or fewer than `last~N` asks
    /// for).
    #[error("no lab matches '{reference}'; {}", unknown_lab_hint(*.labs))]
    UnknownLab {
        /// What was typed.
        reference: String,
        /// How many labs the database holds.
        labs: usize,
    },
    /// A prefix matches more than one lab.
    #[error("'{reference}' matches labs {candidates}; type more of the id")]
    AmbiguousLab {
        /// What was typed.
        reference: String,
        /// The lab ids it matches.
        candidates: String,
    },
    /// `begin_run` was given an id that is taken.
    #[error("run {0} already exists in the results database")]
    DuplicateId(String),
    /// A label that could not be referred to.
    #[error("{0}")]
    BadLabel(String),
    /// A `postgres://` URL (or `PG*` setting) that cannot be used.
    #[error("--db {url}: {detail}")]
    BadUrl {
        /// The URL, password masked.
        url: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// The server could not be reached, or the database is not there.
    #[error("cannot reach PostgreSQL at {server}: {detail}")]
    PgConnect {
        /// `host:port/database`.
        server: String,
        /// Why.
        detail: String,
    },
    /// The server refused the login.
    #[error("cannot log in to PostgreSQL at {server} as user '{user}': {detail}")]
    PgLogin {
        /// `host:port/database`.
        server: String,
        /// The user name.
        user: String,
        /// The server's reason and what to check.
        detail: String,
    },
    /// A PostgreSQL database that holds tables of another program.
    #[error(
        "PostgreSQL database {server} is not an iolab results database ({why}); it was left untouched; give iolab a database of its own"
    )]
    PgForeign {
        /// `host:port/database`.
        server: String,
        /// What gave it away.
        why: String,
    },
    /// A PostgreSQL database written by a newer iolab.
    #[error(
        "PostgreSQL database {server} has schema version {found}, newer than this iolab understands ({known}); upgrade iolab to use it"
    )]
    PgTooNew {
        /// `host:port/database`.
        server: String,
        /// Its schema version.
        found: i32,
        /// The newest this binary knows.
        known: i32,
    },
    /// Any other PostgreSQL failure.
    #[error("PostgreSQL database {server}: {what}: {detail}")]
    Postgres {
        /// `host:port/database` (or the masked URL).
        server: String,
        /// What was being done.
        what: &'static str,
        /// The server's or client's words.
        detail: String,
    },
    /// A stored value of a type the store never writes there.
    #[error("results database {db}: {what}: {detail}")]
    Value {
        /// The database (file or masked URL).
        db: String,
        /// What was being done.
        what: &'static str,
        /// What was found.
        detail: String,
    },
}

impl StoreError {
    /// Whether the user can fix this by typing something else (exit 2) rather than the store
    /// failing (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            StoreError::UnknownRun(_)
                | StoreError::AmbiguousRun { .. }
                | StoreError::UnknownLab { .. }
                | StoreError::AmbiguousLab { .. }
                | StoreError::NoDefaultPath
                | StoreError::BadLabel(_)
                | StoreError::BadUrl { .. }
        )
    }
}

/// Results of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Where results are kept: a SQLite file (the default) or a PostgreSQL database.
#[derive(Clone, Debug)]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database, `postgres://user:pass@host:port/db`.
    Postgres(PgUrl),
}

impl Location {
    /// `--db` / `IOLAB_DB`: a `postgres://` or `postgresql://` URL, else a file path.
    pub fn parse(s: &std::ffi::OsStr) -> Location {
        match s.to_str() {
            Some(t) if PgUrl::is_url(t) => Location::Postgres(PgUrl::new(t)),
            _ => Location::File(PathBuf::from(s)),
        }
    }
}

impl From<std::ffi::OsString> for Location {
    /// What clap hands over for `--db` / `--to`.
    fn from(s: std::ffi::OsString) -> Location {
        Location::parse(&s)
    }
}

impl std::fmt::Display for Location {
    /// The file's path, or the URL with its password masked.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => write!(f, "{u}"),
        }
    }
}

/// An open results database.
pub struct Store {
    db: RefCell<Db>,
    location: Location,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location)
            .finish()
    }
}

/// One line of `iolab list`: a run without its trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Store id.
    pub id: String,
    /// How it ended (`incomplete` when its process died).
    pub status: RunStatus,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// End, ms since the Unix epoch.
    pub ended_unix_ms: Option<u64>,
    /// `--label`.
    pub label: Option<String>,
    /// `--note`.
    pub note: Option<String>,
    /// Host name.
    pub host: String,
    /// Suite name.
    pub suite: String,
    /// The target path.
    pub target: String,
    /// Its filesystem.
    pub fs_type: Option<String>,
    /// The lab it belongs to.
    pub lab_id: Option<String>,
    /// Workloads recorded.
    pub workloads: usize,
    /// Trials recorded, all workloads together.
    pub trials: usize,
}

/// Which runs `list` returns. Empty fields match everything.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    /// Exactly this label.
    pub label: Option<String>,
    /// Exactly this host.
    pub host: Option<String>,
    /// Target paths containing this text.
    pub target: Option<String>,
    /// Runs of this lab.
    pub lab_id: Option<String>,
    /// At most this many (newest first).
    pub limit: Option<usize>,
}

impl Store {
    /// Where the database lives by default: `$XDG_DATA_HOME/iolab/iolab.db`, or
    /// `~/.local/share/iolab/iolab.db` when `XDG_DATA_HOME` is unset or not absolute (as the
    /// XDG spec says to treat it).
    pub fn default_path() -> Result<PathBuf> {
        let xdg = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        let base = match xdg {
            Some(p) => p,
            None => std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .ok_or(StoreError::NoDefaultPath)?
                .join(".local/share"),
        };
        Ok(base.join("iolab").join("iolab.db"))
    }

    /// Where this store reads and writes (shown with any password masked).
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The file this store reads and writes; `None` on PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }

    /// Whether the results live on a PostgreSQL server.
    pub fn is_postgres(&self) -> bool {
        matches!(self.location, Location::Postgres(_))
    }

    /// The schema version of the open database (always [`LATEST_VERSION`] after `open`).
    pub fn schema_version(&self) -> Result<i32> {
        let mut db = self.db.borrow_mut();
        open::read_version(&mut db).map_err(self.err("reading the schema version"))
    }

    /// Maps a database error to a store error, recognising a damaged file.
    fn err(&self, what: &'static str) -> impl Fn(DbError) -> StoreError + '_ {
        move |e| db_error(&self.location, what, e)
    }

    /// One query on this store's connection.
    fn query(
        &self,
        what: &'static str,
        sql: &str,
        params: &[backend::Val],
    ) -> Result<Vec<backend::Row>> {
        self.db
            .borrow_mut()
            .query(sql, params)
            .map_err(self.err(what))
    }

    /// The first row of a query, if any.
    fn query_opt(
        &self,
        what: &'static str,
        sql: &str,
        params: &[backend::Val],
    ) -> Result<Option<backend::Row>> {
        Ok(self.query(what, sql, params)?.into_iter().next())
    }
}

/// A database error as a store error naming the file or server.
pub(crate) fn db_error(loc: &Location, what: &'static str, e: DbError) -> StoreError {
    match (e, loc) {
        (DbError::Sqlite(e), Location::File(p)) => sql_error(p, what, e),
        (DbError::Postgres(e), _) => StoreError::Postgres {
            server: loc.to_string(),
            what,
            detail: pg::detail(&e),
        },
        (DbError::Duplicate, _) => StoreError::Value {
            db: loc.to_string(),
            what,
            detail: "a row with this key exists already".into(),
        },
        (DbError::Value(detail), _) => StoreError::Value {
            db: loc.to_string(),
            what,
            detail,
        },
        (DbError::Sqlite(e), Location::Postgres(_)) => StoreError::Value {
            db: loc.to_string(),
            what,
            detail: e.to_string(),
        },
    }
}

/// Checks that a label can be referred to later: not empty, not `last`/`last~N` (those words
/// mean the newest runs), no line breaks, at most 200 characters.
pub fn check_label(label: &str) -> Result<()> {
    let bad = |why: &str| Err(StoreError::BadLabel(format!("--label '{label}' {why}")));
    if label.trim().is_empty() {
        return bad("is empty; give a name such as raid6-ssd");
    }
    if parse_last(label).is_some() {
        return bad("is reserved (`last` and `last~N` mean the newest runs); choose another label");
    }
    if label.contains(['\n', '\r']) {
        return bad("contains a line break; keep it on one line");
    }
    if label.chars().count() > 200 {
        return bad("is longer than 200 characters; shorten it");
    }
    Ok(())
}

/// What to give instead of a lab reference that matched none, knowing how many labs there are.
fn unknown_lab_hint(labs: usize) -> String {
    match labs {
        0 => "no lab is stored in this database yet (`iolab lab SPEC` stores one)".into(),
        n => format!(
            "give a lab id, a unique prefix of it, `last` or `last~N` ({n} lab{} stored; `iolab list` shows lab ids)",
            if n == 1 { " is" } else { "s are" }
        ),
    }
}

/// `last` -> 0, `last~N` -> N.
pub(crate) fn parse_last(reference: &str) -> Option<u64> {
    let r = reference.trim();
    if r == "last" {
        return Some(0);
    }
    r.strip_prefix("last~").and_then(|n| n.parse().ok())
}

pub(crate) fn sql_error(path: &Path, what: &'static str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        // The header was checked before SQLite saw the file, so "not a database" from SQLite
        // itself means a SQLite file damaged past recognition.
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        _ => StoreError::Sqlite {
            path: path.to_path_buf(),
            what,
            source: e,
        },
    }
}

/// How a status is spelled in the `runs.status` column.
pub(crate) fn status_str(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Failed => "failed",
        RunStatus::Incomplete => "incomplete",
    }
}

/// Reads a `runs.status` value.
pub(crate) fn parse_status(s: &str) -> Option<RunStatus> {
    Some(match s {
        "running" => RunStatus::Running,
        "complete" => RunStatus::Complete,
        "interrupted" => RunStatus::Interrupted,
        "failed" => RunStatus::Failed,
        "incomplete" => RunStatus::Incomplete,
        _ => return None,
    })
}

/// Integers go into SQLite as i64 bit patterns, so every u64 reads back exactly.
#[inline]
pub(crate) fn to_i64(v: u64) -> i64 {
    v as i64
}

/// The inverse of [`to_i64`].
#[inline]
pub(crate) fn to_u64(v: i64) -> u64 {
    v as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_that_could_not_be_referred_to_are_refused() {
        assert!(check_label("raid6-ssd").is_ok());
        for bad in ["", "  ", "last", "last~2", "a\nb"] {
            let e = check_label(bad).unwrap_err();
            assert!(e.is_usage(), "{bad:?}");
        }
        assert_eq!(parse_last("last~3"), Some(3));
        assert_eq!(parse_last("last~x"), None);
        assert_eq!(to_u64(to_i64(u64::MAX)), u64::MAX);
    }
}
