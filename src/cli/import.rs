//! fio's formats at the command line: `iolab import FILE...` (fio JSON results into the
//! store) and `iolab spec --from-fio FILE.fio` (a job file as an iolab spec); `iolab run
//! --fio-job FILE.fio` reads job files through [`crate::runner::request`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Context, usage};
use crate::fio::{self, FioError, ImportMeta};
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

/// `iolab spec --from-fio`: prints the spec, after checking it parses back to the same suite.
pub fn spec(_ctx: &Context, a: SpecArgs) -> anyhow::Result<ExitCode> {
    if let Some(t) = &a.from_trace {
        return spec_from_trace(t);
    }
    let Some(from_fio) = &a.from_fio else {
        return Err(usage("give --from-fio FILE.fio or --from-trace FILE"));
    };
    let c = crate::runner::request::load_fio_job(from_fio, a.lenient).map_err(fio_usage)?;
    let toml = round_trip(&c.suite)?;
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
        crate::trace::to_spec::from_trace_file(path, "", &path.display().to_string())
            .map_err(super::capture::trace_spec_err)?;
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
