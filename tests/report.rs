//! `iolab report`, run as the real binary on runs saved in a real SQLite store: the structure
//! of the HTML (every run and workload, the store's numbers, nothing external), Markdown with
//! its chart files, a lab's capacity/degraded/rebuild section, the notes, refusals, the size
//! and speed bar (20 runs x 8 workloads), headless Chromium rendering the page, and a report of
//! real `iolab run` results.
//!
//! Screenshots are kept under `target/report-test/` for people to look at.

#[path = "report/browser.rs"]
mod browser;
mod common;
#[path = "report/fixtures.rs"]
mod fixtures;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{Iolab, kind, skip};
use fixtures::{Shape, four_workloads, many_workloads, save};
use iolab::report::compare::{format_estimate, format_ratio};
use iolab::sample::RunRecord;
use iolab::stats;
use iolab::store::Store;
use iolab::store::schema::v2::from_v1;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("iolab-report-test")
        .tempdir()
        .unwrap()
}

/// Where screenshots and sample reports are kept: `<target dir>/report-test/`.
fn artifacts() -> PathBuf {
    // The binary lives in <target>/<profile>/iolab.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_iolab"));
    let dir = bin
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
        .join("report-test");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `iolab --db DB report ARGS` (the `--db` flag itself, not `IOLAB_DB`).
fn report(db: &Path, args: &[&str]) -> (i32, String, String) {
    Iolab::new()
        .arg("--db")
        .arg(db)
        .arg("report")
        .args(args)
        .run()
        .parts()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn esc(s: &str) -> String {
    iolab::report::chart::esc(s)
}

/// The value of `name="..."` inside one tag.
fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(unescape(&tag[i..j]))
}

/// Every headline bar: (run id, workload, metric, median).
fn bars(html: &str) -> Vec<(String, String, String, f64)> {
    html.match_indices("<rect ")
        .filter_map(|(i, _)| {
            let tag = &html[i..i + html[i..].find('>')?];
            Some((
                attr(tag, "data-run")?,
                attr(tag, "data-workload")?,
                attr(tag, "data-metric")?,
                attr(tag, "data-median")?.parse().ok()?,
            ))
        })
        .collect()
}

/// Three runs over the four seed workloads: a baseline, a faster one whose sequential write
/// falls off a cliff, and a noisy one with a failed trial and a label full of markup.
fn three_runs() -> Vec<RunRecord> {
    let ws = four_workloads();
    let a = fixtures::run("raid5", 1.0, &ws, 3, 1);
    let b = fixtures::run_shaped("raid6", &ws, 3, 2, |i, s| Shape {
        rate: s.rate * 1.8,
        cliff_at: (i == 0).then_some(12),
        ..s
    });
    let mut c = fixtures::run_shaped("r10 <b>\"fast\" & 'wide'</b>", &ws, 3, 3, |_, s| Shape {
        rate: s.rate * 2.5,
        noise: 0.25,
        ..s
    });
    c.workloads[1].trials[1].accounting.errors = 3;
    c.notes
        .push("sdd is SLOW: 59 MB/s against 83 MB/s for its peers".into());
    vec![a, b, c]
}

#[test]
fn html_report_has_every_run_and_workload_with_the_stores_numbers() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ids = save(&db, &three_runs());
    let outp = dir.path().join("r.html");
    let (code, stdout, stderr) = report(
        &db,
        &[&ids[0], "raid6", &ids[2][..6], "-o", outp.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("3 runs, 4 workloads"), "{stdout}");
    let html = std::fs::read_to_string(&outp).unwrap();

    // Self-contained: nothing to fetch, no script, no external reference.
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("url("));
    for (i, _) in html.match_indices("href=\"") {
        assert_eq!(&html[i + 6..i + 7], "#", "only in-page links");
    }
    assert!(html.contains("default-src 'none'"), "CSP forbids loading");
    assert!(html.contains("prefers-color-scheme:dark"));

    // Every run and workload; labels escaped, never raw markup.
    let store = Store::open(&db).unwrap();
    let runs: Vec<RunRecord> = ids.iter().map(|id| store.load_run(id).unwrap()).collect();
    for r in &runs {
        assert!(html.contains(&r.id), "run id {}", r.id);
        let label = r.label.as_deref().unwrap();
        assert!(html.contains(&esc(label)), "label {label}");
    }
    assert!(
        !html.contains("<b>\"fast\""),
        "a label reached the page unescaped"
    );
    for w in four_workloads() {
        assert!(html.contains(&format!("<h2>{}</h2>", w.name)), "{}", w.name);
    }

    // One bar per run and workload, on the headline metric, with the store's median.
    let bars = bars(&html);
    assert_eq!(bars.len(), 12, "{bars:?}");
    let headline = |w: &str| match w {
        "seq-write-1m" => "write.mbps",
        "rand-read-4k" | "mix-8k" => "read.iops",
        _ => "create.ops",
    };
    for (run_id, wname, metric, median) in &bars {
        assert_eq!(metric, headline(wname), "{wname}");
        let rec = runs.iter().find(|r| &r.id == run_id).unwrap();
        let w = rec
            .workloads
            .iter()
            .find(|w| &w.workload.name == wname)
            .unwrap();
        let m = stats::summarize_trials(&w.trials)
            .into_iter()
            .find(|m| &m.name == metric)
            .unwrap();
        assert_eq!(*median, m.summary.median, "{run_id} {wname}");
        assert!(html.contains(&esc(&format_estimate(&m.summary))), "{wname}");
        if run_id != &runs[0].id {
            let base = runs[0]
                .workloads
                .iter()
                .find(|x| &x.workload.name == wname)
                .unwrap();
            let b = stats::summarize_trials(&base.trials)
                .into_iter()
                .find(|x| &x.name == metric)
                .unwrap();
            let r = stats::ratio(&m.summary, &b.summary).unwrap();
            assert!(html.contains(&esc(&format_ratio(&r))), "ratio {wname}");
        }
    }

    // Charts: bars, latency curves (reads and writes of the mix), series per workload.
    let svgs = html.matches("<svg class=\"chart\"").count();
    assert_eq!(svgs, 4 + 5 + 4, "bars + latency (mix has two ops) + series");
    assert!(
        !html.contains("xmlns="),
        "inline SVG needs no namespace URL"
    );
    assert!(html.contains(">p99.9<"), "latency axis in nines");

    // Setup: common facts once, devices with model and firmware, RAID, mount options.
    for fact in [
        "6.12.0-test",
        "Xeon E5-2650 v2",
        "rw,noatime,inode64",
        "md0 raid6 x4",
    ] {
        assert!(html.contains(fact), "{fact}");
    }
    assert!(html.contains("3 × ATA ST4000NM0033-9ZM170 4.00TB fw SN03 HDD"));

    // Notes the tool knows.
    let notes = &html[html.find("id=\"notes\"").unwrap()..];
    assert!(notes.contains("throughput fell"), "cliff note");
    assert!(notes.contains("trials disagree by"), "high CV note");
    assert!(notes.contains("3 IO errors"), "failed trial note");
    assert!(notes.contains("SLOW"), "slow disk note");
}

