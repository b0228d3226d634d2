//! The lab's alignment lines: a warning per misaligned layer of a layout, with the command
//! that would align it (what `layout::align` found after the build).

use crate::lab::report::LabReport;

/// `warning: NAME: xfs over md5 x4 (chunk 512KiB): ...; mkfs.xfs -d su=512k,sw=3`, one line
/// per misaligned layer, in layout order.
pub(super) fn notes(r: &LabReport) -> String {
    let mut out = String::new();
    for l in &r.layouts {
        let Some(a) = &l.alignment else { continue };
        for w in a.warnings() {
            out.push_str(&format!("warning: {}: {w}\n", l.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::report::LayoutReport;
    use crate::layout::align::{FsStripe, Seen, check};
    use crate::stack::MdLevel;
    use crate::stack::align::{Alignment, Geometry};

    #[test]
    fn a_misaligned_layer_is_a_warning_line_with_its_fix() {
        let g = Geometry::md(MdLevel::Raid5, 4, 512 << 10, 2).unwrap();
        let seen = |su: u64, sw: u64| Seen {
            fs: Some(FsStripe::Xfs {
                bsize: 4096,
                sunit: su,
                swidth: su * sw,
            }),
            lvm: Some((1536 << 10, 4 << 20)),
            partition: None,
            bcache: None,
        };
        let mut good = LayoutReport::new("good", "md raid5 x4 > lvm > xfs".into(), None);
        good.alignment = Some(check(Alignment::Auto, Some(&g), &seen(128, 3)));
        let mut bad = LayoutReport::new("bad", "md raid5 x4 > lvm > xfs".into(), None);
        bad.alignment = Some(check(Alignment::Auto, Some(&g), &seen(16, 2)));
        let r = LabReport {
            lab_id: "ab12cd".into(),
            name: "t".into(),
            spec_file: "t.toml".into(),
            disks: "4 loop disks".into(),
            baseline: None,
            interrupted: false,
            dry_run: false,
            layouts: vec![good, bad],
            leftovers: vec![],
            runs: vec![],
        };
        assert_eq!(
            notes(&r),
            "warning: bad: xfs over md5 x4 (chunk 512KiB): stripe unit 64KiB, width 128KiB does not match the array's chunk 512KiB x 3 data disks; mkfs.xfs -d su=512k,sw=3\n"
        );
    }
}
