//! One `iolab lab --vm`: prepare the kernel and initramfs, make the disks, boot (KVM first when
//! it may work, else TCG), let the guest run the lab, copy its runs into the host store, and
//! remove every process and file made — on success, error, Ctrl-C, and (through the state
//! file) after a SIGKILL with `iolab lab --cleanup`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::guest::{self, RESULTS_DB, SPARE_DISKS};
use super::qemu::{self, Accel, MARK_DONE, Vm, VmConfig};
use super::{VmError, initramfs, kernel, prereq, writelog};
use crate::lab::{Disks, LabSpec};
use crate::layout::Runner;
use crate::layout::state::{Owned, StateFile, process_start, teardown};
use crate::sample::RunRecord;
use crate::sample::power::DiskRollback;
use crate::spec::lab::{CacheModel, PowerCutSpec};
use crate::store::{RunFilter, Store};

/// How the VM lab runs.
#[derive(Debug, Clone)]
pub struct VmOptions {
    /// Flags for the guest's `iolab lab` (`--quick`, `--size 8MiB`, `--format json`...).
    pub lab_args: Vec<String>,
    /// Guest memory, MiB.
    pub memory_mib: u64,
    /// Virtual CPUs.
    pub cpus: usize,
    /// Where the state file goes (for `--cleanup`).
    pub state_dir: PathBuf,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            lab_args: Vec::new(),
            memory_mib: 1024,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            state_dir: crate::layout::state::state_dir(),
        }
    }
}

/// What a VM lab did.
#[derive(Debug, Clone)]
pub struct VmOutcome {
    /// How the guest ran.
    pub accel: Accel,
    /// Seconds preparing the kernel and initramfs (near zero once cached).
    pub prepare_seconds: f64,
    /// Seconds from qemu's start to the guest being ready (kernel, modules, share), per boot
    /// attempt in order.
    pub boot_seconds: Vec<(Accel, f64)>,
    /// Seconds the guest's lab ran.
    pub lab_seconds: f64,
    /// The guest lab's exit code (`None`: the VM ended without one).
    pub exit_code: Option<i32>,
    /// The guest lab's standard output (its table, Markdown or JSON).
    pub stdout: String,
    /// Run ids copied into the host store.
    pub copied: Vec<String>,
    /// Things the user should know (a KVM fallback).
    pub notes: Vec<String>,
    /// Seconds a KVM try that failed cost before the TCG boot (`None`: no try, or it worked).
    pub kvm_try_seconds: Option<f64>,
    /// Power cuts made (`powercut` layouts): the VM killed, then booted again on its disks.
    pub power_cuts: usize,
}

impl VmOutcome {
    fn new(prepare_seconds: f64) -> VmOutcome {
        VmOutcome {
            accel: Accel::Tcg,
            prepare_seconds,
            boot_seconds: Vec::new(),
            lab_seconds: 0.0,
            exit_code: None,
            stdout: String::new(),
            copied: Vec::new(),
            notes: Vec::new(),
            kvm_try_seconds: None,
            power_cuts: 0,
        }
    }
}

/// The guest lab's flags: the user's, and `--powercut-dir` when the spec cuts the power (its
/// directory made in the share); and how many cuts the spec asks for.
fn guest_lab_args(
    spec: &LabSpec,
    opts: &VmOptions,
    share: &Path,
) -> Result<(Vec<String>, usize), VmError> {
    let mut args = opts.lab_args.clone();
    let cuts: usize = spec
        .layouts
        .iter()
        .filter_map(|l| l.powercut.map(|p| p.cuts as usize))
        .sum();
    if guest::wants_power_cuts(spec) {
        let pc = share.join(guest::POWERCUT_DIR);
        std::fs::create_dir_all(&pc).map_err(|e| VmError::io("cannot create", &pc, e))?;
        args.push("--powercut-dir".into());
        args.push(format!("{}/{}", guest::SHARE, guest::POWERCUT_DIR));
    }
    Ok((args, cuts))
}

/// Everything recorded in the state file, torn down when dropped.
struct Owner {
    sf: Option<StateFile>,
}

