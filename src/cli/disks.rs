//! `iolab disks [DEVICE...]`: the census of block devices; with `--bench` the per-disk read
//! test and the slow-disk finder.
//!
//! Exit codes: 0 ok; 1 when `--check` finds a flag (SLOW, HOT, ERROR) or the read test failed
//! on a device; 2 bad input (a device that does not exist, is not a block device, cannot be
//! opened or is too small; a bad flag value); 130 interrupted.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::{Context, EXIT_FAILED, EXIT_INTERRUPTED, usage};
use crate::disks::bench::{BenchOptions, check_readable, run_bench};
use crate::disks::census::{self, DeviceKind, DiskInfo};
use crate::disks::outliers::{self, Flag};
use crate::report::text::disks as render;
use crate::runner::io::Control;
use crate::system::BlockDevice;

/// List block devices with model, serial, firmware, size, temperature, holders and RAID/LVM/
/// btrfs membership; with `--bench`, read each one at its start, middle and end and flag the
/// one that is slower than its twins.
#[derive(clap::Args, Debug, Default)]
#[command(
    after_help = "Exit status: 0 ok; 1 with --check when a device is flagged (SLOW, HOT, ERROR) or when the read\ntest failed; 2 bad input (no such device, not a block device); 130 interrupted.\n\
Examples:\n  iolab disks                          whole disks\n  iolab disks --all --json             every block device, for scripts\n  iolab disks --counters               every member's error counters (btrfs, md, dm-integrity, ZFS)\n  iolab disks --bench                  read every whole disk (read-only), flag the slow one\n  iolab disks --bench --parallel sdb sdc sdd sde   also all at once: controller limit?\n  iolab disks --bench --check --time 10s            for cron: exit 1 when anything is flagged"
)]
pub struct DisksArgs {
    /// Devices to list or read (`/dev/sdb`, `sdb`, `/dev/disk/by-id/...`). Default: every
    /// whole disk; with `--all` (census only) every block device.
    #[arg(value_name = "DEVICE")]
    pub devices: Vec<PathBuf>,
    /// Also list partitions, loop, md, dm, zram and ram devices (census only: the read test
    /// reads whole disks unless devices are named).
    #[arg(long, conflicts_with = "bench")]
    pub all: bool,
    /// Read test: O_DIRECT 1 MiB sequential reads at the start, middle and end of each device,
    /// one device at a time. Read-only: never writes.
    #[arg(long)]
    pub bench: bool,
    /// Also read all devices at once and compare the sum with the sum of their solo figures
    /// (shows a controller or bus limit).
    #[arg(long, requires = "bench")]
    pub parallel: bool,
    /// Read time per place (default 3s).
    #[arg(long, value_name = "TIME", requires = "bench")]
    pub time: Option<String>,
    /// Reads in flight per device (default 4).
    #[arg(long, value_name = "N", requires = "bench")]
    pub qd: Option<u32>,
    /// Flag a device as SLOW when its median read is more than this below the median of its
    /// model+firmware group (default 15%).
    #[arg(long, value_name = "PCT", requires = "bench")]
    pub tolerance: Option<String>,
    /// Flag a device as HOT above this temperature, °C (default 50 for spinning disks, 70 for
    /// SSD/NVMe).
    #[arg(long, value_name = "CELSIUS")]
    pub max_temp: Option<f64>,
    /// Exit 1 when anything is flagged (for cron and monitoring).
    #[arg(long)]
    pub check: bool,
    /// Show every error counter the storage layers keep per member (btrfs device stats, md
    /// mismatch_cnt and member errors, dm-integrity mismatches, ZFS READ/WRITE/CKSUM), zeros
    /// included; without it only the counters above zero are shown.
    #[arg(long, conflicts_with = "bench")]
    pub counters: bool,
    /// Print one JSON document on stdout (diagnostics go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Do not keep the read test in the results store.
    #[arg(long)]
    pub no_save: bool,
    /// A label for the read-test run (default `disks-bench`).
    #[arg(long, requires = "bench")]
    pub label: Option<String>,
    /// A free-form note kept with the read-test run.
    #[arg(long, requires = "bench")]
    pub note: Option<String>,
}

/// `iolab disks`.
pub fn run(ctx: &Context, a: DisksArgs) -> anyhow::Result<ExitCode> {
    let json = a.json;
    super::json_on_error(json, run_inner(ctx, a))
}

/// The devices named on the command line, each checked to be a block device.
fn named_devices(args: &[PathBuf]) -> anyhow::Result<Vec<BlockDevice>> {
    let mut out: Vec<BlockDevice> = Vec::new();
    for a in args {
        let d = crate::disks::resolve_device(a).map_err(|e| usage(e.to_string()))?;
        if !out.iter().any(|o| o.name == d.name) {
            out.push(d);
        }
    }
    Ok(out)
}

