//! Booting and watching qemu: the command line, the console read line by line, the bounded
//! waits that keep a VM that does not boot from hanging the lab, and killing it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::VmError;

/// How the guest's CPU is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation.
    Kvm,
    /// Software emulation (TCG): slow, but runs anywhere.
    Tcg,
}

impl Accel {
    /// `kvm` or `tcg`.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// The label every run of the VM carries: `vm (tcg)`.
    pub fn environment(self) -> String {
        format!("vm ({})", self.name())
    }
}

/// Everything qemu needs.
#[derive(Debug, Clone)]
pub struct VmConfig {
    /// Uncompressed kernel.
    pub kernel: PathBuf,
    /// Uncompressed cpio.
    pub initrd: PathBuf,
    /// Backing files, one virtio disk each (serial `dN`).
    pub disks: Vec<PathBuf>,
    /// Host directory shared as 9p tag `share`.
    pub share: PathBuf,
    /// Guest memory, MiB.
    pub memory_mib: u64,
    /// Virtual CPUs.
    pub cpus: usize,
    /// Drive throttling by disk index: (bytes per second, IOs per second), reads and writes
    /// together — the emulated slow disks.
    pub throttle: std::collections::BTreeMap<usize, (Option<u64>, Option<u64>)>,
    /// Log every write each disk completes to `dN.wlog` beside it (qemu's `blklogwrites`), so
    /// the host can roll a disk's volatile cache back after a power cut
    /// ([`super::writelog`]). Flushes then reach the log, not the host's disk.
    pub write_logs: bool,
    /// Start with the CPU stopped (qemu's `-S`), so the guest never runs and prints nothing:
    /// the KVM try of `IOLAB_VM_KVM=frozen` ([`super::boot`]), a KVM that cannot run the
    /// kernel, on any machine.
    pub stopped: bool,
}

/// Console markers `/init` prints.
pub const MARK_KERNEL: &str = "iolab-guest: kernel up";
/// The share is mounted: the guest starts touching disks now.
pub const MARK_READY: &str = "iolab-guest: ready";
/// The script finished.
pub const MARK_DONE: &str = "iolab-guest: done";

/// Waits: the kernel must reach `/init` and the modules must load within these.
pub const KERNEL_TIMEOUT: Duration = Duration::from_secs(90);
/// See [`KERNEL_TIMEOUT`].
pub const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// The first PCI slot of the disks: slots 0 and 1 are the host bridge and the PIIX3, the
/// slots between are left to the devices qemu places itself (the 9p share).
pub const FIRST_DISK_SLOT: usize = 5;

/// Most disks a VM can have: eight functions in each slot from [`FIRST_DISK_SLOT`] to 31.
pub const MAX_DISKS: usize = (32 - FIRST_DISK_SLOT) * 8;

/// Where disk `i` sits on the PCI bus: eight disks to a slot, one per function (function 0
/// says the slot is multifunction). One device per slot ran out of slots at 29 disks ("PCI:
/// no slot/function available for virtio-blk-pci", measured with 45); this way 216 fit on the
/// root bus without bridges, and the guest still finds them in qemu's order (the kernel scans
/// slot by slot, function by function), so `vda` is serial `d0` as before.
pub fn disk_address(i: usize) -> String {
    let (slot, func) = (FIRST_DISK_SLOT + i / 8, i % 8);
    if func == 0 {
        format!("addr={slot:#x}.0,multifunction=on")
    } else {
        format!("addr={slot:#x}.{func}")
    }
}

