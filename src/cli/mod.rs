//! The command line: clap definitions and the edge where typed errors become one-line messages
//! and exit codes (0 ok, 1 run failed, 2 usage error, 130 interrupted).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod compare;
pub mod disks;
pub mod import;
pub mod lab;
pub mod plan;
pub mod profiles;
pub mod report;
pub mod run;
pub mod vm;

/// Exit code of a run that could not do its work.
pub const EXIT_FAILED: u8 = 1;
/// Exit code of bad input: a flag, a spec field, a target that cannot be used.
pub const EXIT_USAGE: u8 = 2;
/// Exit code after Ctrl-C or SIGTERM (128 + SIGINT, as shells expect).
pub const EXIT_INTERRUPTED: u8 = 130;

/// A mistake in what the user asked for; exits 2. The message names the field and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The user stopped the work (Ctrl-C, SIGTERM); exits 130 after cleanup.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Builds a usage error in an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The exit code an error maps to.
pub fn exit_code_for(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<Interrupted>().is_some() {
        EXIT_INTERRUPTED
    } else if e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<crate::units::UnitError>().is_some()
            || c.downcast_ref::<crate::spec::SpecError>().is_some()
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
    /// The results database (default: $XDG_DATA_HOME/iolab/iolab.db).
    #[arg(long, global = true, env = "IOLAB_DB", value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,

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
    List(compare::ListArgs),
    /// Everything about one stored run.
    Show(compare::ShowArgs),
    /// Export stored runs as JSON or CSV.
    Export(compare::ExportArgs),
    /// Delete stored runs.
    Rm(compare::RmArgs),
    /// A self-contained HTML (or Markdown) report with charts.
    Report(report::ReportArgs),
    /// Census of block devices, per-disk read test, slow-disk finder.
    Disks(disks::DisksArgs),
    /// Capacity, predicted performance and data-loss risk of candidate layouts.
    Plan(plan::PlanArgs),
    /// Import fio results (--output-format=json or json+) as stored runs.
    Import(import::ImportArgs),
    /// Print the iolab spec equivalent to a fio job file (`--from-fio FILE.fio`).
    Spec(import::SpecArgs),
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
        Command::Run(a) => run::run(&ctx, *a),
        Command::Profiles(a) => profiles::run(&ctx, a),
        Command::Lab(a) => lab::run(&ctx, a),
        Command::Compare(a) => compare::compare(&ctx, a),
        Command::List(a) => compare::list(&ctx, a),
        Command::Show(a) => compare::show(&ctx, a),
        Command::Export(a) => compare::export(&ctx, a),
        Command::Rm(a) => compare::rm(&ctx, a),
        Command::Report(a) => report::run(&ctx, a),
        Command::Disks(a) => disks::run(&ctx, a),
        Command::Plan(a) => plan::run(&ctx, a),
        Command::Import(a) => import::import(&ctx, a),
        Command::Spec(a) => import::spec(&ctx, a),
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

/// An error and its causes on one line: "what failed: why".
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// Settings every subcommand may need.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// `--db` / `IOLAB_DB`, when given.
    pub db: Option<std::path::PathBuf>,
}
