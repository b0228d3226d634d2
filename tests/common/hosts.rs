//! Real hosts on one machine for the many-host tests (tests/hosts.rs, tests/hosts_faults.rs):
//! each a network namespace with a veth pair and its own sshd (a throwaway host key and user
//! key, a private ssh config and known_hosts), each with its own file target.
//!
//! Everything set up is torn down by [`NetHosts`]'s Drop (sshd and every process left in the
//! namespaces killed, namespaces deleted), also when an assertion fails.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::{Iolab, cmdline, disk_tmpdir};

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iolab")
}

pub(crate) fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .expect("sh runs")
}

#[track_caller]
pub(crate) fn sh_ok(cmd: &str) {
    let o = sh(cmd);
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Hosts in network namespaces, each with an sshd on its veth address; removed on drop.
pub(crate) struct NetHosts {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) names: Vec<String>,
    pub(crate) namespaces: Vec<String>,
    pub(crate) links: Vec<String>,
    pub(crate) pidfiles: Vec<PathBuf>,
    /// One target directory per host (under `dir`).
    pub(crate) targets: Vec<PathBuf>,
}

impl NetHosts {
    pub(crate) fn new(n: usize) -> NetHosts {
        let dir = disk_tmpdir("iolab-hosts-");
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let mut h = NetHosts {
            dir,
            names: Vec::new(),
            namespaces: Vec::new(),
            links: Vec::new(),
            pidfiles: Vec::new(),
            targets: Vec::new(),
        };
        let d = h.dir.path().to_path_buf();
        let ds = d.display();
        sh_ok(&format!(
            "ssh-keygen -q -t ed25519 -N '' -f {ds}/key && ssh-keygen -q -t ed25519 -N '' -f {ds}/hostkey && cp {ds}/key.pub {ds}/authorized_keys && mkdir -p /run/sshd"
        ));
        let hostkey = std::fs::read_to_string(d.join("hostkey.pub")).expect("host key");
        let mut config = String::new();
        let mut known = String::new();
        for i in 0..n {
            let ns = format!("iolab-t{pid}-{k}-{i}");
            let link = format!("ih{:04x}{:02x}{i}", pid & 0xffff, k & 0xff);
            let net = format!("10.{}.{}", 200 + pid % 50, (k * 8 + i as u32) % 250);
            h.namespaces.push(ns.clone());
            sh_ok(&format!("ip netns add {ns}"));
            h.links.push(link.clone());
            sh_ok(&format!(
                "ip link add {link} type veth peer name eth0 netns {ns} && ip addr add {net}.1/30 dev {link} && ip link set {link} up && ip -n {ns} addr add {net}.2/30 dev eth0 && ip -n {ns} link set eth0 up && ip -n {ns} link set lo up"
            ));
            let pidfile = d.join(format!("sshd{i}.pid"));
            sh_ok(&format!(
                "ip netns exec {ns} /usr/sbin/sshd -f /dev/null -h {ds}/hostkey -p 22 -o ListenAddress={net}.2 -o PidFile={pf} -o AuthorizedKeysFile={ds}/authorized_keys -o StrictModes=no -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o UsePAM=no -o LogLevel=ERROR -E {ds}/sshd{i}.log",
                pf = pidfile.display()
            ));
            h.pidfiles.push(pidfile);
            let name = format!("h{i}");
            config.push_str(&format!("Host {name}\n  HostName {net}.2\n"));
            known.push_str(&format!("{net}.2 {hostkey}"));
            let t = d.join(format!("target{i}"));
            std::fs::create_dir(&t).expect("target dir");
            h.targets.push(t);
            h.names.push(name);
        }
        config.push_str(&format!(
            "Host *\n  User root\n  IdentityFile {ds}/key\n  IdentitiesOnly yes\n  UserKnownHostsFile {ds}/known_hosts\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n"
        ));
        std::fs::write(d.join("ssh_config"), config).expect("ssh config");
        std::fs::write(d.join("known_hosts"), known).expect("known hosts");
        // sshd is up once its pid file exists.
        let end = Instant::now() + Duration::from_secs(10);
        while h.pidfiles.iter().any(|p| !p.exists()) {
            assert!(Instant::now() < end, "sshd did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        h
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// The default launch template with this test's ssh config.
    pub(crate) fn launch(&self, remote: &str) -> String {
        format!(
            "ssh -F {} -o BatchMode=yes -o ControlMaster=auto -o ControlPath={{control}}/%C -o ControlPersist=60 {{host}} {remote}",
            self.config().display()
        )
    }

    /// `iolab run --hosts HOSTS --launch <ssh with this config> REMOTE --pattern randread`:
    /// where every ssh test starts (the rest of the flags are its own).
    pub(crate) fn run(&self, hosts: &str, remote: &str) -> Iolab {
        Iolab::new()
            .args(["run", "--hosts", hosts, "--launch"])
            .arg(self.launch(remote))
            .args(["--pattern", "randread"])
    }

    /// `h0:target0,h1:target1,h2:<a tmpfs>` and the tmpfs directory (removed on drop). The
    /// host on tmpfs is built to differ: no O_DIRECT there, so buffered and page-cache fast,
    /// and the hosts' latencies differ by orders of magnitude (merged percentiles are then
    /// far from the mean of the hosts').
    pub(crate) fn hosts_with_tmpfs_last(&self) -> (String, tempfile::TempDir) {
        let shm = tempfile::Builder::new()
            .prefix("iolab-hosts-shm-")
            .tempdir_in("/dev/shm")
            .expect("shm dir");
        let last = self.names.len() - 1;
        let mut parts: Vec<String> = self.names[..last]
            .iter()
            .zip(&self.targets)
            .map(|(n, t)| format!("{n}:{}", t.display()))
            .collect();
        parts.push(format!("{}:{}", self.names[last], shm.path().display()));
        (parts.join(","), shm)
    }

    /// `h0:/.../target0,h1:...`.
    pub(crate) fn hosts_arg(&self) -> String {
        self.names
            .iter()
            .zip(&self.targets)
            .map(|(n, t)| format!("{n}:{}", t.display()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Pids of the processes in host `i`'s namespace.
    pub(crate) fn pids(&self, i: usize) -> Vec<u32> {
        let o = sh(&format!("ip netns pids {}", self.namespaces[i]));
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    pub(crate) fn sshd_pid(&self, i: usize) -> Option<u32> {
        std::fs::read_to_string(&self.pidfiles[i])
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Kills everything running in host `i` (sshd, sessions, agents): the host is gone.
    pub(crate) fn kill_host(&self, i: usize) {
        for p in self.pids(i) {
            let _ = Command::new("kill")
                .arg("-9")
                .arg(p.to_string())
                .stderr(Stdio::null())
                .status();
        }
    }

    pub(crate) fn files_in(&self, i: usize) -> Vec<String> {
        std::fs::read_dir(&self.targets[i])
            .map(|r| {
                r.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// No ssh client of this test's config left (control masters included).
    pub(crate) fn ssh_clients(&self) -> String {
        let o = sh(&format!("pgrep -af {} || true", self.config().display()));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.contains("pgrep"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The `iolab agent` processes running on host `i`.
    pub(crate) fn agents(&self, i: usize) -> Vec<u32> {
        self.pids(i)
            .into_iter()
            .filter(|p| cmdline(*p).contains("agent\0--stdio"))
            .collect()
    }
}

impl Drop for NetHosts {
    fn drop(&mut self) {
        for i in 0..self.namespaces.len() {
            self.kill_host(i);
            let _ = sh(&format!("ip netns del {}", self.namespaces[i]));
            let _ = sh(&format!("ip link del {} 2>/dev/null", self.links[i]));
        }
        // ssh clients of this test's private config (a control master of a failed run).
        let o = sh(&format!(
            "pgrep -f -- '-F {}' || true",
            self.config().display()
        ));
        for p in String::from_utf8_lossy(&o.stdout).split_whitespace() {
            let _ = Command::new("kill")
                .arg("-9")
                .arg(p)
                .stderr(Stdio::null())
                .status();
        }
    }
}

pub(crate) fn require_hosts() -> bool {
    super::need_root()
        && super::need_tool("sshd", "openssh-server")
        && super::need_tool("ssh", "openssh-client")
        && super::need_tool("ip", "iproute2")
}
