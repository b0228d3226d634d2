//! Re-tuning a built layout for the next layout of a sweep that differs from it only in
//! runtime tunables ([`Stack::retunable_to`]): each layer sets its own anew on the same build
//! (md's sysfs tunables, read-aheads, the members' scheduler), and every tunable a layout asks
//! for is read back from the kernel to check it took.

use std::path::Path;

use super::super::LayoutError;
use super::{Built, Session, layers};
use crate::stack::{Layer, Stack};

/// The host-wide caches a layout's layers capped while it is measured, with the settings to
/// put back ([`Session::restore_caches`]).
#[derive(Debug, Default)]
pub struct CacheCaps(Vec<(Layer, String)>);

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
        for layer in next.layers() {
            layers::steps(layer)?.retune(self, b)?;
        }
        b.stack = next.clone();
        b.name = name.to_string();
        Ok(())
    }

    /// The runtime tunables of `b`'s layers as the kernel or ZFS holds them after the build, in
    /// words (md: `stripe_cache_size 4096, group_thread_cnt 2, read_ahead_kb 4096, scheduler
    /// mq-deadline`; ZFS: `recordsize 1M, primarycache metadata`), each layer's own answer:
    /// what was asked is only what was written, this is what was taken. `None` when there is
    /// nothing to say (or in a dry run).
    pub fn tunables(&self, b: &Built) -> Option<String> {
        let said: Vec<String> = b
            .stack
            .layers()
            .iter()
            .filter_map(|l| layers::steps(l).ok()?.tunables(self, b))
            .collect();
        (!said.is_empty()).then(|| said.join(", "))
    }

    /// Caps the host-wide caches `stack`'s layers would serve reads from while it is measured
    /// (ZFS's ARC), each layer's own; what to put back with [`Session::restore_caches`]. A
    /// cap that fails is left out: the layout is measured all the same.
    pub fn cap_caches(&self, stack: &Stack) -> CacheCaps {
        CacheCaps(
            stack
                .layers()
                .iter()
                .filter_map(|l| {
                    let prev = layers::steps(l).ok()?.cap_cache(self)?.ok()?;
                    Some((l.clone(), prev))
                })
                .collect(),
        )
    }

    /// Puts back what [`Session::cap_caches`] capped (best effort: a layout's teardown goes
    /// on regardless).
    pub fn restore_caches(&self, caps: &CacheCaps) {
        for (l, prev) in &caps.0 {
            if let Ok(steps) = layers::steps(l) {
                let _ = steps.restore_cache(self, prev);
            }
        }
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
        for layer in b.stack.layers() {
            wrong.extend(layers::steps(layer)?.wrong_tunables(self, b));
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

    /// `blockdev --getra DEV`: the device's read-ahead in 512-byte sectors.
    pub(super) fn getra(&self, dev: &Path) -> Result<u64, LayoutError> {
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
