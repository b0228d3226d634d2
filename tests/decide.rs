//! The decision end to end: a real lab on loop disks with a `[decide]` table ends
//! with the decision table and its JSON; `iolab decide LAB` decides the stored lab again with
//! other needs without re-running; `iolab report --lab` opens with the decision; needs the lab
//! cannot answer are one line naming the field, exit 2, nothing built.

mod common;
use common::decision::{missed_needs, row};
mod lab_world;
use lab_world::World;
use serde_json::Value;

macro_rules! need_root_and_btrfs {
    () => {
        lab_world::require_lab!(
            "losetup" => "mount",
            "mkfs.btrfs" => "btrfs-progs",
            "btrfs" => "btrfs-progs",
            "mkfs.xfs" => "xfsprogs",
            "wipefs" => "util-linux",
        );
    };
}

/// Three layouts of five 512 MiB disks decided for 8 TB disks: btrfs raid1 on 2 (about one
/// disk usable: ~7 TB), btrfs raid10 on 4 (two disks: ~14 TB), xfs on one disk (~8 TB, no
/// redundancy: 1 - 0.9843^5 = 7.6% over five years). At least 10 TB and at most 5% over five
/// years leaves raid10 alone. Enterprise disks (1e-15 per bit): a mirror's rebuild reads one
/// 8 TB disk with nothing left to correct, 6.2% of the time, so raid1 loses data ~1% in five
/// years and raid10 (twice the disks to fail first) ~2%.
fn spec(w: &World, decide: &str) -> String {
    format!(
        "name = \"decide\"\n[disks]\nloop = {{ count = 5, size = \"512MiB\", dir = \"{}\" }}\n\
         [[layout]]\nname = \"btrfs-raid1\"\nbtrfs = {{ data = \"raid1\", metadata = \"raid1\", members = 2 }}\n\
         degrade = true\nrebuild = true\nfill = \"64MiB\"\n\
         [[layout]]\nname = \"btrfs-raid10\"\nbtrfs = {{ data = \"raid10\", metadata = \"raid10\", members = 4 }}\n\
         degrade = true\nrebuild = true\nfill = \"64MiB\"\n\
         [[layout]]\nname = \"xfs-single\"\nfs = \"xfs\"\n\
         [workloads]\nrepeat = 2\n\
         [[workloads.workload]]\nname = \"sw\"\npattern = \"write\"\nbs = \"1M\"\nqd = 4\ntime = \"300ms\"\nsize = \"32MiB\"\n\
         {decide}",
        w.disk_dir.display()
    )
}

const DECIDE: &str = "[decide]\ndisk_size = \"8TB\"\nmin_usable = \"10TB\"\nmax_loss_5y = \"5%\"\nure = \"enterprise\"\n";

/// The median write MB/s the lab measured on its single-disk layout.
fn x_write_mbps(v: &Value) -> f64 {
    let r = row(&v["decision"], "xfs-single");
    r["speed"]["figure"]["value"].as_f64().unwrap()
}

