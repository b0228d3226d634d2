//! The two databases the store can sit on, behind the few calls the store makes: run a
//! statement, run a query and get its rows as plain values, run a batch, a transaction.
//!
//! The store's SQL is written once, in SQLite's spelling with numbered `?N` parameters; for
//! PostgreSQL [`to_postgres`] turns the parameters into `$N` and swaps the one function the two
//! dialects name differently (`instr` -> `strpos`). Values cross as [`Val`] (64-bit integers,
//! doubles, text, bytes), so every column type is one of BIGINT, DOUBLE PRECISION, TEXT and
//! BYTEA on PostgreSQL and the same row decoding serves both.

use std::collections::HashMap;

use postgres::types::{ToSql, Type};

/// Which SQL dialect a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// The embedded default.
    Sqlite,
    /// A shared server.
    Postgres,
}

/// One SQL value, the common ground of both databases.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    /// NULL.
    Null,
    /// Any integer (u64 values go in as their i64 bit pattern, see `to_i64`).
    I64(i64),
    /// A floating-point number.
    F64(f64),
    /// Text.
    Text(String),
    /// Bytes (latency histograms).
    Blob(Vec<u8>),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::I64(v)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::F64(v)
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Blob(v)
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

/// A failure below the store: the database's own error, or a value of an unexpected type.
#[derive(Debug)]
pub(crate) enum DbError {
    /// SQLite's error.
    Sqlite(rusqlite::Error),
    /// PostgreSQL's (or its client's) error.
    Postgres(postgres::Error),
    /// A column held something the store did not write there.
    Value(String),
    /// A duplicate primary key (a run id that is taken).
    Duplicate,
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> DbError {
        DbError::Sqlite(e)
    }
}

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> DbError {
        if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) {
            return DbError::Duplicate;
        }
        DbError::Postgres(e)
    }
}

/// One result row.
pub(crate) struct Row(pub(crate) Vec<Val>);

impl Row {
    fn get(&self, i: usize) -> Result<&Val, DbError> {
        self.0
            .get(i)
            .ok_or_else(|| DbError::Value(format!("no column {i}")))
    }

    /// An integer column that may be NULL.
    pub(crate) fn opt_i64(&self, i: usize) -> Result<Option<i64>, DbError> {
        match self.get(i)? {
            Val::Null => Ok(None),
            Val::I64(v) => Ok(Some(*v)),
            other => Err(DbError::Value(format!(
                "column {i}: expected an integer, found {other:?}"
            ))),
        }
    }

    /// An integer column.
    pub(crate) fn i64(&self, i: usize) -> Result<i64, DbError> {
        self.opt_i64(i)?
            .ok_or_else(|| DbError::Value(format!("column {i}: NULL where an integer belongs")))
    }

    /// A text column that may be NULL.
    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        match self.get(i)? {
            Val::Null => Ok(None),
            Val::Text(s) => Ok(Some(s.clone())),
            other => Err(DbError::Value(format!(
                "column {i}: expected text, found {other:?}"
            ))),
        }
    }

    /// A text column.
    pub(crate) fn text(&self, i: usize) -> Result<String, DbError> {
        self.opt_text(i)?
            .ok_or_else(|| DbError::Value(format!("column {i}: NULL where text belongs")))
    }

    /// A bytes column (an empty value for NULL).
    pub(crate) fn blob(&self, i: usize) -> Result<Vec<u8>, DbError> {
        match self.get(i)? {
            Val::Null => Ok(Vec::new()),
            Val::Blob(b) => Ok(b.clone()),
            other => Err(DbError::Value(format!(
                "column {i}: expected bytes, found {other:?}"
            ))),
        }
    }
}

/// A PostgreSQL connection with its prepared statements, so a statement the store runs
/// again (every trial's inserts) costs one round trip, not two.
pub(crate) struct PgConn {
    pub(crate) client: postgres::Client,
    statements: HashMap<String, postgres::Statement>,
}

impl PgConn {
    pub(crate) fn new(client: postgres::Client) -> PgConn {
        PgConn {
            client,
            statements: HashMap::new(),
        }
    }

