//! fio's `rate`, `rate_iops` and `rate_process` -> iolab's open loop (`rate`, `arrivals`,
//! `rate_per`; docs/slo.md).
//!
//! fio caps each job (each `numjobs` clone) in each direction: `rate=1m,500k` is 1 MiB/s of
//! reads and 500 KiB/s of writes, `rate=1m` caps both at 1 MiB/s, `rate=,500k` only writes.
//! It schedules each direction's next IO from what it has done and, when behind, issues at
//! once (up to `iodepth`): an open loop, as iolab's. iolab's rate is one figure for the whole
//! mix, so a mixed job converts only when fio's caps keep its `rwmixread` proportion; capping
//! one direction of a mix, or both out of proportion, changes the mix fio runs (it switches
//! to the direction that is behind) and is refused.

use super::jobfile::{JobOption, parse_fio_size};
use crate::units;

/// One job's rate options, kept until its pattern, mix and `numjobs` are known.
#[derive(Debug, Default, Clone)]
pub struct FioRate {
    /// `rate=` (bytes per second per direction).
    bytes: Option<JobOption>,
    /// `rate_iops=` (IOs per second per direction).
    iops: Option<JobOption>,
    /// `rate_process=` (`linear`, fio's default, or `poisson`).
    process: Option<JobOption>,
}

/// The spec keys a job's rate becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenLoopKeys {
    /// `rate`: IOPS (`5000`) or bytes per second (`1MiB`).
    pub rate: String,
    /// `arrivals = "poisson"`, or `None` for fixed spacing (fio's `linear`).
    pub arrivals: Option<String>,
    /// `rate_per = "thread"` when the job has `numjobs` clones, each capped by fio.
    pub rate_per: Option<String>,
    /// What the reader must know about the conversion.
    pub note: String,
}

/// A rate option iolab cannot reproduce, and why (for `refuse_value`).
pub type Refusal = (JobOption, &'static str);

/// The directions a fio pattern does IO in, and the share of reads (percent).
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    /// The job reads.
    pub reads: bool,
    /// The job writes.
    pub writes: bool,
    /// `rwmixread` of a mixed job (100 for reads only, 0 for writes only).
    pub read_pct: u32,
}

impl FioRate {
    /// Keeps a rate option (`rate`, `rate_iops`, `rate_process`); a later one wins, as in fio.
    /// Returns false for any other key.
    pub fn take(&mut self, o: &JobOption) -> bool {
        let slot = match o.key.as_str() {
            "rate" => &mut self.bytes,
            "rate_iops" => &mut self.iops,
            "rate_process" => &mut self.process,
            _ => return false,
        };
        *slot = Some(o.clone());
        true
    }

