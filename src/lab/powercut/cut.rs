//! One cut, in its two boots: before it, the layout built, the data set made durable and the
//! writer running while the guest waits for the power to go; after it, the layout assembled
//! from its disks, a member failed when asked, every file judged, everything torn down.

use std::path::Path;
use std::time::{Duration, Instant};

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use super::judge::{Base, Durable};
use super::writer::{self, Plan, Running};
use super::{HOST_LOG, MARK_CUT, NOT_CUT_GRACE_MS, Pending};
use crate::layout::session::OnDisk;
use crate::layout::{Built, DiskSource, RaidLayer, Session, Stack};
use crate::sample::power::{CutReport, DiskRollback, MdRecovery};
use crate::spec::lab::{AfterCut, LayoutSpec, PowerCutSpec};

/// Blocks per file of the data set (256 KiB files).
const FILE_BLOCKS: u64 = 64;
/// Writer threads: each keeps one synchronous write in flight.
const THREADS: u64 = 32;
/// The data set when the layout sets no `fill`.
const DEFAULT_BASE: u64 = 8 << 20;
/// Where the files go on the layout.
const DATA_DIR: &str = "powercut";

/// md's resync speed floor and ceiling while a member is to fail before the resync ends.
const SPEED_MIN: &str = "/proc/sys/dev/raid/speed_limit_min";
const SPEED_MAX: &str = "/proc/sys/dev/raid/speed_limit_max";

/// A cut whose writer is running.
pub(super) struct InFlight {
    pub(super) pending: Pending,
    built: Option<Built>,
    writer: Option<Running>,
}

/// The seeded moment of cut `k` and the tag its blocks carry.
fn moment(pc: &PowerCutSpec, layout: &str, k: u32) -> (u64, u64) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(
        pc.seed ^ u64::from(k).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let lo = pc.window_ms / 8;
    let span = pc.window_ms - lo;
    let after = lo + ((u128::from(rng.next_u64()) * u128::from(span)) >> 64) as u64 + 1;
    let tag = xxhash_rust::xxh3::xxh3_64(format!("{}/{layout}/{k}", pc.seed).as_bytes()) | 1;
    (after, tag)
}

/// Which cut of which layout.
pub(super) struct Which<'a> {
    pub(super) index: usize,
    pub(super) layout: &'a LayoutSpec,
    pub(super) stack: &'a Stack,
    pub(super) pc: &'a PowerCutSpec,
    pub(super) cut: u32,
}

/// Builds the layout on the lab's devices, writes the data set and starts the writer; a cut
/// that cannot get that far comes back as its report.
pub(super) fn prepare(
    session: &mut Session,
    devices: &[std::path::PathBuf],
    w: &Which,
    dir: &Path,
    step: &mut dyn FnMut(&str, String),
) -> Result<InFlight, Box<CutReport>> {
    let name = &w.layout.name;
    let fail = |e: String| {
        Box::new(CutReport {
            cut: w.cut,
            error: Some(e),
            ..CutReport::default()
        })
    };
    step(
        name,
        format!(
            "power cut {}/{}: building {}",
            w.cut,
            w.pc.cuts,
            w.stack.describe()
        ),
    );
    let src = DiskSource::Devices(devices.to_vec());
    let built = session
        .build(w.index, name, w.stack, &src)
        .map_err(|e| fail(format!("building the layout: {e}")))?;
    let (after_ms, tag) = moment(w.pc, name, w.cut);
    let bytes = w
        .layout
        .fill
        .unwrap_or(DEFAULT_BASE)
        .min(built.usable_bytes / 4);
    let files = (bytes / (FILE_BLOCKS * 4096)).max(THREADS);
    let pending = Pending {
        layout: name.clone(),
        index: w.index,
        cut: w.cut,
        tag,
        after_ms,
        members: built.disks_under(&built.members),
        spares: built.disks_under(&built.spares),
        made: built.made.clone(),
        files,
        blocks: FILE_BLOCKS,
        prefix: format!("{name}-cut{}", w.cut),
    };
    let plan = plan(&pending, &built.mount_point, dir, w.pc.seed);
    step(
        name,
        format!(
            "power cut {}/{}: writing the data set ({files} files of {} KiB)",
            w.cut,
            w.pc.cuts,
            FILE_BLOCKS * 4
        ),
    );
    if let Err(e) = writer::write_base(&plan) {
        session.teardown(built);
        return Err(fail(format!("writing the data set: {e}")));
    }
    Ok(InFlight {
        pending,
        built: Some(built),
        writer: Some(writer::start(&plan)),
    })
}

