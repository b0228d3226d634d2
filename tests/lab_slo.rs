//! The lab's capacity under a latency target (issue 30): `[workloads] slo` gives every layout
//! its highest sustained rate meeting the target, healthy and with a member failed, in the
//! lab's JSON and as the table's CAPACITY@SLO column; bad SLO keys are refused in one line.

mod common;
mod lab_world;
use lab_world::World;

macro_rules! need_root_and_btrfs {
    () => {
        lab_world::require_lab!(
            "losetup" => "mount",
            "mkfs.btrfs" => "btrfs-progs",
            "btrfs" => "btrfs-progs",
            "wipefs" => "util-linux",
        );
    };
}

const WORKLOADS: &str = "[workloads]\nrepeat = 1\nslo = \"p99<=1s\"\nslo_precision = 0.5\nbudget = \"20s\"\n\
    [[workloads.workload]]\nname = \"rr\"\npattern = \"randread\"\nbs = \"4k\"\nqd = 4\ntime = \"250ms\"\nsize = \"32MiB\"\n";

fn spec(w: &World, workloads: &str) -> String {
    format!(
        "name = \"slo\"\n[disks]\nloop = {{ count = 2, size = \"512MiB\", dir = \"{}\" }}\n\
         [[layout]]\nname = \"btrfs-raid1\"\nbtrfs = {{ data = \"raid1\", metadata = \"raid1\", members = 2 }}\n\
         degrade = true\nrebuild = true\nduring_rebuild = true\n{workloads}",
        w.disk_dir.display()
    )
}

/// Issue 30: a lab with `[workloads] slo` reports each layout's capacity at the target,
/// healthy, degraded and during the rebuild, with the verdict and curve behind it, and the
/// table shows it.
#[test]
fn a_lab_slo_gives_each_layout_its_capacity_healthy_degraded_and_during_the_rebuild() {
    need_root_and_btrfs!();
    let w = World::new("lab-slo");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.toml");
    std::fs::write(&path, spec(&w, WORKLOADS)).unwrap();
    let (out, v) = w.lab_json(&path, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let l = &v["layouts"][0];
    assert_eq!(l["status"], "ok", "{l:#}");
    let s = &l["slo"][0];
    assert_eq!(s["workload"], "rr", "{l:#}");
    for state in ["healthy", "degraded", "rebuilding"] {
        let c = &s[state];
        assert_eq!(c["targets"], "p99<=1s", "{state}: {c:#}");
        // A RAM-backed loop device meets a 1 s p99 at any rate it sustains: the answer is
        // the peak, or (an open loop at the closed-loop peak falls a few % short) the highest
        // sustained rate below it — on a quiet machine at least the tenth of the peak the
        // search starts from; when other processes hold the CPUs, that rate too can miss its
        // schedule and the search goes below it (seen: 5,465 against a peak of 72,884).
        let verdict = c["verdict"].as_str().unwrap();
        assert!(
            verdict == "met_at_peak" || verdict == "capacity",
            "{state}: {c:#}"
        );
        let cap = c["capacity"].as_f64().unwrap();
        let peak = c["peak"].as_f64().unwrap();
        assert!(
            cap >= peak / 100.0 && cap <= peak * 1.01,
            "{state}: capacity {cap}, peak {peak}"
        );
        let lowest = &c["curve"][0];
        assert_eq!(lowest["meets"], true, "{state}: {c:#}");
        assert!(
            c["curve"].as_array().unwrap().len() >= 2,
            "{state}: the curve holds the rates tried: {c:#}"
        );
    }
    let lab_id = v["lab_id"].as_str().unwrap().to_string();
    w.assert_clean(&lab_id);
    // The table: one more column, its cell healthy / degraded, the sentences below.
    let out = w.iolab().args(["lab", path.to_str().unwrap()]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("CAPACITY@SLO"), "{}", out.stdout);
    assert!(out.stdout.contains(" / deg "), "{}", out.stdout);
    assert!(out.stdout.contains(" / rebuild "), "{}", out.stdout);
    assert!(
        out.stdout.contains("btrfs-raid1 during the rebuild, rr: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("btrfs-raid1 degraded, rr: ")
            && out.stdout.contains("btrfs-raid1 healthy, rr: "),
        "{}",
        out.stdout
    );
}

/// Issue 30: an SLO that cannot be parsed, or a budget without one, is one line naming the
/// key, exit 2, nothing built.
#[test]
fn bad_lab_slo_keys_are_one_line_naming_the_key() {
    let w = World::new("lab-slo-bad");
    let dir = tempfile::tempdir().unwrap();
    for (workloads, key) in [
        ("[workloads]\nslo = \"p99<=\"\n", "workloads.slo"),
        (
            "[workloads]\nslo = \"p99<=5ms\"\nslo_precision = 2.0\n",
            "workloads.slo",
        ),
        ("[workloads]\nbudget = \"1m\"\n", "workloads"),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, spec(&w, workloads)).unwrap();
        let out = w.iolab().args(["lab", path.to_str().unwrap()]).run();
        assert_eq!(out.code, 2, "{workloads}: {}", out.stderr);
        let err = out.stderr.trim();
        assert_eq!(err.lines().count(), 1, "{workloads}: {err}");
        assert!(err.contains(key), "{workloads}: {err}");
        assert!(w.our_loops().is_empty(), "{workloads}: built something");
    }
}
