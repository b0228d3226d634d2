//! What the VM lab tests (tests/vm.rs, tests/vm_zfs.rs) share: the tool-or-skip check for a
//! boot, the lab spec file they write and the `[workloads]` table that ends it, and running a
//! VM lab to its JSON document, and [`VmLab`]: one test's directory, store, state and disks,
//! and the check that nothing of it is left.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::{Iolab, Out, cmdline, disk_tmpdir, kind, need_root, need_tool, processes_naming, skip};

/// Whether this machine can boot the VM lab: root, the packages its initramfs is assembled
/// from, a Debian kernel in /boot, and `extra` (tool, apt package) pairs. Skips with the reason
/// otherwise.
pub(crate) fn vm_or_skip(extra: &[(&str, &str)]) -> bool {
    if !need_root() {
        return false;
    }
    let base = [
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("busybox", "busybox-static"),
        ("mdadm", "mdadm"),
        ("lvm", "lvm2"),
        ("mkfs.xfs", "xfsprogs"),
        ("mkfs.ext4", "e2fsprogs"),
        ("xz", "xz-utils"),
    ];
    for (t, apt) in base.iter().chain(extra) {
        if !need_tool(t, apt) {
            return false;
        }
    }
    let kernel = std::fs::read_dir("/boot").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"))
    });
    if !kernel {
        skip(
            &kind::tool("linux-image-amd64"),
            "no /boot/vmlinuz-* (apt-get install linux-image-amd64)",
        );
    }
    kernel
}

/// The cache directory of a zfs module built for the VM's Debian 6.1 kernel (`zfs.ko` and
/// `spl.ko`, as `scripts/zfs-module` leaves them), when there is one.
pub(crate) fn cached_zfs_module() -> Option<PathBuf> {
    let root = std::env::var_os("IOLAB_ZFS_CACHE")
        .map_or_else(|| PathBuf::from("/var/cache/iolab/zfs"), PathBuf::from);
    std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("6.1.0"))
                && p.join("zfs.ko").is_file()
                && p.join("spl.ko").is_file()
        })
}

/// [`vm_or_skip`] with ZFS's tools among `extra`, and a cached zfs module for the guest;
/// skips with the reason otherwise.
pub(crate) fn zfs_vm_or_skip(extra: &[(&str, &str)]) -> bool {
    if !vm_or_skip(extra) {
        return false;
    }
    if cached_zfs_module().is_none() {
        skip(
            &kind::tool("zfs-dkms"),
            "no zfs module cached for the VM's kernel (run scripts/zfs-module as root)",
        );
        return false;
    }
    true
}

/// Writes `DIR/FILE`: lab `name` on 5 sparse loop disks of 256 MiB in `disks`, then `body`
/// (layouts and workloads).
pub(crate) fn write_lab_spec(
    dir: &Path,
    file: &str,
    name: &str,
    disks: &Path,
    body: &str,
) -> PathBuf {
    write_sized_lab_spec(dir, file, name, disks, "256MiB", body)
}