fn plan(p: &Pending, mount: &Path, dir: &Path, seed: u64) -> Plan {
    Plan {
        data: mount.join(DATA_DIR),
        logs: dir.to_path_buf(),
        prefix: p.prefix.clone(),
        tag: p.tag,
        seed,
        files: p.files,
        blocks: p.blocks,
        threads: THREADS,
    }
}

impl InFlight {
    /// Tells the host the power may go, and waits for it; returns why the wait ended when the
    /// power did not go.
    pub(super) fn wait_for_the_cut(&mut self) -> String {
        let p = &self.pending;
        eprintln!(
            "{MARK_CUT} layout={} cut={} after_ms={}",
            p.layout, p.cut, p.after_ms
        );
        let t = Instant::now();
        let limit = Duration::from_millis(p.after_ms + NOT_CUT_GRACE_MS);
        while t.elapsed() < limit && !crate::signals::stop_requested() {
            std::thread::sleep(Duration::from_millis(200));
        }
        if crate::signals::stop_requested() {
            return "interrupted".into();
        }
        format!(
            "the power was not cut {} s after the writer started: power cuts need iolab lab --vm",
            limit.as_secs()
        )
    }

    /// Stops the writer and tears the layout down (the power did not go).
    pub(super) fn abandon(&mut self, session: &mut Session) {
        if let Some(w) = self.writer.take() {
            let _ = w.stop();
        }
        if let Some(b) = self.built.take() {
            session.teardown(b);
        }
    }
}

/// What the host wrote down about this cut: when it killed the VM, and, when the disks had a
/// volatile cache, the model and what each disk kept.
struct HostRecord {
    killed_after_ms: Option<u64>,
    cache: String,
    rollback: Vec<DiskRollback>,
}

fn host_record(dir: &Path, p: &Pending) -> HostRecord {
    let text = std::fs::read_to_string(dir.join(HOST_LOG)).unwrap_or_default();
    let key = format!("{} {} ", p.layout, p.cut);
    let line = text.lines().rev().find_map(|l| l.strip_prefix(&key));
    let word = |k: &str| {
        line.and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix(k)))
            .map(str::to_string)
    };
    let cache = word("cache=").unwrap_or_else(|| "none".into());
    let rollback = if cache == "none" {
        Vec::new()
    } else {
        let f = dir.join(super::rollback_file(&format!("{} {}", p.layout, p.cut)));
        std::fs::read(f)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    };
    HostRecord {
        killed_after_ms: word("killed_after_ms=").and_then(|v| v.parse().ok()),
        cache,
        rollback,
    }
}

