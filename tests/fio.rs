//! fio meets iolab: real fio output imported (json and json+, clones and groups, client and
//! server on loopback), fio's own example job files converted or refused by name, and a round
//! trip where the same job runs under fio and under iolab and `compare` puts them side by side.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Iolab, disk_tmpdir, require_tool, test_db};

/// Runs iolab on this process's test database: (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    Iolab::new().args(args).run().parts()
}
use iolab::sample::{LatencyHistogram, RunRecord};
use serde_json::Value;

/// Runs fio on a job file with an output format; returns the JSON text.
fn fio(job: &Path, format: &str, extra: &[&str]) -> String {
    let o = Command::new("fio")
        .arg(job)
        .arg(format!("--output-format={format}"))
        .args(extra)
        .output()
        .expect("spawn fio");
    assert!(
        o.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf8")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// Imports a file and loads the run it stored.
fn import(file: &Path, label: &str) -> RunRecord {
    let (code, out, err) = run(&["import", file.to_str().unwrap(), "--label", label]);
    assert_eq!(code, 0, "{out}{err}");
    let id = out
        .lines()
        .find_map(|l| l.split(" as run ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run id in {out}"))
        .to_string();
    let store = iolab::store::Store::open(&test_db()).expect("store");
    store.load_run(&id).expect("load")
}

fn rel_eq(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-12)
}

/// fio's rule: the smallest bin value whose cumulative count reaches p% of all IOs.
fn pct_of_bins(bins: &[(u64, u64)], p: f64) -> u64 {
    let total: u64 = bins.iter().map(|b| b.1).sum();
    let want = (p / 100.0 * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for &(v, c) in bins {
        seen += c;
        if seen >= want {
            return v;
        }
    }
    bins.last().map_or(0, |b| b.0)
}

fn bins(lat: &Value) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = lat["bins"]
        .as_object()
        .expect("json+ bins")
        .iter()
        .map(|(k, c)| (k.parse().unwrap(), c.as_u64().unwrap()))
        .collect();
    v.sort_unstable();
    v
}

const JOBS: &str = "[global]\nioengine=psync\nsize=16m\nruntime=1\ntime_based\nbs=4k\n\
[clones]\nrw=randread\nnumjobs=2\n\
[mix]\nrw=randrw\nrwmixread=70\n";

/// IOPS, bandwidth and IO counts equal fio's; single-job percentiles from the bins agree
/// with fio's table within one bin; two clones merge to the p99 of their summed bins.
#[test]
fn json_plus_import_matches_fio() {
    require_tool!("fio", apt = "fio");
    let dir = disk_tmpdir("iolab-fio-");
    let file = dir.path().join("data");
    let job = write(dir.path(), "jobs.fio", JOBS);
    let text = fio(&job, "json+", &[&format!("--filename={}", file.display())]);
    let json_file = write(dir.path(), "jobs.json", &text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let rec = import(&json_file, "fio-jsonplus");
    assert!(
        rec.notes
            .iter()
            .any(|n| n.starts_with("latency kind: clat")),
        "{:?}",
        rec.notes
    );
    let jobs = doc["jobs"].as_array().unwrap();

    // The mix: one fio job, one workload, read and write ops.
    let mix = jobs.iter().find(|j| j["jobname"] == "mix").unwrap();
    let w = rec
        .workloads
        .iter()
        .find(|w| w.workload.name == "mix")
        .unwrap();
    for dir_name in ["read", "write"] {
        let d = &mix[dir_name];
        let op = w.trials[0].op(dir_name).unwrap();
        assert_eq!(op.count, d["total_ios"].as_u64().unwrap());
        assert!(
            rel_eq(op.ops_per_sec(), d["iops"].as_f64().unwrap(), 1e-9),
            "{dir_name} iops"
        );
        let bw = d["bw_bytes"].as_f64().unwrap();
        assert!((op.mb_per_sec() * 1e6 - bw).abs() <= 1.0, "{dir_name} bw");
        for (p, v) in d["clat_ns"]["percentile"].as_object().unwrap() {
            let p: f64 = p.parse().unwrap();
            let fio_v = v.as_u64().unwrap() as f64;
            let ours = op.latency.percentile(p) as f64;
            // fio's bins are 1/64 of a power of two wide: at most 1/32 of the value.
            assert!(
                (ours - fio_v).abs() <= fio_v / 32.0 + 1.0,
                "p{p}: {ours} vs {fio_v}"
            );
        }
    }

    // The clones: summed like group_reporting, p99 of the summed bins.
    let clones: Vec<&Value> = jobs.iter().filter(|j| j["jobname"] == "clones").collect();
    assert_eq!(clones.len(), 2);
    let w = rec
        .workloads
        .iter()
        .find(|w| w.workload.name == "clones")
        .unwrap();
    assert_eq!(w.workload.io().unwrap().threads, 2);
    let op = w.trials[0].op("read").unwrap();
    let total: u64 = clones
        .iter()
        .map(|j| j["read"]["total_ios"].as_u64().unwrap())
        .sum();
    assert_eq!(op.count, total);
    let mut summed: Vec<(u64, u64)> = Vec::new();
    for j in &clones {
        for (v, c) in bins(&j["read"]["clat_ns"]) {
            match summed.iter_mut().find(|b| b.0 == v) {
                Some(b) => b.1 += c,
                None => summed.push((v, c)),
            }
        }
    }
    summed.sort_unstable();
    let want = pct_of_bins(&summed, 99.0) as f64;
    let got = op.latency.percentile(99.0) as f64;
    assert!(
        rel_eq(got, want, 0.002),
        "merged p99 {got} vs summed bins {want}"
    );
}

/// A case built so the merged p99 is not the mean of the two jobs' p99s.
#[test]
fn merged_p99_is_not_the_mean_of_p99s() {
    let dir = disk_tmpdir("iolab-fio-");
    let job = |bins: &str| {
        format!(
            r#"{{"jobname":"j","groupid":0,"error":0,"job options":{{"rw":"randread","numjobs":"2"}},
            "read":{{"io_bytes":409600,"bw_bytes":409600,"iops":100.0,"runtime":1000,"total_ios":100,
            "clat_ns":{{"min":1000,"max":1000000,"mean":1.0,"N":100,"bins":{{{bins}}}}}}},
            "job_runtime":1000,"usr_cpu":1.0,"sys_cpu":1.0}}"#
        )
    };
    let text = format!(
        r#"{{"fio version":"fio-3.33","timestamp":1700000000,"jobs":[{},{}]}}"#,
        job(r#""1000":100"#),
        job(r#""1000":98,"1000000":2"#)
    );
    let f = write(dir.path(), "built.json", &text);
    let rec = import(&f, "built-p99");
    let h: &LatencyHistogram = &rec.workloads[0].trials[0].op("read").unwrap().latency;
    let merged = h.percentile(99.0) as f64;
    let summed = pct_of_bins(&[(1000, 198), (1_000_000, 2)], 99.0) as f64;
    let mean_of_p99s = f64::midpoint(1000.0, 1_000_000.0);
    assert!(rel_eq(merged, summed, 0.002), "{merged} vs {summed}");
    assert!(
        !rel_eq(merged, mean_of_p99s, 0.5),
        "{merged} is the mean of p99s"
    );
}

/// group_reporting gives one entry; plain json keeps fio's table and says merging is
/// approximate.
#[test]
fn group_reporting_and_plain_json() {
    require_tool!("fio", apt = "fio");
    let dir = disk_tmpdir("iolab-fio-");
    let file = dir.path().join("data");
    let job = write(
        dir.path(),
        "g.fio",
        &format!("{JOBS}[global]\ngroup_reporting\n"),
    );
    let job_text = std::fs::read_to_string(&job)
        .unwrap()
        .replace("[mix]", "[mix]\nstonewall\nnew_group");
    std::fs::write(&job, format!("[global]\ngroup_reporting\n{job_text}")).unwrap();
    let text = fio(&job, "json", &[&format!("--filename={}", file.display())]);
    let f = write(dir.path(), "g.json", &text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let rec = import(&f, "fio-group");
    assert!(
        rec.notes
            .iter()
            .any(|n| n.contains("merges across jobs are approximate"))
    );
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(rec.workloads.len(), jobs.len());
    for j in jobs {
        let name = j["jobname"].as_str().unwrap();
        let w = rec
            .workloads
            .iter()
            .find(|w| w.workload.name == name)
            .unwrap();
        let op = w.trials[0].op("read").unwrap();
        assert_eq!(op.count, j["read"]["total_ios"].as_u64().unwrap());
        assert!(rel_eq(
            op.ops_per_sec(),
            j["read"]["iops"].as_f64().unwrap(),
            1e-9
        ));
        let p99 = j["read"]["clat_ns"]["percentile"]["99.000000"]
            .as_u64()
            .unwrap() as f64;
        assert!(
            rel_eq(op.latency.percentile(99.0) as f64, p99, 0.002),
            "{name} p99 table"
        );
    }
}

/// `fio --server` on loopback and `fio --client`: the imported run names the host.
#[test]
fn client_server_output_names_the_host() {
    require_tool!("fio", apt = "fio");
    let dir = disk_tmpdir("iolab-fio-");
    let port = 20000 + (std::process::id() % 20000);
    let mut server = Command::new("fio")
        .arg(format!("--server=ip:127.0.0.1,{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn fio --server");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let file = dir.path().join("data");
    let job = write(
        dir.path(),
        "cs.fio",
        &format!(
            "[cs]\nfilename={}\nsize=4m\nrw=randread\nruntime=1\ntime_based\n",
            file.display()
        ),
    );
    let out = Command::new("fio")
        .arg(format!("--client=ip:127.0.0.1,{port}"))
        .arg(&job)
        .arg("--output-format=json+")
        .output();
    let _ = server.kill();
    let _ = server.wait();
    let out = out.expect("spawn fio --client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = write(dir.path(), "cs.json", &String::from_utf8_lossy(&out.stdout));
    let rec = import(&f, "fio-client");
    assert_eq!(rec.system.hostname, "127.0.0.1");
    assert!(
        rec.notes
            .iter()
            .any(|n| n.contains("fio job 'cs' on host 127.0.0.1")),
        "{:?}",
        rec.notes
    );
}

/// Bad input: one line naming the file, exit 2, nothing stored.
#[test]
fn bad_input_is_refused_and_nothing_is_stored() {
    let dir = disk_tmpdir("iolab-fio-");
    let good = r#"{"fio version":"fio-3.33","timestamp":1,"jobs":[{"jobname":"a","groupid":0,"error":0,"read":{"total_ios":1,"io_bytes":4096,"runtime":1}}]}"#;
    let cases = [
        ("notfio.json", "{\"hello\": 1}".to_string(), "not fio JSON"),
        (
            "text.txt",
            "a: (g=0): rw=read, bs=(R) 4096B-4096B\nfio-3.33\na: (groupid=0, jobs=1): err= 0\nRun status group 0 (all jobs):\n".into(),
            "normal text output",
        ),
        ("trunc.json", good[..good.len() - 20].to_string(), "truncated JSON"),
        ("err.json", good.replace("\"error\":0", "\"error\":28"), "ended with error 28"),
    ];
    let before = run(&["list"]).1;
    for (name, text, what) in cases {
        let f = write(dir.path(), name, &text);
        let (code, out, err) = run(&["import", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name) && err.contains(what), "{name}: {err}");
    }
    let f = write(dir.path(), "bad.fio", "[global]\nbs=4k\n[job\nrw=read\n");
    let (code, _, err) = run(&["spec", "--from-fio", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.fio:3: syntax error"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(
        run(&["list"]).1,
        before,
        "a refused import stored something"
    );
}

/// Every example job file of fio either converts (and the printed spec parses back) or is
/// refused naming exactly its unsupported options, each on the line it is on.
#[test]
fn fio_example_job_files_convert_or_are_refused_by_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio/examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    assert!(files.len() >= 100, "{} example files", files.len());
    let (mut converted, mut refused) = (Vec::new(), 0);
    for f in &files {
        let (code, out, err) = run(&["spec", "--from-fio", f.to_str().unwrap()]);
        assert!(!err.contains("panicked"), "{}: {err}", f.display());
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // The options the file uses that iolab does not know, as (line, key).
        let mut unknown: Vec<(usize, String)> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim();
            if t.is_empty() || t.starts_with([';', '#', '[']) || t.starts_with("include ") {
                continue;
            }
            let key = t.split('=').next().unwrap().trim().to_ascii_lowercase();
            if !iolab::fio::map::known(&key) {
                unknown.push((i + 1, key));
            }
        }
        if code == 0 {
            assert!(
                unknown.is_empty(),
                "{}: converted despite {unknown:?}",
                f.display()
            );
            iolab::spec::parse_spec(&out, "printed")
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            converted.push(f.clone());
            continue;
        }
        assert_eq!(code, 2, "{}: {err}", f.display());
        refused += 1;
        let mut named: Vec<(usize, String)> = Vec::new();
        for l in err.lines() {
            let l = l.trim_start_matches("iolab: error: ");
            let Some((at, rest)) = l.split_once(": option '") else {
                // Not an option: an unset ${VAR} or a value iolab cannot run (named with its line).
                assert!(l.contains(".fio:"), "{}: {l}", f.display());
                continue;
            };
            let line: usize = at.rsplit(':').next().unwrap().parse().unwrap();
            let key = rest.split('\'').next().unwrap().to_string();
            assert!(
                lines[line - 1]
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with(&key),
                "{}: line {line} is not option {key}",
                f.display()
            );
            named.push((line, key));
        }
        for u in &unknown {
            assert!(
                named.contains(u),
                "{}: {u:?} not named in {err}",
                f.display()
            );
        }
    }
    eprintln!(
        "fio examples: {} converted, {refused} refused",
        converted.len()
    );
    assert_eq!(converted.len() + refused, files.len());
    // 8 before iolab accepted the options that change only fio's reports and clocks; 14
    // before it read an open last zone, bsrange and holes.
    assert!(converted.len() >= 17, "{converted:?}");
    for name in [
        "rand-zones.fio",
        "tiobench-example.fio",
        "backwards-read.fio",
    ] {
        assert!(
            converted.iter().any(|f| f.ends_with(name)),
            "{name}: {converted:?}"
        );
    }
}

/// Fio's examples refused only for reporting or timekeeping options (`gtod_reduce`
/// in null.fio, `write_bw_log` in ssd-steadystate.fio) convert, saying what is not reproduced.
#[test]
fn fio_examples_with_reporting_options_convert_with_a_note() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio/examples");
    for (file, key) in [
        ("null.fio", "gtod_reduce"),
        ("ssd-steadystate.fio", "write_bw_log"),
    ] {
        let f = dir.join(file);
        let (code, out, err) = run(&["spec", "--from-fio", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{file}: {err}");
        let note = out
            .lines()
            .find(|l| {
                l.starts_with("# note: ") && l.contains(&format!(": {key} is not reproduced: "))
            })
            .unwrap_or_else(|| panic!("{file}: no note about {key}: {out}"));
        eprintln!("{note}");
        iolab::spec::parse_spec(&out, "printed").unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

/// fio's rate caps run as iolab's open loop: `rate_iops` per clone of `numjobs`,
/// `rate_process=poisson`; the spec says so, the run schedules the rate fio asked of all
/// clones together, and a cap that would change a mix is refused by name.
#[test]
fn fio_rate_caps_run_as_an_open_loop() {
    let dir = disk_tmpdir("iolab-fio-");
    let job = write(
        dir.path(),
        "rate.fio",
        "[global]\nioengine=null\nbs=4k\nsize=4m\nruntime=1\ntime_based\n[capped]\nrw=randread\nnumjobs=2\nrate_iops=1500\nrate_process=poisson\n",
    );
    let (code, spec, err) = run(&["spec", "--from-fio", job.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "rate = \"1500\"",
        "arrivals = \"poisson\"",
        "rate_per = \"thread\"",
    ] {
        assert!(spec.lines().any(|l| l == line), "{line}: {spec}");
    }
    assert!(
        spec.contains(
            "rate_iops=1500 runs as an open loop at rate 1500 per thread, poisson arrivals"
        ),
        "{spec}"
    );
    let j = Iolab::new()
        .args([
            "run",
            dir.path().to_str().unwrap(),
            "--fio-job",
            job.to_str().unwrap(),
            "--repeat",
            "1",
            "--json",
            "--no-save",
        ])
        .run()
        .success()
        .json();
    let ol = &j["run"]["workloads"][0]["trials"][0]["open_loop"];
    assert_eq!(ol["asked_iops"], 3000.0, "two clones of 1500: {ol}");
    assert_eq!(ol["arrivals"], "poisson", "{ol}");
    // Poisson over 1 s: 3000 +- 4 standard deviations (sqrt(3000) = 55).
    let scheduled = ol["scheduled"].as_u64().unwrap_or(0);
    assert!(
        (2780..=3220).contains(&scheduled),
        "{scheduled} scheduled: {ol}"
    );

    let mixed = write(
        dir.path(),
        "mixed.fio",
        "[m]\nrw=randrw\nrwmixread=70\nrate=1m\n",
    );
    let (code, _, err) = run(&["spec", "--from-fio", mixed.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("mixed.fio:4: option 'rate' value '1m' is not supported by iolab (fio caps reads and writes each"),
        "{err}"
    );
}

/// Holes (fio `rw=write:112k`) land where fio puts them: on a 1 MiB file of 0xAB, 16 KiB of
/// zeros every 128 KiB from 0 (fio 3.33's log: 0, 128k ... 896k, then again), and nothing
/// written in between.
#[test]
fn holes_from_a_fio_job_write_where_fio_writes() {
    let dir = disk_tmpdir("iolab-fio-");
    let job = write(
        dir.path(),
        "holes.fio",
        "[holes]\nrw=write:112k\nbs=16k\nsize=1m\nioengine=psync\n",
    );
    let (code, spec, err) = run(&["spec", "--from-fio", job.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(spec.lines().any(|l| l == "skip = \"112KiB\""), "{spec}");
    let spec = write(
        dir.path(),
        "holes.toml",
        &format!("{spec}data = \"zero\"\n"),
    );
    let data = dir.path().join("data");
    std::fs::write(&data, vec![0xABu8; 1 << 20]).unwrap();
    let (code, out, err) = run(&[
        "run",
        data.to_str().unwrap(),
        "--spec",
        spec.to_str().unwrap(),
        "--repeat",
        "1",
        "--no-save",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let bytes = std::fs::read(&data).unwrap();
    for (i, b) in bytes.iter().enumerate() {
        let written = i % (128 << 10) < 16 << 10;
        assert_eq!(*b == 0, written, "byte {i}: {b:#x}");
    }
}

/// The example files that convert run under `iolab run --fio-job`, small.
#[test]
fn converting_examples_run_under_fio_job() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio/examples");
    let tmp = disk_tmpdir("iolab-fio-");
    let mut ran = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files {
        let fs = f.to_str().unwrap();
        if run(&["spec", "--from-fio", fs]).0 != 0 {
            continue;
        }
        let (code, out, err) = run(&[
            "run",
            tmp.path().to_str().unwrap(),
            "--fio-job",
            fs,
            "--size",
            "4m",
            "--io-size",
            "4m",
            "--time",
            "300ms",
            "--repeat",
            "1",
            "--no-save",
        ]);
        assert_eq!(code, 0, "{}: {out}{err}", f.display());
        ran += 1;
    }
    eprintln!("fio examples run under --fio-job: {ran}");
    assert!(ran > 0);
}

/// The same job under fio (imported) and under iolab (converted spec): `compare` shows both
/// under the job's name with a ratio, and says the latency kinds differ.
#[test]
fn round_trip_fio_and_iolab_compare_side_by_side() {
    require_tool!("fio", apt = "fio");
    let dir = disk_tmpdir("iolab-fio-");
    let data = dir.path().join("data");
    let job = write(
        dir.path(),
        "rt.fio",
        "[global]\nioengine=psync\ndirect=1\nbs=4k\nsize=16m\nruntime=1\ntime_based\n[rtjob]\nrw=randread\n",
    );
    let (code, spec, err) = run(&["spec", "--from-fio", job.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let spec_file = write(dir.path(), "rt.toml", &spec);
    let text = fio(&job, "json+", &[&format!("--filename={}", data.display())]);
    let json_file = write(dir.path(), "rt.json", &text);
    import(&json_file, "rt-fio");
    let (code, out, err) = run(&[
        "run",
        data.to_str().unwrap(),
        "--spec",
        spec_file.to_str().unwrap(),
        "--repeat",
        "1",
        "--label",
        "rt-iolab",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(&["compare", "rt-fio", "rt-iolab"]);
    assert_eq!(code, 0, "{err}");
    eprintln!("{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("rtjob") && l.contains("read IOPS"))
        .expect(&out);
    assert!(row.contains('x'), "no ratio in {row}");
    assert!(out.contains("rt-fio") && out.contains("rt-iolab"));
    assert!(
        out.contains("latency kind (rt-fio: clat, rt-iolab: lat)"),
        "{out}"
    );
    assert!(!out.contains("differs"), "workloads differ: {out}");
}
