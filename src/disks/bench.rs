//! The per-disk read test: O_DIRECT 1 MiB sequential reads at the start, middle and end of each
//! device (outer tracks of a spinning disk are faster than inner ones), one device at a time,
//! then optionally all devices at once to expose a shared controller or bus limit (the RAID
//! card that capped SSD IOPS in `iops-fio-mongodb.txt`).
//!
//! It never writes: the workload is [`Pattern::Read`], and the IO runner opens the device
//! read-only for patterns that do not write (see [`bench_workload`] and its test). Each read
//! goes through [`run_io_trial`], so every figure is a [`TrialSample`] in a [`RunRecord`] that
//! the results store keeps like any run; workloads are named `<device>@<place>` (and
//! `<device>@<place>:parallel` for the reads done all at once).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DisksError;
use super::census::DiskInfo;
use super::outliers::{self, Flag, Group, Speed};
use crate::runner::io::{Control, IoFile, run_io_trial};
use crate::sample::{RunRecord, RunStatus, TrialSample, WorkloadRecord, now_unix_ms};
use crate::spec::{IoWorkload, Pattern, Workload, WorkloadKind};
use crate::target::{TargetInfo, TargetKind};

/// Bytes per read: large enough that a disk streams, as `dd bs=1M` and `hdparm -t` do.
pub const BLOCK_SIZE: u64 = 1 << 20;
/// The most bytes one place covers. Reads wrap within it, so it must exceed any drive cache
/// (a re-read served from a 256 MiB HDD cache would flatter the disk), yet stay a narrow band
/// of the platter so "start" really is the outer edge.
pub const MAX_PLACE_BYTES: u64 = 8 << 30;
/// The places read on every device, in order.
pub const PLACES: [&str; 3] = ["start", "middle", "end"];
/// The label a bench run carries unless `--label` says otherwise.
pub const DEFAULT_LABEL: &str = "disks-bench";
/// The suite name of a bench run in the store.
pub const SUITE_NAME: &str = "disks-bench";

/// How to run the read test.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Read time per place.
    pub runtime: Duration,
    /// Reads in flight per device.
    pub queue_depth: u32,
    /// Also read all devices at once.
    pub parallel: bool,
    /// SLOW threshold as a fraction (0.15 = 15% below the group median).
    pub tolerance: f64,
    /// Temperature limit, °C; `None` uses the defaults per kind of drive.
    pub max_temp: Option<f64>,
    /// Label of the run (default `disks-bench`).
    pub label: Option<String>,
    /// Free-form note kept with the run.
    pub note: Option<String>,
    /// argv, for the record.
    pub command_line: Vec<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            runtime: Duration::from_secs(3),
            queue_depth: 4,
            parallel: false,
            tolerance: outliers::DEFAULT_TOLERANCE,
            max_temp: None,
            label: None,
            note: None,
            command_line: Vec::new(),
        }
    }
}

/// A region of a device the test reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// `start`, `middle` or `end`.
    pub place: String,
    /// First byte.
    pub offset: u64,
    /// Length in bytes; reads wrap within `[offset, offset + len)`.
    pub len: u64,
}

/// The three places of a device of `size` bytes: each `min(size/3, MAX_PLACE_BYTES)` long,
/// block-aligned, at the very start, centred on the middle, and ending at the last whole block.
pub fn places(size: u64, block: u64, max_len: u64) -> Option<Vec<Place>> {
    let blocks = size / block;
    if blocks < 3 {
        return None;
    }
    let len = (blocks / 3).min((max_len / block).max(1)) * block;
    let end = blocks * block;
    let middle = ((end / 2).saturating_sub(len / 2) / block) * block;
    Some(
        [(PLACES[0], 0), (PLACES[1], middle), (PLACES[2], end - len)]
            .into_iter()
            .map(|(p, offset)| Place {
                place: p.to_string(),
                offset,
                len,
            })
            .collect(),
    )
}

/// The workload of one place: sequential O_DIRECT reads of 1 MiB, and nothing that writes.
pub fn bench_workload(opts: &BenchOptions, place_len: u64) -> IoWorkload {
    IoWorkload {
        pattern: Pattern::Read,
        block_size: BLOCK_SIZE,
        queue_depth: opts.queue_depth.max(1),
        threads: 1,
        size: Some(place_len),
        runtime: Some(opts.runtime),
        direct: true,
        fsync_every: 0,
        fsync_at_end: false,
        ..IoWorkload::default()
    }
}