impl Owner {
    fn push(&mut self, o: Owned) -> Result<(), VmError> {
        if let Some(sf) = self.sf.as_mut() {
            sf.state.objects.push(o);
            sf.save()?;
        }
        Ok(())
    }

    /// Removes everything; returns what could not be removed.
    fn finish(&mut self) -> Vec<String> {
        let Some(sf) = self.sf.take() else {
            return Vec::new();
        };
        let left: Vec<String> = teardown(&Runner::real(), &sf.state.objects, false)
            .into_iter()
            .map(|(o, e)| format!("{}: {e}", o.label()))
            .collect();
        if left.is_empty() {
            let _ = sf.remove();
        }
        left
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.finish();
    }
}

pub(super) fn kvm_marker(cache: &Path, k: &kernel::Kernel) -> PathBuf {
    cache.join(&k.version).join("kvm-unusable")
}

/// Runs the lab of `spec` inside a VM. `console` gets every guest console line, with whether
/// the guest's lab has started; `store` (when given) receives the runs.
pub fn run_lab_in_vm(
    spec: &LabSpec,
    opts: &VmOptions,
    store: Option<&mut Store>,
    console: &mut dyn FnMut(&str, bool),
) -> Result<VmOutcome, VmError> {
    let t0 = Instant::now();
    super::boot::check_env()?;
    let (count, size) = guest::disks_of(spec)?;
    let n = count + SPARE_DISKS;
    let tools = prereq::check()?;
    let k = kernel::find()?;
    let cache = super::cache_dir();
    let vmlinux = kernel::vmlinux(&k, &cache)?;
    let initrd = initrd_for(spec, &tools, &k, &cache)?;
    let prepare_seconds = t0.elapsed().as_secs_f64();
    let Disks::Loop { dir, .. } = &spec.disks else {
        return Err(VmError::Spec("--vm needs disks.loop".into()));
    };
    let id = crate::lab::new_lab_id();
    let mut owner = Owner {
        sf: Some(StateFile::create(&opts.state_dir, &id, &spec.file)?),
    };
    if !dir.exists() {
        owner.push(Owned::Dir { path: dir.clone() })?;
        std::fs::create_dir_all(dir).map_err(|e| VmError::io("cannot create", dir, e))?;
    }
    check_space(dir, n as u64 * size)?;
    let work = dir.join(format!("iolab-vm-{id}"));
    owner.push(Owned::TempDir { path: work.clone() })?;
    let share = work.join("share");
    std::fs::create_dir_all(&share).map_err(|e| VmError::io("cannot create", &share, e))?;
    let disks = make_disks(&work, n, size)?;
    let initrd = hold_initrd(&initrd, &work, || initrd_for(spec, &tools, &k, &cache))?;
    let devices = guest::device_names(n);
    let (lab_args, cuts_wanted) = guest_lab_args(spec, opts, &share)?;
    guest::prepare_share(&share, spec, &devices, &lab_args)?;
    crate::pause::at("vm disks created");
    let cfg = vm_config(spec, opts, vmlinux, initrd, disks, &share);
    let logged = cfg.write_logs.then(|| writelog::Logged {
        disks: cfg.disks.clone(),
    });
    let mut out = VmOutcome::new(prepare_seconds);
    let marker = kvm_marker(&cache, &k);
    let mut start = |cfg: &VmConfig, accel: Accel| -> Result<Vm, VmError> {
        if let Some(l) = &logged {
            l.before_boot()?;
        }
        let vm = Vm::start(cfg, accel, &work.join("console.log"))?;
        owner.push(Owned::Process {
            pid: vm.pid(),
            start: process_start(vm.pid()),
            what: "qemu".into(),
        })?;
        Ok(vm)
    };
    let booted = super::boot::boot(&cfg, &marker, &mut start, console, &mut out.notes)?;
    out.boot_seconds.push((booted.accel, booted.seconds));
    out.accel = booted.accel;
    out.kvm_try_seconds = booted.kvm_try_seconds;
    let vm = booted.vm;
    crate::pause::at("vm booted");
    let t_lab = Instant::now();
    let power = Power {
        cfg: &cfg,
        work: &work,
        cuts_wanted,
        logged: logged.as_ref(),
        models: spec
            .layouts
            .iter()
            .filter_map(|l| Some((l.name.clone(), l.powercut?)))
            .collect(),
    };
    power.run(vm, &mut owner, &mut out, console)?;
    out.lab_seconds = t_lab.elapsed().as_secs_f64();
    crate::pause::at("vm guest finished");
    read_share(&share, &mut out);
    keep_manifests(&share, &opts.state_dir, &mut out.notes);
    copy_results(&share, store, &mut out)?;
    crate::pause::at("vm results copied");
    let left = owner.finish();
    if !left.is_empty() {
        out.notes
            .push(format!("could not remove: {}", left.join("; ")));
    }
    Ok(out)
}

