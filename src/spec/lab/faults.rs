//! `faults = [{ member, at, kind, offset, length, progress }]`: faults injected on a named
//! member at a named step (a rebuild fault optionally at a chosen percent of md's recovery) — unreadable sectors, a whole-disk failure, silent corruption — to see what the
//! layout does about them (the lab reports what it observed: rebuild outcome, md's bad-block
//! log and array state, files lost, scrub counts).
//!
//! ```toml
//! faults = [{ member = 0, at = "rebuild", kind = "unreadable", offset = "16MiB", length = "1MiB" }]
//! ```
//!
//! `offset = "data"` (md, btrfs and ZFS layouts with a data set) lets the lab place the range under the data
//! set's files on that member, `offset = "file:PATH"` under one named file: a range written in
//! bytes may hold no file, and a fault that misses the data answers the wrong question.
//! `copies = "all"` on a corrupt fault placed so overwrites every copy of the struck file
//! bytes (every mirror, every DVA) and the parity covering them: what no redundancy can heal.

use super::raw::{RawFault, RawLayout};
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::spec::locate::SizeValue;
use crate::stack::fault::{Copies, Fault, FaultKind, FaultStep, Under};
use crate::stack::{RaidLayer, Stack};
use crate::units;

/// Most faults one layout may list.
const MAX_FAULTS: usize = 16;

/// The fault plan of a layout.
pub(super) struct Faults;

