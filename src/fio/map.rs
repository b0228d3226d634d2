//! fio job options -> iolab workloads. One workload per job section (`numjobs` clones become
//! threads of that workload); options iolab cannot honour are refused by name and line, or
//! skipped with a note under `--lenient`. The table in `docs/fio.md` is this file in prose.

use std::collections::BTreeSet;

use super::FioError;
use super::geometry::{self, RangeSizes};
use super::jobfile::{JobFile, JobOption, parse_fio_size, parse_fio_time_ns};
use super::rate::{FioRate, Mix};
use crate::spec::{RawWorkload, SizeValue, Suite, TimeValue, Workload};

/// Options mapped onto an iolab workload field (aliases included).
pub const MAPPED: &[&str] = &[
    "name",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "iodepth",
    "numjobs",
    "size",
    "io_size",
    "io_limit",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "ioengine",
    "direct",
    "buffered",
    "fsync",
    "fdatasync",
    "end_fsync",
    "filename",
    "directory",
    "nrfiles",
    "nr_files",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "randseed",
    "verify",
    "rate",
    "rate_iops",
    "rate_process",
    "bsrange",
    "blocksize_range",
    "filesize",
    "create_on_open",
];

/// Options accepted because they change nothing iolab measures or does differently.
pub const NO_EFFECT: &[&str] = &[
    "description",     // free text
    "group_reporting", // reporting only; iolab always sums a workload's threads
    "thread",          // iolab's workers are threads anyway
    "norandommap",     // iolab's random offsets never keep a map (uniform, with repeats)
    "randrepeat",      // iolab's offsets are always repeatable from the seed
    "clat_percentiles",
    "lat_percentiles",
    "percentile_list",
];

/// Every option a job file may use without `--lenient`: mapped, without effect, or changing
/// only fio's reporting and timekeeping ([`super::reporting::REPORTING`], accepted with a note).
pub fn known(key: &str) -> bool {
    MAPPED.contains(&key)
        || NO_EFFECT.contains(&key)
        || MAPPED_ACCESS.contains(&key)
        || super::reporting::is_reporting(key)
}

/// A job file turned into iolab terms.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// The workloads, one per job section, in file order.
    pub suite: Suite,
    /// Things the reader must know (engine substituted, jobs that ran in parallel in fio...).
    pub notes: Vec<String>,
    /// `--lenient`: the unsupported options that were skipped, one line each.
    pub skipped: Vec<String>,
    /// Some job asked for `verify`: run with iolab's `--verify`.
    pub verify: bool,
    /// Distinct `filename`/`directory` values: the target when none is given.
    pub targets: Vec<String>,
}

/// Converts a parsed job file. Unsupported options are an error listing every one of them
/// (one line each, `FILE:LINE: option 'X' is not supported by iolab`) unless `lenient`.
pub fn convert(file: &JobFile, suite_name: &str, lenient: bool) -> Result<Conversion, FioError> {
    let mut c = Conversion {
        suite: Suite {
            name: suite_name.to_string(),
            workloads: Vec::new(),
        },
        notes: Vec::new(),
        skipped: Vec::new(),
        verify: false,
        targets: Vec::new(),
    };
    let mut problems: Vec<String> = file
        .unset_env
        .iter()
        .map(|(var, at)| format!("{at}: ${{{var}}} is not set in the environment; export it"))
        .collect();
    let mut names = BTreeSet::new();
    for (i, job) in file.jobs.iter().enumerate() {
        let mut m = JobMapper::default();
        for o in job.effective() {
            m.option(o);
        }
        let mut raw = m.raw_workload(&job.name);
        problems.append(&mut m.unsupported);
        let mut name = raw.name.clone().unwrap_or_else(|| job.name.clone());
        let mut n = 2;
        while !names.insert(name.clone()) {
            name = format!("{}-{n}", raw.name.as_deref().unwrap_or(&job.name));
            n += 1;
        }
        raw.name = Some(name);
        if i > 0 && !m.stonewall {
            c.notes.push(format!(
                "job '{}' ({}:{}) runs at the same time as the job before it in fio (no stonewall); iolab runs workloads one after another",
                job.name, job.file, job.line
            ));
        }
        c.notes.append(&mut m.notes);
        c.verify |= m.verify;
        for t in m.targets {
            if !c.targets.contains(&t) {
                c.targets.push(t);
            }
        }
        match raw.validate() {
            Ok(w) => c.suite.workloads.push(w),
            Err(e) => problems.push(format!(
                "{}:{}: job '{}': {}",
                job.file, job.line, job.name, e
            )),
        }
    }
    // A [global] option is reported once, not once per job it applies to.
    let mut seen = BTreeSet::new();
    problems.retain(|p| seen.insert(p.clone()));
    let mut seen = BTreeSet::new();
    c.notes.retain(|n| seen.insert(n.clone()));
    if !problems.is_empty() {
        let (skip, hard): (Vec<String>, Vec<String>) = problems
            .into_iter()
            .partition(|p| p.contains("is not supported by iolab"));
        if !hard.is_empty() || !lenient {
            let mut all = hard;
            all.extend(skip);
            return Err(FioError::Unsupported { lines: all });
        }
        c.skipped = skip;
    }
    if c.suite.workloads.is_empty() {
        return Err(FioError::Unsupported {
            lines: vec![format!("{suite_name}: no job could be converted")],
        });
    }
    Ok(c)
}

