//! fio's formats at the command line: `iolab import FILE...` (fio JSON results into the
//! store), `iolab spec --from-fio FILE.fio` (a job file as an iolab spec), and the helpers
//! behind `iolab run --fio-job FILE.fio`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Context, usage};
use crate::fio::{self, Conversion, FioError, ImportMeta};
use crate::sample::RunRecord;
use crate::spec::Suite;
use crate::store::StoreError;

/// Import fio results (`--output-format=json` or `json+`) as stored runs.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "One run per file, one workload per fio job (or group with group_reporting), one op per direction.\n\
json+ bins give exact latency percentiles; plain json keeps fio's percentile table.\n\
Examples:\n  fio job.fio --output-format=json+ --output=res.json && iolab import res.json --label nvme-fio"
)]
pub struct ImportArgs {
    /// fio JSON output files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A label for the imported run(s).
    #[arg(long)]
    pub label: Option<String>,
    /// A free-form note kept with the run(s).
    #[arg(long)]
    pub note: Option<String>,
}

/// Print the iolab spec equivalent to a fio job file, or to a trace's workload model.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("from").required(true).args(["from_fio", "from_trace"])))]
pub struct SpecArgs {
    /// The fio job file to convert.
    #[arg(long, value_name = "FILE.fio")]
    pub from_fio: Option<PathBuf>,
    /// A trace file (`iolab capture`): its workload model as a spec, with what the spec
    /// cannot carry over as comments.
    #[arg(long, value_name = "FILE", conflicts_with = "lenient")]
    pub from_trace: Option<PathBuf>,
    /// Skip options iolab does not support (listed as comments) instead of refusing the file.
    #[arg(long)]
    pub lenient: bool,
}

fn fio_usage(e: FioError) -> anyhow::Error {
    usage(e.to_string())
}

