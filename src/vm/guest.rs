//! What the guest is given: its copy of the spec, with the loop disks replaced by the VM's
//! virtio disks, and the script `/init` runs from the share.

use std::path::Path;

use super::VmError;
use crate::lab::{Disks, LabSpec, LayoutKind};

/// Where the share is mounted in the guest.
pub const SHARE: &str = "/share";
/// The guest's results database (in RAM; copied to the share when the lab ends: SQLite's
/// locking does not belong on 9p).
pub const GUEST_DB: &str = "/tmp/iolab.db";
/// Name of the database copy in the share.
pub const RESULTS_DB: &str = "results.db";
/// The guest kernel's log, copied to the share when the lab ends (read when it failed).
pub const GUEST_DMESG: &str = "dmesg.txt";
/// Extra disks beyond the spec's count: replacements for a rebuild and a second failure.
pub const SPARE_DISKS: usize = 2;
/// The power-cut protocol between the host and the guest's lab: the share's directory for it,
/// the console line on which the host cuts, the host's record of its cuts.
pub use crate::lab::powercut::{HOST_LOG as HOST_CUT_LOG, MARK_CUT, SHARE_DIR as POWERCUT_DIR};

/// Whether the spec has layouts whose power the host is to cut.
pub fn wants_power_cuts(spec: &LabSpec) -> bool {
    spec.layouts.iter().any(|l| l.powercut.is_some())
}

/// The VM's disks as the guest sees them, in qemu's order: `/dev/vda`, `/dev/vdb`, ...
pub fn device_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut s = String::new();
            let mut i = i;
            loop {
                s.insert(0, char::from(b'a' + (i % 26) as u8));
                if i < 26 {
                    break;
                }
                i = i / 26 - 1;
            }
            format!("/dev/vd{s}")
        })
        .collect()
}

/// Disk count and size of a spec the VM can run: loop disks, no directory layouts.
pub fn disks_of(spec: &LabSpec) -> Result<(usize, u64), VmError> {
    if let Some(l) = spec
        .layouts
        .iter()
        .find(|l| matches!(l.kind, LayoutKind::Directory(_)))
    {
        return Err(VmError::Spec(format!(
            "{}: layout[{}].dir: an existing directory cannot be measured inside the VM; remove the layout or run without --vm",
            spec.file, l.name
        )));
    }
    match &spec.disks {
        Disks::Loop { count, .. } if count + SPARE_DISKS > super::qemu::MAX_DISKS => {
            Err(VmError::Spec(format!(
                "{}: disks.loop.count: {count} disks and {SPARE_DISKS} replacements are more than the VM's {} disks; use fewer",
                spec.file,
                super::qemu::MAX_DISKS
            )))
        }
        Disks::Loop { count, size, .. } => Ok((*count, *size)),
        Disks::Devices(_) => Err(VmError::Spec(format!(
            "{}: disks.devices: --vm builds on emulated disks; give disks.loop = {{ count = N, size = \"256MiB\" }} instead",
            spec.file
        ))),
        Disks::None => Err(VmError::Spec(format!(
            "{}: disks: the lab has no disks to build on; add disks.loop = {{ count = N, size = \"256MiB\" }}",
            spec.file
        ))),
    }
}

/// The spec text with `[disks]` replaced by the VM's devices; everything else as written.
pub fn rewrite_spec(text: &str, file: &str, devices: &[String]) -> Result<String, VmError> {
    let mut t: toml::Table = toml::from_str(text)
        .map_err(|e| VmError::Spec(format!("{file}: {}", e.message().trim())))?;
    let mut disks = toml::Table::new();
    disks.insert(
        "devices".into(),
        toml::Value::Array(devices.iter().map(|d| d.clone().into()).collect()),
    );
    // Slow disks: the host's qemu throttles bandwidth and IOPS; the guest adds the latency.
    let slow: Vec<toml::Value> = t
        .get("disks")
        .and_then(|d| d.get("slow"))
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let s = s.as_table()?;
            let lat = s.get("latency")?;
            let mut n = toml::Table::new();
            n.insert("disk".into(), s.get("disk")?.clone());
            n.insert("latency".into(), lat.clone());
            Some(toml::Value::Table(n))
        })
        .collect();
    if !slow.is_empty() {
        disks.insert("slow".into(), toml::Value::Array(slow));
    }
    t.insert("disks".into(), toml::Value::Table(disks));
    toml::to_string(&t).map_err(|e| VmError::Spec(format!("{file}: cannot rewrite: {e}")))
}

