//! Built once, re-tuned: a sweep over a runtime tunable (here the read-ahead of the device an
//! xfs sits on) builds its first combination, runs it, and for the next only sets the new
//! read-ahead on the same build (one mkfs for both); a sweep that also varies a build-time
//! key (mount options) builds anew where that key changes. On one loop disk on this host.

use std::path::Path;

use serde_json::Value;

mod common;
mod lab_world;
use lab_world::World;

const WORKLOADS: &str = r#"
[workloads]
repeat = 3
[workloads.defaults]
size = "32MiB"
time = "300ms"
[[workloads.workload]]
name = "seq-read-1m"
pattern = "read"
bs = "1M"
"#;

/// Runs the lab of one xfs layout over one loop disk with `vary`; returns the world (for the
/// clean-up checks), the report and the lab id.
fn sweep(tag: &str, vary: &str) -> (World, Value) {
    let w = World::new(tag);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("retune.toml");
    let text = format!(
        "name = \"retune\"\n[disks]\nloop = {{ count = 1, size = \"512MiB\", dir = \"{}\" }}\n\n[[layout]]\nname = \"x\"\nfs = \"xfs\"\nvary = {vary}\n{WORKLOADS}",
        w.disk_dir.display()
    );
    std::fs::write(&spec, text).unwrap();
    let (out, v) = w.lab_json(Path::new(&spec), &[]);
    assert_eq!(
        out.code,
        0,
        "{}\n{}",
        out.stderr,
        World::layouts_summary(&v)
    );
    (w, v)
}

/// Each layout's commands, as strings.
fn commands(l: &Value) -> Vec<&str> {
    l["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect()
}

/// How many of the commands of `ls` start with `prefix`.
fn count(ls: &[Value], prefix: &str) -> usize {
    ls.iter()
        .flat_map(commands)
        .filter(|c| c.starts_with(prefix))
        .count()
}

/// The stored record of layout `name`'s run.
fn stored(w: &World, v: &Value, name: &str) -> Value {
    let run = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["layout"] == name)
        .unwrap_or_else(|| panic!("no run of {name}: {:#}", v["runs"]));
    let o = w
        .iolab()
        .args(["show", run["run_id"].as_str().unwrap(), "--json"])
        .run();
    o.success();
    let rec: Value = serde_json::from_str(&o.stdout).unwrap();
    rec["layout"].clone()
}

#[test]
fn a_read_ahead_sweep_is_built_once_and_re_tuned() {
    lab_world::require_lab!("losetup" => "mount", "mkfs.xfs" => "xfsprogs", "blockdev" => "util-linux");
    let (w, v) = sweep("retune", r#"{ read_ahead = ["128KiB", "4MiB"] }"#);
    let ls = v["layouts"].as_array().unwrap();
    let names: Vec<&str> = ls.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["x[read_ahead=128KiB]", "x[read_ahead=4MiB]"]);
    for l in ls {
        assert_eq!(l["status"], "ok", "{l:#}");
    }
    // The first is built; the second runs on its build, re-tuned.
    assert!(ls[0]["reused_build_of"].is_null(), "{:#}", ls[0]);
    assert!(ls[0]["build_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(ls[1]["reused_build_of"], "x[read_ahead=128KiB]");
    assert!(ls[1]["build_seconds"].is_null(), "{:#}", ls[1]);
    assert_eq!(count(ls, "mkfs."), 1, "{ls:#?}");
    assert_eq!(count(ls, "losetup --find"), 1);
    assert_eq!(count(ls, "mount "), 1);
    assert_eq!(count(ls, "umount "), 1);
    // The re-tuned layout's commands: the tuning, its read-back, and the teardown after the
    // last layout on the build.
    let second = commands(&ls[1]);
    assert!(
        second[0].starts_with("blockdev --setra 8192 /dev/loop"),
        "{second:?}"
    );
    assert!(
        second[1].starts_with("blockdev --getra /dev/loop"),
        "{second:?}"
    );
    assert!(
        second[2..]
            .iter()
            .all(|c| c.starts_with("umount ") || c.starts_with("losetup -d ")),
        "{second:?}"
    );
    // What the device held when the workloads ran, read back: 128KiB and 4MiB in sectors.
    assert_eq!(ls[0]["read_ahead_sectors"], 256, "{:#}", ls[0]);
    assert_eq!(ls[1]["read_ahead_sectors"], 8192, "{:#}", ls[1]);
    // Both combinations have their figures, three trials each.
    let entries = v["sweeps"][0]["tables"][0]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{:#}", v["sweeps"]);
    for e in entries {
        assert_eq!(e["summary"]["n"], 3, "{e:#}");
        assert!(e["summary"]["median"].as_f64().unwrap() > 0.0, "{e:#}");
    }
    // The stored records say it too.
    let first = stored(&w, &v, "x[read_ahead=128KiB]");
    let again = stored(&w, &v, "x[read_ahead=4MiB]");
    assert!(first.get("reused_build_of").is_none(), "{first:#}");
    assert_eq!(
        again["reused_build_of"], "x[read_ahead=128KiB]",
        "{again:#}"
    );
    assert_eq!(again["read_ahead_sectors"], 8192, "{again:#}");
    assert_eq!(again["stack"][1]["read_ahead"], 4 << 20, "{again:#}");
    w.assert_clean(v["lab_id"].as_str().unwrap());
}

#[test]
fn a_build_time_key_in_the_sweep_is_rebuilt() {
    lab_world::require_lab!("losetup" => "mount", "mkfs.xfs" => "xfsprogs", "blockdev" => "util-linux");
    let (w, v) = sweep(
        "rebuild",
        r#"{ mount_options = ["noatime", "relatime"], read_ahead = ["128KiB", "4MiB"] }"#,
    );
    let ls = v["layouts"].as_array().unwrap();
    let shown: Vec<(&str, Option<&str>, u64)> = ls
        .iter()
        .map(|l| {
            assert_eq!(l["status"], "ok", "{l:#}");
            (
                l["name"].as_str().unwrap(),
                l["reused_build_of"].as_str(),
                l["read_ahead_sectors"].as_u64().unwrap(),
            )
        })
        .collect();
    let a = "x[mount_options=noatime,read_ahead=128KiB]";
    let c = "x[mount_options=relatime,read_ahead=128KiB]";
    assert_eq!(
        shown,
        [
            (a, None, 256),
            ("x[mount_options=noatime,read_ahead=4MiB]", Some(a), 8192),
            (c, None, 256),
            ("x[mount_options=relatime,read_ahead=4MiB]", Some(c), 8192),
        ]
    );
    // Where the mount options change, a new build: two of everything for four layouts.
    assert_eq!(count(ls, "mkfs."), 2, "{ls:#?}");
    assert_eq!(count(ls, "losetup --find"), 2);
    assert!(commands(&ls[2]).iter().any(|c| c.starts_with("mkfs.xfs")));
    assert!(
        commands(&ls[2])
            .iter()
            .any(|c| c.starts_with("mount -t xfs -o relatime")),
        "{:?}",
        commands(&ls[2])
    );
    w.assert_clean(v["lab_id"].as_str().unwrap());
}
