//! The `alignment` key: read into the stack, varied by a sweep, and every refusal
//! as one line naming `layout[NAME].alignment`.

use super::super::{LabSpec, LayoutKind, parse_lab_spec};
use crate::spec::SpecError;
use crate::stack::Alignment;

const DISKS: &str = "[disks]\nloop = { count = 5, size = \"1GiB\", dir = \"/tmp/d\" }\n";
const MD5: &str = "mdadm = { level = 5, members = 4 }\nlvm = true\n";

fn lab(layout: &str) -> Result<LabSpec, SpecError> {
    parse_lab_spec(
        &format!("{DISKS}[[layout]]\nname = \"a\"\n{layout}\n"),
        "lab.toml",
    )
}

fn alignments(s: &LabSpec) -> Vec<(String, Alignment)> {
    s.layouts
        .iter()
        .map(|l| match &l.kind {
            LayoutKind::Stack(st) => (l.name.clone(), st.alignment),
            LayoutKind::Directory(_) => panic!("a stack"),
        })
        .collect()
}

#[test]
fn auto_by_default_stripe_when_asked_and_a_sweep_varies_it() {
    let s = lab(&format!("{MD5}fs = \"xfs\"")).unwrap();
    assert_eq!(alignments(&s), [("a".to_string(), Alignment::Auto)]);
    let s = lab(&format!("{MD5}fs = \"xfs\"\nalignment = \"stripe\"")).unwrap();
    assert_eq!(alignments(&s), [("a".to_string(), Alignment::Stripe)]);
    let LayoutKind::Stack(st) = &s.layouts[0].kind else {
        panic!()
    };
    assert!(
        st.describe().ends_with("[alignment stripe]"),
        "{}",
        st.describe()
    );
    let s = lab(&format!(
        "{MD5}fs = \"ext4\"\nvary = {{ alignment = [\"auto\", \"stripe\", \"none\"] }}"
    ))
    .unwrap();
    assert_eq!(
        alignments(&s),
        [
            ("a[alignment=auto]".to_string(), Alignment::Auto),
            ("a[alignment=stripe]".to_string(), Alignment::Stripe),
            ("a[alignment=none]".to_string(), Alignment::None),
        ]
    );
}

#[test]
fn refusals_name_the_field_in_one_line() {
    for (layout, words) in [
        (
            format!("{MD5}fs = \"xfs\"\nalignment = \"chunk\""),
            "unknown alignment 'chunk'; use \"auto\"",
        ),
        (
            "mdadm = { level = 1, members = 2 }\nfs = \"xfs\"\nalignment = \"stripe\"".into(),
            "\"stripe\" needs an md array with a stripe",
        ),
        (
            "btrfs = { data = \"raid0\", members = 2 }\nalignment = \"stripe\"".into(),
            "btrfs and ZFS stripe by themselves",
        ),
        (
            format!(
                "{MD5}fs = \"xfs\"\nmkfs_options = [\"-d\", \"su=64k,sw=2\"]\nalignment = \"stripe\""
            ),
            "mkfs_options already set it ('su=64k,sw=2')",
        ),
        (
            format!("{MD5}fs = \"ext4\"\nmkfs_options = \"-E stride=16\"\nalignment = \"stripe\""),
            "passes the stripe to mkfs.ext4",
        ),
    ] {
        let e = lab(&layout).expect_err("refused");
        assert_eq!(e.key, "layout[a].alignment", "{layout}: {e}");
        assert!(e.msg.contains(words), "{layout}: {e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
    // A wrong su/sw of the user's own is theirs to keep under "auto" (and checked after).
    assert!(
        lab(&format!(
            "{MD5}fs = \"xfs\"\nmkfs_options = [\"-d\", \"su=64k,sw=2\"]"
        ))
        .is_ok()
    );
}
