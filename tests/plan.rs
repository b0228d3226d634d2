//! `iolab plan`: the binary as users run it, and the model's properties over many inputs.

mod common;
#[path = "plan/disk_from.rs"]
mod disk_from;
#[path = "plan/properties.rs"]
mod properties;

use common::Iolab;

const POD: &[&str] = &[
    "plan",
    "--disks",
    "45",
    "--disk-size",
    "2TB",
    "--layouts",
    "raid6,raid6+2spares,raid5+1spare,raid5",
];

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    base.iter().chain(extra).map(|s| (*s).to_string()).collect()
}

fn run_json(args: &[String]) -> serde_json::Value {
    Iolab::new().args(args).run().success().json()
}

fn layout<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["layouts"]
        .as_array()
        .and_then(|a| a.iter().find(|l| l["name"] == name))
        .unwrap_or_else(|| panic!("no layout {name} in {doc}"))
}

fn f(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn the_45_disk_pod_as_a_table() {
    let out = Iolab::new().args(POD).run();
    out.success();
    let text = out.stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("layout") && lines[0].contains("loss 1y"),
        "{text}"
    );
    let names: Vec<&str> = lines[1..5]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(names, ["raid6", "raid6+2spares", "raid5+1spare", "raid5"]);
    assert!(
        lines[2].contains("43+2s") && lines[2].contains("81.99TB"),
        "{text}"
    );
    assert!(
        lines[5].is_empty(),
        "one row per layout, then notes: {text}"
    );
    // Columns are aligned: every row is as wide as the header or narrower.
    let col = lines[0].find("usable").unwrap() + "usable".len();
    for l in &lines[1..5] {
        assert_eq!(&l[col - 2..col], "TB", "usable column misaligned in {l:?}");
    }
}

#[test]
fn the_45_disk_pod_as_json() {
    let doc = run_json(&with(POD, &["--format", "json"]));
    let layouts = doc["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), 4);
    for l in layouts {
        for key in [
            "name",
            "usable_bytes",
            "seq_read_mbps",
            "seq_write_mbps",
            "rand_read_iops",
            "rand_write_iops",
            "rebuild_hours",
            "mttdl_hours",
            "data_loss_probability_1y",
            "data_loss_probability_mission",
            "dominated",
        ] {
            assert!(
                l.get(key).is_some_and(|v| !v.is_null()),
                "{key} missing in {l}"
            );
        }
    }
    let p = |n: &str| f(layout(&doc, n), "data_loss_probability_1y");
    assert!(p("raid6") < p("raid5"));
    assert!(p("raid6") < p("raid5+1spare"));
    assert!(p("raid5+1spare") < p("raid5"));
    assert!(p("raid6+2spares") < p("raid6"));
    let r6 = layout(&doc, "raid6");
    // The RAID's arithmetic: 43 data disks of 2 TB. What xfs on it reports: each member less
    // mdadm's 129 MiB data offset (whole 512 KiB chunks), less xfs's 2038 MiB log.
    assert_eq!(r6["array_bytes"], 86_000_000_000_000u64);
    assert_eq!(r6["usable_bytes"], 85_992_040_562_688u64);
    assert_eq!(
        layout(&doc, "raid6+2spares")["array_bytes"],
        82_000_000_000_000u64
    );
    assert_eq!(
        layout(&doc, "raid6+2spares")["usable_bytes"],
        81_992_311_373_824u64
    );
    assert!((f(r6, "seq_write_mbps") - 6450.0).abs() < 1e-6);
    assert!((f(r6, "rand_write_iops") - 900.0).abs() < 1e-6);
    // The hot spare removes the 72 h wait from the window, not the rebuild.
    let spare = layout(&doc, "raid6+2spares");
    assert!((f(r6, "exposure_hours") - f(spare, "exposure_hours") - 72.0).abs() < 1e-9);
    assert!(f(r6, "mttdl_hours") < f(spare, "mttdl_hours"));
    assert!(f(r6, "data_loss_probability_mission") > f(r6, "data_loss_probability_1y"));
    // --json is the same as --format json.
    assert_eq!(run_json(&with(POD, &["--json"])), doc);
}

#[test]
fn markdown_table() {
    let out = Iolab::new().args(with(POD, &["--format", "md"])).run();
    out.success();
    let text = out.stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("| layout | disks | usable"), "{text}");
    assert!(lines[1].starts_with("|:--|"), "{text}");
    assert_eq!(
        lines[2..6]
            .iter()
            .filter(|l| l.starts_with("| raid"))
            .count(),
        4
    );
    let cols = lines[0].matches('|').count();
    assert!(
        lines[1..6].iter().all(|l| l.matches('|').count() == cols),
        "{text}"
    );
}