impl Section for Faults {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.faults.is_some().then_some("faults")
    }

    fn check(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        stack: &Stack,
        draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let Some(list) = &raw.faults else {
            return Ok(());
        };
        if list.len() > MAX_FAULTS {
            return Err(cx.err(
                "faults",
                "faults",
                format!("at most {MAX_FAULTS} faults per layout"),
            ));
        }
        for (i, f) in list.iter().enumerate() {
            let fault = one(cx, i + 1, f, stack, draft, raw.fill.is_some())?;
            draft.faults.push(fault);
        }
        Ok(())
    }

    fn size(
        &self,
        cx: &Cx,
        _raw: &RawLayout,
        _stack: &Stack,
        member_size: Option<u64>,
        draft: &mut Draft,
    ) -> Result<(), SpecError> {
        let Some(sz) = member_size else {
            return Ok(());
        };
        for (i, f) in draft.faults.iter().enumerate() {
            if let FaultKind::Unreadable { offset, length }
            | FaultKind::Corrupt { offset, length } = f.kind
            {
                if f.under.is_some() && length > sz / 4 {
                    return Err(cx.err(
                        "faults",
                        &format!("faults[{}].length", i + 1),
                        format!(
                            "{} under file data is more than a quarter of a member ({}); lower length",
                            units::format_bytes(length),
                            units::format_bytes(sz)
                        ),
                    ));
                }
                if offset.saturating_add(length) > sz {
                    return Err(cx.err(
                        "faults",
                        &format!("faults[{}].offset", i + 1),
                        format!(
                            "{} + {} runs past the end of the member ({}); lower offset or length",
                            units::format_bytes(offset),
                            units::format_bytes(length),
                            units::format_bytes(sz)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Reads and checks fault number `n` (1-based, as errors name it). The checks run in the
/// order the fields are read, so a spec with several mistakes is told about the first one.
fn one(
    cx: &Cx,
    n: usize,
    f: &RawFault,
    stack: &Stack,
    draft: &Draft,
    fill: bool,
) -> Result<Fault, SpecError> {
    let member = member(cx, n, f.member, stack)?;
    let at = step(cx, n, f.at.as_deref())?;
    let under = match &f.offset {
        Some(SizeValue::Text(t)) => under(t),
        _ => None,
    };
    let kind = kind(cx, n, f, under.is_some())?;
    placement(cx, n, at, member, stack, draft)?;
    if under.is_some() {
        under_data(cx, n, stack, draft, fill)?;
    }
    let progress = progress(cx, n, f.progress, at, stack)?;
    let copies = copies(cx, n, f, kind, under.is_some(), at)?;
    after_rebuild(cx, n, at, kind, member, stack, draft)?;
    Ok(Fault {
        member,
        at,
        kind,
        progress,
        under,
        placed: false,
        copies,
    })
}

/// The `member` of fault `n`: required, and an index into the layout's members (errors
/// name the valid range so the fix is in the message).
fn member(cx: &Cx, n: usize, m: Option<i64>, stack: &Stack) -> Result<usize, SpecError> {
    let err = |msg: String| cx.err("faults", &format!("faults[{n}].member"), msg);
    match m {
        None => Err(err(
            "missing; which member (0 is the first, md's RaidDevice 0)".into(),
        )),
        Some(m) if m < 0 || m as usize >= stack.members => Err(err(format!(
            "member {m} does not exist; the layout has {} members (0 to {})",
            stack.members,
            stack.members.saturating_sub(1)
        ))),
        Some(m) => Ok(m as usize),
    }
}

/// The `at` of fault `n`: required, one of the named steps of the lab's run.
fn step(cx: &Cx, n: usize, at: Option<&str>) -> Result<FaultStep, SpecError> {
    let err = |msg: String| cx.err("faults", &format!("faults[{n}].at"), msg);
    let at_s = at.ok_or_else(|| {
        err("missing; when: healthy (or before_degrade), degraded, rebuild or after_rebuild".into())
    })?;
    FaultStep::parse(at_s).ok_or_else(|| {
        err(format!(
            "unknown step '{at_s}' (use healthy, before_degrade, degraded, rebuild or after_rebuild)"
        ))
    })
}

/// The `kind` of fault `n` with its range: unreadable and corrupt strike a range (placed by
/// the lab when `under`), a whole-disk failure has none, so a range given with it is a
/// mistake rather than something to ignore.
fn kind(cx: &Cx, n: usize, f: &RawFault, under: bool) -> Result<FaultKind, SpecError> {
    let err = |k: &str, msg: String| cx.err("faults", &format!("faults[{n}].{k}"), msg);
    let kind_s = f
        .kind
        .as_deref()
        .ok_or_else(|| err("kind", "missing; what: unreadable, fail or corrupt".into()))?;
    match kind_s {
        "unreadable" => {
            let (offset, length) = range(cx, n, f, under, "unreadable")?;
            Ok(FaultKind::Unreadable { offset, length })
        }
        "corrupt" => {
            let (offset, length) = range(cx, n, f, under, "corrupt")?;
            Ok(FaultKind::Corrupt { offset, length })
        }
        "fail" => {
            if f.offset.is_some() || f.length.is_some() {
                return Err(err(
                    "offset",
                    "a whole-disk failure has no range; drop offset and length".into(),
                ));
            }
            Ok(FaultKind::Fail)
        }
        o => Err(err(
            "kind",
            format!("unknown kind '{o}' (use unreadable, fail or corrupt)"),
        )),
    }
}

/// Whether fault `n` can strike member `member` after the rebuild: the member degrade fails
/// is replaced by a new disk with no dm table, so a fault that needs one cannot go there.
fn after_rebuild(
    cx: &Cx,
    n: usize,
    at: FaultStep,
    kind: FaultKind,
    member: usize,
    stack: &Stack,
    draft: &Draft,
) -> Result<(), SpecError> {
    if at == FaultStep::AfterRebuild
        && kind.needs_dm()
        && draft.degrade
        && member + 1 == stack.members
    {
        return Err(cx.err(
            "faults",
            &format!("faults[{n}].member"),
            format!(
                "member {member} is replaced by the rebuild, and the new disk has no dm table to fail; use kind = \"corrupt\" or another member"
            ),
        ));
    }
    Ok(())
}

/// The `copies` of fault `n`: `"one"` (the default) or `"all"`, which needs a corrupt fault
/// placed under file data (the lab finds the other copies through the same map) struck
/// before degrading, while degraded or after the rebuild.
fn copies(
    cx: &Cx,
    n: usize,
    f: &RawFault,
    kind: FaultKind,
    under: bool,
    at: FaultStep,
) -> Result<Copies, SpecError> {
    let err = |msg: String| cx.err("faults", &format!("faults[{n}].copies"), msg);
    let c = match f.copies.as_deref().map(str::trim) {
        None | Some("one") => return Ok(Copies::One),
        Some("all") => Copies::All,
        Some(o) => {
            return Err(err(format!(
                "unknown '{o}' (use \"one\": the struck copy only, or \"all\": every copy of the struck blocks)"
            )));
        }
    };
    if !matches!(kind, FaultKind::Corrupt { .. }) || !under {
        return Err(err(
            "\"all\" overwrites every copy of the file bytes under the range: it needs kind = \"corrupt\" with offset = \"data\" or \"file:PATH\"".into(),
        ));
    }
    if at == FaultStep::Rebuild {
        return Err(err(
            "\"all\" is struck before degrading, while degraded or after the rebuild; use at = \"before_degrade\", \"degraded\" or \"after_rebuild\"".into(),
        ));
    }
    Ok(c)
}

/// The `(offset, length)` of fault `n`'s `what` range (offset 0 when the lab places it:
/// `under`).
fn range(
    cx: &Cx,
    n: usize,
    f: &RawFault,
    under: bool,
    what: &str,
) -> Result<(u64, u64), SpecError> {
    let err = |k: &str, msg: String| cx.err("faults", &format!("faults[{n}].{k}"), msg);
    let offset = match &f.offset {
        Some(_) if under => 0,
        Some(v) => v.bytes().map_err(|e| {
            err(
                "offset",
                format!("{e}; give bytes (\"16MiB\"), \"data\" (under a file of the data set) or \"file:PATH\""),
            )
        })?,
        None => {
            return Err(err(
                "offset",
                format!(
                    "missing; where the {what} range starts on the member (e.g. \"16MiB\", or \"data\" to put it under a file of the data set)"
                ),
            ));
        }
    };
    let length = match &f.length {
        Some(v) => v.bytes().map_err(|e| err("length", e))?,
        None => {
            return Err(err(
                "length",
                format!("missing; how many bytes are {what} (e.g. \"1MiB\")"),
            ));
        }
    };
    if length == 0 || length % 512 != 0 || offset % 512 != 0 {
        return Err(err(
            "length",
            "offset and length must be whole 512-byte sectors, length at least 512".into(),
        ));
    }
    Ok((offset, length))
}

/// `offset = "data"` or `"file:PATH"`: where the lab places the range itself.
fn under(text: &str) -> Option<Under> {
    let t = text.trim();
    if t == "data" {
        return Some(Under::Data);
    }
    t.strip_prefix("file:")
        .map(|p| Under::File(p.trim().trim_start_matches("./").to_string()))
}

/// Whether fault `n` can be placed under file data on this stack: the data set's files are
/// found through the filesystem's extent map and md's layout, btrfs's chunk tree or ZFS's
/// block pointers (not on dRAID), so it needs a data set.
/// `fill`: the layout sets `fill` (read after the faults, in the size phase).
fn under_data(
    cx: &Cx,
    n: usize,
    stack: &Stack,
    draft: &Draft,
    fill: bool,
) -> Result<(), SpecError> {
    let err = |msg: &str| cx.err("faults", &format!("faults[{n}].offset"), msg.to_string());
    if let RaidLayer::Zfs(z) = stack.raid() {
        if matches!(z.vdev, crate::stack::zfs::VdevKind::Draid { .. }) {
            return Err(err(
                "\"data\" is placed through ZFS's block pointers on plain disks, mirrors and raidz; a dRAID's layout is not mapped: give bytes (\"16MiB\") or use raidz",
            ));
        }
    }
    if !(draft.degrade || fill || draft.fill.is_some()) {
        return Err(err(
            "\"data\" needs the lab's data set on the layout: set fill = \"48MiB\" (or degrade = true)",
        ));
    }
    Ok(())
}

/// The optional `progress` of fault `n`: the percent of md's recovery done when it strikes
/// (0 to 100; rebuild faults on md only).
fn progress(
    cx: &Cx,
    n: usize,
    v: Option<i64>,
    at: FaultStep,
    stack: &Stack,
) -> Result<Option<u8>, SpecError> {
    let err = |msg: String| cx.err("faults", &format!("faults[{n}].progress"), msg);
    let Some(p) = v else {
        return Ok(None);
    };
    if !(0..=100).contains(&p) {
        return Err(err(format!(
            "{p} is not a percent; use 0 to 100 (how far the rebuild is when the fault strikes)"
        )));
    }
    if at != FaultStep::Rebuild {
        return Err(err(
            "only a fault during the rebuild has a progress; set at = \"rebuild\" or drop progress"
                .into(),
        ));
    }
    if !matches!(stack.raid(), RaidLayer::Md(_)) {
        return Err(err(
            "only md's recovery can be stopped at a chosen point (sync_max); a zfs resilver is held at its start: drop progress".into(),
        ));
    }
    Ok(u8::try_from(p).ok())
}

/// Whether fault `n` can strike member `member` at step `at` of this stack.
fn placement(
    cx: &Cx,
    n: usize,
    at: FaultStep,
    member: usize,
    stack: &Stack,
    draft: &Draft,
) -> Result<(), SpecError> {
    let err = |k: &str, msg: String| cx.err("faults", &format!("faults[{n}].{k}"), msg);
    let at_s = at.name();
    if matches!(stack.raid(), RaidLayer::None) {
        return Err(err(
            "member",
            "faults need a RAID layer to watch what it does; add mdadm, btrfs or zfs".into(),
        ));
    }
    if at == FaultStep::Degraded {
        return degraded(cx, n, member, stack, draft);
    }
    if at != FaultStep::BeforeDegrade && !draft.rebuild {
        return Err(err(
            "at",
            format!("at = \"{at_s}\" needs a rebuild; set degrade = true and rebuild = true"),
        ));
    }
    if at == FaultStep::Rebuild {
        if matches!(stack.raid(), RaidLayer::Btrfs { .. }) {
            return Err(err(
                "at",
                "btrfs replace cannot be held to strike a fault inside it; use at = \"before_degrade\" or \"after_rebuild\" on a btrfs layout, or an mdadm or zfs layout".into(),
            ));
        }
        if stack.spares > 0 && matches!(stack.raid(), RaidLayer::Md(_)) {
            return Err(err(
                "at",
                "with spares md rebuilds onto a spare the moment a member fails, before the rebuild step; drop spares for a fault during the rebuild".into(),
            ));
        }
        if member + 1 == stack.members {
            return Err(err(
                "member",
                format!(
                    "member {member} is the one degrade fails; a fault during the rebuild goes on a surviving member (0 to {})",
                    stack.members.saturating_sub(2)
                ),
            ));
        }
    }
    Ok(())
}

/// Whether fault `n` can strike member `member` while the layout is degraded: the layout
/// must lose a member (`degrade = true`, on a level that survives it), and the fault goes
/// on a member that is still there (degrade fails the last one).
fn degraded(
    cx: &Cx,
    n: usize,
    member: usize,
    stack: &Stack,
    draft: &Draft,
) -> Result<(), SpecError> {
    let err = |k: &str, msg: String| cx.err("faults", &format!("faults[{n}].{k}"), msg);
    if !stack.survives_one_failure() {
        return Err(err(
            "at",
            format!(
                "{} cannot lose a member, so it is never degraded; use at = \"healthy\"",
                stack.describe()
            ),
        ));
    }
    if !draft.degrade {
        return Err(err(
            "at",
            "at = \"degraded\" strikes after a member is failed; set degrade = true".into(),
        ));
    }
    if member + 1 == stack.members {
        return Err(err(
            "member",
            format!(
                "member {member} is the one degrade fails; a fault while degraded goes on a surviving member (0 to {})",
                stack.members.saturating_sub(2)
            ),
        ));
    }
    Ok(())
}
