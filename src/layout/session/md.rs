//! md's steps: an array over the members and spares (its recovery speed limits set before
//! the first resync), a member failed with `--fail --remove`, replaced with `--add` and waited
//! on, and md's own `check` action.

use super::super::layer::{self, GuestTool, VM_HINT};
use super::super::mdadm::Md;
use crate::stack::Layer;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::super::LayoutError;
use super::super::mdadm;
use super::super::scrub::{self, ScrubOutcome};
use super::super::state::Owned;
use super::steps::{LayerSteps, LayoutDisks, StorageLayer, Volume};
use super::{Built, DiskSource, OnDisk, Session, check_stop};
use crate::stack::{MdOptions, RaidLayer, Rebuild};

/// An md array with these options.
pub(super) struct MdSteps<'a>(pub &'a MdOptions);

/// md's runtime tunables the layout sets (`stripe_cache_size`, `group_thread_cnt`), written
/// to the array's sysfs, its read-ahead (`blockdev --setra`) and the IO scheduler of its
/// devices `devs` (members, spares); the kernel keeps them until the array stops.
pub(super) fn tune(
    s: &Session,
    dev: &Path,
    o: &MdOptions,
    devs: &[PathBuf],
) -> Result<(), LayoutError> {
    super::fs::set_read_ahead(s, dev, o.read_ahead)?;
    if let Some(x) = &o.scheduler {
        for d in devs {
            s.runner
                .write_file(&scrub::queue_sysfs(d, "scheduler"), x)?;
        }
    }
    for (file, v) in [
        ("stripe_cache_size", o.stripe_cache_size),
        ("group_thread_cnt", o.group_thread_cnt),
    ] {
        if let Some(n) = v {
            s.runner
                .write_file(&scrub::md_sysfs(dev, file), &n.to_string())?;
        }
    }
    Ok(())
}

/// The array's own recovery and resync speed limits (`sync_speed_min/max`, KiB/s).
pub(super) fn sync_speeds(s: &Session, dev: &Path, o: &MdOptions) -> Result<(), LayoutError> {
    for (file, v) in [
        ("sync_speed_min", o.sync_speed_min),
        ("sync_speed_max", o.sync_speed_max),
    ] {
        if let Some(b) = v {
            s.runner
                .write_file(&scrub::md_sysfs(dev, file), &(b / 1024).to_string())?;
        }
    }
    Ok(())
}

/// md's key in [`super::Made`]: the array's device.
const ARRAY: &str = "md.array";
/// md's key in [`super::Made`]: the name the array was created with (`--name`), which finds
/// it again after a power cut.
const ARRAY_NAME: &str = "md.name";

impl Built {
    /// The md array, for an md layout.
    pub fn md_array(&self) -> Option<PathBuf> {
        self.made.get(ARRAY).map(PathBuf::from)
    }
}

/// Records the array `dev` named `name` for the layers over it.
fn made_array(vol: &mut Volume, dev: &Path, name: &str) {
    vol.made.set(ARRAY, dev.display().to_string());
    vol.made.set(ARRAY_NAME, name);
}

