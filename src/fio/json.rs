//! fio 3.x `--output-format=json` and `json+` documents: only the fields iolab uses, every
//! other field ignored, so newer fio versions with more fields still read.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::FioError;

/// A whole fio JSON document (local jobs, or `client_stats` from `fio --client`).
#[derive(Debug, Clone, Deserialize)]
pub struct FioOutput {
    /// `fio-3.33`.
    #[serde(rename = "fio version")]
    pub fio_version: String,
    /// When fio finished, seconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: u64,
    /// The same in milliseconds (newer fio).
    #[serde(default)]
    pub timestamp_ms: Option<u64>,
    /// One entry per job, or per group with `group_reporting`.
    #[serde(default)]
    pub jobs: Vec<FioJob>,
    /// The same for client/server output, each entry naming its host.
    #[serde(default)]
    pub client_stats: Vec<FioJob>,
    /// Options given on the command line or in `[global]`, when fio lists them.
    #[serde(rename = "global options", default)]
    pub global_options: BTreeMap<String, serde_json::Value>,
}

impl FioOutput {
    /// The job entries, from `jobs` or `client_stats`, without the "All clients" sum.
    pub fn entries(&self) -> impl Iterator<Item = &FioJob> {
        self.jobs
            .iter()
            .chain(&self.client_stats)
            .filter(|j| j.jobname != "All clients")
    }

    /// Start time in ms since the epoch (fio stamps the end; runtimes are short enough).
    pub fn unix_ms(&self) -> u64 {
        self.timestamp_ms.unwrap_or(self.timestamp * 1000)
    }
}

/// One job (or group) of fio's output.
#[derive(Debug, Clone, Deserialize)]
pub struct FioJob {
    /// The job's name (`[name]` in the job file).
    pub jobname: String,
    /// Its reporting group.
    #[serde(default)]
    pub groupid: u32,
    /// errno the job ended with; 0 when it ran to the end.
    #[serde(default)]
    pub error: i64,
    /// The job's own options as fio printed them.
    #[serde(rename = "job options", default)]
    pub options: BTreeMap<String, serde_json::Value>,
    /// Reads.
    #[serde(default)]
    pub read: Option<FioDir>,
    /// Writes.
    #[serde(default)]
    pub write: Option<FioDir>,
    /// Trims.
    #[serde(default)]
    pub trim: Option<FioDir>,
    /// fsync/fdatasync calls.
    #[serde(default)]
    pub sync: Option<FioDir>,
    /// How long the job ran, ms.
    #[serde(default)]
    pub job_runtime: u64,
    /// User CPU, percent of `job_runtime`.
    #[serde(default)]
    pub usr_cpu: f64,
    /// System CPU, percent of `job_runtime`.
    #[serde(default)]
    pub sys_cpu: f64,
    /// The host that ran it (client/server output only).
    #[serde(default)]
    pub hostname: Option<String>,
}

impl FioJob {
    /// The directions with their names, in fio's order.
    pub fn dirs(&self) -> [(&'static str, Option<&FioDir>); 4] {
        [
            ("read", self.read.as_ref()),
            ("write", self.write.as_ref()),
            ("trim", self.trim.as_ref()),
            ("sync", self.sync.as_ref()),
        ]
    }

    /// An option fio printed for this job, as text.
    pub fn option(&self, key: &str) -> Option<String> {
        self.options.get(key).map(value_text)
    }
}

/// A JSON option value as fio's text (`"4k"`, or a number printed plainly).
pub fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One direction of one job.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FioDir {
    /// Bytes moved.
    #[serde(default)]
    pub io_bytes: u64,
    /// Bytes per second, as fio computed it.
    #[serde(default)]
    pub bw_bytes: u64,
    /// IOs per second, as fio computed it.
    #[serde(default)]
    pub iops: f64,
    /// Time the direction ran, ms.
    #[serde(default)]
    pub runtime: u64,
    /// IOs completed.
    #[serde(default)]
    pub total_ios: u64,
    /// Completion latency (issue to complete, submission excluded).
    #[serde(default)]
    pub clat_ns: Option<FioLat>,
    /// Total latency (submit to complete): what iolab measures.
    #[serde(default)]
    pub lat_ns: Option<FioLat>,
}

/// A latency block: summary, optional percentile table and optional json+ bins.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FioLat {
    /// Fastest, ns.
    #[serde(default)]
    pub min: u64,
    /// Slowest, ns.
    #[serde(default)]
    pub max: u64,
    /// Mean, ns.
    #[serde(default)]
    pub mean: f64,
    /// Samples.
    #[serde(rename = "N", default)]
    pub n: u64,
    /// fio's percentile table: `"99.000000"` -> ns.
    #[serde(default)]
    pub percentile: Option<BTreeMap<String, u64>>,
    /// json+ only: bin value (ns) -> count, every IO counted once.
    #[serde(default)]
    pub bins: Option<BTreeMap<String, u64>>,
}

