//! The notes a report ends with: what the tool knows that a reader of the charts would not see
//! — trials that disagree, a working set that fits in RAM, a slow disk, a trial that failed, a
//! throughput cliff, runs that cannot be compared — gathered from the comparison, the runs'
//! own notes and the samples.

use crate::report::compare::{format_estimate, format_ratio, row_label};
use crate::sample::RunRecord;
use crate::sample::layout_record::VERIFIED_TEXT;
use crate::stats::HIGH_CV;
use crate::units::format_bytes;

use super::model::{Note, Report, Severity};
use super::setup::LayoutFacts;

/// Words that make a free-text note a warning.
const WARN_WORDS: [&str; 16] = [
    "slow",
    "fits in ram",
    "fail",
    "error",
    "not supported",
    "interrupted",
    "incomplete",
    "differs",
    "missing",
    "buffered",
    "corrupt",
    "mismatch",
    "silently wrong",
    "lost",
    "page cache",
    "not sustained",
];

/// Whether a free-text note should be shown as a warning.
pub fn classify(text: &str) -> Severity {
    let t = text.to_lowercase();
    if WARN_WORDS.iter().any(|w| t.contains(w)) {
        Severity::Warning
    } else {
        Severity::Info
    }
}

struct Notes(Vec<Note>);

impl Notes {
    fn push(&mut self, severity: Severity, text: String) {
        if !self.0.iter().any(|n| n.text == text) {
            self.0.push(Note { severity, text });
        }
    }
    fn free(&mut self, text: String) {
        let s = classify(&text);
        self.push(s, text);
    }
}

/// Every note for the report, warnings first.
pub fn collect(r: &Report, runs: &[RunRecord]) -> Vec<Note> {
    let mut n = Notes(Vec::new());
    let c = &r.comparison;
    let header = |i: usize| c.runs[i].header.as_str();
    failure_notes(&mut n, r, runs);
    for note in &c.notes {
        n.free(note.clone());
    }
    noise_notes(&mut n, r);
    for ci in &c.cliffs {
        n.push(
            Severity::Warning,
            format!(
                "{} / {} trial {}: {}",
                ci.run,
                ci.workload,
                ci.trial,
                ci.cliff.describe()
            ),
        );
    }
    for (i, run) in runs.iter().enumerate() {
        sample_notes(&mut n, header(i), run);
    }
    lab_notes(&mut n, r);
    n.0.sort_by_key(|x| x.severity != Severity::Warning);
    n.0
}

/// Runs that failed and layouts whose data did not survive failure and rebuild.
fn failure_notes(n: &mut Notes, r: &Report, runs: &[RunRecord]) {
    let header = |i: usize| r.comparison.runs[i].header.as_str();
    for (i, run) in runs.iter().enumerate() {
        if let Some(e) = &run.error {
            n.push(Severity::Warning, format!("{} failed: {e}", header(i)));
        }
    }
    if let Some(lab) = &r.lab {
        for l in &lab.layouts {
            if let Some(v) = l.integrity.as_deref().filter(|v| *v != VERIFIED_TEXT) {
                n.push(
                    Severity::Warning,
                    format!(
                        "{}: integrity through failure and rebuild: {v}",
                        header(l.run)
                    ),
                );
            }
        }
    }
}

/// Noise in the headline figures, and runs with a single trial (no interval).
fn noise_notes(n: &mut Notes, r: &Report) {
    let header = |i: usize| r.comparison.runs[i].header.as_str();
    let mut single = Vec::new();
    for w in &r.workloads {
        let Some(h) = w.headline else { continue };
        let row = r.row(h);
        for (i, cell) in row.cells.iter().enumerate() {
            let Some(cell) = cell else { continue };
            if cell.high_cv {
                n.push(
                    Severity::Warning,
                    format!(
                        "{} / {}: trials disagree by {:.1}% (coefficient of variation, above {:.0}%) on {}: {}: run more trials (--until-stable) or look for noise",
                        header(i),
                        w.name,
                        cell.summary.cv * 100.0,
                        HIGH_CV * 100.0,
                        row_label(row),
                        format_estimate(&cell.summary)
                    ),
                );
            }
            if cell.summary.n == 1 && !single.contains(&i) {
                single.push(i);
            }
        }
    }
    if !single.is_empty() {
        let names: Vec<&str> = single.iter().map(|&i| header(i)).collect();
        n.push(
            Severity::Info,
            format!(
                "one trial per workload in {}: no confidence interval and no significance; repeat trials (--repeat 3) to get them",
                names.join(", ")
            ),
        );
    }
}

