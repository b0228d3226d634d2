//! The model as an iolab workload (`iolab spec --from-trace`): what the spec vocabulary can say
//! of a trace, and, as notes, what it cannot.
//!
//! The workload is an open loop at the trace's mean rate (Poisson arrivals unless the trace
//! arrived like clockwork), with the trace's read share, its IO sizes per op (`bssplit`, up to
//! [`MAX_SIZES`] sizes of at least 1%), its access skew (`random_distribution = "zipf:θ"` when
//! a Zipf law fits), sequential or random as most of its IOs are, its in-flight p99 as the
//! queue depth (the most IOs the schedule may have out at once), its footprint span as the
//! working set and its length as the run time. Flushes become `fsync_every` (one flush per so
//! many writes).

use super::Op;
use super::model::Model;
use crate::spec::{RawWorkload, SizeValue, Suite, TimeValue};

/// A sequential share above this makes a sequential pattern.
pub const SEQUENTIAL_PCT: f64 = 50.0;
/// The most sizes a spec's mix keeps per op.
pub const MAX_SIZES: usize = 8;
/// A fitted Zipf exponent below this is not called skew.
pub const MIN_ZIPF: f64 = 0.3;

/// The spec of a model, and what it leaves out.
#[derive(Debug, Clone)]
pub struct FromTrace {
    /// One workload, validated.
    pub suite: Suite,
    /// What the spec does not carry over (one line each).
    pub notes: Vec<String>,
}

fn pattern(m: &Model) -> &'static str {
    let (r, w) = (m.count(Op::Read), m.count(Op::Write));
    let seq = m.sequential.sequential_pct > SEQUENTIAL_PCT;
    match (r > 0, w > 0, seq) {
        (true, false, true) => "read",
        (true, false, false) => "randread",
        (false, true, true) => "write",
        (false, true, false) => "randwrite",
        (_, _, true) => "rw",
        _ => "randrw",
    }
}

