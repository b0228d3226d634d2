//! A layout's integrity verdict: what reading the data set back found at each step (healthy,
//! degraded, rebuilt, and after a second failure), what the layout's own scrub or check found,
//! and which step could not be done — summed up as `verified`, `DATA LOSS (n files, m scrub
//! errors)` or `FAILED: <step>`.
//!
//! Written by the lab (`lab::dataset` reads the files back, `lab::driver` adds each step),
//! stored with every run of the layout ([`super::layout_record::IntegrityRecord`]) and read by
//! the reports: run data, so it sits with the other samples, below the lab, the store and the
//! reports.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::layout::scrub::ScrubOutcome;

/// The text of a verified integrity verdict: stored with a lab's runs, so a report read back
/// from the store tells a layout that kept its data from one that did not.
pub const VERIFIED_TEXT: &str = "verified";

/// Bad files named per step in the report (all are counted).
pub const MAX_LISTED: usize = 20;

/// What reading a file back found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// Read completely, but the checksum or the size differ.
    Mismatch,
    /// The read failed (btrfs returns EIO for a block whose checksum fails and has no good
    /// copy).
    ReadError,
    /// The file is gone.
    Missing,
}

/// A file that did not come back intact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadFile {
    /// Relative path.
    pub path: String,
    /// What went wrong.
    pub problem: Problem,
    /// In the OS's or our words (`Input/output error (os error 5) at byte 65536`).
    pub detail: String,
}

/// The result of reading the whole set back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// Files read back intact.
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// Files whose content or size differ.
    pub mismatched: u64,
    /// Files that could not be read.
    pub read_errors: u64,
    /// Files that are gone.
    pub missing: u64,
    /// Wall time of the read-back, seconds.
    pub seconds: f64,
    /// The first bad files (at most [`MAX_LISTED`]).
    pub bad_files: Vec<BadFile>,
    /// Every bad file's path (to count distinct lost files across steps); not serialized.
    #[serde(skip)]
    pub bad_paths: Vec<String>,
}

impl Verification {
    /// Files that did not come back intact.
    pub fn bad(&self) -> u64 {
        self.mismatched + self.read_errors + self.missing
    }
}

/// When the data set was read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Right after writing (from the disks, not the cache).
    Healthy,
    /// One member failed.
    Degraded,
    /// The failed member replaced.
    Rebuilt,
    /// Two members failed at once (`failures = 2`).
    Degraded2,
    /// Both replaced.
    Rebuilt2,
    /// Right after an injected fault (before degrading or after the rebuild).
    Faulted,
}

impl Step {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Step::Healthy => "healthy",
            Step::Degraded => "degraded",
            Step::Rebuilt => "rebuilt",
            Step::Degraded2 => "degraded2",
            Step::Rebuilt2 => "rebuilt2",
            Step::Faulted => "after fault",
        }
    }
}

/// One read-back of the data set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCheck {
    /// When.
    pub step: Step,
    /// Files in the set at that step (the set grows by what is written while degraded).
    #[serde(default)]
    pub files_in_set: u64,
    /// Files read back intact.
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// Files whose content or size differ.
    pub mismatched: u64,
    /// Files that could not be read (EIO).
    pub read_errors: u64,
    /// Files that are gone.
    pub missing: u64,
    /// Wall time of the read-back, seconds.
    pub seconds: f64,
    /// The first bad files, with what was wrong.
    pub bad_files: Vec<BadFile>,
}

impl StepCheck {
    /// Files that did not come back intact.
    pub fn bad(&self) -> u64 {
        self.mismatched + self.read_errors + self.missing
    }
}

/// Data written while the layout was degraded (added to the set, read back at every later
/// step).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DegradedWrite {
    /// While `degraded` or `degraded2`.
    pub step: Step,
    /// Files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Why writing stopped early (the application got the error: reported, not data loss).
    pub error: Option<String>,
}

/// The layout's own scrub or check, and the step it followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrubCheck {
    /// `healthy` (a layout that is not degraded), `rebuilt` or `rebuilt2`.
    pub after: Step,
    /// What it found.
    #[serde(flatten)]
    pub outcome: ScrubOutcome,
}

