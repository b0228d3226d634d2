//! The POWER column and the lines under the lab table that say what each power cut did: when
//! the power went, what came back how fast, and what the judge found.

use crate::lab::report::{LabReport, LayoutReport};
use crate::sample::power::{CutReport, DiskRollback};

/// Whether the table gets a POWER column (some layout had its power cut).
pub(super) fn any(r: &LabReport) -> bool {
    r.layouts.iter().any(|l| l.power.is_some())
}

/// The short cell: `0/10 lost`, `2/10 LOST` (what was lost is on the lines below).
pub(super) fn short_cell(l: &LayoutReport) -> String {
    match &l.power {
        None => "-".into(),
        Some(p) if p.lost_cuts() == 0 => p.text(),
        Some(p) => format!("{}/{} LOST", p.lost_cuts(), p.cuts.len()),
    }
}

/// One line for one cut.
fn cut_line(c: &CutReport) -> String {
    let mut parts = vec![format!("at {} ms", c.after_ms)];
    if let Some(k) = c.killed_after_ms {
        parts[0].push_str(&format!(" (killed after {k} ms)"));
    }
    parts.push(format!(
        "{} durable writes, {} durable files",
        c.durable_writes, c.durable_files
    ));
    if !c.disk_cache.is_empty() && c.disk_cache != "none" {
        let disks: Vec<String> = c.rollback.iter().map(DiskRollback::text).collect();
        parts.push(format!(
            "disk cache {}: {}",
            c.disk_cache,
            if disks.is_empty() {
                "no disk said what it kept".into()
            } else {
                disks.join(", ")
            }
        ));
    }
    let rec = &c.recovery;
    if let Some(m) = &rec.md {
        let mut s = format!(
            "md {} ({}), sync {}",
            m.array_state, m.consistency_policy, m.sync_action
        );
        if matches!(m.consistency_policy.as_str(), "ppl" | "journal") && m.sync_action == "resync" {
            // md replays its log and marks the array clean only when the log held entries
            // that all checked out; otherwise it falls back to a full resync, and until that
            // ends the write hole is open as without the log.
            s.push_str(&format!(
                ", its {} log not replayed (md fell back to a full resync)",
                m.consistency_policy
            ));
        }
        if let Some(pct) = m.resync_pct_at_failure {
            s.push_str(&format!(", resync held at {pct:.1}%"));
        }
        if let Some(t) = m.resync_seconds {
            s.push_str(&format!(", resynced in {t:.1} s"));
        }
        parts.push(s);
    }
    if let (Some(a), Some(m)) = (rec.assemble_seconds, rec.mount_seconds) {
        parts.push(format!("assembled in {a:.1} s, mounted in {m:.1} s"));
    }
    if let Some(f) = &c.failed_member {
        parts.push(format!("{f} failed"));
    }
    let j = &c.judgement;
    if let Some(e) = &c.error {
        parts.push(format!("NOT JUDGED: {e}"));
    } else if j.lost() {
        let mut s = format!(
            "{} files: {} durable blocks lost, {} blocks silently wrong in {} files",
            j.files, j.durable_lost, j.silent_wrong, j.files_silently_wrong
        );
        if j.read_errors > 0 {
            s.push_str(&format!(", {} unreadable", j.read_errors));
        }
        if j.files_missing > 0 {
            s.push_str(&format!(", {} durable files missing", j.files_missing));
        }
        parts.push(s);
    } else {
        parts.push(format!(
            "{} files, {} durable blocks all back",
            j.files, j.durable_blocks
        ));
    }
    format!("cut {}: {}", c.cut, parts.join("; "))
}

/// The lines under the table for every layout whose power was cut.
pub(super) fn notes(r: &LabReport) -> String {
    let mut out = String::new();
    for l in &r.layouts {
        let Some(p) = &l.power else { continue };
        out.push_str(&format!(
            "{} power: {} (then {}, disk cache {}, seed {}, cut within {} ms of the writer starting)\n",
            l.name,
            p.text(),
            p.then,
            p.disk_cache,
            p.seed,
            p.window_ms
        ));
        for c in &p.cuts {
            out.push_str(&format!("{} power {}\n", l.name, cut_line(c)));
            if c.lost() {
                for f in c.judgement.findings.iter().take(3) {
                    out.push_str(&format!("{} power cut {}:   {f}\n", l.name, c.cut));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut made with a volatile disk cache says so, and what each disk kept; a cut
    /// without one reads as before.
    #[test]
    fn a_cut_line_names_its_cache_model_and_what_each_disk_kept() {
        let mut c = CutReport {
            cut: 2,
            after_ms: 900,
            durable_writes: 40,
            ..CutReport::default()
        };
        assert!(!cut_line(&c).contains("disk cache"), "{}", cut_line(&c));
        c.disk_cache = "ignores-flush".into();
        c.rollback = vec![DiskRollback {
            disk: "/dev/vda".into(),
            logged: 120,
            flushes: 30,
            after_last_flush: 3,
            dropped: 9,
            dropped_flushed: 6,
        }];
        assert!(
            cut_line(&c).contains(
                "; disk cache ignores-flush: vda dropped 9 of 120 (3 after its last flush), 6 of them flushed;"
            ),
            "{}",
            cut_line(&c)
        );
    }

    /// A cut after which md did not replay its partial parity log (the log held no entry, or
    /// one failed its checksum) says so: the resync that follows is the write hole's window,
    /// as without the log. A replayed log reads as before.
    #[test]
    fn a_ppl_cut_md_did_not_replay_says_so() {
        let mut c = CutReport {
            cut: 1,
            after_ms: 1486,
            durable_writes: 93,
            ..CutReport::default()
        };
        c.recovery.md = Some(crate::sample::power::MdRecovery {
            array_state: "active".into(),
            sync_action: "idle".into(),
            consistency_policy: "ppl".into(),
            resync_held: true,
            ..Default::default()
        });
        assert!(!cut_line(&c).contains("not replayed"), "{}", cut_line(&c));
        if let Some(m) = c.recovery.md.as_mut() {
            m.sync_action = "resync".into();
            m.resync_pct_at_failure = Some(0.0);
        }
        assert!(
            cut_line(&c).contains(
                "md active (ppl), sync resync, its ppl log not replayed (md fell back to a full resync), resync held at 0.0%"
            ),
            "{}",
            cut_line(&c)
        );
    }
}
