//! The `integrity` and `luks` sections: their defaults, their place under each
//! member, and every refusal as the one line a user sees, naming the field.

use super::super::{LabSpec, LayoutKind, parse_lab_spec};
use crate::spec::SpecError;
use crate::stack::Stack;
use crate::stack::member::{IntegrityAlgorithm, IntegrityOptions, LuksOptions, MemberLayer};

const DISKS: &str = "[disks]\nloop = { count = 4, size = \"1GiB\", dir = \"/tmp/d\" }\n";

fn lab(layout: &str) -> Result<LabSpec, SpecError> {
    parse_lab_spec(
        &format!("{DISKS}[[layout]]\nname = \"m\"\n{layout}\n"),
        "lab.toml",
    )
}

fn stack(layout: &str) -> Stack {
    let s = lab(layout).expect("valid");
    let LayoutKind::Stack(st) = s.layouts[0].kind.clone() else {
        panic!("not a stack")
    };
    st
}

fn err(layout: &str) -> String {
    lab(layout).expect_err("should be refused").to_string()
}

#[test]
fn defaults_are_crc32c_with_a_journal_and_aes_xts_512() {
    let st = stack("fs = \"xfs\"\nmdadm = { level = 5 }\nintegrity = {}\nluks = {}");
    assert_eq!(
        st.member_layers(),
        [
            &MemberLayer::Integrity(IntegrityOptions {
                algorithm: IntegrityAlgorithm::Crc32c,
                journal: true,
            }),
            &MemberLayer::Luks(LuksOptions {
                cipher: "aes-xts-plain64".into(),
                key_size: 512,
            }),
        ]
    );
    assert_eq!(
        st.describe(),
        "md raid5 x4 over luks (aes-xts-plain64, 512-bit key) over dm-integrity (crc32c) > xfs"
    );
    // Stored and read back with the layers; the disks are the members as before.
    let back: Stack = serde_json::from_str(&serde_json::to_string(&st).unwrap()).unwrap();
    assert_eq!(back, st);
    assert_eq!(st.disks(), 4);
}

#[test]
fn options_are_read() {
    let st = stack(
        "fs = \"xfs\"\nmdadm = { level = 1, members = 2 }\nintegrity = { algorithm = \"sha256\", journal = false }",
    );
    assert_eq!(
        st.describe(),
        "md raid1 x2 over dm-integrity (sha256, no journal) > xfs"
    );
    let st = stack("fs = \"xfs\"\nluks = { cipher = \"aes-xts-plain64\", key_size = 256 }");
    assert_eq!(
        st.describe(),
        "single disk over luks (aes-xts-plain64, 256-bit key) > xfs"
    );
}

#[test]
fn refusals_name_the_field() {
    let e = err("fs = \"xfs\"\nintegrity = { algorithm = \"md5\" }");
    assert!(
        e.contains("layout[m].integrity.algorithm: unknown algorithm 'md5' (use crc32c, crc32, sha1, sha256)"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    let e = err("fs = \"xfs\"\nluks = { key_size = 384 }");
    assert!(
        e.contains("layout[m].luks.key_size: 384 is not a key size the lab uses; set 256 or 512"),
        "{e}"
    );
    let e = err("fs = \"xfs\"\nluks = { cipher = \"\" }");
    assert!(e.contains("layout[m].luks.cipher:"), "{e}");
    let e = err("fs = \"xfs\"\nintegrity = { checksum = \"crc32c\" }");
    assert!(e.contains("checksum"), "{e}");
    let e = err("dir = \"/tmp\"\nintegrity = {}");
    assert!(e.contains("layout[m].integrity: a dir layout"), "{e}");
}