impl LayerSteps for MdSteps<'_> {
    fn name(&self) -> &'static str {
        "md"
    }

    /// `--assume-clean` is only true of members that read as zeros: a device that held the
    /// previous layout is zeroed first.
    fn prepare_device(&self, s: &mut Session, dev: &Path) -> Result<(), LayoutError> {
        if self.0.assume_clean {
            s.runner.run(&mdadm::zeroout_argv(dev))?;
        }
        Ok(())
    }

    fn tunables(&self, _s: &Session, b: &Built) -> Option<String> {
        scrub::md_tunables(&b.md_array()?, self.0, &b.members)
    }

    /// md's runtime tunables set anew on the built array: its speed limits, sysfs tunables,
    /// read-ahead and the members' scheduler.
    fn retune(&self, s: &mut Session, b: &Built) -> Result<(), LayoutError> {
        let Some(dev) = b.md_array() else {
            return Ok(());
        };
        sync_speeds(s, &dev, self.0)?;
        let devs: Vec<PathBuf> = b.members.iter().chain(&b.spares).cloned().collect();
        tune(s, &dev, self.0, &devs)
    }

    /// md's tunables the kernel holds other than asked, in words.
    fn wrong_tunables(&self, s: &Session, b: &Built) -> Vec<String> {
        let (o, members) = (self.0, &b.members);
        let mut wrong = Vec::new();
        let Some(dev) = b.md_array() else {
            return wrong;
        };
        let attr = |file: &str| {
            std::fs::read_to_string(scrub::md_sysfs(&dev, file))
                .ok()
                .and_then(|t| t.split_whitespace().next().map(str::to_string))
                .unwrap_or_else(|| "?".into())
        };
        for (file, want) in [
            ("stripe_cache_size", o.stripe_cache_size),
            ("group_thread_cnt", o.group_thread_cnt),
            ("sync_speed_min", o.sync_speed_min.map(|b| b / 1024)),
            ("sync_speed_max", o.sync_speed_max.map(|b| b / 1024)),
        ] {
            let Some(want) = want else { continue };
            let got = attr(file);
            if got != want.to_string() {
                wrong.push(format!("{file}: asked {want}, md says {got}"));
            }
        }
        if let Some(want) = o.read_ahead {
            match s.getra(&dev) {
                Ok(got) if got == want / 512 => {}
                Ok(got) => wrong.push(format!(
                    "mdadm.read_ahead: asked {} sectors, blockdev --getra says {got}",
                    want / 512
                )),
                Err(e) => wrong.push(format!("mdadm.read_ahead: {e}")),
            }
        }
        if let Some(want) = &o.scheduler {
            for m in members {
                let got = std::fs::read_to_string(scrub::queue_sysfs(m, "scheduler"))
                    .ok()
                    .and_then(|t| scrub::active_scheduler(&t));
                if got.as_deref() != Some(want.as_str()) {
                    wrong.push(format!(
                        "scheduler of {}: asked {want}, the kernel says {}",
                        m.display(),
                        got.as_deref().unwrap_or("?")
                    ));
                }
            }
        }
        wrong
    }

    fn pools_members(&self) -> bool {
        true
    }

    /// md's `repair` when its `check` counted mismatches (`mismatch_cnt`): md rewrites one
    /// copy from the other (RAID1) or the parity from the data (RAID5/6).
    fn repair_for(&self, checked: &ScrubOutcome) -> Option<&'static str> {
        let disagree = checked.tool == "md check"
            && checked.counters.get("mismatch_cnt").copied().unwrap_or(0) > 0;
        disagree.then_some("md repair")
    }

    fn repair(&self, s: &mut Session, b: &Built) -> Result<ScrubOutcome, LayoutError> {
        scrub::md_repair(&s.runner, &array(b)?)
    }

    fn build(
        &self,
        s: &mut Session,
        on: &LayoutDisks<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        let o = self.0;
        let dev = mdadm::free_device();
        let md_name = array_name(&s.lab_id, on.index);
        s.push(Owned::Md {
            dev: dev.clone(),
            name: md_name.clone(),
            members: on.devs.to_vec(),
        })?;
        s.runner.run(&mdadm::create_argv(
            &dev, &md_name, o, on.members, on.spares,
        ))?;
        // The array's own recovery speed limits (KiB/s), before its first resync.
        sync_speeds(s, &dev, o)?;
        tune(s, &dev, o, on.devs)?;
        mdadm::wait_idle(&s.runner, &dev)?;
        made_array(vol, &dev, &md_name);
        vol.base = dev;
        Ok(())
    }

    fn assemble(
        &self,
        s: &mut Session,
        d: &OnDisk<'_>,
        vol: &mut Volume,
    ) -> Result<(), LayoutError> {
        let dev = mdadm::free_device();
        let name = d.made.get(ARRAY_NAME).ok_or_else(|| {
            LayoutError::Unexpected(format!("{}: the md array's name is unknown", d.name))
        })?;
        let all: Vec<PathBuf> = d.members.iter().chain(d.spares).cloned().collect();
        s.push(Owned::Md {
            dev: dev.clone(),
            name: name.to_string(),
            members: all.clone(),
        })?;
        let mut argv: Vec<String> = vec![
            "mdadm".into(),
            "--assemble".into(),
            dev.display().to_string(),
        ];
        argv.extend(all.iter().map(|p| p.display().to_string()));
        s.runner.run(&argv)?;
        // Runtime tunables live in the kernel, not on the disks: set again at each assembly.
        tune(s, &dev, self.0, &all)?;
        made_array(vol, &dev, name);
        vol.base = dev;
        Ok(())
    }

    fn fail(
        &self,
        s: &mut Session,
        b: &mut Built,
        idxs: &[usize],
        victims: &[PathBuf],
    ) -> Result<(), LayoutError> {
        let md = array(b)?;
        for victim in victims {
            md_fail(s, &md, victim)?;
        }
        b.mark_failed(idxs);
        Ok(())
    }

    /// `mdadm --add` a fresh disk for each failed member and wait for recovery.
    fn rebuild(
        &self,
        s: &mut Session,
        b: &mut Built,
        disks: &DiskSource,
        failed: &[usize],
    ) -> Result<Rebuild, LayoutError> {
        let md = array(b)?;
        // With a hot spare md started recovering at the failure: count from then.
        // The write journal's disk sits with the spares but is none.
        let t = if b.spares.len() <= b.stack.journal_disks() {
            Instant::now()
        } else {
            b.degraded_at.unwrap_or_else(Instant::now)
        };
        let mut new_members: Vec<PathBuf> = Vec::new();
        // Faults armed for this rebuild: md's recovery is held at the first one's point
        // before it starts (md refuses a lower `sync_max` once it runs).
        let holds = s.md_hold_first(&md)?;
        let added = add_all(s, b, disks, failed, &md, &mut new_members);
        if let Err(e) = added {
            if !holds.is_empty() {
                let _ = s
                    .runner
                    .write_file(&scrub::md_sysfs(&md, "sync_max"), "max");
            }
            return Err(e);
        }
        if !holds.is_empty() {
            s.md_strike(b, &md, holds);
        }
        mdadm::wait_idle(&s.runner, &md)?;
        let seconds = t.elapsed().as_secs_f64();
        let bytes = mdadm::component_bytes(&md).unwrap_or(0) * new_members.len() as u64;
        Ok(Rebuild::onto(new_members, seconds, bytes))
    }

    fn check(
        &self,
        s: &mut Session,
        b: &Built,
        written_under: bool,
    ) -> Result<Option<ScrubOutcome>, LayoutError> {
        let md = array(b)?;
        scrub::md_check(&s.runner, &md, written_under).map(Some)
    }
}

