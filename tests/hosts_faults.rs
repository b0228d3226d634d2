//! Faults in a many-host run (`iolab run --hosts`) over real ssh: the controller SIGKILLed at
//! each of its steps (`IOLAB_PAUSE_AT`, src/pause.rs), and one agent SIGKILLed mid-trial.
//!
//! After the controller dies, every agent must stop on its stdin EOF (the dead-man switch) and
//! remove its test file; `iolab run --cleanup` must then remove the ssh masters that
//! `ControlPersist` keeps up and their control-socket directory; the local store must be sound.
//!
//! The hosts are tests/common/hosts.rs's `NetHosts` (network namespaces, each with a veth pair
//! and its own sshd), shared with tests/hosts.rs.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::hosts::{NetHosts, bin, processes_naming, require_hosts, sh_ok};
use common::{Iolab, Paused, disk_tmpdir, stored_statuses};

/// The controller's directory of ssh control sockets (`iolab-ssh-PID-*` in the temp dir).
fn control_dir(controller: u32) -> Option<PathBuf> {
    let prefix = format!("iolab-ssh-{controller}-");
    std::fs::read_dir(std::env::temp_dir())
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
}

/// The pushed copy agent `pid` runs from (the hosts' /tmp is this machine's), checked to be
/// a `--push` copy that is already deleted.
fn pushed_exe(pid: u32) -> PathBuf {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("the agent's binary");
    let s = exe.to_string_lossy().into_owned();
    assert!(s.starts_with("/tmp/iolab-push-"), "not a pushed copy: {s}");
    assert!(
        s.ends_with(" (deleted)"),
        "the agent did not delete its copy: {s}"
    );
    PathBuf::from(s.trim_end_matches(" (deleted)"))
}

