//! Many hosts at once: `iolab run --hosts` runs one suite on every host together, over the
//! access a team already has (the system `ssh`, or any command that starts
//! `iolab agent --stdio` on a host: `kubectl exec -i`, `srun`), with no daemon and no port.
//!
//! - [`protocol`]: the line-delimited JSON both sides speak, and its pure parser.
//! - [`agent`]: the far side, a local runner behind a barrier; stdin EOF is its dead-man switch.
//! - [`launch`]: the launch command template (`{host}`, `{control}`), what `--push` puts in
//!   place of the agent, the shared ssh connections.
//! - [`controller`]: launches the agents, checks versions, pushes the binary, starts every
//!   trial at one instant, collects results, fails dead or silent hosts (each connection and
//!   the lines it brings: `conn`).
//! - [`outcome`]: what a run is asked (`Options`) and what it produced (`Outcome`): the types
//!   the controller fills in and the aggregate, the store and the tables read.
//! - [`push`]: `--push` copies this binary inside the agent's own session, so nothing
//!   is left on a host whatever moment the controller is killed.
//! - [`clock`]: clock offsets from the fastest round trips.
//! - [`seconds`]: the hosts' streamed seconds merged as they arrive.
//! - [`merge`]: the aggregate: merged histograms, the common window, stragglers.
//! - [`render`], [`save`]: the tables and JSON, and the runs kept in the store.
//! - [`slurm`]: `--hosts @slurm`, the nodes of the Slurm allocation, started with `srun`.
//!
//! Imports go one way: `outcome` and `seconds` need none of the others; `merge`, `save` and
//! `render` read `outcome`; only the controller drives the connections.

pub mod agent;
pub mod clock;
mod conn;
pub mod controller;
pub mod launch;
pub mod merge;
pub mod outcome;
pub mod protocol;
pub mod push;
pub mod render;
pub mod save;
pub mod seconds;
pub mod slurm;

pub use save::SavedIds;

use std::path::PathBuf;

/// Why a host list or launch template is not usable. Messages name the flag and the fix.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A host entry is empty or malformed.
    #[error("--hosts: {0}")]
    BadHost(String),
    /// The hosts file cannot be read.
    #[error("--hosts-file: cannot read {path}: {source}")]
    HostsFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The launch template cannot start an agent.
    #[error("--launch: {0}")]
    BadLaunch(String),
    /// `--hosts @slurm` cannot tell the allocation's nodes.
    #[error("--hosts @slurm: {0}")]
    Slurm(String),
}

/// One host: what to hand the launch command, and its own target when it has one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HostSpec {
    /// Anything the launch command accepts (`ssh`: a name from `~/.ssh/config`, `user@host`,
    /// `ssh://user@host:port`).
    pub name: String,
    /// The host's own target (`h1:/mnt/x`); `None`: the run's target.
    pub target: Option<PathBuf>,
}

/// Parses one entry: `host` or `host:/absolute/target`. The target starts at the first `:/`
/// after any `ssh://` scheme, so `ssh://u@h:2222:/mnt/x` works.
pub fn parse_host(entry: &str) -> Result<HostSpec, HostsError> {
    let e = entry.trim();
    let skip = if e.starts_with("ssh://") { 6 } else { 0 };
    let (name, target) = match e[skip..].find(":/") {
        Some(i) => (&e[..skip + i], Some(PathBuf::from(&e[skip + i + 1..]))),
        None => (e, None),
    };
    if name.is_empty() || name == "ssh://" {
        return Err(HostsError::BadHost(format!(
            "entry '{entry}' names no host; give e.g. node1 or node1:/mnt/x"
        )));
    }
    if name.starts_with('@') {
        return Err(HostsError::BadHost(format!(
            "'{name}' is not a host; {} alone (or {}:/target) takes the nodes of the Slurm allocation this runs in",
            slurm::ALLOCATION,
            slurm::ALLOCATION
        )));
    }
    if name.starts_with('-') || name.chars().any(|c| c.is_whitespace() || c == '\'') {
        return Err(HostsError::BadHost(format!(
            "'{name}' is not a host name (no spaces, quotes or leading '-')"
        )));
    }
    Ok(HostSpec {
        name: name.to_string(),
        target,
    })
}

/// Parses a list: entries separated by commas, whitespace or newlines; `#` starts a comment.
/// Duplicate names are refused (each host's rows must be told apart).
pub fn parse_hosts(text: &str) -> Result<Vec<HostSpec>, HostsError> {
    let mut out: Vec<HostSpec> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for e in line
            .split([',', ' ', '\t'])
            .filter(|s| !s.trim().is_empty())
        {
            let h = parse_host(e)?;
            if out.iter().any(|x| x.name == h.name) {
                return Err(HostsError::BadHost(format!(
                    "'{}' is listed twice; each host once",
                    h.name
                )));
            }
            out.push(h);
        }
    }
    if out.is_empty() {
        return Err(HostsError::BadHost(
            "no hosts given; e.g. --hosts node1,node2".into(),
        ));
    }
    Ok(out)
}

/// Quotes a word for `sh` (single quotes; an embedded quote closes, escapes and reopens).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_split_into_host_and_target() {
        let h = parse_hosts("a, b:/mnt/x\n# c\nssh://u@d:2222:/srv  u@e").expect("parses");
        let got: Vec<(&str, Option<&str>)> = h
            .iter()
            .map(|h| {
                (
                    h.name.as_str(),
                    h.target.as_deref().and_then(|p| p.to_str()),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", None),
                ("b", Some("/mnt/x")),
                ("ssh://u@d:2222", Some("/srv")),
                ("u@e", None)
            ]
        );
    }

    #[test]
    fn bad_lists_say_what_to_fix() {
        for (bad, want) in [
            ("", "no hosts"),
            ("a,a", "twice"),
            (":/x", "names no host"),
            ("-oProxyCommand=x", "not a host"),
            ("a,@slurm", "Slurm allocation"),
        ] {
            let e = parse_hosts(bad).expect_err(bad).to_string();
            assert!(e.contains(want) && e.starts_with("--hosts"), "{bad}: {e}");
        }
    }

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(shell_quote("u@h"), "u@h");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
