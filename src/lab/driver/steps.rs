//! The steps of a layout's integrity check inside the lab flow: writing the data set, reading
//! it back from the disks, writing more while degraded, failing members and rebuilding them,
//! and the layout's own scrub — each recorded in the layout's [`IntegrityReport`].

use std::path::Path;
use std::time::Instant;

use super::super::dataset::DataSet;
use super::super::integrity::{IntegrityReport, ScrubCheck, Step};
use super::super::report::{DegradedReport, LayoutReport, RebuildLoadReport, SecondFailureReport};
use super::super::spec::LayoutSpec;
use super::{DataWritten, MountedLayout, Phase, StackRun, error_text, interrupted_or};
use crate::layout::fault::{FaultKind, FaultStep};
use crate::layout::state;
use crate::layout::{Built, DiskSource, LayoutError};
use crate::stack::Rebuild;

impl StackRun<'_, '_> {
    /// Writes the data set (when the layout checks data) and reads it back once from the
    /// disks; records it all in `lr.integrity`.
    pub(super) fn write_data(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
    ) -> Result<Option<DataSet>, String> {
        if !l.checks_data() || self.opts.dry_run {
            return Ok(None);
        }
        let bytes = l.fill_bytes(built.usable_bytes);
        self.step(
            &l.name,
            format!(
                "writing the data set: {} in files of 4KiB-4MiB",
                crate::units::format_bytes(bytes)
            ),
        );
        let seed = xxhash_rust::xxh3::xxh3_64(self.lab_id.as_bytes())
            ^ xxhash_rust::xxh3::xxh3_64(l.name.as_bytes());
        let set = match DataSet::write(&built.mount_point, bytes, seed) {
            Ok(s) => s,
            Err(e) => {
                let mut i = IntegrityReport::new(0, 0);
                i.fail("write", e.clone());
                lr.integrity = Some(i);
                return Err(interrupted_or(format!("cannot write the data set: {e}")));
            }
        };
        lr.fill_bytes = Some(set.bytes);
        let mut integ = IntegrityReport::new(set.files.len() as u64, set.bytes);
        let manifest = state::manifest_path(&self.opts.state_dir, self.lab_id, &l.name);
        if set.write_manifest(&manifest).is_ok() {
            integ.manifest = Some(manifest.display().to_string());
        }
        crate::pause::at("verification set written");
        lr.integrity = Some(integ);
        if let Some(hook) = &self.opts.hooks.after_data_written {
            hook(&DataWritten {
                layout: &l.name,
                mount_point: &built.mount_point,
                members: &built.members,
                backing_files: built.backing_files(),
                data: &set,
            })
            .map_err(|e| {
                let msg = format!("test hook: {e}");
                if let Some(i) = lr.integrity.as_mut() {
                    i.fail("write", msg.clone());
                }
                msg
            })?;
        }
        self.check(l, &set, lr, Step::Healthy)?;
        Ok(Some(set))
    }

    /// Reads the data set back from the disks (the page cache dropped first); true when every
    /// file came back intact.
    pub(super) fn check(
        &mut self,
        l: &LayoutSpec,
        set: &DataSet,
        lr: &mut LayoutReport,
        step: Step,
    ) -> Result<bool, String> {
        self.step(
            &l.name,
            format!(
                "reading the data set back ({}): {} files",
                step.name(),
                set.files.len()
            ),
        );
        let _ = crate::system::drop_caches();
        let v = set.verify();
        if crate::signals::stop_requested() {
            return Err("interrupted".into());
        }
        let intact = v.bad() == 0;
        if !intact {
            self.step(
                &l.name,
                format!(
                    "{}: {} of {} files did not come back intact",
                    step.name(),
                    v.bad(),
                    set.files.len()
                ),
            );
        }
        if let Some(i) = lr.integrity.as_mut() {
            i.add(step, v);
        }
        Ok(intact)
    }

    /// Writes more of the data set while degraded (an eighth of it, at least 4MiB): data
    /// written in the window before the rebuild has to survive it too. A write the layout
    /// refuses is a finding, not a lab failure.
    pub(super) fn write_degraded(
        &mut self,
        l: &LayoutSpec,
        set: &mut DataSet,
        lr: &mut LayoutReport,
        step: Step,
    ) {
        let base = lr.fill_bytes.unwrap_or(set.bytes);
        let bytes = (base / 8).max(4 << 20) & !((1 << 20) - 1);
        self.step(
            &l.name,
            format!(
                "writing {} more while {}",
                crate::units::format_bytes(bytes),
                step.name()
            ),
        );
        let seed =
            set.files.first().map_or(0, |f| f.seed) ^ (step as u64 + 1).wrapping_mul(0x9E37_79B9);
        let dir = format!("{}/{}", super::super::dataset::DATA_DIR, step.name());
        let (files, written, err) = set.append(bytes, seed, &dir, true);
        if let Some(i) = lr.integrity.as_mut() {
            i.wrote(step, files, written, err);
            if let Some(m) = &i.manifest {
                let _ = set.write_manifest(Path::new(m));
            }
        }
    }

