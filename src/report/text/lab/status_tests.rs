//! Tests of the lab table and its Markdown with every status and integrity verdict.

use super::*;
use crate::lab::integrity::IntegrityReport;
use crate::lab::report::DegradedReport;
use crate::stack::Rebuild;

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
        cache_failure: None,
    });
    ok.rebuild = Some(Rebuild {
        new_member: "/dev/loop9".into(),
        new_members: vec!["/dev/loop9".into()],
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
    let t = render_table(&report(), Detail::Full);
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
            note: None,
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
    let t = render_table(&r, Detail::Full);
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

/// md's mirror mismatches on RAID1/10 (a note from the check, not an error) leave the verdict
/// `verified` and are still shown, under the layout, as a note with the count.
#[test]
fn mirror_mismatch_note_keeps_the_verdict_and_is_shown() {
    use crate::lab::dataset::Verification;
    use crate::lab::integrity::{ScrubCheck, Step};
    let mut r = report();
    let mut i = IntegrityReport::new(129, 40 << 20);
    i.add(
        Step::Rebuilt,
        Verification {
            files: 129,
            bytes: 40 << 20,
            ..Verification::default()
        },
    );
    i.scrubs.push(ScrubCheck {
        after: Step::Rebuilt,
        outcome: crate::layout::scrub::ScrubOutcome {
            tool: "md check".into(),
            errors: 0,
            corrected: 0,
            counters: [("mismatch_cnt".to_string(), 128)].into(),
            note: Some("128 sectors differ between mirrors: not counted as loss".into()),
        },
    });
    i.conclude();
    r.layouts[0].integrity = Some(i);
    let t = render_table(&r, Detail::Full);
    assert_eq!(r.layouts[0].integrity_text(), "verified");
    assert!(
        t.contains("note: btrfs-raid5 md check after rebuilt: 128 sectors differ between mirrors"),
        "{t}"
    );
    let back: LabReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
}

/// A SLOW member's note gives its figures per second of busy time against the members'
/// median (the rule) and its milliseconds per IO with its queue; one the lab put
/// under dm only for a fault says so; a record from before the rule (no busy figures) keeps
/// the note it was judged by.
#[test]
fn a_slow_member_wrapped_for_a_fault_is_named_as_such() {
    use crate::lab::report::MemberIo;
    let io = |member: &str, rate: f64, ms: f64, fault_wrapped: bool| MemberIo {
        member: member.into(),
        device: if fault_wrapped { "dm-0" } else { "vdb" }.into(),
        ios: 1000,
        bytes: 8 << 20,
        ms_per_io: ms,
        busy_ms: Some(2000),
        ios_per_busy_sec: Some(rate),
        mb_per_busy_sec: Some(rate * 8192.0 / 1e6),
        in_flight: Some(ms * 1000.0 / 2000.0),
        slow: rate < 200.0,
        below_pct: (rate < 200.0).then(|| (1.0 - rate / 500.0) * 100.0),
        fault_wrapped,
    };
    let mut l = LayoutReport::new("md6-ure", "md raid6 x4 > xfs".into(), None);
    l.member_io = vec![
        io("/dev/mapper/iolab-x-0", 150.0, 5.9, true),
        io("/dev/vdc", 500.0, 2.5, false),
        io("/dev/vdd", 520.0, 2.4, false),
        io("/dev/vde", 100.0, 37.5, false),
    ];
    let t = super::fault_notes(&l);
    let notes: Vec<&str> = t.lines().filter(|n| n.contains("is SLOW")).collect();
    assert_eq!(notes.len(), 2, "{t}");
    assert!(
        notes[0].contains("/dev/mapper/iolab-x-0 (dm-0) is SLOW: 150 IOs and 1.23 MB per second busy against the members' median 325 and 2.66 (-70%); 5.9 ms per IO with 3.0 in flight")
            && notes[0].ends_with("a layer the others lack"),
        "{t}"
    );
    assert!(notes[1].ends_with("in the healthy workloads)"), "{t}");
    let j = serde_json::to_value(&l.member_io).unwrap();
    assert_eq!(j[0]["fault_wrapped"], true);
    assert!(j[1].get("fault_wrapped").is_none(), "{j}");
    // A member_io record from before the rule reads back and keeps its old note.
    let old: Vec<MemberIo> = serde_json::from_value(serde_json::json!([
        {"member": "/dev/vdb", "device": "vdb", "ios": 900, "bytes": 1, "ms_per_io": 2.0, "slow": false},
        {"member": "/dev/vdc", "device": "vdc", "ios": 900, "bytes": 1, "ms_per_io": 2.2, "slow": false},
        {"member": "/dev/vdd", "device": "vdd", "ios": 900, "bytes": 1, "ms_per_io": 9.0, "slow": true}
    ]))
    .unwrap();
    l.member_io = old;
    let t = super::fault_notes(&l);
    assert!(
        t.contains("member /dev/vdd (vdd) is SLOW: 9.0 ms per IO against the members' median 2.2 ms (900 IOs in the healthy workloads)"),
        "{t}"
    );
}