/// Builds the workload a job of fio's JSON output ran, from its printed options. Options
/// iolab does not model are ignored here (the numbers are fio's either way). A rate cap is
/// left out too: an open-loop workload's latency is read as measured from each IO's schedule,
/// and fio's is measured from submission.
pub fn workload_from_options(name: &str, options: &[(String, String)]) -> Option<Workload> {
    let mut m = JobMapper::default();
    for (k, v) in options {
        m.option(&JobOption {
            key: k.to_ascii_lowercase(),
            value: Some(v.clone()),
            file: String::new(),
            line: 0,
        });
    }
    let mut raw = m.raw_workload(name);
    (raw.rate, raw.arrivals, raw.rate_per) = (None, None, None);
    raw.validate().ok()
}

/// The state of one job while its options are read.
#[derive(Default)]
struct JobMapper {
    raw: RawWorkload,
    read_pct: Option<u32>,
    numjobs: u64,
    size: Option<u64>,
    io_size: Option<u64>,
    runtime_ns: Option<u64>,
    time_based: bool,
    engine_set: bool,
    direct_set: bool,
    stonewall: bool,
    verify: bool,
    rate: FioRate,
    /// `bs` in bytes (fio's default 4k), for the holes' arithmetic.
    bs: Option<u64>,
    /// `rw=write:112k`: bytes skipped after each IO.
    skip: i64,
    /// `bsrange`, with its option for a refusal.
    bsrange: Option<(RangeSizes, JobOption)>,
    /// `filesize`: the file's size.
    filesize: Option<u64>,
    /// `create_on_open=1`, for its refusal.
    create_on_open: Option<JobOption>,
    targets: Vec<String>,
    unsupported: Vec<String>,
    notes: Vec<String>,
}

fn truthy(o: &JobOption) -> bool {
    o.value.as_deref().is_none_or(|v| v.trim() != "0")
}

impl JobMapper {
    fn refuse(&mut self, o: &JobOption) {
        self.unsupported.push(format!(
            "{}: option '{}' is not supported by iolab",
            o.at(),
            o.key
        ));
    }

    fn refuse_value(&mut self, o: &JobOption, why: &str) {
        self.unsupported.push(format!(
            "{}: option '{}' value '{}' is not supported by iolab ({why})",
            o.at(),
            o.key,
            o.value.as_deref().unwrap_or("")
        ));
    }

    fn size(&mut self, o: &JobOption) -> Option<u64> {
        let v = parse_fio_size(o.value.as_deref().unwrap_or(""));
        if v.is_none() {
            self.refuse_value(o, "give one size such as 4k or 1g");
        }
        v
    }

    fn number(&mut self, o: &JobOption) -> Option<u64> {
        let v = o
            .value
            .as_deref()
            .and_then(|v| v.trim().parse::<u64>().ok());
        if v.is_none() {
            self.refuse_value(o, "give a whole number");
        }
        v
    }

