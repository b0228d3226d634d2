//! One `[[layout]]` table: its name, then either an existing directory or a stack whose parts
//! are the [`SECTIONS`], each reading and checking its own fields.

use std::path::PathBuf;

use toml::Spanned;

use super::host::Host;
use super::raw::RawLayout;
use super::section::{Cx, Draft, Section};
use super::{
    Disks, LayoutKind, LayoutSpec, align, btrfs, cache, failures, faults, fill, fs, integrity, lvm,
    mdadm, powercut, zfs,
};
use crate::spec::SpecError;
use crate::spec::locate::Locator;
use crate::stack::{FsLayer, RaidLayer, Stack};

/// Every part a layout may have, in the order their rules run (a dir layout names the first
/// one it sets). A new layer is one file and one line here, plus its fields in `RawLayout`.
static SECTIONS: &[&dyn Section] = &[
    &integrity::Integrity,
    &integrity::Luks,
    &btrfs::Btrfs,
    &mdadm::Mdadm,
    &zfs::Zfs,
    &lvm::Lvm,
    &cache::Cache,
    &fs::Fs,
    &align::Align,
    &failures::Failures,
    &fill::Fill,
    &faults::Faults,
    &powercut::PowerCut,
];

pub(super) fn parse_layout(
    loc: &Locator,
    i: usize,
    sl: &Spanned<RawLayout>,
    disks: &Disks,
    host: &dyn Host,
) -> Result<LayoutSpec, SpecError> {
    let raw = sl.get_ref();
    let start = sl.span().start;
    let name = layout_name(loc, i, start, raw)?;
    let cx = Cx {
        loc,
        start,
        name: &name,
        disks,
        pool: disks.count(),
    };
    let mut draft = Draft::default();
    for s in SECTIONS {
        s.early(&cx, raw, &mut draft)?;
    }
    if let Some(dir) = &raw.dir {
        return dir_layout(&cx, raw, dir, host);
    }
    if cx.pool == 0 {
        return Err(cx.err_on(
            cx.first_line(),
            "disks",
            "this layout builds a stack but the lab has no [disks]; add devices = [...] or loop = {...}",
        ));
    }
    let (stack, members_key) = read_stack(&cx, raw, &mut draft)?;
    check_stack(&cx, raw, &stack, &members_key, &mut draft, host)?;
    Ok(LayoutSpec {
        name,
        kind: LayoutKind::Stack(stack),
        degrade: draft.degrade,
        rebuild: draft.rebuild,
        during_rebuild: draft.during_rebuild,
        failures: draft.failures,
        fill: draft.fill,
        faults: draft.faults,
        powercut: draft.powercut,
    })
}

fn layout_name(
    loc: &Locator,
    i: usize,
    start: usize,
    raw: &RawLayout,
) -> Result<String, SpecError> {
    let key = format!("layout[{}].name", i + 1);
    match &raw.name {
        None => Err(loc.err(
            Some(loc.line_of(start)),
            key,
            "missing; every layout needs a name that says what it is (e.g. btrfs-raid5)",
        )),
        Some(n) if !valid_name(n) => Err(loc.err(
            Some(loc.line_of_key(start, "layout", "name")),
            key,
            format!("'{n}' is not a usable name; use up to 40 letters, digits, '-', '_' or '.'"),
        )),
        Some(n) => Ok(n.clone()),
    }
}

/// `dir = "..."`: an existing directory used as it is; no section may be set.
fn dir_layout(
    cx: &Cx,
    raw: &RawLayout,
    dir: &str,
    host: &dyn Host,
) -> Result<LayoutSpec, SpecError> {
    if let Some(k) = SECTIONS.iter().find_map(|s| s.stray(raw)) {
        return Err(cx.err(
            k,
            k,
            "a dir layout uses an existing directory as it is; drop this field (or drop dir to build a stack)",
        ));
    }
    let p = PathBuf::from(dir);
    if !host.is_dir(&p) {
        return Err(cx.err("dir", "dir", format!("{dir} is not an existing directory")));
    }
    Ok(LayoutSpec {
        name: cx.name.to_string(),
        kind: LayoutKind::Directory(p),
        degrade: false,
        rebuild: false,
        during_rebuild: false,
        failures: 1,
        fill: None,
        faults: Vec::new(),
        powercut: None,
    })
}