#[test]
fn dominated_layouts_are_marked() {
    let doc = run_json(
        &[
            "plan",
            "--disks",
            "12",
            "--disk-size",
            "4TB",
            "--layouts",
            "btrfs-raid1,btrfs-raid10,raid6",
            "--json",
        ]
        .map(String::from),
    );
    assert_eq!(layout(&doc, "btrfs-raid1")["dominated_by"], "btrfs-raid10");
    assert_eq!(layout(&doc, "btrfs-raid10")["dominated"], false);
    let text = Iolab::new()
        .args([
            "plan",
            "--disks",
            "12",
            "--disk-size",
            "4TB",
            "--layouts",
            "btrfs-raid1,btrfs-raid10",
        ])
        .run()
        .stdout;
    let row = text
        .lines()
        .find(|l| l.starts_with("btrfs-raid1 "))
        .unwrap();
    assert!(row.ends_with("dominated by btrfs-raid10"), "{row}");
}

#[test]
fn the_controller_cap_binds_and_is_shown() {
    let doc = run_json(&with(
        POD,
        &["--cap-mbps", "1000", "--cap-iops", "3000", "--json"],
    ));
    let r6 = layout(&doc, "raid6");
    assert_eq!(r6["limits"]["seq_read"], "controller");
    assert_eq!(r6["limits"]["rand_read"], "controller");
    assert!((f(r6, "seq_read_mbps") - 1000.0).abs() < 1e-9);
    assert!((f(r6, "rand_write_iops") - 500.0).abs() < 1e-9); // 3000 / 6 disk IOs
    // A 45-disk parity rebuild moves 45 bytes per byte rebuilt: 1000/45 MB/s, 25 h for 2 TB.
    assert!((f(r6, "rebuild_mbps") - 1000.0 / 45.0).abs() < 1e-9);
    let text = Iolab::new()
        .args(with(POD, &["--cap-mbps", "1000"]))
        .run()
        .stdout;
    assert!(
        text.contains("1000*") && text.contains("* held by the controller cap"),
        "{text}"
    );
}