#[test]
fn markdown_report_links_charts_that_exist() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ids = save(&db, &three_runs());
    let md_path = dir.path().join("my post.md");
    let (code, stdout, stderr) = report(
        &db,
        &[
            "--baseline",
            "raid6",
            &ids[0],
            "-o",
            md_path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("charts in"), "{stdout}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.starts_with("# raid6 vs raid5"), "{}", &md[..80]);
    assert!(
        md.contains("| run | seq-write-1m (write MB/s) |"),
        "summary table"
    );
    assert!(md.contains("**raid6** (baseline)"));
    assert!(!md.contains("http://") && !md.contains("https://"));
    let charts = dir.path().join("my post-charts");
    let mut links = 0;
    for (i, _) in md.match_indices("](my%20post-charts/") {
        let rest = &md[i + 2..];
        let link = &rest[..rest.find(')').unwrap()];
        let file = charts.join(link.trim_start_matches("my%20post-charts/"));
        let svg = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{link} -> {}: {e}", file.display()));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>") && svg.contains("<style>"));
        links += 1;
    }
    assert_eq!(links, 13, "one link per chart");
    assert_eq!(std::fs::read_dir(&charts).unwrap().count(), 13);
    // A second report to the same file replaces its charts and leaves other files alone.
    std::fs::write(charts.join("logo.svg"), "<svg/>").unwrap();
    let one = save(
        &db,
        &[fixtures::run("solo", 1.0, &four_workloads()[..1], 2, 5)],
    );
    let (code, _, stderr) = report(&db, &[&one[0], "-o", md_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let mut left: Vec<String> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "01-seq-write-1m-bars.svg",
            "01-seq-write-1m-latency-write.svg",
            "01-seq-write-1m-series.svg",
            "logo.svg"
        ]
    );
    // --format overrides the extension.
    let out2 = dir.path().join("r.txt");
    let (code, _, stderr) = report(
        &db,
        &[&ids[0], "--format", "md", "-o", out2.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        std::fs::read_to_string(out2)
            .unwrap()
            .starts_with("# iolab run raid5")
    );
}

