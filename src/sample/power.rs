//! What power cuts did to a layout: per cut, how the power went, what each layer did
//! when it came back and how long that took, and what reading everything back found — and the
//! layout's verdict, the lab table's POWER column.
//!
//! Plain serde structs: `lab::powercut` fills them in the VM, the lab report and the run's
//! layout record carry them, the store keeps them, the reports and `decide` read them.

use serde::{Deserialize, Serialize};

/// Every cut of one layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PowerReport {
    /// Cuts the spec asked for.
    pub cuts_planned: u32,
    /// What happened right after the restart: `none` or `fail-member`.
    pub then: String,
    /// The disks' write-cache model: `none` (the VM killed at once: a write a disk completed
    /// is kept, nothing else), `volatile` (each disk keeps what it flushed and a prefix of its
    /// own of the rest), `both` (taking turns) or `ignores-flush` (a disk that lies about its
    /// flushes). Each cut says which it was made under.
    pub disk_cache: String,
    /// Seed of the cut moments and the writer's choices.
    pub seed: u64,
    /// The power went at a moment in (window / 8, window] after the writer started, ms.
    pub window_ms: u64,
    /// The cuts made, in order.
    pub cuts: Vec<CutReport>,
}

/// One power cut.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CutReport {
    /// 1-based.
    pub cut: u32,
    /// Milliseconds after the writer started that the power was to go (seeded).
    pub after_ms: u64,
    /// Milliseconds from the host seeing the writer start to the VM being killed, as the host
    /// measured them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed_after_ms: Option<u64>,
    /// Writes acknowledged durable before the cut (O_DSYNC writes returned, files fsync'd with
    /// their directory), as the writer logged them to the host.
    pub durable_writes: u64,
    /// Files the writer created and made durable before the cut.
    pub durable_files: u64,
    /// The disks' cache model this cut was made under (`none`, `volatile`, `ignores-flush`);
    /// empty in records made before the models existed (they were all `none`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub disk_cache: String,
    /// With a volatile cache: what each disk kept of its writes when the power went.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rollback: Vec<DiskRollback>,
    /// What the layout did when the power came back.
    pub recovery: Recovery,
    /// The member failed right after the restart (`then = "fail-member"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_member: Option<String>,
    /// What reading everything back found.
    pub judgement: Judgement,
    /// Why this cut could not be made or judged (a failed build, assembly or mount).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the layers did after the unclean stop, and how long it took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Recovery {
    /// Seconds to assemble the RAID layer (md `--assemble`, PPL replay included; `zpool
    /// import`) and activate LVM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assemble_seconds: Option<f64>,
    /// Seconds to mount (the filesystem's journal or log replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount_seconds: Option<f64>,
    /// md's state right after assembly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub md: Option<MdRecovery>,
    /// What the guest kernel said while the layout came back (md, dm, filesystem lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernel: Vec<String>,
}

/// md after an unclean stop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MdRecovery {
    /// `array_state` right after assembly (`clean`, `active`, `read-auto`).
    pub array_state: String,
    /// `sync_action` right after assembly: `resync` when md rewrites parity after the crash,
    /// `idle` when it had nothing to do (PPL replayed, or the array was clean).
    pub sync_action: String,
    /// `consistency_policy` (`resync`, `bitmap`, `ppl`, `journal`).
    pub consistency_policy: String,
    /// The resync was held back (md's speed limit at its floor) so a member could fail before
    /// it finished, as it would on an array whose resync takes hours.
    pub resync_held: bool,
    /// How far the resync had got when the member failed, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_pct_at_failure: Option<f64>,
    /// Seconds the resync took to finish (`then = "none"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_seconds: Option<f64>,
}

/// What reading the writer's files back found, block by 4 KiB block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Judgement {
    /// Files read.
    pub files: u64,
    /// Blocks read.
    pub blocks: u64,
    /// Blocks that had to read back exactly: the data set written before the writer started
    /// and every write logged durable.
    pub durable_blocks: u64,
    /// Durable blocks that came back older than acknowledged, zeroed, or not at all (their
    /// file missing or short).
    pub durable_lost: u64,
    /// Blocks that read back wrong without an error: garbage, or another file's data (the
    /// write hole shows here).
    pub silent_wrong: u64,
    /// Of those, blocks holding another file's data (or data from before the layout was made).
    pub foreign: u64,
    /// Blocks the layout refused to read (EIO): a loss it reported.
    pub read_errors: u64,
    /// Durable files that are gone.
    pub files_missing: u64,
    /// Files with a block that read back wrong without an error.
    pub files_silently_wrong: u64,
    /// Blocks not yet durable that read back as zeros (allowed: not written yet).
    pub zero_not_durable: u64,
    /// The first findings, one line each: `f12 block 7: garbage without a read error`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