    fn option(&mut self, o: &JobOption) {
        let v = o.value.clone().unwrap_or_default();
        match o.key.as_str() {
            "name" => self.raw.name = Some(v),
            "rw" | "readwrite" => self.pattern(o, &v),
            "rwmixread" => self.read_pct = self.number(o).map(|n| n.min(100) as u32),
            "rwmixwrite" => self.read_pct = self.number(o).map(|n| 100 - n.min(100) as u32),
            "bs" | "blocksize" | "bsrange" | "blocksize_range" => self.block_size(o, &v),
            "filesize" => {
                if v.contains(['-', ':']) {
                    self.refuse_value(
                        o,
                        "fio picks each file's size at random in a range; give one size",
                    );
                } else {
                    self.filesize = self.size(o);
                }
            }
            "create_on_open" => self.create_on_open = truthy(o).then(|| o.clone()),
            "iodepth" => self.raw.qd = self.number(o).map(|n| n.min(u64::from(u32::MAX)) as u32),
            "numjobs" => {
                if let Some(n) = self.number(o) {
                    self.numjobs = n;
                    self.raw.threads = Some(n.min(u64::from(u32::MAX)) as u32);
                }
            }
            "size" => {
                self.size = if v.ends_with('%') {
                    self.refuse_value(o, "a percentage of the device; give a size");
                    None
                } else {
                    self.size(o)
                }
            }
            "io_size" | "io_limit" => self.io_size = self.size(o),
            "runtime" | "timeout" => {
                self.runtime_ns = parse_fio_time_ns(&v, 1_000_000_000);
                if self.runtime_ns.is_none() {
                    self.refuse_value(o, "give a time such as 30 or 2m");
                }
            }
            "time_based" => self.time_based = truthy(o),
            "ramp_time" => match parse_fio_time_ns(&v, 1_000_000_000) {
                Some(ns) => self.raw.ramp = Some(TimeValue::Secs(ns as f64 / 1e9)),
                None => self.refuse_value(o, "give a time such as 5 or 500ms"),
            },
            "ioengine" => self.engine(o, &v),
            "direct" => {
                self.direct_set = true;
                self.raw.direct = Some(truthy(o));
            }
            "buffered" => {
                self.direct_set = true;
                self.raw.direct = Some(!truthy(o));
            }
            "fsync" | "fdatasync" | "end_fsync" => self.sync(o),
            "filename" | "directory" => {
                if v.contains(':') && !v.starts_with("/dev/") {
                    self.refuse_value(o, "one file or directory per job");
                } else {
                    self.targets.push(v);
                }
            }
            "nrfiles" | "nr_files" => {
                if self.number(o).is_some_and(|n| n != 1) {
                    self.refuse_value(o, "iolab runs one file per workload");
                }
            }
            "stonewall" | "wait_for_previous" | "new_group" => self.stonewall |= truthy(o),
            "randseed" => self.raw.seed = self.number(o),
            "verify" => self.verify = !matches!(v.trim(), "0" | "null" | ""),
            "rate" | "rate_iops" | "rate_process" => {
                self.rate.take(o);
            }
            k if NO_EFFECT.contains(&k) => {}
            k if super::reporting::is_reporting(k) => {
                if let Some(n) = super::reporting::note(k, o.value.as_deref()) {
                    self.notes
                        .push(format!("{}: {k} is not reproduced: {n}", o.at()));
                }
            }
            k if MAPPED_ACCESS.contains(&k) => self.access_option(o, &v),
            _ => self.refuse(o),
        }
    }

    /// Maps `bs`/`blocksize` (one size) and `bsrange`/`blocksize_range` (a range), refusing
    /// the split read,write forms iolab has no equivalent for.
    fn block_size(&mut self, o: &JobOption, v: &str) {
        if matches!(o.key.as_str(), "bs" | "blocksize") {
            if v.contains([',', ':']) {
                self.refuse_value(o, "one block size for reads and writes");
            } else if let Some(b) = self.size(o) {
                self.bs = Some(b);
                self.raw.bs = Some(bytes_value(b));
            }
            return;
        }
        if v.contains(',') {
            return self.refuse_value(o, "one range for reads and writes");
        }
        match geometry::bsrange_sizes(v) {
            Ok(r) => self.bsrange = Some((r, o.clone())),
            Err(e) => self.refuse_value(o, &e),
        }
    }

    /// Maps `fsync`/`fdatasync` (a sync every N writes, with that call) and `end_fsync` (one
    /// at the end).
    fn sync(&mut self, o: &JobOption) {
        if o.key == "end_fsync" {
            if truthy(o) {
                self.raw.fsync_at_end = Some(true);
                self.raw.sync.get_or_insert_with(|| "fsync".into());
            }
            return;
        }
        if let Some(n) = self.number(o) {
            self.raw.fsync_every = (n > 0).then_some(n.min(u64::from(u32::MAX)) as u32);
            if n > 0 {
                self.raw.sync = Some(o.key.clone());
            }
        }
    }

