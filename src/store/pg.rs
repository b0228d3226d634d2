//! Reaching a PostgreSQL server: the URL a user gives (`postgres://user:pass@host:port/db`),
//! the libpq conventions a team already uses for credentials (`PGHOST`, `PGPORT`, `PGUSER`,
//! `PGDATABASE`, `PGPASSWORD`, `PGPASSFILE` / `~/.pgpass`), and error messages that name the
//! server and user but never the password.
//!
//! The connection is unencrypted (`NoTls`): use it over loopback, a VPN or an SSH tunnel, not
//! across networks you do not trust (docs/store.md says so to users).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::StoreError;

/// A PostgreSQL URL as given, and the same with its password masked: the only form that is
/// ever shown.
#[derive(Clone)]
pub struct PgUrl {
    url: String,
    shown: String,
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl std::fmt::Display for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PgUrl {
    /// Whether `s` names a PostgreSQL database rather than a file.
    pub fn is_url(s: &str) -> bool {
        s.starts_with("postgres://") || s.starts_with("postgresql://")
    }

    /// Wraps a URL (see [`PgUrl::is_url`]).
    pub fn new(url: &str) -> PgUrl {
        PgUrl {
            url: url.to_string(),
            shown: redact_url(url),
        }
    }

    /// The URL with its password masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` with this URL's password (as typed, and percent-decoded) masked: for messages
    /// that quote parts of what was given.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for pw in url_passwords(&self.url) {
            if !pw.is_empty() {
                out = out.replace(&pw, "***");
            }
        }
        out
    }
}

/// The passwords written in a URL: after `user:` and in `password=`, raw and decoded.
fn url_passwords(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let auth = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if let Some((userinfo, _)) = auth.rsplit_once('@') {
        if let Some((_, pw)) = userinfo.split_once(':') {
            out.push(pw.to_string());
        }
    }
    if let Some((_, query)) = rest.split_once('?') {
        for kv in query.split('&') {
            if let Some((k, v)) = kv.split_once('=') {
                if k.eq_ignore_ascii_case("password") {
                    out.push(v.to_string());
                }
            }
        }
    }
    let decoded: Vec<String> = out.iter().map(|p| percent_decode(p)).collect();
    out.extend(decoded);
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Masks the password of a `postgres://` URL (`user:***@host`, `password=***`); anything that
/// is not such a URL comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_end);
    let auth = match auth.rfind('@') {
        Some(at) => {
            let (userinfo, host) = auth.split_at(at);
            match userinfo.find(':') {
                Some(c) => format!("{}:***{host}", &userinfo[..c]),
                None => auth.to_string(),
            }
        }
        None => auth.to_string(),
    };
    // Query parameters: password=... (libpq accepts it there too).
    let tail = match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let parts: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}{}", parts.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{auth}{tail}")
}

/// Masks every PostgreSQL URL's password inside free text (a command line argument such as
/// `--db=postgres://u:p@h/db`), so stored command lines and messages never carry one.
pub fn redact_text(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let at = ["postgresql://", "postgres://"]
            .iter()
            .filter_map(|s| rest.find(s))
            .min();
        let Some(i) = at else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |e| i + e);
        out.push_str(&redact_url(&rest[i..end]));
        rest = &rest[end..];
    }
}

/// Where and as whom a connection goes, for messages: `host:port/db` and the user.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) server: String,
    pub(crate) user: String,
    /// Why a pgpass file was not used, when it was not (said when the login fails).
    pub(crate) pgpass_note: Option<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The connection settings: the URL first, then the `PG*` environment, then the pgpass file.
pub(crate) fn config(url: &PgUrl) -> Result<(postgres::Config, Target), StoreError> {
    let mut cfg: postgres::Config =
        url.url
            .parse()
            .map_err(|e: postgres::Error| StoreError::BadUrl {
                url: url.shown.clone(),
                detail: url.scrub(&detail(&e)),
            })?;
    if cfg.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(h) => cfg.host(&h),
            None if Path::new("/var/run/postgresql").is_dir() => cfg.host("/var/run/postgresql"),
            None => cfg.host("localhost"),
        };
    }
    if cfg.get_ports().is_empty() {
        if let Some(p) = env("PGPORT") {
            let port = p.parse().map_err(|_| StoreError::BadUrl {
                url: url.shown.clone(),
                detail: format!("PGPORT={p} is not a port number"),
            })?;
            cfg.port(port);
        }
    }
    if cfg.get_user().is_none() {
        match env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
        {
            Some(u) => cfg.user(&u),
            None => {
                return Err(StoreError::BadUrl {
                    url: url.shown.clone(),
                    detail:
                        "no user name: write it in the URL (postgres://USER@host/db) or set PGUSER"
                            .into(),
                });
            }
        };
    }
    if cfg.get_dbname().is_none() {
        if let Some(d) = env("PGDATABASE") {
            cfg.dbname(&d);
        }
    }
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(Duration::from_secs(10));
    }
    let user = cfg.get_user().unwrap_or_default().to_string();
    let host = match cfg.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(postgres::config::Host::Unix(p)) => p.to_string_lossy().into_owned(),
        None => "localhost".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let dbname = cfg.get_dbname().unwrap_or(&user).to_string();
    let mut target = Target {
        server: format!("{host}:{port}/{dbname}"),
        user: user.clone(),
        pgpass_note: None,
    };
    if cfg.get_password().is_none() {
        if let Some(p) = env("PGPASSWORD") {
            cfg.password(p);
        } else {
            // libpq matches unix-socket connections as `localhost`.
            let key_host = if host.starts_with('/') {
                "localhost"
            } else {
                &host
            };
            match pgpass_password(key_host, port, &dbname, &user) {
                Ok(Some(p)) => {
                    cfg.password(p);
                }
                Ok(None) => {}
                Err(note) => target.pgpass_note = Some(note),
            }
        }
    }
    Ok((cfg, target))
}

