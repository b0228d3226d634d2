//! Which process is writing a run, so a run whose process died (SIGKILL, power cut, OOM killer)
//! reads back as `incomplete` instead of `running` forever.
//!
//! A pid alone is not enough: pids are reused, machines reboot, and containers have their own
//! pid namespaces. The owner is therefore the host, the boot id, the pid namespace, the pid and
//! the process's start time (in clock ticks since boot). A run is declared dead only when the
//! reader is on the same machine and boot, in the same pid namespace, and that pid is gone, a
//! zombie, or another process that started at another time. From anywhere else the answer is
//! "unknown" and the run keeps showing as running.

use serde::{Deserialize, Serialize};

use crate::system::read_trim;

/// The identity of the process that writes a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Host name.
    pub host: String,
    /// `/proc/sys/kernel/random/boot_id`: changes on every boot.
    pub boot_id: Option<String>,
    /// The pid namespace (`pid:[4026531836]`), so containers do not judge each other's pids.
    pub pid_ns: Option<String>,
    /// Process id.
    pub pid: u32,
    /// Start time of the process, clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: Option<u64>,
}

/// What the reader can tell about a run's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The owner is running.
    Alive,
    /// The owner is gone: the run will never be finished.
    Dead,
    /// Another machine or namespace: cannot tell.
    Unknown,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            host: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
            boot_id: read_trim("/proc/sys/kernel/random/boot_id"),
            pid_ns: std::fs::read_link("/proc/self/ns/pid")
                .ok()
                .map(|p| p.to_string_lossy().into_owned()),
            pid,
            start_ticks: proc_stat(pid).map(|s| s.1),
        }
    }

    /// Whether this owner is still running, judged from the calling process.
    pub fn liveness(&self) -> Liveness {
        let me = Owner::current();
        if self.host != me.host {
            return Liveness::Unknown;
        }
        match (&self.boot_id, &me.boot_id) {
            (Some(a), Some(b)) if a != b => return Liveness::Dead, // rebooted since
            (Some(_), Some(_)) => {}
            _ => return Liveness::Unknown,
        }
        if self.pid_ns != me.pid_ns {
            return Liveness::Unknown;
        }
        match proc_stat(self.pid) {
            None => Liveness::Dead,
            Some((state, _)) if state == 'Z' || state == 'X' => Liveness::Dead,
            Some((_, ticks)) if self.start_ticks.is_some_and(|t| t != ticks) => Liveness::Dead,
            Some(_) => Liveness::Alive,
        }
    }
}

/// The state letter and start time (ticks since boot) of a process, from `/proc/<pid>/stat`.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    // Field 3 is the state; field 22 is the start time: 19 fields further on.
    let ticks = f.nth(18)?.parse().ok()?;
    Some((state, ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_finished_child_is_dead() {
        let me = Owner::current();
        assert!(me.start_ticks.is_some());
        assert_eq!(me.liveness(), Liveness::Alive);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Owner { pid, ..me.clone() };
        assert_eq!(gone.liveness(), Liveness::Dead);
        // Same pid, other start time: pid reuse.
        let reused = Owner {
            start_ticks: me.start_ticks.map(|t| t + 1),
            ..me.clone()
        };
        assert_eq!(reused.liveness(), Liveness::Dead);
        let elsewhere = Owner {
            host: format!("{}-other", me.host),
            ..me
        };
        assert_eq!(elsewhere.liveness(), Liveness::Unknown);
    }
}
