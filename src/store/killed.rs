//! Runs whose process died before finishing them (they read back `incomplete`), with the
//! target each ran on: what `iolab run --cleanup` sweeps and what commands opening the store
//! mention when a killed run's files are still on disk.

use std::path::PathBuf;

use super::owner::{Liveness, Owner};
use super::{Result, Store};

/// A run killed on this machine: its process is gone and it was never finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KilledRun {
    /// Store id.
    pub id: String,
    /// The process that ran it (its pid names the files it made).
    pub owner: Owner,
    /// The target it ran on, as given (a directory holds the run's files).
    pub target_path: PathBuf,
}

impl Store {
    /// The runs killed on this host (same machine, its process gone): stored as `running`,
    /// read back as `incomplete`. Runs of other hosts, or whose owner cannot be judged from
    /// here, are left out: their files are not this host's to find.
    pub fn killed_runs(&self) -> Result<Vec<KilledRun>> {
        let what = "finding killed runs";
        let e = self.err(what);
        let rows = self.query(
            what,
            "SELECT id, owner, target_path FROM runs WHERE status = 'running'
             ORDER BY started_ms, rowid",
            &[],
        )?;
        let host = Owner::current().host;
        let mut out = Vec::new();
        for r in rows {
            let Ok(owner) = serde_json::from_str::<Owner>(&r.text(1).map_err(&e)?) else {
                continue;
            };
            if owner.host != host || owner.liveness() != Liveness::Dead {
                continue;
            }
            out.push(KilledRun {
                id: r.text(0).map_err(&e)?,
                owner,
                target_path: PathBuf::from(r.text(2).map_err(&e)?),
            });
        }
        Ok(out)
    }
}
