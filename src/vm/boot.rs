//! The first boot of a VM: KVM tried first when it may work, told in seconds, then software
//! emulation (TCG), with one note saying so.
//!
//! `/dev/kvm` opening says nothing about whether it can run the guest's kernel: on some
//! machines qemu aborts at once ("failed to set MSR"), on others it runs and the kernel prints
//! nothing, ever. A kernel under KVM reaches `/init` within a second or two, so the KVM try
//! gives up after [`KVM_TRY_TIMEOUT`] of silence instead of the 90 s a TCG boot may need, and
//! the verdict is kept per kernel (`kvm-unusable` in the cache) so the next lab skips the try.
//!
//! `IOLAB_VM_KVM` chooses the try: unset, KVM when `/dev/kvm` opens and the kernel has not
//! failed under it before; `off`, never; `frozen`, a qemu whose CPU never starts (`-S`): it
//! prints nothing, as KVM does on the machines where it cannot run the kernel, so that
//! failure path runs for real (qemu, the timeout, the fallback, the note) on any machine. A
//! frozen try leaves no verdict behind.

use std::path::Path;
use std::time::{Duration, Instant};

use super::VmError;
use super::qemu::{Accel, Vm, VmConfig};

/// How long the KVM try waits for the guest's first sign of life (`/init`'s first line). A
/// kernel under KVM gets there in about a second; under TCG it takes 3-5 s, which is why a
/// TCG boot waits [`super::qemu::KERNEL_TIMEOUT`].
pub const KVM_TRY_TIMEOUT: Duration = Duration::from_secs(5);

/// The environment variable that chooses the KVM try (module documentation).
pub const KVM_ENV: &str = "IOLAB_VM_KVM";

/// What the KVM try is, from [`KVM_ENV`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KvmTry {
    /// KVM, when `/dev/kvm` opens and the kernel has not failed under it before.
    Auto,
    /// No try: TCG at once.
    Off,
    /// A VM whose CPU never starts, standing in for a KVM that cannot run the kernel.
    Frozen,
}

impl KvmTry {
    fn from_env() -> Result<KvmTry, VmError> {
        match std::env::var(KVM_ENV).as_deref() {
            Err(_) | Ok("" | "auto") => Ok(KvmTry::Auto),
            Ok("off") => Ok(KvmTry::Off),
            Ok("frozen") => Ok(KvmTry::Frozen),
            Ok(other) => Err(VmError::Spec(format!(
                "{KVM_ENV}={other}: give auto, off or frozen (a KVM try that never starts, for tests)"
            ))),
        }
    }
}

/// Checks [`KVM_ENV`] before anything is prepared: a value it does not know is the user's to
/// fix.
pub fn check_env() -> Result<(), VmError> {
    KvmTry::from_env().map(drop)
}

/// A booted VM: how it runs and how long qemu took to get the guest ready.
pub struct Booted {
    /// The VM, its guest ready.
    pub vm: Vm,
    /// How its CPU runs.
    pub accel: Accel,
    /// Seconds from qemu's start to the guest being ready.
    pub seconds: f64,
    /// Seconds a failed KVM try cost, when one was made.
    pub kvm_try_seconds: Option<f64>,
}

