//! Faults in a many-host run (`iolab run --hosts`) over real ssh: the controller SIGKILLed at
//! each of its steps (`IOLAB_PAUSE_AT`, src/pause.rs), `--push`'s copy included (mid-copy and
//! right after it), and one agent SIGKILLed mid-trial.
//!
//! After the controller dies, every agent must stop on its stdin EOF (the dead-man switch) and
//! remove its test file; no pushed copy of iolab (whole or partial) may stay in the hosts'
//! /tmp; `iolab run --cleanup` must then remove the ssh masters that `ControlPersist` keeps up
//! and their control-socket directory; the local store must be sound.
//!
//! The hosts are tests/common/hosts.rs's `NetHosts` (network namespaces, each with a veth pair
//! and its own sshd), shared with tests/hosts.rs.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::hosts::{NetHosts, bin, require_hosts, sh_ok};
use common::{Iolab, Paused, disk_tmpdir, processes_naming, stored_statuses};

/// The controller's directory of ssh control sockets (`iolab-ssh-PID-*` in the temp dir).
fn control_dir(controller: u32) -> Option<PathBuf> {
    let prefix = format!("iolab-ssh-{controller}-");
    std::fs::read_dir(std::env::temp_dir())
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
}

/// The pushed copies of iolab (whole or partial) a controller made: `/tmp/iolab-push-PID-*`
/// (the hosts' /tmp is this machine's), with their sizes and modes.
fn pushed_files(controller: u32) -> Vec<(PathBuf, u64, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    let prefix = format!("iolab-push-{controller}-");
    std::fs::read_dir("/tmp")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.path(), m.len(), m.permissions().mode() & 0o777))
        })
        .collect()
}