/// The guest's `n` disk images of `size` bytes (sparse) in `work`.
fn make_disks(work: &Path, n: usize, size: u64) -> Result<Vec<PathBuf>, VmError> {
    let mut disks = Vec::new();
    for i in 0..n {
        let p = work.join(format!("d{i}.img"));
        std::fs::File::create(&p)
            .and_then(|f| f.set_len(size))
            .map_err(|e| VmError::io("cannot create disk", &p, e))?;
        disks.push(p);
    }
    Ok(disks)
}

/// Copies the runs the guest stored in the share into `store` (when one is given and the
/// guest stored any), each labelled with how the VM ran.
fn copy_results(
    share: &Path,
    store: Option<&mut Store>,
    out: &mut VmOutcome,
) -> Result<(), VmError> {
    let db = share.join(RESULTS_DB);
    if let (Some(store), true) = (store, db.is_file()) {
        let from = Store::open_existing(&db)?;
        let env = out.accel.environment();
        let mut edit = |r: &mut RunRecord| label_run(r, &env);
        out.copied =
            crate::store::transfer::copy_runs(&from, store, &RunFilter::default(), &mut edit)?
                .copied;
    }
    Ok(())
}

/// The VM for `spec`: its disks (throttled where the spec makes a disk slow; their writes
/// logged when some layout's disks have a volatile cache) and the share.
fn vm_config(
    spec: &LabSpec,
    opts: &VmOptions,
    kernel: PathBuf,
    initrd: PathBuf,
    disks: Vec<PathBuf>,
    share: &Path,
) -> VmConfig {
    VmConfig {
        kernel,
        initrd,
        disks,
        share: share.to_path_buf(),
        memory_mib: opts.memory_mib,
        cpus: opts.cpus,
        throttle: spec
            .slow_disks
            .iter()
            .filter(|d| d.bandwidth.is_some() || d.iops.is_some())
            .map(|d| (d.disk, (d.bandwidth, d.iops)))
            .collect(),
        write_logs: spec
            .layouts
            .iter()
            .any(|l| l.powercut.is_some_and(|p| p.disk_cache.logs_writes())),
        stopped: false,
    }
}

/// The lab's own hold on its initramfs: a hard link in its work directory (a copy across
/// filesystems). The cache keeps one initramfs per flavour, so another iolab build starting a
/// VM evicts this one; a lab boots again after every power cut, minutes later, and must not
/// find it gone. When it is already gone, `rebuild` makes it again (three tries).
pub(super) fn hold_initrd(
    built: &Path,
    work: &Path,
    mut rebuild: impl FnMut() -> Result<PathBuf, VmError>,
) -> Result<PathBuf, VmError> {
    let held = work.join("initrd.cpio");
    let mut src = built.to_path_buf();
    for _ in 0..3 {
        let r = std::fs::hard_link(&src, &held).or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Err(e)
            } else {
                std::fs::copy(&src, &held).map(|_| ())
            }
        });
        match r {
            Ok(()) => return Ok(held),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => src = rebuild()?,
            Err(e) => return Err(VmError::io("cannot keep the initramfs as", &held, e)),
        }
    }
    Err(VmError::Tool(format!(
        "the cached initramfs {} kept vanishing (another iolab build evicting it?)",
        src.display()
    )))
}

