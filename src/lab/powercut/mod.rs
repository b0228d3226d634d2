//! Power cuts in the VM lab: what each layout loses when the power goes.
//!
//! The lab in the guest does the work; the host only owns the power switch. For each cut of a
//! layout with `powercut = {...}`, the guest builds the layout, writes a data set and makes it
//! durable, records what it built in a state file on the host's share, starts the
//! [`writer`], and prints [`MARK_CUT`] with the moment (seeded) the power is to go. The host
//! kills qemu at that moment — every write a virtual disk completed is kept, nothing else
//! (`disk_cache = "none"`) — and boots the VM again on the same disk files. The guest's lab
//! starts over, finds the pending cut in the state file, assembles the layout from its disks
//! ([`crate::layout::Session::assemble`]: md's resync or PPL replay, LVM, the filesystem's log
//! replay, each timed), with `then = "fail-member"` fails a member before a resync can finish,
//! and [`judge()`]s every file against the writer's durable log. Then the next cut; once every
//! cut of every layout is judged, the lab goes on as usual and each layout's report carries its
//! [`PowerReport`] (the POWER column).
//!
//! Nothing survives in the guest across a cut but the disks, so everything the next boot needs
//! is in the share: the state file, the writer's logs, and the host's record of when it cut.

pub mod block;
mod cut;
pub mod judge;
pub mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spec::{LabSpec, LayoutKind};
use crate::layout::Session;
use crate::sample::power::{CutReport, PowerReport};

pub use judge::{Base, Durable, judge};

/// The share's directory for power cuts (under the VM's 9p share): the guest lab's state
/// across cuts, the writer's durable log, the host's record of each cut ([`HOST_LOG`]).
pub const SHARE_DIR: &str = "pc";

/// The console line on which the host cuts the power: `iolab-guest: powercut layout=NAME
/// cut=K after_ms=N` — the VM is killed `N` ms after the host reads it.
pub const MARK_CUT: &str = "iolab-guest: powercut";

/// The host's record of its cuts in [`SHARE_DIR`]: `NAME K killed_after_ms=N` lines.
pub const HOST_LOG: &str = "host.log";

/// The file in [`SHARE_DIR`] where the host puts what each disk kept of cut `NAME K` (a
/// volatile disk cache): `NAME-K.rollback.json`.
pub fn rollback_file(cut: &str) -> String {
    format!("{}.rollback.json", cut.replace(' ', "-"))
}

/// Parses a [`MARK_CUT`] line: (`NAME K`, milliseconds to wait before the cut).
pub fn parse_cut(line: &str) -> Option<(String, u64)> {
    let rest = &line[line.find(MARK_CUT)? + MARK_CUT.len()..];
    let mut layout = None;
    let mut cut = None;
    let mut after = None;
    for w in rest.split_whitespace() {
        if let Some(v) = w.strip_prefix("layout=") {
            layout = Some(v);
        } else if let Some(v) = w.strip_prefix("cut=") {
            cut = v.parse::<u32>().ok();
        } else if let Some(v) = w.strip_prefix("after_ms=") {
            after = v.parse::<u64>().ok();
        }
    }
    Some((format!("{} {}", layout?, cut?), after?))
}

/// The guest's record of its cuts, in the share.
const STATE: &str = "state.json";

/// How long the guest waits beyond the planned moment before it concludes the host will not
/// cut the power (the lab is not running under `iolab lab --vm`).
const NOT_CUT_GRACE_MS: u64 = 120_000;

/// What the guest knows about its cuts: the ones judged, per layout, and the one whose power
/// is about to go (or went).
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    done: BTreeMap<String, Vec<CutReport>>,
    pending: Option<Pending>,
}

/// A cut in flight: what the next boot needs to assemble the layout and judge it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pending {
    layout: String,
    index: usize,
    cut: u32,
    tag: u64,
    after_ms: u64,
    members: Vec<PathBuf>,
    spares: Vec<PathBuf>,
    /// What the layers named at build (the md array's `--name`, the volume group, the ZFS
    /// pool): each finds its own again by it at the next boot.
    made: crate::layout::Made,
    files: u64,
    blocks: u64,
    prefix: String,
}