/// A step the lab could not do (a degraded mount refused, a replace that failed), in the
/// tool's own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedStep {
    /// `write`, `degrade`, `rebuild`, `degrade2`, `rebuild2` or `scrub`.
    pub step: String,
    /// The tool's message.
    pub message: String,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// Every file came back intact at every step, and the scrub found nothing it could not
    /// repair.
    Verified,
    /// Files came back wrong or unreadable, or the scrub found errors it could not repair.
    DataLoss {
        /// Distinct files bad at some step.
        files: u64,
        /// Errors the scrub or check could not repair.
        scrub_errors: u64,
        /// Files that read back with wrong bytes and no error (the most files one step saw):
        /// the loss an application cannot notice, apart from the files that could not be read.
        #[serde(default, skip_serializing_if = "is_zero")]
        silent: u64,
    },
    /// A step could not be done, and no data was seen lost before it.
    Failed {
        /// Which.
        step: String,
    },
}

impl Verdict {
    /// `verified`, `DATA LOSS (2 files, 1 scrub error)`, `FAILED: rebuild`.
    pub fn text(&self) -> String {
        let n = |k: u64, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        match self {
            Verdict::Verified => VERIFIED_TEXT.into(),
            Verdict::DataLoss {
                files,
                scrub_errors,
                silent,
            } => format!(
                "DATA LOSS ({}, {}{})",
                n(*files, "file", "files"),
                n(*scrub_errors, "scrub error", "scrub errors"),
                if *silent > 0 {
                    format!("; {silent} silently wrong: wrong bytes, no error")
                } else {
                    String::new()
                }
            ),
            Verdict::Failed { step } => format!("FAILED: {step}"),
        }
    }
}

/// A layout's integrity record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntegrityReport {
    /// Files in the data set.
    pub files: u64,
    /// Bytes in the data set.
    pub bytes: u64,
    /// The manifest (checksums, one line per file) written outside the layout, next to the
    /// lab's state; kept after the lab only when the layout lost data.
    pub manifest: Option<String>,
    /// Each read-back, in order.
    pub steps: Vec<StepCheck>,
    /// Data written while degraded.
    #[serde(default)]
    pub degraded_writes: Vec<DegradedWrite>,
    /// The layout's own scrub or check after each rebuild (after the healthy read-back on a
    /// layout that is not degraded; none on a layout left degraded, or without btrfs or md).
    pub scrubs: Vec<ScrubCheck>,
    /// The step that could not be done.
    pub failed: Option<FailedStep>,
    /// The verdict (set by [`IntegrityReport::conclude`]).
    pub verdict: Verdict,
    /// Paths of every bad file seen, to count distinct files across steps.
    #[serde(skip)]
    lost: BTreeSet<String>,
}

impl PartialEq for IntegrityReport {
    /// Equal when everything reported is equal (the set of bad paths behind the count is
    /// bookkeeping, and not serialized).
    fn eq(&self, o: &Self) -> bool {
        self.files == o.files
            && self.bytes == o.bytes
            && self.manifest == o.manifest
            && self.steps == o.steps
            && self.degraded_writes == o.degraded_writes
            && self.scrubs == o.scrubs
            && self.failed == o.failed
            && self.verdict == o.verdict
    }
}

impl IntegrityReport {
    /// A record for a data set of `files` files and `bytes` bytes (zero when writing failed).
    pub fn new(files: u64, bytes: u64) -> IntegrityReport {
        IntegrityReport {
            files,
            bytes,
            manifest: None,
            steps: Vec::new(),
            degraded_writes: Vec::new(),
            scrubs: Vec::new(),
            failed: None,
            verdict: Verdict::Verified,
            lost: BTreeSet::new(),
        }
    }