/// The pgpass file libpq would read: `PGPASSFILE`, else `~/.pgpass`.
fn pgpass_path() -> Option<PathBuf> {
    env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".pgpass")))
}

/// The password for this connection from the pgpass file, as libpq finds it: the first line
/// whose `host:port:database:user` match (`*` matches anything). A file others can read is
/// ignored, as libpq ignores it; the reason comes back as `Err` for the login error to show.
fn pgpass_password(host: &str, port: u16, db: &str, user: &str) -> Result<Option<String>, String> {
    let Some(path) = pgpass_path() else {
        return Ok(None);
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return Ok(None);
    };
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} was not read: its mode {mode:04o} lets others read it (chmod 600 it)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{} was not read: {e}", path.display()))?;
    Ok(pgpass_lookup(&text, host, port, db, user))
}

/// Finds a password in pgpass text (`hostname:port:database:username:password` lines, `\:` and
/// `\\` escaped, `#` comments).
pub(crate) fn pgpass_lookup(
    text: &str,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        let [h, p, d, u, pw] = fields.as_slice() else {
            continue;
        };
        let ok = |pat: &str, v: &str| pat == "*" || pat == v;
        if ok(h, host) && ok(p, &port) && ok(d, db) && ok(u, user) {
            return Some(pw.clone());
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            // The password (fifth field) may hold unescaped colons.
            ':' if out.len() < 4 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Opens a connection, turning the client's errors into one line that names the server and
/// the user (never the password).
pub(crate) fn connect(url: &PgUrl) -> Result<postgres::Client, StoreError> {
    let (cfg, target) = config(url)?;
    cfg.connect(postgres::NoTls)
        .map_err(|e| connect_error(&e, &target))
}

fn connect_error(e: &postgres::Error, t: &Target) -> StoreError {
    use postgres::error::SqlState;
    let detail = detail(e);
    let login = |detail: String| StoreError::PgLogin {
        server: t.server.clone(),
        user: t.user.clone(),
        detail: match &t.pgpass_note {
            Some(n) => format!("{detail}; {n}"),
            None => detail,
        },
    };
    match e.code() {
        Some(c) if *c == SqlState::INVALID_PASSWORD || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            login(format!(
                "{detail}; check the password (URL, PGPASSWORD or the pgpass file)"
            ))
        }
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => StoreError::PgConnect {
            server: t.server.clone(),
            detail: format!("{detail}; create it first (createdb) or name another database"),
        },
        _ if detail.contains("password missing") => login(
            "the server asks for a password and none was given; put it in PGPASSWORD or the pgpass file (~/.pgpass, PGPASSFILE)".to_string(),
        ),
        _ => StoreError::PgConnect {
            server: t.server.clone(),
            detail,
        },
    }
}

/// What a PostgreSQL error says, on one line: the server's message for a database error,
/// else the client's error and its causes.
pub(crate) fn detail(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = db.message().to_string();
        if let Some(d) = db.detail() {
            s.push_str(&format!(" ({d})"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(&format!(": {t}"));
        }
        src = c.source();
    }
    s.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_wherever_a_url_is_shown() {
        assert_eq!(
            redact_url("postgres://iolab:s3cr:et@127.0.0.1:5432/db"),
            "postgres://iolab:***@127.0.0.1:5432/db"
        );
        assert_eq!(
            redact_url("postgresql://u@h/db?password=hunter2&sslmode=disable"),
            "postgresql://u@h/db?password=***&sslmode=disable"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact_url("postgres://a:b@h"), "postgres://a:***@h");
        assert_eq!(
            redact_text("iolab --db=postgres://a:pw@h/d run x postgres://b:pw2@h"),
            "iolab --db=postgres://a:***@h/d run x postgres://b:***@h"
        );
        assert_eq!(redact_text("/var/lib/iolab.db"), "/var/lib/iolab.db");
        let u = PgUrl::new("postgres://a:topsecret@h/d");
        assert!(!format!("{u} {u:?}").contains("topsecret"));
        let u = PgUrl::new("postgres://a:p%40ss@h/d?password=two");
        assert_eq!(u.scrub("x p%40ss p@ss two y"), "x *** *** *** y");
    }

    #[test]
    fn pgpass_lines_match_like_libpq() {
        let text = "# comment\n\
                    otherhost:*:*:*:nope\n\
                    127.0.0.1:5432:iolab:me:pa\\:ss\\\\w\n\
                    *:*:*:me:fallback\n";
        assert_eq!(
            pgpass_lookup(text, "127.0.0.1", 5432, "iolab", "me").as_deref(),
            Some("pa:ss\\w")
        );
        assert_eq!(
            pgpass_lookup(text, "127.0.0.1", 5433, "iolab", "me").as_deref(),
            Some("fallback")
        );
        assert_eq!(pgpass_lookup(text, "h", 1, "d", "you"), None);
    }
}
