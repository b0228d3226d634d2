//! A shell script of one's own in the lab's VM: the same kernel, the same initramfs machinery
//! (plus extra host tools when asked, e.g. `blktrace`), N fresh virtio disks, the script run
//! by the guest's `/init` from the 9p share, and the share handed back with whatever the
//! script left in it.
//!
//! It exists for checks the lab itself does not make, such as comparing `iolab capture` with
//! blktrace on a kernel that allows both: the guest runs the tools, the host reads
//! their files. `iolab lab --vm` does not go through here.
//!
//! ```text
//! /share/run.sh   the script (after a preamble that checks vdX is disk dX and cds to /tmp)
//! /share/...      what the script writes there comes back to the host
//! ```
//!
//! qemu dies with the calling process (even after SIGKILL); the disk files are removed when
//! the run ends, also on errors; the work directory and its share are the caller's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::qemu::{self, Accel, MARK_DONE, Vm, VmConfig};
use super::{VmError, guest, initramfs, kernel, prereq};

/// The guest tools that a script may need and `iolab lab --vm` does not, found on the host
/// only when asked for ([`prereq::find`]).
pub const BLKTRACE: prereq::Tool = prereq::Tool {
    name: "blktrace",
    package: "blktrace",
    guest: true,
};

/// One script run in a VM.
#[derive(Debug, Clone)]
pub struct ScriptVm {
    /// The guest's script (`sh`); it starts in `/tmp`, the share is [`guest::SHARE`].
    pub script: String,
    /// Virtio disks, `/dev/vda` (serial `d0`) onwards: fresh sparse files.
    pub disks: usize,
    /// Size of each disk, bytes.
    pub disk_size: u64,
    /// A directory of the caller's, on a disk filesystem: the disks, the console log and
    /// `share/` go there.
    pub work: PathBuf,
    /// The iolab binary the guest gets as `/bin/iolab` (a test passes the built binary, not
    /// itself).
    pub iolab: PathBuf,
    /// Host programs copied into the guest's `/sbin` besides the lab's (with their libraries).
    pub extra_tools: Vec<prereq::Tool>,
    /// Guest memory, MiB.
    pub memory_mib: u64,
    /// Virtual CPUs.
    pub cpus: usize,
    /// The script must end within this (after boot); the VM is killed otherwise.
    pub timeout: Duration,
}

impl ScriptVm {
    /// A run of `script` on `disks` disks of `disk_size` bytes in `work`, with the guest
    /// getting the `iolab` binary; 1 GiB of memory, 2 CPUs, 5 minutes.
    pub fn new(script: &str, disks: usize, disk_size: u64, work: &Path, iolab: &Path) -> Self {
        ScriptVm {
            script: script.to_string(),
            disks,
            disk_size,
            work: work.to_path_buf(),
            iolab: iolab.to_path_buf(),
            extra_tools: Vec::new(),
            memory_mib: 1024,
            cpus: 2,
            timeout: Duration::from_secs(300),
        }
    }
}

/// What a script run did.
#[derive(Debug, Clone)]
pub struct ScriptOutcome {
    /// The share, with what the script wrote there.
    pub share: PathBuf,
    /// How the guest ran.
    pub accel: Accel,
    /// Seconds from qemu's start to the share mounted.
    pub boot_seconds: f64,
    /// Seconds the script ran.
    pub script_seconds: f64,
    /// The script's exit code (`None`: the VM ended without saying).
    pub exit_code: Option<i32>,
    /// Things the caller should know (a KVM fallback).
    pub notes: Vec<String>,
}

/// The disk files of a run, removed when it ends however it ends.
struct DiskFiles(Vec<PathBuf>);