#[test]
fn lab_report_shows_capacity_degraded_ratios_and_rebuild_times() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ws = four_workloads();
    // Written as v1 documents, converted the way the store's v1 -> v2 migration does.
    let v1 = |name: &str, level: &str, usable: u64| {
        serde_json::json!({"name": name, "level": level, "members": 4, "chunk": 524_288,
                           "lvm": false, "fs": "xfs", "mount_options": ["noatime"],
                           "usable_bytes": usable})
    };
    let layout = |name: &str, level: &str, usable: u64| from_v1(&v1(name, level, usable));
    let mut r5 = fixtures::run("raid5", 1.0, &ws, 3, 11);
    r5.layout = Some(layout("raid5", "5", 12_000_000_000_000));
    let mut r10 = fixtures::run("raid10", 1.6, &ws, 3, 12);
    r10.layout = Some(layout("raid10", "10", 8_000_000_000_000));
    let mut r5d = fixtures::run("raid5-degraded", 0.4, &ws, 3, 13);
    let mut l = v1("raid5", "5", 12_000_000_000_000);
    l["degraded_of"] = "raid5".into();
    l["rebuild_seconds"] = 4321.0.into();
    l["slow_members"] = serde_json::json!(["sdd"]);
    r5d.layout = Some(from_v1(&l));
    let mut r10_no_facts = fixtures::run("raid0", 2.0, &ws, 3, 14);
    r10_no_facts.layout = Some(from_v1(&serde_json::json!({"anything": "else"})));
    let mut runs = vec![r5, r10, r5d, r10_no_facts];
    for (i, r) in runs.iter_mut().enumerate() {
        r.lab_id = Some("lab42".into());
        r.started_unix_ms += i as u64 * 1000;
    }
    let ids = save(&db, &runs);
    // An unrelated run is left out.
    save(&db, &[fixtures::run("other", 1.0, &ws, 1, 99)]);
    let outp = dir.path().join("lab.html");
    let (code, stdout, stderr) = report(&db, &["--lab", "lab42", "-o", outp.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("4 runs"), "{stdout}");
    let html = std::fs::read_to_string(&outp).unwrap();
    assert!(html.contains("<title>Lab lab42: 4 layouts compared</title>"));
    assert!(!html.contains(">other<"));
    let lab = &html[html.find("id=\"lab\"").unwrap()..html.find("id=\"w1\"").unwrap()];
    assert!(lab.contains("Capacity vs speed"), "scatter chart");
    assert_eq!(
        lab.matches("<circle").count(),
        2,
        "healthy layouts that know their capacity"
    );
    assert!(lab.contains("12.00TB") && lab.contains("8.00TB"));
    assert!(lab.contains("raid5 x4, chunk 512KiB &gt; xfs (noatime)"));
    assert!(lab.contains("1h12m"), "rebuild time 4321 s");
    assert!(lab.contains("Degraded vs healthy"));
    // The degraded ratio is the store's degraded median over the healthy median.
    let store = Store::open(&db).unwrap();
    let (h, d) = (
        store.load_run(&ids[0]).unwrap(),
        store.load_run(&ids[2]).unwrap(),
    );
    let med = |r: &RunRecord| {
        let m = stats::summarize_trials(&r.workloads[1].trials);
        m.into_iter()
            .find(|m| m.name == "read.iops")
            .unwrap()
            .summary
    };
    let ratio = stats::ratio(&med(&d), &med(&h)).unwrap();
    assert!(
        lab.contains(&format_ratio(&ratio)),
        "{}",
        format_ratio(&ratio)
    );
    assert!((ratio.value - 0.4).abs() < 0.05);
    let notes = &html[html.find("id=\"notes\"").unwrap()..];
    assert!(notes.contains("SLOW member disk sdd"));
    assert!(notes.contains("degraded runs at"));
}