/// Checks a device can be read by the test: large enough for three places, and openable
/// read-only with O_DIRECT (which is also what the test does: never for writing).
pub fn check_readable(d: &DiskInfo) -> Result<(), DisksError> {
    use std::os::unix::fs::OpenOptionsExt;
    if places(d.device.size_bytes, BLOCK_SIZE, MAX_PLACE_BYTES).is_none() {
        return Err(DisksError::TooSmall {
            path: d.path().to_path_buf(),
            size: d.device.size_bytes,
            need: 3 * BLOCK_SIZE,
        });
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC)
        .open(d.path())
        .map(drop)
        .map_err(|source| DisksError::Open {
            path: d.path().to_path_buf(),
            source,
        })
}

/// One place's figures on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceResult {
    /// `start`, `middle` or `end`.
    pub place: String,
    /// First byte read.
    pub offset: u64,
    /// Bytes the reads wrapped within.
    pub len: u64,
    /// MB/s (10^6 bytes/s) read alone.
    pub mb_per_sec: f64,
    /// MB/s while every device was read at once (`--parallel`).
    pub parallel_mb_per_sec: Option<f64>,
}

/// One device's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceResult {
    /// Kernel name.
    pub device: String,
    /// Device node.
    pub path: PathBuf,
    /// Model, when reported.
    pub model: Option<String>,
    /// Firmware revision, when reported.
    pub firmware: Option<String>,
    /// Serial number, when reported.
    pub serial: Option<String>,
    /// Transport (`sata`, `nvme`, `loop`...).
    pub transport: Option<String>,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Temperature before the test, °C.
    pub temperature_c: Option<f64>,
    /// The group it is compared within (model + firmware, or transport without a model).
    pub group: String,
    /// Figures per place, in order start, middle, end (fewer when stopped or failed).
    pub places: Vec<PlaceResult>,
    /// Median of the places read alone, MB/s: what SLOW compares.
    pub median_mb_per_sec: Option<f64>,
    /// Why the test failed on this device.
    pub error: Option<String>,
}

/// All devices read at once, at one place, against the sum of their solo figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelPlace {
    /// `start`, `middle` or `end`.
    pub place: String,
    /// Devices read at once.
    pub devices: usize,
    /// Sum of the devices' solo MB/s at this place.
    pub solo_sum_mb_per_sec: f64,
    /// Sum of their MB/s when read at once.
    pub parallel_sum_mb_per_sec: f64,
    /// parallel / solo: well below 1 means a shared limit (controller, bus, CPU).
    pub ratio: f64,
}

/// What the read test found: figures per device, groups, the parallel sums and the flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Per device, in the order read.
    pub devices: Vec<DeviceResult>,
    /// Model+firmware groups with their medians.
    pub groups: Vec<Group>,
    /// With `--parallel`: one entry per place.
    pub parallel: Vec<ParallelPlace>,
    /// SLOW, HOT and ERROR findings.
    pub flags: Vec<Flag>,
    /// SLOW threshold used, fraction.
    pub tolerance: f64,
    /// Read time per place, seconds.
    pub runtime_s: f64,
    /// Reads in flight per device.
    pub queue_depth: u32,
    /// Bytes per read.
    pub block_size: u64,
}

/// What [`run_bench`] returns: the run record for the store, the analysis, how it ended.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// Every trial with its exact setup; give it to the results store.
    pub record: RunRecord,
    /// The analysis the table and `--json` show.
    pub report: BenchReport,
    /// Stopped by Ctrl-C/SIGTERM (finished places are kept).
    pub interrupted: bool,
}

/// The workload name of one place on one device: `loop3@start`, `loop3@start:parallel`.
pub fn workload_name(device: &str, place: &str, parallel: bool) -> String {
    if parallel {
        format!("{device}@{place}:parallel")
    } else {
        format!("{device}@{place}")
    }
}

fn read_mbps(t: &TrialSample) -> f64 {
    t.op("read")
        .map_or(0.0, super::super::sample::OpSample::mb_per_sec)
}

struct Job<'a> {
    dev: &'a DiskInfo,
    place: &'a Place,
    parallel: bool,
}