    /// Records a step that could not be done in the integrity record and returns the message
    /// as the layout's failure.
    pub(super) fn failed(lr: &mut LayoutReport, step: &str, e: &LayoutError) -> String {
        let msg = error_text(e);
        if let Some(i) = lr.integrity.as_mut() {
            i.fail(step, msg.clone());
        }
        msg
    }

    pub(super) fn exercise(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        lr: &mut LayoutReport,
    ) -> Result<(), String> {
        let dry = self.opts.dry_run;
        let mut data = self.write_data(l, built, lr)?;
        if !dry {
            self.step(&l.name, "workloads (healthy)".into());
            let before = super::members::snapshot(built);
            lr.workload_seconds =
                Some(self.call_workload(l, built, Phase::Healthy, lr.usable_bytes)?);
            (lr.member_io, lr.member_medians) =
                super::members::member_io(built, &before, &super::members::snapshot(built));
        }
        self.faults_at(l, built, lr, data.as_ref(), FaultStep::BeforeDegrade)?;
        if l.degrade {
            self.degrade_and_rebuild(l, built, src, lr, data.as_mut())?;
        } else {
            self.scrub(l, built, lr, Step::Healthy)?;
            self.repair(l, built, lr, data.as_ref())?;
        }
        Ok(())
    }