    fn pattern(&mut self, o: &JobOption, v: &str) {
        let (name, suffix) = match v.split_once(':') {
            Some((n, s)) => (n.trim(), Some(s)),
            None => (v.trim(), None),
        };
        let p = match name {
            "read" => "read",
            "write" => "write",
            "randread" => "randread",
            "randwrite" => "randwrite",
            "randrw" => "randrw",
            "rw" | "readwrite" => "rw",
            _ => {
                return self.refuse_value(o, "use read, write, randread, randwrite, rw or randrw");
            }
        };
        self.skip = 0;
        if let Some(suffix) = suffix {
            match p {
                "read" | "write" => match geometry::hole(suffix) {
                    Some(skip) => self.skip = skip,
                    None => {
                        return self.refuse_value(
                            o,
                            "give the bytes to skip after each IO, e.g. write:112k",
                        );
                    }
                },
                "rw" => {
                    return self.refuse_value(
                        o,
                        "fio's holes keep one position per direction; iolab's rw is one stream",
                    );
                }
                _ => {
                    return self.refuse_value(
                        o,
                        "iolab draws a new random offset for every IO (fio's :N keeps N in a row)",
                    );
                }
            }
        }
        self.raw.pattern = Some(p.to_string());
    }

    fn engine(&mut self, o: &JobOption, v: &str) {
        self.engine_set = true;
        let e = match v.trim() {
            "io_uring" => "io_uring",
            "psync" | "sync" | "pvsync" => "psync",
            "null" => "null",
            "libaio" => {
                self.notes.push(format!(
                    "{}: ioengine=libaio runs as io_uring in iolab (both queue IOs asynchronously)",
                    o.at()
                ));
                "io_uring"
            }
            _ => return self.refuse_value(o, "use io_uring, libaio, psync, sync, pvsync or null"),
        };
        self.raw.engine = Some(e.to_string());
    }

    /// The raw workload with fio's defaults where the job said nothing (fio reads
    /// sequentially, through the page cache, with psync, one job, 50/50 mixes).
    fn raw_workload(&mut self, section: &str) -> RawWorkload {
        let mut r = self.raw.clone();
        r.name.get_or_insert_with(|| section.to_string());
        r.pattern.get_or_insert_with(|| "read".into());
        if !self.engine_set {
            r.engine = Some("psync".into());
        }
        if !self.direct_set {
            r.direct = Some(false);
        }
        if let Some((sizes, o)) = self.bsrange.clone() {
            if r.bssplit.is_some() {
                self.refuse_value(
                    &o,
                    "with bssplit, fio caps the split's sizes to the range: give one of them",
                );
            }
            // fio: a range replaces bs, wherever each was set.
            match sizes {
                RangeSizes::One(b) => {
                    self.bs = Some(b);
                    r.bs = Some(bytes_value(b));
                }
                RangeSizes::Split(t) => r.bssplit = Some(t),
            }
        }
        if r.bssplit.is_some() {
            // fio: bssplit overrides bs, wherever each was set.
            r.bs = None;
        }
        if self.skip != 0 {
            r.skip = Some(crate::spec::holes::skip_value(self.skip));
        }
        if matches!(r.pattern.as_deref(), Some("randrw" | "rw")) {
            r.read_pct = Some(self.read_pct.unwrap_or(50));
        }
        let writes = matches!(
            r.pattern.as_deref(),
            Some("write" | "randwrite" | "randrw" | "rw")
        );
        if !writes {
            r.fsync_every = None;
            r.fsync_at_end = None;
            r.sync = None;
        }
        if let Some(o) = self.create_on_open.clone() {
            self.refuse_value(
                &o,
                "fio then neither lays out nor preallocates the file: the job's open creates it empty when missing, so writes allocate as they go and reads find what is there; iolab lays its file out first",
            );
        }
        // fio: filesize is the file's size; size then only the bytes to move.
        r.size = self.filesize.or(self.size).map(bytes_value);
        let jobs = self.numjobs.max(1);
        let mix = Mix {
            reads: !matches!(r.pattern.as_deref(), Some("write" | "randwrite")),
            writes,
            read_pct: match r.pattern.as_deref() {
                Some("randrw") => r.read_pct.unwrap_or(50),
                _ if writes => 0,
                _ => 100,
            },
        };
        match self.rate.map(mix, jobs) {
            Ok(None) => {}
            Ok(Some(k)) => {
                r.rate = Some(k.rate);
                r.arrivals = k.arrivals;
                r.rate_per = k.rate_per;
                self.notes.push(k.note);
            }
            Err((o, why)) => self.refuse_value(&o, why),
        }
        if self.time_based {
            r.time = self.runtime_ns.map(|ns| TimeValue::Secs(ns as f64 / 1e9));
        } else {
            r.time = self.runtime_ns.map(|ns| TimeValue::Secs(ns as f64 / 1e9));
            let bs = self.bs.unwrap_or(4096);
            r.io_size = self
                .io_size
                .or_else(|| geometry::one_pass_bytes(self.size, self.filesize, bs, self.skip))
                .map(|b| bytes_value(b.saturating_mul(jobs)));
        }
        r
    }
}