    /// Records a read-back.
    pub fn add(&mut self, step: Step, v: Verification) -> &StepCheck {
        self.lost.extend(v.bad_paths.iter().cloned());
        self.steps.push(StepCheck {
            step,
            files_in_set: v.files + v.bad(),
            files: v.files,
            bytes: v.bytes,
            mismatched: v.mismatched,
            read_errors: v.read_errors,
            missing: v.missing,
            seconds: v.seconds,
            bad_files: v.bad_files,
        });
        self.conclude();
        &self.steps[self.steps.len() - 1]
    }

    /// Records data written while degraded: the set grows by it.
    pub fn wrote(&mut self, step: Step, files: u64, bytes: u64, error: Option<String>) {
        self.files += files;
        self.bytes += bytes;
        self.degraded_writes.push(DegradedWrite {
            step,
            files,
            bytes,
            error,
        });
    }

    /// Records a step that could not be done (the first one counts).
    pub fn fail(&mut self, step: &str, message: impl Into<String>) {
        if self.failed.is_none() {
            self.failed = Some(FailedStep {
                step: step.into(),
                message: message.into(),
            });
        }
        self.conclude();
    }

    /// The read-back at `step`, when it happened.
    pub fn step(&self, step: Step) -> Option<&StepCheck> {
        self.steps.iter().find(|s| s.step == step)
    }

    /// Distinct files bad at some step.
    pub fn lost_files(&self) -> u64 {
        // Deserialized reports have no paths: fall back to the worst single step.
        let worst = self.steps.iter().map(StepCheck::bad).max().unwrap_or(0);
        (self.lost.len() as u64).max(worst)
    }

    /// Errors the scrubs could not repair.
    pub fn scrub_errors(&self) -> u64 {
        self.scrubs.iter().map(|s| s.outcome.errors).sum()
    }

    /// Works out the verdict from what was recorded: data loss first (it is the finding that
    /// matters, also when a later step failed), then a failed step, else verified.
    pub fn conclude(&mut self) {
        let files = self.lost_files();
        let scrub_errors = self.scrub_errors();
        let silent = self.steps.iter().map(|s| s.mismatched).max().unwrap_or(0);
        self.verdict = if files > 0 || scrub_errors > 0 {
            Verdict::DataLoss {
                files,
                scrub_errors,
                silent,
            }
        } else if let Some(f) = &self.failed {
            Verdict::Failed {
                step: f.step.clone(),
            }
        } else {
            Verdict::Verified
        };
    }