    /// The open loop these options ask for, `None` when nothing is capped (no rate, zero, or
    /// only a direction the job does not do, which fio ignores too).
    pub fn map(&self, mix: Mix, numjobs: u64) -> Result<Option<OpenLoopKeys>, Refusal> {
        let (o, iops) = match (&self.bytes, &self.iops) {
            (None, None) => return Ok(None),
            (Some(b), Some(_)) => {
                return Err((
                    b.clone(),
                    "fio refuses rate with rate_iops: give one of them",
                ));
            }
            (Some(b), None) => (b, false),
            (None, Some(i)) => (i, true),
        };
        let Some([read, write]) = per_direction(o.value.as_deref().unwrap_or(""), iops) else {
            return Err((
                o.clone(),
                if iops {
                    "give whole IOs per second, for reads and writes: 500 or 500,200"
                } else {
                    "give bytes per second, for reads and writes: 1m or 1m,500k"
                },
            ));
        };
        let cap = match (mix.reads, mix.writes) {
            (true, false) => read,
            (false, true) => write,
            _ if mix.read_pct >= 100 => read,
            _ if mix.read_pct == 0 => write,
            _ => match (read, write) {
                (None, None) => None,
                (Some(r), Some(w))
                    if u128::from(r) * u128::from(100 - mix.read_pct)
                        == u128::from(w) * u128::from(mix.read_pct) =>
                {
                    Some(r.saturating_add(w))
                }
                _ => {
                    return Err((
                        o.clone(),
                        "fio caps reads and writes each, which changes the read/write mix it runs; iolab's rate is the mix's total: give caps in the rwmixread proportion (rate=1m with rwmixread=50), or write the spec's rate by hand",
                    ));
                }
            },
        };
        let Some(cap) = cap else { return Ok(None) };
        let arrivals = match self.process.as_ref() {
            None => None,
            Some(p) => match p.value.as_deref().map(str::trim) {
                Some("linear") => None,
                Some("poisson") => Some("poisson".to_string()),
                _ => return Err((p.clone(), "use linear or poisson")),
            },
        };
        let rate = if iops {
            cap.to_string()
        } else {
            let t = units::format_bytes(cap);
            if units::parse_bytes(&t) == Ok(cap) {
                t
            } else {
                format!("{cap}B")
            }
        };
        let rate_per = (numjobs > 1).then(|| "thread".to_string());
        let note = format!(
            "{}: {}={} runs as an open loop at rate {rate}{}{}: IOs are issued on schedule as in fio; compare fio's lat with iolab's service time (its latency from schedule also counts an IO's wait past its due time), and iolab sheds a backlog past 1 s where fio keeps catching up",
            o.at(),
            o.key,
            o.value.as_deref().unwrap_or(""),
            if rate_per.is_some() {
                " per thread"
            } else {
                ""
            },
            if arrivals.is_some() {
                ", poisson arrivals"
            } else {
                ""
            },
        );
        Ok(Some(OpenLoopKeys {
            rate,
            arrivals,
            rate_per,
            note,
        }))
    }
}

