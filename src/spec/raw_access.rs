//! The keys of a workload that shape its IOs beyond pattern and block size — block-size mixes,
//! access distributions, think time, loops — and trace replays: their validation, apart from
//! `raw.rs`'s so each file stays one concept.

use std::time::Duration;

use super::SpecError;
use super::access::{BsSplit, Distribution};
use super::locate::SizeValue;
use super::raw::{MAX_BLOCK_SIZE, RawWorkload, opt_time};
use super::replay::{OffsetMap, Replay};
use super::workload::Pattern;

impl RawWorkload {
    /// The block-size mix, when given (and then `bs` is not).
    pub(super) fn bssplit(&self) -> Result<Option<BsSplit>, SpecError> {
        let Some(text) = self.bssplit.as_deref() else {
            return Ok(None);
        };
        if self.bs.is_some() {
            return Err(SpecError::field(
                "bssplit",
                "gives the block sizes itself: drop bs",
            ));
        }
        let b = BsSplit::parse(text).map_err(|e| SpecError::field("bssplit", e))?;
        if b.max_size() > MAX_BLOCK_SIZE {
            return Err(SpecError::field("bssplit", "a size must be at most 256MiB"));
        }
        Ok(Some(b))
    }

    /// The access distribution, think time and loops, checked against the pattern and loop.
    pub(super) fn access(
        &self,
        pattern: Pattern,
        open: bool,
    ) -> Result<(Distribution, Option<Duration>, u32), SpecError> {
        let dist = match self.random_distribution.as_deref() {
            None => Distribution::Uniform,
            Some(t) => {
                Distribution::parse(t).map_err(|e| SpecError::field("random_distribution", e))?
            }
        };
        if !dist.is_uniform() && !pattern.is_random() {
            return Err(SpecError::field(
                "random_distribution",
                format!(
                    "spreads random offsets; a {} workload is sequential (use a rand* pattern)",
                    pattern.name()
                ),
            ));
        }
        // Whole microseconds, so a spec written back reads back equal.
        let think = opt_time(&self.thinktime, "thinktime")?
            .map(|t| Duration::from_micros((t.as_secs_f64() * 1e6).round() as u64))
            .filter(|t| !t.is_zero());
        if think.is_some() && open {
            return Err(SpecError::field(
                "thinktime",
                "an open loop issues at its schedule: drop thinktime or the rate",
            ));
        }
        let loops = self.loops.unwrap_or(1);
        if loops == 0 || loops > 1_000_000 {
            return Err(SpecError::field("loops", "must be between 1 and 1000000"));
        }
        // With a time as well, the time bounds the passes (as fio's runtime bounds its loops).
        Ok((dist, think, loops))
    }

    /// The bytes skipped after each sequential IO (`skip = "112k"`, `"-8k"`; 0 when unset):
    /// sequential patterns of one block size only.
    pub(super) fn skip(&self, pattern: Pattern, mix: bool) -> Result<i64, SpecError> {
        let Some(v) = &self.skip else {
            return Ok(0);
        };
        let bad = |m: String| SpecError::field("skip", m);
        let skip = match v {
            SizeValue::Bytes(b) => *b,
            SizeValue::Text(t) => {
                let (neg, t) = match t.trim().strip_prefix('-') {
                    Some(rest) => (true, rest),
                    None => (false, t.trim()),
                };
                let b = crate::units::parse_bytes(t).map_err(|e| bad(e.to_string()))?;
                let b = i64::try_from(b).map_err(|_| bad("too large".into()))?;
                if neg { -b } else { b }
            }
        };
        if skip.unsigned_abs() > MAX_SKIP {
            return Err(bad("must be within 1TiB either way".into()));
        }
        if skip != 0 && pattern.is_random() {
            return Err(bad(format!(
                "leaves holes between sequential IOs; a {} workload is random (use read, write or rw)",
                pattern.name()
            )));
        }
        if skip != 0 && mix {
            return Err(bad("holes need one block size: drop bssplit or skip".into()));
        }
        Ok(skip)
    }