/// Quotes a word for the guest's shell.
fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The script the guest runs from the share: check the disks are the ones the host made
/// (by virtio serial), run the lab on them, keep its output and exit code, copy the results
/// database out.
pub fn run_script(spec_name: &str, devices: &[String], lab_args: &[String]) -> String {
    let mut s = String::from("#!/bin/sh\n# Written by iolab lab --vm on the host.\ncd /tmp\n");
    for (i, d) in devices.iter().enumerate() {
        let k = d.trim_start_matches("/dev/");
        s.push_str(&format!(
            "[ \"$(cat /sys/block/{k}/serial 2>/dev/null)\" = d{i} ] || {{ echo \"iolab-guest: {d} is not disk d{i}\"; echo 2 > {SHARE}/rc; exit 2; }}\n"
        ));
    }
    let mut argv: Vec<String> = vec![
        "/bin/iolab".into(),
        "--db".into(),
        GUEST_DB.into(),
        "lab".into(),
        format!("{SHARE}/{spec_name}"),
        "--destroy".into(),
        devices.join(","),
    ];
    argv.extend(lab_args.iter().cloned());
    let cmd: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    s.push_str(&format!(
        "IOLAB_STATE_DIR=/run/iolab {} > {SHARE}/out.txt\nrc=$?\n",
        cmd.join(" ")
    ));
    s.push_str(&format!(
        "[ -f {GUEST_DB} ] && cp {GUEST_DB} {SHARE}/{RESULTS_DB}\n\
         for m in /run/iolab/manifest-*.xxh3; do [ -f \"$m\" ] && cp \"$m\" {SHARE}/; done\n\
         dmesg > {SHARE}/{GUEST_DMESG} 2>/dev/null\n\
         echo $rc > {SHARE}/rc\nsync\nexit $rc\n"
    ));
    s
}

/// Writes the spec copy and the script into the share.
pub fn prepare_share(
    share: &Path,
    spec: &LabSpec,
    devices: &[String],
    lab_args: &[String],
) -> Result<(), VmError> {
    let src = Path::new(&spec.file);
    let text = std::fs::read_to_string(src).map_err(|e| VmError::io("cannot read", src, e))?;
    let name = src
        .file_name()
        .map_or_else(|| "lab.toml".into(), |n| n.to_string_lossy().into_owned());
    let new = rewrite_spec(&text, &spec.file, devices)?;
    let w = |p: &Path, t: &str| std::fs::write(p, t).map_err(|e| VmError::io("cannot write", p, e));
    w(&share.join(&name), &new)?;
    w(&share.join("run.sh"), &run_script(&name, devices, lab_args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_follow_the_kernel() {
        let d = device_names(28);
        assert_eq!(d[0], "/dev/vda");
        assert_eq!(d[25], "/dev/vdz");
        assert_eq!(d[26], "/dev/vdaa");
        assert_eq!(d[27], "/dev/vdab");
    }

    const SPEC: &str = "name = \"t\"\n[disks]\nloop = { count = 4, size = \"256MiB\" }\n\n[[layout]]\nname = \"r5\"\nmdadm = { level = 5, members = 3, spares = 1 }\nlvm = true\nfs = \"xfs\"\ndegrade = true\nrebuild = true\n";

    #[test]
    fn the_spec_gets_the_vm_disks_and_keeps_the_rest() {
        let devs = device_names(6);
        let t = rewrite_spec(SPEC, "t.toml", &devs).unwrap();
        let v: toml::Table = toml::from_str(&t).unwrap();
        assert_eq!(v["disks"]["devices"].as_array().unwrap().len(), 6, "{t}");
        assert!(v["disks"].get("loop").is_none());
        assert_eq!(v["layout"][0]["mdadm"]["spares"].as_integer(), Some(1));
        assert_eq!(v["name"].as_str(), Some("t"));
        let slow = SPEC.replace(
            "size = \"256MiB\" }",
            "size = \"256MiB\" }\nslow = [{ disk = 2, bandwidth = \"20MiB\", latency = \"8ms\" }, { disk = 3, iops = 50 }]",
        );
        let t = rewrite_spec(&slow, "t.toml", &devs).unwrap();
        let v: toml::Table = toml::from_str(&t).unwrap();
        let s = v["disks"]["slow"].as_array().unwrap();
        assert_eq!(s.len(), 1, "{t}");
        assert_eq!(s[0]["disk"].as_integer(), Some(2));
        assert!(s[0].get("bandwidth").is_none(), "{t}");
        assert_eq!(s[0]["latency"].as_str(), Some("8ms"));
        crate::lab::spec::parse_lab_spec(&t, "t.toml").unwrap();
        let orig = crate::lab::parse_lab(SPEC, "t.toml").unwrap();
        assert_eq!(disks_of(&orig).unwrap(), (4, 256 << 20));
    }

    #[test]
    fn the_script_checks_serials_and_passes_the_flags() {
        let s = run_script(
            "t.toml",
            &device_names(2),
            &["--quick".into(), "--size".into(), "8 MiB".into()],
        );
        assert!(s.contains("/sys/block/vdb/serial"), "{s}");
        assert!(
            s.contains("lab /share/t.toml --destroy /dev/vda,/dev/vdb --quick --size '8 MiB'"),
            "{s}"
        );
        assert!(s.contains("cp /tmp/iolab.db /share/results.db"));
        assert!(s.contains("/run/iolab/manifest-*.xxh3"), "{s}");
    }
}
