//! Cached reads (`hdparm -T`): the same block read again and again from the page cache.
//! What it measures is the memory and CPU path, the ceiling no disk layout can pass.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use crate::sample::{IoAccounting, OpSample, SeriesPoint, TrialSample};
use crate::spec::CachedReadWorkload;

use super::io::Control;

/// Runs one trial: reads `block_size` bytes at offset 0 of `path` (buffered) until the time is up.
pub fn run_cached_trial(
    w: &CachedReadWorkload,
    path: &Path,
    ctl: &Control,
    name: &str,
    trial: u32,
) -> std::io::Result<TrialSample> {
    let f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; w.block_size as usize];
    // Warm the cache with one read that is not counted.
    let first = f.read_at(&mut buf, 0)?;
    if first < buf.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "{} holds only {first} bytes; cached reads need {}",
                path.display(),
                w.block_size
            ),
        ));
    }
    let mut op = OpSample::new("cached_read");
    let mut series: Vec<SeriesPoint> = Vec::new();
    let started_unix_ms = crate::sample::now_unix_ms();
    let ru0 = crate::sys::rusage_self();
    let t0 = Instant::now();
    let limit = w.runtime.as_nanos() as u64;
    let mut last = 0u64;
    loop {
        let n = f.read_at(&mut buf, 0)?;
        let now = t0.elapsed().as_nanos() as u64;
        op.count += 1;
        op.bytes += n as u64;
        op.latency.record(now - last);
        let sec = (now / 1_000_000_000) as usize;
        if series.len() <= sec {
            series.resize(
                sec + 1,
                SeriesPoint {
                    t: sec as u32,
                    ..Default::default()
                },
            );
        }
        series[sec].ops += 1;
        series[sec].bytes += n as u64;
        last = now;
        if now >= limit || ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
    }
    for (i, p) in series.iter_mut().enumerate() {
        p.t = i as u32;
    }
    let ru1 = crate::sys::rusage_self();
    op.elapsed_ns = last.max(1);
    ctl.counters.add(op.bytes, op.count);
    Ok(TrialSample {
        workload: name.to_string(),
        trial,
        started_unix_ms,
        elapsed_ns: last.max(1),
        accounting: IoAccounting {
            submitted: op.count,
            completed: op.count,
            ..Default::default()
        },
        ops: vec![op],
        series,
        cpu_user_ns: ru1.0.saturating_sub(ru0.0),
        cpu_sys_ns: ru1.1.saturating_sub(ru0.1),
        notes: vec![crate::sample::Note::caveat(format!(
            "cached reads of the same {} block: memory speed, not disk speed",
            crate::units::format_bytes(w.block_size)
        ))],
        verify: None,
        open_loop: None,
    })
}