    /// One line per step for a terminal: `degraded: 312 files, 96MiB intact in 0.4s`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for w in &self.degraded_writes {
            let mut l = format!(
                "written while {}: {} files, {}",
                w.step.name(),
                w.files,
                crate::units::format_bytes(w.bytes)
            );
            if let Some(e) = &w.error {
                l.push_str(&format!(" (then: {e})"));
            }
            out.push(l);
        }
        for s in &self.steps {
            let mut l = format!(
                "{}: {}/{} files, {} intact ({:.1}s)",
                s.step.name(),
                s.files,
                s.files_in_set,
                crate::units::format_bytes(s.bytes),
                s.seconds
            );
            if s.bad() > 0 {
                l.push_str(&format!(
                    "; {} mismatched, {} unreadable, {} missing",
                    s.mismatched, s.read_errors, s.missing
                ));
                if let Some(b) = s.bad_files.first() {
                    l.push_str(&format!(" (first: {}: {})", b.path, b.detail));
                }
            }
            out.push(l);
        }
        for sc in &self.scrubs {
            let o = &sc.outcome;
            out.push(format!(
                "{} after {}: {} uncorrectable, {} corrected{}{}",
                o.tool,
                sc.after.name(),
                o.errors,
                o.corrected,
                o.counters
                    .get("csum_errors")
                    .map_or(String::new(), |c| format!(", {c} checksum errors")),
                o.note.as_ref().map_or(String::new(), |n| format!("; {n}"))
            ));
        }
        if let Some(f) = &self.failed {
            out.push(format!("{} could not be done: {}", f.step, f.message));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(files: u64, bad: &[&str]) -> Verification {
        Verification {
            files,
            bytes: files * 4096,
            read_errors: bad.len() as u64,
            bad_files: bad
                .iter()
                .map(|p| BadFile {
                    path: p.to_string(),
                    problem: Problem::ReadError,
                    detail: "Input/output error (os error 5) at byte 0".into(),
                })
                .collect(),
            bad_paths: bad.iter().map(std::string::ToString::to_string).collect(),
            ..Verification::default()
        }
    }

    #[test]
    fn verdicts() {
        let mut r = IntegrityReport::new(10, 40960);
        r.add(Step::Healthy, v(10, &[]));
        r.add(Step::Degraded, v(10, &[]));
        assert_eq!(r.verdict.text(), "verified");
        r.fail(
            "rebuild",
            "ERROR: ioctl(DEV_REPLACE_START) failed: No space left on device",
        );
        assert_eq!(r.verdict.text(), "FAILED: rebuild");
        // The first failure is the one kept.
        r.fail("scrub", "later");
        assert_eq!(r.failed.as_ref().unwrap().step, "rebuild");
        // Data loss wins over a failed step; files are counted once across steps.
        r.add(Step::Rebuilt, v(8, &["a", "b"]));
        r.add(Step::Rebuilt2, v(9, &["a"]));
        assert_eq!(r.verdict.text(), "DATA LOSS (2 files, 0 scrub errors)");
        let mut s = IntegrityReport::new(1, 4096);
        s.scrubs.push(ScrubCheck {
            after: Step::Healthy,
            outcome: ScrubOutcome {
                tool: "btrfs scrub".into(),
                errors: 1,
                corrected: 0,
                counters: Default::default(),
                note: None,
            },
        });
        s.conclude();
        assert_eq!(s.verdict.text(), "DATA LOSS (0 files, 1 scrub error)");
        assert!(s.lines()[0].starts_with("btrfs scrub after healthy: 1 uncorrectable"));
        let j = serde_json::to_value(&s.scrubs[0]).unwrap();
        assert_eq!(
            (j["after"].as_str(), j["errors"].as_u64()),
            (Some("healthy"), Some(1))
        );
    }

    #[test]
    fn json_keeps_the_verdict_and_the_count() {
        let mut r = IntegrityReport::new(10, 40960);
        r.add(Step::Degraded, v(9, &["x"]));
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains("\"kind\":\"data_loss\""), "{j}");
        assert!(j.contains("\"step\":\"degraded\""), "{j}");
        let mut back: IntegrityReport = serde_json::from_str(&j).unwrap();
        back.conclude();
        assert_eq!(back.verdict, r.verdict);
        assert!(r.lines()[0].contains("9/10 files"), "{:?}", r.lines());
        assert!(
            r.lines()[0].contains("first: x: Input/output error"),
            "{:?}",
            r.lines()
        );
    }

    /// Wrong bytes with no error and bytes that could not be read are two losses: the first
    /// is named apart (the verdict's text and `silent` in the JSON), and a record without it
    /// reads and writes as before.
    #[test]
    fn files_read_back_wrong_without_an_error_are_silent_corruption() {
        let mut r = IntegrityReport::new(10, 40960);
        let mut wrong = v(7, &["a"]);
        wrong.mismatched = 2;
        wrong.read_errors = 1;
        wrong.bad_paths = vec!["a".into(), "b".into(), "c".into()];
        r.add(Step::Healthy, wrong);
        assert_eq!(
            r.verdict.text(),
            "DATA LOSS (3 files, 0 scrub errors; 2 silently wrong: wrong bytes, no error)"
        );
        assert!(matches!(r.verdict, Verdict::DataLoss { silent: 2, .. }));
        let j = serde_json::to_value(&r.verdict).unwrap();
        assert_eq!(j["silent"], 2, "{j}");
        let old = Verdict::DataLoss {
            files: 1,
            scrub_errors: 0,
            silent: 0,
        };
        let j = serde_json::to_string(&old).unwrap();
        assert_eq!(j, r#"{"kind":"data_loss","files":1,"scrub_errors":0}"#);
        let back: Verdict = serde_json::from_str(&j).unwrap();
        assert_eq!(back, old);
    }
}