// ---------------------------------------------------------------------------------------------
// Access options: block-size mixes, access distributions, think time, loops. Kept
// in a block of their own, apart from the reporting options above.

/// The access options mapped onto iolab's workload vocabulary.
pub const MAPPED_ACCESS: &[&str] = &["bssplit", "random_distribution", "thinktime", "loops"];

impl JobMapper {
    /// `bssplit`, `random_distribution`, `thinktime` (microseconds by default), `loops`.
    fn access_option(&mut self, o: &JobOption, v: &str) {
        match o.key.as_str() {
            "bssplit" => {
                // fio's third list (trims) has no iolab op.
                let parts: Vec<&str> = v.split(',').collect();
                if parts.len() > 2 && parts[2..].iter().any(|p| !p.trim().is_empty()) {
                    return self.refuse_value(o, "iolab has no trims: give reads,writes only");
                }
                let text = parts.iter().take(2).copied().collect::<Vec<_>>().join(",");
                match crate::spec::BsSplit::parse(&text) {
                    Ok(b) => {
                        self.raw.bs = None;
                        self.raw.bssplit = Some(b.describe());
                    }
                    Err(e) => self.refuse_value(o, &e),
                }
            }
            "random_distribution" => match crate::spec::Distribution::parse(v) {
                // fio reads a zone's percents as whole numbers (atoi): 5.5 would be 5 there.
                Ok(crate::spec::Distribution::Zoned { zones })
                    if zones
                        .iter()
                        .any(|z| z.access_pct.fract() != 0.0 || z.size_pct.fract() != 0.0) =>
                {
                    self.refuse_value(o, "fio reads whole percents");
                }
                Ok(d) => self.raw.random_distribution = Some(d.describe()),
                Err(e) => self.refuse_value(o, &e),
            },
            "thinktime" => match parse_fio_time_ns(v, 1_000) {
                Some(ns) => self.raw.thinktime = Some(TimeValue::Text(format!("{}us", ns / 1_000))),
                None => self.refuse_value(o, "give a time such as 100 (us) or 2ms"),
            },
            "loops" => self.raw.loops = self.number(o).map(|n| n.min(u64::from(u32::MAX)) as u32),
            _ => self.refuse(o),
        }
    }
}

