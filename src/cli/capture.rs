//! `iolab capture`: record the IOs reaching a block device into a trace file
//! (`crate::capture`), import blktrace or fio iolog files as one (`--import`), show a trace's
//! workload model (`--show`), and remove what killed captures left (`--cleanup`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context as _;

use super::{Context, EXIT_INTERRUPTED, usage};
use crate::capture::{CaptureError, CaptureOptions};
use crate::trace::model::Model;
use crate::trace::{Trace, TraceError};

/// Record every IO that reaches a block device into a trace file; show or import traces.
///
/// Read-only: the device is never opened, the IOs come from the kernel's block tracepoints in
/// a private tracing instance (see docs/capture.md); tracefs is mounted at /sys/kernel/tracing
/// for the capture when it is mounted nowhere, and unmounted after. The trace holds times,
/// ops, offsets, sizes and process names, never data.
#[derive(clap::Args, Debug, Default)]
#[command(
    after_help = "Examples:\n  iolab capture /dev/sdb --time 30s -o db.trace       record 30 s of /dev/sdb\n  iolab capture /srv/mail --time 5m -o mail.trace      the device under a mounted filesystem\n  iolab capture --show mail.trace                      the workload model, as a table\n  iolab spec --from-trace mail.trace                   the model as an iolab spec\n  iolab capture --import sdb.blktrace.0 sdb.blktrace.1 -o sdb.trace\n  iolab capture --import job.iolog -o job.trace        a fio iolog (v2 or v3)\n  iolab run /dev/sdc --destroy /dev/sdc --replay mail.trace"
)]
pub struct CaptureArgs {
    /// The block device to record, or a directory or file on the filesystem whose device to
    /// record.
    #[arg(conflicts_with_all = ["show", "import", "cleanup"])]
    pub target: Option<PathBuf>,
    /// How long to record (e.g. 30s, 5m); without it, until Ctrl-C.
    #[arg(long, value_name = "TIME")]
    pub time: Option<String>,
    /// The trace file to write (default: DEVICE.trace in the current directory). An existing
    /// file is never overwritten.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Kernel trace buffer per CPU, KiB (default: 64 MiB in all, 1-16 MiB per CPU); raise it
    /// when a capture reports lost events.
    #[arg(long, value_name = "KIB")]
    pub buffer_kb: Option<u64>,
    /// Show the workload model of a trace file (mix, sizes, sequentiality, skew, arrivals,
    /// in flight).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["import", "cleanup"])]
    pub show: Option<PathBuf>,
    /// With --show: also write the trace as a fio iolog v3 (for fio's read_iolog), naming this
    /// file or device in it (--iolog-target).
    #[arg(long, value_name = "FILE", requires = "show")]
    pub to_iolog: Option<PathBuf>,
    /// With --to-iolog: the file or device the iolog's IOs go to (default: the traced device).
    #[arg(long, value_name = "PATH", requires = "to_iolog")]
    pub iolog_target: Option<String>,
    /// Import blktrace output (the per-CPU NAME.blktrace.N files of one device) or one fio
    /// iolog (v2 or v3) into a trace file (-o).
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "cleanup")]
    pub import: Vec<PathBuf>,
    /// Remove the tracing instances of killed captures (also done by `iolab run --cleanup`).
    #[arg(long)]
    pub cleanup: bool,
    /// Print one JSON document on stdout (no progress line).
    #[arg(long)]
    pub json: bool,
}