#[test]
fn help_cites_the_afr_source() {
    let text = Iolab::new().args(["plan", "--help"]).run().stdout;
    assert!(text.contains("Backblaze Drive Stats for 2024"), "{text}");
    assert!(text.contains("1.57%") && text.contains("--afr"), "{text}");
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, end to end, reads best as one story
fn impossible_inputs_give_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--disks", "3", "--disk-size", "2TB", "--layouts", "raid6"],
            "raid6 needs at least 4 disks",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--afr",
                "1.5",
            ],
            "--afr",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--afr",
                "150%",
            ],
            "--afr",
        ),
        (
            &["--disks", "45", "--disk-size", "-2TB", "--layouts", "raid6"],
            "--disk-size",
        ),
        (
            &["--disks", "-45", "--disk-size", "2TB", "--layouts", "raid6"],
            "--disks",
        ),
        (
            &["--disks", "45", "--disk-size", "2TB", "--layouts", "raid7"],
            "unknown level",
        ),
        (
            &[
                "--disks",
                "44",
                "--disk-size",
                "2TB",
                "--layouts",
                "3xraid6",
            ],
            "3 equal groups",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "btrfs-raid1+1spare",
            ],
            "no hot spares",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--ure",
                "2",
            ],
            "--ure",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--replace-time",
                "72",
            ],
            "needs a unit",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--chunk",
                "3000",
            ],
            "--chunk",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--years",
                "-1",
            ],
            "--years",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--disk-write-iops",
                "0",
            ],
            "--disk-write-iops",
        ),
        (
            &[
                "--disks",
                "45",
                "--disk-size",
                "2TB",
                "--layouts",
                "raid6",
                "--disk-from",
                "/nonexistent/run.json",
            ],
            "--disk-from",
        ),
    ];
    for (args, want) in cases {
        let out = Iolab::new().arg("plan").args(*args).run();
        let err = &out.stderr;
        assert_eq!(out.code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(
            err.starts_with("iolab: error: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed a result");
    }
}

/// The must-show: ZFS layouts beside md RAID6 on 12 x 16TB, with the capacities the
/// formulas of docs/plan-model.md give (spelled out in src/plan/zfs_tests.rs).
#[test]
fn zfs_layouts_on_twelve_16tb_disks() {
    let args: Vec<String> = [
        "plan",
        "--disks",
        "12",
        "--disk-size",
        "16TB",
        "--layouts",
        "raidz2,2xraidz2,6xmirror,draid2:8d:2s,raid6",
        "--format",
        "json",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect();
    let doc = run_json(&args);
    let usable = |n: &str| layout(&doc, n)["usable_bytes"].as_u64().unwrap();
    assert_eq!(usable("raidz2"), 146_123_786_389_016);
    assert_eq!(usable("2xraidz2"), 127_818_226_728_960);
    assert_eq!(usable("6xmirror"), 95_726_231_093_248);
    // Metaslabs cut to whole 40KiB stripes (src/plan/zfs_tests.rs).
    assert_eq!(usable("draid2:8d:2s"), 127_845_470_404_608);
    assert_eq!(layout(&doc, "raid6")["array_bytes"], 160_000_000_000_000u64);
    assert_eq!(usable("raid6"), 159_996_509_683_712);
    assert_eq!(
        layout(&doc, "raidz2")["zfs_list_bytes"].as_u64(),
        Some(146_088_078_082_048)
    );
    assert!(layout(&doc, "raid6")["zfs_list_bytes"].is_null());
    assert_eq!(layout(&doc, "draid2:8d:2s")["level"], "draid2:8d:2s");
    // A raidz vdev gives about one disk's random IOPS; six mirrors read from all 12 disks.
    assert_eq!(f(layout(&doc, "raidz2"), "rand_read_iops"), 120.0);
    assert_eq!(f(layout(&doc, "6xmirror"), "rand_read_iops"), 1440.0);
    // The resilver copies half a disk (--fill 50%): half of md's rebuild time.
    let hours = |n: &str| f(layout(&doc, n), "rebuild_hours");
    assert!((hours("raidz2") * 2.0 - hours("raid6")).abs() < 1e-6);
}

/// A format plan does not render is refused naming `--format` and the formats it has, exit 2,
/// never printed as the text table.
#[test]
fn a_format_plan_cannot_render_is_refused() {
    for f in ["csv", "html"] {
        let out = Iolab::new().args(with(POD, &["--format", f])).run();
        let (code, stdout, stderr) = out.parts();
        assert_eq!(code, 2, "{f}: {stderr}");
        assert!(stdout.is_empty(), "{f}: {stdout}");
        assert!(stderr.contains("--format"), "{f}: {stderr}");
        assert!(stderr.contains("text, md, json"), "{f}: {stderr}");
    }
}

/// `single` is one plain disk: its capacity is the filesystem's on it, it survives no
/// failure, and more than one disk is refused.
#[test]
fn a_single_plain_disk_is_a_layout() {
    let doc = run_json(&with(
        &[
            "plan",
            "--disks",
            "1",
            "--disk-size",
            "8TB",
            "--layouts",
            "single",
        ],
        &["--format", "json"],
    ));
    let s = layout(&doc, "single");
    assert_eq!(s["failures_tolerated"], 0);
    assert_eq!(
        s["usable_bytes"].as_u64(),
        Some(iolab::plan::usable::xfs_size(8_000_000_000_000))
    );
    let out = Iolab::new()
        .args([
            "plan",
            "--disks",
            "2",
            "--disk-size",
            "8TB",
            "--layouts",
            "single",
        ])
        .run();
    let (code, _, stderr) = out.parts();
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("single is one plain disk"), "{stderr}");
}