fn load(dir: &Path) -> Result<State, String> {
    match std::fs::read_to_string(dir.join(STATE)) {
        Ok(t) => {
            serde_json::from_str(&t).map_err(|e| format!("{}: {e}", dir.join(STATE).display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
        Err(e) => Err(format!("{}: {e}", dir.join(STATE).display())),
    }
}

/// Writes the state (a new file renamed over the old: a cut cannot leave half of it).
fn save(dir: &Path, st: &State) -> Result<(), String> {
    let tmp = dir.join(format!("{STATE}.tmp"));
    let text = serde_json::to_string_pretty(st).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, dir.join(STATE)))
        .map_err(|e| format!("cannot write {}: {e}", dir.join(STATE).display()))
}

/// Whether a lab has power cuts to make.
pub fn wanted(spec: &LabSpec) -> bool {
    spec.layouts.iter().any(|l| l.powercut.is_some())
}

/// Makes every cut the spec asks for that is not judged yet (the pending one first), and
/// returns each power-cut layout's report. `dir` is the share's power-cut directory; `step`
/// gets progress lines (layout name, what).
///
/// Does not return while a cut is in flight: the host kills the VM, and the next boot's lab
/// calls this again.
pub fn run_cuts(
    spec: &LabSpec,
    session: &mut Session,
    dir: &Path,
    step: &mut dyn FnMut(&str, String),
) -> BTreeMap<String, PowerReport> {
    let crate::spec::lab::Disks::Devices(devices) = &spec.disks else {
        return failed_all(
            spec,
            "power cuts run in the VM lab, on its disks (iolab lab --vm)",
        );
    };
    let mut st = match load(dir) {
        Ok(s) => s,
        Err(e) => return failed_all(spec, &format!("cannot read the power-cut state: {e}")),
    };
    if let Some(p) = st.pending.take() {
        let r = match spec.layout(&p.layout) {
            Some(l) => cut::recover(session, l, &p, dir, step),
            None => CutReport {
                cut: p.cut,
                error: Some("the layout is no longer in the spec".into()),
                ..CutReport::default()
            },
        };
        st.done.entry(p.layout.clone()).or_default().push(r);
        if let Err(e) = save(dir, &st) {
            return failed_all(spec, &e);
        }
    }
    'layouts: for (index, l) in spec.layouts.iter().enumerate() {
        let (Some(pc), LayoutKind::Stack(stack)) = (&l.powercut, &l.kind) else {
            continue;
        };
        loop {
            let done = st.done.get(&l.name).map_or(0, Vec::len) as u32;
            if done >= pc.cuts || crate::signals::stop_requested() {
                break;
            }
            let k = done + 1;
            let which = cut::Which {
                index,
                layout: l,
                stack,
                pc,
                cut: k,
            };
            let r = match cut::prepare(session, devices, &which, dir, step) {
                Ok(mut c) => {
                    st.pending = Some(c.pending.clone());
                    let r = match save(dir, &st) {
                        Ok(()) => c.wait_for_the_cut(),
                        Err(e) => e,
                    };
                    // Still here: the power did not go.
                    st.pending = None;
                    c.abandon(session);
                    CutReport {
                        cut: k,
                        error: Some(r),
                        ..CutReport::default()
                    }
                }
                Err(r) => *r,
            };
            let stop = r.error.as_deref().is_some_and(|e| e.contains("not cut"));
            st.done.entry(l.name.clone()).or_default().push(r);
            if let Err(e) = save(dir, &st) {
                return failed_all(spec, &e);
            }
            if stop {
                break 'layouts;
            }
        }
    }
    reports(spec, &st)
}

/// Each power-cut layout's report from the state.
fn reports(spec: &LabSpec, st: &State) -> BTreeMap<String, PowerReport> {
    spec.layouts
        .iter()
        .filter_map(|l| {
            let pc = l.powercut?;
            Some((
                l.name.clone(),
                PowerReport {
                    cuts_planned: pc.cuts,
                    then: pc.then.name().into(),
                    disk_cache: pc.disk_cache.name().into(),
                    seed: pc.seed,
                    window_ms: pc.window_ms,
                    cuts: st.done.get(&l.name).cloned().unwrap_or_default(),
                },
            ))
        })
        .collect()
}

/// Every power-cut layout reported as one cut that could not be made, for `why`.
fn failed_all(spec: &LabSpec, why: &str) -> BTreeMap<String, PowerReport> {
    let mut st = State::default();
    for l in spec.layouts.iter().filter(|l| l.powercut.is_some()) {
        st.done.insert(
            l.name.clone(),
            vec![CutReport {
                cut: 1,
                error: Some(why.to_string()),
                ..CutReport::default()
            }],
        );
    }
    reports(spec, &st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_line_names_the_cut_and_the_moment() {
        assert_eq!(
            parse_cut("\u{1b}[0miolab-guest: powercut layout=md5 cut=3 after_ms=1234\r"),
            Some(("md5 3".into(), 1234))
        );
        assert_eq!(
            parse_cut("iolab-guest: powercut layout=md5 cut=x after_ms=1"),
            None
        );
        assert_eq!(parse_cut("iolab-guest: ready"), None);
    }
}