fn run_job(
    job: &Job<'_>,
    opts: &BenchOptions,
    ctl: &Control,
) -> (Workload, Result<TrialSample, String>) {
    let io = bench_workload(opts, job.place.len);
    let name = workload_name(job.dev.name(), &job.place.place, job.parallel);
    let file = IoFile {
        path: job.dev.path().to_path_buf(),
        offset: job.place.offset,
        size: job.place.len,
        direct_ok: true,
        verify: None,
    };
    let r = run_io_trial(&io, &file, ctl, &name, 1).map_err(|e| e.to_string());
    let w = Workload {
        name,
        drop_caches: false,
        kind: WorkloadKind::Io(io),
    };
    (w, r)
}

/// The state of one read test while it runs.
struct Bench<'a> {
    devs: &'a [DiskInfo],
    plans: Vec<Vec<Place>>,
    opts: &'a BenchOptions,
    ctl: &'a Control,
    results: Vec<DeviceResult>,
    records: Vec<WorkloadRecord>,
    /// The reads' notes, each once (one that many reads wrote with their count).
    notes: crate::sample::note::Merged,
}

impl Bench<'_> {
    fn stopped(&self) -> bool {
        self.ctl.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Each device alone, one place at a time. A device whose read fails is marked and the
    /// next device is read.
    fn solo(&mut self, on_step: &mut dyn FnMut(&str)) {
        let total = self.devs.len() * PLACES.len();
        let mut step = 0;
        for i in 0..self.devs.len() {
            let d = &self.devs[i];
            if self.plans[i].is_empty() {
                self.results[i].error = Some("too small to read at three places".into());
                continue;
            }
            for pi in 0..self.plans[i].len() {
                if self.stopped() {
                    return;
                }
                let p = &self.plans[i][pi];
                step += 1;
                on_step(&format!("[{step}/{total}] {} @ {}", d.name(), p.place));
                self.ctl.counters.reset();
                let job = Job {
                    dev: d,
                    place: p,
                    parallel: false,
                };
                let (w, r) = run_job(&job, self.opts, self.ctl);
                let (place, offset, len) = (p.place.clone(), p.offset, p.len);
                match r {
                    Ok(t) => {
                        self.results[i].places.push(PlaceResult {
                            place,
                            offset,
                            len,
                            mb_per_sec: read_mbps(&t),
                            parallel_mb_per_sec: None,
                        });
                        // How the engine waited is its own business, not the disk's.
                        for n in t.notes.iter().filter(|n| !n.kind.as_designed()) {
                            self.notes.add(n, 1);
                        }
                        self.records.push(WorkloadRecord {
                            workload: w,
                            trials: vec![t],
                        });
                    }
                    Err(e) => {
                        self.results[i].error = Some(format!("at {place} (offset {offset}): {e}"));
                        self.records.push(WorkloadRecord {
                            workload: w,
                            trials: Vec::new(),
                        });
                        break;
                    }
                }
            }
        }
    }

    /// All devices that read fine alone, at once, place by place.
    fn parallel(&mut self, on_step: &mut dyn FnMut(&str)) -> Vec<ParallelPlace> {
        let ok: Vec<usize> = (0..self.devs.len())
            .filter(|&i| {
                self.results[i].error.is_none() && self.results[i].places.len() == PLACES.len()
            })
            .collect();
        if ok.len() < 2 {
            self.notes.add(
                &"--parallel needs at least two devices that read fine alone: skipped".into(),
                0,
            );
            return Vec::new();
        }
        let mut out = Vec::new();
        for (pi, place) in PLACES.iter().enumerate() {
            if self.stopped() {
                break;
            }
            on_step(&format!("all {} devices at once @ {place}", ok.len()));
            self.ctl.counters.reset();
            let (devs, plans, opts, ctl) = (self.devs, &self.plans, self.opts, self.ctl);
            let outs: Vec<(usize, Workload, Result<TrialSample, String>)> =
                std::thread::scope(|s| {
                    let handles: Vec<_> = ok
                        .iter()
                        .map(|&i| {
                            let job = Job {
                                dev: &devs[i],
                                place: &plans[i][pi],
                                parallel: true,
                            };
                            s.spawn(move || {
                                let (w, r) = run_job(&job, opts, ctl);
                                (i, w, r)
                            })
                        })
                        .collect();
                    handles.into_iter().filter_map(|h| h.join().ok()).collect()
                });
            let (mut solo_sum, mut par_sum, mut complete) = (0.0, 0.0, true);
            for (i, w, r) in outs {
                let trials = match r {
                    Ok(t) => {
                        let v = read_mbps(&t);
                        self.results[i].places[pi].parallel_mb_per_sec = Some(v);
                        solo_sum += self.results[i].places[pi].mb_per_sec;
                        par_sum += v;
                        vec![t]
                    }
                    Err(e) => {
                        complete = false;
                        let n = format!(
                            "{} failed when read with the others at {place}: {e}",
                            devs[i].name()
                        );
                        self.notes.add(&n.into(), 0);
                        Vec::new()
                    }
                };
                self.records.push(WorkloadRecord {
                    workload: w,
                    trials,
                });
            }
            if complete && solo_sum > 0.0 {
                out.push(ParallelPlace {
                    place: (*place).to_string(),
                    devices: ok.len(),
                    solo_sum_mb_per_sec: solo_sum,
                    parallel_sum_mb_per_sec: par_sum,
                    ratio: par_sum / solo_sum,
                });
            }
        }
        out
    }
}