/// Waits up to `secs` for `f` to hold.
fn eventually(secs: u64, f: impl Fn() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// Kills the controller of a 2-host run over ssh at each of its steps.
/// The two tests' `--cleanup` sweeps, one at a time.
static SWEEP: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_hosts_controller_killed_at_every_step_leaves_nothing() {
    if !require_hosts() {
        return;
    }
    // `run --cleanup` sweeps every dead controller's ssh directory in /tmp: one test's sweep
    // would take the other's (and it would then not see its own named).
    let _one = SWEEP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let h = NetHosts::new(2);
    let db = h.dir.path().join("hosts.db");
    let empty = disk_tmpdir("iolab-hostsf-cwd-");
    // (step, every host holds its test file while paused; `None`: it may be removed already,
    // the agent's suite having ended with the only trial)
    let steps = [
        ("hosts connected", Some(false)),
        ("hosts ready", Some(true)),
        ("hosts started", Some(true)),
        ("hosts collected", None),
    ];
    let mut survived = 0;
    for (step, laid_out) in steps {
        let cmd = Iolab::new()
            .db(&db)
            .args([
                "run",
                "--hosts",
                &h.hosts_arg(),
                "--launch",
                &h.launch("iolab agent --stdio"),
                "--push",
            ])
            .args(["--pattern", "randwrite", "--size", "8M", "--time", "1s"])
            .args(["--label", &format!("hk-{}", step.replace(' ', "-"))]);

        let mut p = Paused::spawn(cmd, step);
        if !p.wait_paused(step, 60) {
            p.signal("-KILL");
            panic!("never paused at {step}: {}", p.finish().1);
        }
        let controller = p.child.id();
        for i in 0..2 {
            assert_eq!(
                h.agents(i).len(),
                1,
                "{step}: host {i}'s agent while paused"
            );
            if let Some(want) = laid_out {
                assert_eq!(
                    !h.files_in(i).is_empty(),
                    want,
                    "{step}: host {i}: {:?}",
                    h.files_in(i)
                );
            }
        }
        // Each agent runs from a pushed copy that it already deleted (`--remove-self`).
        let pushed: Vec<PathBuf> = (0..2).flat_map(|i| h.agents(i)).map(pushed_exe).collect();
        let control = control_dir(controller).expect("the ssh control directory");
        let ctl = control.to_string_lossy().into_owned();
        assert!(
            !processes_naming(&ctl).is_empty(),
            "{step}: no ssh master on {ctl}"
        );
        p.signal("-KILL");
        let (code, err) = p.finish();
        assert_eq!(code, -1, "{step}: not killed: {err}");
        // The dead-man switch: each agent sees EOF, stops and removes its files.
        for i in 0..2 {
            assert!(
                eventually(15, || h.agents(i).is_empty() && h.files_in(i).is_empty()),
                "{step}: host {i}: agents {:?}, files {:?} 15 s after the controller died",
                h.agents(i),
                h.files_in(i)
            );
        }
        // ControlPersist keeps the masters; --cleanup removes them and their directory.
        let out = Iolab::new()
            .args(["run", &empty.path().to_string_lossy(), "--cleanup"])
            .run();
        assert_eq!(out.code, 0, "{step}: {}", out.stderr);
        assert!(
            out.stdout.contains(&ctl),
            "{step}: --cleanup did not name {ctl}: {}",
            out.stdout
        );
        assert!(!control.exists(), "{step}: {ctl} left");
        assert!(
            eventually(5, || processes_naming(&ctl).is_empty()),
            "{step}: ssh masters left: {:?}",
            processes_naming(&ctl)
        );
        let runs = stored_statuses(&db);
        assert!(runs.is_empty(), "{step}: a killed run stored {runs:?}");
        // The hosts share this machine's /tmp: no pushed copy of iolab stays behind.
        let left: Vec<&PathBuf> = pushed.iter().filter(|p| p.exists()).collect();
        assert!(left.is_empty(), "{step}: pushed copies left: {left:?}");
        eprintln!(
            "controller killed at {step}: agents gone, targets empty, masters removed, store ok"
        );
        survived += 1;
    }
    eprintln!(
        "iolab run --hosts: kill points survived {survived}/{}",
        steps.len()
    );
}

/// One agent SIGKILLed mid-trial: the controller fails that host, keeps the other
/// (`--on-host-failure continue`), says "1 of 2", and closes its ssh connections; the dead
/// agent's test file is left for `iolab run --cleanup` on that host.
#[test]
fn a_killed_agent_fails_its_host_and_the_run_goes_on() {
    if !require_hosts() {
        return;
    }
    // `run --cleanup` sweeps every dead controller's ssh directory in /tmp: one test's sweep
    // would take the other's (and it would then not see its own named).
    let _one = SWEEP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let h = NetHosts::new(2);
    let child = Iolab::new()
        .args(["run", "--hosts", &h.hosts_arg(), "--launch"])
        .arg(h.launch(&format!("{} agent --stdio", bin())))
        .args(["--on-host-failure", "continue"])
        .args(["--pattern", "randwrite", "--size", "8M", "--time", "3s"])
        .args(["--json", "--no-save"])
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("controller starts");
    let controller = child.id();
    assert!(
        eventually(20, || !h.files_in(1).is_empty()),
        "host 1 never laid out its file"
    );
    std::thread::sleep(Duration::from_secs(2));
    let agents = h.agents(1);
    assert_eq!(agents.len(), 1, "{agents:?}");
    let left = h.files_in(1);
    sh_ok(&format!("kill -9 {}", agents[0]));
    let control = control_dir(controller).expect("the ssh control directory");
    let out = child.wait_with_output().expect("controller ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("host h1 failed"), "{stderr}");
    assert!(
        stderr.contains("1 of 2 hosts failed; the aggregate covers 1 of 2"),
        "{stderr}"
    );
    let doc = common::json(&stdout);
    assert!(doc["hosts"][1]["failed"].is_string(), "{doc}");
    assert!(doc["hosts"][0]["failed"].is_null(), "{doc}");
    let t = &doc["trials"][0];
    assert_eq!(t["aggregate"]["hosts_ok"], 1, "{t}");
    assert_eq!(t["aggregate"]["hosts_total"], 2, "{t}");
    // The controller ended normally: no agent, no master, no control directory left.
    assert!(eventually(10, || h.agents(0).is_empty()));
    assert!(h.files_in(0).is_empty(), "{:?}", h.files_in(0));
    assert!(!control.exists(), "{} left", control.display());
    assert!(processes_naming(&control.to_string_lossy()).is_empty());
    // SIGKILL gave the agent no chance: its test file stays until --cleanup on that host.
    assert_eq!(h.files_in(1), left, "the killed agent's files");
    let out = Iolab::new()
        .args(["run", &h.targets[1].to_string_lossy(), "--cleanup"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(h.files_in(1).is_empty(), "{:?}", h.files_in(1));
}