/// The initramfs for this spec: with the zfs module and tools when a layout is a ZFS pool.
fn initrd_for(
    spec: &LabSpec,
    tools: &prereq::HostTools,
    k: &kernel::Kernel,
    cache: &Path,
) -> Result<PathBuf, VmError> {
    let exe = std::env::current_exe()
        .map_err(|e| VmError::Tool(format!("cannot find the iolab binary: {e}")))?;
    let zfs = if super::zfs::spec_needs_zfs(spec) {
        Some(initramfs::GuestZfs {
            modules: super::zfs::find(&super::zfs::cache_root(), &k.version)?,
            tools: super::zfs::tools()?,
        })
    } else {
        None
    };
    let exe = initramfs::guest_iolab(&exe, cache, k);
    let contents = initramfs::contents(tools, k, &exe, zfs.as_ref())?;
    let flavour = if zfs.is_some() { "zfs" } else { "base" };
    initramfs::build(&contents, cache, k, flavour)
}

/// The guest lab's exit code and output from the share; the guest kernel's complaints when it
/// failed.
fn read_share(share: &Path, out: &mut VmOutcome) {
    out.exit_code = std::fs::read_to_string(share.join("rc"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    out.stdout = std::fs::read_to_string(share.join("out.txt")).unwrap_or_default();
    if out.exit_code != Some(0) {
        let log = std::fs::read_to_string(share.join(guest::GUEST_DMESG)).unwrap_or_default();
        out.notes.extend(kernel_complaints(&log));
    }
}

/// The guest kernel's error lines (I/O errors, checksum failures, md/dm/zfs/btrfs
/// complaints), the last 12, for a lab that failed: the evidence vanishes with the VM.
pub fn kernel_complaints(dmesg: &str) -> Vec<String> {
    const WORDS: &[&str] = &[
        "error",
        "csum",
        "fail",
        "corrupt",
        "BTRFS",
        "md/",
        "md:",
        "raid",
        "ZFS",
        "zio",
        "device-mapper",
        "WARNING",
        "BUG",
    ];
    let lines: Vec<&str> = dmesg
        .lines()
        .filter(|l| WORDS.iter().any(|w| l.contains(w)))
        .filter(|l| !l.contains("insmod"))
        .collect();
    lines[lines.len().saturating_sub(12)..]
        .iter()
        .map(|l| format!("guest kernel: {}", l.trim()))
        .collect()
}

/// Labels a run made in the VM: `environment` in its layout description (the setup the
/// reports show) and a note that its speeds are emulated. Its host name becomes this host's
/// (the guest has none: `(none)`), so reports say `vm (tcg) on HOST`; its other
/// system facts (kernel, CPUs, RAM) stay the guest's.
pub fn label_run(r: &mut RunRecord, environment: &str) {
    if let Some(l) = r.layout.as_mut() {
        l.environment = Some(environment.to_string());
    }
    if let Some(h) = crate::system::read_trim("/proc/sys/kernel/hostname") {
        r.system.hostname = h;
    }
    r.notes.push(format!(
        "environment: {environment}: measured inside a virtual machine; speeds are emulated, not the hardware's"
    ));
}

/// The checksums of a data set that came back damaged outlive the guest as evidence: they go
/// to the host's state directory under the same name (the path the guest's report printed,
/// when the host's state directory is `/run/iolab` too).
fn keep_manifests(share: &Path, state_dir: &Path, notes: &mut Vec<String>) {
    for e in std::fs::read_dir(share).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("manifest-") && name.ends_with(".xxh3")) {
            continue;
        }
        let dst = state_dir.join(&name);
        match std::fs::copy(e.path(), &dst) {
            Ok(_) => notes.push(format!(
                "checksums of the damaged data set kept in {}",
                dst.display()
            )),
            Err(err) => notes.push(format!("could not keep {name}: {err}")),
        }
    }
}

