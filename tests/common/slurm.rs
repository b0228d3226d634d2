//! A real Slurm cluster on one machine for tests/hosts_slurm.rs: Debian's `slurmctld`, one
//! `slurmd` per node and `munge`, started by the test itself (no systemd here): a private munge
//! key, socket and daemon, a `slurm.conf` naming this host as the controller, state, spool and
//! logs in a temporary directory. Each node is a network namespace with a veth pair (as the
//! ssh hosts of tests/common/hosts.rs), its `slurmd` started in that namespace with `nsenter
//! --net` (`ip netns exec` would remount /sys, without the cgroup hierarchies slurmd reads), so
//! `srun --nodelist=n1` really starts its task through n1's slurmd, in n1's namespace.
//!
//! Every client (srun, salloc, scontrol, scancel) finds the cluster through `SLURM_CONF`.
//! [`SlurmCluster`]'s Drop stops everything, also when an assertion fails: the jobs, the
//! daemons (`scontrol shutdown`, then a kill of whatever is left), any process still carrying
//! this cluster's `SLURM_CONF` (an srun of a failed test), the namespaces and links.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::{Iolab, cmdline, disk_tmpdir, need_root, need_tool};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// True when root and Slurm, munge and the namespace tools are installed (else a logged skip).
pub(crate) fn require_slurm() -> bool {
    need_root()
        && need_tool("slurmctld", "slurm-wlm")
        && need_tool("slurmd", "slurm-wlm")
        && need_tool("srun", "slurm-client")
        && need_tool("munged", "munge")
        && need_tool("ip", "iproute2")
        && need_tool("nsenter", "util-linux")
}

/// A Slurm cluster of `n` nodes (`n0`, `n1`, ...), each with its own target directory.
pub(crate) struct SlurmCluster {
    /// State, spool, logs, munge, the targets; on a disk filesystem (O_DIRECT targets).
    pub(crate) dir: tempfile::TempDir,
    /// Node names, in order.
    pub(crate) nodes: Vec<String>,
    /// One target directory per node.
    pub(crate) targets: Vec<PathBuf>,
    namespaces: Vec<String>,
    links: Vec<String>,
}

fn run_sh(cmd: &str, conf: Option<&Path>) -> Output {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).stdin(Stdio::null());
    if let Some(conf) = conf {
        c.env("SLURM_CONF", conf);
    }
    c.output().expect("sh runs")
}

