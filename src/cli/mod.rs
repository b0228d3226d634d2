//! The command line: clap definitions and the edge where typed errors become one-line messages
//! and exit codes (0 ok, 1 run failed, 2 usage error, 130 interrupted).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod capture;
pub mod compare;
mod db;
pub mod decide;
pub mod disks;
pub mod hosts;
pub mod import;
pub mod lab;
mod out;
pub mod plan;
pub mod profiles;
pub mod report;
pub mod run;
pub mod store_cmds;
pub mod vm;

pub use crate::error::{
    EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, Interrupted, UsageError, one_line, usage,
};

/// The exit code an error maps to.
pub fn exit_code_for(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<Interrupted>().is_some() {
        EXIT_INTERRUPTED
    } else if e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<crate::units::UnitError>().is_some()
            || c.downcast_ref::<crate::spec::SpecError>().is_some()
            || c.downcast_ref::<crate::hosts::HostsError>().is_some()
            || c.downcast_ref::<crate::target::TargetError>()
                .is_some_and(super::target::TargetError::is_usage)
    }) {
        EXIT_USAGE
    } else {
        EXIT_FAILED
    }
}

/// A storage lab in one binary: build candidate layouts, run workloads that mimic real use,
/// repeat trials, and compare with honest statistics.
#[derive(Parser, Debug)]
#[command(name = "iolab", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// The results database: a SQLite file (default: $XDG_DATA_HOME/iolab/iolab.db) or a
    /// shared PostgreSQL database, `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (passwords are
    /// never shown; prefer PGPASSWORD or ~/.pgpass).
    #[arg(
        long,
        global = true,
        env = "IOLAB_DB",
        hide_env_values = true,
        value_name = "PATH|URL"
    )]
    pub db: Option<crate::store::Location>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a suite, a profile or a spec file on a directory, file or block device.
    Run(Box<run::RunArgs>),
    /// List the built-in profiles, or print one as a spec file.
    Profiles(profiles::ProfilesArgs),
    /// Build candidate layouts, benchmark each, optionally degrade and rebuild, tear down.
    Lab(lab::LabArgs),
    /// Side-by-side comparison of stored runs with ratios and significance.
    Compare(compare::CompareArgs),
    /// List stored runs, newest first.
    List(store_cmds::ListArgs),
    /// Everything about one stored run.
    Show(store_cmds::ShowArgs),
    /// Export stored runs as JSON or CSV.
    Export(store_cmds::ExportArgs),
    /// Delete stored runs.
    Rm(store_cmds::RmArgs),
    /// A self-contained HTML (or Markdown) report with charts.
    Report(report::ReportArgs),
    /// Census of block devices, per-disk read test, slow-disk finder.
    Disks(disks::DisksArgs),
    /// Capacity, predicted performance and data-loss risk of candidate layouts.
    Plan(plan::PlanArgs),
    /// Which layout, and why: decide between a stored lab's layouts by needs (no re-run).
    Decide(decide::DecideArgs),
    /// Copy stored runs to another results database (`store push --to postgres://...`).
    #[command(subcommand)]
    Store(store_cmds::StoreCommand),
    /// Import fio results (--output-format=json or json+) as stored runs.
    Import(import::ImportArgs),
    /// Print the iolab spec equivalent to a fio job file (`--from-fio FILE.fio`) or to a
    /// trace's workload model (`--from-trace FILE`).
    Spec(import::SpecArgs),
    /// Record the IOs reaching a block device into a trace file; show or import traces.
    Capture(Box<capture::CaptureArgs>),
    /// The far side of `iolab run --hosts`: the line protocol on stdin/stdout.
    Agent(hosts::AgentArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let ctx = Context { db: cli.db };
    let result = match cli.command {
        Command::Run(a) if a.on_hosts() => hosts::run(&ctx, *a),
        Command::Run(a) => run::run(&ctx, *a),
        Command::Profiles(a) => profiles::run(&ctx, a),
        Command::Lab(a) if a.vm => vm::run(&ctx, &a),
        Command::Lab(a) => lab::run(&ctx, a),
        Command::Compare(a) => compare::compare(&ctx, a),
        Command::List(a) => store_cmds::list(&ctx, a),
        Command::Show(a) => store_cmds::show(&ctx, a),
        Command::Export(a) => store_cmds::export(&ctx, a),
        Command::Rm(a) => store_cmds::rm(&ctx, a),
        Command::Report(a) => report::run(&ctx, a),
        Command::Disks(a) => disks::run(&ctx, a),
        Command::Plan(a) => plan::run(&ctx, a),
        Command::Decide(a) => decide::run(&ctx, a),
        Command::Store(c) => store_cmds::store(&ctx, c),
        Command::Import(a) => import::import(&ctx, a),
        Command::Spec(a) => import::spec(&ctx, a),
        Command::Capture(a) => capture::capture(&ctx, *a),
        Command::Agent(a) => hosts::agent(&ctx, a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("iolab: error: {}", one_line(&e));
            ExitCode::from(exit_code_for(&e))
        }
    }
}

/// With `--json`, a failed command still prints a JSON object on stdout (`error`,
/// `exit_code`) so scripts always get one document; the message also goes to stderr.
pub fn json_on_error(json: bool, result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    match result {
        Err(e) if json => {
            let code = exit_code_for(&e);
            eprintln!("iolab: error: {}", one_line(&e));
            let doc = serde_json::json!({ "error": one_line(&e), "exit_code": code });
            println!("{doc}");
            Ok(ExitCode::from(code))
        }
        other => other,
    }
}

/// This process's command line as it is stored with a run and shown in reports: any
/// PostgreSQL URL's password masked.
pub fn command_line() -> Vec<String> {
    std::env::args()
        .map(|a| crate::store::pg::redact_text(&a))
        .collect()
}

/// Settings every subcommand may need.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// `--db` / `IOLAB_DB`, when given.
    pub db: Option<crate::store::Location>,
}