/// A byte count as a spec size (sizes past i64 saturate; the spec then refuses them).
fn bytes_value(b: u64) -> SizeValue {
    SizeValue::Bytes(i64::try_from(b).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::parse_job_text;
    use crate::spec::{EngineKind, Pattern};
    use std::path::Path;

    fn conv(text: &str, lenient: bool) -> Result<Conversion, FioError> {
        let f = parse_job_text(text, "j.fio", Path::new("."))?;
        convert(&f, "j", lenient)
    }

    #[test]
    fn maps_the_common_options_with_fio_defaults() {
        let c = conv(
            "[global]\nioengine=libaio\ndirect=1\nbs=8k\n[mix]\nrw=randrw\nrwmixread=70\niodepth=32\nnumjobs=2\nsize=64m\nruntime=10\ntime_based\n[seq]\nstonewall\nrw=write\nsize=1m\nend_fsync=1\n",
            false,
        )
        .unwrap();
        let w = c.suite.workloads[0].io().unwrap();
        assert_eq!(w.pattern, Pattern::RandRw);
        assert_eq!((w.read_pct, w.queue_depth, w.threads), (70, 32, 2));
        assert_eq!((w.block_size, w.size), (8192, Some(64 << 20)));
        assert_eq!(w.runtime, Some(std::time::Duration::from_secs(10)));
        assert_eq!(w.total_bytes, None);
        assert_eq!(w.engine, EngineKind::IoUring);
        assert!(w.direct);
        assert!(c.notes.iter().any(|n| n.contains("libaio")));
        let s = c.suite.workloads[1].io().unwrap();
        assert_eq!(s.total_bytes, Some(1 << 20));
        assert!(s.fsync_at_end);
        let d = conv("[a]\n", false).unwrap();
        let a = d.suite.workloads[0].io().unwrap();
        assert_eq!(
            (a.pattern, a.engine, a.direct),
            (Pattern::Read, EngineKind::Psync, false)
        );
    }

    /// Options that change only fio's reports or clocks were refused.
    #[test]
    fn reporting_options_convert_with_a_note_once() {
        let c = conv(
            "[global]\ngtod_reduce=1\nwrite_lat_log=lat\nlog_avg_msec=100\nclocksource=cpu\ndisable_slat=0\n[a]\nrw=randread\n[b]\nstonewall\nrw=read\nwrite_bw_log=bw\n",
            false,
        )
        .unwrap();
        assert_eq!(c.suite.workloads.len(), 2);
        let about = |k: &str| {
            c.notes
                .iter()
                .filter(|n| n.contains(&format!(" {k} is")))
                .count()
        };
        // Global options once, though they apply to both jobs; a switch set to 0 says nothing.
        for k in [
            "gtod_reduce",
            "write_lat_log",
            "log_avg_msec",
            "clocksource",
            "write_bw_log",
        ] {
            assert_eq!(about(k), 1, "{k}: {:?}", c.notes);
        }
        assert_eq!(about("disable_slat"), 0, "{:?}", c.notes);
        assert!(
            c.notes
                .iter()
                .any(|n| n.starts_with("j.fio:3: write_lat_log is not reproduced: fio's log files")),
            "{:?}",
            c.notes
        );
        // What changes the workload is still refused.
        let e = conv(
            "[a]\nrw=randread\nwrite_lat_log=x\noffset_increment=1g\n",
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("option 'offset_increment'"), "{e}");
        assert!(!e.to_string().contains("write_lat_log"), "{e}");
    }

    /// A byte rate that is no whole binary unit prints with its `B`: a bare number is IOPS.
    #[test]
    fn rates_print_and_read_back_as_converted() {
        let c = conv(
            "[a]\nrw=read\nbs=4k\nrate=1000000\n[b]\nstonewall\nrw=randwrite\nnumjobs=3\nrate_iops=250\nrate_process=poisson\n",
            false,
        )
        .unwrap();
        let toml = crate::spec::suite_to_toml(&c.suite);
        assert!(toml.contains("rate = \"1000000B\""), "{toml}");
        let back = crate::spec::parse_spec(&toml, "printed").unwrap();
        let (a, b) = (
            back.workloads[0].io().unwrap(),
            back.workloads[1].io().unwrap(),
        );
        let (oa, ob) = (a.open_loop.unwrap(), b.open_loop.unwrap());
        assert_eq!(oa.rate, crate::spec::Rate::BytesPerSec(1_000_000));
        assert_eq!(ob.rate, crate::spec::Rate::Iops(250.0));
        assert!(ob.per_thread && !oa.per_thread);
        assert_eq!(ob.arrivals, crate::spec::Arrivals::Poisson);
        assert_eq!(ob.total_iops(b.threads, b.block_size), 750.0);
        assert_eq!(
            c.notes.iter().filter(|n| n.contains("open loop")).count(),
            2
        );
    }

    /// What fio's examples use that iolab can say exactly (rand-zones.fio,
    /// tiobench-example.fio, cross-stripe-verify.fio's holes, filesize).
    #[test]
    fn zones_ranges_holes_and_file_sizes_convert_as_fio_runs_them() {
        let c = conv(
            "[zones]\nsize=2g\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\n",
            false,
        )
        .unwrap();
        let w = c.suite.workloads[0].io().unwrap();
        assert_eq!(w.distribution.describe(), "zoned:50/5:30/15:20/80");
        let e = conv(
            "[z]\nrw=randread\nrandom_distribution=zoned:50/5.5:50/94.5\n",
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("fio reads whole percents"), "{e}");

        // tiobench: bsrange=4k-4k is bs=4k; 4k-16k is fio's four equal shares.
        let c = conv("[t]\nrw=write\nbs=8k\nbsrange=4k-4k\nsize=1m\n", false).unwrap();
        assert_eq!(c.suite.workloads[0].io().unwrap().block_size, 4096);
        let c = conv("[t]\nrw=randread\nbsrange=4k-16k\n", false).unwrap();
        let b = c.suite.workloads[0].io().unwrap().bssplit.clone().unwrap();
        assert_eq!(b.describe(), "4KiB/25:8KiB/25:12KiB/25:16KiB/25");
        let e = conv("[t]\nrw=randread\nbsrange=512-4k\n", false).unwrap_err();
        assert!(e.to_string().contains("'bsrange' value '512-4k'"), "{e}");
        let e = conv("[t]\nrw=randread\nbsrange=4k-8k\nbssplit=4k/100\n", false).unwrap_err();
        assert!(e.to_string().contains("caps the split's sizes"), "{e}");

        // Holes: 16k written, 112k skipped; a pass that ends early moves what fio moves (8
        // writes of 64k on 1m with 60k holes, measured with fio 3.33).
        let c = conv("[h]\nrw=write:112k\nbs=16k\nsize=1m\n", false).unwrap();
        let w = c.suite.workloads[0].io().unwrap();
        assert_eq!((w.skip, w.total_bytes), (112 * 1024, Some(1 << 20)));
        let c = conv("[h]\nrw=write:60k\nbs=64k\nsize=1m\n", false).unwrap();
        assert_eq!(
            c.suite.workloads[0].io().unwrap().total_bytes,
            Some(512 << 10)
        );
        let c = conv("[b]\nrw=read:-8k\nbs=4k\nsize=128m\n", false).unwrap();
        assert_eq!(c.suite.workloads[0].io().unwrap().skip, -8192);
        let toml = crate::spec::suite_to_toml(&c.suite);
        assert!(toml.contains("skip = \"-8KiB\""), "{toml}");
        for (job, why) in [
            ("rw=randread:8", "new random offset for every IO"),
            ("rw=rw:4k", "one position per direction"),
            ("rw=write:x", "bytes to skip"),
        ] {
            let e = conv(&format!("[h]\n{job}\n"), false).unwrap_err();
            assert!(e.to_string().contains(why), "{job}: {e}");
        }

        // filesize is the file: size the bytes moved, bounded by it (fio lowers size to it).
        let c = conv("[f]\nrw=randread\nfilesize=1m\nsize=256k\n", false).unwrap();
        let w = c.suite.workloads[0].io().unwrap();
        assert_eq!((w.size, w.total_bytes), (Some(1 << 20), Some(256 << 10)));
        let c = conv("[f]\nrw=read\nfilesize=1m\nsize=4m\n", false).unwrap();
        let w = c.suite.workloads[0].io().unwrap();
        assert_eq!((w.size, w.total_bytes), (Some(1 << 20), Some(1 << 20)));
        let e = conv("[f]\nrw=read\nfilesize=1k-4k\n", false).unwrap_err();
        assert!(e.to_string().contains("at random in a range"), "{e}");

        // create_on_open: 0 is fio's default; 1 changes what the file is when IO starts.
        assert!(conv("[c]\nrw=write\nsize=1m\ncreate_on_open=0\n", false).is_ok());
        let e = conv("[c]\nrw=write\nsize=1m\ncreate_on_open=1\n", false).unwrap_err();
        assert!(
            e.to_string()
                .contains("j.fio:4: option 'create_on_open' value '1' is not supported by iolab (fio then neither lays out"),
            "{e}"
        );
    }

    #[test]
    fn unsupported_options_are_named_with_their_lines() {
        let e = conv("[a]\nrw=read\nzonemode=zbd\n\nstartdelay=1\n", false).unwrap_err();
        let FioError::Unsupported { lines } = &e else {
            panic!("{e}")
        };
        assert_eq!(
            lines,
            &vec![
                "j.fio:3: option 'zonemode' is not supported by iolab".to_string(),
                "j.fio:5: option 'startdelay' is not supported by iolab".to_string()
            ]
        );
        let c = conv("[a]\nrw=read\nzonemode=zbd\n", true).unwrap();
        assert_eq!(c.skipped.len(), 1);
        let e = conv("[a]\nrw=randtrim\n", false).unwrap_err();
        assert!(e.to_string().contains("'rw' value 'randtrim'"), "{e}");
    }
}