fn decide_json(w: &World, args: &[&str]) -> Value {
    let out = w
        .iolab()
        .arg("decide")
        .args(args)
        .args(["--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// A lab with needs ends with its decision — figures scaled to the real disks and
/// labelled, rejections naming the need, the recommendation; `iolab decide` re-decides the
/// stored lab with other needs; the HTML report opens with the decision.
#[test]
#[allow(clippy::too_many_lines)] // one lab, decided three ways, reads best as one story
fn a_lab_decides_at_its_end_and_again_from_the_store() {
    need_root_and_btrfs!();
    let w = World::new("decide");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.toml");
    std::fs::write(&path, spec(&w, DECIDE)).unwrap();
    let (out, v) = w.lab_json(&path, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lab_id = v["lab_id"].as_str().unwrap().to_string();
    w.assert_clean(&lab_id);
    let d = &v["decision"];
    assert_eq!(d["recommended"], "btrfs-raid10", "{d:#}");
    let r10 = row(d, "btrfs-raid10");
    let usable = &r10["usable"];
    // Built again here on sparse files of 8 TB: what btrfs reports there.
    assert_eq!(usable["source"], "measured", "{r10:#}");
    let u = usable["value"].as_f64().unwrap();
    assert!(u > 10e12 && u < 16.2e12, "raid10 usable {u}");
    let rebuild = &r10["rebuild"];
    assert_eq!(rebuild["source"], "scaled", "{r10:#}");
    assert!(
        rebuild["basis"]
            .as_str()
            .unwrap()
            .contains("MB/s per member"),
        "{rebuild:#}"
    );
    assert_eq!(r10["loss_5y"]["source"], "modelled");
    assert_eq!(r10["speed"]["figure"]["source"], "measured");
    assert_eq!(r10["integrity"], "verified");
    let r1 = row(d, "btrfs-raid1");
    assert_eq!(r1["misses"][0]["need"], "min_usable", "{r1:#}");
    assert!(
        r1["misses"][0]["reason"]
            .as_str()
            .unwrap()
            .ends_with("< 10.00TB"),
        "{r1:#}"
    );
    let x = row(d, "xfs-single");
    let needs = missed_needs(x);
    assert_eq!(needs, ["min_usable", "max_loss_5y"], "{x:#}");
    assert!(x["rebuild"].is_null(), "no redundancy, no rebuild: {x:#}");
    assert!(
        d["sentence"]
            .as_str()
            .unwrap()
            .starts_with("btrfs-raid10 is recommended; meets usable "),
        "{d:#}"
    );
    // The table at the end of a lab run says the same.
    let out = w.iolab().args(["decide", &lab_id]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("RECOMMENDED"), "{}", out.stdout);
    assert!(out.stdout.contains("rejected: usable "), "{}", out.stdout);
    // Other needs, no re-run: 5 TB lets raid1 in, and the safer of the two wins.
    let d = decide_json(&w, &[&lab_id, "--min-usable", "5TB"]);
    assert_eq!(d["recommended"], "btrfs-raid1", "{d:#}");
    assert_eq!(d["runner_up"], "btrfs-raid10", "{d:#}");
    assert_eq!(row(&d, "xfs-single")["misses"][0]["need"], "max_loss_5y");
    // 20 TB: nothing qualifies; raid10 is the closest, by capacity alone.
    let d = decide_json(&w, &["last", "--min-usable", "20TB"]);
    assert!(d["recommended"].is_null(), "{d:#}");
    assert_eq!(d["relax"][0]["need"], "min_usable", "{d:#}");
    assert_eq!(d["relax"][0]["layout"], "btrfs-raid10", "{d:#}");
    assert!(
        d["sentence"]
            .as_str()
            .unwrap()
            .starts_with("No layout meets every need; relax min_usable from 20.00TB to "),
        "{d:#}"
    );
    // A need the lab cannot answer: one line naming it, exit 2.
    for (args, field) in [
        (vec!["--min", "nosuch=1MB/s"], "min.nosuch"),
        (vec!["--max-loss-5y", "150%"], "--max-loss-5y"),
        (vec!["--min-capacity-at-slo", "100"], "min_capacity_at_slo"),
    ] {
        let out = w.iolab().arg("decide").arg(&lab_id).args(&args).run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let err = out.stderr.trim();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(field), "{args:?}: {err}");
    }
    // `iolab plan --from-lab`: the planner calibrated from this lab: the per-disk
    // write speed of its single-disk layout, the rebuild rate per member of its two btrfs
    // rebuilds; the lab measured no reads, so those are asked for by name, then given.
    let out = w
        .iolab()
        .args([
            "plan",
            "--disks",
            "12",
            "--disk-size",
            "8TB",
            "--layouts",
            "raid6",
        ])
        .args(["--from-lab", &lab_id])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    let err = out.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--from-lab") && err.contains("single-disk layout has no"),
        "{err}"
    );
    let out = w
        .iolab()
        .args([
            "plan",
            "--disks",
            "12",
            "--disk-size",
            "8TB",
            "--layouts",
            "raid6",
        ])
        .args(["--from-lab", &lab_id, "--json"])
        .args(["--disk-read-mbps", "200", "--disk-read-iops", "150"])
        .args(["--disk-write-iops", "150"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    let inputs = &plan["inputs"];
    let source = inputs["disk_source"].as_str().unwrap();
    assert!(
        source.contains(&format!(
            "measured in lab {lab_id} on its layout xfs-single"
        )),
        "{source}"
    );
    assert!(
        source.contains("rebuild ") && source.contains("the median of 2 rebuilds measured in lab"),
        "{source}"
    );
    let measured = x_write_mbps(&v);
    let used = inputs["disk"]["seq_write_mbps"].as_f64().unwrap();
    assert!(
        (used / measured - 1.0).abs() < 0.25,
        "plan uses {used} MB/s, the lab's xfs-single wrote {measured}"
    );
    assert!(
        inputs["rebuild"]
            .to_string()
            .to_lowercase()
            .contains("mbps"),
        "{inputs:#}"
    );

    // The HTML report opens with the decision.
    let html = dir.path().join("lab.html");
    let out = w
        .iolab()
        .args(["report", "--lab", &lab_id, "-o"])
        .arg(&html)
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    let (dec, sum) = (
        page.find("<section id=\"decision\">")
            .expect("decision section"),
        page.find("<section id=\"summary\">").unwrap(),
    );
    assert!(dec < sum, "the decision comes first");
    assert!(page.contains("btrfs-raid10</b> <span class=\"u\">recommended"));
    assert!(page.contains("<del>xfs-single</del>"));
}

/// The needs a decision row misses from index `from` on, as named.
fn loss_needs(row: &serde_json::Value, from: usize) -> Vec<String> {
    row["misses"].as_array().unwrap()[from..]
        .iter()
        .map(|m| m["need"].as_str().unwrap().to_string())
        .collect()
}

/// What a layout that lost data must miss, worked out from its integrity record: files lost
/// to read errors (or gone) keep the integrity verdict's rejection; files handed back wrong
/// with no error — btrfs RAID5/6 hands some back as zeroes, see docs/lab.md — are silent
/// corruption, rejected by that reason. Either or both, as the lab saw them.
fn lost_for(v: &serde_json::Value, name: &str) -> Vec<String> {
    let l = v["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap();
    let silent = l["integrity"]["verdict"]["silent"].as_u64().unwrap_or(0);
    let unreadable = l["integrity"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["read_errors"].as_u64().unwrap() + s["missing"].as_u64().unwrap())
        .max()
        .unwrap_or(0);
    let mut needs = Vec::new();
    if silent == 0 || unreadable > 0 {
        needs.push("integrity".to_string());
    }
    if silent > 0 {
        needs.push("silent_corruption".to_string());
    }
    needs
}

/// The parity profiles on the host: btrfs raid5 over three disks and raid6 over four
/// both give two disks of space (~16 TB at 8 TB), but with consumer disks (1e-14 URE) raid5's
/// rebuild reads 16 TB with nothing left to correct a bad sector (1 - e^-1.28 = 72%), so its
/// five-year loss is far above 5% and raid6 is the answer.
#[test]
fn btrfs_raid5_and_raid6_on_the_host_are_decided_on_risk() {
    need_root_and_btrfs!();
    let w = World::new("decide56");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.toml");
    let spec = format!(
        "name = \"decide-parity\"\n[disks]\nloop = {{ count = 4, size = \"512MiB\", dir = \"{}\" }}\n\
         [[layout]]\nname = \"btrfs-raid5\"\nbtrfs = {{ data = \"raid5\", metadata = \"raid1\", members = 3 }}\n\
         degrade = true\nrebuild = true\nfill = \"32MiB\"\n\
         [[layout]]\nname = \"btrfs-raid6\"\nbtrfs = {{ data = \"raid6\", metadata = \"raid1c3\", members = 4 }}\n\
         degrade = true\nrebuild = true\nfill = \"32MiB\"\n\
         [workloads]\nrepeat = 1\n\
         [[workloads.workload]]\nname = \"sw\"\npattern = \"write\"\nbs = \"1M\"\nqd = 4\ntime = \"300ms\"\nsize = \"32MiB\"\n\
         [decide]\ndisk_size = \"8TB\"\nmin_usable = \"10TB\"\nmax_loss_5y = \"5%\"\nure = \"consumer\"\n",
        w.disk_dir.display()
    );
    std::fs::write(&path, spec).unwrap();
    let (out, v) = w.lab_json(&path, &[]);
    // btrfs raid5 sometimes loses a file written while degraded (seen about one lab in twelve
    // under load on 6.18: EIO reading it back degraded, uncorrectable checksum errors after the
    // replace). raid6 does too, more rarely: under load a file written while healthy reads back
    // as zeros from both parities once one member is gone (kernel: `csum failed ... mirror 2`
    // and `mirror 3`, the csum of a zeroed block; seen in CI and in 3 raid6 labs of 70 here
    // under load, never on a quiet machine) — btrfs RAID56 is still marked unsafe by its
    // manual. Either is the layout's defect, which the lab must report as data loss, exit 1
    // for, and the decision must not recommend; iolab must never call a loss verified.
    let verdict = |name: &str| {
        v["layouts"].as_array().and_then(|ls| {
            ls.iter()
                .find(|l| l["name"] == name)
                .map(|l| l["integrity"]["verdict"]["kind"].clone())
        })
    };
    let lost: Vec<&str> = ["btrfs-raid5", "btrfs-raid6"]
        .into_iter()
        .filter(|n| verdict(n) == Some(serde_json::json!("data_loss")))
        .collect();
    eprintln!("lost data: {lost:?}");
    let (raid5_lost, raid6_lost) = (lost.contains(&"btrfs-raid5"), lost.contains(&"btrfs-raid6"));
    let summary = World::layouts_summary(&v);
    assert_eq!(
        out.code,
        i32::from(raid5_lost || raid6_lost),
        "{}\n{summary}",
        out.stderr
    );
    for name in ["btrfs-raid5", "btrfs-raid6"] {
        assert!(
            lost.contains(&name) || verdict(name) == Some(serde_json::json!("verified")),
            "{name} must be verified or data loss: {summary}"
        );
    }
    let lab_id = v["lab_id"].as_str().unwrap().to_string();
    w.assert_clean_but_evidence(&lab_id, &lost);
    let d = &v["decision"];
    let (r5, r6) = (row(d, "btrfs-raid5"), row(d, "btrfs-raid6"));
    if raid6_lost {
        // Nothing qualifies: raid5 misses on risk, raid6 on what it lost.
        assert_eq!(d["recommended"], serde_json::Value::Null, "{d:#}");
        assert_eq!(loss_needs(r6, 0), lost_for(&v, "btrfs-raid6"), "{r6:#}");
    } else {
        assert_eq!(d["recommended"], "btrfs-raid6", "{d:#}");
    }
    for r in [r5, r6] {
        let u = r["usable"]["value"].as_f64().unwrap();
        assert!(u > 10e12 && u < 16.2e12, "usable {u}: {r:#}");
        assert_eq!(r["rebuild"]["source"], "scaled", "{r:#}");
        assert_eq!(r["speed"]["figure"]["source"], "measured", "{r:#}");
    }
    assert_eq!(r5["misses"][0]["need"], "max_loss_5y", "{r5:#}");
    if raid5_lost {
        assert_eq!(loss_needs(r5, 1), lost_for(&v, "btrfs-raid5"), "{r5:#}");
    }
    let (l5, l6) = (
        r5["loss_5y"]["value"].as_f64().unwrap(),
        r6["loss_5y"]["value"].as_f64().unwrap(),
    );
    assert!(
        l5 > 0.05 && l6 < 0.05 && l5 > 10.0 * l6,
        "raid5 {l5}, raid6 {l6}"
    );
    // The rejection turns on the URE. Three disks at 1.57% see a first failure at
    // 0.0475 a year; the rebuild then reads 16 TB = 1.28e14 bits: at 1e-15 one unreadable
    // sector in eight, 2.8% in five years, under the 5% need. The need is met below
    // p = 0.216, URE = -ln(1 - 0.216) / 1.28e14 = 1.9e-15: the decision says so.
    if !raid5_lost {
        let flips = d["flips"].as_array().expect("flips");
        let f = flips
            .iter()
            .find(|f| f["layout"] == "btrfs-raid5")
            .unwrap_or_else(|| panic!("no flip for raid5: {d:#}"));
        assert_eq!(f["input"], "ure", "{f:#}");
        assert_eq!(f["then"], "qualifies", "{f:#}");
        let at = f["flips_at"].as_f64().unwrap();
        assert!((1.5e-15..2.5e-15).contains(&at), "{f:#}");
        let line = d["turns_on"].as_str().expect("turns_on");
        eprintln!("raid5 loss 5y {l5:.3}: {line}");
        assert!(
            line.contains("btrfs-raid5 qualifies at URE below"),
            "{line}"
        );
        assert!(flips.iter().all(|f| f["layout"] != "btrfs-raid6"), "{d:#}");
    }
}

/// A `[decide]` table the lab cannot answer is refused before anything is built,
/// one line naming the key.
#[test]
fn bad_decide_keys_are_one_line_naming_the_key() {
    let w = World::new("decide-bad");
    let dir = tempfile::tempdir().unwrap();
    for (decide, key) in [
        (
            "[decide]\nmin = { nosuch = \"1MB/s\" }\n",
            "decide.min.nosuch",
        ),
        ("[decide]\nmin = { sw = \"2000IOPS\" }\n", "decide.min.sw"),
        ("[decide]\nmax_loss_5y = \"lots\"\n", "decide.max_loss_5y"),
        (
            "[decide]\nmin_capacity_at_slo = 100\n",
            "decide.min_capacity_at_slo",
        ),
        ("[decide]\nprefer = \"cheap\"\n", "decide.prefer"),
        ("[decide]\nmin_usuable = \"1TB\"\n", "min_usuable"),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, spec(&w, decide)).unwrap();
        let out = w.iolab().args(["lab", path.to_str().unwrap()]).run();
        assert_eq!(out.code, 2, "{decide}: {}", out.stderr);
        let err = out.stderr.trim();
        assert_eq!(err.lines().count(), 1, "{decide}: {err}");
        assert!(err.contains(key), "{decide}: {err}");
        assert!(w.our_loops().is_empty(), "{decide}: built something");
    }
    // The same through the flags of `iolab lab`.
    let path = dir.path().join("ok.toml");
    std::fs::write(&path, spec(&w, "")).unwrap();
    let out = w
        .iolab()
        .args(["lab", path.to_str().unwrap(), "--min", "nosuch=4"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("decide.min.nosuch"), "{}", out.stderr);
}

/// A lab's layout as the store keeps it: md `level` over 3 disks, healthy, its integrity
/// verdict, and one corrupt fault that returned `silent` files wrong without an error.
fn stored_layout(name: &str, level: &str, silent: u64) -> iolab::sample::LayoutRecord {
    use iolab::sample::fault_outcome::FaultOutcome;
    use iolab::sample::layout_record::{Capacity, IntegrityRecord, Layer, Phase};
    iolab::sample::LayoutRecord {
        name: Some(name.into()),
        lab: Some("rot".into()),
        description: Some(format!("md {level} x3 > xfs")),
        stack: vec![Layer::Md {
            level: level.into(),
            members: 3,
            spares: 0,
            chunk_bytes: None,
            bitmap: None,
            bitmap_chunk_bytes: None,
            consistency_policy: None,
            stripe_cache_size: None,
            group_thread_cnt: None,
        }],
        phase: Some(Phase::Healthy),
        capacity: Capacity {
            usable_bytes: Some(2 << 30),
            ..Capacity::default()
        },
        integrity: Some(IntegrityRecord {
            verdict: if silent > 0 {
                format!(
                    "DATA LOSS ({silent} file, 8 scrub errors; {silent} silently wrong: wrong bytes, no error)"
                )
            } else {
                "verified".into()
            },
            detail: None,
        }),
        faults: vec![FaultOutcome {
            kind: "corrupt".into(),
            files: 40,
            intact: 40 - silent,
            silently_wrong: silent,
            md_mismatch_cnt: Some(8 * silent),
            ..FaultOutcome::default()
        }],
        ..iolab::sample::LayoutRecord::default()
    }
}

/// The fault outcomes kept with a lab's runs reach `iolab decide LAB`: md RAID5,
/// which handed back a file wrong without an error, is rejected for silent corruption with
/// its reason; `--accept silent-corruption` lets it qualify. Runs stored as the lab stores
/// them, so no lab (and no VM, where md runs) is needed to ask again.
#[test]
fn a_stored_layout_that_returned_wrong_bytes_silently_is_rejected_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("iolab.db");
    let mut store = iolab::store::Store::open(&db).unwrap();
    for (name, level, silent) in [("md-raid5", "raid5", 1), ("md-raid6", "raid6", 0)] {
        let mut rec = common::records::record(Some(name), &[1000.0, 1010.0, 990.0]);
        rec.lab_id = Some("lab-rot".into());
        rec.layout = Some(stored_layout(name, level, silent));
        common::records::store_like_run_loop(&mut store, &rec);
    }
    drop(store);
    let decide = |extra: &[&str]| -> Value {
        let mut args = vec!["decide", "lab-rot", "--format", "json"];
        args.extend(extra);
        common::Iolab::new()
            .db(&db)
            .args(args)
            .run()
            .success()
            .json()
    };
    let d = decide(&[]);
    let r5 = row(&d, "md-raid5");
    assert_eq!(missed_needs(r5), ["silent_corruption"], "{r5:#}");
    assert_eq!(
        r5["misses"][0]["reason"],
        "silent corruption: 1 file silently wrong under a corrupt fault (md raid5 x3)"
    );
    assert_eq!(d["recommended"], "md-raid6", "{d:#}");
    let d = decide(&["--accept", "silent-corruption"]);
    assert!(missed_needs(row(&d, "md-raid5")).is_empty(), "{d:#}");

    let (code, _, se) = common::Iolab::new()
        .db(&db)
        .args(["decide", "lab-rot", "--accept", "bitrot"])
        .run()
        .parts();
    assert_eq!(code, 2, "{se}");
    assert!(
        se.contains("--accept: 'bitrot' is not a loss one can accept (known: silent-corruption)"),
        "{se}"
    );
}