/// The qemu command line.
pub fn argv(c: &VmConfig, accel: Accel) -> Vec<String> {
    let mut a: Vec<String> = vec!["qemu-system-x86_64".into()];
    match accel {
        Accel::Kvm => a.extend(["-accel", "kvm", "-cpu", "host"].map(String::from)),
        Accel::Tcg => a.extend(["-accel", "tcg", "-cpu", "max"].map(String::from)),
    }
    a.extend(
        [
            "-nodefaults",
            "-no-reboot",
            "-display",
            "none",
            "-serial",
            "stdio",
            "-m",
        ]
        .map(String::from),
    );
    a.push(c.memory_mib.to_string());
    a.push("-smp".into());
    a.push(c.cpus.to_string());
    a.push("-kernel".into());
    a.push(c.kernel.to_string_lossy().into_owned());
    a.push("-initrd".into());
    a.push(c.initrd.to_string_lossy().into_owned());
    a.push("-append".into());
    a.push("console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init".into());
    if c.stopped {
        a.push("-S".into());
    }
    for (i, d) in c.disks.iter().enumerate() {
        let mut limits = String::new();
        if let Some((bps, iops)) = c.throttle.get(&i) {
            if let Some(b) = bps {
                limits.push_str(&format!(",throttling.bps-total={b}"));
            }
            if let Some(n) = iops {
                limits.push_str(&format!(",throttling.iops-total={n}"));
            }
        }
        let file = d.to_string_lossy().replace(',', ",,");
        a.push("-drive".into());
        if c.write_logs {
            // The guest's flushes must reach blklogwrites (cache=unsafe would drop them above
            // it); its two files need not flush on the host, which does not lose power.
            let log = d
                .with_extension("wlog")
                .to_string_lossy()
                .replace(',', ",,");
            a.push(format!(
                "driver=blklogwrites,file.driver=file,file.filename={file},log.driver=file,log.filename={log},\
                 if=none,id=d{i},cache.direct=off,cache.no-flush=off,file.cache.no-flush=on,log.cache.no-flush=on,\
                 discard=unmap,detect-zeroes=unmap{limits}"
            ));
        } else {
            a.push(format!(
                "file={file},if=none,id=d{i},format=raw,cache=unsafe,discard=unmap,detect-zeroes=unmap{limits}"
            ));
        }
        a.push("-device".into());
        a.push(format!(
            "virtio-blk-pci,drive=d{i},serial=d{i},{}",
            disk_address(i)
        ));
    }
    a.push("-virtfs".into());
    a.push(format!(
        "local,path={},mount_tag=share,security_model=none,id=share",
        c.share.to_string_lossy().replace(',', ",,")
    ));
    a
}

/// A running VM: the qemu child and its console.
pub struct Vm {
    child: Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// The thread collecting stderr: joined once qemu is dead, so [`Vm::stderr`] then holds
    /// all of it (an abort's reason is its last words).
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    /// The last console lines, for error messages.
    pub tail: Vec<String>,
    /// When qemu started.
    pub started: Instant,
}