/// Boots `cfg`: the KVM try first (as [`KvmTry`] says), then TCG. `start` starts qemu for a
/// configuration and accelerator (the caller records it for cleanup); `marker` is this
/// kernel's `kvm-unusable` file; a failed try adds one note to `notes`.
pub(super) fn boot(
    cfg: &VmConfig,
    marker: &Path,
    start: &mut dyn FnMut(&VmConfig, Accel) -> Result<Vm, VmError>,
    console: &mut dyn FnMut(&str, bool),
    notes: &mut Vec<String>,
) -> Result<Booted, VmError> {
    let kvm = KvmTry::from_env()?;
    let attempt = match kvm {
        KvmTry::Auto if super::qemu::kvm_openable() && !marker.exists() => {
            Some((cfg.clone(), Accel::Kvm))
        }
        KvmTry::Frozen => Some((
            VmConfig {
                stopped: true,
                ..cfg.clone()
            },
            Accel::Tcg,
        )),
        KvmTry::Auto | KvmTry::Off => None,
    };
    let mut kvm_try_seconds = None;
    if let Some((try_cfg, accel)) = attempt {
        let t = Instant::now();
        let mut vm = start(&try_cfg, accel)?;
        match wait_ready(&mut vm, console, KVM_TRY_TIMEOUT) {
            Ok(seconds) => {
                return Ok(Booted {
                    vm,
                    accel,
                    seconds,
                    kvm_try_seconds: None,
                });
            }
            Err(VmError::Boot(_)) => {
                vm.kill();
                let secs = t.elapsed().as_secs_f64();
                kvm_try_seconds = Some(secs);
                let why = try_failure(&vm);
                let again = if kvm == KvmTry::Frozen {
                    String::new()
                } else {
                    let _ = std::fs::write(marker, &why);
                    format!(
                        "; next time too (remove {} to try KVM again)",
                        marker.display()
                    )
                };
                notes.push(format!(
                    "KVM cannot run this kernel here ({why}; the try took {secs:.1} s): using software emulation (TCG){again}"
                ));
            }
            Err(e) => return Err(e),
        }
    }
    let mut vm = start(cfg, Accel::Tcg)?;
    let seconds = wait_ready(&mut vm, console, super::qemu::KERNEL_TIMEOUT)?;
    Ok(Booted {
        vm,
        accel: Accel::Tcg,
        seconds,
        kvm_try_seconds,
    })
}

/// Why a KVM try failed, in a few words: what qemu said first (its error comes before the
/// assertion it aborts on), or that the guest was silent.
fn try_failure(vm: &Vm) -> String {
    let said = vm.stderr();
    let first = said.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(l) => format!(
            "qemu: {}",
            l.strip_prefix("qemu-system-x86_64: ").unwrap_or(l)
        ),
        None if vm.tail.is_empty() => format!(
            "nothing on the console within {} s",
            KVM_TRY_TIMEOUT.as_secs()
        ),
        None => format!("the guest stopped after: {}", vm.last_words()),
    }
}

/// Waits for the guest to be ready (kernel up within `kernel_timeout`: [`super::qemu::KERNEL_TIMEOUT`]
/// for a boot that works, [`KVM_TRY_TIMEOUT`] for a KVM try; modules and share
/// within [`super::qemu::READY_TIMEOUT`]); returns the seconds it took.
pub(super) fn wait_ready(
    vm: &mut Vm,
    console: &mut dyn FnMut(&str, bool),
    kernel_timeout: Duration,
) -> Result<f64, VmError> {
    let mut kernel_up = false;
    loop {
        if crate::signals::stop_requested() {
            vm.kill();
            return Err(VmError::Interrupted);
        }
        let limit = if kernel_up {
            super::qemu::READY_TIMEOUT
        } else {
            kernel_timeout
        };
        if vm.started.elapsed() > limit {
            vm.kill();
            let what = if kernel_up {
                "did not load its modules and mount the share"
            } else {
                "printed nothing from /init"
            };
            return Err(VmError::Boot(format!(
                "the VM {what} within {} s and was killed: {}",
                limit.as_secs(),
                vm.last_words()
            )));
        }
        let e = vm.stderr();
        if e.contains("KVM internal error") || e.contains("failed to set MSR") {
            vm.kill();
            return Err(VmError::Boot(vm.last_words()));
        }
        match vm.next_line(Duration::from_millis(200)) {
            Ok(Some(l)) => {
                console(&l, false);
                if l.contains(super::qemu::MARK_KERNEL) {
                    kernel_up = true;
                }
                if l.contains(super::qemu::MARK_READY) {
                    return Ok(vm.started.elapsed().as_secs_f64());
                }
            }
            Ok(None) => {}
            Err(status) => {
                return Err(VmError::Boot(format!(
                    "the VM stopped before it was ready ({status}): {}",
                    vm.last_words()
                )));
            }
        }
    }
}
