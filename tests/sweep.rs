//! The answer of a sweep on this host: a btrfs layout varying its data profile and
//! its mount options on two loop disks is four layouts, and the lab's answer — the `sweeps` of
//! its JSON — has, per workload, a row for each of the four combinations with its figure and
//! interval, one marked best (and the others' ratio to it, `~` exactly where that ratio's
//! interval holds 1), and one sentence per varied key.

use std::path::Path;

mod common;
mod lab_world;
use lab_world::World;

const SPEC: &str = r#"
name = "btrfs-sweep"
[disks]
loop = { count = 2, size = "512MiB", dir = "DIR" }

[[layout]]
name = "b"
btrfs = { data = "raid1", metadata = "raid1", members = 2 }
vary = { "btrfs.data" = ["raid1", "raid0"], mount_options = ["noatime", "noatime,compress=zstd"] }

[workloads]
repeat = 3
[workloads.defaults]
size = "32MiB"
time = "300ms"
[[workloads.workload]]
name = "seq-write-1m"
pattern = "write"
bs = "1M"
[[workloads.workload]]
name = "rand-read-4k"
pattern = "randread"
bs = "4k"
"#;

#[test]
fn a_btrfs_sweep_answers_with_a_row_per_combination() {
    lab_world::require_lab!("losetup" => "mount", "mkfs.btrfs" => "btrfs-progs");
    let w = World::new("sweep");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("sweep.toml");
    std::fs::write(&spec, SPEC.replace("DIR", &w.disk_dir.to_string_lossy())).unwrap();
    let (out, v) = w.lab_json(Path::new(&spec), &[]);
    assert_eq!(
        out.code,
        0,
        "{}\n{}",
        out.stderr,
        World::layouts_summary(&v)
    );
    let names = [
        "b[data=raid1,mount_options=noatime]",
        "b[data=raid1,mount_options=noatime_compress_zstd]",
        "b[data=raid0,mount_options=noatime]",
        "b[data=raid0,mount_options=noatime_compress_zstd]",
    ];
    let sweeps = v["sweeps"].as_array().expect("a sweeps list");
    assert_eq!(sweeps.len(), 1, "{:#}", v["sweeps"]);
    let s = &sweeps[0];
    assert_eq!(s["layout"], "b");
    assert_eq!(s["keys"], serde_json::json!(["data", "mount_options"]));
    let combos: Vec<&str> = s["combinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(combos, names);
    let tables = s["tables"].as_array().unwrap();
    let workloads: Vec<&str> = tables
        .iter()
        .map(|t| t["workload"].as_str().unwrap())
        .collect();
    assert_eq!(workloads, ["seq-write-1m", "rand-read-4k"]);
    for t in tables {
        let entries = t["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 4, "{t:#}");
        let best = usize::try_from(t["best"].as_u64().expect("a best")).unwrap();
        let medians: Vec<f64> = entries
            .iter()
            .map(|e| {
                e["summary"]["median"]
                    .as_f64()
                    .expect("a figure per combination")
            })
            .collect();
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(e["summary"]["n"], 3, "three trials each: {e:#}");
            if i == best {
                assert!(e["vs_best"].is_null() && e["tie"] == true, "{e:#}");
                continue;
            }
            let r = &e["vs_best"];
            let ratio = r["value"].as_f64().unwrap();
            assert!((ratio - medians[i] / medians[best]).abs() < 1e-9, "{e:#}");
            // `~` exactly where the ratio's interval holds 1.
            let (lo, hi) = (
                r["ci"]["lo"].as_f64().unwrap(),
                r["ci"]["hi"].as_f64().unwrap(),
            );
            assert_eq!(e["tie"], lo <= 1.0 && 1.0 <= hi, "{e:#}");
        }
        // The best is the first-listed combination unless one is significantly better. The
        // fastest is the first of equal medians (two throttled combinations can tie exactly).
        let fastest = (0..4)
            .max_by(|&a, &b| medians[a].total_cmp(&medians[b]).then(b.cmp(&a)))
            .unwrap();
        if t["fastest"].is_null() {
            assert_eq!(best, fastest, "{t:#}");
        } else {
            assert_eq!(t["fastest"], fastest, "{t:#}");
            assert!(entries[fastest]["tie"] == true && best < fastest, "{t:#}");
        }
    }
    let sentences: Vec<&str> = s["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(sentences.len(), 2);
    assert!(sentences[0].starts_with("data raid"), "{sentences:?}");
    assert!(
        sentences[1].starts_with("mount_options noatime"),
        "{sentences:?}"
    );
    for line in &sentences {
        assert!(
            line.contains("seq-write-1m ") && line.contains("rand-read-4k "),
            "{line}"
        );
    }
}