fn empty_result(d: &DiskInfo) -> DeviceResult {
    DeviceResult {
        device: d.name().to_string(),
        path: d.path().to_path_buf(),
        model: d.device.model.clone(),
        firmware: d.device.firmware.clone(),
        serial: d.device.serial.clone(),
        transport: d.device.transport.clone(),
        size_bytes: d.device.size_bytes,
        temperature_c: d.temperature_c,
        group: outliers::group_name(
            d.device.model.as_deref(),
            d.device.firmware.as_deref(),
            d.device.transport.as_deref(),
        ),
        places: Vec::new(),
        median_mb_per_sec: None,
        error: None,
    }
}

/// Runs the read test on `devs` (already checked with [`check_readable`]). `on_step` hears
/// what is being read, for a progress line. Stops between places when `ctl.stop` is set and
/// keeps what was measured.
pub fn run_bench(
    devs: &[DiskInfo],
    opts: &BenchOptions,
    ctl: &Control,
    on_step: &mut dyn FnMut(&str),
) -> BenchOutcome {
    let started = now_unix_ms();
    let mut b = Bench {
        devs,
        plans: devs
            .iter()
            .map(|d| places(d.device.size_bytes, BLOCK_SIZE, MAX_PLACE_BYTES).unwrap_or_default())
            .collect(),
        opts,
        ctl,
        results: devs.iter().map(empty_result).collect(),
        records: Vec::new(),
        notes: crate::sample::note::Merged::default(),
    };
    b.solo(on_step);
    let parallel = if opts.parallel && !b.stopped() {
        b.parallel(on_step)
    } else {
        Vec::new()
    };
    let interrupted = b.stopped();
    let mut notes = std::mem::take(&mut b.notes).lines();
    let report = analyse(b.results, parallel, devs, opts, &mut notes);
    let record = build_record(
        devs,
        &b.plans,
        opts,
        b.records,
        notes,
        &report,
        started,
        interrupted,
    );
    BenchOutcome {
        record,
        report,
        interrupted,
    }
}