/// fio's per-direction list (`R`, `R,W`, `R,W,T`, `,W`, `R,`): the read and write caps, zero
/// meaning none. One value without a comma applies to every direction, as fio's int lists.
fn per_direction(v: &str, iops: bool) -> Option<[Option<u64>; 2]> {
    let one = |s: &str| -> Option<Option<u64>> {
        let s = s.trim();
        if s.is_empty() {
            return Some(None);
        }
        let n = if iops {
            s.parse::<u64>().ok()?
        } else {
            parse_fio_size(s)?
        };
        Some((n > 0).then_some(n))
    };
    let parts: Vec<&str> = v.split(',').collect();
    match parts.as_slice() {
        [""] => None,
        [all] => {
            let c = one(all)?;
            Some([c, c])
        }
        [r, w] | [r, w, _] => Some([one(r)?, one(w)?]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(key: &str, value: &str) -> JobOption {
        JobOption {
            key: key.into(),
            value: Some(value.into()),
            file: "j.fio".into(),
            line: 4,
        }
    }

    fn rate(opts: &[(&str, &str)], mix: Mix, jobs: u64) -> Result<Option<OpenLoopKeys>, String> {
        let mut r = FioRate::default();
        for (k, v) in opts {
            assert!(r.take(&opt(k, v)));
        }
        r.map(mix, jobs)
            .map_err(|(o, why)| format!("{}: {why}", o.key))
    }

    const READ: Mix = Mix {
        reads: true,
        writes: false,
        read_pct: 100,
    };
    const WRITE: Mix = Mix {
        reads: false,
        writes: true,
        read_pct: 0,
    };
    const fn mixed(read_pct: u32) -> Mix {
        Mix {
            reads: true,
            writes: true,
            read_pct,
        }
    }

    #[test]
    fn per_direction_lists_read_as_fio() {
        let m = 1 << 20;
        assert_eq!(per_direction("1m", false), Some([Some(m), Some(m)]));
        assert_eq!(
            per_direction("1m,500k", false),
            Some([Some(m), Some(500 << 10)])
        );
        assert_eq!(per_direction(",500k", false), Some([None, Some(500 << 10)]));
        assert_eq!(per_direction("1m,", false), Some([Some(m), None]));
        assert_eq!(per_direction("0,1m,2m", false), Some([None, Some(m)]));
        assert_eq!(per_direction("500", true), Some([Some(500), Some(500)]));
        assert_eq!(per_direction("5k", true), None);
        assert_eq!(per_direction("", false), None);
        assert_eq!(per_direction("1m,2m,3m,4m", false), None);
    }

    #[test]
    fn one_direction_jobs_take_their_directions_cap() {
        let k = rate(&[("rate", "1m,500k")], READ, 1).unwrap().unwrap();
        assert_eq!(
            (k.rate.as_str(), k.arrivals, k.rate_per),
            ("1MiB", None, None)
        );
        assert!(
            k.note
                .starts_with("j.fio:4: rate=1m,500k runs as an open loop at rate 1MiB:")
        );
        let k = rate(&[("rate", "1m,500k")], WRITE, 4).unwrap().unwrap();
        assert_eq!(
            (k.rate.as_str(), k.rate_per.as_deref()),
            ("500KiB", Some("thread"))
        );
        assert!(k.note.contains("at rate 500KiB per thread:"), "{}", k.note);
        // fio caps only writes: a read job runs uncapped in both.
        assert_eq!(rate(&[("rate", ",500k")], READ, 1), Ok(None));
        assert_eq!(rate(&[("rate", "0")], READ, 1), Ok(None));
        // Not a whole number of KiB: bytes, never read back as IOPS.
        let k = rate(&[("rate", "1000000")], READ, 1).unwrap().unwrap();
        assert_eq!(k.rate, "1000000B");
        assert_eq!(
            crate::spec::Rate::parse(&k.rate),
            Some(crate::spec::Rate::BytesPerSec(1_000_000))
        );
    }

    #[test]
    fn iops_and_poisson_arrivals() {
        let k = rate(
            &[("rate_iops", "2500"), ("rate_process", "poisson")],
            READ,
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (k.rate.as_str(), k.arrivals.as_deref()),
            ("2500", Some("poisson"))
        );
        assert!(k.note.contains(", poisson arrivals:"), "{}", k.note);
        let k = rate(
            &[("rate_iops", "2500"), ("rate_process", "linear")],
            READ,
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!(k.arrivals, None);
        // rate_process alone changes nothing in fio.
        assert_eq!(rate(&[("rate_process", "poisson")], READ, 1), Ok(None));
        let e = rate(&[("rate_iops", "10"), ("rate_process", "bursty")], READ, 1).unwrap_err();
        assert!(e.starts_with("rate_process: use linear or poisson"), "{e}");
        let e = rate(&[("rate", "1m"), ("rate_iops", "10")], READ, 1).unwrap_err();
        assert!(e.contains("fio refuses rate with rate_iops"), "{e}");
        let e = rate(&[("rate_iops", "fast")], READ, 1).unwrap_err();
        assert!(e.starts_with("rate_iops: give whole IOs per second"), "{e}");
    }

    /// A mix converts only when fio's caps keep its proportion: their sum is iolab's rate.
    #[test]
    fn mixed_jobs_convert_only_in_proportion() {
        let k = rate(&[("rate", "1m")], mixed(50), 1).unwrap().unwrap();
        assert_eq!(k.rate, "2MiB");
        let k = rate(&[("rate_iops", "700,300")], mixed(70), 2)
            .unwrap()
            .unwrap();
        assert_eq!(
            (k.rate.as_str(), k.rate_per.as_deref()),
            ("1000", Some("thread"))
        );
        for (v, pct) in [("1m", 70), (",1m", 50), ("1m,", 50), ("700,400", 70)] {
            let e = rate(&[("rate", v)], mixed(pct), 1).unwrap_err();
            assert!(e.contains("changes the read/write mix"), "{v}: {e}");
        }
        assert_eq!(
            rate(&[("rate", "1m,")], mixed(100), 1)
                .unwrap()
                .unwrap()
                .rate,
            "1MiB"
        );
        assert_eq!(rate(&[("rate", "1m,")], mixed(0), 1), Ok(None));
    }
}