impl Drop for DiskFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The script as the guest runs it: `/tmp` as the working directory and each disk checked
/// to be the one the host made (by its virtio serial) before the caller's lines.
pub fn guest_script(script: &str, devices: &[String]) -> String {
    let mut s = String::from("#!/bin/sh\n# Written by iolab (vm::script) on the host.\ncd /tmp\n");
    for (i, d) in devices.iter().enumerate() {
        let k = d.trim_start_matches("/dev/");
        s.push_str(&format!(
            "[ \"$(cat /sys/block/{k}/serial 2>/dev/null)\" = d{i} ] || {{ echo \"iolab-guest: {d} is not disk d{i}\"; exit 2; }}\n"
        ));
    }
    s.push_str(script);
    if !script.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The exit code in `/init`'s last marker (`iolab-guest: done rc=N`).
pub fn done_code(line: &str) -> Option<i32> {
    line.split(MARK_DONE)
        .nth(1)?
        .trim()
        .strip_prefix("rc=")?
        .trim()
        .parse()
        .ok()
}

/// The initramfs with the extra tools: its own flavour (`x-blktrace`), so the lab's `base`
/// one is not evicted by it.
fn initrd_with(
    r: &ScriptVm,
    tools: &prereq::HostTools,
    k: &kernel::Kernel,
    cache: &Path,
) -> Result<PathBuf, VmError> {
    let mut extra = Vec::new();
    for t in &r.extra_tools {
        extra.push((t.name.to_string(), prereq::find(t)?));
    }
    let iolab = initramfs::guest_iolab(&r.iolab, cache, k);
    let contents = initramfs::contents_with(tools, k, &iolab, None, &extra)?;
    let flavour = if extra.is_empty() {
        "script".to_string()
    } else {
        let names: Vec<&str> = r.extra_tools.iter().map(|t| t.name).collect();
        format!("x-{}", names.join("-"))
    };
    initramfs::build(&contents, cache, k, &flavour)
}

/// Boots the lab's VM with `r.disks` fresh disks, runs `r.script` in it and returns the
/// share. `console` gets every guest console line. A script that does not end within
/// `r.timeout` is an error (the VM is killed); a script that fails is not (see
/// [`ScriptOutcome::exit_code`]).
pub fn run_script_in_vm(
    r: &ScriptVm,
    console: &mut dyn FnMut(&str),
) -> Result<ScriptOutcome, VmError> {
    super::boot::check_env()?;
    let tools = prereq::check()?;
    for t in &r.extra_tools {
        prereq::find(t)?;
    }
    let k = kernel::find()?;
    let cache = super::cache_dir();
    let vmlinux = kernel::vmlinux(&k, &cache)?;
    let built = initrd_with(r, &tools, &k, &cache)?;
    if r.disks == 0 || r.disks > qemu::MAX_DISKS {
        return Err(VmError::Spec(format!(
            "disks: give 1 to {} disks",
            qemu::MAX_DISKS
        )));
    }
    let share = r.work.join("share");
    std::fs::create_dir_all(&share).map_err(|e| VmError::io("cannot create", &share, e))?;
    let mut disks = DiskFiles(Vec::new());
    for i in 0..r.disks {
        let p = r.work.join(format!("d{i}.img"));
        disks.0.push(p.clone());
        std::fs::File::create(&p)
            .and_then(|f| f.set_len(r.disk_size))
            .map_err(|e| VmError::io("cannot create disk", &p, e))?;
    }
    let initrd = super::run::hold_initrd(&built, &r.work, || initrd_with(r, &tools, &k, &cache))?;
    disks.0.push(initrd.clone());
    let devices = guest::device_names(r.disks);
    let run_sh = share.join("run.sh");
    std::fs::write(&run_sh, guest_script(&r.script, &devices))
        .map_err(|e| VmError::io("cannot write", &run_sh, e))?;
    let cfg = VmConfig {
        kernel: vmlinux,
        initrd,
        disks: disks.0[..r.disks].to_vec(),
        share: share.clone(),
        memory_mib: r.memory_mib,
        cpus: r.cpus,
        throttle: std::collections::BTreeMap::new(),
        write_logs: false,
        stopped: false,
    };
    let mut notes = Vec::new();
    let marker = super::run::kvm_marker(&cache, &k);
    let mut console_lines = |l: &str, _: bool| console(l);
    let log = r.work.join("console.log");
    let mut start = |cfg: &VmConfig, accel: Accel| Vm::start(cfg, accel, &log);
    let mut booted = super::boot::boot(&cfg, &marker, &mut start, &mut console_lines, &mut notes)?;
    let t = Instant::now();
    let exit_code = relay(&mut booted.vm, r.timeout, &mut console_lines)?;
    Ok(ScriptOutcome {
        share,
        accel: booted.accel,
        boot_seconds: booted.seconds,
        script_seconds: t.elapsed().as_secs_f64(),
        exit_code,
        notes,
    })
}

/// Relays the console until qemu exits; the script's exit code from `/init`'s marker. Killed
/// after `timeout`, on Ctrl-C, or 60 s after the marker if qemu does not go.
fn relay(
    vm: &mut Vm,
    timeout: Duration,
    console: &mut dyn FnMut(&str, bool),
) -> Result<Option<i32>, VmError> {
    let t = Instant::now();
    let mut code = None;
    let mut done_at: Option<Instant> = None;
    loop {
        if crate::signals::stop_requested() {
            vm.kill();
            return Err(VmError::Interrupted);
        }
        if done_at.is_some_and(|d| d.elapsed() > Duration::from_secs(60)) {
            vm.kill();
            return Ok(code);
        }
        if done_at.is_none() && t.elapsed() > timeout {
            vm.kill();
            return Err(VmError::Boot(format!(
                "the guest's script did not end within {} s and the VM was killed: {}",
                timeout.as_secs(),
                vm.last_words()
            )));
        }
        match vm.next_line(Duration::from_millis(200)) {
            Ok(Some(l)) => {
                if l.contains(MARK_DONE) {
                    done_at = Some(Instant::now());
                    code = done_code(&l);
                }
                console(&l, true);
            }
            Ok(None) => {}
            Err(_) => return Ok(code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_checks_its_disks_first() {
        let s = guest_script("echo hi", &guest::device_names(2));
        assert!(s.starts_with("#!/bin/sh\n"), "{s}");
        assert!(
            s.contains("/sys/block/vdb/serial 2>/dev/null)\" = d1 ]"),
            "{s}"
        );
        assert!(s.ends_with("\necho hi\n"), "{s}");
        assert!(
            s.find("vda/serial").unwrap() < s.find("echo hi").unwrap(),
            "{s}"
        );
    }

    #[test]
    fn the_exit_code_comes_from_the_done_marker() {
        assert_eq!(done_code("iolab-guest: done rc=0"), Some(0));
        assert_eq!(done_code("[  3.1] iolab-guest: done rc=17\r"), Some(17));
        assert_eq!(done_code("iolab-guest: done"), None);
        assert_eq!(done_code("iolab-guest: ready"), None);
    }
}
