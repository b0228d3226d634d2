//! fio options that change only fio's own reporting or timekeeping: which log files it
//! writes, which latencies it skips measuring, which clock it reads, how its report is laid
//! out. The IO a job does is the same with or without them, so a job file using them converts;
//! each one that is in force adds a note saying what iolab does not reproduce.

/// When an option's note applies: most are switches that matter only when on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Whatever the value (a file name, a number, a clock name).
    Always,
    /// When switched on (a bare flag or any value but `0`).
    On,
    /// When switched off (`=0`): `stats=0`, `disk_util=0`.
    Off,
}

const LOGS: &str = "fio's log files are not written; iolab stores per-second series and latency histograms with the run (iolab show, iolab export)";
const SKIPS: &str = "fio would skip measuring latency or bandwidth to save clock reads; iolab always measures them (docs/accuracy.md says what that costs)";
const CLOCK: &str = "fio's choice of clock is not reproduced; iolab times IO with CLOCK_MONOTONIC";
const LAYOUT: &str =
    "a setting of fio's report only; iolab reports per second and per trial in its own tables";

/// Reporting and timekeeping options: name, when it is noted, the note.
pub const REPORTING: &[(&str, When, &str)] = &[
    ("write_bw_log", When::Always, LOGS),
    ("write_lat_log", When::Always, LOGS),
    ("write_iops_log", When::Always, LOGS),
    ("write_hist_log", When::Always, LOGS),
    ("log_avg_msec", When::Always, LOGS),
    ("log_hist_msec", When::Always, LOGS),
    ("log_hist_coarseness", When::Always, LOGS),
    ("log_max_value", When::Always, LOGS),
    ("log_offset", When::Always, LOGS),
    ("log_prio", When::Always, LOGS),
    ("log_entries", When::Always, LOGS),
    ("log_compression", When::Always, LOGS),
    ("log_compression_cpus", When::Always, LOGS),
    ("log_store_compressed", When::Always, LOGS),
    ("log_unix_epoch", When::Always, LOGS),
    ("log_alternate_epoch", When::Always, LOGS),
    ("log_alternate_epoch_clock_id", When::Always, LOGS),
    ("per_job_logs", When::Always, LOGS),
    ("gtod_reduce", When::On, SKIPS),
    ("disable_lat", When::On, SKIPS),
    ("disable_clat", When::On, SKIPS),
    ("disable_slat", When::On, SKIPS),
    ("disable_bw_measurement", When::On, SKIPS),
    ("disable_bw", When::On, SKIPS),
    ("stats", When::Off, SKIPS),
    ("clocksource", When::Always, CLOCK),
    ("gtod_cpu", When::Always, CLOCK),
    (
        "unified_rw_reporting",
        When::On,
        "fio would report reads and writes summed; iolab reports each direction",
    ),
    (
        "slat_percentiles",
        When::On,
        "iolab has no submission-latency figure: its latency spans submission to completion (fio's lat)",
    ),
    ("significant_figures", When::Always, LAYOUT),
    ("bwavgtime", When::Always, LAYOUT),
    ("iopsavgtime", When::Always, LAYOUT),
    ("block_error_percentiles", When::On, LAYOUT),
    ("disk_util", When::On, LAYOUT),
];

/// Whether `key` is a reporting or timekeeping option.
pub fn is_reporting(key: &str) -> bool {
    REPORTING.iter().any(|(k, _, _)| *k == key)
}

/// The note for a reporting option with this value (`None` for a bare flag), or `None` when
/// the value makes it change nothing (`gtod_reduce=0`).
pub fn note(key: &str, value: Option<&str>) -> Option<&'static str> {
    let (_, when, note) = REPORTING.iter().find(|(k, _, _)| *k == key)?;
    let on = value.is_none_or(|v| v.trim() != "0");
    match when {
        When::Always => Some(note),
        When::On => on.then_some(*note),
        When::Off => (!on).then_some(*note),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_follow_the_switch() {
        assert_eq!(note("gtod_reduce", None), Some(SKIPS));
        assert_eq!(note("gtod_reduce", Some("1")), Some(SKIPS));
        assert_eq!(note("gtod_reduce", Some("0")), None);
        assert_eq!(note("stats", Some("1")), None);
        assert_eq!(note("stats", Some("0")), Some(SKIPS));
        assert_eq!(note("write_lat_log", Some("lat")), Some(LOGS));
        assert_eq!(note("clocksource", Some("cpu")), Some(CLOCK));
        assert_eq!(note("rate", Some("1m")), None);
        assert!(is_reporting("log_avg_msec") && !is_reporting("bssplit"));
    }
}