fn check_space(dir: &Path, need: u64) -> Result<(), VmError> {
    let Ok((_, avail)) = crate::layout::fs::statvfs_bytes(dir) else {
        return Ok(());
    };
    if avail < need {
        return Err(VmError::Spec(format!(
            "too little space in {} for the VM's disks: they may grow to {} and {} is free; free some space or pass --disk-dir DIR",
            dir.display(),
            crate::units::format_bytes(need),
            crate::units::format_bytes(avail)
        )));
    }
    Ok(())
}

/// What the host needs to cut the power and boot again on the same disks.
struct Power<'a> {
    cfg: &'a VmConfig,
    work: &'a Path,
    /// Cuts the spec asks for: the guest may not ask for more.
    cuts_wanted: usize,
    /// The disks' write logs, when some layout's disks have a volatile cache.
    logged: Option<&'a writelog::Logged>,
    /// Each power-cut layout's plan, by name: its disks' cache model per cut.
    models: BTreeMap<String, PowerCutSpec>,
}

impl Power<'_> {
    /// Relays the guest's lab to its end; each time the guest asks, cuts the power at the
    /// moment it names, writes down when, and boots the VM again on the same disk files.
    fn run(
        &self,
        mut vm: Vm,
        owner: &mut Owner,
        out: &mut VmOutcome,
        console: &mut dyn FnMut(&str, bool),
    ) -> Result<(), VmError> {
        while let GuestEnd::Cut { cut, after_ms } = run_guest(&mut vm, console)? {
            if out.power_cuts >= self.cuts_wanted {
                vm.kill();
                return Err(VmError::Boot(format!(
                    "the guest asked for more power cuts than the spec's {}",
                    self.cuts_wanted
                )));
            }
            let killed = cut_power(&mut vm, after_ms, console)?;
            out.power_cuts += 1;
            drop(vm);
            let rolled = self.roll_back(&cut)?;
            record_cut(&self.work.join("share"), &cut, killed, rolled)?;
            if let Some(l) = self.logged {
                l.before_boot()?;
            }
            let log = self.work.join(format!("console-{}.log", out.power_cuts));
            vm = Vm::start(self.cfg, out.accel, &log)?;
            owner.push(Owned::Process {
                pid: vm.pid(),
                start: process_start(vm.pid()),
                what: "qemu".into(),
            })?;
            let secs = super::boot::wait_ready(&mut vm, console, qemu::KERNEL_TIMEOUT)?;
            out.boot_seconds.push((out.accel, secs));
        }
        Ok(())
    }
}

impl Power<'_> {
    /// After cut `NAME K`: each disk rolled back as its cache model for that cut allows (a
    /// point of its own, seeded by the layout's seed and the cut); `None` when the disks had
    /// no volatile cache this cut.
    fn roll_back(&self, cut: &str) -> Result<Option<(CacheModel, Vec<DiskRollback>)>, VmError> {
        let (Some(logged), Some((name, k))) = (self.logged, cut.rsplit_once(' ')) else {
            return Ok(None);
        };
        let (Some(pc), Ok(k)) = (self.models.get(name), k.parse::<u32>()) else {
            return Ok(None);
        };
        let model = pc.disk_cache.for_cut(k);
        if model == CacheModel::None {
            return Ok(None);
        }
        let seed = pc.seed ^ u64::from(k).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let names = guest::device_names(logged.disks.len());
        Ok(Some((model, logged.roll_back(model, seed, &names)?)))
    }
}

/// How a guest's run ended.
#[derive(Debug, PartialEq)]
enum GuestEnd {
    /// qemu exited (the guest powered off, or was killed after saying it was done).
    Done,
    /// The guest's writer runs and the power is to go `after_ms` from now: cut `NAME K`.
    Cut { cut: String, after_ms: u64 },
}