    /// After a layer's check found copies that disagree on a layout the lab wrote garbage
    /// under: the layer's repair (md's `repair`), then the struck files read once more — what
    /// the repair did to them (md RAID5 recomputes parity from the corrupted data: the loss
    /// becomes permanent).
    fn repair(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
        data: Option<&DataSet>,
    ) -> Result<(), String> {
        let Some(set) = data else {
            return Ok(());
        };
        let corrupt = l
            .faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::Corrupt { .. }));
        let checked = lr
            .integrity
            .as_ref()
            .and_then(|i| i.scrubs.last())
            .map(|s| s.outcome.clone());
        if self.opts.dry_run || !corrupt {
            return Ok(());
        }
        let Some(repair) = checked.and_then(|c| self.session.repair_for(built, &c)) else {
            return Ok(());
        };
        self.step(
            &l.name,
            format!("{} (its check found copies that disagree)", repair.name),
        );
        let outcome = self
            .session
            .repair(built, &repair)
            .map_err(|e| Self::failed(lr, repair.name, &e))?;
        if let Some(i) = lr.integrity.as_mut() {
            i.scrubs.push(ScrubCheck {
                after: Step::Healthy,
                outcome,
            });
            i.conclude();
        }
        let _ = crate::system::drop_caches();
        for r in &mut lr.faults {
            if let Some(h) = r.held.as_mut() {
                super::placement::observe_after_repair(h, set);
            }
            r.settle_held();
        }
        Ok(())
    }

    /// Runs the layout's own scrub or check (layouts with a data set; commands only in a dry
    /// run) and records it after `step`.
    pub(super) fn scrub(
        &mut self,
        l: &LayoutSpec,
        built: &Built,
        lr: &mut LayoutReport,
        step: Step,
    ) -> Result<(), String> {
        let dry = self.opts.dry_run;
        if !(lr.integrity.is_some() || dry && l.checks_data()) {
            return Ok(());
        }
        let unhealthy = built
            .md_array()
            .filter(|_| !dry)
            .map(|md| crate::layout::fault::observe_md(Path::new("/sys"), &md))
            .filter(super::faults::md_unhealthy);
        if let Some(o) = unhealthy {
            // What an injected fault left (a member md failed during the rebuild): there is
            // no redundancy to check against. A finding, not a lab failure (the fault record
            // says md was left degraded; the files were read back all the same, and a second
            // failure's rebuild replaces the member and the check runs after it), as for a
            // layout left degraded on purpose.
            if step == Step::Rebuilt && (l.failures >= 2 || !l.faults.is_empty()) {
                self.step(
                    &l.name,
                    format!("no check: md is degraded ({})", o.describe()),
                );
                return Ok(());
            }
            if let Some(i) = lr.integrity.as_mut() {
                i.fail(
                    "scrub",
                    format!(
                        "md cannot check the array after {}: {}",
                        step.name(),
                        o.describe()
                    ),
                );
                i.conclude();
            }
            return Ok(());
        }
        self.step(&l.name, format!("scrubbing ({})", step.name()));
        match self.session.scrub(
            built,
            l.faults
                .iter()
                .any(|f| matches!(f.kind, FaultKind::Corrupt { .. })),
        ) {
            Ok(s) => {
                if let Some(i) = lr.integrity.as_mut() {
                    i.scrubs.extend(s.into_iter().map(|outcome| ScrubCheck {
                        after: step,
                        outcome,
                    }));
                    i.conclude();
                }
                Ok(())
            }
            Err(e) => Err(Self::failed(lr, "scrub", &e)),
        }
    }

    /// Fails a member, checks the data and runs the workloads degraded, rebuilds and scrubs;
    /// with `failures = 2`, does it again with two members at once.
    pub(super) fn degrade_and_rebuild(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        lr: &mut LayoutReport,
        mut data: Option<&mut DataSet>,
    ) -> Result<(), String> {
        self.degrade(l, built, lr, data.as_deref_mut())?;
        if l.rebuild {
            self.rebuild(l, built, src, lr, data.as_deref())?;
        }
        if l.failures < 2 {
            return Ok(());
        }
        self.second_failure(l, built, src, lr, data)
    }

    /// Fails the last member, writes and verifies data while degraded, and runs the workloads
    /// degraded; records it all in `lr.degraded`.
    fn degrade(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        lr: &mut LayoutReport,
        mut data: Option<&mut DataSet>,
    ) -> Result<(), String> {
        self.step(
            &l.name,
            format!(
                "degrading: failing {}",
                built
                    .members
                    .last()
                    .map_or(String::new(), |m| m.display().to_string())
            ),
        );
        let d = self
            .session
            .degrade(built)
            .map_err(|e| Self::failed(lr, "degrade", &e))?;
        if let Some(c) = &d.cache_failure {
            self.step(&l.name, c.describe());
        }
        let mut verified = false;
        if let Some(set) = data.as_deref_mut() {
            self.write_degraded(l, set, lr, Step::Degraded);
            verified = self.check(l, set, lr, Step::Degraded)?;
        }
        // A fault while degraded strikes once the degraded read-back has seen the data whole.
        self.faults_at(l, built, lr, data.as_deref(), FaultStep::Degraded)?;
        let mut dr = DegradedReport {
            failed_member: d.failed_member.display().to_string(),
            degrade_seconds: d.seconds,
            workload_seconds: None,
            data_verified: verified,
            perf_ratio: None,
            workload_error: None,
            cache_failure: d.cache_failure,
        };
        if !self.opts.dry_run {
            self.step(&l.name, "workloads (degraded)".into());
            match self.call_workload(l, built, Phase::Degraded, lr.usable_bytes) {
                Ok(s) => dr.workload_seconds = Some(s),
                Err(e) if e == "interrupted" => {
                    lr.degraded = Some(dr);
                    return Err(e);
                }
                // IO failing while degraded is what the layout does, not a lab failure: keep
                // it as a finding and go on to the rebuild.
                Err(e) => dr.workload_error = Some(e),
            }
        }
        lr.degraded = Some(dr);
        Ok(())
    }

    /// Replaces the failed member, verifies the data and scrubs; records `lr.rebuild`.
    fn rebuild(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        lr: &mut LayoutReport,
        data: Option<&DataSet>,
    ) -> Result<(), String> {
        self.step(&l.name, "rebuilding".into());
        let armed = self.arm_rebuild_faults(l, built, data, lr);
        let r = if l.during_rebuild && !self.opts.dry_run {
            self.step(&l.name, "workloads (during the rebuild)".into());
            let (r, load) = self.rebuild_under_load(l, built, src, lr.usable_bytes);
            lr.rebuild_load = Some(load);
            if crate::signals::stop_requested() {
                return Err("interrupted".into());
            }
            r
        } else {
            self.session.rebuild(built, src)
        }
        .map_err(|e| Self::failed(lr, "rebuild", &e))?;
        self.rebuild_faults_done(built, lr, &r.new_members, armed);
        let verified = match data {
            Some(set) => self.check(l, set, lr, Step::Rebuilt)?,
            None => false,
        };
        Self::rebuild_faults_read_back(lr, data);
        lr.rebuild = Some(Rebuild {
            data_verified: verified,
            ..r
        });
        self.faults_at(l, built, lr, data, FaultStep::AfterRebuild)?;
        self.scrub(l, built, lr, Step::Rebuilt)
    }

    /// Rebuilds on a thread of its own while the workloads run on this one: the rebuild starts
    /// with them, and its time is the time under their load. md's recovery progress is read
    /// when the workloads end (its speed under load), with the speed limits md was under.
    fn rebuild_under_load(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        usable: Option<u64>,
    ) -> (Result<Rebuild, LayoutError>, RebuildLoadReport) {
        let mount = built.mount_point.clone();
        let description = built.stack.describe();
        let md = built.md_array();
        let (session, workload, lab_id) = (&mut *self.session, &mut *self.workload, self.lab_id);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            let rebuilding = s.spawn(move || {
                let r = session.rebuild(built, src);
                (r, t0.elapsed().as_secs_f64())
            });
            let m = MountedLayout {
                lab_id,
                layout: l,
                description,
                path: &mount,
                phase: Phase::Rebuilding,
                usable_bytes: usable,
            };
            let w = workload(&m).map_err(|e| interrupted_or(format!("{e:#}")));
            let w_secs = t0.elapsed().as_secs_f64();
            let still = !rebuilding.is_finished();
            // Read while md still recovers: after its end `sync_completed` says `none`.
            let progress = md
                .as_deref()
                .and_then(crate::layout::scrub::recovery_progress);
            let limits = md.as_deref().and_then(crate::layout::scrub::speed_limits);
            let (r, r_secs) = rebuilding.join().unwrap_or_else(|_| {
                (
                    Err(LayoutError::Unexpected(
                        "the rebuild thread panicked".into(),
                    )),
                    0.0,
                )
            });
            let share = if still {
                1.0
            } else {
                (r_secs / w_secs.max(1e-9)).min(1.0)
            };
            let (md_progress_at_end, md_speed_under_load) = match (&md, progress, still) {
                (Some(_), Some((done, total)), true) => (
                    Some(done as f64 / total as f64),
                    Some(done as f64 * 512.0 / w_secs.max(1e-9)),
                ),
                // md finished before the workloads: all of it ran under their load.
                (Some(md), _, false) => (
                    Some(1.0),
                    crate::layout::mdadm::component_bytes(md).map(|b| b as f64 / r_secs.max(1e-9)),
                ),
                _ => (None, None),
            };
            let load = RebuildLoadReport {
                workload_seconds: Some(w_secs),
                rebuild_seconds: r.as_ref().ok().map(|r| r.seconds),
                rebuild_share: Some(share),
                md_progress_at_end,
                md_speed_under_load,
                md_speed_limits: limits,
                perf_ratio: None,
                workload_error: w.err(),
            };
            (r, load)
        })
    }

    /// Two members at once: fails them, writes and verifies data, and (with `rebuild`)
    /// replaces both, verifies and scrubs; records `lr.second_failure` whatever happens.
    fn second_failure(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        src: &DiskSource,
        lr: &mut LayoutReport,
        mut data: Option<&mut DataSet>,
    ) -> Result<(), String> {
        let mut sf = self.fail_two(l, built, lr)?;
        if let Some(set) = data.as_deref_mut() {
            self.write_degraded(l, set, lr, Step::Degraded2);
            if let Err(e) = self.check(l, set, lr, Step::Degraded2) {
                lr.second_failure = Some(sf);
                return Err(e);
            }
        }
        if !l.rebuild {
            lr.second_failure = Some(sf);
            return Ok(());
        }
        self.step(&l.name, "rebuilding both".into());
        match self.session.rebuild(built, src) {
            Ok(r) => {
                sf.new_members = r
                    .new_members
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                sf.rebuild_seconds = Some(r.seconds);
                sf.rebuild_bytes = Some(r.bytes);
                sf.converted = r.converted;
                sf.retried = r.retried;
            }
            Err(e) => {
                lr.second_failure = Some(sf);
                return Err(Self::failed(lr, "rebuild2", &e));
            }
        }
        lr.second_failure = Some(sf);
        if let Some(set) = data.as_deref() {
            self.check(l, set, lr, Step::Rebuilt2)?;
        }
        self.scrub(l, built, lr, Step::Rebuilt2)
    }

    /// Fails two members: after a rebuild the first two, so the data has to come from the
    /// rest — the replaced member among them; still degraded, one more on top.
    fn fail_two(
        &mut self,
        l: &LayoutSpec,
        built: &mut Built,
        lr: &mut LayoutReport,
    ) -> Result<SecondFailureReport, String> {
        let victims: Vec<usize> = if built.is_degraded() {
            vec![0]
        } else {
            vec![0, 1]
        };
        self.step(
            &l.name,
            format!(
                "second failure: failing {}",
                victims
                    .iter()
                    .map(|&i| built.members[i].display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        );
        let d2 = self
            .session
            .fail_members(built, &victims)
            .map_err(|e| Self::failed(lr, "degrade2", &e))?;
        Ok(SecondFailureReport {
            failed_members: d2
                .failed_members
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            degrade_seconds: d2.seconds,
            new_members: Vec::new(),
            rebuild_seconds: None,
            rebuild_bytes: None,
            converted: Vec::new(),
            retried: Vec::new(),
        })
    }
}