/// [`write_lab_spec`] with disks of `size`: smaller disks for a lab whose layers write every
/// member whole under emulation (dm-integrity's format, a rebuild through LUKS).
pub(crate) fn write_sized_lab_spec(
    dir: &Path,
    file: &str,
    name: &str,
    disks: &Path,
    size: &str,
    body: &str,
) -> PathBuf {
    let p = dir.join(file);
    let text = format!(
        "name = \"{name}\"\n[disks]\nloop = {{ count = 5, size = \"{size}\", dir = \"{}\" }}\n{body}",
        disks.display()
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// A sequential 1 MiB write, a workload of [`workloads_tail`].
pub(crate) const SEQ_WRITE_1M: &str =
    "[[workloads.workload]]\nname = \"seq-write-1m\"\npattern = \"write\"\nbs = \"1M\"\n";

/// A random 4 KiB read, a workload of [`workloads_tail`].
pub(crate) const RAND_READ_4K: &str =
    "[[workloads.workload]]\nname = \"rand-read-4k\"\npattern = \"randread\"\nbs = \"4k\"\n";

/// The `[workloads]` table a VM lab spec ends with: each of `workloads` (the tables above,
/// or with keys of their own added) once, `size` and `time` each, small and short because the
/// guest is emulated and the tests look at layouts and faults, not at throughput.
pub(crate) fn workloads_tail(size: &str, time: &str, workloads: &[&str]) -> String {
    format!(
        "[workloads]\nrepeat = 1\n[workloads.defaults]\nsize = \"{size}\"\ntime = \"{time}\"\n{}",
        workloads.concat()
    )
}

/// `iolab lab SPEC --vm --format json` through `cmd`: the exit code, the document, stderr
/// and the wall seconds. Panics with both streams when stdout is not JSON.
pub(crate) fn run_vm_lab(
    cmd: Iolab,
    spec: &Path,
    extra: &[&str],
) -> (i32, serde_json::Value, String, f64) {
    let t = Instant::now();
    let mut args = vec![
        "lab".to_string(),
        spec.to_string_lossy().into_owned(),
        "--vm".into(),
        "--format".into(),
        "json".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_string()));
    let out: Out = cmd.args(args).run();
    let wall = t.elapsed().as_secs_f64();
    let (code, stdout, stderr) = out.parts();
    let v: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: exit {code}\nstdout: {stdout}\nstderr: {stderr}"));
    log_vm_time(&v, wall);
    (code, v, stderr, wall)
}

/// Appends this VM lab's wall time, its boots and the guest's lab time to the file in
/// `$IOLAB_VM_TIMES` (scripts/test prints them at the end: where the suite's time goes).
fn log_vm_time(v: &serde_json::Value, wall: f64) {
    use std::io::Write;
    let Some(path) = std::env::var_os("IOLAB_VM_TIMES") else {
        return;
    };
    let boots: Vec<f64> = v["vm"]["boot_seconds"]
        .as_array()
        .map(|b| b.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default();
    let line = format!(
        "{wall:.0}\t{}\t{}\t{:.0}\t{}\n",
        std::thread::current().name().unwrap_or("?"),
        boots.len(),
        boots.iter().sum::<f64>(),
        v["vm"]["lab_seconds"].as_f64().unwrap_or(f64::NAN),
    );
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// Asserts that a power cut's judge found no durable block lost, no block silently wrong and no
/// durable file missing; `why` heads the message, the cut's JSON follows it.
pub(crate) fn assert_cut_lost_nothing(c: &serde_json::Value, why: &str) {
    let j = &c["judgement"];
    assert_eq!(
        (
            j["durable_lost"].as_u64(),
            j["silent_wrong"].as_u64(),
            j["files_missing"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{why}{c:#}"
    );
}

/// The layout named `name` in a lab document.
pub(crate) fn layout<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["layouts"]
        .as_array()
        .and_then(|a| a.iter().find(|l| l["name"] == name))
        .unwrap_or_else(|| panic!("no layout {name} in {v:#}"))
}

/// One VM lab test's own directory: the host store, the state directory and the disk
/// directory inside it.
pub(crate) struct VmLab {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) db: PathBuf,
    pub(crate) state: PathBuf,
    pub(crate) disks: PathBuf,
}

impl VmLab {
    /// A fresh directory on a disk-backed filesystem, named after `prefix`.
    pub(crate) fn new(prefix: &str) -> VmLab {
        let dir = disk_tmpdir(prefix);
        let db = dir.path().join("host.db");
        let state = dir.path().join("state");
        let disks = dir.path().join("disks");
        VmLab {
            dir,
            db,
            state,
            disks,
        }
    }

    /// iolab with this lab's store, state directory and working directory.
    pub(crate) fn iolab(&self) -> Iolab {
        Iolab::new()
            .db(&self.db)
            .env("IOLAB_STATE_DIR", &self.state)
            .cwd(self.dir.path())
    }

    /// [`VmLab::iolab`] as a command to add arguments to.
    pub(crate) fn cmd(&self) -> Command {
        self.iolab().command()
    }

    /// Writes the spec `vm-lab.toml` ([`write_lab_spec`]: 5 loop disks of 256 MiB) with `body`.
    pub(crate) fn spec(&self, body: &str) -> PathBuf {
        write_lab_spec(self.dir.path(), "vm-lab.toml", "vm-test", &self.disks, body)
    }

    /// [`VmLab::spec`] on disks of `size` ([`write_sized_lab_spec`]).
    pub(crate) fn sized_spec(&self, size: &str, body: &str) -> PathBuf {
        write_sized_lab_spec(
            self.dir.path(),
            "vm-lab.toml",
            "vm-test",
            &self.disks,
            size,
            body,
        )
    }

    /// Runs the lab in `spec` in the VM: exit code, JSON document, stderr; prints the wall
    /// time, the boot and the guest's lab time under `what`.
    pub(crate) fn run(&self, spec: &Path, what: &str) -> (i32, serde_json::Value, String) {
        let (code, v, stderr, wall) = run_vm_lab(self.iolab(), spec, &[]);
        eprintln!(
            "{what}: exit {code}, wall {wall:.0} s, boot {}, lab {} s in the guest",
            v["vm"]["boot_seconds"], v["vm"]["lab_seconds"]
        );
        (code, v, stderr)
    }

    /// `iolab show --json` of the stored run of layout `name` in the lab's JSON document `v`.
    pub(crate) fn shown_run(&self, v: &serde_json::Value, name: &str) -> serde_json::Value {
        let run = v["runs"]
            .as_array()
            .expect("the lab's runs")
            .iter()
            .find(|r| r["layout"] == name)
            .and_then(|r| r["run_id"].as_str())
            .unwrap_or_else(|| panic!("{name}'s run"))
            .to_string();
        self.iolab()
            .args(["show", &run, "--json"])
            .run()
            .success()
            .json()
    }

    /// Nothing of a VM lab is left: no backing files, no state file, no qemu on our disks.
    pub(crate) fn assert_nothing_left(&self) {
        let files: Vec<String> = std::fs::read_dir(&self.disks)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(files.is_empty(), "left in the disk dir: {files:?}");
        let states: Vec<String> = std::fs::read_dir(&self.state)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("lab-"))
            .collect();
        assert!(states.is_empty(), "state files left: {states:?}");
        assert!(qemu_on(&self.disks).is_empty(), "qemu still running");
    }
}

/// Pids of qemu processes whose command line mentions `dir`.
pub(crate) fn qemu_on(dir: &Path) -> Vec<u32> {
    processes_naming(&dir.to_string_lossy())
        .into_iter()
        .filter(|&pid| cmdline(pid).starts_with("qemu-system"))
        .collect()
}