/// Relays the console for `after_ms`, then kills qemu at once: the power cut. Returns the
/// milliseconds that passed.
fn cut_power(
    vm: &mut Vm,
    after_ms: u64,
    console: &mut dyn FnMut(&str, bool),
) -> Result<u64, VmError> {
    let t = Instant::now();
    let at = Duration::from_millis(after_ms);
    loop {
        if crate::signals::stop_requested() {
            vm.kill();
            return Err(VmError::Interrupted);
        }
        let left = at.saturating_sub(t.elapsed());
        if left.is_zero() {
            break;
        }
        match vm.next_line(left.min(Duration::from_millis(100))) {
            Ok(Some(l)) => console(&l, true),
            Ok(None) => {}
            Err(status) => {
                return Err(VmError::Boot(format!(
                    "the VM stopped before its power was cut ({status}): {}",
                    vm.last_words()
                )));
            }
        }
    }
    vm.kill();
    Ok(t.elapsed().as_millis() as u64)
}

/// Writes down when the host cut the power and, with a volatile disk cache, the model and what
/// each disk kept (`NAME K killed_after_ms=N cache=MODEL`, the disks in `NAME-K.rollback.json`),
/// for the guest's next boot to report.
fn record_cut(
    share: &Path,
    cut: &str,
    killed_ms: u64,
    rolled: Option<(CacheModel, Vec<DiskRollback>)>,
) -> Result<(), VmError> {
    use std::io::Write;
    let dir = share.join(guest::POWERCUT_DIR);
    let mut line = format!("{cut} killed_after_ms={killed_ms}");
    if let Some((model, disks)) = rolled {
        line.push_str(&format!(" cache={}", model.name()));
        let p = dir.join(crate::lab::powercut::rollback_file(cut));
        let json = serde_json::to_vec_pretty(&disks).unwrap_or_default();
        std::fs::write(&p, json).map_err(|e| VmError::io("cannot write", &p, e))?;
    }
    let p = dir.join(guest::HOST_CUT_LOG);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .and_then(|mut f| writeln!(f, "{line}"))
        .map_err(|e| VmError::io("cannot write", &p, e))
}

/// Relays the console while the guest runs the lab, until qemu exits or the guest asks for
/// its power to be cut; Ctrl-C kills the VM.
fn run_guest(vm: &mut Vm, console: &mut dyn FnMut(&str, bool)) -> Result<GuestEnd, VmError> {
    let mut done_at: Option<Instant> = None;
    loop {
        if crate::signals::stop_requested() {
            vm.kill();
            return Err(VmError::Interrupted);
        }
        if done_at.is_some_and(|t| t.elapsed() > Duration::from_secs(60)) {
            vm.kill();
            return Ok(GuestEnd::Done);
        }
        match vm.next_line(Duration::from_millis(200)) {
            Ok(Some(l)) => {
                if l.contains(MARK_DONE) {
                    done_at = Some(Instant::now());
                }
                console(&l, true);
                if let Some((cut, after_ms)) = crate::lab::powercut::parse_cut(&l) {
                    return Ok(GuestEnd::Cut { cut, after_ms });
                }
            }
            Ok(None) => {}
            Err(_) => return Ok(GuestEnd::Done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lab keeps its initramfs when the cache's copy goes (another build evicted it), and
    /// makes it again when it went before the lab could hold it.
    #[test]
    fn the_lab_holds_its_initramfs_against_eviction() {
        let d = tempfile::tempdir().unwrap();
        let (cache, work) = (d.path().join("cache.cpio"), d.path().join("work"));
        std::fs::create_dir(&work).unwrap();
        std::fs::write(&cache, b"cpio").unwrap();
        let held = hold_initrd(&cache, &work, || unreachable!()).unwrap();
        std::fs::remove_file(&cache).unwrap();
        assert_eq!(std::fs::read(&held).unwrap(), b"cpio");
        std::fs::remove_file(&held).unwrap();
        let mut rebuilt = 0;
        let held = hold_initrd(&cache, &work, || {
            rebuilt += 1;
            std::fs::write(&cache, b"again").map_err(|e| VmError::io("cannot write", &cache, e))?;
            Ok(cache.clone())
        })
        .map_err(|e| e.to_string())
        .unwrap();
        assert_eq!(
            (rebuilt, std::fs::read(&held).unwrap()),
            (1, b"again".to_vec())
        );
    }
}
