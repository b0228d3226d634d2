//! Re-tuning a built layout for the next layout of a sweep that differs from it only in
//! runtime tunables ([`Stack::retunable_to`]): md's sysfs tunables, read-aheads and the
//! members' scheduler set anew on the same build, and every tunable a layout asks for read
//! back from the kernel to check it took.

use std::path::{Path, PathBuf};

use super::super::LayoutError;
use super::super::scrub;
use super::{Built, Session, fs, md};
use crate::stack::{RaidLayer, Stack};

impl Session {
    /// Sets `next`'s runtime tunables on `b` and makes it layout `name`'s build: what a sweep
    /// over runtime tunables does between two layouts instead of a teardown and a build. The
    /// commands are the tuning commands alone. Refused when `next` is not `b`'s stack with
    /// only runtime tunables changed.
    pub fn retune(&mut self, b: &mut Built, name: &str, next: &Stack) -> Result<(), LayoutError> {
        if !b.stack.retunable_to(next) {
            return Err(LayoutError::Unexpected(format!(
                "{name} differs from {} in more than runtime tunables; it needs a build of its own",
                b.name
            )));
        }
        if let (RaidLayer::Md(o), Some(dev)) = (next.raid(), b.md_array()) {
            md::sync_speeds(self, &dev, o)?;
            let devs: Vec<PathBuf> = b.members.iter().chain(&b.spares).cloned().collect();
            md::tune(self, &dev, o, &devs)?;
        }
        fs::set_read_ahead(self, &b.fs_device, next.fs_layer().read_ahead)?;
        b.stack = next.clone();
        b.name = name.to_string();
        Ok(())
    }

    /// Reads back every runtime tunable `b`'s stack asks for and checks the kernel holds it
    /// (what was written is only what was asked). Returns the filesystem device's read-ahead
    /// as `blockdev --getra` gave it, in 512-byte sectors, when the layout set one; `None`
    /// then in a dry run. The `blockdev --getra` commands are in the layout's command list.
    pub fn check_tunables(&self, b: &Built) -> Result<Option<u64>, LayoutError> {
        if self.runner.is_dry_run() {
            return Ok(None);
        }
        let mut wrong: Vec<String> = Vec::new();
        if let (RaidLayer::Md(o), Some(dev)) = (b.stack.raid(), b.md_array()) {
            wrong.extend(self.md_wrong(&dev, o, &b.members));
        }
        let fs_ra = match b.stack.fs_layer().read_ahead {
            Some(want) => {
                let got = self.getra(&b.fs_device)?;
                if got != want / 512 {
                    wrong.push(format!(
                        "read_ahead: asked {} sectors, blockdev --getra {} says {got}",
                        want / 512,
                        b.fs_device.display()
                    ));
                }
                Some(got)
            }
            None => None,
        };
        if wrong.is_empty() {
            Ok(fs_ra)
        } else {
            Err(LayoutError::Unexpected(format!(
                "{}: the kernel did not take every tunable: {}",
                b.name,
                wrong.join("; ")
            )))
        }
    }

    /// md's tunables the kernel holds other than asked, in words.
    fn md_wrong(
        &self,
        dev: &Path,
        o: &crate::stack::MdOptions,
        members: &[PathBuf],
    ) -> Vec<String> {
        let mut wrong = Vec::new();
        let attr = |file: &str| {
            std::fs::read_to_string(scrub::md_sysfs(dev, file))
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
            match self.getra(dev) {
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

    /// `blockdev --getra DEV`: the device's read-ahead in 512-byte sectors.
    fn getra(&self, dev: &Path) -> Result<u64, LayoutError> {
        let out = self.runner.run(&[
            "blockdev".to_string(),
            "--getra".into(),
            dev.display().to_string(),
        ])?;
        out.stdout.trim().parse().map_err(|_| {
            LayoutError::Unexpected(format!(
                "blockdev --getra {} said '{}', not a number of sectors",
                dev.display(),
                out.stdout.trim()
            ))
        })
    }
}