/// What the kill test expects of the hosts while the controller is paused at a step.
#[derive(Clone, Copy)]
enum AtStep {
    /// Mid-copy: partial copies of iolab, not executable, no agent yet.
    Copying,
    /// The copy written: each host's agent starts from it (and deletes it) on its own.
    Copied,
    /// The agents run; every host holds its test file (`Some(true)`), none does
    /// (`Some(false)`), or it may be removed already (`None`: the suite ended).
    Running(Option<bool>),
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

/// The two tests' `--cleanup` sweeps, one at a time.
static SWEEP: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held for a whole test: `run --cleanup` sweeps every dead controller's ssh directory in
/// /tmp, so one test's sweep would take the other's (and it would then not see its own named).
fn one_sweep_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SWEEP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills the controller of a 2-host run over ssh at each of its steps.
#[test]
#[allow(clippy::too_many_lines)] // one scenario, end to end, reads best as one story
fn a_hosts_controller_killed_at_every_step_leaves_nothing() {
    if !require_hosts() {
        return;
    }
    let _one = one_sweep_at_a_time();
    let h = NetHosts::new(2);
    let db = h.dir.path().join("hosts.db");
    let empty = disk_tmpdir("iolab-hostsf-cwd-");
    let steps = [
        ("hosts pushing", AtStep::Copying),
        ("hosts pushed", AtStep::Copied),
        ("hosts connected", AtStep::Running(Some(false))),
        ("hosts ready", AtStep::Running(Some(true))),
        ("hosts started", AtStep::Running(Some(true))),
        ("hosts collected", AtStep::Running(None)),
    ];
    let size = std::fs::metadata(bin()).expect("the binary").len();
    let mut survived = 0;
    for (step, at) in steps {
        let label = format!("hk-{}", step.replace(' ', "-"));
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
            .args(["--label", &label]);

        let mut p = Paused::spawn(cmd, step);
        if !p.wait_paused(step, 60) {
            p.signal("-KILL");
            panic!("never paused at {step}: {}", p.finish().1);
        }
        let controller = p.child.id();
        check_paused(&h, step, at, controller, size);
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
        assert!(
            eventually(15, || pushed_files(controller).is_empty()),
            "{step}: pushed copies left 15 s after the controller died: {:?}",
            pushed_files(controller)
        );
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
        // The store opens (integrity_check ok) and holds one run per kill so far: this one's
        // placeholder, which every reader sees as `incomplete` (its controller is gone).
        let runs = stored_statuses(&db);
        assert_eq!(runs.len(), survived + 1, "{step}: stored {runs:?}");
        let (code, so, se) = Iolab::new()
            .db(&db)
            .args(["show", &label, "--json"])
            .run()
            .parts();
        assert_eq!(code, 0, "{step}: show {label}: {se}");
        let shown = common::json(&so);
        assert_eq!(shown["status"], "incomplete", "{step}: {shown:#}");
        assert!(
            shown["notes"][0]
                .as_str()
                .is_some_and(|n| n.starts_with("hosts pending")),
            "{step}: {shown:#}"
        );
        // The hosts share this machine's /tmp: no pushed copy of iolab, whole or partial, stays
        // behind (each host's shell or agent removed its own; nothing swept them).
        let left = pushed_files(controller);
        assert!(left.is_empty(), "{step}: pushed copies left: {left:?}");
        eprintln!(
            "controller killed at {step}: agents gone, targets empty, masters removed, store ok, run incomplete"
        );
        survived += 1;
    }
    eprintln!(
        "iolab run --hosts: kill points survived {survived}/{}",
        steps.len()
    );
}

/// Checks the hosts while the controller is paused at `step` (see [`AtStep`]).
fn check_paused(h: &NetHosts, step: &str, at: AtStep, controller: u32, size: u64) {
    match at {
        AtStep::Copying => {
            // The copy that paused wrote half the binary: its host's file gets there (ssh still
            // forwards what was written), less what `head` holds in its output buffer; the
            // other copy is at most as far.
            let half = size / 2;
            assert!(
                eventually(20, || pushed_files(controller)
                    .iter()
                    .any(|f| f.1 + (64 << 10) >= half)),
                "{step}: no copy near {half} bytes: {:?}",
                pushed_files(controller)
            );
            for (p, len, mode) in pushed_files(controller) {
                assert!(len <= half, "{step}: {} has {len} of {size}", p.display());
                assert_eq!(mode, 0o600, "{step}: {} mode {mode:o}", p.display());
            }
            for i in 0..2 {
                assert!(h.agents(i).is_empty(), "{step}: host {i} runs an agent");
            }
        }
        AtStep::Copied => {
            // Every byte is on its way: each host's shell runs its copy, which deletes itself,
            // says hello into the paused controller's pipe and waits.
            for i in 0..2 {
                assert!(
                    eventually(20, || h.agents(i).len() == 1
                        && std::fs::read_link(format!("/proc/{}/exe", h.agents(i)[0]))
                            .is_ok_and(|e| e.to_string_lossy().ends_with(" (deleted)"))),
                    "{step}: host {i} never started its agent from a deleted copy"
                );
                pushed_exe(h.agents(i)[0]);
            }
        }
        AtStep::Running(laid_out) => {
            for i in 0..2 {
                let agents = h.agents(i);
                assert_eq!(agents.len(), 1, "{step}: host {i}'s agent while paused");
                // Each agent runs from a pushed copy that it already deleted (`--remove-self`).
                pushed_exe(agents[0]);
                if let Some(want) = laid_out {
                    assert_eq!(
                        !h.files_in(i).is_empty(),
                        want,
                        "{step}: host {i}: {:?}",
                        h.files_in(i)
                    );
                }
            }
        }
    }
}

/// One agent SIGKILLed mid-trial: the controller fails that host, keeps the other
/// (`--on-host-failure continue`), says "1 of 2", and closes its ssh connections; the dead
/// agent's test file is left for `iolab run --cleanup` on that host.
#[test]
fn a_killed_agent_fails_its_host_and_the_run_goes_on() {
    if !require_hosts() {
        return;
    }
    let _one = one_sweep_at_a_time();
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
