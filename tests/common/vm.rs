//! What the VM lab tests (tests/vm.rs, tests/vm_zfs.rs) share: the tool-or-skip check for a
//! boot, the lab spec file they write and the `[workloads]` table that ends it, and running a
//! VM lab to its JSON document.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Iolab, Out, kind, need_root, need_tool, skip};

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

/// Writes `DIR/FILE`: lab `name` on 5 sparse loop disks of 256 MiB in `disks`, then `body`
/// (layouts and workloads).
pub(crate) fn write_lab_spec(
    dir: &Path,
    file: &str,
    name: &str,
    disks: &Path,
    body: &str,
) -> PathBuf {
    let p = dir.join(file);
    let text = format!(
        "name = \"{name}\"\n[disks]\nloop = {{ count = 5, size = \"256MiB\", dir = \"{}\" }}\n{body}",
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
    (code, v, stderr, wall)
}

/// The layout named `name` in a lab document.
pub(crate) fn layout<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["layouts"]
        .as_array()
        .and_then(|a| a.iter().find(|l| l["name"] == name))
        .unwrap_or_else(|| panic!("no layout {name} in {v:#}"))
}
