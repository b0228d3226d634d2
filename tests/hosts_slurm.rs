//! `iolab run --hosts` through Slurm, for real: Debian's slurmctld, a slurmd
//! per node (each node a network namespace) and munge, started by the test
//! (tests/common/slurm.rs) and stopped at its end, also when it fails. The agents are job
//! steps started by `srun`, as README's `--launch 'srun --nodelist={host} ...'` says, or by
//! `--hosts @slurm` inside an allocation (`salloc -N3 iolab run --hosts @slurm`).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::hosts::bin;
use common::slurm::{SlurmCluster, require_slurm};
use common::{Iolab, stored_statuses};

/// README's template, with this build's binary.
fn srun_launch() -> String {
    format!("srun --nodelist={{host}} -N1 -n1 {} agent --stdio", bin())
}

/// The job steps each node's slurmd launched (its log's `launch task StepId=...` lines).
fn launched_steps(c: &SlurmCluster, node: &str) -> usize {
    c.log(&format!("slurmd-{node}"))
        .matches("launch task StepId=")
        .count()
}

/// Waits until nothing of a run is left on the cluster: no job, no job step or task on any
/// node, no client (srun) of this cluster, every target empty.
fn assert_nothing_left(c: &SlurmCluster) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let jobs = c.jobs(None);
        let steps: Vec<String> = (0..c.nodes.len())
            .flat_map(|i| c.jobs_processes(i))
            .collect();
        let clients = c.clients();
        let files: Vec<String> = c
            .targets
            .iter()
            .flat_map(|t| std::fs::read_dir(t).expect("target").flatten())
            .map(|e| e.path().display().to_string())
            .collect();
        if jobs.is_empty() && steps.is_empty() && clients.is_empty() && files.is_empty() {
            return;
        }
        assert!(
            Instant::now() < end,
            "left after the run: jobs {jobs:?}, on the nodes {steps:?}, clients {clients:?}, files {files:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn srun_starts_the_agents_on_slurm_nodes_with_one_synced_start() {
    if !require_slurm() {
        return;
    }
    let c = SlurmCluster::new(3);
    let db = c.dir.path().join("iolab.db");
    let out = c
        .iolab()
        .db(&db)
        .args(["run", "--hosts", &c.hosts_arg(), "--launch", &srun_launch()])
        .args(["--pattern", "randread", "--bs", "4k", "--qd", "4"])
        .args([
            "--size", "16M", "--time", "2s", "--json", "--label", "slurm",
        ])
        .run();
    out.success();
    let doc = out.json();
    assert_eq!(doc["hosts_ok"], 3, "{doc}");
    let t = &doc["trials"][0];
    // Each agent ran as a job step on its own node: that node's slurmd launched it.
    for node in &c.nodes {
        assert_eq!(launched_steps(&c, node), 1, "{node}");
        assert!(
            c.log("slurmctld").contains(&format!("NodeList={node} ")),
            "no job on {node}"
        );
    }
    // One start for all: agents started by srun one after another (each srun takes ~0.1-0.2 s)
    // still began their trial together, within milliseconds.
    for r in t["hosts"].as_array().expect("rows") {
        let skew = r["skew_ns"].as_i64().expect("skew").unsigned_abs();
        assert!(skew < 20_000_000, "{}: skew {skew} ns", r["host"]);
        assert!(r["count"].as_u64().is_some_and(|n| n > 100), "{r}");
    }
    assert!(t["skew_max_ns"].as_u64().is_some_and(|s| s < 20_000_000));
    eprintln!(
        "srun start skew: median {} ns, max {} ns",
        t["skew_median_ns"], t["skew_max_ns"]
    );
    // Results stored: three host runs and the aggregate, whose count is their sum.
    assert_eq!(stored_statuses(&db), ["complete"; 4]);
    let counted: u64 = t["hosts"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(
        t["aggregate"]["figures"][0]["count"].as_u64(),
        Some(counted)
    );
    assert_nothing_left(&c);
}

#[test]
fn an_agent_cancelled_by_scancel_fails_its_host_and_nothing_is_left_running() {
    if !require_slurm() {
        return;
    }
    let c = SlurmCluster::new(3);
    let child = c
        .iolab()
        .args(["run", "--hosts", &c.hosts_arg(), "--launch", &srun_launch()])
        .args(["--on-host-failure", "continue", "--pattern", "randread"])
        .args(["--bs", "4k", "--qd", "2", "--size", "8M", "--time", "6s"])
        .args(["--json", "--no-save"])
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("controller starts");
    // n1's agent laid out its file; then the trial is under way.
    let end = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&c.targets[1]).expect("target").count() == 0 {
        assert!(Instant::now() < end, "n1 never laid out its file");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2500));
    let jobs = c.jobs(Some("n1"));
    assert_eq!(jobs.len(), 1, "one job on n1: {jobs:?}");
    let o = c.sh(&format!("scancel {}", jobs[0]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = child.wait_with_output().expect("controller ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Failed as the agent said, at once, not when it fell silent 10 s later.
    assert!(
        stderr.contains("host n1 failed: the agent was stopped by a signal on its host"),
        "{stderr}"
    );
    assert!(stderr.contains("aggregate covers 2 of 3"), "{stderr}");
    let doc = common::json(&stdout);
    assert!(doc["hosts"][1]["failed"].is_string(), "{doc}");
    let t = &doc["trials"][0];
    assert_eq!(t["aggregate"]["hosts_ok"], 2);
    assert!(t["hosts"][0]["count"].as_u64().is_some_and(|n| n > 0));
    assert!(t["hosts"][2]["count"].as_u64().is_some_and(|n| n > 0));
    assert_nothing_left(&c);
}

#[test]
fn at_slurm_inside_salloc_runs_on_every_node_of_the_allocation() {
    if !require_slurm() {
        return;
    }
    let c = SlurmCluster::new(3);
    // `iolab` is found on the jobs' PATH: the default template of @slurm runs it by name.
    let out = c
        .iolab()
        .no_db()
        .wrap("salloc", ["-N3"])
        .args(["run", "--hosts", "@slurm", "--target"])
        .arg(&c.targets[0])
        .args(["--pattern", "randread", "--size", "8M", "--time", "1s"])
        .args(["--json", "--no-save"])
        .run();
    out.success();
    let doc = out.json();
    let names: Vec<&str> = doc["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .map(|h| h["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["n0", "n1", "n2"]);
    assert_eq!(doc["hosts_ok"], 3, "{doc}");
    // One allocation of the three nodes, and a step of it on each.
    assert!(c.log("slurmctld").contains("NodeList=n[0-2]"));
    for node in &c.nodes {
        assert_eq!(launched_steps(&c, node), 1, "{node}");
    }
    assert_nothing_left(&c);
}

/// Outside an allocation `@slurm` is a one-line usage error saying how to get one.
#[test]
fn at_slurm_outside_an_allocation_says_how_to_get_one() {
    let out = Iolab::new()
        .env_remove("SLURM_JOB_NODELIST")
        .env_remove("SLURM_NODELIST")
        .args(["run", "--hosts", "@slurm", "--pattern", "read", "--no-save"])
        .run();
    out.code(2)
        .stderr_has("iolab: error: --hosts @slurm: not inside a Slurm allocation")
        .stderr_has("salloc -N4 iolab run --hosts @slurm");
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
}