/// Degraded runs without their healthy run, degraded runs far slower than healthy, cache
/// devices the lab failed, and slow member disks.
fn lab_notes(n: &mut Notes, r: &Report) {
    let header = |i: usize| r.comparison.runs[i].header.as_str();
    if let Some(lab) = &r.lab {
        for l in &lab.layouts {
            if let Some(name) = &l.degraded_of_missing {
                n.push(
                    Severity::Info,
                    format!(
                        "{} is a degraded run of '{name}', which is not in this report: add it to see degraded/healthy ratios",
                        header(l.run)
                    ),
                );
            }
            if let Some(d) = &l.degraded {
                for (w, ratio) in r.workloads.iter().zip(&d.ratios) {
                    if let Some(ratio) = ratio.filter(|x| x.value < 0.5) {
                        n.push(
                            Severity::Warning,
                            format!(
                                "{} / {}: {} runs at {} of healthy {}",
                                header(l.run),
                                w.name,
                                if l.rebuilding {
                                    "during the rebuild it"
                                } else {
                                    "degraded"
                                },
                                format_ratio(&ratio),
                                header(d.healthy)
                            ),
                        );
                    }
                }
            }
        }
    }
    for (i, s) in r.runs.iter().enumerate() {
        if let Some(l) = &s.layout {
            if let Some((severity, text)) = cache_failure_note(header(i), l) {
                n.push(severity, text);
            }
            if !l.slow_members.is_empty() {
                n.push(
                    Severity::Warning,
                    format!(
                        "{}: SLOW member disk{} {}: the array runs at the speed of its slowest member",
                        header(i),
                        if l.slow_members.len() == 1 { "" } else { "s" },
                        l.slow_members.join(", ")
                    ),
                );
            }
        }
    }
}

/// A degraded run whose cache device the lab failed first (`cache.fail`): what the
/// cache did, as the lab printed it, and what the data set's verdict means for its mode (a
/// writeback cache may lose what it had not written back yet; a writethrough one must lose
/// nothing). A warning when data was lost or the filesystem did not come back.
fn cache_failure_note(header: &str, l: &LayoutFacts) -> Option<(Severity, String)> {
    let c = l.cache_failure.as_ref()?;
    let mut text = format!("{header}: {}", c.describe());
    let verdict = l.integrity.as_deref();
    let verified = verdict == Some(VERIFIED_TEXT);
    match verdict {
        None => {}
        Some(_) if verified => text.push_str("; data set verified"),
        // `DATA LOSS (n files, m scrub errors)`: the verdict's own words.
        Some(v) if v.starts_with("DATA LOSS") => text.push_str(&if c.mode.may_lose_data() {
            format!(
                "; data lost, as a writeback cache may lose the writes it had not written back to the array: {v}"
            )
        } else {
            format!("; data lost, although a writethrough cache must lose nothing: {v}")
        }),
        Some(v) => text.push_str(&format!("; data set: {v}")),
    }
    // Not observed (a dry run) is no finding either way.
    let severity = if c.usable != Some(false) && (verified || verdict.is_none()) {
        Severity::Info
    } else {
        Severity::Warning
    };
    Some((severity, text))
}