#[track_caller]
fn sh_ok(cmd: &str, conf: Option<&Path>) -> String {
    let o = run_sh(cmd, conf);
    assert!(
        o.status.success(),
        "{cmd}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A TCP port nothing listens on now in this namespace (the kernel's pick for port 0).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("0.0.0.0:0").expect("bind port 0");
    l.local_addr().expect("local addr").port()
}

impl SlurmCluster {
    /// Starts munge, slurmctld and `n` slurmds; returns once every node is idle.
    pub(crate) fn new(n: usize) -> SlurmCluster {
        let dir = disk_tmpdir("iolab-slurm-");
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let mut c = SlurmCluster {
            dir,
            nodes: Vec::new(),
            targets: Vec::new(),
            namespaces: Vec::new(),
            links: Vec::new(),
        };
        let d = c.dir.path().to_path_buf();
        for sub in ["state", "log", "bin"] {
            std::fs::create_dir(d.join(sub)).expect("cluster dir");
        }
        // Nodes: a namespace each, its veth's far end the node's address; a default route
        // back, so each slurmd reaches the controller on the first link's near address.
        let mut node_lines = String::new();
        let mut ctl_addr = String::new();
        for i in 0..n {
            let ns = format!("iolab-s{pid}-{k}-{i}");
            let link = format!("is{:04x}{:02x}{i}", pid & 0xffff, k & 0xff);
            let net = format!("10.{}.{}", 150 + pid % 50, (k * 8 + i as u32) % 250);
            c.namespaces.push(ns.clone());
            sh_ok(&format!("ip netns add {ns}"), None);
            c.links.push(link.clone());
            sh_ok(
                &format!(
                    "ip link add {link} type veth peer name eth0 netns {ns} && ip addr add {net}.1/30 dev {link} && ip link set {link} up && ip -n {ns} addr add {net}.2/30 dev eth0 && ip -n {ns} link set eth0 up && ip -n {ns} link set lo up && ip -n {ns} route add default via {net}.1"
                ),
                None,
            );
            if i == 0 {
                ctl_addr = format!("{net}.1");
            }
            let node = format!("n{i}");
            node_lines.push_str(&format!(
                "NodeName={node} NodeAddr={net}.2 CPUs=2 State=UNKNOWN\n"
            ));
            std::fs::create_dir_all(d.join("spool").join(&node)).expect("spool dir");
            let t = d.join(format!("target{i}"));
            std::fs::create_dir(&t).expect("target dir");
            c.targets.push(t);
            c.nodes.push(node);
        }
        start_munge(&d);
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .expect("hostname")
            .trim()
            .to_string();
        let conf = conf_text(&d, &hostname, &ctl_addr, &node_lines);
        std::fs::write(c.conf(), conf).expect("slurm.conf");
        let cf = c.conf();
        let conf_path = cf.display();
        // The daemons are told their conf with -f (their command lines name it, which Drop
        // finds them by); only clients carry SLURM_CONF (Drop kills those outright).
        sh_ok(&format!("slurmctld -f {conf_path} -i"), None);
        for (i, node) in c.nodes.iter().enumerate() {
            sh_ok(
                &format!(
                    "nsenter --net=/run/netns/{} slurmd -f {conf_path} -N {node}",
                    c.namespaces[i]
                ),
                None,
            );
        }
        let want = format!("{n} idle");
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let o = run_sh("sinfo -h -o '%D %T'", Some(&cf));
            let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if s == want {
                break;
            }
            assert!(
                Instant::now() < end,
                "the cluster did not come up: sinfo says '{s}'; {}",
                c.log_tails()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        // `iolab` on the PATH of jobs (the default `--hosts @slurm` template runs it by name).
        std::os::unix::fs::symlink(super::hosts::bin(), d.join("bin/iolab")).expect("symlink");
        c
    }

    /// The cluster's slurm.conf (what `SLURM_CONF` names).
    pub(crate) fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// `PATH` with the directory holding `iolab` (this build) first.
    pub(crate) fn path_env(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// The iolab binary with this cluster's `SLURM_CONF` and `PATH`.
    pub(crate) fn iolab(&self) -> Iolab {
        Iolab::new()
            .env("SLURM_CONF", self.conf())
            .env("PATH", self.path_env())
    }

    /// A shell command run as a client of this cluster.
    pub(crate) fn sh(&self, cmd: &str) -> Output {
        run_sh(cmd, Some(&self.conf()))
    }

    /// `h0:target0,...` with the node names.
    pub(crate) fn hosts_arg(&self) -> String {
        self.nodes
            .iter()
            .zip(&self.targets)
            .map(|(n, t)| format!("{n}:{}", t.display()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The ids of the jobs running or pending on `node` (`None`: on any node).
    pub(crate) fn jobs(&self, node: Option<&str>) -> Vec<String> {
        let w = node.map(|n| format!("-w {n}")).unwrap_or_default();
        let o = self.sh(&format!("squeue -h {w} -o %i"));
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// A daemon's log (`slurmctld`, `slurmd-n1`, `munged`).
    pub(crate) fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("log").join(format!("{name}.log")))
            .unwrap_or_default()
    }

    fn log_tails(&self) -> String {
        let mut out = String::new();
        for name in std::iter::once("slurmctld".to_string())
            .chain(self.nodes.iter().map(|n| format!("slurmd-{n}")))
        {
            let log = self.log(&name);
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            out.push_str(&format!("\n{name}.log: ...\n"));
            for l in tail.iter().rev() {
                out.push_str(&format!("  {l}\n"));
            }
        }
        out
    }

    /// Pids of the processes in node `i`'s namespace.
    pub(crate) fn pids(&self, i: usize) -> Vec<u32> {
        let o = run_sh(&format!("ip netns pids {}", self.namespaces[i]), None);
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// What runs in node `i`'s namespace besides its slurmd: job steps and their tasks.
    pub(crate) fn jobs_processes(&self, i: usize) -> Vec<String> {
        self.pids(i)
            .into_iter()
            .map(|p| (p, cmdline(p).replace('\0', " ")))
            .filter(|(_, c)| !c.starts_with("slurmd ") && !c.is_empty())
            .map(|(p, c)| format!("{p} {c}"))
            .collect()
    }

    /// Processes outside the nodes that carry this cluster's `SLURM_CONF` (srun, salloc and
    /// what they run), this test process excluded.
    pub(crate) fn clients(&self) -> Vec<u32> {
        let needle = format!("SLURM_CONF={}\0", self.conf().display());
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let env = std::fs::read(e.path().join("environ")).ok()?;
                let zombie = std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                });
                let has = String::from_utf8_lossy(&env).contains(&needle);
                (has && !zombie && pid != std::process::id()).then_some(pid)
            })
            .collect()
    }
}

/// Starts munged with a key of its own, its socket in the cluster's directory `d`.
fn start_munge(d: &Path) {
    let ds = d.display();
    let mut key = Vec::new();
    std::fs::File::open("/dev/urandom")
        .expect("urandom")
        .take(1024)
        .read_to_end(&mut key)
        .expect("munge key bytes");
    let key_file = d.join("munge.key");
    std::fs::write(&key_file, key).expect("munge key");
    sh_ok(&format!("chmod 600 {}", key_file.display()), None);
    sh_ok(
        &format!(
            "munged --force --key-file={ds}/munge.key --socket={ds}/munge.sock --pid-file={ds}/munged.pid --log-file={ds}/log/munged.log --seed-file={ds}/munged.seed"
        ),
        None,
    );
    wait_for("munge's socket", Duration::from_secs(10), || {
        d.join("munge.sock").exists()
    });
}

/// The cluster's slurm.conf: this host (`hostname`) the controller at `ctl_addr` on a free
/// port, state, spool and logs under `d`, the nodes' lines, one partition of all of them.
fn conf_text(d: &Path, hostname: &str, ctl_addr: &str, node_lines: &str) -> String {
    let ds = d.display();
    format!(
        "ClusterName=iolabtest\n\
         SlurmctldHost={hostname}({ctl_addr})\n\
         SlurmctldPort={ctl_port}\n\
         SlurmdPort=6818\n\
         AuthType=auth/munge\n\
         AuthInfo=socket={ds}/munge.sock\n\
         CredType=cred/munge\n\
         SlurmUser=root\n\
         SlurmdUser=root\n\
         StateSaveLocation={ds}/state\n\
         SlurmdSpoolDir={ds}/spool/%n\n\
         SlurmctldPidFile={ds}/slurmctld.pid\n\
         SlurmdPidFile={ds}/slurmd-%n.pid\n\
         SlurmctldLogFile={ds}/log/slurmctld.log\n\
         SlurmdLogFile={ds}/log/slurmd-%n.log\n\
         ProctrackType=proctrack/linuxproc\n\
         TaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\n\
         SchedulerType=sched/builtin\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core\n\
         ReturnToService=2\n\
         MpiDefault=none\n\
         SwitchType=switch/none\n\
         KillWait=5\n\
         {node_lines}\
         PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
        ctl_port = free_port(),
    )
}

fn wait_for(what: &str, limit: Duration, ok: impl Fn() -> bool) {
    let end = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not there after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill9(pid: u32) {
    let _ = Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

fn pid_in(file: &Path) -> Option<u32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        let conf = self.conf();
        let jobs = self.jobs(None);
        if !jobs.is_empty() {
            let _ = self.sh(&format!("scancel {}", jobs.join(" ")));
        }
        for p in self.clients() {
            kill9(p);
        }
        // The daemons stop themselves; whatever is left a second later is killed.
        let _ = run_sh("scontrol shutdown", Some(&conf));
        let d = self.dir.path().to_path_buf();
        let daemons: Vec<PathBuf> = std::iter::once(d.join("slurmctld.pid"))
            .chain(self.nodes.iter().map(|n| d.join(format!("slurmd-{n}.pid"))))
            .collect();
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end
            && daemons
                .iter()
                .filter_map(|f| pid_in(f))
                .any(|p| Path::new(&format!("/proc/{p}")).exists() && !cmdline(p).is_empty())
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        for f in &daemons {
            if let Some(p) = pid_in(f) {
                kill9(p);
            }
        }
        // slurmctld's script helper and anything else started with this conf.
        for p in super::processes_naming(&conf.display().to_string()) {
            kill9(p);
        }
        if let Some(p) = pid_in(&d.join("munged.pid")) {
            kill9(p);
        }
        for i in 0..self.namespaces.len() {
            for p in self.pids(i) {
                kill9(p);
            }
            let _ = run_sh(&format!("ip netns del {}", self.namespaces[i]), None);
            let _ = run_sh(&format!("ip link del {} 2>/dev/null", self.links[i]), None);
        }
    }
}
