//! Injected faults and slow members inside the lab flow: which disks go under device-mapper at
//! build time, the faults struck at their steps, the read-back that follows each, md's own view
//! afterwards (array state, faulty members, bad-block log) and the rebuild's observed end. (The
//! per-member IO figures that show a slow member are in `members.rs`.)

use std::collections::BTreeMap;

use super::super::dataset::DataSet;
use super::super::integrity::Step;
use super::super::report::{FaultReport, LayoutReport};
use super::super::spec::{LabSpec, LayoutSpec};
use super::StackRun;
use super::placement::{self, Prepared};
use crate::layout::fault::{self, DmWrap, Fault, FaultStep, MdObservation};
use crate::layout::{Built, Stack};

/// md's view of the layout's array now (`None` without md or in a dry run).
fn observe(built: &Built, dry: bool) -> Option<MdObservation> {
    let md = built.md_array().filter(|_| !dry)?;
    Some(fault::observe_md(std::path::Path::new("/sys"), &md))
}

/// Whether md says the array cannot be checked: members missing, or broken.
pub(super) fn md_unhealthy(o: &MdObservation) -> bool {
    o.degraded > 0 || matches!(o.array_state.as_str(), "broken" | "inactive" | "clear")
}

/// Whether layout `l` puts a disk under device-mapper (a fault needing a dm table on a
/// member, or added latency on one of its disks).
pub(super) fn needs_dm(spec: &LabSpec, l: &LayoutSpec, stack: &Stack) -> bool {
    l.faults.iter().any(|f| f.kind.needs_dm())
        || spec
            .slow_disks
            .iter()
            .any(|s| s.latency_ms.is_some() && s.disk < stack.disks())
}

impl StackRun<'_, '_> {
    /// Tells the session which of the layout's disks go under device-mapper: members with a
    /// fault that needs a dm table, and slow disks with added latency (dm-delay).
    pub(super) fn plan_dm(&mut self, l: &LayoutSpec, stack: &Stack) {
        let mut plan: BTreeMap<usize, DmWrap> = BTreeMap::new();
        for f in l.faults.iter().filter(|f| f.kind.needs_dm()) {
            plan.entry(f.member).or_default();
        }
        for s in &self.spec.slow_disks {
            if let Some(ms) = s.latency_ms.filter(|_| s.disk < stack.disks()) {
                plan.insert(s.disk, DmWrap { delay_ms: ms });
            }
        }
        self.session.set_dm_plan(plan);
    }

    /// Strikes the layout's faults planned `at` (before degrading, after the rebuild) — placed
    /// under the data set's files first when they ask for it — reads the data set back, and
    /// records what md says then and what became of the files each range held.
    pub(super) fn faults_at(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
        data: Option<&DataSet>,
        at: FaultStep,
    ) -> Result<(), String> {
        let faults: Vec<_> = l.faults.iter().filter(|f| f.at == at).cloned().collect();
        if faults.is_empty() {
            return Ok(());
        }
        let pool = self.session.zfs_pool(built);
        let prepared = placement::prepare(
            self.session.runner(),
            built,
            pool.as_deref(),
            data,
            faults,
            self.opts.dry_run,
        );
        let mut reports: Vec<FaultReport> = prepared
            .into_iter()
            .map(|p| self.strike(&l.name, built, p))
            .collect();
        self.observe_struck(l, built, lr, data, &mut reports)?;
        lr.faults.extend(reports);
        Ok(())
    }

