//! The pure spec parsers never panic: arbitrary text, spec-shaped text with wild values, and
//! valid specs garbled byte by byte all come back as `Ok` or a one-line `SpecError`.

use proptest::prelude::*;

use super::lab::{parse_lab, parse_lab_spec};
use super::parse_spec;

const LAB: &str = r#"name = "t"
[disks]
loop = { count = 6, size = "1GiB", dir = "/var/tmp/d" }

[[layout]]
name = "btrfs-raid5"
btrfs = { data = "raid5", metadata = "raid1", members = 4 }
mount_options = "noatime"
degrade = true
rebuild = true
fill = "64MiB"

[[layout]]
name = "md6"
lvm = true
fs = "xfs"
degrade = true
failures = 2
[layout.mdadm]
level = 6
members = 5
spares = 1
chunk = "512k"
bitmap = "internal"
bitmap_chunk = "64M"

[workloads]
profiles = ["quick"]
repeat = 2
size = "64MiB"
time = "2s"
[[workloads.workload]]
name = "w"
pattern = "randrw"
bs = "8k"
"#;

const WORKLOAD: &str = "name = \"s\"\n[defaults]\nsize = \"64MiB\"\n[[workload]]\nname = \"a\"\npattern = \"randrw\"\nbs = \"8k\"\nqd = 32\nread_pct = 70\ntime = \"30s\"\n";

/// Checks an outcome: an error is one line.
fn one_line<T>(r: Result<T, super::SpecError>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        prop_assert!(!e.to_string().contains('\n'), "{e}");
    }
    Ok(())
}

/// `text` with byte range `at..at+len` replaced by `with`, kept valid UTF-8.
fn garble(text: &str, at: usize, len: usize, with: &str) -> String {
    let mut a = at.min(text.len());
    while !text.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = (a + len).min(text.len());
    while !text.is_char_boundary(b) {
        b -= 1;
    }
    format!("{}{with}{}", &text[..a], &text[b..])
}

#[test]
fn the_examples_parse_and_text_only_agrees_with_this_machine() {
    let lab = parse_lab_spec(LAB, "t.toml").expect("example lab parses");
    assert_eq!(lab.layouts.len(), 2);
    assert_eq!(parse_lab(LAB, "t.toml"), Ok(lab));
    assert_eq!(
        parse_spec(WORKLOAD, "s.toml").map(|s| s.workloads.len()),
        Ok(1)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,300}") {
        one_line(parse_lab_spec(&s, "fuzz.toml"))?;
        one_line(parse_spec(&s, "fuzz.toml"))?;
    }

    #[test]
    fn garbled_specs_never_panic(
        at in 0usize..1200,
        len in 0usize..40,
        with in prop::sample::select(vec![
            "", "[", "]", "[[layout]]\n", "{", "=", "\"", "\n", "é", "-1", "99999999999999999999",
            "1e308", "\"16EiB\"", "nan", "[layout.mdadm]\n", "name = \"md6\"\n", ",", "0",
        ]),
    ) {
        one_line(parse_lab_spec(&garble(LAB, at, len, with), "fuzz.toml"))?;
        one_line(parse_spec(&garble(WORKLOAD, at % 200, len, with), "fuzz.toml"))?;
    }

    #[test]
    fn layout_fields_with_wild_values_never_panic(
        key in prop::sample::select(vec![
            "btrfs", "mdadm", "lvm", "fs", "mkfs_options", "mount_options", "degrade",
            "rebuild", "failures", "fill", "dir", "name",
        ]),
        val in prop::sample::select(vec![
            "0", "-1", "2", "\"\"", "\"xfs\"", "\"16EiB\"", "1.5", "true", "[1]", "[\"a\"]",
            "{ data = \"raid6\", members = -3 }", "{ level = \"raid1\", members = 1024 }",
            "{ level = 5, chunk = \"1e99G\" }", "{ data = \"raid1c4\", metadata = \"dup\" }",
            "{ level = 10, spares = 2000 }", "{}", "\"/tmp\"",
        ]),
        disks in prop::sample::select(vec![
            "", "[disks]\nloop = { count = 64, size = \"16EiB\", dir = \"/d\" }\n",
            "[disks]\nloop = { count = 1, size = -5 }\n",
            "[disks]\ndevices = [\"/dev/a\", \"/dev/a\"]\n", "[disks]\ndevices = []\n",
            "[disks]\nloop = { count = 6 }\n",
        ]),
    ) {
        let text = format!("{disks}[[layout]]\nname = \"a\"\nfs = \"xfs\"\n{key} = {val}\n");
        one_line(parse_lab_spec(&text, "fuzz.toml"))?;
    }
}