/// The guest kernel's log, as lines.
fn dmesg(session: &Session) -> Vec<String> {
    session
        .runner()
        .run(&["dmesg"])
        .map(|o| o.stdout.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// What the kernel said about the layers since `from` lines of its log.
fn kernel_lines(all: &[String], from: usize) -> Vec<String> {
    const WORDS: &[&str] = &[
        "md/", "md:", "raid", "XFS", "EXT4", "BTRFS", "ppl", "journal", "recover", "error",
    ];
    let lines: Vec<String> = all
        .iter()
        .skip(from)
        .filter(|l| WORDS.iter().any(|w| l.contains(w)))
        .map(|l| l.trim().to_string())
        .collect();
    lines[lines.len().saturating_sub(16)..].to_vec()
}

fn read_sys(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Holds md's resync at its floor; returns the limits to put back.
fn hold_resync() -> Option<(String, String)> {
    let prev = (
        read_sys(Path::new(SPEED_MIN)),
        read_sys(Path::new(SPEED_MAX)),
    );
    let ok = std::fs::write(SPEED_MIN, "1").is_ok() && std::fs::write(SPEED_MAX, "1").is_ok();
    ok.then_some(prev)
}

fn release_resync(prev: Option<(String, String)>) {
    if let Some((min, max)) = prev {
        let _ = std::fs::write(SPEED_MAX, max);
        let _ = std::fs::write(SPEED_MIN, min);
    }
}

/// `sync_completed` (`done / total` sectors) as a percentage.
fn sync_pct(md_dir: &Path) -> Option<f64> {
    crate::layout::scrub::parse_completed(&read_sys(&md_dir.join("sync_completed")))
        .filter(|&(_, total)| total > 0)
        .map(|(done, total)| 100.0 * done as f64 / total as f64)
}

/// A cut's report as far as it is known before the layout is assembled again: when the power
/// went, what the host recorded of the cut, what the writer had made durable, and whether the
/// writer had already stopped with an error.
fn cut_report(dir: &Path, p: &Pending, durable: &Durable) -> CutReport {
    let host = host_record(dir, p);
    let mut r = CutReport {
        cut: p.cut,
        after_ms: p.after_ms,
        killed_after_ms: host.killed_after_ms,
        disk_cache: host.cache,
        rollback: host.rollback,
        durable_writes: durable.writes,
        durable_files: durable.created.len() as u64,
        ..CutReport::default()
    };
    if let Some(e) = durable.errors.first() {
        r.error = Some(format!(
            "the writer stopped before the cut ({} thread{}): {e}",
            durable.errors.len(),
            if durable.errors.len() == 1 { "" } else { "s" }
        ));
    }
    r
}

/// Assembles the layout of the pending cut from its disks after the power came back, fails a
/// member when asked, judges every file and tears the layout down.
pub(super) fn recover(
    session: &mut Session,
    l: &LayoutSpec,
    p: &Pending,
    dir: &Path,
    step: &mut dyn FnMut(&str, String),
) -> CutReport {
    let durable = Durable::read(dir, &p.prefix);
    let mut r = cut_report(dir, p, &durable);
    let (Some(pc), crate::spec::lab::LayoutKind::Stack(stack)) = (&l.powercut, &l.kind) else {
        r.error = Some("the layout no longer asks for power cuts".into());
        return r;
    };
    let total = pc.cuts;
    step(
        &l.name,
        format!("power cut {}/{total}: the power is back; assembling", p.cut),
    );
    let log_from = dmesg(session).len();
    let is_md = matches!(stack.raid(), RaidLayer::Md(_));
    let held = if is_md && pc.then == AfterCut::FailMember {
        hold_resync()
    } else {
        None
    };
    let t0 = Instant::now();
    let on = OnDisk {
        index: p.index,
        name: &l.name,
        stack,
        members: &p.members,
        spares: &p.spares,
        made: &p.made,
    };
    let mut a = match session.assemble(&on) {
        Ok(a) => a,
        Err(e) => {
            release_resync(held);
            r.recovery.kernel = kernel_lines(&dmesg(session), log_from);
            r.error = Some(format!("assembling after the cut: {e}"));
            return r;
        }
    };
    r.recovery.assemble_seconds = Some(a.assemble_seconds);
    r.recovery.mount_seconds = Some(a.mount_seconds);
    let md_array = a.built.md_array();
    let md_dir = md_array.as_ref().map(|md| {
        Path::new("/sys/block")
            .join(md.file_name().unwrap_or_default())
            .join("md")
    });
    let mut mdr = md_dir.as_ref().map(|d| md_recovery(d, held.is_some()));
    if pc.then == AfterCut::FailMember {
        if let (Some(m), Some(d)) = (mdr.as_mut(), md_dir.as_ref()) {
            m.resync_pct_at_failure =
                sync_pct(d).or(Some(0.0).filter(|_| m.sync_action == "resync"));
        }
        match session.degrade(&mut a.built) {
            Ok(d) => r.failed_member = Some(d.failed_member.display().to_string()),
            Err(e) => r.error = Some(format!("failing a member after the cut: {e}")),
        }
    }
    release_resync(held);
    step(
        &l.name,
        format!("power cut {}/{total}: reading everything back", p.cut),
    );
    let _ = crate::system::drop_caches();
    let base = Base {
        tag: p.tag,
        files: p.files,
        blocks: p.blocks,
    };
    r.judgement = super::judge(&a.built.mount_point.join(DATA_DIR), base, &durable);
    if let (Some(m), Some(md)) = (mdr.as_mut(), md_array.as_ref()) {
        if pc.then == AfterCut::None
            && crate::layout::mdadm::wait_idle(session.runner(), md).is_ok()
        {
            m.resync_seconds = Some(t0.elapsed().as_secs_f64());
        }
    }
    r.recovery.md = mdr;
    r.recovery.kernel = kernel_lines(&dmesg(session), log_from);
    let left = session.teardown(a.built);
    if !left.is_empty() && r.error.is_none() {
        r.error = Some(format!(
            "teardown left {}",
            left.iter()
                .map(|(o, e)| format!("{}: {e}", o.label()))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    r
}

/// The md array's state as the power came back (its sysfs directory `d`), before it is
/// failed or read; `resync_held`: its resync was held back to fail a member during it.
fn md_recovery(d: &Path, resync_held: bool) -> MdRecovery {
    MdRecovery {
        array_state: read_sys(&d.join("array_state")),
        sync_action: read_sys(&d.join("sync_action")),
        consistency_policy: read_sys(&d.join("consistency_policy")),
        resync_held,
        ..MdRecovery::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moment_is_seeded_and_inside_the_window() {
        let pc = PowerCutSpec {
            cuts: 10,
            then: AfterCut::FailMember,
            disk_cache: crate::spec::lab::DiskCache::None,
            seed: 42,
            window_ms: 4000,
        };
        let a: Vec<(u64, u64)> = (1..=10).map(|k| moment(&pc, "r5", k)).collect();
        let b: Vec<(u64, u64)> = (1..=10).map(|k| moment(&pc, "r5", k)).collect();
        assert_eq!(a, b, "the same seed cuts at the same moments");
        assert!(a.iter().all(|(ms, _)| (500..=4000).contains(ms)), "{a:?}");
        let distinct: std::collections::BTreeSet<u64> = a.iter().map(|x| x.0).collect();
        assert!(distinct.len() > 5, "{a:?}");
        assert_ne!(moment(&pc, "r5", 1).1, moment(&pc, "r6", 1).1);
    }

    /// The guest reads back what the host wrote down about a cut: when, under which cache
    /// model, and what each disk kept.
    #[test]
    fn the_host_record_of_a_cut_reads_back() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(HOST_LOG),
            "r5 1 killed_after_ms=40\nr5 2 killed_after_ms=55 cache=volatile\nr5 10 killed_after_ms=9\n",
        )
        .unwrap();
        let disks = vec![DiskRollback {
            disk: "/dev/vda".into(),
            logged: 9,
            dropped: 2,
            ..DiskRollback::default()
        }];
        std::fs::write(
            d.path().join(super::super::rollback_file("r5 2")),
            serde_json::to_vec(&disks).unwrap(),
        )
        .unwrap();
        let pending = |cut| Pending {
            layout: "r5".into(),
            index: 0,
            cut,
            tag: 1,
            after_ms: 1,
            members: vec![],
            spares: vec![],
            made: crate::layout::Made::default(),
            files: 1,
            blocks: 1,
            prefix: String::new(),
        };
        let one = host_record(d.path(), &pending(1));
        assert_eq!(
            (one.killed_after_ms, one.cache.as_str()),
            (Some(40), "none")
        );
        assert!(one.rollback.is_empty());
        let two = host_record(d.path(), &pending(2));
        assert_eq!(
            (two.killed_after_ms, two.cache.as_str()),
            (Some(55), "volatile")
        );
        assert_eq!(two.rollback, disks);
        assert_eq!(host_record(d.path(), &pending(3)).killed_after_ms, None);
    }
}