    /// Strikes one prepared fault (with the other copies it asks for) unless it could not be
    /// placed; the report starts with what the strike itself met, the observations after the
    /// read-back come later.
    fn strike(&mut self, layout: &str, built: &Built, p: Prepared) -> FaultReport {
        let f = p.fault;
        let device = built
            .members
            .get(f.member)
            .map_or(String::new(), |m| m.display().to_string());
        let mut description = f.describe();
        let mut held = p.held;
        let error = if let Some(e) = p.error {
            Some(e)
        } else {
            self.step(layout, format!("injecting {}", f.describe()));
            let mut errors = self.inject_with_copies(built, &f, &p.also);
            if !p.also.is_empty() {
                description.push_str(&also_line(&p.also));
            }
            if let Some(c) = &p.parity {
                match placement::parity_struck(c) {
                    Ok(says) => {
                        if let Some(h) = held.as_mut() {
                            h.parity_checked = Some(says);
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
            (!errors.is_empty()).then(|| errors.join("; "))
        };
        let mut r = FaultReport::struck(f, device, error, held);
        r.description = description;
        r
    }

    /// Injects `f` and each of its other copies `also`, going on past a failed one so that
    /// every copy the run could strike is struck; returns what failed (a copy's error named
    /// by that copy).
    fn inject_with_copies(&mut self, built: &Built, f: &Fault, also: &[Fault]) -> Vec<String> {
        let mut errors: Vec<String> = self
            .session
            .inject(built, f)
            .err()
            .map(|e| e.to_string())
            .into_iter()
            .collect();
        for a in also {
            if let Err(e) = self.session.inject(built, a) {
                errors.push(format!("{}: {e}", a.describe()));
            }
        }
        errors
    }

    /// Reads the data set back after the strikes and fills each report with what was seen
    /// then: files bad, md's, ZFS's and btrfs's view, and what became of the files each range
    /// held. Every fault of the step shares the one read-back, as they were struck together.
    fn observe_struck(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
        data: Option<&DataSet>,
        reports: &mut [FaultReport],
    ) -> Result<(), String> {
        let bad = match data {
            Some(set) if !self.opts.dry_run => {
                self.check(l, set, lr, Step::Faulted)?;
                lr.integrity
                    .as_ref()
                    .and_then(|i| i.steps.iter().rev().find(|c| c.step == Step::Faulted))
                    .map(super::super::integrity::StepCheck::bad)
            }
            _ => None,
        };
        // What the read-back hit may set md going: a member whose rewrite failed is replaced
        // by a spare left over (`want_replacement`), a failed one recovered. Let it finish
        // before reading md's view (and before the check, which md refuses while it runs).
        if let Some(md) = built.md_array().filter(|_| !self.opts.dry_run) {
            let _ = crate::layout::mdadm::wait_idle(self.session.runner(), &md);
        }
        let md = observe(built, self.opts.dry_run);
        let zpool = self.session.zpool_status(built);
        let btrfs = self.session.btrfs_stats(built);
        for r in reports {
            r.files_bad = bad;
            r.md.clone_from(&md);
            r.zpool.clone_from(&zpool);
            r.btrfs.clone_from(&btrfs);
            if let (Some(h), Some(set)) = (r.held.as_mut(), data) {
                placement::observe_held(h, set);
            }
            r.settle_held();
        }
        Ok(())
    }

    /// Arms the faults planned during the rebuild, placed under the data set's files first
    /// when they ask for it: the session strikes them once md's recovery has started. A fault
    /// that cannot be placed is not armed; its report says why. Returns the faults armed,
    /// with what each range holds, for [`StackRun::rebuild_faults_done`].
    pub(super) fn arm_rebuild_faults(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        data: Option<&DataSet>,
        lr: &mut LayoutReport,
    ) -> Vec<placement::Prepared> {
        let faults: Vec<_> = l
            .faults
            .iter()
            .filter(|f| f.at == FaultStep::Rebuild)
            .cloned()
            .collect();
        if faults.is_empty() {
            self.session.set_rebuild_faults(Vec::new());
            return Vec::new();
        }
        let pool = self.session.zfs_pool(built);
        let (armed, refused): (Vec<_>, Vec<_>) = placement::prepare(
            self.session.runner(),
            built,
            pool.as_deref(),
            data,
            faults,
            self.opts.dry_run,
        )
        .into_iter()
        .partition(|p| p.error.is_none());
        for p in refused {
            let device = built
                .members
                .get(p.fault.member)
                .map_or(String::new(), |m| m.display().to_string());
            lr.faults
                .push(FaultReport::struck(p.fault, device, p.error, p.held));
        }
        if !armed.is_empty() {
            self.step(
                &l.name,
                format!(
                    "rebuilding, with {}",
                    armed
                        .iter()
                        .map(|p| p.fault.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
        }
        self.session
            .set_rebuild_faults(armed.iter().map(|p| p.fault.clone()).collect());
        armed
    }

    /// After a rebuild that had faults struck in it: how the rebuild ended and what md says.
    pub(super) fn rebuild_faults_done(
        &mut self,
        built: &Built,
        lr: &mut LayoutReport,
        replacements: &[std::path::PathBuf],
        mut armed: Vec<placement::Prepared>,
    ) {
        let log = self.session.take_fault_log();
        if log.is_empty() {
            return;
        }
        let md = observe(built, self.opts.dry_run);
        let new_members: Vec<String> = replacements
            .iter()
            .filter_map(|m| fault::kernel_name(m))
            .collect();
        let zpool = self.session.zpool_status(built);
        let outcome = md
            .as_ref()
            .map(|o| rebuild_outcome(o, &new_members))
            .or_else(|| zpool.as_ref().map(resilver_outcome));
        for s in log {
            let f = s.fault;
            let held = armed
                .iter()
                .position(|p| p.fault == f)
                .and_then(|i| armed.remove(i).held);
            lr.faults.push(FaultReport {
                description: f.describe(),
                device: built
                    .wrapped_device(f.member)
                    .or_else(|| built.members.get(f.member).map(std::path::PathBuf::as_path))
                    .map_or(String::new(), |p| p.display().to_string()),
                fault: f,
                error: s.outcome.err(),
                rebuild: outcome.clone(),
                files_bad: None,
                md: md.clone(),
                struck_at_pct: s.at_pct,
                zpool: zpool.clone(),
                btrfs: self.session.btrfs_stats(built),
                held,
            });
        }
    }

    /// Fills in the files lost by the read-back after the rebuild for the faults struck in it,
    /// and what became of each file their ranges held.
    pub(super) fn rebuild_faults_read_back(lr: &mut LayoutReport, data: Option<&DataSet>) {
        let bad = lr
            .integrity
            .as_ref()
            .and_then(|i| i.step(Step::Rebuilt))
            .map(super::super::integrity::StepCheck::bad);
        for f in lr
            .faults
            .iter_mut()
            .filter(|f| f.fault.at == FaultStep::Rebuild)
        {
            f.files_bad = bad;
            if let (Some(h), Some(set), Some(_)) = (f.held.as_mut(), data, bad) {
                placement::observe_held(h, set);
            }
            f.settle_held();
        }
    }

    /// md's view at the end of a layout with faults.
    pub(super) fn observe_final(&self, l: &LayoutSpec, built: &Built, lr: &mut LayoutReport) {
        if !l.faults.is_empty() {
            lr.md_final = observe(built, self.opts.dry_run);
        }
    }
}

/// ` (and the other copies: 64KiB on member 0, 128KiB on member 2)`: what `copies = "all"`
/// struck besides the fault's own range, per member.
fn also_line(also: &[crate::layout::fault::Fault]) -> String {
    let mut per: BTreeMap<usize, u64> = BTreeMap::new();
    for a in also {
        *per.entry(a.member).or_default() += a.kind.range().map_or(0, |r| r.1);
    }
    let parts: Vec<String> = per
        .iter()
        .map(|(m, n)| format!("{} on member {m}", crate::units::format_bytes(*n)))
        .collect();
    format!(" (and the other copies: {})", parts.join(", "))
}

/// How a rebuild ended, from md's view after it: `completed`, or whether the replacements
/// (`new`: their kernel names) are in sync and which members md failed on the way.
pub(super) fn rebuild_outcome(o: &MdObservation, new: &[String]) -> String {
    let faulty: Vec<&str> = o
        .members
        .iter()
        .filter(|m| m.state.contains("faulty"))
        .map(|m| m.device.as_str())
        .collect();
    if !md_unhealthy(o) && faulty.is_empty() {
        return "completed".into();
    }
    let new_in_sync = o.members.iter().any(|m| {
        m.state.contains("in_sync") && new.iter().any(|p| m.device.split(' ').next() == Some(p))
    });
    format!(
        "{}; md is left degraded ({} missing{}; array_state {})",
        if new_in_sync {
            "copied onto the new member"
        } else {
            "aborted: the new member is not in sync"
        },
        o.degraded,
        if faulty.is_empty() {
            String::new()
        } else {
            format!(", failed during it: {}", faulty.join(" "))
        },
        o.array_state
    )
}

/// How a resilver ended, from `zpool status` after it: `completed` when the pool is online
/// with no error counted anywhere, else what it says (`completed with 3 errors; pool ONLINE;
/// 14 checksum errors; 3 files or objects with permanent errors`).
pub(super) fn resilver_outcome(st: &crate::layout::zfs::PoolStatus) -> String {
    let scan_errors = st.scan.as_ref().map_or(0, |s| s.errors);
    let (cksum, read, write) = st.error_totals();
    let permanent = st.permanent_errors();
    if st.state == "ONLINE" && scan_errors + cksum + read + write + permanent == 0 {
        return "completed".into();
    }
    let mut s = match &st.scan {
        Some(sc) if sc.in_progress => "still running".to_string(),
        Some(sc) => format!("completed with {} errors", sc.errors),
        None => "no scan recorded".to_string(),
    };
    s.push_str(&format!("; pool {}", st.state));
    for (n, what) in [(read, "read"), (write, "write"), (cksum, "checksum")] {
        if n > 0 {
            s.push_str(&format!("; {n} {what} errors"));
        }
    }
    if permanent > 0 {
        s.push_str(&format!(
            "; {permanent} files or objects with permanent errors"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mm(device: &str, state: &str) -> crate::layout::fault::MdMember {
        crate::layout::fault::MdMember {
            device: device.into(),
            state: state.into(),
            bad_blocks: Vec::new(),
            errors: 0,
        }
    }

    #[test]
    fn rebuild_outcomes_say_what_md_says() {
        let mut o = MdObservation {
            array_state: "clean".into(),
            degraded: 0,
            sync_action: "idle".into(),
            members: vec![mm("dm-0 (x)", "in_sync"), mm("vdd", "in_sync")],
        };
        assert_eq!(rebuild_outcome(&o, &["vdd".into()]), "completed");
        o.degraded = 1;
        o.members[0].state = "faulty,write_error".into();
        assert_eq!(
            rebuild_outcome(&o, &["vdd".into()]),
            "copied onto the new member; md is left degraded (1 missing, failed during it: dm-0 (x); array_state clean)"
        );
        o.members[1].state = "spare".into();
        assert!(rebuild_outcome(&o, &["vdd".into()]).starts_with("aborted"));
        // An original member in sync is not the replacement.
        o.members.push(mm("vdb", "in_sync"));
        assert!(rebuild_outcome(&o, &["vdd".into()]).starts_with("aborted"));
    }
}