/// `iolab import`: every file is read and checked before anything is stored, so a bad file
/// stores nothing.
pub fn import(ctx: &Context, a: ImportArgs) -> anyhow::Result<ExitCode> {
    if let Some(l) = &a.label {
        crate::store::check_label(l).map_err(|e| usage(e.to_string()))?;
    }
    let mut records: Vec<(String, RunRecord)> = Vec::new();
    for f in &a.files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(f).map_err(|e| {
            fio_usage(FioError::Read {
                file: name.clone(),
                why: e.to_string(),
            })
        })?;
        let out = fio::parse_output(&text, &name).map_err(fio_usage)?;
        let meta = ImportMeta {
            file: name.clone(),
            command_line: crate::cli::command_line(),
            label: a.label.clone(),
            note: a.note.clone(),
        };
        records.push((name, fio::to_run_record(&out, &text, &meta)));
    }
    let mut store = super::db::open_store(ctx)?;
    for (name, mut rec) in records {
        match store.save_run(&rec) {
            Ok(id) => {
                rec.id = id;
                print!("{}", crate::report::terminal::run_table(&rec, false));
                println!(
                    "imported {name} as run {} (iolab show {}; iolab compare {} ...)",
                    rec.id, rec.id, rec.id
                );
            }
            Err(StoreError::DuplicateId(id)) => {
                println!("{name} was already imported as run {id} (same content); nothing stored");
            }
            Err(e) => return Err(super::db::store_err(e)),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads and converts a job file; every problem is a usage error naming file and line.
pub fn load_fio_job(path: &Path, lenient: bool) -> anyhow::Result<Conversion> {
    let jf = fio::parse_job_file(path).map_err(fio_usage)?;
    let name = path
        .file_stem()
        .map_or_else(|| "fio".into(), |s| s.to_string_lossy().into_owned());
    fio::convert(&jf, &name, lenient).map_err(fio_usage)
}

/// The suite of `iolab run --fio-job`, with its notes and skipped options printed on stderr.
pub fn fio_job_suite(path: &Path, lenient: bool) -> anyhow::Result<Suite> {
    let c = load_fio_job(path, lenient)?;
    for n in c.notes.iter().chain(&c.skipped) {
        eprintln!("iolab: note: {n}");
    }
    Ok(c.suite)
}

/// What `iolab run --fio-job` takes from a job file besides the workloads.
#[derive(Debug)]
pub struct FioJobFlags {
    /// The one file or device the jobs name (`filename`/`directory`), made when it is a new
    /// file in an existing directory; `None` when the jobs name none or a target was given.
    pub target: Option<PathBuf>,
    /// A job verifies its data: the run verifies too.
    pub verify: bool,
    /// The options skipped under `--lenient`, as a note for the run.
    pub skipped: Option<String>,
}

/// Reads the job file for [`FioJobFlags`]; `find_target`: no TARGET was given, so the jobs'
/// one file is the target (more than one is a usage error).
pub fn fio_job_flags(path: &Path, lenient: bool, find_target: bool) -> anyhow::Result<FioJobFlags> {
    let c = load_fio_job(path, lenient)?;
    let mut target = None;
    if find_target {
        match c.targets.as_slice() {
            [] => {}
            [one] => {
                let p = PathBuf::from(one);
                if !p.exists() && p.parent().is_some_and(Path::is_dir) && !one.starts_with("/dev/")
                {
                    std::fs::File::create(&p).map_err(|e| {
                        usage(format!(
                            "{}: cannot create filename {one}: {e}",
                            path.display()
                        ))
                    })?;
                }
                target = Some(p);
            }
            many => {
                return Err(usage(format!(
                    "{}: jobs name {} different files ({}); iolab runs every workload on one target: give TARGET",
                    path.display(),
                    many.len(),
                    many.join(", ")
                )));
            }
        }
    }
    Ok(FioJobFlags {
        target,
        verify: c.verify,
        skipped: (!c.skipped.is_empty())
            .then(|| format!("fio options skipped (--lenient): {}", c.skipped.join("; "))),
    })
}

/// `iolab spec --from-fio`: prints the spec, after checking it parses back to the same suite.
pub fn spec(_ctx: &Context, a: SpecArgs) -> anyhow::Result<ExitCode> {
    if let Some(t) = &a.from_trace {
        return spec_from_trace(t);
    }
    let Some(from_fio) = &a.from_fio else {
        return Err(usage("give --from-fio FILE.fio or --from-trace FILE"));
    };
    let c = load_fio_job(from_fio, a.lenient)?;
    let toml = crate::spec::suite_to_toml(&c.suite);
    let back = crate::spec::parse_spec(&toml, "converted spec").map_err(|e| {
        anyhow::anyhow!("the converted spec does not parse back ({e}); please report this")
    })?;
    if back != c.suite {
        return Err(anyhow::anyhow!(
            "the converted spec reads back differently; please report this"
        ));
    }
    println!("# converted from fio job file {}", from_fio.display());
    for n in &c.notes {
        println!("# note: {n}");
    }
    for s in &c.skipped {
        println!("# skipped: {s}");
    }
    if c.verify {
        println!("# a job asks fio to verify: run with `iolab run --verify`");
    }
    for t in &c.targets {
        println!("# fio target: {t} (give it as iolab run TARGET)");
    }
    print!("{toml}");
    Ok(ExitCode::SUCCESS)
}

/// Checks that a generated spec reads back to the same suite (a bug otherwise, not bad input).
fn round_trip(suite: &Suite) -> anyhow::Result<String> {
    let toml = crate::spec::suite_to_toml(suite);
    let back = crate::spec::parse_spec(&toml, "converted spec").map_err(|e| {
        anyhow::anyhow!("the converted spec does not parse back ({e}); please report this")
    })?;
    if &back != suite {
        return Err(anyhow::anyhow!(
            "the converted spec reads back differently; please report this"
        ));
    }
    Ok(toml)
}

/// `iolab spec --from-trace`: the trace's workload model as a spec.
fn spec_from_trace(path: &Path) -> anyhow::Result<ExitCode> {
    let crate::trace::to_spec::TraceSpec { model: m, spec: f } =
        super::capture::trace_spec(path, "", &path.display().to_string())?;
    let toml = round_trip(&f.suite)?;
    println!(
        "# the workload model of trace {} ({} IOs, {:.1}s)",
        path.display(),
        m.ios,
        m.duration_s
    );
    println!("# {}", m.summary());
    for n in &f.notes {
        println!("# not carried over: {n}");
    }
    println!(
        "# replay the trace itself: iolab run TARGET --replay {}",
        path.display()
    );
    print!("{toml}");
    Ok(ExitCode::SUCCESS)
}
