//! The lab's table for a terminal: a row per layout that fits 120 columns (the stack in a few
//! words, the rebuild time, the status in one word, the reasons on lines below), or with every
//! detail under `-v`; and the per-layout table as Markdown. Markdown and JSON always carry
//! everything.

use crate::lab::integrity::Verdict;
use crate::lab::report::{LabReport, LayoutReport, LayoutStatus};
use crate::stack::Stack;
use crate::units::{format_bytes, format_duration};

/// How much the table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// What fits 120 columns; the details are on lines below the table or in JSON.
    Short,
    /// Every mkfs and mount option, rebuild bytes, expected capacity and full reasons (`-v`).
    Full,
}

const SHORT_HEADERS: [&str; 7] = [
    "LAYOUT",
    "STACK",
    "USABLE",
    "BUILD",
    "DEGRADED",
    "REBUILD",
    "INTEGRITY",
];

fn secs(s: f64) -> String {
    format_duration(std::time::Duration::from_secs_f64(s))
}

/// A layout's cells under [`SHORT_HEADERS`].
fn short_row(l: &LayoutReport, dry_run: bool) -> Vec<String> {
    let dash = || "-".to_string();
    let stack = l.spec.as_ref().map_or_else(
        || {
            // A directory layout: its description, cut to a column's width.
            let mut s: String = l.stack.chars().take(30).collect();
            if l.stack.chars().count() > 30 {
                s.pop();
                s.push('~');
            }
            s
        },
        Stack::short,
    );
    vec![
        l.name.clone(),
        stack,
        l.usable_bytes.map_or_else(dash, format_bytes),
        if l.reused_build_of.is_some() {
            "re-tuned".into()
        } else {
            l.build_seconds.map_or_else(dash, secs)
        },
        match (&l.degraded, l.degraded_ratio()) {
            (Some(d), _) if d.workload_error.is_some() => "IO failed".to_string(),
            (Some(_), Some(r)) => format!("{r:.2}x"),
            (Some(_), None) => "yes".into(),
            (None, _) => dash(),
        },
        l.rebuild.as_ref().map_or_else(dash, |r| {
            if dry_run {
                "yes".into()
            } else {
                secs(r.seconds)
            }
        }),
        match l.integrity.as_ref().map(|i| &i.verdict) {
            None => dash(),
            Some(Verdict::DataLoss { silent: 0, .. }) => "DATA LOSS".into(),
            Some(Verdict::DataLoss { .. }) => "SILENT CORRUPTION".into(),
            Some(Verdict::Failed { .. }) => "FAILED".into(),
            Some(v) => v.text(),
        },
    ]
}

/// The status column: a word in the short table (the reason goes below), the whole text in
/// the full one.
fn status(r: &LabReport, l: &LayoutReport, detail: Detail) -> String {
    if r.dry_run && l.status == LayoutStatus::Ok {
        return if l.reused_build_of.is_some() {
            "would re-tune".into()
        } else {
            "would build".into()
        };
    }
    match (detail, l.status) {
        (Detail::Full, _) => l.status_text(),
        (Detail::Short, LayoutStatus::Ok) => "ok".into(),
        (Detail::Short, LayoutStatus::Unavailable) => "unavailable".into(),
        (Detail::Short, LayoutStatus::Failed) => "failed".into(),
        (Detail::Short, LayoutStatus::Skipped) => "skipped".into(),
    }
}