/// A capture error at the command line: bad input exits 2, a failed write 1.
fn capture_err(e: CaptureError) -> anyhow::Error {
    if e.is_usage() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// A trace error at the command line: a bad or missing file exits 2, a failed write 1.
fn trace_err(e: TraceError) -> anyhow::Error {
    if matches!(e, TraceError::Write { .. }) {
        anyhow::Error::new(e)
    } else {
        usage(e.to_string())
    }
}

/// `iolab capture ...`.
pub fn capture(_ctx: &Context, a: CaptureArgs) -> anyhow::Result<ExitCode> {
    let json = a.json;
    super::json_on_error(json, capture_inner(a))
}

fn capture_inner(a: CaptureArgs) -> anyhow::Result<ExitCode> {
    if a.cleanup {
        return cleanup(a.json);
    }
    if let Some(f) = &a.show {
        return show(f, &a);
    }
    if !a.import.is_empty() {
        return import(&a);
    }
    let Some(target) = a.target.clone() else {
        return Err(usage(
            "give a block device or a directory to capture (iolab capture /dev/sdb --time 30s), --show FILE or --import FILE...",
        ));
    };
    record(&target, &a)
}

fn cleanup(json: bool) -> anyhow::Result<ExitCode> {
    let swept = crate::capture::tracefs::sweep();
    if json {
        let doc = serde_json::json!({ "removed": swept.instances, "unmounted": swept.unmounted });
        println!("{doc}");
    } else {
        for p in &swept.instances {
            println!("removed {}", p.display());
        }
        if let Some(m) = &swept.unmounted {
            println!(
                "unmounted {} (tracefs, mounted by a killed capture)",
                m.display()
            );
        }
        if swept.instances.is_empty() && swept.unmounted.is_none() {
            println!("no tracing instance left by killed captures");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses an output that exists (a capture of hours is never overwritten by accident).
fn check_output(out: &Path) -> anyhow::Result<()> {
    if out.exists() {
        return Err(usage(format!(
            "-o {}: the file exists; give another name or remove it",
            out.display()
        )));
    }
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(usage(format!(
            "-o {}: no directory {}",
            out.display(),
            dir.display()
        )));
    }
    Ok(())
}

fn record(target: &Path, a: &CaptureArgs) -> anyhow::Result<ExitCode> {
    let time = a
        .time
        .as_deref()
        .map(crate::units::parse_duration)
        .transpose()
        .map_err(|e| usage(format!("--time: {e}")))?;
    if time.is_some_and(|t| t.is_zero()) {
        return Err(usage("--time: must be more than 0"));
    }
    if a.buffer_kb.is_some_and(|k| !(64..=1 << 22).contains(&k)) {
        return Err(usage("--buffer-kb: give 64 to 4194304 (KiB per CPU)"));
    }
    let traced = crate::capture::resolve(target).map_err(capture_err)?;
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.trace", traced.device.name)));
    check_output(&output)?;
    crate::signals::install();
    let progress = crate::progress::Progress::new(!a.json, time.unwrap_or(Duration::ZERO));
    let counters = progress.counters();
    let said = traced.said.clone();
    if !a.json {
        progress.println(&format!(
            "capturing {said} into {}{}",
            output.display(),
            match time {
                Some(t) => format!(" for {}", crate::units::format_duration(t)),
                None => " until Ctrl-C".into(),
            }
        ));
    }
    let opts = CaptureOptions {
        time,
        output: output.clone(),
        buffer_kb: a.buffer_kb,
        stop: crate::signals::stop_flag(),
        counters: Some(counters.clone()),
    };
    // The IO count on the progress line, four times a second.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                progress.set_message(format!(
                    "capturing {}: {} IOs",
                    traced.device.name,
                    counters.ops.load(Ordering::Relaxed)
                ));
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        let r = crate::capture::capture(&traced, target, &opts, || {});
        done.store(true, Ordering::Relaxed);
        r
    });
    progress.finish();
    let out = result.map_err(capture_err)?;
    let h = &out.header;
    if a.json {
        let doc = serde_json::json!({
            "trace": output,
            "traced": out.said,
            "header": h,
            "orphan_completions": out.orphan_completions,
            "tracefs": out.tracefs,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "captured {} IOs of {} in {} into {}{}",
            h.ios,
            out.said,
            crate::units::format_duration(Duration::from_nanos(h.duration_ns)),
            output.display(),
            if h.interrupted {
                " (stopped early by Ctrl-C)"
            } else {
                ""
            }
        );
        for n in h.notes.iter().filter(|n| !n.starts_with("traced ")) {
            println!("note: {n}");
        }
        if let Some(why) = &out.tracefs.kept_for {
            println!(
                "note: tracefs stays mounted at {}, where iolab mounted it: {why}",
                crate::capture::mount::MOUNT_POINT
            );
        }
        println!("see it with: iolab capture --show {}", output.display());
    }
    Ok(if h.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Why a trace file gave no workload, as the command line reports it: an unreadable trace as
/// [`load_trace`] does, a model without IO as a usage error (its message names the flag or spec
/// field that named the file).
pub fn trace_spec_err(e: crate::trace::to_spec::TraceSpecError) -> anyhow::Error {
    match e {
        crate::trace::to_spec::TraceSpecError::Trace(e) => trace_err(e),
        spec @ crate::trace::to_spec::TraceSpecError::Spec { .. } => usage(spec.to_string()),
    }
}

/// Reads a trace file (one-line errors, exit 2).
pub fn load_trace(path: &Path) -> anyhow::Result<Trace> {
    crate::trace::read_trace(path).map_err(trace_err)
}

fn show(path: &Path, a: &CaptureArgs) -> anyhow::Result<ExitCode> {
    let t = load_trace(path)?;
    let m = Model::of(&t);
    if let Some(iolog) = &a.to_iolog {
        check_output(iolog)?;
        let file = a
            .iolog_target
            .clone()
            .or_else(|| t.header.device.as_ref().map(|d| format!("/dev/{}", d.name)))
            .ok_or_else(|| usage("--iolog-target: the trace names no device; give the file or device the iolog's IOs go to"))?;
        let (text, skipped) = crate::trace::iolog::to_iolog_v3(&t, &file);
        std::fs::write(iolog, text).with_context(|| format!("cannot write {}", iolog.display()))?;
        if skipped > 0 {
            eprintln!("iolab: note: {skipped} IOs of ops fio's iolog cannot express were left out");
        }
    }
    if a.json {
        let doc = serde_json::json!({ "trace": path, "header": t.header, "model": m });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let h = &t.header;
    let dev = h.device.as_ref().map_or_else(
        || h.target.clone(),
        |d| {
            let mut s = format!("{} ({})", d.name, crate::units::format_bytes(d.size_bytes));
            if let Some(m) = &d.model {
                s.push_str(&format!(", {m}"));
            }
            s
        },
    );
    println!(
        "{}: {} trace of {dev}{}{}",
        path.display(),
        h.source,
        h.filesystem
            .as_ref()
            .map_or_else(String::new, |f| format!(", {f}")),
        h.kernel
            .as_ref()
            .map_or_else(String::new, |k| format!(", kernel {k}"))
    );
    for n in &h.notes {
        println!("note: {n}");
    }
    print!("{}", m.table());
    Ok(ExitCode::SUCCESS)
}

/// Reads the files of an import: blktrace (binary, by their magic) or one fio iolog (text).
fn import(a: &CaptureArgs) -> anyhow::Result<ExitCode> {
    let Some(output) = a.output.clone() else {
        return Err(usage("--import: give the trace file to write with -o FILE"));
    };
    check_output(&output)?;
    let mut files = Vec::new();
    for f in &a.import {
        let bytes = std::fs::read(f).map_err(|e| {
            trace_err(TraceError::Read {
                path: f.display().to_string(),
                why: e.to_string(),
            })
        })?;
        files.push((f.display().to_string(), bytes));
    }
    let trace = import_files(files).map_err(trace_err)?;
    let h = crate::trace::write::write_trace(&output, &trace).map_err(trace_err)?;
    if a.json {
        let doc = serde_json::json!({ "trace": output, "header": h });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "imported {} IOs ({}) into {}",
            h.ios,
            h.source,
            output.display()
        );
        for n in &h.notes {
            println!("note: {n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Imports files by their contents: blktrace records (their magic) or one fio iolog.
pub fn import_files(files: Vec<(String, Vec<u8>)>) -> Result<Trace, TraceError> {
    let is_iolog = |b: &[u8]| b.starts_with(b"fio version");
    if files.iter().any(|(_, b)| is_iolog(b)) {
        if files.len() > 1 {
            return Err(TraceError::Import {
                at: files[0].0.clone(),
                why: "a fio iolog is imported alone (one file, one device)".into(),
            });
        }
        let (name, bytes) = &files[0];
        let text = std::str::from_utf8(bytes).map_err(|_| TraceError::Import {
            at: name.clone(),
            why: "not UTF-8 text".into(),
        })?;
        return crate::trace::iolog::parse_iolog(text, name);
    }
    crate::trace::blktrace::import(&files)
}