/// Reads every section, then the one RAID layer (which sees what the others read). Returns the
/// stack and the field that names its disk count.
fn read_stack(cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(Stack, String), SpecError> {
    for s in SECTIONS.iter().filter(|s| s.raid_table().is_none()) {
        s.parse(cx, raw, draft)?;
    }
    let given: Vec<&dyn Section> = SECTIONS
        .iter()
        .copied()
        .filter(|s| s.raid_table().is_some() && s.stray(raw).is_some())
        .collect();
    if let [_, second, ..] = given[..] {
        let k = second.raid_table().unwrap_or_default();
        return Err(cx.err(k, k, one_raid_layer()));
    }
    if let Some(s) = given.first() {
        s.parse(cx, raw, draft)?;
    }
    let fs = draft.fs.ok_or_else(|| {
        let tables: Vec<String> = raid_tables()
            .iter()
            .map(|t| format!("{t} = {{...}}"))
            .collect();
        cx.err_on(
            cx.first_line(),
            "fs",
            format!(
                "missing; a layout needs {}, fs = \"xfs\" on a single disk, or dir = \"...\"",
                tables.join(", ")
            ),
        )
    })?;
    let (raid, members, spares, members_key) = match draft.raid.take() {
        Some(r) => (
            r.layer,
            r.members,
            r.spares,
            format!("{}.members", r.section),
        ),
        None => (RaidLayer::None, 1, 0, "fs".to_string()),
    };
    let fs = FsLayer {
        kind: fs,
        mkfs_options: std::mem::take(&mut draft.mkfs_options),
        mount_options: std::mem::take(&mut draft.mount_options),
        read_ahead: draft.read_ahead,
    };
    let mut stack = Stack::over(raid, members)
        .spares(spares)
        .alignment(draft.alignment);
    for layer in std::mem::take(&mut draft.layers) {
        stack = stack.with(layer);
    }
    let stack = stack.fs(fs);
    Ok((stack, members_key))
}

/// The stack against the disks, then each section's rules on its shape and its bytes.
fn check_stack(
    cx: &Cx,
    raw: &RawLayout,
    stack: &Stack,
    members_key: &str,
    draft: &mut Draft,
    host: &dyn Host,
) -> Result<(), SpecError> {
    if stack.disks() > cx.pool {
        return Err(cx.err(
            "members",
            members_key,
            format!(
                "the layout needs {} disks, the lab has {}; raise disks or lower members/spares",
                stack.disks(),
                cx.pool
            ),
        ));
    }
    for s in SECTIONS {
        s.check(cx, raw, stack, draft)?;
    }
    let member_size = match cx.disks {
        Disks::Loop { size, .. } => Some(*size),
        Disks::Devices(d) => d
            .iter()
            .take(stack.disks())
            .filter_map(|p| host.device_size(p))
            .min(),
        Disks::None => None,
    };
    for s in SECTIONS {
        s.size(cx, raw, stack, member_size, draft)?;
    }
    Ok(())
}

/// The RAID layers' table names, in order.
fn raid_tables() -> Vec<&'static str> {
    SECTIONS.iter().filter_map(|s| s.raid_table()).collect()
}

/// `a layout has one RAID layer: btrfs or mdadm, not both`.
fn one_raid_layer() -> String {
    let t = raid_tables();
    let list = match t.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => t.join(""),
    };
    let not = if t.len() == 2 { "both" } else { "two" };
    format!("a layout has one RAID layer: {list}, not {not}")
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 40
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !n.starts_with('.')
}
