//! Words a reader knows: the one table from a metric key (`write.lat_p50_us`, as
//! [`TrialSample::metrics`](crate::sample::TrialSample::metrics) names it) to a label with its
//! unit ("write p50 latency (µs)"), shared by `iolab compare`, the HTML report and the Markdown
//! report. JSON keeps the raw keys; these labels are for people. Kept beside the metrics it
//! names, so the statistics that label a comparison's rows read it from below.

use super::LatencyKind;

/// The operation part of a metric key, in words: `read_file` -> "read file",
/// `rand_create` -> "random create", `cached_read` -> "cached read".
pub fn op_label(op: &str) -> String {
    match op.strip_prefix("rand_") {
        Some(rest) => format!("random {}", rest.replace('_', " ")),
        None => op.replace('_', " "),
    }
}

/// The figure part of a metric key, in words with its unit; `None` for a figure this table
/// does not know.
fn figure_label(figure: &str) -> Option<&'static str> {
    Some(match figure {
        "iops" => "IOPS",
        "mbps" => "MB/s",
        "ops" => "ops/s",
        "lat_p50_us" => "p50 latency (µs)",
        "lat_p99_us" => "p99 latency (µs)",
        "lat_mean_us" => "mean latency (µs)",
        "sched_p50_us" => "p50 latency from schedule (µs)",
        "sched_p99_us" => "p99 latency from schedule (µs)",
        "sched_p99_9_us" => "p99.9 latency from schedule (µs)",
        "sched_mean_us" => "mean latency from schedule (µs)",
        "svc_p50_us" => "p50 service time (µs)",
        "svc_p99_us" => "p99 service time (µs)",
        "sustained" => "sustained (achieved/asked IOPS)",
        "capacity_iops" => "capacity at the latency target (IOPS)",
        _ => return None,
    })
}

/// The label of a metric key: `read.iops` -> "read IOPS", `write.lat_p50_us` -> "write p50
/// latency (µs)", `create.ops` -> "create ops/s". A key this table does not know is shown
/// as it is.
pub fn metric_label(key: &str) -> String {
    match key.rsplit_once('.') {
        Some((op, figure)) => match figure_label(figure) {
            Some(f) => format!("{} {f}", op_label(op)),
            None => key.to_string(),
        },
        None => key.to_string(),
    }
}

/// What a run's latency figures measure, for the places that explain metrics:
/// "latency (submit-to-complete)" for iolab's own, "completion latency (fio clat)" for runs
/// imported from fio's `clat`.
pub fn latency_meaning(kind: LatencyKind) -> &'static str {
    match kind {
        LatencyKind::Lat => "latency (submit-to-complete)",
        LatencyKind::Clat => "completion latency (fio clat)",
    }
}

/// The sentence that says what latency figures mean across some runs' latency kinds.
pub fn latency_sentence(kinds: &[LatencyKind]) -> String {
    let has = |k| kinds.contains(&k);
    match (has(LatencyKind::Lat), has(LatencyKind::Clat)) {
        (_, false) => format!(
            "Latency figures: {}, from submitting an IO to its completion.",
            latency_meaning(LatencyKind::Lat)
        ),
        (false, true) => format!(
            "Latency figures: {}, from issue to completion, submission time excluded.",
            latency_meaning(LatencyKind::Clat)
        ),
        (true, true) => format!(
            "Latency figures: {} for iolab's runs, {} for runs imported from fio; ratios between the two are not like for like.",
            latency_meaning(LatencyKind::Lat),
            latency_meaning(LatencyKind::Clat)
        ),
    }
}

/// Where a run ran, as a reader needs it: its host, or for a run made in a virtual machine
/// (`iolab lab --vm`: its layout record's `environment`) `vm (tcg) on HOST`, so its speeds are
/// seen at a glance to be emulated (a VM run read `host (none)`, the guest's unset
/// name). A guest name that says nothing (`(none)`, empty) is left out.
pub fn host_label(r: &crate::sample::RunRecord) -> String {
    host_words(&r.system.hostname, r.layout.as_ref())
}

fn host_words(hostname: &str, layout: Option<&crate::sample::LayoutRecord>) -> String {
    let host = hostname.trim();
    let host = (!host.is_empty() && host != "(none)").then_some(host);
    match (layout.and_then(|l| l.environment.as_deref()), host) {
        (Some(env), Some(h)) => format!("{env} on {h}"),
        (Some(env), None) => env.to_string(),
        (None, Some(h)) => h.to_string(),
        (None, None) => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vm_run_says_it_ran_in_a_vm_on_its_host() {
        let vm = crate::sample::LayoutRecord {
            environment: Some("vm (tcg)".into()),
            ..Default::default()
        };
        assert_eq!(host_words("lab1", None), "lab1");
        assert_eq!(host_words("lab1", Some(&vm)), "vm (tcg) on lab1");
        assert_eq!(host_words("(none)", Some(&vm)), "vm (tcg)");
        let plain = crate::sample::LayoutRecord::default();
        assert_eq!(host_words("(none)", Some(&plain)), "-");
    }

    #[test]
    fn every_metric_the_samples_name_has_a_label_with_its_unit() {
        assert_eq!(metric_label("read.iops"), "read IOPS");
        assert_eq!(metric_label("read.mbps"), "read MB/s");
        assert_eq!(metric_label("write.lat_p50_us"), "write p50 latency (µs)");
        assert_eq!(metric_label("sync.lat_p99_us"), "sync p99 latency (µs)");
        assert_eq!(metric_label("sync.lat_mean_us"), "sync mean latency (µs)");
        assert_eq!(metric_label("create.ops"), "create ops/s");
        assert_eq!(metric_label("read_file.mbps"), "read file MB/s");
        assert_eq!(metric_label("rand_delete.ops"), "random delete ops/s");
        assert_eq!(metric_label("cached_read.ops"), "cached read ops/s");
        assert_eq!(
            metric_label("read.sched_p99_9_us"),
            "read p99.9 latency from schedule (µs)"
        );
        assert_eq!(
            metric_label("write.sustained"),
            "write sustained (achieved/asked IOPS)"
        );
        assert_eq!(metric_label("odd.thing"), "odd.thing");
        assert_eq!(metric_label("plain"), "plain");
    }

    #[test]
    fn latency_is_said_to_be_submit_to_complete_or_fio_clat() {
        assert!(latency_sentence(&[LatencyKind::Lat]).contains("submit-to-complete"));
        assert!(latency_sentence(&[]).contains("submit-to-complete"));
        let clat = latency_sentence(&[LatencyKind::Clat]);
        assert!(clat.contains("completion latency (fio clat)"));
        assert!(!clat.contains("submit-to-complete"));
        let both = latency_sentence(&[LatencyKind::Clat, LatencyKind::Lat]);
        assert!(both.contains("not like for like"));
    }
}