/// Medians, groups, flags and the notes a reader must see.
fn analyse(
    mut results: Vec<DeviceResult>,
    parallel: Vec<ParallelPlace>,
    devs: &[DiskInfo],
    opts: &BenchOptions,
    notes: &mut Vec<String>,
) -> BenchReport {
    for r in &mut results {
        if r.error.is_none() && r.places.len() == PLACES.len() {
            let v: Vec<f64> = r.places.iter().map(|p| p.mb_per_sec).collect();
            r.median_mb_per_sec = Some(crate::stats::median(&v).unwrap_or(0.0));
        }
    }
    let speeds: Vec<Speed> = results
        .iter()
        .filter_map(|r| {
            r.median_mb_per_sec.map(|m| Speed {
                device: r.device.clone(),
                group: r.group.clone(),
                mb_per_sec: m,
            })
        })
        .collect();
    let (groups, mut flags) = outliers::slow_flags(&speeds, opts.tolerance);
    for (r, d) in results.iter().zip(devs) {
        if let Some(e) = &r.error {
            flags.push(Flag::error(&r.device, e));
        }
        flags.extend(outliers::hot_flag(
            d.name(),
            d.temperature_c,
            d.device.rotational,
            opts.max_temp,
        ));
        if !d.mountpoints.is_empty() {
            notes.push(format!(
                "{} is in use (mounted on {}): other IO during the test lowers its figures",
                d.name(),
                d.mountpoints
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let limited: Vec<&ParallelPlace> = parallel.iter().filter(|p| p.ratio < 0.8).collect();
    if let (Some(lo), Some(hi)) = (
        limited.iter().map(|p| p.ratio).min_by(f64::total_cmp),
        limited.iter().map(|p| p.ratio).max_by(f64::total_cmp),
    ) {
        let range = if (hi - lo) * 100.0 < 1.0 {
            format!("{:.0}%", lo * 100.0)
        } else {
            format!("{:.0}-{:.0}%", lo * 100.0, hi * 100.0)
        };
        notes.push(format!(
            "reading {} devices at once gave {range} of the sum of their solo figures (at {}): a shared limit (controller, bus, CPU) caps them together",
            limited[0].devices,
            limited.iter().map(|p| p.place.as_str()).collect::<Vec<_>>().join(", "),
        ));
    }
    for f in &flags {
        notes.push(format!("{} {}: {}", f.kind.word(), f.device, f.message));
    }
    BenchReport {
        devices: results,
        groups,
        parallel,
        flags,
        tolerance: opts.tolerance,
        runtime_s: opts.runtime.as_secs_f64(),
        queue_depth: opts.queue_depth.max(1),
        block_size: BLOCK_SIZE,
    }
}

#[allow(clippy::too_many_arguments)]
fn build_record(
    devs: &[DiskInfo],
    plans: &[Vec<Place>],
    opts: &BenchOptions,
    workloads: Vec<WorkloadRecord>,
    notes: Vec<String>,
    report: &BenchReport,
    started: u64,
    interrupted: bool,
) -> RunRecord {
    let failed = report.devices.iter().find_map(|r| {
        r.error
            .as_ref()
            .map(|e| format!("read test failed on {}: {e}", r.device))
    });
    let bench = serde_json::json!({
            "block_size": BLOCK_SIZE,
            "queue_depth": opts.queue_depth.max(1),
            "runtime_s": opts.runtime.as_secs_f64(),
            "parallel": opts.parallel,
            "tolerance": opts.tolerance,
            "devices": devs.iter().zip(plans).map(|(d, p)| serde_json::json!({
                "name": d.name(),
                "path": d.path(),
                "size_bytes": d.device.size_bytes,
                "temperature_c": d.temperature_c,
                "places": p,
            })).collect::<Vec<_>>(),
    });
    let layout = crate::sample::LayoutRecord {
        disks_bench: Some(bench),
        ..Default::default()
    };
    let path = match devs {
        [one] => one.path().to_path_buf(),
        _ => Path::new("/dev").to_path_buf(),
    };
    RunRecord {
        id: String::new(),
        status: if interrupted {
            RunStatus::Interrupted
        } else if failed.is_some() {
            RunStatus::Failed
        } else {
            RunStatus::Complete
        },
        started_unix_ms: started,
        ended_unix_ms: Some(now_unix_ms()),
        command_line: opts.command_line.clone(),
        label: Some(
            opts.label
                .clone()
                .unwrap_or_else(|| DEFAULT_LABEL.to_string()),
        ),
        note: opts.note.clone(),
        lab_id: None,
        layout: Some(layout),
        suite_name: SUITE_NAME.to_string(),
        system: crate::system::SystemInfo::collect(),
        target: TargetInfo {
            path,
            kind: TargetKind::BlockDevice,
            fs_type: None,
            mount_point: None,
            mount_options: None,
            mount_source: None,
            devices: devs.iter().map(|d| d.device.clone()).collect(),
        },
        workloads,
        notes,
        error: failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disks::FlagKind;

    #[test]
    fn three_places_cover_start_middle_and_end() {
        let mib = 1u64 << 20;
        let p = places(64 * mib, mib, MAX_PLACE_BYTES).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].offset, p[0].len), (0, 21 * mib));
        assert_eq!(p[1].offset, 21 * mib, "centred on 32 MiB, aligned down");
        assert!(p[1].offset < 32 * mib && p[1].offset + p[1].len > 32 * mib);
        assert_eq!(
            p[2].offset + p[2].len,
            64 * mib,
            "end place ends at the end"
        );
        for x in &p {
            assert_eq!(x.offset % mib, 0);
            assert_eq!(x.len % mib, 0);
        }
        // A big disk: places are capped, the end place still ends at the last whole block.
        let size = 4_000_787_030_016u64; // a "4 TB" disk, not a multiple of 1 MiB
        let p = places(size, mib, MAX_PLACE_BYTES).unwrap();
        assert_eq!(p[0].len, MAX_PLACE_BYTES);
        assert_eq!(p[2].offset + p[2].len, size / mib * mib);
        assert!(p[1].offset > p[0].offset + p[0].len && p[1].offset + p[1].len < p[2].offset);
        // Too small for three blocks.
        assert!(places(3 * mib - 1, mib, MAX_PLACE_BYTES).is_none());
        assert!(places(3 * mib, mib, MAX_PLACE_BYTES).is_some());
    }

    #[test]
    fn the_bench_workload_never_writes() {
        // The runner opens the device for writing only when the pattern writes (runner::io
        // worker_main); the bench must never give it such a pattern, a flush, or buffered IO.
        let w = bench_workload(&BenchOptions::default(), 1 << 30);
        assert_eq!(w.pattern, Pattern::Read);
        assert!(!w.pattern.writes());
        assert_eq!(w.fsync_every, 0);
        assert!(!w.fsync_at_end);
        assert!(w.direct);
        assert_eq!(w.block_size, 1 << 20);
        assert_eq!(w.threads, 1);
    }

    fn info(name: &str, temp: Option<f64>) -> DiskInfo {
        DiskInfo {
            device: crate::system::BlockDevice {
                name: name.into(),
                path: Path::new("/dev").join(name),
                size_bytes: 64 << 20,
                transport: Some("loop".into()),
                rotational: Some(true),
                ..Default::default()
            },
            kind: super::super::DeviceKind::Loop,
            partitions: Vec::new(),
            signature: None,
            temperature_c: temp,
            temperature_source: None,
            mountpoints: Vec::new(),
            used_by: Vec::new(),
            membership: Vec::new(),
        }
    }

    fn measured(d: &DiskInfo, v: [f64; 3]) -> DeviceResult {
        let mut r = empty_result(d);
        r.places = PLACES
            .iter()
            .zip(v)
            .map(|(p, mb_per_sec)| PlaceResult {
                place: (*p).to_string(),
                offset: 0,
                len: 1 << 20,
                mb_per_sec,
                parallel_mb_per_sec: None,
            })
            .collect();
        r
    }

    #[test]
    fn analysis_flags_slow_hot_and_failed_devices_and_marks_the_run_failed() {
        let devs = [
            info("loop1", None),
            info("loop2", Some(61.0)),
            info("loop3", None),
            info("loop4", None),
        ];
        let mut failed = empty_result(&devs[3]);
        failed.error = Some("at middle (offset 22020096): Input/output error".into());
        let results = vec![
            measured(&devs[0], [100.0, 90.0, 80.0]),
            measured(&devs[1], [101.0, 95.0, 70.0]),
            measured(&devs[2], [60.0, 50.0, 40.0]),
            failed,
        ];
        let opts = BenchOptions::default();
        let mut notes = Vec::new();
        let r = analyse(results, Vec::new(), &devs, &opts, &mut notes);
        assert_eq!(
            r.devices[0].median_mb_per_sec,
            Some(90.0),
            "median of the places"
        );
        assert_eq!(r.devices[3].median_mb_per_sec, None);
        let kinds: Vec<(&str, FlagKind)> = r
            .flags
            .iter()
            .map(|f| (f.device.as_str(), f.kind))
            .collect();
        assert!(kinds.contains(&("loop3", FlagKind::Slow)), "{kinds:?}");
        assert!(
            kinds.contains(&("loop2", FlagKind::Hot)),
            "61 C on a spinning disk"
        );
        assert!(kinds.contains(&("loop4", FlagKind::Error)));
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("SLOW loop3: reads 44% below")),
            "{notes:?}"
        );
        let rec = build_record(&devs, &[], &opts, Vec::new(), notes, &r, 0, false);
        assert_eq!(rec.status, RunStatus::Failed);
        assert!(rec.error.unwrap().contains("loop4"));
        assert_eq!(rec.label.as_deref(), Some("disks-bench"));
        assert_eq!(rec.target.devices.len(), 4);
    }

    #[test]
    fn workload_names() {
        assert_eq!(workload_name("loop3", "start", false), "loop3@start");
        assert_eq!(workload_name("sdb", "end", true), "sdb@end:parallel");
    }
}