/// A lab of many layouts and workloads made in the VM. Its Setup table (a column per
/// fact that differs) and its lab table (a column per workload) scrolled sideways in a 1280 px
/// window, and its header said `host (none)` (the guest's unset name) where a reader needs to
/// see that its speeds are emulated: `vm (tcg) on HOST`.
#[test]
fn a_vm_lab_report_fits_a_laptop_window_and_says_its_speeds_are_emulated() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ws = many_workloads(8);
    let shapes = [
        ("raid0", "0", "xfs", "rw,noatime,inode64,logbsize=256k"),
        ("raid1", "1", "ext4", "rw,relatime,stripe=128,data=ordered"),
        (
            "raid5",
            "5",
            "xfs",
            "rw,noatime,inode64,sunit=1024,swidth=3072",
        ),
        (
            "raid6",
            "6",
            "xfs",
            "rw,noatime,inode64,sunit=1024,swidth=2048",
        ),
        (
            "raid10",
            "10",
            "btrfs",
            "rw,noatime,space_cache=v2,subvolid=5",
        ),
        ("raid5-lvm", "5", "ext4", "rw,noatime,stripe=384,commit=30"),
    ];
    let mut runs = Vec::new();
    for (i, (name, level, fs, opts)) in shapes.iter().enumerate() {
        let mut r = fixtures::run(name, 1.0 + i as f64 * 0.2, &ws, 3, 40 + i as u64);
        let mut l = from_v1(
            &serde_json::json!({"name": name, "level": level, "members": 4,
            "chunk": 524_288, "lvm": name.ends_with("lvm"), "fs": fs,
            "mount_options": [opts], "usable_bytes": 3e9 as u64 * (i as u64 + 2)}),
        );
        l.environment = Some("vm (tcg)".into());
        r.layout = Some(l);
        r.lab_id = Some("vmlab1".into());
        r.started_unix_ms += i as u64 * 600_000;
        // As `iolab lab --vm` stores it: the guest's facts, the host's name.
        r.system.hostname = "labhost".into();
        r.system.kernel = "6.1.0-28-amd64".into();
        r.system.cpus = 2;
        r.target.path = format!("/mnt/iolab-vmlab1-{name}/data").into();
        r.target.fs_type = Some((*fs).into());
        r.target.mount_point = Some(format!("/mnt/iolab-vmlab1-{name}").into());
        r.target.mount_options = Some((*opts).into());
        r.target.mount_source = Some(format!("/dev/md12{i}"));
        runs.push(r);
    }
    save(&db, &runs);
    let outp = dir.path().join("vmlab.html");
    let (code, _, stderr) = report(&db, &["--lab", "vmlab1", "-o", outp.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let html = std::fs::read_to_string(&outp).unwrap();
    let _ = std::fs::copy(&outp, artifacts().join("vmlab.html"));
    let header = &html[html.find("<header>").unwrap()..html.find("</header>").unwrap()];
    assert!(header.contains(" on vm (tcg) on labhost;"), "{header}");
    let setup = &html[html.find("id=\"setup\"").unwrap()..html.find("id=\"lab\"").unwrap()];
    assert!(
        setup.contains("<dt>host</dt><dd>vm (tcg) on labhost</dd>"),
        "{setup}"
    );
    assert!(!html.contains("(none)"));
    let Some(bin) = browser::chromium() else {
        skip(
            &kind::tool("chromium"),
            "browser part: chromium is not installed (scripts/test installs it)",
        );
        return;
    };
    assert_summary_fits(&probe_body(&bin, &outp, "vmlab"), "vmlab");
    let png = artifacts().join("vmlab-1280.png");
    let (ok, log) = browser::screenshot(&bin, &outp, &png, 1280, 3000, false);
    assert!(ok, "screenshot failed: {log}");
    eprintln!("screenshot: {}", png.display());
}

#[test]
fn a_hosts_group_gets_a_line_per_host_and_its_straggler_flagged() {
    // Three host runs of one `iolab run --hosts` (h2 at half the speed: the straggler) and
    // their aggregate, tied by their notes as `iolab run --hosts` saves them.
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ws = vec![fixtures::io(
        "rand",
        iolab::spec::Pattern::RandRead,
        4096,
        32,
    )];
    let hosts: Vec<RunRecord> = [1.0, 1.05, 0.5]
        .iter()
        .enumerate()
        .map(|(i, &speed)| {
            let mut r = fixtures::run(&format!("host{i}"), speed, &ws, 1, 10 + i as u64);
            r.label = None;
            r.notes = vec![format!("hosts-group g7: host h{i} ({} of 3)", i + 1)];
            r
        })
        .collect();
    let ids = save(&db, &hosts);
    let mut agg = fixtures::run("cluster", 2.5, &ws, 1, 20);
    agg.notes = vec![format!(
        "hosts-group g7: aggregate of 3 of 3 hosts (h0 = run {}, h1 = run {}, h2 = run {})",
        ids[0], ids[1], ids[2]
    )];
    save(&db, &[agg]);
    // The aggregate alone: its host runs are found from its note.
    let outp = dir.path().join("hosts.html");
    let (code, _, stderr) = report(&db, &["cluster", "-o", outp.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let html = std::fs::read_to_string(&outp).unwrap();
    let section = &html[html.find("<section id=\"hosts\">").expect("hosts section")..];
    let section = &section[..section.find("</section>").expect("end")];
    let titles: Vec<String> = section
        .split("<polyline ")
        .skip(1)
        .map(|l| {
            let t = &l[l.find("<title>").expect("title") + 7..];
            unescape(&t[..t.find("</title>").expect("end")])
        })
        .collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    assert_eq!(
        (&titles[0][..], &titles[1][..], &titles[3][..]),
        ("h0", "h1", "aggregate of 3 hosts"),
        "one series per host, then the aggregate"
    );
    assert!(titles[2].starts_with("h2 (SLOW -"), "{titles:?}");
    for (name, slow) in [("h0", "false"), ("h1", "false"), ("h2", "true")] {
        let bar = section
            .split("<rect ")
            .find(|b| b.contains(&format!("data-host=\"{name}\"")))
            .unwrap_or_else(|| panic!("no p99 bar for {name}"));
        assert_eq!(attr(bar, "data-slow").as_deref(), Some(slow), "{name}");
        assert!(attr(bar, "data-p99-ns").is_some_and(|v| v.parse::<u64>().unwrap() > 0));
    }
    // The host runs are not made columns of the comparison: one run in the report.
    assert!(
        html.contains("1 run ×"),
        "the summary counts the aggregate only"
    );
}

#[test]
fn bad_input_is_refused_with_exit_2_and_writes_nothing() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let o = dir.path().join("r.html");
    let o = o.to_str().unwrap();
    // No database yet.
    let (code, _, err) = report(&db, &["last", "-o", o]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no results database"), "{err}");
    save(
        &db,
        &[fixtures::run("raid5", 1.0, &four_workloads()[..1], 2, 1)],
    );
    for (args, want) in [
        (vec!["-o", o], "give the runs"),
        (vec!["nosuchrun", "-o", o], "no run matches 'nosuchrun'"),
        (vec!["--lab", "nolab", "-o", o], "no lab matches 'nolab'"),
        (
            vec!["raid5", "-o", "/nonexistent-dir/r.html"],
            "does not exist",
        ),
        (
            vec!["raid5", "-o", dir.path().to_str().unwrap()],
            "is a directory",
        ),
        (vec!["raid5", "--baseline", "nope", "-o", o], "'nope'"),
    ] {
        let (code, _, err) = report(&db, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    let (code, _, err) = Iolab::new().args(["report", "raid5"]).run().parts();
    assert_eq!(code, 2, "-o is required: {err}");
    assert!(!Path::new(o).exists(), "nothing written");
    // One run is a report too.
    let (code, _, err) = report(&db, &["raid5", "-o", o]);
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::read_to_string(o)
            .unwrap()
            .contains("<title>iolab run raid5</title>")
    );
}

#[test]
fn twenty_runs_by_eight_workloads_render_fast_and_small() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ws = many_workloads(8);
    let runs: Vec<RunRecord> = (0..20)
        .map(|i| {
            fixtures::run_shaped(&format!("layout-{i:02}"), &ws, 3, 100 + i, |k, s| Shape {
                rate: s.rate * (1.0 + i as f64 * 0.05),
                secs: 120,
                cliff_at: (k == 0 && i % 5 == 0).then_some(60),
                ..s
            })
        })
        .collect();
    save(&db, &runs);
    let _ = std::fs::copy(&db, artifacts().join("big.db"));
    let outp = dir.path().join("big.html");
    let refs: Vec<String> = (0..20).map(|i| format!("layout-{i:02}")).collect();
    let mut args: Vec<&str> = refs.iter().map(String::as_str).collect();
    args.extend(["-o", outp.to_str().unwrap()]);
    let t = Instant::now();
    let (code, _, stderr) = report(&db, &args);
    let took = t.elapsed();
    assert_eq!(code, 0, "{stderr}");
    let size = std::fs::metadata(&outp).unwrap().len();
    let html = std::fs::read_to_string(&outp).unwrap();
    assert_eq!(bars(&html).len(), 160);
    eprintln!(
        "20 runs x 8 workloads: {:.2}s, {} KiB ({} build)",
        took.as_secs_f64(),
        size / 1024,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    assert!(size < 2 << 20, "{size} bytes");
    // The bar is 2 s for the release binary (what scripts/test builds and users run); an
    // unoptimized build decodes and merges histograms about five times slower.
    let limit = if cfg!(debug_assertions) { 10.0 } else { 2.0 };
    assert!(took.as_secs_f64() < limit, "took {took:?}");
    let _ = std::fs::copy(&outp, artifacts().join("big.html"));
    // Eight workloads side by side is where the summary used to scroll sideways.
    let Some(bin) = browser::chromium() else {
        skip(
            &kind::tool("chromium"),
            "browser part: chromium is not installed (scripts/test installs it)",
        );
        return;
    };
    assert_summary_fits(&probe_body(&bin, &outp, "big"), "big");
    let png = artifacts().join("big-1280.png");
    let (ok, log) = browser::screenshot(&bin, &outp, &png, 1280, 1200, false);
    assert!(ok, "screenshot failed: {log}");
    eprintln!("screenshot: {}", png.display());
}

/// Injects a probe into a copy of the page: collects script errors, measures every chart.
fn probe_copy(html: &str, dst: &Path) {
    // The report's CSP forbids scripts; the probe copy drops it (the original is screenshot
    // with it in place).
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = start + html[start..].find('>').unwrap() + 1;
    let mut page = format!("{}{}", &html[..start], &html[end..]);
    let head = "<script>window.__errs=[];addEventListener('error',function(e){__errs.push(String(e.message))});</script>";
    let tail = "<script>(function(){var s=[].slice.call(document.querySelectorAll('svg.chart'));\
var bad=s.filter(function(x){var r=x.getBoundingClientRect();return !(r.width>100&&r.height>50)});\
var empty=s.filter(function(x){var b=x.getBBox();return !(b.width>0&&b.height>0)});\
var d=document.body.dataset;d.svgCount=s.length;d.svgBad=bad.length;d.svgEmpty=empty.length;\
d.errors=JSON.stringify(__errs);d.height=document.documentElement.scrollHeight;\
d.bg=getComputedStyle(document.body).backgroundColor;\
var w=[].slice.call(document.querySelectorAll('#summary .tw'));\
d.summaryTables=w.length;d.summaryWide=JSON.stringify(w.filter(function(x){return x.scrollWidth>x.clientWidth})\
.map(function(x){return x.scrollWidth+'>'+x.clientWidth}));\
var all=[].slice.call(document.querySelectorAll('.tw'));d.tables=all.length;\
d.wideTables=JSON.stringify(all.filter(function(x){return x.scrollWidth>x.clientWidth})\
.map(function(x){var s=x.closest('section');return (s?s.id:'-')+' '+x.scrollWidth+'>'+x.clientWidth}));\
d.pageWide=document.documentElement.scrollWidth>document.documentElement.clientWidth?1:0;})();</script>";
    page = page.replacen("<head>", &format!("<head>{head}"), 1);
    page = page.replacen("</body>", &format!("{tail}</body>"), 1);
    std::fs::write(dst, page).unwrap();
}

/// The page's `<body>` tag after the probe ran in a 1280 px wide window.
fn probe_body(bin: &Path, page: &Path, name: &str) -> String {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = artifacts().join(format!("{name}-probe.html"));
    probe_copy(&html, &probe);
    let (ok, dom, log) = browser::dump_dom(bin, &probe);
    assert!(ok, "chromium --dump-dom failed: {log}");
    let body = &dom[dom.find("<body").expect("a body in the DOM")..];
    body[..body.find('>').unwrap()].to_string()
}

/// The summary fits a 1280 px window without scrolling sideways, and so does the
/// page (the probe's DOM is dumped at that width). So does every other table (the
/// setup and lab tables scrolled), named by its section when it does not.
fn assert_summary_fits(body_tag: &str, name: &str) {
    let get = |k: &str| attr(body_tag, k).unwrap_or_else(|| panic!("{k} missing: {body_tag}"));
    assert!(get("data-summary-tables").parse::<u32>().unwrap() >= 1);
    assert_eq!(
        get("data-summary-wide"),
        "[]",
        "{name}: summary tables wider than their box at 1280 px (scrollWidth>clientWidth)"
    );
    assert!(get("data-tables").parse::<u32>().unwrap() >= 2);
    assert_eq!(
        get("data-wide-tables"),
        "[]",
        "{name}: tables wider than their box at 1280 px (section scrollWidth>clientWidth)"
    );
    assert_eq!(
        get("data-page-wide"),
        "0",
        "{name}: the page scrolls sideways"
    );
}

fn browser_checks(bin: &Path, page: &Path, name: &str, expect_svgs: usize) {
    let dir = artifacts();
    let body_tag = probe_body(bin, page, name);
    let body_tag = body_tag.as_str();
    let get = |k: &str| attr(body_tag, k).unwrap_or_else(|| panic!("{k} missing: {body_tag}"));
    assert_eq!(get("data-svg-count"), expect_svgs.to_string());
    assert_eq!(
        get("data-svg-bad"),
        "0",
        "every chart has a size on the page"
    );
    assert_eq!(get("data-svg-empty"), "0", "every chart drew something");
    assert_eq!(get("data-errors"), "[]", "script errors");
    assert!(get("data-height").parse::<u32>().unwrap() > 1500);
    assert_summary_fits(body_tag, name);

    // The real page, CSP and all: screenshots at desktop and phone widths, and in the dark
    // scheme; no console output.
    for (suffix, w, h, dark) in [
        ("", 1200, 2400, false),
        ("-1280", 1280, 2400, false),
        ("-phone", 390, 2400, false),
        ("-dark", 1200, 2400, true),
    ] {
        let png = dir.join(format!("{name}{suffix}.png"));
        let _ = std::fs::remove_file(&png);
        let (ok, log) = browser::screenshot(bin, page, &png, w, h, dark);
        assert!(ok, "screenshot failed: {log}");
        let problems = browser::console_problems(&log);
        assert!(problems.is_empty(), "console: {problems:?}");
        let img = browser::read_png(&png).unwrap();
        assert_eq!((img.width, img.height), (w as usize, h as usize));
        let ink = browser::ink_fraction(&img);
        assert!(
            ink > 0.03,
            "{name}{suffix}: page looks blank ({ink:.3} ink)"
        );
        assert!(
            browser::distinct_colours(&img) > 20,
            "{name}{suffix}: too few colours"
        );
        // The background follows the scheme, and palette colours 0 and 1 of that scheme are
        // painted: bars and lines rendered.
        let bg = img.px(0, 0);
        let lum = u32::from(bg[0]) + u32::from(bg[1]) + u32::from(bg[2]);
        let (c0, c1) = if dark {
            assert!(lum < 100, "{name}{suffix}: background {bg:?} is not dark");
            ([0x79, 0xa8, 0xdc], [0xff, 0xa5, 0x52])
        } else {
            assert!(lum > 700, "{name}{suffix}: background {bg:?} is not light");
            ([0x4e, 0x79, 0xa7], [0xf2, 0x8e, 0x2b])
        };
        let c0 = browser::count_near(&img, c0, 12);
        let c1 = browser::count_near(&img, c1, 12);
        assert!(
            c0 > 200 && c1 > 100,
            "{name}{suffix}: chart colours {c0} {c1}"
        );
        eprintln!("screenshot: {} ({ink:.2} ink)", png.display());
    }
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = browser::chromium() else {
        skip(
            &kind::tool("chromium"),
            "chromium is not installed (scripts/test installs it)",
        );
        return;
    };
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let mut runs = three_runs();
    for (i, r) in runs.iter_mut().enumerate() {
        r.lab_id = Some("lab7".into());
        let (level, usable) = [("5", 12e12), ("6", 8e12), ("10", 8e12)][i];
        r.layout = Some(from_v1(&serde_json::json!({"level": level, "members": 4,
            "fs": "xfs", "usable_bytes": usable})));
    }
    save(&db, &runs);
    let page = artifacts().join("sample.html");
    let (code, _, err) = report(&db, &["--lab", "lab7", "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    browser_checks(&bin, &page, "shot", 14);
}

#[test]
fn report_of_real_runs_renders() {
    // Two real `iolab run --quick` runs on a temporary directory, saved into the store the way
    // the run command will (its --json document holds the whole record).
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let mut recs = Vec::new();
    for label in ["first", "second"] {
        let target = dir.path().join(format!("t-{label}"));
        std::fs::create_dir(&target).unwrap();
        // Its own --db, so a run command that stores runs never touches the user's database.
        let run_db = dir.path().join("run.db");
        let (code, stdout, stderr) = Iolab::new()
            .args([
                "--db",
                run_db.to_str().unwrap(),
                "run",
                target.to_str().unwrap(),
                "--quick",
                "--size",
                "16MiB",
                "--time",
                "300ms",
                "--repeat",
                "2",
                "--label",
                label,
                "--json",
            ])
            .run()
            .parts();
        assert_eq!(code, 0, "{stderr}");
        let doc = common::json(&stdout);
        let rec: RunRecord = serde_json::from_value(doc["run"].clone()).unwrap();
        assert!(!rec.workloads.is_empty());
        recs.push(rec);
    }
    // `iolab run` may already store runs itself; save ours under fresh ids either way.
    for r in &mut recs {
        r.id.clear();
    }
    let ids = save(&db, &recs);
    let page = artifacts().join("real.html");
    let (code, _, err) = report(&db, &[&ids[0], &ids[1], "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    let nbars = bars(&html).len();
    assert_eq!(
        nbars,
        2 * recs[0].workloads.len(),
        "one bar per run and workload"
    );
    let md = artifacts().join("real.md");
    let (code, _, err) = report(&db, &[&ids[0], &ids[1], "-o", md.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let Some(bin) = browser::chromium() else {
        skip(
            &kind::tool("chromium"),
            "browser part: chromium is not installed (scripts/test installs it)",
        );
        return;
    };
    let svgs = html.matches("<svg class=\"chart\"").count();
    browser_checks(&bin, &page, "real", svgs);
}

/// What the lab concludes once its layouts are done: each degraded layout's speed ratio, the
/// baseline mark and the completed layout record of every stored run, the comparison.
#[test]
fn a_lab_concludes_ratios_baseline_and_layout_records() {
    use iolab::lab::report::{DegradedReport, LabRun, LayoutReport};
    use iolab::lab::{LabReport, Phase};
    use iolab::sample::LayoutRecord;
    let spec = iolab::lab::parse_lab(
        "name = \"t\"\n[disks]\nloop = { count = 2, size = \"1GiB\" }\n\
         [[layout]]\nname = \"r1\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\n\
         degrade = true\n\
         [[layout]]\nname = \"x\"\nfs = \"xfs\"\n\
         [workloads]\nprofiles = [\"quick\"]\nbaseline = \"x\"\n",
        "t.toml",
    )
    .expect("spec");
    let ws = four_workloads();
    let mut r1 = LayoutReport::new("r1", "btrfs raid1 x2".into(), None);
    r1.degraded = Some(DegradedReport {
        failed_member: "/dev/loop1".into(),
        degrade_seconds: 0.1,
        workload_seconds: Some(1.0),
        data_verified: true,
        perf_ratio: None,
        workload_error: None,
        cache_failure: None,
    });
    r1.build_seconds = Some(2.5);
    let mut report = LabReport {
        lab_id: "ab12cd".into(),
        name: "t".into(),
        spec_file: "t.toml".into(),
        disks: "2 x 1GiB".into(),
        baseline: Some("x".into()),
        interrupted: false,
        dry_run: false,
        layouts: vec![r1, LayoutReport::new("x", "disk > xfs".into(), None)],
        leftovers: vec![],
        runs: vec![],
    };
    let run = |layout: &str, phase: Phase, id: &str, label: &str, speed: f64| {
        let mut rec = fixtures::run(label, speed, &ws, 3, 7);
        rec.id = id.into();
        rec.layout = Some(LayoutRecord {
            name: Some(layout.into()),
            phase: Some(phase),
            ..LayoutRecord::default()
        });
        let lr = LabRun {
            layout: layout.into(),
            phase,
            run_id: id.into(),
        };
        (lr, rec)
    };
    let runs = vec![
        run("r1", Phase::Healthy, "a1", "r1", 1.0),
        run("r1", Phase::Degraded, "a2", "r1-degraded", 0.5),
        run("x", Phase::Healthy, "a3", "x", 2.0),
        run("x", Phase::Degraded, "", "x-unsaved", 2.0),
    ];
    let c = iolab::lab::summary::conclude(&spec, &mut report, runs);
    let ratio = report.layouts[0]
        .degraded
        .as_ref()
        .unwrap()
        .perf_ratio
        .unwrap();
    assert!((ratio - 0.5).abs() < 0.05, "{ratio}");
    assert!(report.layouts[1].degraded.is_none());
    assert_eq!(
        report
            .runs
            .iter()
            .map(|r| r.run_id.as_str())
            .collect::<Vec<_>>(),
        ["a1", "a2", "a3"],
        "unsaved runs are not listed"
    );
    let rec = |id: &str| &c.records.iter().find(|(i, _)| i == id).unwrap().1;
    assert_eq!(c.records.len(), 3);
    assert_eq!(rec("a2").degraded_ratio, Some(ratio));
    assert!(rec("a1").degraded_ratio.is_none() && !rec("a1").lab_baseline);
    assert!(rec("a3").lab_baseline && !rec("a2").lab_baseline);
    assert_eq!(rec("a1").build_seconds, Some(2.5));
    let cmp = c.comparison.expect("healthy runs compared");
    assert_eq!(cmp.runs.len(), 2);
    assert_eq!(cmp.runs[1].label.as_deref(), Some("x"));
    assert!(cmp.runs[1].baseline && !cmp.runs[0].baseline);
}

/// A file named for a format the report does not render (`.csv`, `.json`, `.txt`) is refused
/// in one line naming `--format` and the formats it has (exit 2), and nothing is written;
/// `--format` still picks the format whatever the name.
#[test]
fn a_file_named_for_a_format_the_report_cannot_render_is_refused() {
    let dir = tmp();
    let db = dir.path().join("iolab.db");
    let ids = save(&db, &three_runs());
    for name in ["r.csv", "r.json", "r.txt"] {
        let out = dir.path().join(name);
        let (code, _, stderr) = report(&db, &[&ids[0], "-o", out.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--format html or --format md"),
            "{name}: {stderr}"
        );
        assert!(!out.exists(), "{name} written");
    }
    let out = dir.path().join("r.csv");
    let (code, _, stderr) = report(
        &db,
        &[&ids[0], "--format", "html", "-o", out.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        std::fs::read_to_string(out)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
}
