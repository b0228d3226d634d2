//! What a lab reports: per layout, what was built, how long it took, how much space it gives,
//! and what degrading and rebuilding did — as one serde struct, and as a table or Markdown.

use serde::{Deserialize, Serialize};

use super::integrity::IntegrityReport;
use crate::units::{format_bytes, format_duration};

/// How one layout went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutStatus {
    /// Built, ran, torn down.
    Ok,
    /// This machine cannot build it (`reason` says why); the lab went on.
    Unavailable,
    /// Something failed (`reason`); whatever was built was torn down.
    Failed,
    /// Not started: the lab was interrupted before it.
    Skipped,
}

/// The degraded part of a layout's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradedReport {
    /// The member that was failed.
    pub failed_member: String,
    /// Seconds to fail it and be mounted again.
    pub degrade_seconds: f64,
    /// Wall time of the workloads while degraded, seconds.
    pub workload_seconds: Option<f64>,
    /// The whole data set read back intact while degraded.
    pub data_verified: bool,
    /// Degraded over healthy performance: the geometric mean over workloads of the ratio of
    /// their headline medians (1.0 = no loss), when both were measured.
    #[serde(default)]
    pub perf_ratio: Option<f64>,
    /// The workloads failed while degraded (btrfs raid5 and degraded raid1 can return EIO or
    /// ENOSPC): what failed.
    #[serde(default)]
    pub workload_error: Option<String>,
}

/// The rebuild of a degraded layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebuildReport {
    /// The device that replaced the failed member.
    pub new_member: String,
    /// Seconds from start to completion (md with a spare: from the failure).
    pub seconds: f64,
    /// Bytes written to the new member (btrfs: its allocated chunks; md: the component size).
    pub bytes: u64,
    /// The whole data set read back intact after the rebuild.
    pub data_verified: bool,
    /// btrfs block groups written while degraded (as `single`) that the replace left without
    /// redundancy, converted back by a balance after it.
    #[serde(default)]
    pub converted: Vec<String>,
    /// Seconds that balance took (on top of `seconds`).
    #[serde(default)]
    pub balance_seconds: Option<f64>,
    /// The replace failed with ENOSPC first and worked once half-empty data block groups were
    /// packed: the first failure's message.
    #[serde(default)]
    pub retried: Vec<String>,
}

/// The second failure of a `failures = 2` layout: two members failed at once, then replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondFailureReport {
    /// The members failed together.
    pub failed_members: Vec<String>,
    /// Seconds to fail them and be mounted again.
    pub degrade_seconds: f64,
    /// The devices that replaced them (empty without `rebuild`, or when it failed).
    pub new_members: Vec<String>,
    /// Seconds to replace both.
    pub rebuild_seconds: Option<f64>,
    /// Bytes written to the new members.
    pub rebuild_bytes: Option<u64>,
    /// Block groups without redundancy after the replaces, converted back (see
    /// [`RebuildReport::converted`]).
    #[serde(default)]
    pub converted: Vec<String>,
    /// Replaces that needed a second try (see [`RebuildReport::retried`]).
    #[serde(default)]
    pub retried: Vec<String>,
}

/// One layout of a lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutReport {
    /// Layout name (the label of its runs).
    pub name: String,
    /// One line: RAID level, members, chunk, bitmap, LVM, filesystem, mkfs and mount options.
    pub stack: String,
    /// The stack, field by field (`None` for a directory layout).
    pub spec: Option<crate::layout::Stack>,
    /// How it went.
    pub status: LayoutStatus,
    /// Why it is unavailable, failed or skipped.
    pub reason: Option<String>,
    /// Member devices, in order.
    pub members: Vec<String>,
    /// Bytes per member.
    pub member_bytes: Option<u64>,
    /// Seconds from the first command to mounted (md resync included).
    pub build_seconds: Option<f64>,
    /// Usable bytes the filesystem reports right after building (btrfs: estimated free space,
    /// which accounts for copies and parity; others: statvfs size).
    pub usable_bytes: Option<u64>,
    /// Usable bytes the RAID level promises before filesystem overhead.
    pub expected_usable_bytes: Option<u64>,
    /// Bytes of the verification data set written before degrading.
    pub fill_bytes: Option<u64>,
    /// Wall time of the workloads on the healthy layout, seconds.
    pub workload_seconds: Option<f64>,
    /// Degraded run, when asked for.
    pub degraded: Option<DegradedReport>,
    /// Rebuild, when asked for.
    pub rebuild: Option<RebuildReport>,
    /// Two members failed at once and replaced (`failures = 2`).
    #[serde(default)]
    pub second_failure: Option<SecondFailureReport>,
    /// What reading the data set back and scrubbing found (layouts with a data set).
    #[serde(default)]
    pub integrity: Option<IntegrityReport>,
    /// Every command run for this layout, in order.
    pub commands: Vec<String>,
}