fn bench_options(a: &DisksArgs) -> anyhow::Result<BenchOptions> {
    let mut o = BenchOptions {
        parallel: a.parallel,
        max_temp: a.max_temp,
        label: a.label.clone(),
        note: a.note.clone(),
        command_line: crate::cli::command_line(),
        ..BenchOptions::default()
    };
    if let Some(t) = &a.time {
        o.runtime = crate::units::parse_duration(t).map_err(|e| usage(format!("--time: {e}")))?;
        if o.runtime.is_zero() {
            return Err(usage("--time: must be more than 0, e.g. 3s"));
        }
    }
    if let Some(q) = a.qd {
        if !(1..=1024).contains(&q) {
            return Err(usage("--qd: give 1 to 1024 reads in flight, e.g. 4"));
        }
        o.queue_depth = q;
    }
    if let Some(t) = &a.tolerance {
        o.tolerance =
            outliers::parse_tolerance(t).map_err(|e| usage(format!("--tolerance: {e}")))?;
    }
    Ok(o)
}

fn check_max_temp(a: &DisksArgs) -> anyhow::Result<()> {
    match a.max_temp {
        Some(t) if !(t.is_finite() && t > 0.0 && t < 150.0) => Err(usage(
            "--max-temp: give a temperature in °C between 0 and 150, e.g. 55",
        )),
        _ => Ok(()),
    }
}

fn hot_flags(devs: &[DiskInfo], max: Option<f64>) -> Vec<Flag> {
    devs.iter()
        .filter_map(|d| outliers::hot_flag(d.name(), d.temperature_c, d.device.rotational, max))
        .collect()
}

fn run_inner(ctx: &Context, a: DisksArgs) -> anyhow::Result<ExitCode> {
    check_max_temp(&a)?;
    if a.bench {
        return bench(ctx, a);
    }
    let devs = if a.devices.is_empty() {
        census::list(a.all)
    } else {
        named_devices(&a.devices)?
    };
    let infos = census::describe_all(devs);
    let flags = hot_flags(&infos, a.max_temp);
    let counters: Vec<_> = crate::disks::counters::gather(&infos)
        .into_iter()
        .filter(|c| a.counters || c.any())
        .collect();
    if a.json {
        let doc = serde_json::json!({ "devices": infos, "flags": flags, "counters": counters });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).context("cannot render JSON")?
        );
    } else if infos.is_empty() {
        println!("no block devices found (try --all)");
    } else {
        print!("{}", render::census_table(&infos, &flags));
        print!("{}", render::counter_lines(&counters, a.counters));
    }
    Ok(if a.check && !flags.is_empty() {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn bench(ctx: &Context, a: DisksArgs) -> anyhow::Result<ExitCode> {
    let opts = bench_options(&a)?;
    let named = !a.devices.is_empty();
    let devs: Vec<BlockDevice> = if named {
        named_devices(&a.devices)?
    } else {
        // Every whole disk; loop, zram and ram devices only when named.
        census::list(false)
            .into_iter()
            .filter(|d| census::kind_of(d) == DeviceKind::Disk)
            .collect()
    };
    let infos = census::describe_all(devs);
    let mut ready: Vec<DiskInfo> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for d in infos {
        match check_readable(&d) {
            Ok(()) => ready.push(d),
            Err(e) if named => return Err(usage(e.to_string())),
            Err(e) => skipped.push(format!("skipped {}: {e}", d.name())),
        }
    }
    for s in &skipped {
        eprintln!("iolab: note: {s}");
    }
    if ready.is_empty() {
        return Err(anyhow::anyhow!(
            "no disk to read{}; name the devices to read, e.g. `iolab disks --bench /dev/sdb`",
            if skipped.is_empty() {
                " was found"
            } else {
                " could be opened"
            }
        ));
    }
    crate::signals::install();
    let places = crate::disks::bench::PLACES.len() as u32;
    let rounds = ready.len() as u32 * places + if opts.parallel { places } else { 0 };
    let progress = crate::progress::Progress::new(!a.json, opts.runtime * rounds);
    let ctl = Control {
        stop: crate::signals::stop_flag(),
        counters: progress.counters(),
        gate: Default::default(),
        intervals: None,
    };
    let mut outcome = run_bench(&ready, &opts, &ctl, &mut |m| {
        progress.set_message(m.to_string());
    });
    progress.finish();
    outcome.record.notes.splice(0..0, skipped);
    if !a.no_save {
        let mut store = super::db::open_store(ctx)?;
        outcome.record.id = store
            .save_run(&outcome.record)
            .map_err(super::db::store_err)?;
    }
    let r = &outcome.report;
    if a.json {
        let doc = serde_json::json!({
            "devices": ready,
            "bench": r,
            "flags": r.flags,
            "run": outcome.record,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).context("cannot render JSON")?
        );
    } else {
        print!("{}", render::bench_table(r, &outcome.record.notes));
        if !outcome.record.id.is_empty() {
            println!(
                "saved as run {} (iolab show {})",
                outcome.record.id, outcome.record.id
            );
        }
    }
    let failed = r.devices.iter().any(|d| d.error.is_some());
    Ok(if outcome.interrupted {
        eprintln!("iolab: interrupted: finished places are kept");
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed || (a.check && !r.flags.is_empty()) {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
