//! `powercut = { cuts, then, disk_cache, seed, window }`: the VM lab cuts the power of a layout
//! while it writes, boots it again on the same disks and judges what survived. The
//! lab in `crate::lab::powercut` does it; this section reads and checks the table.

use serde::{Deserialize, Serialize};

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::stack::Stack;

/// What happens right after the power comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterCut {
    /// Let the layout recover by itself (resync, log replay), then read everything back.
    None,
    /// Fail a member as soon as the layout is assembled, before a resync can finish, then read
    /// everything back: parity left stale by the cut (the RAID5 write hole) rebuilds wrong data.
    FailMember,
}

impl AfterCut {
    /// `none` or `fail-member`, as written in the spec.
    pub fn name(self) -> &'static str {
        match self {
            AfterCut::None => "none",
            AfterCut::FailMember => "fail-member",
        }
    }
}

/// What the member disks do with writes they acknowledged but did not flush: the spec's
/// choice, one model for every cut or the two taking turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiskCache {
    /// No volatile write cache: a write the disk completed is on it (the VM is killed at once).
    None,
    /// A volatile write cache: each disk keeps what it had flushed, plus a prefix of its own
    /// of what came after.
    Volatile,
    /// Both models, taking turns: odd cuts without a cache, even cuts with a volatile one.
    Both,
    /// A cache that acknowledges flushes it does not make (drives that lie about flushes):
    /// each disk loses everything from one of its last few flushes on.
    IgnoresFlush,
}

impl DiskCache {
    /// As written in the spec.
    pub fn name(self) -> &'static str {
        match self {
            DiskCache::None => "none",
            DiskCache::Volatile => "volatile",
            DiskCache::Both => "both",
            DiskCache::IgnoresFlush => "ignores-flush",
        }
    }

    /// The model cut `k` (1-based) is made under.
    pub fn for_cut(self, k: u32) -> CacheModel {
        match self {
            DiskCache::None => CacheModel::None,
            DiskCache::Volatile => CacheModel::Volatile,
            DiskCache::Both if k % 2 == 1 => CacheModel::None,
            DiskCache::Both => CacheModel::Volatile,
            DiskCache::IgnoresFlush => CacheModel::IgnoresFlush,
        }
    }

    /// Whether some cut needs the disks' writes logged (a model other than `none`).
    pub fn logs_writes(self) -> bool {
        self != DiskCache::None
    }
}

/// What a disk's cache does with the writes it acknowledged when the power goes, in one cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheModel {
    /// No volatile cache: every completed write is on the disk.
    None,
    /// A volatile cache that honours flushes: the disk keeps everything up to its last flush
    /// and a prefix (its own, seeded) of what came after.
    Volatile,
    /// A cache that acknowledges flushes it did not make: the disk loses everything from one
    /// of its last few flushes on, flushed writes included.
    IgnoresFlush,
}

impl CacheModel {
    /// As written in the reports and the host's cut log.
    pub fn name(self) -> &'static str {
        match self {
            CacheModel::None => "none",
            CacheModel::Volatile => "volatile",
            CacheModel::IgnoresFlush => "ignores-flush",
        }
    }
}

/// A layout's power cuts, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PowerCutSpec {
    /// How many times the power is cut (each on a freshly built layout).
    pub cuts: u32,
    /// What happens right after the restart.
    pub then: AfterCut,
    /// The disks' write-cache model.
    pub disk_cache: DiskCache,
    /// Seed of the cut moments and of the writer's choices: the same seed cuts at the same
    /// moments after the writer starts.
    pub seed: u64,
    /// The power goes at a moment drawn from (window / 8, window] after the writer starts,
    /// milliseconds.
    pub window_ms: u64,
}

/// Default cut count.
const DEFAULT_CUTS: u32 = 10;
/// Most cuts per layout (each is a boot of the VM).
const MAX_CUTS: u32 = 1000;
/// Default window: the writer runs for up to this long before the power goes.
const DEFAULT_WINDOW_MS: u64 = 4000;

/// The power-cut section.
pub(super) struct PowerCut;

impl Section for PowerCut {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.powercut.is_some().then_some("powercut")
    }

    fn check(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        stack: &Stack,
        draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let Some(p) = &raw.powercut else {
            return Ok(());
        };
        let cuts = match p.cuts {
            None => DEFAULT_CUTS,
            Some(n) if (1..=i64::from(MAX_CUTS)).contains(&n) => n as u32,
            Some(_) => {
                return Err(cx.err(
                    "powercut",
                    "powercut.cuts",
                    format!("must be between 1 and {MAX_CUTS} (how many times the power goes)"),
                ));
            }
        };
        let then = match p.then.as_deref() {
            None | Some("none") => AfterCut::None,
            Some("fail-member") => AfterCut::FailMember,
            Some(o) => {
                return Err(cx.err(
                    "powercut",
                    "powercut.then",
                    format!("unknown '{o}' (use none or fail-member)"),
                ));
            }
        };
        if then == AfterCut::FailMember && !stack.survives_one_failure() {
            return Err(cx.err(
                "powercut",
                "powercut.then",
                format!(
                    "{} has no redundancy to lose a member from; drop then = \"fail-member\" or pick a redundant level",
                    stack.describe()
                ),
            ));
        }
        let disk_cache = match p.disk_cache.as_deref() {
            None | Some("none") => DiskCache::None,
            Some("volatile") => DiskCache::Volatile,
            Some("both") => DiskCache::Both,
            Some("ignores-flush") => DiskCache::IgnoresFlush,
            Some(o) => {
                return Err(cx.err(
                    "powercut",
                    "powercut.disk_cache",
                    format!("unknown '{o}' (use none, volatile, both or ignores-flush)"),
                ));
            }
        };
        let seed = match p.seed {
            None => xxhash_rust::xxh3::xxh3_64(cx.name.as_bytes()),
            Some(s) if s >= 0 => s as u64,
            Some(_) => {
                return Err(cx.err("powercut", "powercut.seed", "must be 0 or more"));
            }
        };
        let window_ms = match &p.window {
            None => DEFAULT_WINDOW_MS,
            Some(w) => {
                let d = w
                    .positive_duration()
                    .map_err(|e| cx.err("powercut", "powercut.window", e))?;
                let ms = d.as_millis() as u64;
                if !(200..=600_000).contains(&ms) {
                    return Err(cx.err(
                        "powercut",
                        "powercut.window",
                        "must be between 200ms and 10m (how long the writer may run before the cut)",
                    ));
                }
                ms
            }
        };
        draft.powercut = Some(PowerCutSpec {
            cuts,
            then,
            disk_cache,
            seed,
            window_ms,
        });
        Ok(())
    }
}

#[cfg(test)]
#[path = "powercut_tests.rs"]
mod tests;