/// The most frequent size of the data IOs (reads and writes together), bytes.
fn main_size(m: &Model) -> u64 {
    let mut by: Vec<(u64, u64)> = Vec::new();
    for s in m.sizes.iter().filter(|s| s.op.is_data()) {
        for c in &s.sizes {
            match by.iter_mut().find(|b| b.0 == c.size) {
                Some(b) => b.1 += c.count,
                None => by.push((c.size, c.count)),
            }
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    by.first().map_or(4096, |b| b.0.max(512))
}

/// Whole percentages summing to 100 from counts (largest remainders).
fn whole_pcts(counts: &[u64]) -> Vec<u32> {
    let total: u64 = counts.iter().sum::<u64>().max(1);
    let exact: Vec<f64> = counts
        .iter()
        .map(|c| 100.0 * *c as f64 / total as f64)
        .collect();
    let mut out: Vec<u32> = exact.iter().map(|e| e.floor() as u32).collect();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|a, b| {
        let (ra, rb) = (exact[*a] - exact[*a].floor(), exact[*b] - exact[*b].floor());
        rb.total_cmp(&ra)
    });
    let short = 100u32.saturating_sub(out.iter().sum());
    for i in order.into_iter().cycle().take(short as usize) {
        out[i] += 1;
    }
    out
}

/// An op's sizes as a bssplit list (`8k/50:128k/50`): the sizes of at least 1% of its IOs,
/// at most [`MAX_SIZES`], the rest counted with the most frequent.
fn split_of(m: &Model, op: Op) -> Option<(String, u64)> {
    let s = m.sizes.iter().find(|s| s.op == op)?;
    let mut kept: Vec<(u64, u64)> = s
        .sizes
        .iter()
        .filter(|c| c.pct >= 1.0 && c.size > 0 && c.size <= u64::from(u32::MAX / 2))
        .take(MAX_SIZES)
        .map(|c| (c.size, c.count))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let total: u64 = s.sizes.iter().map(|c| c.count).sum();
    let rest = total - kept.iter().map(|k| k.1).sum::<u64>();
    kept[0].1 += rest;
    let pcts = whole_pcts(&kept.iter().map(|k| k.1).collect::<Vec<_>>());
    let text = kept
        .iter()
        .zip(pcts)
        .filter(|(_, p)| *p > 0)
        .map(|((size, _), p)| format!("{size}/{p}"))
        .collect::<Vec<_>>()
        .join(":");
    Some((text, s.sizes.len() as u64))
}

/// The spec's `bssplit` when one block size does not describe the trace (several sizes of at
/// least 1%, or reads and writes of different sizes), noting in `notes` the sizes it leaves out.
fn bssplit(m: &Model, notes: &mut Vec<String>) -> Option<String> {
    let (r_split, w_split) = (split_of(m, Op::Read), split_of(m, Op::Write));
    let multi = [&r_split, &w_split]
        .iter()
        .any(|s| s.as_ref().is_some_and(|(t, _)| t.contains(':')));
    let differ = r_split.is_some()
        && w_split.is_some()
        && r_split.as_ref().map(|x| &x.0) != w_split.as_ref().map(|x| &x.0);
    let bssplit = (multi || differ).then(|| match (&r_split, &w_split) {
        (Some(r), Some(w)) if r.0 != w.0 => format!("{},{}", r.0, w.0),
        (Some(x), _) | (None, Some(x)) => x.0.clone(),
        (None, None) => String::new(),
    });
    for (op, split) in [(Op::Read, &r_split), (Op::Write, &w_split)] {
        if let Some((text, all)) = split {
            let kept = text.split(':').count() as u64;
            if *all > kept {
                notes.push(format!(
                    "{} sizes: {all} in the trace, the spec keeps the {kept} of at least 1% (the rest counted as the most frequent)",
                    op.name()
                ));
            }
        }
    }
    bssplit
}

/// The workload a model describes. `name` names it in tables.
pub fn from_model(m: &Model, name: &str) -> Result<FromTrace, crate::spec::SpecError> {
    let mut notes = Vec::new();
    let (reads, writes) = (m.count(Op::Read), m.count(Op::Write));
    if reads + writes == 0 {
        return Err(crate::spec::SpecError::field(
            "trace",
            "the trace holds no read or write: no workload to make of it",
        ));
    }
    let pattern = pattern(m);
    let bs = main_size(m);
    let bssplit = bssplit(m, &mut notes);
    let zipf = m
        .skew
        .as_ref()
        .and_then(|k| k.zipf_theta)
        .filter(|t| *t >= MIN_ZIPF && pattern.starts_with("rand"));
    if m.skew.as_ref().is_some_and(|k| k.zipf_theta.is_none()) && pattern.starts_with("rand") {
        notes.push(
            "skew: too few repeated blocks to fit a Zipf law; the spec's offsets are uniform"
                .into(),
        );
    }
    let qd = m.in_flight.as_ref().map_or(1, |f| f.p99.max(1)).min(4096) as u32;
    let bs_max = bssplit
        .as_deref()
        .and_then(|b| crate::spec::BsSplit::parse(b).ok())
        .map_or(bs, |b| b.max_size());
    let size = m.footprint.end.div_ceil(bs_max).max(1) * bs_max;
    // Tenths of a second: a 5.0003 s capture is a 5 s workload.
    let secs = ((m.duration_s * 10.0).round() / 10.0).max(0.1);
    let iops = (reads + writes) as f64 / m.duration_s.max(1e-9);
    let idc = m.arrivals.idc.iter().find(|(w, _)| *w == 100).map(|x| x.1);
    let arrivals = if idc.is_some_and(|v| v < 0.5) {
        "fixed"
    } else {
        "poisson"
    };
    if let Some(v) = idc.filter(|v| *v > 2.0) {
        notes.push(format!(
            "burstiness: the trace's arrivals are bursty (IDC {v:.1} at 100 ms); Poisson arrivals (IDC 1) are smoother: replay the trace itself for its bursts"
        ));
    }
    if m.sequential.sequential_pct > 5.0 && m.sequential.sequential_pct < 95.0 {
        notes.push(format!(
            "sequentiality: {:.0}% of the IOs continue a stream; the spec is {}",
            m.sequential.sequential_pct,
            if pattern.starts_with("rand") {
                "all random"
            } else {
                "all sequential"
            }
        ));
    }
    let flushes = m.count(Op::Flush);
    let fsync_every = (flushes > 0 && writes > 0).then(|| (writes / flushes).max(1) as u32);
    if flushes > 0 && writes == 0 {
        notes.push(format!("{flushes} flushes without writes are left out"));
    }
    if m.count(Op::Discard) + m.count(Op::Other) > 0 {
        notes.push(format!(
            "{} discards and other ops are left out (the spec has none)",
            m.count(Op::Discard) + m.count(Op::Other)
        ));
    }
    let raw = RawWorkload {
        name: Some(name.to_string()),
        pattern: Some(pattern.to_string()),
        bs: bssplit.is_none().then(|| SizeValue::from_bytes(bs)),
        bssplit,
        random_distribution: zipf.map(|t| format!("zipf:{t:.2}")),
        qd: Some(qd),
        size: Some(SizeValue::from_bytes(size)),
        time: Some(TimeValue::Text(format!("{secs}s"))),
        read_pct: matches!(pattern, "randrw" | "rw").then(|| m.read_pct_of_data().round() as u32),
        fsync_every,
        rate: Some(format!("{:.0}", iops.max(1.0))),
        arrivals: Some(arrivals.to_string()),
        ..Default::default()
    };
    let w = raw.validate()?;
    Ok(FromTrace {
        suite: Suite {
            name: name.to_string(),
            workloads: vec![w],
        },
        notes,
    })
}

/// A trace file's workload model and the spec it gives: the one way from a trace to a workload
/// (`[workloads] model` in a lab spec, `iolab run --replay-model`, `iolab spec --from-trace`).
#[derive(Debug, Clone)]
pub struct TraceSpec {
    /// The trace's model (its summary heads `iolab spec --from-trace`).
    pub model: Model,
    /// The workload it describes, and what it leaves out.
    pub spec: FromTrace,
}

/// Why a trace file gave no workload.
#[derive(Debug, thiserror::Error)]
pub enum TraceSpecError {
    /// The file is no readable trace.
    #[error(transparent)]
    Trace(#[from] super::TraceError),
    /// The trace's model makes no workload (no reads or writes), after the flag or spec field
    /// that named the file.
    #[error("{field}: {error}")]
    Spec {
        /// The flag or spec field that named the trace (`--replay-model db.trace`).
        field: String,
        /// Why the model makes no workload.
        error: crate::spec::SpecError,
    },
}

/// Reads the trace at `path`, models it and makes its workload, named `prefix` followed by the
/// file's stem (`model-db` for `db.trace` under the prefix `model-`); `field` is the flag or
/// spec field that named the file, said first when its model makes no workload.
///
/// # Errors
/// The file is no trace ([`TraceSpecError::Trace`]), or its model holds no IO to make a
/// workload of ([`TraceSpecError::Spec`]).
pub fn from_trace_file(
    path: &std::path::Path,
    prefix: &str,
    field: &str,
) -> Result<TraceSpec, TraceSpecError> {
    let trace = super::read_trace(path)?;
    let model = Model::of(&trace);
    let stem = path
        .file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let spec =
        from_model(&model, &format!("{prefix}{stem}")).map_err(|error| TraceSpecError::Spec {
            field: field.to_string(),
            error,
        })?;
    Ok(TraceSpec { model, spec })
}