impl LayoutReport {
    /// A report with only the name and stack filled in.
    pub fn new(name: &str, stack: String, spec: Option<crate::layout::Stack>) -> LayoutReport {
        LayoutReport {
            name: name.to_string(),
            stack,
            spec,
            status: LayoutStatus::Ok,
            reason: None,
            members: Vec::new(),
            member_bytes: None,
            build_seconds: None,
            usable_bytes: None,
            expected_usable_bytes: None,
            fill_bytes: None,
            workload_seconds: None,
            degraded: None,
            rebuild: None,
            second_failure: None,
            integrity: None,
            commands: Vec::new(),
        }
    }

    /// The status as the table shows it: `ok`, `unavailable here: ...`, `failed: ...`.
    pub fn status_text(&self) -> String {
        let r = self.reason.as_deref().unwrap_or("");
        match self.status {
            LayoutStatus::Ok => "ok".into(),
            LayoutStatus::Unavailable => format!("unavailable here: {r}"),
            LayoutStatus::Failed => format!("failed: {r}"),
            LayoutStatus::Skipped => format!("skipped: {r}"),
        }
    }

    /// The integrity column: `verified`, `DATA LOSS (n files, m scrub errors)`,
    /// `FAILED: <step>`, or `-` without a data set.
    pub fn integrity_text(&self) -> String {
        self.integrity
            .as_ref()
            .map_or_else(|| "-".to_string(), |i| i.verdict.text())
    }

    /// True when the layout lost data.
    pub fn lost_data(&self) -> bool {
        self.integrity
            .as_ref()
            .is_some_and(|i| matches!(i.verdict, super::integrity::Verdict::DataLoss { .. }))
    }

    /// Degraded speed as a ratio to healthy (workload wall time healthy / degraded).
    pub fn degraded_ratio(&self) -> Option<f64> {
        if let Some(r) = self.degraded.as_ref().and_then(|d| d.perf_ratio) {
            return Some(r);
        }
        let h = self.workload_seconds?;
        let d = self.degraded.as_ref()?.workload_seconds?;
        (d > 0.0 && h > 0.0).then(|| h / d)
    }
}

/// A whole lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabReport {
    /// The lab id (tags every run of this lab, names every object it made).
    pub lab_id: String,
    /// Lab name.
    pub name: String,
    /// The spec file.
    pub spec_file: String,
    /// The disks, in one line.
    pub disks: String,
    /// The baseline layout, when the spec names one.
    pub baseline: Option<String>,
    /// The lab stopped early (Ctrl-C, SIGTERM); later layouts are `skipped`.
    pub interrupted: bool,
    /// Nothing was built: commands were only printed (`--dry-run`).
    pub dry_run: bool,
    /// One entry per layout, in spec order.
    pub layouts: Vec<LayoutReport>,
    /// Objects the final teardown could not remove (`iolab lab --cleanup` retries them).
    pub leftovers: Vec<String>,
    /// The stored runs of this lab: one per layout, one more per degraded layout.
    #[serde(default)]
    pub runs: Vec<LabRun>,
}

/// A stored run made by a lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabRun {
    /// The layout.
    pub layout: String,
    /// Healthy or degraded (`healthy`, `degraded` in JSON).
    pub phase: super::Phase,
    /// The store id (`iolab show ID`).
    pub run_id: String,
}

impl LabReport {
    /// True when some layout lost data.
    pub fn any_data_lost(&self) -> bool {
        self.layouts.iter().any(LayoutReport::lost_data)
    }

    /// True when some layout failed.
    pub fn any_failed(&self) -> bool {
        !self.leftovers.is_empty()
            || self
                .layouts
                .iter()
                .any(|l| l.status == LayoutStatus::Failed)
    }
}

/// The columns of the full table (Markdown, `-v`).
pub(super) const HEADERS: [&str; 8] = [
    "LAYOUT",
    "STACK",
    "USABLE",
    "EXPECTED",
    "BUILD",
    "DEGRADED",
    "REBUILD",
    "INTEGRITY",
];