impl Judgement {
    /// True when anything was lost or wrong.
    pub fn lost(&self) -> bool {
        self.durable_lost + self.silent_wrong + self.read_errors + self.files_missing > 0
    }
}

impl CutReport {
    /// True when this cut lost data (or could not be judged).
    pub fn lost(&self) -> bool {
        self.error.is_some() || self.judgement.lost()
    }
}

impl PowerReport {
    /// Cuts that lost data or could not be judged.
    pub fn lost_cuts(&self) -> usize {
        self.cuts.iter().filter(|c| c.lost()).count()
    }

    /// Cuts that read something back wrong without an error.
    pub fn silent_cuts(&self) -> usize {
        self.cuts
            .iter()
            .filter(|c| c.judgement.silent_wrong > 0)
            .count()
    }

    /// The POWER column: `0/10 lost`, or `2/10: 3 durable blocks lost, 1 file silently wrong
    /// (write hole)`; `-/10: ...` names a cut that could not be judged.
    pub fn text(&self) -> String {
        let n = self.cuts.len();
        let lost = self.lost_cuts();
        if lost == 0 {
            let short = if n < self.cuts_planned as usize {
                format!(" (of {} planned)", self.cuts_planned)
            } else {
                String::new()
            };
            return format!("0/{n} lost{short}");
        }
        let sum = |f: fn(&Judgement) -> u64| self.cuts.iter().map(|c| f(&c.judgement)).sum::<u64>();
        let mut parts = Vec::new();
        let dl = sum(|j| j.durable_lost);
        if dl > 0 {
            parts.push(format!("{dl} durable block{} lost", plural(dl)));
        }
        let fm = sum(|j| j.files_missing);
        if fm > 0 {
            parts.push(format!("{fm} durable file{} missing", plural(fm)));
        }
        let sw = sum(|j| j.files_silently_wrong);
        if sw > 0 {
            let hole = if self.then == "fail-member" {
                " (write hole)"
            } else {
                ""
            };
            parts.push(format!("{sw} file{} silently wrong{hole}", plural(sw)));
        }
        let re = sum(|j| j.read_errors);
        if re > 0 {
            parts.push(format!("{re} block{} unreadable", plural(re)));
        }
        let errs = self.cuts.iter().filter(|c| c.error.is_some()).count();
        if errs > 0 {
            parts.push(format!("{errs} cut{} not judged", plural(errs as u64)));
        }
        format!("{lost}/{n}: {}", parts.join(", "))
    }
}

/// What one disk kept, when the power went, of the writes logged since its boot (a disk with a
/// volatile write cache: `vm::writelog`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskRollback {
    /// The disk as the guest named it (`/dev/vda`).
    pub disk: String,
    /// Requests logged since the boot (writes, flushes, discards).
    pub logged: u64,
    /// Flushes among them.
    pub flushes: u64,
    /// Requests logged after the last flush (what a volatile cache may lose).
    pub after_last_flush: u64,
    /// Writes (and discards) dropped: completed for the guest, gone from the disk.
    pub dropped: u64,
    /// Of those, writes a later flush had covered (only a cache that ignores flushes drops
    /// them).
    pub dropped_flushed: u64,
}

impl DiskRollback {
    /// `vda dropped 3 of 140 (12 after its last flush)`.
    pub fn text(&self) -> String {
        let name = self.disk.trim_start_matches("/dev/");
        let mut s = format!(
            "{name} dropped {} of {} ({} after its last flush)",
            self.dropped, self.logged, self.after_last_flush
        );
        if self.dropped_flushed > 0 {
            s.push_str(&format!(", {} of them flushed", self.dropped_flushed));
        }
        s
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_says_how_many_cuts_lost_what() {
        let mut p = PowerReport {
            cuts_planned: 3,
            then: "fail-member".into(),
            disk_cache: "none".into(),
            ..PowerReport::default()
        };
        p.cuts = (1..=3)
            .map(|cut| CutReport {
                cut,
                ..CutReport::default()
            })
            .collect();
        assert_eq!(p.text(), "0/3 lost");
        p.cuts[1].judgement.silent_wrong = 2;
        p.cuts[1].judgement.files_silently_wrong = 1;
        p.cuts[2].judgement.durable_lost = 3;
        assert_eq!(
            p.text(),
            "2/3: 3 durable blocks lost, 1 file silently wrong (write hole)"
        );
        assert_eq!(p.silent_cuts(), 1);
        p.cuts.truncate(1);
        assert_eq!(p.text(), "0/1 lost (of 3 planned)");
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<PowerReport>(&j).unwrap(), p);
    }
}