impl FioLat {
    /// The percentile table as (percent, ns), ascending.
    pub fn table(&self) -> Vec<(f64, u64)> {
        let mut v: Vec<(f64, u64)> = self
            .percentile
            .iter()
            .flatten()
            .filter_map(|(k, v)| k.parse::<f64>().ok().map(|p| (p, *v)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    }

    /// The json+ bins as (ns, count), ascending, when present.
    pub fn bin_list(&self) -> Option<Vec<(u64, u64)>> {
        let b = self.bins.as_ref()?;
        let mut v: Vec<(u64, u64)> = b
            .iter()
            .filter_map(|(k, c)| k.parse::<u64>().ok().map(|ns| (ns, *c)))
            .collect();
        v.sort_unstable();
        Some(v)
    }
}

/// Parses fio's JSON output; `file` names it in errors.
///
/// Lines fio prints before the document (warnings) are skipped. Text output, truncated
/// documents, documents without jobs and jobs that ended with an error are refused.
pub fn parse_output(text: &str, file: &str) -> Result<FioOutput, FioError> {
    let bad = |why: String| FioError::BadOutput {
        file: file.to_string(),
        why,
    };
    let start = text
        .match_indices('{')
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n');
    let Some(start) = start else {
        return Err(bad(
            if text.contains("Run status group") || text.contains(": (groupid=") {
                "this is fio's normal text output; rerun fio with --output-format=json+ (or json)"
                    .into()
            } else {
                "not fio JSON output (no JSON document found); give a file written by fio --output-format=json+".into()
            },
        ));
    };
    let body = &text[start..];
    let out: FioOutput = serde_json::from_str(body).map_err(|e| {
        if e.is_eof() {
            bad(format!(
                "truncated JSON: the document ends early (line {}); was fio interrupted?",
                e.line()
            ))
        } else if e.is_data() && e.to_string().contains("fio version") {
            bad("not fio JSON output: no \"fio version\" field".into())
        } else {
            bad(format!("not valid fio JSON: {e}"))
        }
    })?;
    if out.entries().next().is_none() {
        return Err(bad(
            "the document has no jobs (neither `jobs` nor `client_stats`)".into(),
        ));
    }
    if let Some(j) = out.entries().find(|j| j.error != 0) {
        return Err(bad(format!(
            "job '{}' ended with error {} ({}); its figures are not a measurement, so nothing was imported",
            j.jobname,
            j.error,
            std::io::Error::from_raw_os_error(j.error as i32)
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"{"fio version":"fio-3.33","timestamp":1700000000,"jobs":[{"jobname":"a","groupid":0,"error":0,
      "job options":{"rw":"randread","bs":"4k","numjobs":2},
      "read":{"io_bytes":4096,"bw_bytes":4096,"iops":1.0,"runtime":1000,"total_ios":1,"extra":1,
        "clat_ns":{"min":5,"max":5,"mean":5.0,"N":1,"percentile":{"99.000000":5},"bins":{"5":1}}},
      "job_runtime":1000,"usr_cpu":1.5,"sys_cpu":2.5,"unknown":[1,2]}]}"#;

    #[test]
    fn reads_the_fields_and_ignores_the_rest() {
        let o = parse_output(&format!("fio: warning\n{MINI}"), "m.json").unwrap();
        let j = o.entries().next().unwrap();
        assert_eq!(j.option("numjobs").as_deref(), Some("2"));
        let r = j.read.as_ref().unwrap();
        assert_eq!(r.total_ios, 1);
        assert_eq!(r.clat_ns.as_ref().unwrap().bin_list(), Some(vec![(5, 1)]));
        assert_eq!(r.clat_ns.as_ref().unwrap().table(), vec![(99.0, 5)]);
        assert_eq!(o.unix_ms(), 1_700_000_000_000);
    }

    #[test]
    fn bad_documents_are_refused_with_the_file_named() {
        let e = parse_output(&MINI[..MINI.len() / 2], "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.json: truncated JSON"), "{e}");
        let e = parse_output(
            "a: (groupid=0, jobs=1): err= 0\nRun status group 0",
            "x.txt",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("normal text output"), "{e}");
        let e = parse_output("{\"a\":1}", "y.json").unwrap_err().to_string();
        assert!(e.contains("not fio JSON"), "{e}");
        let e = parse_output(&MINI.replace("\"error\":0", "\"error\":5"), "z.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("ended with error 5"), "{e}");
    }
}
