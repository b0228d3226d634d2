//! Copying runs between stores: `iolab lab --vm` stores its runs in the guest's database and
//! the host copies them into its own, keeping ids, labels and the lab id, so the host's
//! `list`, `compare` and `report` see them as if they ran here.
//!
//! Only the store's own read and write calls are used ([`Store::list`], [`Store::load_run`],
//! [`Store::save_run`]): whatever the stored format becomes, a copy stays faithful.

use super::{Result, RunFilter, Store, StoreError};
use crate::sample::RunRecord;

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Ids of the runs copied, oldest first.
    pub copied: Vec<String>,
    /// Ids already in the target store: left as they were.
    pub skipped: Vec<String>,
}

/// Copies every run of `from` that matches `filter` into `to`, oldest first, after `edit` has
/// had its say on each record (e.g. to label where it ran). A run whose id `to` already holds
/// is skipped, so a copy can be repeated.
pub fn copy_runs(
    from: &Store,
    to: &mut Store,
    filter: &RunFilter,
    edit: &mut dyn FnMut(&mut RunRecord),
) -> Result<Transfer> {
    let mut out = Transfer::default();
    let mut list = from.list(filter)?;
    list.reverse();
    for s in list {
        let mut rec = from.load_run(&s.id)?;
        edit(&mut rec);
        match to.save_run(&rec) {
            Ok(id) => out.copied.push(id),
            Err(StoreError::DuplicateId(id)) => out.skipped.push(id),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RunStatus;

    fn run(label: &str, lab: &str) -> RunRecord {
        RunRecord {
            id: String::new(),
            status: RunStatus::Complete,
            started_unix_ms: 1_700_000_000_000,
            ended_unix_ms: Some(1_700_000_001_000),
            command_line: vec!["iolab".into()],
            label: Some(label.into()),
            note: None,
            lab_id: Some(lab.into()),
            layout: Some(crate::sample::LayoutRecord {
                name: Some(label.into()),
                ..Default::default()
            }),
            suite_name: "quick".into(),
            system: crate::system::SystemInfo::collect(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: Vec::new(),
            notes: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn copies_runs_with_their_ids_labels_and_lab() {
        let d = tempfile::tempdir().unwrap();
        let mut a = Store::open(&d.path().join("a.db")).unwrap();
        let mut b = Store::open(&d.path().join("b.db")).unwrap();
        let id1 = a.save_run(&run("md5", "abc123")).unwrap();
        let id2 = a.save_run(&run("md5-degraded", "abc123")).unwrap();
        a.save_run(&run("other", "ffffff")).unwrap();
        let filter = RunFilter {
            lab_id: Some("abc123".into()),
            ..RunFilter::default()
        };
        let mut edit = |r: &mut RunRecord| r.notes.push("in a vm".into());
        let t = copy_runs(&a, &mut b, &filter, &mut edit).unwrap();
        assert_eq!(t.copied.len(), 2);
        assert!(t.copied.contains(&id1) && t.copied.contains(&id2));
        let got = b.load_run(&id2).unwrap();
        assert_eq!(got.label.as_deref(), Some("md5-degraded"));
        assert_eq!(got.lab_id.as_deref(), Some("abc123"));
        assert_eq!(got.notes, vec!["in a vm".to_string()]);
        assert_eq!(got.status, RunStatus::Complete);
        let again = copy_runs(&a, &mut b, &filter, &mut edit).unwrap();
        assert_eq!(again.copied.len(), 0);
        assert_eq!(again.skipped.len(), 2);
    }
}
