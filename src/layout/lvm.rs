//! A linear LVM volume over the RAID layer, to measure what LVM costs (one of our users saw 66%).
//!
//! One PV (the array or disk), one VG named after the lab, one LV `lab` over all of it.

use std::path::{Path, PathBuf};

use super::LayoutError;
use super::cmd::Runner;

/// The LVM layer: one linear volume over the layer below.
pub struct Lvm;

/// The LV every lab VG holds.
pub const LV_NAME: &str = "lab";

/// Extra arguments for machines without a running udev (containers, minimal CI images):
/// without them lvcreate waits forever for udev to create the device node.
pub fn no_udev_args(runner: &Runner) -> Vec<String> {
    if runner.is_dry_run() || Path::new("/run/udev/control").exists() {
        return Vec::new();
    }
    vec![
        "--config".into(),
        "activation { udev_sync = 0 udev_rules = 0 }".into(),
    ]
}

fn with_args(mut argv: Vec<String>, extra: &[String]) -> Vec<String> {
    argv.splice(1..1, extra.iter().cloned());
    argv
}

/// The commands that make `pv` into a VG `vg` with one linear LV over all its space.
pub fn create_argvs(vg: &str, pv: &Path) -> Vec<Vec<String>> {
    create_argvs_with(vg, pv, &[])
}

/// [`create_argvs`] with `pv_args` given to pvcreate before the device (`--dataalignment
/// 1536k` when the layout aligns to the stripe itself).
pub fn create_argvs_with(vg: &str, pv: &Path, pv_args: &[String]) -> Vec<Vec<String>> {
    let pv = pv.to_string_lossy().into_owned();
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
    let mut pvcreate = s(&["pvcreate", "--yes", "--force", "--force"]);
    pvcreate.extend(pv_args.iter().cloned());
    pvcreate.push(pv.clone());
    vec![
        pvcreate,
        s(&["vgcreate", "--yes", vg, &pv]),
        s(&[
            "lvcreate",
            "--yes",
            "--wipesignatures",
            "y",
            "--type",
            "linear",
            "--extents",
            "100%FREE",
            "--name",
            LV_NAME,
            vg,
        ]),
    ]
}

/// The device node of the lab LV in `vg`.
pub fn lv_path(vg: &str) -> PathBuf {
    Path::new("/dev").join(vg).join(LV_NAME)
}

/// The commands that remove the VG (with its LV) and the PV labels.
pub fn remove_argvs(vg: &str, pvs: &[PathBuf]) -> Vec<Vec<String>> {
    let mut out = vec![
        vec![
            "lvremove".into(),
            "--yes".into(),
            "--force".into(),
            vg.to_string(),
        ],
        vec![
            "vgremove".into(),
            "--yes".into(),
            "--force".into(),
            vg.to_string(),
        ],
    ];
    for p in pvs {
        out.push(vec![
            "pvremove".into(),
            "--yes".into(),
            p.to_string_lossy().into_owned(),
        ]);
    }
    out
}

/// Creates the VG and LV; returns the LV's device node.
pub fn create(runner: &Runner, vg: &str, pv: &Path) -> Result<PathBuf, LayoutError> {
    create_with(runner, vg, pv, &[])
}

/// [`create`] with `pv_args` given to pvcreate ([`create_argvs_with`]).
pub fn create_with(
    runner: &Runner,
    vg: &str,
    pv: &Path,
    pv_args: &[String],
) -> Result<PathBuf, LayoutError> {
    let extra = no_udev_args(runner);
    for argv in create_argvs_with(vg, pv, pv_args) {
        runner.run(&with_args(argv, &extra))?;
    }
    Ok(lv_path(vg))
}

/// Removes VG `vg` if it exists (a VG name carries the lab id, so it is ours).
pub fn remove(runner: &Runner, vg: &str, pvs: &[PathBuf]) -> Result<(), LayoutError> {
    if !runner.is_dry_run() && !runner.succeeds(&["vgs", "--noheadings", "-o", "vg_name", vg]) {
        return Ok(());
    }
    let extra = no_udev_args(runner);
    let argvs = remove_argvs(vg, pvs);
    for (i, argv) in argvs.into_iter().enumerate() {
        let r = runner.run(&with_args(argv, &extra));
        // The LV and VG must go; a PV label that will not is not worth failing over.
        if i < 2 {
            r?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let r = Runner::recording();
        let lv = create(&r, "iolab_ab12_3", Path::new("/dev/md100")).unwrap();
        assert_eq!(lv, PathBuf::from("/dev/iolab_ab12_3/lab"));
        remove(&r, "iolab_ab12_3", &["/dev/md100".into()]).unwrap();
        assert_eq!(
            r.log(),
            vec![
                "pvcreate --yes --force --force /dev/md100",
                "vgcreate --yes iolab_ab12_3 /dev/md100",
                "lvcreate --yes --wipesignatures y --type linear --extents 100%FREE --name lab iolab_ab12_3",
                "lvremove --yes --force iolab_ab12_3",
                "vgremove --yes --force iolab_ab12_3",
                "pvremove --yes /dev/md100",
            ]
        );
    }
}