impl Vm {
    /// Starts qemu; the console goes to `log` as well as to [`Vm::next_line`].
    pub fn start(c: &VmConfig, accel: Accel, log: &Path) -> Result<Vm, VmError> {
        let a = argv(c, accel);
        let mut cmd = Command::new(&a[0]);
        cmd.args(&a[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // qemu dies with us even after a SIGKILL; --cleanup covers the rest.
        crate::sys::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| VmError::Tool(format!("cannot start qemu-system-x86_64: {e}")))?;
        let (tx, rx) = channel();
        let out = child.stdout.take();
        let mut logf = std::fs::File::create(log).ok();
        std::thread::spawn(move || {
            let Some(out) = out else { return };
            for line in BufReader::new(out).split(b'\n').map_while(Result::ok) {
                if let Some(f) = logf.as_mut() {
                    use std::io::Write;
                    let _ = f.write_all(&line);
                    let _ = f.write_all(b"\n");
                }
                let text = String::from_utf8_lossy(&line).into_owned();
                if tx.send(text).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let err = child.stderr.take();
        let sink = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            let Some(err) = err else { return };
            // Line by line, so what qemu says while it runs can be read while it runs.
            for line in BufReader::new(err).split(b'\n').map_while(Result::ok) {
                if let Ok(mut g) = sink.lock() {
                    g.push_str(&String::from_utf8_lossy(&line));
                    g.push('\n');
                }
            }
        });
        Ok(Vm {
            child,
            lines: rx,
            stderr,
            stderr_reader: Some(stderr_reader),
            tail: Vec::new(),
            started: Instant::now(),
        })
    }

    /// qemu's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What qemu wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|g| g.clone()).unwrap_or_default()
    }

    /// The next console line within `wait`: `Ok(None)` on timeout, `Err` once qemu has exited
    /// and every line was read (with its exit status).
    pub fn next_line(&mut self, wait: Duration) -> Result<Option<String>, String> {
        match self.lines.recv_timeout(wait) {
            Ok(l) => {
                let l = l.trim_end_matches('\r').to_string();
                self.tail.push(l.clone());
                if self.tail.len() > 30 {
                    self.tail.remove(0);
                }
                Ok(Some(l))
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                let st = self
                    .child
                    .wait()
                    .map_or_else(|e| format!("cannot wait: {e}"), |s| s.to_string());
                Err(st)
            }
        }
    }

    /// Kills qemu and reaps it; its stderr is then complete.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(t) = self.stderr_reader.take() {
            let _ = t.join();
        }
    }

    /// The last console lines and qemu's stderr, for a message.
    pub fn last_words(&self) -> String {
        let mut s: Vec<String> = self
            .tail
            .iter()
            .rev()
            .take(8)
            .rev()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        let e = self.stderr();
        if let Some(l) = e.lines().rev().find(|l| !l.trim().is_empty()) {
            s.push(format!("qemu: {}", l.trim()));
        }
        if s.is_empty() {
            "no console output".into()
        } else {
            s.join(" | ")
        }
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

/// Whether `/dev/kvm` can be opened at all (whether it can run this kernel is learnt by trying).
pub fn kvm_openable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One device per slot ran out of PCI slots at 29 disks; eight functions to a
    /// slot give every disk an address of its own, in qemu's order, up to [`MAX_DISKS`]. The
    /// throttle of a disk far down the bus stays on its own drive.
    #[test]
    fn many_disks_share_slots_eight_functions_each() {
        let n = 66;
        let c = VmConfig {
            kernel: "/k".into(),
            initrd: "/i".into(),
            disks: (0..n).map(|i| format!("/d/d{i}.img").into()).collect(),
            share: "/s".into(),
            memory_mib: 1024,
            cpus: 2,
            throttle: [(50, (None, Some(300)))].into_iter().collect(),
            write_logs: false,
            stopped: false,
        };
        let a = argv(&c, Accel::Tcg);
        let devs: Vec<&String> = a
            .iter()
            .filter(|x| x.starts_with("virtio-blk-pci"))
            .collect();
        assert_eq!(devs.len(), n);
        let addrs: std::collections::BTreeSet<String> = devs
            .iter()
            .map(|d| {
                d.split("addr=")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(addrs.len(), n, "every disk its own slot.function");
        assert_eq!(disk_address(8), "addr=0x6.0,multifunction=on");
        assert_eq!(disk_address(65), "addr=0xd.1");
        let (slot, _) = disk_address(MAX_DISKS - 1)
            .trim_start_matches("addr=0x")
            .split_once('.')
            .map(|(s, f)| (usize::from_str_radix(s, 16).unwrap(), f.to_string()))
            .unwrap();
        assert_eq!(slot, 31);
        assert!(
            a.iter()
                .any(|x| x.contains("id=d50,") && x.ends_with("throttling.iops-total=300"))
        );
        assert!(
            a.iter()
                .any(|x| x == "virtio-blk-pci,drive=d50,serial=d50,addr=0xb.2")
        );
    }

    #[test]
    fn command_line() {
        let c = VmConfig {
            kernel: "/c/vmlinux".into(),
            initrd: "/c/i.cpio".into(),
            disks: vec!["/d/d0.img".into(), "/d/d1.img".into()],
            share: "/d/share".into(),
            memory_mib: 1024,
            cpus: 2,
            throttle: [(1, (Some(20 << 20), Some(150)))].into_iter().collect(),
            write_logs: false,
            stopped: false,
        };
        let a = argv(&c, Accel::Tcg).join(" ");
        assert!(
            a.starts_with("qemu-system-x86_64 -accel tcg -cpu max "),
            "{a}"
        );
        assert!(a.contains("-drive file=/d/d1.img,if=none,id=d1,format=raw,cache=unsafe,discard=unmap,detect-zeroes=unmap,throttling.bps-total=20971520,throttling.iops-total=150 -device virtio-blk-pci,drive=d1,serial=d1"), "{a}");
        assert!(
            a.contains("detect-zeroes=unmap -device virtio-blk-pci,drive=d0,serial=d0"),
            "{a}"
        );
        assert!(
            a.contains("serial=d0,addr=0x5.0,multifunction=on -drive"),
            "{a}"
        );
        assert!(a.contains("serial=d1,addr=0x5.1 -"), "{a}");
        assert!(a.contains("-virtfs local,path=/d/share,mount_tag=share,security_model=none"));
        assert!(a.contains("-kernel /c/vmlinux -initrd /c/i.cpio -append console=ttyS0"));
        assert!(
            argv(&c, Accel::Kvm)
                .join(" ")
                .contains("-accel kvm -cpu host")
        );
        assert_eq!(Accel::Tcg.environment(), "vm (tcg)");
        assert!(!a.contains(" -S"), "{a}");
        let stopped = VmConfig {
            stopped: true,
            ..c.clone()
        };
        assert!(argv(&stopped, Accel::Tcg).iter().any(|x| x == "-S"));
        // With write logs each disk is a blklogwrites node over its file and its log,
        // whose flushes are not dropped above the log, throttled as before.
        let logged = argv(
            &VmConfig {
                write_logs: true,
                ..c.clone()
            },
            Accel::Tcg,
        )
        .join(" ");
        assert!(logged.contains("-drive driver=blklogwrites,file.driver=file,file.filename=/d/d1.img,log.driver=file,log.filename=/d/d1.wlog,if=none,id=d1,cache.direct=off,cache.no-flush=off,"), "{logged}");
        assert!(
            logged.contains("throttling.iops-total=150 -device virtio-blk-pci,drive=d1,serial=d1"),
            "{logged}"
        );
        assert!(!logged.contains("cache=unsafe"), "{logged}");
    }
}