/// The name an array is created with (`--name`) and found by after a power cut.
pub(super) fn array_name(lab_id: &str, index: usize) -> String {
    format!("iolab-{lab_id}-{index}")
}

/// The built layout's md array.
fn array(b: &Built) -> Result<PathBuf, LayoutError> {
    b.md_array()
        .ok_or_else(|| LayoutError::Unexpected(format!("{} has no md array", b.name)))
}

/// `mdadm --fail --remove` one member; md may still hold it for a moment: the remove is retried.
fn md_fail(s: &mut Session, md: &Path, victim: &Path) -> Result<(), LayoutError> {
    if let Err(e) = s.runner.run(&mdadm::fail_remove_argv(md, victim)) {
        let remove = [
            "mdadm".to_string(),
            md.to_string_lossy().into_owned(),
            "--remove".into(),
            victim.to_string_lossy().into_owned(),
        ];
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(200));
            if s.runner.run(&remove).is_ok() {
                return Ok(());
            }
        }
        return Err(e);
    }
    Ok(())
}

/// `mdadm --add`s a fresh disk for each failed member, in place of it.
fn add_all(
    s: &mut Session,
    b: &mut Built,
    disks: &DiskSource,
    failed: &[usize],
    md: &Path,
    new_members: &mut Vec<PathBuf>,
) -> Result<(), LayoutError> {
    for &idx in failed {
        let (new, new_backing) = s.replacement(b, idx, disks, new_members)?;
        check_stop()?;
        if new == b.members[idx] {
            let _ = s.runner.run(&mdadm::zero_argv(&new));
        }
        s.runner.run(&mdadm::add_argv(md, &new))?;
        b.put_in_place(idx, new.clone(), new_backing);
        new_members.push(new);
    }
    Ok(())
}

impl StorageLayer for Md {
    fn name(&self) -> &'static str {
        "md"
    }

    fn steps<'a>(&self, layer: &'a Layer) -> Option<Box<dyn LayerSteps + 'a>> {
        match layer {
            Layer::Raid(RaidLayer::Md(o)) => Some(Box::new(MdSteps(o))),
            _ => None,
        }
    }

    fn detect(&self) -> Result<(), String> {
        if !std::path::Path::new("/proc/mdstat").exists() && !layer::kernel_module("/md-mod.ko") {
            return Err(format!(
                "the kernel has no md RAID support (no /proc/mdstat, no md-mod module); {VM_HINT}"
            ));
        }
        layer::tools(&["mdadm"], "mdadm")
    }

    fn vm_modules(&self) -> &'static [&'static str] {
        &["md_mod", "raid0", "raid1", "raid10", "raid456"]
    }

    fn vm_tools(&self) -> &'static [GuestTool] {
        &[GuestTool {
            name: "mdadm",
            package: "mdadm",
            required: true,
        }]
    }
}