/// A layout's cells under [`HEADERS`], every detail included.
pub(super) fn row(l: &LayoutReport, dry_run: bool) -> Vec<String> {
    let dash = || "-".to_string();
    vec![
        l.name.clone(),
        l.stack.clone(),
        l.usable_bytes.map_or_else(dash, format_bytes),
        l.expected_usable_bytes.map_or_else(dash, format_bytes),
        l.build_seconds.map_or_else(dash, |s| {
            format_duration(std::time::Duration::from_secs_f64(s))
        }),
        match (&l.degraded, l.degraded_ratio()) {
            (Some(d), _) if d.workload_error.is_some() => "IO failed".to_string(),
            (Some(_), Some(r)) => format!("{r:.2}x speed"),
            (Some(_), None) => "yes".into(),
            (None, _) => dash(),
        },
        l.rebuild.as_ref().map_or_else(dash, |r| {
            if dry_run {
                return "yes".into();
            }
            let mut t = format!(
                "{} ({})",
                format_duration(std::time::Duration::from_secs_f64(r.seconds)),
                format_bytes(r.bytes)
            );
            if let Some(b) = r.balance_seconds {
                t.push_str(&format!(
                    " +balance {}",
                    format_duration(std::time::Duration::from_secs_f64(b))
                ));
            }
            t
        }),
        l.integrity_text(),
    ]
}