/// Notes from one run's record: its own notes, trials that failed or lost IOs, verification
/// mismatches, and a buffered working set that fits in RAM.
fn sample_notes(n: &mut Notes, header: &str, run: &RunRecord) {
    for note in &run.notes {
        n.free(format!("{header}: {note}"));
    }
    let trials = run.workloads.iter().flat_map(|w| &w.trials);
    for line in crate::sample::note::as_designed_lines(trials) {
        n.push(Severity::Info, format!("{header}: {line}"));
    }
    let ram = run.system.ram_bytes;
    for w in &run.workloads {
        let name = &w.workload.name;
        if w.trials.is_empty() {
            n.push(
                Severity::Warning,
                format!("{header} / {name}: no trial finished"),
            );
        }
        // Trial notes repeat from trial to trial: say each once, with the trials it came from;
        // how the engine waited is said once for the run, below.
        let mut seen: Vec<(String, Vec<u32>)> = Vec::new();
        for t in &w.trials {
            for note in t.notes.iter().filter(|n| !n.kind.as_designed()) {
                match seen.iter_mut().find(|(s, _)| *s == note.text) {
                    Some((_, v)) => v.push(t.trial),
                    None => seen.push((note.text.clone(), vec![t.trial])),
                }
            }
            let a = &t.accounting;
            let mut bad = Vec::new();
            if a.errors > 0 {
                bad.push(format!("{} IO errors", a.errors));
            }
            if a.short > 0 {
                bad.push(format!("{} short IOs", a.short));
            }
            if a.completed < a.submitted {
                bad.push(format!(
                    "{} IOs submitted but never completed",
                    a.submitted - a.completed
                ));
            }
            if let Some(v) = t.verify.as_ref().filter(|v| v.bad() > 0) {
                bad.push(v.describe());
            }
            if !bad.is_empty() {
                n.push(
                    Severity::Warning,
                    format!(
                        "{header} / {name} trial {}: failed checks: {}",
                        t.trial,
                        bad.join("; ")
                    ),
                );
            }
        }
        for (note, trials) in seen {
            let which = if trials.len() == w.trials.len() && trials.len() > 1 {
                "all trials".to_string()
            } else {
                format!(
                    "trial{} {}",
                    if trials.len() == 1 { "" } else { "s" },
                    trials
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            n.free(format!("{header} / {name} ({which}): {note}"));
        }
        // The runner says so when it sees it; older runs and imports may not have the note.
        if let Some(io) = w.workload.io() {
            let said = run
                .notes
                .iter()
                .any(|x| x.contains("fits in RAM") && x.starts_with(name.as_str()));
            if let Some(size) = io
                .size
                .filter(|&s| !io.direct && ram > 0 && s <= ram && !said)
            {
                n.push(
                    Severity::Warning,
                    format!(
                        "{header} / {name}: working set {} fits in RAM ({}) and IO was buffered: the figures measure the page cache, not the disk",
                        format_bytes(size),
                        format_bytes(ram)
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::sample::layout_record::{IntegrityRecord, LayoutRecord};
    use crate::stack::cache::{CacheFailure, CacheKind, CacheMode};

    #[test]
    fn notes_about_cache_slowness_and_failure_are_warnings() {
        assert_eq!(
            classify("seq: working set 1GiB fits in RAM (16GiB)"),
            Severity::Warning
        );
        assert_eq!(classify("sdb is SLOW: 59 MB/s"), Severity::Warning);
        assert_eq!(classify("dropped caches before each trial"), Severity::Info);
    }

    /// A stored lab run of one layout, for the report's tests.
    pub(in crate::report::html) fn lab_run(label: &str, layout: LayoutRecord) -> RunRecord {
        RunRecord {
            id: format!("id-{label}"),
            status: crate::sample::RunStatus::Complete,
            started_unix_ms: 1_700_000_000_000,
            ended_unix_ms: Some(1_700_000_001_000),
            command_line: vec!["iolab".into(), "lab".into()],
            label: Some(label.into()),
            note: None,
            lab_id: Some("ab12cd".into()),
            layout: Some(layout),
            suite_name: "lab".into(),
            system: crate::system::SystemInfo::default(),
            target: crate::target::TargetInfo::directory("/mnt".into()),
            workloads: Vec::new(),
            notes: Vec::new(),
            error: None,
        }
    }

    fn failure(kind: CacheKind, mode: CacheMode, dirty: Option<u64>) -> CacheFailure {
        CacheFailure {
            kind,
            mode,
            devices: vec!["iolab-ab12cd-0-cache".into()],
            dirty_bytes: dirty,
            state_before: "dirty".into(),
            kernel: "cache set <unregistered>".into(),
            actions: vec![],
            state_after: "no cache".into(),
            usable: Some(true),
        }
    }

    /// The layout record of a degraded run keeps what failing its cache device did;
    /// the report says so in the lab's words, HTML-escaped, with what the verdict means for
    /// the cache's mode; a lab without a failed cache has no such note.
    #[test]
    fn a_failed_cache_device_is_a_note_with_its_data_verdict() {
        let healthy = |name: &str| LayoutRecord {
            name: Some(name.into()),
            integrity: Some(IntegrityRecord {
                verdict: VERIFIED_TEXT.into(),
                detail: None,
            }),
            ..LayoutRecord::default()
        };
        let degraded = |name: &str, verdict: &str, c: Option<CacheFailure>| LayoutRecord {
            degraded_of: Some(name.into()),
            integrity: Some(IntegrityRecord {
                verdict: verdict.into(),
                detail: None,
            }),
            cache_failure: c,
            ..healthy(name)
        };
        let wb = failure(CacheKind::Bcache, CacheMode::Writeback, Some(2 << 20));
        let wt = failure(CacheKind::Lvmcache, CacheMode::Writethrough, None);
        let runs = [
            lab_run("bc", healthy("bc")),
            lab_run(
                "bc-degraded",
                degraded("bc", "DATA LOSS (3 files, 0 scrub errors)", Some(wb)),
            ),
            lab_run("lc", healthy("lc")),
            lab_run("lc-degraded", degraded("lc", VERIFIED_TEXT, Some(wt))),
        ];
        let r = super::super::build(&runs, &super::super::ReportOptions::default());
        let note = |start: &str| {
            r.notes
                .iter()
                .find(|n| n.text.starts_with(start))
                .unwrap_or_else(|| panic!("no note '{start}' in {:#?}", r.notes))
        };
        let lost = note(
            "bc-degraded: bcache writeback cache device failed (2MiB dirty): cache set <unregistered>; then nothing to do; filesystem usable; data lost, as a writeback cache may lose",
        );
        assert_eq!(lost.severity, Severity::Warning);
        assert!(
            lost.text.ends_with(": DATA LOSS (3 files, 0 scrub errors)"),
            "{}",
            lost.text
        );
        let kept = note("lc-degraded: lvmcache writethrough cache device failed: ");
        assert_eq!(kept.severity, Severity::Info);
        assert!(kept.text.ends_with("; data set verified"), "{}", kept.text);
        assert_eq!(
            r.notes
                .iter()
                .filter(|n| n.text.contains("cache device failed"))
                .count(),
            2,
            "healthy runs have no cache note: {:#?}",
            r.notes
        );
        let html = super::super::render(&r);
        assert!(
            html.contains("cache set &lt;unregistered&gt;; then nothing to do; filesystem usable; data lost, as a writeback cache"),
            "the note is escaped"
        );
        assert!(!html.contains("<unregistered>"));
        let text = crate::report::compare::render_text(&r.comparison);
        assert!(
            text.contains("verdict: bc-degraded: integrity DATA LOSS (3 files, 0 scrub errors); bcache writeback cache device failed (2MiB dirty)"),
            "{text}"
        );

        let plain = [
            lab_run("bc", healthy("bc")),
            lab_run("bc-degraded", degraded("bc", VERIFIED_TEXT, None)),
        ];
        let r = super::super::build(&plain, &super::super::ReportOptions::default());
        assert!(
            !r.notes.iter().any(|n| n.text.contains("cache")),
            "{:#?}",
            r.notes
        );
        assert!(!super::super::render(&r).contains("cache device failed"));
    }
}