    /// The replay settings, when a trace is named; speed and mapping without one are refused.
    pub(super) fn replay(
        &self,
        runtime: Option<Duration>,
        total_bytes: Option<u64>,
        open: bool,
    ) -> Result<Option<Replay>, SpecError> {
        let Some(trace) = self.replay.as_deref() else {
            for (set, key) in [
                (self.speed.is_some(), "speed"),
                (self.as_fast_as_possible.is_some(), "as_fast_as_possible"),
                (self.replay_map.is_some(), "replay_map"),
            ] {
                if set {
                    return Err(SpecError::field(
                        key,
                        "applies to a replay only: give replay = \"FILE.trace\" too",
                    ));
                }
            }
            return Ok(None);
        };
        if trace.trim().is_empty() {
            return Err(SpecError::field("replay", "name a trace file"));
        }
        if open {
            return Err(SpecError::field(
                "replay",
                "a replay issues at the trace's own times: drop rate and slo",
            ));
        }
        if runtime.is_some() || total_bytes.is_some() {
            return Err(SpecError::field(
                if runtime.is_some() { "time" } else { "io_size" },
                "a replay runs the trace to its end (use loops to repeat it): drop it",
            ));
        }
        let speed = self.speed.unwrap_or(1.0);
        if !(speed.is_finite() && (0.001..=1000.0).contains(&speed)) {
            return Err(SpecError::field(
                "speed",
                "must be between 0.001 and 1000 (2: twice as fast as recorded)",
            ));
        }
        let map = match self.replay_map.as_deref() {
            None => OffsetMap::Exact,
            Some(m) => OffsetMap::parse(m).ok_or_else(|| {
                SpecError::field(
                    "replay_map",
                    format!("unknown mapping '{m}' (use exact, wrap or scale)"),
                )
            })?,
        };
        Ok(Some(Replay {
            trace: trace.to_string(),
            speed,
            as_fast_as_possible: self.as_fast_as_possible.unwrap_or(false),
            map,
        }))
    }
}

/// The largest hole either way: far beyond any working set a run lays out.
const MAX_SKIP: u64 = 1 << 40;

#[cfg(test)]
mod tests {
    use crate::spec::{RawWorkload, SizeValue, TimeValue};

    fn raw(pattern: &str) -> RawWorkload {
        RawWorkload {
            pattern: Some(pattern.into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_new_keys_round_trip_and_set_the_buffers() {
        let mut r = raw("randrw");
        r.bssplit = Some("8k/50:128k/50,4k/100".into());
        r.random_distribution = Some("zipf:1.2".into());
        r.thinktime = Some(TimeValue::Text("250us".into()));
        r.loops = Some(3);
        let w = r.validate().unwrap();
        let io = w.io().unwrap();
        assert_eq!(io.block_size, 131_072, "the buffers hold the largest size");
        assert_eq!(io.think_time, Some(std::time::Duration::from_micros(250)));
        let back = RawWorkload::from_workload(&w).validate().unwrap();
        assert_eq!(w, back);
        let mut r = raw("rw");
        r.read_pct = Some(30);
        let w = r.validate().unwrap();
        assert_eq!(w.io().unwrap().pattern, crate::spec::Pattern::Rw);
        assert_eq!(RawWorkload::from_workload(&w).validate().unwrap(), w);
        for skip in ["112k", "-8k", "1000"] {
            let mut r = raw("write");
            r.skip = Some(SizeValue::Text(skip.into()));
            let w = r.validate().unwrap();
            assert_ne!(w.io().unwrap().skip, 0);
            assert_eq!(
                RawWorkload::from_workload(&w).validate().unwrap(),
                w,
                "{skip}"
            );
        }
        let mut r = raw("randread");
        r.replay = Some("t.trace".into());
        r.speed = Some(2.0);
        r.replay_map = Some("scale".into());
        let w = r.validate().unwrap();
        assert_eq!(RawWorkload::from_workload(&w).validate().unwrap(), w);
    }

    #[test]
    fn combinations_that_make_no_sense_name_their_key() {
        let cases: Vec<(RawWorkload, &str)> = vec![
            (
                RawWorkload {
                    bs: Some(SizeValue::Bytes(4096)),
                    bssplit: Some("8k/100".into()),
                    ..raw("randread")
                },
                "bssplit",
            ),
            (
                RawWorkload {
                    random_distribution: Some("zipf:1.1".into()),
                    ..raw("read")
                },
                "random_distribution",
            ),
            (
                RawWorkload {
                    thinktime: Some(TimeValue::Text("1ms".into())),
                    rate: Some("1000".into()),
                    ..raw("randread")
                },
                "thinktime",
            ),
            (
                RawWorkload {
                    replay: Some("t.trace".into()),
                    time: Some(TimeValue::Text("10s".into())),
                    ..raw("randread")
                },
                "time",
            ),
            (
                RawWorkload {
                    speed: Some(2.0),
                    ..raw("randread")
                },
                "speed",
            ),
            (
                RawWorkload {
                    replay: Some("t.trace".into()),
                    speed: Some(0.0),
                    ..raw("randread")
                },
                "speed",
            ),
            (
                RawWorkload {
                    loops: Some(0),
                    ..raw("randread")
                },
                "loops",
            ),
            (
                RawWorkload {
                    skip: Some(SizeValue::Text("4k".into())),
                    ..raw("randwrite")
                },
                "skip",
            ),
            (
                RawWorkload {
                    skip: Some(SizeValue::Text("4k".into())),
                    bssplit: Some("4k/50:8k/50".into()),
                    ..raw("write")
                },
                "skip",
            ),
        ];
        for (r, key) in cases {
            let e = r.validate().unwrap_err();
            assert_eq!(e.key, key, "{e}");
        }
    }
}