/// The per-layout table for a terminal, with the notes under it.
pub fn render_table(r: &LabReport, detail: Detail) -> String {
    let headers: &[&str] = match detail {
        Detail::Short => &SHORT_HEADERS,
        Detail::Full => &HEADERS,
    };
    let mut rows: Vec<Vec<String>> = vec![
        headers
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
    ];
    rows.extend(r.layouts.iter().map(|l| match detail {
        Detail::Short => short_row(l, r.dry_run),
        Detail::Full => row(l, r.dry_run),
    }));
    if has_slo(r) {
        rows[0].push(SLO_HEADER.into());
        for (cells, l) in rows.iter_mut().skip(1).zip(&r.layouts) {
            cells.push(slo_cell(l));
        }
    }
    if power::any(r) {
        rows[0].push("POWER".into());
        for (cells, l) in rows.iter_mut().skip(1).zip(&r.layouts) {
            cells.push(match detail {
                Detail::Short => power::short_cell(l),
                Detail::Full => l.power_text(),
            });
        }
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!(
        "lab {} (id {}): {} layout{} on {}{}\n",
        r.name,
        r.lab_id,
        r.layouts.len(),
        if r.layouts.len() == 1 { "" } else { "s" },
        r.disks,
        if r.dry_run {
            " (dry run: nothing built)"
        } else {
            ""
        }
    );
    let status: Vec<String> = std::iter::once("STATUS".to_string())
        .chain(r.layouts.iter().map(|l| status(r, l, detail)))
        .collect();
    for (cells, st) in rows.iter().zip(&status) {
        let mut line = String::new();
        for (c, cell) in cells.iter().enumerate() {
            line.push_str(cell);
            line.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
        }
        line.push_str(st);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if detail == Detail::Short {
        out.push_str(&short_notes(r));
    }
    out.push_str(&slo_notes(r));
    out.push_str(&notes(r));
    out.push_str(&power::notes(r));
    out.push_str(&align::notes(r));
    out
}

/// What the short table leaves out of its cells: why a layout is not `ok`, what an integrity
/// verdict counted.
fn short_notes(r: &LabReport) -> String {
    let mut out = String::new();
    for l in &r.layouts {
        if l.status != LayoutStatus::Ok {
            out.push_str(&format!("{}: {}\n", l.name, l.status_text()));
        }
        if let Some(i) = &l.integrity {
            if !matches!(i.verdict, Verdict::Verified) {
                out.push_str(&format!("{}: {}\n", l.name, i.verdict.text()));
            }
        }
    }
    out
}

/// The notes under the table: degraded IO errors, retried replaces, conversions, integrity.
fn notes(r: &LabReport) -> String {
    let mut out = String::new();
    for l in &r.layouts {
        if let Some(e) = l.degraded.as_ref().and_then(|d| d.workload_error.as_ref()) {
            out.push_str(&format!("note: {} while degraded: {e}\n", l.name));
        }
        if let Some(c) = l.degraded.as_ref().and_then(|d| d.cache_failure.as_ref()) {
            out.push_str(&format!("note: {}: {}\n", l.name, c.describe()));
        }
        if let Some(rl) = &l.rebuild_load {
            out.push_str(&format!("note: {}\n", rebuild_load_text(&l.name, rl)));
        }
        let retried = l
            .rebuild
            .iter()
            .flat_map(|r| r.retried.iter().map(|m| ("rebuild", m)))
            .chain(
                l.second_failure
                    .iter()
                    .flat_map(|s| s.retried.iter().map(|m| ("rebuild2", m))),
            );
        for (step, m) in retried {
            out.push_str(&format!(
                "note: {} {step}: the replace failed ({m}); packed half-empty data block groups (btrfs balance -dusage=50) and retried\n",
                l.name
            ));
        }
        if let Some(r) = l.rebuild.as_ref().filter(|r| !r.converted.is_empty()) {
            out.push_str(&format!(
                "note: {} after the replace, block groups written while degraded had no redundancy ({}); a balance converted them back\n",
                l.name,
                r.converted.join(", ")
            ));
        }
        if let Some(i) = &l.integrity {
            // Writes refused while degraded: the application was told, so not a loss, but a
            // finding even when everything acknowledged came back.
            if matches!(i.verdict, Verdict::Verified) {
                for sc in i.scrubs.iter().filter(|s| s.outcome.corrected > 0) {
                    out.push_str(&format!(
                        "note: {} {} after {} repaired {} errors from good copies: the layout was inconsistent\n",
                        l.name,
                        sc.outcome.tool,
                        sc.after.name(),
                        sc.outcome.corrected
                    ));
                }
                for w in i.degraded_writes.iter().filter(|w| w.error.is_some()) {
                    out.push_str(&format!(
                        "note: {} while {}: {} files written, then {}\n",
                        l.name,
                        w.step.name(),
                        w.files,
                        w.error.as_deref().unwrap_or("")
                    ));
                }
                for sc in &i.scrubs {
                    if let Some(n) = &sc.outcome.note {
                        out.push_str(&format!(
                            "note: {} {} after {}: {n}\n",
                            l.name,
                            sc.outcome.tool,
                            sc.after.name()
                        ));
                    }
                }
            }
            if !matches!(i.verdict, Verdict::Verified) {
                for line in i.lines() {
                    out.push_str(&format!("{} integrity: {line}\n", l.name));
                }
                if let Some(m) = &i.manifest {
                    out.push_str(&format!("{} integrity: checksums kept in {m}\n", l.name));
                }
            }
        }
    }
    for l in &r.layouts {
        out.push_str(&fault_notes(l));
    }
    if r.interrupted {
        out.push_str("interrupted: later layouts were not built\n");
    }
    for l in &r.leftovers {
        out.push_str(&format!("left behind: {l} (run `iolab lab --cleanup`)\n"));
    }
    out
}

/// What the workloads during the rebuild found, in one sentence.
pub fn rebuild_load_text(name: &str, rl: &crate::lab::report::RebuildLoadReport) -> String {
    let mut t = format!("{name} during the rebuild: ");
    match (&rl.workload_error, rl.perf_ratio) {
        (Some(e), _) => t.push_str(&format!("the workloads failed ({e})")),
        (None, Some(r)) => t.push_str(&format!("the workloads ran at {r:.2}x their healthy speed")),
        (None, None) => t.push_str("the workloads ran"),
    }
    if let Some(s) = rl.rebuild_seconds {
        t.push_str(&format!("; the rebuild took {} under their load", secs(s)));
    }
    if let Some(sh) = rl.rebuild_share.filter(|s| *s < 0.999) {
        t.push_str(&format!(
            " and ended {:.0}% of the way through them (the rest ran on the rebuilt layout)",
            sh * 100.0
        ));
    }
    if let Some(v) = rl.md_speed_under_load {
        t.push_str(&format!(
            "; md recovered at {}/s while they ran",
            format_bytes(v as u64)
        ));
    }
    if let Some(lim) = &rl.md_speed_limits {
        t.push_str(&format!(" (speed limits {lim})"));
    }
    t
}

/// The column a lab with `[workloads] slo` adds: IOPS at the target, healthy / degraded.
const SLO_HEADER: &str = "CAPACITY@SLO";

fn has_slo(r: &LabReport) -> bool {
    r.layouts.iter().any(|l| !l.slo.is_empty())
}

/// The first searched workload's capacity (the others are in the notes and JSON).
fn slo_cell(l: &LayoutReport) -> String {
    l.slo
        .first()
        .map_or_else(|| "-".into(), crate::lab::report::LabSlo::cell)
}

/// Each layout's answer in a sentence, healthy and degraded, with its interval.
fn slo_notes(r: &LabReport) -> String {
    let mut out = String::new();
    for l in &r.layouts {
        for s in &l.slo {
            for (state, c) in [
                ("healthy", &s.healthy),
                ("degraded", &s.degraded),
                ("during the rebuild", &s.rebuilding),
            ] {
                if let Some(c) = c {
                    out.push_str(&format!(
                        "{} {state}, {}: {}\n",
                        l.name,
                        s.workload,
                        c.describe()
                    ));
                }
            }
        }
    }
    out
}

/// The columns of the full table (Markdown, `-v`).
const HEADERS: [&str; 8] = [
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
fn row(l: &LayoutReport, dry_run: bool) -> Vec<String> {
    let dash = || "-".to_string();
    vec![
        l.name.clone(),
        l.stack.clone(),
        l.usable_bytes.map_or_else(dash, format_bytes),
        l.expected_usable_bytes.map_or_else(dash, format_bytes),
        match &l.reused_build_of {
            Some(of) => format!("re-tuned, not rebuilt (build of {of})"),
            None => l.build_seconds.map_or_else(dash, |s| {
                format_duration(std::time::Duration::from_secs_f64(s))
            }),
        },
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
    if has_slo(r) {
        h.push("Capacity@SLO".into());
    }
    if power::any(r) {
        h.push("Power".into());
    }
    h.push("Status".into());
    out.push_str(&format!("| {} |\n", h.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(h.len())));
    for l in &r.layouts {
        let mut cells = row(l, r.dry_run);
        if has_slo(r) {
            cells.push(slo_cell(l));
        }
        if power::any(r) {
            cells.push(l.power_text());
        }
        cells.push(l.status_text());
        let cells: Vec<String> = cells.iter().map(|c| esc(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let slo = slo_notes(r);
    if !slo.is_empty() {
        out.push('\n');
        for line in slo.lines() {
            out.push_str(&format!("- {}\n", esc(line)));
        }
    }
    if power::any(r) {
        out.push_str("\n#### Power cuts\n\n");
        for line in power::notes(r).lines() {
            out.push_str(&format!("- {}\n", esc(line)));
        }
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

mod align;
mod power;
#[cfg(test)]
mod status_tests;

/// What each injected fault did, as observed, and the members that were SLOW (per second of
/// their busy time).
fn fault_notes(l: &crate::lab::report::LayoutReport) -> String {
    let mut out = String::new();
    for f in &l.faults {
        let mut parts = vec![format!("{} ({})", f.description, f.device)];
        parts.extend(f.held_line());
        if let Some(e) = &f.error {
            parts.push(format!("could not be injected: {e}"));
        }
        if let Some(p) = f.struck_at_pct {
            parts.push(format!("struck at {p:.0}% of the rebuild"));
        }
        if let Some(r) = &f.rebuild {
            parts.push(format!("rebuild {r}"));
        }
        if let Some(n) = f.files_bad {
            parts.push(if n == 0 {
                "every file read back intact after it".to_string()
            } else {
                format!("{n} files did not read back after it")
            });
        }
        if let Some(o) = &f.md {
            parts.push(format!("md: {}", o.describe()));
        }
        if let Some(stats) = &f.btrfs {
            let seen: Vec<String> = stats
                .iter()
                .filter_map(crate::layout::btrfs::DevStats::describe)
                .collect();
            parts.push(if seen.is_empty() {
                "btrfs counted no errors".to_string()
            } else {
                format!("btrfs counted {}", seen.join(", "))
            });
        }
        if let Some(st) = &f.zpool {
            let seen: Vec<String> = st
                .devices
                .iter()
                .filter_map(crate::layout::zfs::status::Device::describe)
                .collect();
            parts.push(if seen.is_empty() {
                format!("zfs counted no errors (pool {})", st.state)
            } else {
                format!("zfs counted {} (pool {})", seen.join(", "), st.state)
            });
        }
        out.push_str(&format!("fault: {}: {}\n", l.name, parts.join("; ")));
    }
    if let Some(o) = &l.md_final {
        out.push_str(&format!(
            "fault: {}: at the end md says {}\n",
            l.name,
            o.describe()
        ));
    }
    for m in l.member_io.iter().filter(|m| m.slow) {
        out.push_str(&format!(
            "note: {} member {} ({}) is SLOW: {}{}\n",
            l.name,
            m.member,
            m.device,
            slow_member_figures(&l.member_io, l.member_medians.as_ref(), m),
            if m.fault_wrapped {
                "; it is under a dm linear table the lab added for a fault, a layer the others lack"
            } else {
                ""
            }
        ));
    }
    out
}

/// What a SLOW member's note says: per second of its busy time against the medians the rule
/// judged it by (`judged`: the peers', not every member's), then its milliseconds per IO with
/// the queue it had; a report without them takes the medians of the members' figures (only
/// peers carry them), and a record from before the rule (no busy figures) says milliseconds
/// per IO against the median, as it was judged.
fn slow_member_figures(
    all: &[crate::lab::report::MemberIo],
    judged: Option<&crate::lab::report::MemberMedians>,
    m: &crate::lab::report::MemberIo,
) -> String {
    let median = |f: fn(&crate::lab::report::MemberIo) -> Option<f64>| {
        let v: Vec<f64> = all.iter().filter_map(f).collect();
        crate::stats::median(&v)
    };
    let rates = (
        m.ios_per_busy_sec,
        m.mb_per_busy_sec,
        judged.map_or_else(
            || median(|x| x.ios_per_busy_sec),
            |j| Some(j.ios_per_busy_sec),
        ),
        judged.map_or_else(
            || median(|x| x.mb_per_busy_sec),
            |j| Some(j.mb_per_busy_sec),
        ),
    );
    if let (Some(ios), Some(mb), Some(mi), Some(mm)) = rates {
        return format!(
            "{ios:.0} IOs and {mb:.2} MB per second busy against the members' median {mi:.0} and {mm:.2} (-{:.0}%); {:.1} ms per IO with {:.1} in flight ({} IOs in the healthy workloads)",
            m.below_pct.unwrap_or(0.0),
            m.ms_per_io,
            m.in_flight.unwrap_or(0.0),
            m.ios
        );
    }
    let old = median(|x| (x.ios > 0).then_some(x.ms_per_io)).unwrap_or(0.0);
    format!(
        "{:.1} ms per IO against the members' median {old:.1} ms ({} IOs in the healthy workloads)",
        m.ms_per_io, m.ios
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::report::DegradedReport;
    use crate::stack::Rebuild;

    fn stack(v: serde_json::Value) -> Stack {
        serde_json::from_value(v).unwrap()
    }

    /// The layouts of examples/lab-loop.toml at their widest: long names, every option.
    fn wide() -> LabReport {
        let md = stack(serde_json::json!({
            "raid": {"type": "md", "level": "6", "chunk": 524288, "bitmap": "internal",
                     "bitmap_chunk": 67108864, "assume_clean": false},
            "members": 5, "spares": 1, "lvm": true, "fs": "xfs",
            "mkfs_options": ["-m", "reflink=1,crc=1", "-l", "size=128m"],
            "mount_options": ["noatime", "logbufs=8", "logbsize=256k", "inode64"]
        }));
        let btrfs = stack(serde_json::json!({
            "raid": {"type": "btrfs", "data": "raid5", "metadata": "raid1c3"},
            "members": 4, "spares": 0, "lvm": false, "fs": "btrfs",
            "mkfs_options": ["--nodesize", "32k"], "mount_options": ["noatime", "compress=zstd:3"]
        }));
        let mut a = LayoutReport::new(
            "btrfs-raid5-degraded-rebuild",
            btrfs.describe(),
            Some(btrfs),
        );
        a.usable_bytes = Some(2_899_102_924);
        a.expected_usable_bytes = Some(3 << 30);
        a.build_seconds = Some(1.25);
        a.degraded = Some(DegradedReport {
            failed_member: "/dev/loop3".into(),
            degrade_seconds: 0.1,
            workload_seconds: Some(2.0),
            data_verified: true,
            perf_ratio: Some(0.4567),
            workload_error: None,
            cache_failure: None,
        });
        a.rebuild = Some(Rebuild {
            new_member: "/dev/loop9".into(),
            new_members: vec!["/dev/loop9".into()],
            seconds: 12.5,
            bytes: 1_234_567_890,
            data_verified: true,
            converted: vec![],
            balance_seconds: Some(3.25),
            retried: vec![],
        });
        let mut b = LayoutReport::new("md-raid6-bitmap-lvm-xfs-big", md.describe(), Some(md));
        b.status = LayoutStatus::Unavailable;
        b.reason =
            Some("the kernel has no md RAID support (no /proc/mdstat, no md-mod module)".into());
        LabReport {
            lab_id: "ab12cd".into(),
            name: "raid-levels-on-loop-disks".into(),
            spec_file: "t.toml".into(),
            disks: "6 x 1GiB loop disks in /var/tmp/iolab-disks".into(),
            baseline: None,
            interrupted: false,
            dry_run: false,
            layouts: vec![a, b],
            leftovers: vec![],
            runs: vec![],
        }
    }

    /// A member's figures, as the lab reports them.
    fn member(name: &str, ios: f64, mb: f64, slow: bool) -> crate::lab::report::MemberIo {
        crate::lab::report::MemberIo {
            member: format!("/dev/{name}"),
            device: name.into(),
            ios: 1000,
            bytes: 1 << 30,
            ms_per_io: if slow { 90.0 } else { 9.0 },
            busy_ms: Some(2000),
            ios_per_busy_sec: Some(ios),
            mb_per_busy_sec: Some(mb),
            in_flight: Some(4.0),
            slow,
            below_pct: slow.then_some(80.0),
            fault_wrapped: false,
        }
    }

    #[test]
    fn a_slow_members_note_prints_the_medians_it_was_judged_against() {
        let mut l = LayoutReport::new("r5", "md raid5".into(), None);
        // Every member's figures have 105 IOs and 1.05 MB as their median; the rule judged
        // against its peers' 100 and 1.00.
        l.member_io = vec![
            member("vda", 100.0, 1.0, false),
            member("vdb", 110.0, 1.1, false),
            member("vdc", 20.0, 0.2, true),
            member("vdd", 400.0, 4.0, false),
        ];
        let all = fault_notes(&l);
        assert!(
            all.contains("against the members' median 105 and 1.05"),
            "{all}"
        );
        l.member_medians = Some(crate::lab::report::MemberMedians {
            ios_per_busy_sec: 100.0,
            mb_per_busy_sec: 1.0,
        });
        let judged = fault_notes(&l);
        assert!(
            judged.contains("note: r5 member /dev/vdc (vdc) is SLOW: 20 IOs and 0.20 MB per second busy against the members' median 100 and 1.00 (-80%)"),
            "{judged}"
        );
    }

    #[test]
    fn the_default_table_fits_120_columns_and_says_the_rest_below() {
        let r = wide();
        let full = render_table(&r, Detail::Full);
        assert!(full.lines().any(|l| l.chars().count() > 120), "{full}");
        assert!(full.contains("[mkfs -m reflink=1,crc=1") && full.contains("(1.15GiB) +balance"));
        let t = render_table(&r, Detail::Short);
        for l in t.lines().skip(1).take(3) {
            assert!(
                l.chars().count() <= 120,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        let lines: Vec<&str> = t.lines().collect();
        let col = lines[1].find("STACK").unwrap();
        assert!(lines[2][col..].starts_with("btrfs raid5 x4  "), "{t}");
        assert!(
            lines[3][col..].starts_with("md raid6 x5 +1 > lvm > xfs  "),
            "{t}"
        );
        assert!(
            lines[2].contains(" 0.46x ") && lines[2].contains(" 12.5s "),
            "{t}"
        );
        assert!(lines[3].ends_with(" unavailable"), "{t}");
        assert!(
            t.contains("md-raid6-bitmap-lvm-xfs-big: unavailable here: the kernel has no md"),
            "{t}"
        );
    }

    /// Both text forms of every kind of stack, pinned: the long one (reports, the record's
    /// description) and the short one (the lab table's column) come from one walk of the
    /// layers and must read as they always have.
    #[test]
    fn both_text_forms_of_every_stack_are_pinned() {
        let md = |extra: serde_json::Value| {
            let mut v = serde_json::json!({
                "raid": {"type": "md", "level": "6", "chunk": 524288, "bitmap": "internal",
                         "bitmap_chunk": 67108864, "assume_clean": false,
                         "consistency_policy": "ppl", "stripe_cache_size": 4096,
                         "group_thread_cnt": 2},
                "members": 5, "spares": 2, "lvm": true, "fs": "xfs",
                "mkfs_options": ["-m", "crc=1"], "mount_options": ["noatime", "nobarrier"]
            });
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            stack(v)
        };
        let cases = [
            (
                md(serde_json::json!({})),
                "md raid6 x5 +2 spares, chunk 512KiB, consistency ppl, bitmap internal/64MiB, stripe cache 4096, 2 thread groups > lvm > xfs [mkfs -m crc=1] (noatime,nobarrier)",
                "md raid6 x5 +2 > lvm > xfs",
            ),
            (
                md(serde_json::json!({
                    "cache": {"kind": "lvmcache", "mode": "writethrough", "disks": 1,
                              "size": 268435456}})),
                "md raid6 x5 +2 spares, chunk 512KiB, consistency ppl, bitmap internal/64MiB, stripe cache 4096, 2 thread groups > lvm > lvmcache writethrough 256MiB (1 disk) > xfs [mkfs -m crc=1] (noatime,nobarrier)",
                "md raid6 x5 +2 > lvm > lvmcache wt > xfs",
            ),
            (
                stack(serde_json::json!({
                    "raid": {"type": "md", "level": "5", "chunk": null, "bitmap": null,
                             "bitmap_chunk": null, "assume_clean": false},
                    "members": 3, "spares": 1, "lvm": false, "fs": "ext4",
                    "mkfs_options": [], "mount_options": []
                })),
                "md raid5 x3 +1 spare > ext4",
                "md raid5 x3 +1 > ext4",
            ),
            (
                stack(serde_json::json!({
                    "raid": {"type": "btrfs", "data": "raid1", "metadata": "raid1c3"},
                    "members": 3, "spares": 0, "lvm": false, "fs": "btrfs",
                    "mkfs_options": [], "mount_options": ["noatime"]
                })),
                "btrfs raid1 (metadata raid1c3) x3 (noatime)",
                "btrfs raid1 x3",
            ),
            (
                stack(serde_json::json!({
                    "raid": {"type": "none"}, "members": 1, "spares": 0, "lvm": false,
                    "fs": "ext4", "mkfs_options": ["-E", "nodiscard"], "mount_options": [],
                    "cache": {"kind": "bcache", "mode": "writeback", "disks": 2, "fail": true}
                })),
                "single disk > bcache writeback (2 disks, failed) > ext4 [mkfs -E nodiscard]",
                "disk > bcache wb > ext4",
            ),
        ];
        for (s, long, short) in &cases {
            assert_eq!(s.describe(), *long);
            assert_eq!(s.short(), *short);
        }
    }

    /// ZFS pools in both text forms, one vdev and several.
    #[test]
    fn both_text_forms_of_zfs_are_pinned() {
        use crate::stack::zfs::{VdevKind, ZfsOptions};
        use crate::stack::{FsKind, FsLayer, RaidLayer};
        let z = |vdevs: usize, kind: VdevKind| {
            let mut o = ZfsOptions::simple(kind, 3);
            o.vdevs = vdevs;
            o.log = 1;
            o.pool = vec![("ashift".into(), "12".into())];
            Stack::over(RaidLayer::Zfs(o), 3 * vdevs).fs(FsLayer::plain(FsKind::Zfs))
        };
        let one = z(1, VdevKind::Raidz(1));
        assert_eq!(one.describe(), "zfs raidz1 x3, log x1 [ashift=12]");
        assert_eq!(Stack::short(&one), "zfs raidz1");
        let two = z(2, VdevKind::Mirror);
        assert_eq!(two.describe(), "zfs 2 x mirror x3, log x1 [ashift=12]");
        assert_eq!(Stack::short(&two), "zfs 2x mirror");
    }

    #[test]
    fn short_stacks() {
        let s = stack(serde_json::json!({
            "raid": {"type": "none"}, "members": 1, "spares": 0, "lvm": false, "fs": "ext4",
            "mkfs_options": [], "mount_options": ["noatime"]
        }));
        assert_eq!(Stack::short(&s), "disk > ext4");
        let c = stack(serde_json::json!({
            "raid": {"type": "none"}, "members": 1, "spares": 0, "lvm": false, "fs": "ext4",
            "mkfs_options": [], "mount_options": [],
            "cache": {"kind": "bcache", "mode": "writeback", "disks": 1}
        }));
        assert_eq!(Stack::short(&c), "disk > bcache wb > ext4");
    }
}