/// The per-layout table as Markdown.
pub fn render_markdown(r: &LabReport) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!(
        "### Lab {} (id {})\n\n{} layouts on {}.\n\n",
        esc(&r.name),
        r.lab_id,
        r.layouts.len(),
        esc(&r.disks)
    );
    let mut h: Vec<String> = HEADERS
        .iter()
        .map(|h| {
            let mut s = h.to_lowercase();
            if let Some(f) = s.get_mut(0..1) {
                f.make_ascii_uppercase();
            }
            s
        })
        .collect();
    h.push("Status".into());
    out.push_str(&format!("| {} |\n", h.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(h.len())));
    for l in &r.layouts {
        let mut cells = row(l, r.dry_run);
        cells.push(l.status_text());
        let cells: Vec<String> = cells.iter().map(|c| esc(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let checked: Vec<&LayoutReport> = r.layouts.iter().filter(|l| l.integrity.is_some()).collect();
    if checked.is_empty() {
        return out;
    }
    out.push_str("\n#### Integrity\n\nThe data set read back from the disks at each step; the scrub after the last rebuild.\n\n");
    out.push_str("| Layout | Step | Files intact | Bytes intact | Mismatched | Unreadable | Missing |\n|---|---|---|---|---|---|---|\n");
    for l in &checked {
        let Some(i) = &l.integrity else { continue };
        for st in &i.steps {
            out.push_str(&format!(
                "| {} | {} | {}/{} | {} | {} | {} | {} |\n",
                esc(&l.name),
                st.step.name(),
                st.files,
                st.files_in_set,
                format_bytes(st.bytes),
                st.mismatched,
                st.read_errors,
                st.missing
            ));
        }
        for sc in &i.scrubs {
            out.push_str(&format!(
                "| {} | {} after {} | | | {} uncorrectable | {} corrected | |\n",
                esc(&l.name),
                sc.outcome.tool,
                sc.after.name(),
                sc.outcome.errors,
                sc.outcome.corrected
            ));
        }
        if let Some(f) = &i.failed {
            out.push_str(&format!(
                "| {} | {} | could not be done: {} | | | | |\n",
                esc(&l.name),
                f.step,
                esc(&f.message)
            ));
        }
    }
    out
}

/// The lab's answer in one table: a row per layout, its usable capacity, and for each workload
/// its headline figure (MB/s, IOPS or ops/s: median over trials) with the ratio to the baseline
/// (`~` when the difference is not significant). The full comparison of every metric is
/// `iolab compare` on the lab's runs.
pub fn render_summary(
    r: &LabReport,
    c: &crate::report::compare::Comparison,
    suite: &crate::spec::Suite,
) -> String {
    use crate::sample::Unit;
    let mut cols: Vec<(String, usize)> = Vec::new(); // (header, row index)
    for w in &suite.workloads {
        let want = match &w.kind {
            crate::spec::WorkloadKind::Io(io) if io.headline_is_bandwidth() => ".mbps",
            crate::spec::WorkloadKind::Io(_) => ".iops",
            crate::spec::WorkloadKind::SmallFiles(_) => "create.ops",
            crate::spec::WorkloadKind::CachedRead(_) => ".mbps",
        };
        if let Some(i) = c
            .rows
            .iter()
            .position(|row| row.workload == w.name && row.metric.ends_with(want))
        {
            let unit = match c.rows[i].unit {
                Unit::MBps => "MB/s",
                Unit::Iops => "IOPS",
                Unit::OpsPerSec => "ops/s",
                Unit::Micros => "us",
            };
            cols.push((format!("{} {unit}", w.name), i));
        }
    }
    let fmt = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    let mut header = vec!["layout".to_string(), "usable".to_string()];
    header.extend(cols.iter().map(|(h, _)| h.clone()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (ri, run) in c.runs.iter().enumerate() {
        let usable = r
            .layouts
            .iter()
            .find(|l| Some(&l.name) == run.label.as_ref())
            .and_then(|l| l.usable_bytes);
        let mut row = vec![
            run.header.clone(),
            usable.map_or_else(|| "-".into(), format_bytes),
        ];
        for (_, i) in &cols {
            let cell = c.rows[*i].cells.get(ri).and_then(|x| x.as_ref());
            row.push(match cell {
                None => "-".into(),
                Some(cell) if run.baseline => format!("{} (base)", fmt(cell.summary.median)),
                Some(cell) => match &cell.ratio {
                    Some(ra) => format!(
                        "{} {:.2}x{}",
                        fmt(cell.summary.median),
                        ra.value,
                        if ra.significant == Some(false) {
                            "~"
                        } else {
                            ""
                        }
                    ),
                    None => fmt(cell.summary.median),
                },
            });
        }
        rows.push(row);
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            } else {
                s.push_str(&format!("{c:>w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&header);
    for row in &rows {
        out.push_str(&line(row));
    }
    let base = c.runs.get(c.baseline).map_or("-", |b| b.header.as_str());
    out.push_str(&format!(
        "median of each layout's trials; ratio to the baseline ({base}), ~ = not significant at 95%; every metric: iolab compare --lab {}\n",
        r.lab_id
    ));
    for n in &c.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> LabReport {
        let mut ok = LayoutReport::new(
            "btrfs-raid5",
            "btrfs raid5 (metadata raid1) x4".into(),
            None,
        );
        ok.usable_bytes = Some(3 << 30);
        ok.expected_usable_bytes = Some(3 << 30);
        ok.build_seconds = Some(0.5);
        ok.workload_seconds = Some(1.0);
        ok.degraded = Some(DegradedReport {
            failed_member: "/dev/loop3".into(),
            degrade_seconds: 0.1,
            workload_seconds: Some(2.0),
            data_verified: true,
            perf_ratio: None,
            workload_error: None,
        });
        ok.rebuild = Some(RebuildReport {
            new_member: "/dev/loop9".into(),
            seconds: 1.5,
            bytes: 100 << 20,
            data_verified: true,
            converted: vec![],
            balance_seconds: None,
            retried: vec![],
        });
        let mut un = LayoutReport::new("md-raid6", "md raid6 x4 > xfs".into(), None);
        un.status = LayoutStatus::Unavailable;
        un.reason = Some("no md | here".into());
        LabReport {
            lab_id: "ab12cd".into(),
            name: "t".into(),
            spec_file: "t.toml".into(),
            disks: "4 x 1GiB loop disks in /tmp/d".into(),
            baseline: None,
            interrupted: false,
            dry_run: false,
            layouts: vec![ok, un],
            leftovers: vec![],
            runs: vec![],
        }
    }

    #[test]
    fn table_shows_every_layout_and_status() {
        let t = super::super::table::render_table(&report(), super::super::table::Detail::Full);
        assert!(t.contains("btrfs-raid5"), "{t}");
        assert!(t.contains("3GiB"), "{t}");
        assert!(t.contains("0.50x speed"), "{t}");
        assert!(t.contains("1.5s (100MiB)"), "{t}");
        assert!(t.contains("unavailable here: no md | here"), "{t}");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        // Columns line up: STATUS starts at the same place on every row.
        let col = lines[1].find("STATUS").unwrap();
        assert_eq!(&lines[2][col..col + 2], "ok");
    }

    #[test]
    fn markdown_escapes_pipes() {
        let m = render_markdown(&report());
        assert!(m.contains("no md \\| here"), "{m}");
        assert_eq!(m.lines().filter(|l| l.starts_with('|')).count(), 4);
    }

    fn lossy() -> LabReport {
        use crate::lab::dataset::{BadFile, Problem, Verification};
        use crate::lab::integrity::Step;
        let mut r = report();
        let mut ok = IntegrityReport::new(300, 96 << 20);
        for st in [Step::Healthy, Step::Degraded, Step::Rebuilt] {
            ok.add(
                st,
                Verification {
                    files: 300,
                    bytes: 96 << 20,
                    ..Verification::default()
                },
            );
        }
        r.layouts[0].integrity = Some(ok);
        let mut bad = LayoutReport::new("btrfs-single", "btrfs single x2".into(), None);
        let mut i = IntegrityReport::new(300, 96 << 20);
        i.add(
            Step::Healthy,
            Verification {
                files: 299,
                bytes: (96 << 20) - 65536,
                read_errors: 1,
                bad_files: vec![BadFile {
                    path: ".iolab-data/d1/f00001".into(),
                    problem: Problem::ReadError,
                    detail: "Input/output error (os error 5) at byte 65536".into(),
                }],
                bad_paths: vec![".iolab-data/d1/f00001".into()],
                ..Verification::default()
            },
        );
        i.scrubs.push(crate::lab::integrity::ScrubCheck {
            after: Step::Healthy,
            outcome: crate::layout::scrub::ScrubOutcome {
                tool: "btrfs scrub".into(),
                errors: 1,
                corrected: 0,
                counters: [("csum_errors".to_string(), 1)].into(),
            },
        });
        i.manifest = Some("/run/iolab/manifest-ab12cd-btrfs-single.xxh3".into());
        i.conclude();
        bad.integrity = Some(i);
        let mut failed = LayoutReport::new("btrfs-raid5", "btrfs raid5 x4".into(), None);
        failed.status = LayoutStatus::Failed;
        failed.reason = Some("degraded mount refused".into());
        let mut fi = IntegrityReport::new(300, 96 << 20);
        fi.fail("degrade", "mount: wrong fs type");
        failed.integrity = Some(fi);
        r.layouts.push(bad);
        r.layouts.push(failed);
        r
    }

    #[test]
    fn integrity_column_notes_and_markdown() {
        let r = lossy();
        let t = super::super::table::render_table(&r, super::super::table::Detail::Full);
        let lines: Vec<&str> = t.lines().collect();
        let col = lines[1].find("INTEGRITY").unwrap();
        assert_eq!(&lines[2][col..col + 8], "verified", "{t}");
        assert_eq!(&lines[4][col..col + 25], "DATA LOSS (1 file, 1 scru", "{t}");
        assert!(lines[5][col..].starts_with("FAILED: degrade "), "{t}");
        assert!(
            t.contains("btrfs-single integrity: healthy: 299/300 files")
                && t.contains("first: .iolab-data/d1/f00001: Input/output error"),
            "{t}"
        );
        assert!(t.contains("btrfs-single integrity: btrfs scrub after healthy: 1 uncorrectable, 0 corrected, 1 checksum errors"), "{t}");
        assert!(
            t.contains("checksums kept in /run/iolab/manifest-ab12cd-btrfs-single.xxh3"),
            "{t}"
        );
        assert!(
            t.contains("btrfs-raid5 integrity: degrade could not be done: mount: wrong fs type"),
            "{t}"
        );
        assert!(r.any_data_lost());
        let m = render_markdown(&r);
        assert!(m.contains("| DATA LOSS (1 file, 1 scrub error) |"), "{m}");
        assert!(
            m.contains("| btrfs-single | healthy | 299/300 | 95.94MiB | 0 | 1 | 0 |"),
            "{m}"
        );
        assert!(
            m.contains(
                "| btrfs-single | btrfs scrub after healthy | | | 1 uncorrectable | 0 corrected | |"
            ),
            "{m}"
        );
        assert!(
            m.contains("| btrfs-raid5 | degrade | could not be done: mount: wrong fs type |"),
            "{m}"
        );
        let back: LabReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(
            back.layouts[2].integrity_text(),
            "DATA LOSS (1 file, 1 scrub error)"
        );
    }

    #[test]
    fn json_round_trips() {
        let r = report();
        let j = serde_json::to_string(&r).unwrap();
        let back: LabReport = serde_json::from_str(&j).unwrap();
        assert_eq!(back, r);
        assert!(j.contains("\"status\":\"unavailable\""));
    }
}