    fn statement(&mut self, sql: &str) -> Result<postgres::Statement, DbError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

/// An open connection of either kind.
pub(crate) enum Db {
    /// A SQLite file.
    Sqlite(rusqlite::Connection),
    /// A PostgreSQL server.
    Postgres(Box<PgConn>),
}

impl Db {
    /// The dialect of this connection.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs a statement and returns how many rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(sql)?;
                let n = st.execute(rusqlite::params_from_iter(params.iter().map(SqliteVal)))?;
                Ok(n as u64)
            }
            Db::Postgres(p) => {
                let st = p.statement(&to_postgres(sql))?;
                let args = pg_args(&st, params)?;
                let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(AsRef::as_ref).collect();
                Ok(p.client.execute(&st, &refs)?)
            }
        }
    }

    /// Runs a query and returns every row.
    pub(crate) fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, DbError> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(sql)?;
                let n = st.column_count();
                let mut rows =
                    st.query(rusqlite::params_from_iter(params.iter().map(SqliteVal)))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    let mut row = Vec::with_capacity(n);
                    for i in 0..n {
                        row.push(match r.get_ref(i)? {
                            rusqlite::types::ValueRef::Null => Val::Null,
                            rusqlite::types::ValueRef::Integer(v) => Val::I64(v),
                            rusqlite::types::ValueRef::Real(v) => Val::F64(v),
                            rusqlite::types::ValueRef::Text(t) => {
                                Val::Text(String::from_utf8_lossy(t).into_owned())
                            }
                            rusqlite::types::ValueRef::Blob(b) => Val::Blob(b.to_vec()),
                        });
                    }
                    out.push(Row(row));
                }
                Ok(out)
            }
            Db::Postgres(p) => {
                let st = p.statement(&to_postgres(sql))?;
                let args = pg_args(&st, params)?;
                let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(AsRef::as_ref).collect();
                let rows = p.client.query(&st, &refs)?;
                rows.iter().map(pg_row).collect()
            }
        }
    }

    /// The first row of a query, if any.
    pub(crate) fn query_opt(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs several statements without parameters (schema changes).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        match self {
            Db::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Db::Postgres(p) => Ok(p.client.batch_execute(sql)?),
        }
    }

    /// Runs `f` in a transaction: committed when it returns `Ok`, rolled back otherwise.
    /// SQLite takes the write lock at once (`BEGIN IMMEDIATE`), so a read-then-write inside
    /// sees no other writer; on PostgreSQL constraints do that job (a taken id is a
    /// unique violation) and schema steps take an advisory lock.
    pub(crate) fn transaction<T, E: From<DbError>>(
        &mut self,
        f: impl FnOnce(&mut Db) -> Result<T, E>,
    ) -> Result<T, E> {
        let begin = match self.dialect() {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        };
        self.batch(begin)?;
        match f(self) {
            Ok(v) => {
                if let Err(e) = self.batch("COMMIT") {
                    let _ = self.batch("ROLLBACK");
                    return Err(e.into());
                }
                Ok(v)
            }
            Err(e) => {
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// `?N` -> `$N`, `instr(` -> `strpos(`. The store's SQL has no string literal holding a `?`.
fn to_postgres(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out.replace("instr(", "strpos(")
}

/// A [`Val`] as a SQLite parameter.
struct SqliteVal<'a>(&'a Val);

impl rusqlite::ToSql for SqliteVal<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Val::Null => ValueRef::Null,
            Val::I64(v) => ValueRef::Integer(*v),
            Val::F64(v) => ValueRef::Real(*v),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
            Val::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// The parameters of a prepared PostgreSQL statement, each in the type the server chose for it.
fn pg_args(
    st: &postgres::Statement,
    params: &[Val],
) -> Result<Vec<Box<dyn ToSql + Sync>>, DbError> {
    if st.params().len() != params.len() {
        return Err(DbError::Value(format!(
            "statement takes {} parameters, given {}",
            st.params().len(),
            params.len()
        )));
    }
    st.params()
        .iter()
        .zip(params)
        .map(|(ty, v)| pg_arg(ty, v))
        .collect()
}

fn pg_arg(ty: &Type, v: &Val) -> Result<Box<dyn ToSql + Sync>, DbError> {
    let bad = || DbError::Value(format!("cannot pass {v:?} as PostgreSQL type {ty}"));
    Ok(match v {
        Val::Null => match *ty {
            Type::INT8 => Box::new(None::<i64>),
            Type::INT4 => Box::new(None::<i32>),
            Type::INT2 => Box::new(None::<i16>),
            Type::FLOAT8 => Box::new(None::<f64>),
            Type::BYTEA => Box::new(None::<Vec<u8>>),
            Type::BOOL => Box::new(None::<bool>),
            _ => Box::new(None::<String>),
        },
        Val::I64(x) => match *ty {
            Type::INT8 => Box::new(*x),
            Type::INT4 => Box::new(i32::try_from(*x).map_err(|_| bad())?),
            Type::INT2 => Box::new(i16::try_from(*x).map_err(|_| bad())?),
            Type::FLOAT8 => Box::new(*x as f64),
            Type::BOOL => Box::new(*x != 0),
            _ => return Err(bad()),
        },
        Val::F64(x) => match *ty {
            Type::FLOAT8 => Box::new(*x),
            Type::FLOAT4 => Box::new(*x as f32),
            _ => return Err(bad()),
        },
        Val::Text(s) => match *ty {
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                Box::new(s.clone())
            }
            _ => return Err(bad()),
        },
        Val::Blob(b) => match *ty {
            Type::BYTEA => Box::new(b.clone()),
            _ => return Err(bad()),
        },
    })
}

/// A PostgreSQL row as plain values.
fn pg_row(r: &postgres::Row) -> Result<Row, DbError> {
    let mut out = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let v = match *col.type_() {
            Type::INT8 => r.try_get::<_, Option<i64>>(i)?.map(Val::I64),
            Type::INT4 => r.try_get::<_, Option<i32>>(i)?.map(|v| Val::I64(v.into())),
            Type::INT2 => r.try_get::<_, Option<i16>>(i)?.map(|v| Val::I64(v.into())),
            Type::BOOL => r.try_get::<_, Option<bool>>(i)?.map(|v| Val::I64(v.into())),
            Type::FLOAT8 => r.try_get::<_, Option<f64>>(i)?.map(Val::F64),
            Type::FLOAT4 => r.try_get::<_, Option<f32>>(i)?.map(|v| Val::F64(v.into())),
            Type::BYTEA => r.try_get::<_, Option<Vec<u8>>>(i)?.map(Val::Blob),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                r.try_get::<_, Option<String>>(i)?.map(Val::Text)
            }
            ref other => {
                return Err(DbError::Value(format!(
                    "column {} has PostgreSQL type {other}, which the store does not use",
                    col.name()
                )));
            }
        };
        out.push(v.unwrap_or(Val::Null));
    }
    Ok(Row(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_sql_becomes_postgres_sql() {
        assert_eq!(
            to_postgres("SELECT id FROM runs WHERE id = ?1 AND instr(t, ?12) > 0"),
            "SELECT id FROM runs WHERE id = $1 AND strpos(t, $12) > 0"
        );
        assert_eq!(to_postgres("DEFAULT '[]'"), "DEFAULT '[]'");
    }

    #[test]
    fn rows_decode_and_refuse_wrong_types() {
        let mut db = Db::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
        db.batch("CREATE TABLE t (a INTEGER, b TEXT, c BLOB, d REAL)")
            .unwrap();
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            &[
                Val::I64(-1),
                "x".into(),
                Val::Blob(vec![1, 2]),
                Val::F64(0.5),
            ],
        )
        .unwrap();
        let r = db
            .query_opt("SELECT a, b, c, d FROM t", &[])
            .unwrap()
            .unwrap();
        assert_eq!(r.i64(0).unwrap(), -1);
        assert_eq!(r.text(1).unwrap(), "x");
        assert_eq!(r.blob(2).unwrap(), vec![1, 2]);
        assert!(r.text(0).is_err() && r.i64(1).is_err() && r.i64(9).is_err());
        // A failed transaction leaves nothing behind.
        let e: Result<(), DbError> = db.transaction(|db| {
            db.execute("INSERT INTO t (a) VALUES (?1)", &[Val::I64(2)])?;
            Err(DbError::Value("stop".into()))
        });
        assert!(e.is_err());
        let n = db
            .query_opt("SELECT count(*) FROM t", &[])
            .unwrap()
            .unwrap();
        assert_eq!(n.i64(0).unwrap(), 1);
    }
}
